"""Reward groups ``(G, K)`` of the verifier problem's cases (capstone D, exercise 3).

A declared case spells its rewards out (``rewards``) or names a ``kind`` drawn
from its generator (its seed, or the student's instance):

* ``normal``: N(loc, scale) rewards;
* ``binary``: 1 with probability ``p``, the first column 1 and (K >= 2) the
  second 0, so that no group is all-equal (a non-zero answer);
* ``kl_shaped``: the verifier's reward on the first row minus N(0, scale) noise;
* ``dyadic``: quarters in [-2, 2] (group means are exact in floating point);
* ``dyadic_equal``: one such quarter repeated K times per group (all-equal).

A wrong weight of such groups is diagnosed here too (:func:`expect_weights`):
the oracle re-run with each slip of :data:`WEIGHT_SLIPS` when a case fails.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import slips
from ..grading.gate import Floats
from ..grading.judging import Context, ReferenceFailed


# What a half-right weight of reward groups does, as the feedback names it (capstone D's
# weights, exercise 3's centred weight): the slips of ``oracles.grpo_math.slipped_weight``.
GROUP_OF_ONE = ("a group of one given mean 0 and std 1 (so its weight is its reward and K = 1 "
                "learns; the section's weight is exactly 0 there)")
# The group-standardised weight's knobs (``slips.combined``): which rewards the mean and the
# std are taken over, the std's ddof, what is added to it. A port of TRL's GRPOTrainer turns
# two (ddof=1 and 1e-4) or three (with scale_rewards="batch": the whole batch's std).
STANDARDISED_KNOBS = {
    "axis": {
        "batch_std": "the std over the whole batch instead of each group's own std",
        "batch_mean": "the mean over the whole batch instead of each group's own mean",
        "batch_both": "the mean and std over the whole batch (batch normalisation) instead of "
                      "each group's own",
    },
    "ddof": {
        "ddof1": "the std with ddof=1 (the sample std) instead of the population std (ddof=0)",
    },
    "eps": {
        "eps_1e-4": "1e-4 added to the std instead of 1e-8",
        "eps_1e-6": "1e-6 added to the std instead of 1e-8",
        "eps_0": "the std without its 1e-8 (which keeps an all-equal group's 0 / 0 finite)",
    },
}
# Combinations that a widely copied library's code holds, named with it.
PORTS = {
    "ddof1+eps_1e-4": f"{STANDARDISED_KNOBS['ddof']['ddof1']} and "
                      f"{STANDARDISED_KNOBS['eps']['eps_1e-4']} (TRL's GRPOTrainer does both: "
                      "torch's std is the sample std)",
    "batch_std+ddof1+eps_1e-4": f"{STANDARDISED_KNOBS['axis']['batch_std']}, "
                                f"{STANDARDISED_KNOBS['ddof']['ddof1']} and "
                                f"{STANDARDISED_KNOBS['eps']['eps_1e-4']} (TRL's GRPOTrainer "
                                "with scale_rewards='batch' does all three)",
}
WEIGHT_SLIPS = {
    "centred_weight": {
        "batch_mean": "the mean over the whole batch instead of each group's own mean",
        "k1_unit": GROUP_OF_ONE,
    },
    "group_standardised_weight": {
        **{slip: words for knob in STANDARDISED_KNOBS.values() for slip, words in knob.items()},
        "k1_unit": GROUP_OF_ONE,
        "k1_reward": GROUP_OF_ONE,
        **slips.combined(STANDARDISED_KNOBS),
        **PORTS,
    },
    "leave_one_out_weight": {
        "batch_mean": "the mean of the other rewards of the whole batch instead of the other "
                      "K - 1 of the group",
        "others_over_k": "the sum of the other K - 1 rewards divided by K instead of K - 1",
        "includes_itself": "the group's mean including the response itself (that is centring, "
                           "not leave-one-out)",
    },
}


def diagnose_weight(ctx: Context, fn: str, r: np.ndarray, got, shown: str = "") -> str:
    """What wrong weights ``got`` of rewards ``r`` (G, K) match, for the weight
    ``fn`` (a key of :data:`WEIGHT_SLIPS`; the oracle ``grpo_math.<fn>``),
    called ``shown`` (default ``fn``) in the words; computed by the oracles
    only when a case fails; ``""`` in a handout (no oracles) or if none matches."""
    try:
        right = ctx.oracle_fn(f"grpo_math.{fn}")(r)
        slipped = {s: ctx.oracle_fn("grpo_math.slipped_weight")(fn, s, r)
                   for s in WEIGHT_SLIPS[fn]}
    except ReferenceFailed:          # a handout: no oracles (its public cases say the numbers)
        return ""
    return slips.name_fewest(got, right, slipped, WEIGHT_SLIPS[fn],
                             f"your {shown or fn}() matches")


def expect_weights(ctx: Context, fn: str, r: np.ndarray, *, rtol: float, atol: float,
                   zero: bool = False, oracle: tuple | None = None, slips_of: str = "",
                   max_abs: float | None = None, label: str = "") -> np.ndarray:
    """The submission's ``fn(r)`` (through the gate: finite, r's shape, entries
    at most ``max_abs``) against zeros (``zero``) or the expected answer of
    the current case (``oracle``: see ``Context.expect``); a wrong value is
    diagnosed as the weight ``slips_of`` (default ``fn``) of
    :data:`WEIGHT_SLIPS`. Returns the answer."""
    got = ctx.ask(fn, r, answer=Floats(r.shape, max_abs=max_abs))
    diagnose = lambda g: diagnose_weight(ctx, slips_of or fn, r, g, shown=fn)  # noqa: E731
    if zero:
        ctx.check(got, np.zeros_like(r), rtol=rtol, atol=atol, diagnose=diagnose, label=label)
    else:
        ctx.expect(got, rtol=rtol, atol=atol, oracle=oracle, diagnose=diagnose, label=label)
    return got


def rewards(ctx: Context, case: Any) -> np.ndarray:
    """The case's reward groups, ``(G, K) float64``."""
    if case.rewards is not None:
        return np.array(case.rewards, dtype=np.float64)
    rng = ctx.case_rng(case)
    P, K = case.P, case.K
    if case.kind == "normal":
        return rng.normal(case.loc, case.scale, size=(P, K))
    if case.kind == "binary":
        r = (rng.random(size=(P, K)) < case.p).astype(np.float64)
        r[:, 0] = 1.0
        if K >= 2:
            r[:, 1] = 0.0
        return r
    if case.kind == "kl_shaped":
        return rng.normal(0.0, case.scale, size=(P, K)) + (np.arange(P) == 0)[:, None]
    if case.kind == "dyadic":
        return rng.integers(-8, 9, size=(P, K)) / 4.0
    if case.kind == "dyadic_equal":
        return np.repeat(rng.integers(-8, 9, size=(P, 1)) / 4.0, K, axis=1)
    raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind {case.kind!r}")
