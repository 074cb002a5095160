"""Judge of capstone D: GRPO from REINFORCE.

The judge owns every loop: it samples the groups, runs the K-sweep and the
clipped run through the runtime's REINFORCE loop, and enumerates groups
exactly. The submission only ever answers "what weight for these rewards?"
and "what gradient for this batch?".
"""
from __future__ import annotations

import numpy as np

from rlkit.verifier import (EXACT_REWARD, NUM_PROMPTS, NUM_RESPONSES,
                            reference_logits, sample_groups, softmax_policy,
                            weighted_score_gradient)

from . import ksweep, reward_groups, slips
from ..grading.judging import (Context, Fail, Outcome, ProbeRaised, ReferenceFailed, Scorecard,
                               as_float_array)

MAX_WEIGHT = 1e6          # far above any centred or standardised weight on these rewards
ZERO_AT_K1 = "with one response per group the group-standardised weight is exactly 0"

# ----------------------------------------------------------------------------- inputs
ORACLE = {"centred_weight": "grpo_math.centred_weight",
          "group_standardised_weight": "grpo_math.group_standardised_weight",
          "leave_one_out_weight": "grpo_math.leave_one_out_weight"}


def _weights(ctx: Context, fn: str, r: np.ndarray) -> np.ndarray:
    """The submission's weights for rewards ``r`` (``_checked_weights``)."""
    return _checked_weights(fn, ctx.call(fn, r), r)


def _checked_weights(fn: str, got, r: np.ndarray) -> np.ndarray:
    """``got``, ``fn``'s answer for rewards ``r``, as weights: finite and of r's
    shape, and bounded (a standardised weight is at most sqrt(K) in size)."""
    w = as_float_array(f"{fn}() on rewards of shape {r.shape}", got, r.shape)
    if not np.abs(w).max(initial=0.0) <= MAX_WEIGHT:
        raise Fail(f"{fn}(): a weight of size {np.abs(w).max():.3g} (more than {MAX_WEIGHT:g}); "
                   "centred or standardised weights stay near the rewards' scale")
    return w


# ----------------------------------------------------------------------------- diagnoses
# What a half-right answer does, as the feedback names it (slips of the section's formulas,
# computed by the oracles only when a case fails). A diagnosis names a slip, never an input:
# it is shown for hidden cases too. The weights' slips: reward_groups.WEIGHT_SLIPS.
SURROGATE_SLIPS = {
    **slips.CLIP_SLIPS,
    "mean_over_batch": "the loss averaged over all P x K responses (a gradient 1/P of the "
                       "section's, which averages over each prompt's K and sums over prompts)",
}


def _expect_weights(ctx: Context, fn: str, key: str, label: str, r: np.ndarray, *,
                    zero: bool = False, oracle: tuple | None = None) -> None:
    """``reward_groups.expect_weights`` at D's tolerances."""
    p = ctx.params
    reward_groups.expect_weights(ctx, fn, key, label, r, rtol=p["weight_rtol"],
                                 atol=p["weight_atol"], zero=zero, oracle=oracle)


def _weight_question(ctx: Context, fn: str, key: str) -> Scorecard:
    card = Scorecard()
    nonzero = f"{fn}() on groups with different rewards"
    with card.part(nonzero, 3):
        for case in ctx.cases():
            r = reward_groups.rewards(ctx, case)
            _expect_weights(ctx, fn, f"{key}/{case.name}", f"{fn}() on the {case.name} rewards",
                            r, oracle=(ORACLE[fn], r) if case.per_student else None)
    if fn != "leave_one_out_weight":
        with card.part(f"{fn}() gives zeros for all-equal groups and for K = 1", 1,
                       requires=nonzero):
            for case in ctx.cases("zero"):
                r = reward_groups.rewards(ctx, case)
                _expect_weights(ctx, fn, f"{key}/zero/{case.name}",
                                f"{fn}() on the {case.name} rewards", r, zero=True)
    return card


# ----------------------------------------------------------------------------- questions
def q1_centred(ctx: Context) -> Outcome:
    return _weight_question(ctx, "centred_weight", "q1").outcome()


def q2_standardised(ctx: Context) -> Outcome:
    return _weight_question(ctx, "group_standardised_weight", "q2").outcome()


def q3_leave_one_out(ctx: Context) -> Outcome:
    fn = "leave_one_out_weight"
    card = _weight_question(ctx, fn, "q3")
    nonzero = f"{fn}() on groups with different rewards"
    with card.part(f"{fn}() gives zeros for all-equal groups", 1, requires=nonzero):
        for case in ctx.cases("zero"):
            r = reward_groups.rewards(ctx, case)
            if r.shape[1] > 1:
                ctx.check(f"q3/zero/{case.name}", f"{fn}() on the {case.name} rewards",
                          lambda: ctx.call(fn, r), np.zeros_like(r), rtol=0.0,
                          atol=ctx.params["weight_atol"])
    with card.part(f"{fn}() raises ValueError for K = 1", 1, requires=nonzero):
        for case in ctx.cases("zero"):
            r = reward_groups.rewards(ctx, case)
            if r.shape[1] != 1:
                continue
            with ctx.case(f"q3/k1_raises/{case.name}", f"{fn}() for K = 1"):
                try:
                    got = ctx.call(fn, r)
                except ProbeRaised as e:
                    if not e.is_a("ValueError"):
                        raise Fail(f"for K = 1 expected a ValueError, but it raised {e.type}: "
                                   f"{e.message}")
                    if not e.message.strip():
                        raise Fail(f"for K = 1 it raised {e.type} without a message; the "
                                   "handout asks for one saying why (no other rewards to "
                                   "average)")
                else:
                    raise Fail(f"for K = 1 (rewards {r.tolist()}) expected a ValueError: the "
                               "mean of the other K - 1 = 0 rewards is undefined; it returned "
                               f"{np.asarray(got).tolist()[:8]}")
    return card.outcome()


def q4_enumeration(ctx: Context) -> Outcome:
    """Exact expectation over every group (Gradescope only: the enumeration is an oracle)."""
    card = Scorecard()
    rtol, atol = ctx.params["enum_rtol"], ctx.params["enum_atol"]
    for fn, factor_of, label in (
            ("centred_weight", lambda K: (K - 1) / K, "centring: E[update] = (K-1)/K x gradient"),
            ("leave_one_out_weight", lambda K: 1.0, "leave-one-out: E[update] = gradient")):
        with card.part(label, 1):
            for case in ctx.cases():
                theta = reference_logits() if case.kind == "reference" else \
                    ctx.case_rng(case).normal(0.0, case.scale, (NUM_PROMPTS, NUM_RESPONSES))
                pi = softmax_policy(theta)
                g = ctx.oracle(f"q4/gradient/{case.name}", "grpo_math.exact_gradient", pi,
                               EXACT_REWARD)
                for K in ctx.params["enum_ks"]:
                    key = f"q4/{fn}/{case.name}/K{K}"
                    with ctx.case(key, f"E[update] with {fn}() at K = {K}"):
                        u = ctx.oracle_fn("grpo_math.expected_group_update")(
                            pi, EXACT_REWARD, K, lambda r, fn=fn: _weights(ctx, fn, r))
                    ctx.check(key, f"E[update] with {fn}() at K = {K}, {case.name} policy, vs "
                              f"{factor_of(K):.4g} x exact gradient", u, factor_of(K) * g,
                              rtol=rtol, atol=atol)
    return card.outcome()


def _clip_batch(rng: np.random.Generator, spread: float):
    """theta_old, theta (P, V); a sampled group ys (P, K); advantages (P, K) of
    both signs; logp_old (P, K) under theta_old."""
    theta_old = rng.normal(0.0, 1.0, (NUM_PROMPTS, NUM_RESPONSES))
    theta = theta_old + rng.normal(0.0, spread, theta_old.shape)
    pi_old = softmax_policy(theta_old)
    ys = sample_groups(pi_old, 8, rng)
    adv = rng.normal(0.0, 1.0, ys.shape)
    logp_old = np.log(pi_old[np.arange(NUM_PROMPTS)[:, None], ys])
    return theta_old, theta, ys, adv, logp_old


KINK_STEP = 1e-6          # relative distance of a designed ratio from a clip bound


def _kink_batch(rng: np.random.Generator, P: int, K: int, eps: float):
    """A batch whose ratios sit on both sides of each clip bound (1 - eps and
    1 + eps, at a relative distance of KINK_STEP), at 1 and far outside, for
    positive and negative advantages alike. Returns theta (P, V), ys (P, K),
    advantages (P, K), logp_old (P, K) and the designed ratios (P, K)."""
    theta = rng.normal(0.0, 1.5, (P, NUM_RESPONSES))
    ys = rng.integers(0, NUM_RESPONSES, (P, K))
    targets = np.array([(1 - eps) * (1 - KINK_STEP), (1 - eps) * (1 + KINK_STEP),
                        (1 + eps) * (1 - KINK_STEP), (1 + eps) * (1 + KINK_STEP),
                        1.0, 0.3 * (1 - eps), 3.0 * (1 + eps)])
    combos = np.array([(r, s) for r in targets for s in (1.0, -1.0)])     # every ratio, both signs
    assert P * K >= len(combos), "a kink batch needs room for every ratio and sign"
    ratios, signs = rng.permutation(np.resize(combos, (P * K, 2))).T.reshape(2, P, K)
    adv = signs * rng.uniform(0.2, 2.0, (P, K))
    logp_now = np.log(np.take_along_axis(softmax_policy(theta), ys, axis=1))
    return theta, ys, adv, logp_now - np.log(ratios), ratios


def _expect_surrogate(ctx: Context, key: str, label: str, args: tuple, *,
                      per_student: bool) -> None:
    """The submission's ``clipped_surrogate_grad(*args)`` (theta, ys, A,
    logp_old, eps) against the expected gradient of ``key`` (the oracle's for a
    case drawn ``per_student``); a wrong gradient is diagnosed."""
    p = ctx.params

    def diagnose(got) -> str:
        try:
            oracle = ctx.oracle_fn("grpo_math.clipped_surrogate_grad")
        except ReferenceFailed:          # a handout: no oracles
            return ""
        slipped = {s: oracle(*args, s) for s in SURROGATE_SLIPS}
        return slips.name(got, oracle(*args), slipped, SURROGATE_SLIPS, "your gradient matches")

    slips.expect_diagnosed(ctx, key, label, lambda: ctx.call("clipped_surrogate_grad", *args),
                           diagnose, rtol=p["grad_rtol"], atol=p["grad_atol"],
                           oracle=("grpo_math.clipped_surrogate_grad", *args) if per_student
                           else None)


def q5_ratio_clip(ctx: Context) -> Outcome:
    card = Scorecard()
    p = ctx.params
    eps, spread = p["clip_eps"], p["clip_spread"]
    with card.part("policy_ratio(): exactly 1 on the first epoch, correct off-policy", 1):
        for case in ctx.cases():
            theta_old, theta, ys, _, logp_old = _clip_batch(ctx.case_rng(case), spread)
            rows = np.arange(NUM_PROMPTS)[:, None]
            with ctx.case(f"q5/ratio_one/{case.name}", "policy_ratio(logp_old, logp_old)"):
                first = as_float_array("policy_ratio(logp_old, logp_old)",
                                       ctx.call("policy_ratio", logp_old.copy(), logp_old),
                                       ys.shape)
                if not np.array_equal(first, np.ones_like(first)):
                    raise Fail("on the first epoch (new log-probs equal the old ones) the ratio "
                               f"must be exactly 1; max |ratio - 1| = "
                               f"{np.abs(first - 1).max():.3g}")
            logp = np.log(softmax_policy(theta)[rows, ys])
            ctx.expect(f"q5/ratio/{case.name}", lambda: ctx.call("policy_ratio", logp, logp_old),
                       rtol=1e-12, atol=0.0, label="policy_ratio() off-policy")
    with card.part("clipped_surrogate_grad() at theta = theta_old is the plain policy gradient",
                   1):
        for case in ctx.cases():
            theta_old, _, ys, adv, logp_old = _clip_batch(ctx.case_rng(case), spread)
            plain = weighted_score_gradient(softmax_policy(theta_old), ys, adv)
            ctx.check(f"q5/at_old/{case.name}", "clipped_surrogate_grad() at theta = theta_old",
                      lambda: ctx.call("clipped_surrogate_grad", theta_old, ys, adv, logp_old,
                                       eps), plain, rtol=p["grad_rtol"], atol=p["grad_atol"])
    with card.part("clipped_surrogate_grad() away from theta_old: both advantage signs, "
                   f"ratios inside and outside [1 - {eps}, 1 + {eps}]", 1):
        for case in ctx.cases():
            theta_old, theta, ys, adv, logp_old = _clip_batch(ctx.case_rng(case), spread)
            _expect_surrogate(ctx, f"q5/clip/{case.name}",
                              "clipped_surrogate_grad() away from theta_old",
                              (theta, ys, adv, logp_old, eps), per_student=False)
    with card.part("clipped_surrogate_grad() on both sides of every clip bound, for both "
                   "advantage signs, other clip widths and other numbers of prompts", 1):
        for case in ctx.cases("kink"):
            theta, ys, adv, logp_old, _ = _kink_batch(ctx.case_rng(case), case.P, case.K,
                                                      case.eps)
            _expect_surrogate(ctx, f"q5/kink/{case.name}",
                              f"clipped_surrogate_grad() with ratios next to 1 - eps and 1 + eps "
                              f"({case.name})", (theta, ys, adv, logp_old, case.eps),
                              per_student=case.per_student)
    return card.outcome()


# ----------------------------------------------------------------------------- the loops
WEIGHT = ksweep.Probe("group_standardised_weight", lambda got, r: _checked_weights(
    "group_standardised_weight", got, r))
SURROGATE_GRAD = ksweep.Probe("clipped_surrogate_grad", lambda got, theta, *_: as_float_array(
    "clipped_surrogate_grad()", got, theta.shape))


def q6_k_sweep(ctx: Context) -> Outcome:
    card = Scorecard()
    p = ctx.params
    runs_of = list(ctx.cases())
    if not runs_of:
        return card.outcome()
    ks = sorted(set(p["sweep_ks"]))
    runs = ksweep.run(ctx, card, WEIGHT, runs_of, ks, lambda K: p["sweep_budget"] // K)
    ksweep.judge(card, runs, runs_of, p["ceiling_ks"], p["ceiling"], learn_points=3,
                 k1_points=1, k1_success=p["k1_success"], k1_tol=p["k1_tol"], what="K-sweep",
                 why_zero=ZERO_AT_K1)
    return card.outcome()


def q7_clipped_sweep(ctx: Context) -> Outcome:
    card = Scorecard()
    p = ctx.params
    runs_of, ks = list(ctx.cases()), p["clip_ks"]
    if not runs_of:
        return card.outcome()
    runs = ksweep.run(ctx, card, WEIGHT, runs_of, ks, lambda K: p["clip_updates"],
                      surrogate_grad=SURROGATE_GRAD, epochs=p["clip_epochs"], eps=p["clip_eps"])
    ksweep.judge(card, runs, runs_of, [k for k in ks if k != 1], p["ceiling"], learn_points=3,
                 k1_points=1, k1_success=p["k1_success"], k1_tol=p["k1_tol"],
                 what="clipped run", why_zero=ZERO_AT_K1)
    return card.outcome()


QUESTIONS = {f.__name__: f for f in (q1_centred, q2_standardised, q3_leave_one_out,
                                     q4_enumeration, q5_ratio_clip, q6_k_sweep,
                                     q7_clipped_sweep)}
