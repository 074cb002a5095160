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
from ..grading.gate import Floats
from ..grading.judging import Context, Judge, raised_kind

judge = Judge()
MAX_WEIGHT = 1e6          # far above any centred or standardised weight on these rewards
ZERO_AT_K1 = "with one response per group the group-standardised weight is exactly 0"

# ----------------------------------------------------------------------------- inputs
ORACLE = {"centred_weight": "grpo_math.centred_weight",
          "group_standardised_weight": "grpo_math.group_standardised_weight",
          "leave_one_out_weight": "grpo_math.leave_one_out_weight"}


# ----------------------------------------------------------------------------- diagnoses
# What a half-right answer does, as the feedback names it (slips of the section's formulas,
# computed by the oracles only when a case fails). A diagnosis names a slip, never an input:
# it is shown for hidden cases too. The weights' slips: reward_groups.WEIGHT_SLIPS.
SURROGATE_SLIPS = {
    **slips.CLIP_SLIPS,
    "mean_over_batch": "the loss averaged over all P x K responses (a gradient 1/P of the "
                       "section's, which averages over each prompt's K and sums over prompts)",
}


def _weights(ctx: Context, fn: str, case, *, zero: bool = False) -> None:
    """``fn``'s weights of the case's reward groups: the expected ones, or
    zeros (``zero``), at D's tolerances."""
    p = ctx.params
    r = reward_groups.rewards(ctx, case)
    reward_groups.expect_weights(ctx, fn, r, rtol=p["weight_rtol"], atol=p["weight_atol"],
                                 zero=zero, oracle=(ORACLE[fn], r), max_abs=MAX_WEIGHT,
                                 label=f"{fn}() on " + ("a hidden group" if case.hidden else
                                                        f"the {case.name} rewards"))


# ----------------------------------------------------------------------------- q1-q3
for _q, _fn in (("q1_centred", "centred_weight"), ("q2_standardised", "group_standardised_weight"),
                ("q3_leave_one_out", "leave_one_out_weight")):
    judge.part(_q, "differs")(lambda ctx, case, fn=_fn: _weights(ctx, fn, case))
for _q, _fn in (("q1_centred", "centred_weight"), ("q2_standardised", "group_standardised_weight")):
    judge.part(_q, "zeros")(lambda ctx, case, fn=_fn: _weights(ctx, fn, case, zero=True))


@judge.part("q3_leave_one_out", "zeros")
def loo_zeros(ctx: Context, case) -> None:
    """All-equal groups (K >= 2) give zeros; K = 1 is the next part's."""
    r = reward_groups.rewards(ctx, case)
    if r.shape[1] > 1:
        _weights(ctx, "leave_one_out_weight", case, zero=True)


@judge.part("q3_leave_one_out", "k1_raises")
def loo_k1_raises(ctx: Context, case) -> None:
    """K = 1: a ValueError with a message (the other K - 1 = 0 rewards have no mean)."""
    fn = "leave_one_out_weight"
    r = reward_groups.rewards(ctx, case)
    if r.shape[1] != 1:
        return
    raised, got = ctx.ask_raising(fn, r, answer=Floats(r.shape))
    if raised is None:
        raise ctx.fail(f"for K = 1 (rewards {r.tolist()}) expected a ValueError: the mean of "
                       f"the other K - 1 = 0 rewards is undefined; it returned "
                       f"{got.tolist()[:8]}")
    if not raised.is_a("ValueError"):
        raise ctx.fail(f"for K = 1 expected a ValueError, but it raised {raised.type}: "
                       f"{raised.message}", raised_kind(raised))
    if not raised.message.strip():
        raise ctx.fail(f"for K = 1 it raised {raised.type} without a message; the handout asks "
                       "for one saying why (no other rewards to average)")


# ----------------------------------------------------------------------------- q4
def _enumeration(ctx: Context, case, fn: str, factor) -> None:
    """Exact expectation over every group at each K of ``enum_ks`` with the
    submission's ``fn`` (Gradescope only: the enumeration is an oracle) is
    ``factor(K)`` times the exact gradient."""
    p = ctx.params
    theta = reference_logits() if case.kind == "reference" else \
        ctx.case_rng(case).normal(0.0, case.scale, (NUM_PROMPTS, NUM_RESPONSES))
    pi = softmax_policy(theta)
    g = ctx.oracle("gradient", "grpo_math.exact_gradient", pi, EXACT_REWARD)
    answer = lambda r: ctx.ask(fn, r, answer=Floats(r.shape, max_abs=MAX_WEIGHT))  # noqa: E731
    for K in p["enum_ks"]:
        u = ctx.oracle_fn("grpo_math.expected_group_update")(pi, EXACT_REWARD, K, answer)
        ctx.check(u, factor(K) * g, rtol=p["enum_rtol"], atol=p["enum_atol"], name=f"K{K}",
                  label=f"E[update] with {fn}() at K = {K}, {case.label} policy, vs "
                        f"{factor(K):.4g} x exact gradient")


judge.part("q4_enumeration", "centring")(
    lambda ctx, case: _enumeration(ctx, case, "centred_weight", lambda K: (K - 1) / K))
judge.part("q4_enumeration", "leave_one_out")(
    lambda ctx, case: _enumeration(ctx, case, "leave_one_out_weight", lambda K: 1.0))


# ----------------------------------------------------------------------------- q5
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


def _expect_surrogate(ctx: Context, args: tuple, label: str) -> None:
    """The submission's ``clipped_surrogate_grad(*args)`` (theta, ys, A,
    logp_old, eps) against the expected gradient of the current case (the
    oracle's for a case drawn per student); a wrong gradient is diagnosed."""
    p = ctx.params

    def diagnose(got) -> str:
        oracle = ctx.oracle_fn("grpo_math.clipped_surrogate_grad")
        slipped = {s: oracle(*args, s) for s in SURROGATE_SLIPS}
        return slips.name(got, oracle(*args), slipped, SURROGATE_SLIPS, "your gradient matches")

    got = ctx.ask("clipped_surrogate_grad", *args, answer=Floats(args[0].shape))
    ctx.expect(got, rtol=p["grad_rtol"], atol=p["grad_atol"], label=label, diagnose=diagnose,
               oracle=("grpo_math.clipped_surrogate_grad", *args))


@judge.part("q5_ratio_clip", "ratio")
def ratio(ctx: Context, case) -> None:
    """policy_ratio(): exactly 1 on the first epoch, and right off-policy."""
    theta_old, theta, ys, _, logp_old = _clip_batch(ctx.case_rng(case), ctx.params["clip_spread"])
    first = ctx.ask("policy_ratio", logp_old.copy(), logp_old, answer=Floats(ys.shape))
    if not np.array_equal(first, np.ones_like(first)):
        raise ctx.fail("on the first epoch (new log-probs equal the old ones) the ratio must be "
                       f"exactly 1; max |ratio - 1| = {np.abs(first - 1).max():.3g}")
    logp = np.log(softmax_policy(theta)[np.arange(NUM_PROMPTS)[:, None], ys])
    got = ctx.ask("policy_ratio", logp, logp_old, answer=Floats(ys.shape))
    ctx.expect(got, rtol=1e-12, atol=0.0, name="off_policy", label="policy_ratio() off-policy",
               oracle=("grpo_math.policy_ratio", logp, logp_old))


@judge.part("q5_ratio_clip", "at_old")
def at_old(ctx: Context, case) -> None:
    """At theta = theta_old the clipped gradient is the plain policy gradient."""
    p = ctx.params
    theta_old, _, ys, adv, logp_old = _clip_batch(ctx.case_rng(case), p["clip_spread"])
    plain = weighted_score_gradient(softmax_policy(theta_old), ys, adv)
    got = ctx.ask("clipped_surrogate_grad", theta_old, ys, adv, logp_old, p["clip_eps"],
                  answer=Floats(theta_old.shape))
    ctx.check(got, plain, rtol=p["grad_rtol"], atol=p["grad_atol"],
              label="clipped_surrogate_grad() at theta = theta_old")


@judge.part("q5_ratio_clip", "clip")
def clip(ctx: Context, case) -> None:
    """Away from theta_old: both advantage signs, ratios inside and outside the band."""
    p = ctx.params
    _, theta, ys, adv, logp_old = _clip_batch(ctx.case_rng(case), p["clip_spread"])
    _expect_surrogate(ctx, (theta, ys, adv, logp_old, p["clip_eps"]),
                      "clipped_surrogate_grad() away from theta_old")


@judge.part("q5_ratio_clip", "kinks")
def kinks(ctx: Context, case) -> None:
    """Both sides of every clip bound, both advantage signs, other widths and sizes."""
    theta, ys, adv, logp_old, _ = _kink_batch(ctx.case_rng(case), case.P, case.K, case.eps)
    _expect_surrogate(ctx, (theta, ys, adv, logp_old, case.eps),
                      "clipped_surrogate_grad() with ratios next to 1 - eps and 1 + eps"
                      + ("" if case.hidden else f" ({case.name})"))


# ----------------------------------------------------------------------------- the loops
WEIGHT = ksweep.Probe("group_standardised_weight", ksweep.weights_answer(MAX_WEIGHT))
SURROGATE_GRAD = ksweep.Probe("clipped_surrogate_grad",
                              lambda theta, *_: Floats(theta.shape))


@judge.question("q6_k_sweep")
def q6_k_sweep(ctx: Context) -> None:
    p = ctx.params
    runs_of = ctx.cases_in()
    ks = sorted(set(p["sweep_ks"]))
    sweep = ksweep.run(ctx, WEIGHT, runs_of, ks, lambda K: p["sweep_budget"] // K)
    ksweep.judge(ctx, sweep, runs_of, p["ceiling_ks"], p["ceiling"], k1_success=p["k1_success"],
                 k1_tol=p["k1_tol"], why_zero=ZERO_AT_K1)


@judge.question("q7_clipped_sweep")
def q7_clipped_sweep(ctx: Context) -> None:
    p = ctx.params
    runs_of, ks = ctx.cases_in(), p["clip_ks"]
    sweep = ksweep.run(ctx, WEIGHT, runs_of, ks, lambda K: p["clip_updates"],
                       surrogate_grad=SURROGATE_GRAD, epochs=p["clip_epochs"], eps=p["clip_eps"])
    ksweep.judge(ctx, sweep, runs_of, [k for k in ks if k != 1], p["ceiling"],
                 k1_success=p["k1_success"], k1_tol=p["k1_tol"], why_zero=ZERO_AT_K1)


QUESTIONS = judge.questions
