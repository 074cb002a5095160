"""Reward groups ``(G, K)`` of the verifier problem's cases (capstone D, exercise 3).

A declared case spells its rewards out (``rewards``) or names a ``kind`` drawn
from its generator (its seed, or the student's instance):

* ``normal``: N(loc, scale) rewards;
* ``binary``: 1 with probability ``p``, the first column 1 and (K >= 2) the
  second 0, so that no group is all-equal (a non-zero answer);
* ``kl_shaped``: the verifier's reward on the first row minus N(0, scale) noise;
* ``dyadic``: quarters in [-2, 2] (group means are exact in floating point);
* ``dyadic_equal``: one such quarter repeated K times per group (all-equal).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..grading.judging import Context, ReferenceFailed


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
