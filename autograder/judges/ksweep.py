"""Judging a K-sweep on the verifier problem (capstone D, exercise 3).

The judge runs the runtime's REINFORCE loop with the submission's weight
function (all seeds in lockstep), then grades two things: the K that must
learn reach the bar, and K = 1 leaves the preference table bit-identical to
the reference (credited only together with the first). The runs are
declared cases with a seed: a hidden run's label names no seed.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np

from rlkit import reinforce
from rlkit.verifier import expected_success, reference_logits, softmax_policy

from ..grading.judging import Context, Fail, Scorecard

Runs = dict  # {(label, K): (theta (P, V), success)}
DONE = "the training runs complete"


def _label_seed(run) -> tuple[str, int]:
    """(label, seed) of a declared case (its label names no seed when hidden)."""
    return run.label, int(run.seed)


def run(ctx: Context, card: Scorecard, weight_fn: Callable[[np.ndarray], np.ndarray],
        cases: Sequence, ks: Sequence[int], updates: Callable[[int], int],
        **train_kwargs) -> Runs:
    """Train for every K, the runs of ``cases`` (declared cases with a seed) in
    lockstep; ``updates(K)`` group updates. Returns ``{(label, K): (theta,
    success)}``, or ``{}`` after a failed part."""
    runs: Runs = {}
    seeds = [_label_seed(c) for c in cases]
    labels = [label for label, _ in seeds]
    ctx.nothing_to_record(*(f"sweep/K{K}/" + ",".join(labels) for K in ks))
    with card.part(DONE, 0):
        for K in ks:
            with ctx.within(list(cases)), \
                    ctx.case(f"sweep/K{K}/" + ",".join(labels), f"training at K = {K}"):
                thetas = reinforce.train(weight_fn, K, updates(K),
                                         [np.random.default_rng(s) for _, s in seeds],
                                         lr=ctx.params["lr"], show_progress=ctx.show_progress,
                                         desc=f"K = {K}, {len(seeds)} seed(s)", **train_kwargs)
            for label, theta in zip(labels, thetas):
                if not np.all(np.isfinite(theta)):
                    raise Fail(f"{label}, K = {K}: the preference table became NaN or "
                               "infinite during training (weights far too large?)", "nonfinite")
                runs[label, K] = theta, expected_success(softmax_policy(theta))
    for (label, K), (_, s) in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        card.note(f"     {label}, K = {K:2d}: success {s:.10f} after {updates(K)} updates")
    return runs if card.passed(DONE) else {}


def judge(card: Scorecard, runs: Runs, cases: Sequence, learn_ks: Sequence[int],
          bar: float, *, learn_points: float, k1_points: float, why_zero: str,
          k1_success: Optional[float] = None, k1_tol: float = 0.0, what: str = "") -> None:
    """Score the sweep in ``runs``: every K in ``learn_ks`` reaches ``bar`` on
    every seed; K = 1 leaves theta bit-identical (and, when given, its
    success within ``k1_tol`` of ``k1_success``). Comparisons are written so
    that NaN fails. Measurements: ``min_success`` of the learning K and the
    ``bar``."""
    prefix = f"{what}: " if what else ""
    labels = [c.label for c in cases]
    learns = f"{prefix}K in {list(learn_ks)} reaches success >= {bar}"
    card.measure("bar", bar)
    with card.part(learns, learn_points):
        if not runs:
            raise Fail("no training run finished")
        got = [(label, K, runs[label, K][1]) for label in labels for K in learn_ks]
        card.measure("min_success", min(v for _, _, v in got))
        low = [(label, K, v) for label, K, v in got if not v >= bar]
        if low:
            raise Fail("below the bar: " + ", ".join(f"{label}, K = {K}: {v:.4f}"
                                                     for label, K, v in low))
    k1 = f"{prefix}K = 1 leaves theta bit-identical to the reference"
    if k1_success is not None:
        k1 += f" (success {k1_success})"
    with card.part(k1, k1_points, requires=learns):
        if not runs:
            raise Fail("no training run finished")
        for label in labels:
            theta, success = runs[label, 1]
            if not np.array_equal(theta, reference_logits()):
                raise Fail(f"{label}: K = 1 changed theta (max |change| "
                           f"{np.abs(theta - reference_logits()).max():.3g}, success "
                           f"{success:.4f}); {why_zero}")
            if k1_success is not None and not abs(success - k1_success) <= k1_tol:
                raise Fail(f"{label}: K = 1 success {success:.10f}, expected {k1_success}")
