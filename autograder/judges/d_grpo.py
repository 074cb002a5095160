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

from . import ksweep
from ..judging import Context, Fail, Outcome, ProbeRaised, Scorecard, as_float_array, compare
from .grpo_math import exact_gradient, expected_group_update

ZERO_AT_K1 = "with one response per group the group-standardised weight is exactly 0"

RECORDED = ("q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip")
"""Questions whose expected values are the reference's answers, recorded at build time."""


# ----------------------------------------------------------------------------- inputs
def _nonzero_reward_groups(ctx: Context) -> dict[str, np.ndarray]:
    """Groups ``(G, K)`` whose rewards are not all equal (answers are non-zero)."""
    cases = {
        "binary": np.array([[1., 0., 0., 1.], [0., 0., 0., 1.], [1., 1., 0., 1.]]),
        "kl_shaped": np.random.default_rng(7).normal(0.0, 0.4, size=(3, 5)) + np.array(
            [[1.], [0.], [0.]]),
        "tiny_spread": np.array([[0.0, 1e-8], [1.0, 1.0 + 2e-8]]),
    }
    if not ctx.public_only:
        rng = np.random.default_rng(20261129)
        cases["hidden_normal"] = rng.normal(size=(6, 8))
        cases["hidden_binary"] = (rng.random(size=(5, 3)) < 0.4).astype(np.float64)
        cases["hidden_binary"][:, 0], cases["hidden_binary"][:, 1] = 1.0, 0.0
        cases["hidden_large_k"] = rng.normal(2.0, 3.0, size=(2, 32))
        cases["hidden_k2"] = np.array([[0.25, -0.5], [3.0, 1.0]])
    return cases


def _all_equal_groups(ctx: Context) -> dict[str, np.ndarray]:
    """Groups whose rewards are all equal (and K = 1 groups): exact zeros expected.
    Values are dyadic so that the group mean is exact in floating point."""
    cases = {"all_equal": np.array([[1., 1., 1.], [0., 0., 0.], [0.25, 0.25, 0.25]]),
             "k1": np.array([[1.], [0.], [0.75]])}
    if not ctx.public_only:
        cases["hidden_k1"] = np.array([[0.5], [-2.0], [1.0], [0.0]])
        cases["hidden_all_equal"] = np.full((2, 8), 1.0)
    return cases


def _weights(ctx: Context, fn: str, r: np.ndarray) -> np.ndarray:
    return as_float_array(f"{fn}() on rewards of shape {r.shape}", ctx.call(fn, r), r.shape)


def _weight_question(ctx: Context, fn: str, key: str) -> Scorecard:
    card = Scorecard()
    p = ctx.params
    nonzero = f"{fn}() on groups with different rewards"
    with card.part(nonzero, 3):
        for name, r in _nonzero_reward_groups(ctx).items():
            ctx.expect(f"{key}/{name}", ctx.call(fn, r), rtol=p["weight_rtol"],
                       atol=p["weight_atol"])
    if fn != "leave_one_out_weight":
        with card.part(f"{fn}() gives zeros for all-equal groups and for K = 1", 1,
                       requires=nonzero):
            for name, r in _all_equal_groups(ctx).items():
                compare(f"{fn}() on {name} rewards {r.tolist()}", ctx.call(fn, r),
                        np.zeros_like(r), 0.0, p["weight_atol"])
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
        for name, r in _all_equal_groups(ctx).items():
            if r.shape[1] > 1:
                compare(f"{fn}() on {name} rewards", ctx.call(fn, r), np.zeros_like(r), 0.0,
                        ctx.params["weight_atol"])
    with card.part(f"{fn}() raises ValueError for K = 1", 1, requires=nonzero):
        r = _all_equal_groups(ctx)["k1"]
        try:
            got = ctx.call(fn, r)
        except ProbeRaised as e:
            if e.type != "ValueError":
                raise Fail(f"for K = 1 expected a ValueError, but it raised {e.type}: {e.message}")
        else:
            raise Fail(f"for K = 1 (rewards {r.tolist()}) expected a ValueError: the mean of "
                       f"the other K - 1 = 0 rewards is undefined; it returned "
                       f"{np.asarray(got).tolist()}")
    return card.outcome()


def q4_enumeration(ctx: Context) -> Outcome:
    card = Scorecard()
    rtol, atol = ctx.params["enum_rtol"], ctx.params["enum_atol"]
    thetas = {"reference": reference_logits(),
              "random": np.random.default_rng(11).normal(0.0, 1.0, (NUM_PROMPTS, NUM_RESPONSES))}
    for fn, factor_of, label in (
            ("centred_weight", lambda K: (K - 1) / K, "centring: E[update] = (K-1)/K x gradient"),
            ("leave_one_out_weight", lambda K: 1.0, "leave-one-out: E[update] = gradient")):
        with card.part(label, 1):
            for tname, theta in thetas.items():
                pi = softmax_policy(theta)
                g = exact_gradient(pi, EXACT_REWARD)
                for K in ctx.params["enum_ks"]:
                    u = expected_group_update(pi, EXACT_REWARD, K,
                                              lambda r, fn=fn: _weights(ctx, fn, r))
                    compare(f"E[update] with {fn}() at K = {K}, {tname} policy, vs "
                            f"{factor_of(K):.4g} x exact gradient", u, factor_of(K) * g,
                            rtol, atol)
    return card.outcome()


def _clip_batch(seed: int, spread: float):
    """theta_old, theta (P, V); a sampled group ys (P, K); advantages (P, K) of
    both signs; logp_old (P, K) under theta_old."""
    rng = np.random.default_rng(seed)
    theta_old = rng.normal(0.0, 1.0, (NUM_PROMPTS, NUM_RESPONSES))
    theta = theta_old + rng.normal(0.0, spread, theta_old.shape)
    pi_old = softmax_policy(theta_old)
    ys = sample_groups(pi_old, 8, rng)
    adv = rng.normal(0.0, 1.0, ys.shape)
    logp_old = np.log(pi_old[np.arange(NUM_PROMPTS)[:, None], ys])
    return theta_old, theta, ys, adv, logp_old


def q5_ratio_clip(ctx: Context) -> Outcome:
    card = Scorecard()
    p = ctx.params
    eps = p["clip_eps"]
    seeds = [31] if ctx.public_only else [31, 32, 33]
    with card.part("policy_ratio(): exactly 1 on the first epoch, correct off-policy", 1):
        for seed in seeds:
            theta_old, theta, ys, _, logp_old = _clip_batch(seed, 0.6)
            rows = np.arange(NUM_PROMPTS)[:, None]
            first = as_float_array("policy_ratio(logp_old, logp_old)",
                                   ctx.call("policy_ratio", logp_old.copy(), logp_old), ys.shape)
            if not np.array_equal(first, np.ones_like(first)):
                raise Fail("on the first epoch (new log-probs equal the old ones) the ratio "
                           f"must be exactly 1; max |ratio - 1| = {np.abs(first - 1).max():.3g}")
            logp = np.log(softmax_policy(theta)[rows, ys])
            ctx.expect(f"q5/ratio_{seed}", ctx.call("policy_ratio", logp, logp_old),
                       rtol=1e-12, atol=0.0)
    with card.part("clipped_surrogate_grad() at theta = theta_old is the plain policy gradient",
                   1):
        for seed in seeds:
            theta_old, _, ys, adv, logp_old = _clip_batch(seed, 0.6)
            plain = weighted_score_gradient(softmax_policy(theta_old), ys, adv)
            got = ctx.call("clipped_surrogate_grad", theta_old, ys, adv, logp_old, eps)
            compare("clipped_surrogate_grad() at theta = theta_old", got, plain,
                    p["grad_rtol"], p["grad_atol"])
    with card.part("clipped_surrogate_grad() away from theta_old: both advantage signs, "
                   f"ratios inside and outside [1 - {eps}, 1 + {eps}]", 2):
        for seed in seeds:
            theta_old, theta, ys, adv, logp_old = _clip_batch(seed, 0.6)
            rho = np.exp(np.log(softmax_policy(theta)[np.arange(NUM_PROMPTS)[:, None], ys])
                         - logp_old)
            regions = [(adv > 0) & (rho > 1 + eps), (adv > 0) & (rho < 1 + eps),
                       (adv < 0) & (rho < 1 - eps), (adv < 0) & (rho > 1 - eps)]
            assert all(r.any() for r in regions), "clip batch does not cover every region"
            got = ctx.call("clipped_surrogate_grad", theta, ys, adv, logp_old, eps)
            ctx.expect(f"q5/clip_{seed}", got, rtol=p["grad_rtol"], atol=p["grad_atol"])
    return card.outcome()


# ----------------------------------------------------------------------------- the loops
def _weight_fn(ctx: Context):
    def weight(r: np.ndarray) -> np.ndarray:
        return _weights(ctx, "group_standardised_weight", r)
    return weight


def _grad_fn(ctx: Context):
    def grad(theta, ys, w, logp_old, eps):
        return as_float_array("clipped_surrogate_grad()",
                              ctx.call("clipped_surrogate_grad", theta, ys, w, logp_old, eps),
                              theta.shape)
    return grad


def q6_k_sweep(ctx: Context) -> Outcome:
    card = Scorecard()
    p = ctx.params
    seeds = p["sweep_seeds"][:1] if ctx.public_only else p["sweep_seeds"]
    ks = sorted(set(p["sweep_ks"]))
    runs = ksweep.run(ctx, card, _weight_fn(ctx), seeds, ks, lambda K: p["sweep_budget"] // K)
    ksweep.judge(card, runs, seeds, p["ceiling_ks"], p["ceiling"], learn_points=3, k1_points=1,
                 k1_success=p["k1_success"], k1_tol=p["k1_tol"], what="K-sweep",
                 why_zero=ZERO_AT_K1)
    return card.outcome()


def q7_clipped_sweep(ctx: Context) -> Outcome:
    card = Scorecard()
    p = ctx.params
    seeds, ks = p["clip_seeds"], p["clip_ks"]
    runs = ksweep.run(ctx, card, _weight_fn(ctx), seeds, ks, lambda K: p["clip_updates"],
                      epochs=p["clip_epochs"], eps=p["clip_eps"], surrogate_grad_fn=_grad_fn(ctx))
    ksweep.judge(card, runs, seeds, [k for k in ks if k != 1], p["ceiling"], learn_points=3,
                 k1_points=1, k1_success=p["k1_success"], k1_tol=p["k1_tol"],
                 what="clipped run", why_zero=ZERO_AT_K1)
    return card.outcome()


QUESTIONS = {f.__name__: f for f in (q1_centred, q2_standardised, q3_leave_one_out,
                                     q4_enumeration, q5_ratio_clip, q6_k_sweep,
                                     q7_clipped_sweep)}
