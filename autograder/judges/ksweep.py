"""Judging a K-sweep on the verifier problem (capstone D, exercise 3).

The judge runs the runtime's REINFORCE loop with the submission's weight
function (all seeds in lockstep), then grades two things: the K that must
learn reach the bar, and K = 1 leaves the preference table bit-identical to
the reference (credited only together with the first).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from rlkit import reinforce
from rlkit.verifier import expected_success, reference_logits, softmax_policy

from ..judging import Context, Fail, Scorecard

Runs = dict  # {(seed, K): (theta (P, V), success)}
DONE = "the training runs complete"


def run(ctx: Context, card: Scorecard, weight_fn: Callable[[np.ndarray], np.ndarray],
        seeds: Sequence[int], ks: Sequence[int], updates: Callable[[int], int],
        **train_kwargs) -> Runs:
    """Train for every K, all seeds in lockstep; ``updates(K)`` group updates.
    Returns ``{(seed, K): (theta, success)}``, or ``{}`` after a failed part."""
    runs: Runs = {}
    with card.part(DONE, 0):
        for K in ks:
            thetas = reinforce.train(weight_fn, K, updates(K),
                                     [np.random.default_rng(s) for s in seeds],
                                     lr=ctx.params["lr"], show_progress=ctx.show_progress,
                                     desc=f"K = {K}, seeds {list(seeds)}", **train_kwargs)
            for seed, theta in zip(seeds, thetas):
                runs[seed, K] = theta, expected_success(softmax_policy(theta))
    for (seed, K), (_, s) in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        card.note(f"     seed {seed}, K = {K:2d}: success {s:.10f} after {updates(K)} updates")
    return runs if card.passed(DONE) else {}


def judge(card: Scorecard, runs: Runs, seeds: Sequence[int], learn_ks: Sequence[int],
          bar: float, *, learn_points: float, k1_points: float, why_zero: str,
          k1_success: Optional[float] = None, k1_tol: float = 0.0, what: str = "") -> None:
    """Score the sweep in ``runs``: every K in ``learn_ks`` reaches ``bar`` on
    every seed; K = 1 leaves theta bit-identical (and, when given, its
    success within ``k1_tol`` of ``k1_success``)."""
    prefix = f"{what}: " if what else ""
    learns = f"{prefix}K in {list(learn_ks)} reaches success >= {bar}"
    with card.part(learns, learn_points):
        if not runs:
            raise Fail("no training run finished")
        low = [(s, K, runs[s, K][1]) for s in seeds for K in learn_ks if runs[s, K][1] < bar]
        if low:
            raise Fail("below the bar: " + ", ".join(f"seed {s}, K = {K}: {v:.4f}"
                                                     for s, K, v in low))
    k1 = f"{prefix}K = 1 leaves theta bit-identical to the reference"
    if k1_success is not None:
        k1 += f" (success {k1_success})"
    with card.part(k1, k1_points, requires=learns):
        if not runs:
            raise Fail("no training run finished")
        for s in seeds:
            theta, success = runs[s, 1]
            if not np.array_equal(theta, reference_logits()):
                raise Fail(f"seed {s}: K = 1 changed theta (max |change| "
                           f"{np.abs(theta - reference_logits()).max():.3g}, success "
                           f"{success:.4f}); {why_zero}")
            if k1_success is not None and abs(success - k1_success) > k1_tol:
                raise Fail(f"seed {s}: K = 1 success {success:.10f}, expected {k1_success}")
