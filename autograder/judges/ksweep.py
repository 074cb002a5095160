"""Judging a K-sweep on the verifier problem (capstone D, exercise 3).

The judge runs the runtime's REINFORCE loop with the submission's weight
function (all seeds in lockstep), then grades two things: the K that must
learn reach the bar, and K = 1 leaves the preference table bit-identical to
the reference (credited only together with the first). The runs are
declared cases with a seed: a hidden run's label names no seed.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np

from rlkit import reinforce
from rlkit.progress import progress
from rlkit.verifier import expected_success, reference_logits, softmax_policy

from ..grading.judging import Context, Fail, Scorecard
from ..harness.probe import Call, ProbeFatal

Runs = dict  # {(label, K): (theta (P, V), success)}
DONE = "the training runs complete"


class Probe(NamedTuple):
    """A function of the submission the loop asks (``rlkit.reinforce``'s
    WEIGHT or SURROGATE_GRAD question): its name, and ``check(got, *args)``,
    which validates its answer to ``args`` (raising :class:`Fail`) and
    returns what the loop uses."""
    fn: str
    check: Callable[..., np.ndarray]


def _label_seed(run) -> tuple[str, int]:
    """(label, seed) of a declared case (its label names no seed when hidden)."""
    return run.label, int(run.seed)


def run(ctx: Context, card: Scorecard, weight: Probe, cases: Sequence, ks: Sequence[int],
        updates: Callable[[int], int], *, surrogate_grad: Optional[Probe] = None,
        **train_kwargs) -> Runs:
    """Train for every K, the runs of ``cases`` (declared cases with a seed) in
    lockstep; ``updates(K)`` group updates; with ``surrogate_grad``, each group
    re-used (``rlkit.reinforce.train``'s ``epochs``, ``eps``). Returns
    ``{(label, K): (theta, success)}``, or ``{}`` after a failed part.

    Every K runs in lockstep too, each on its own generators: one round trip
    (a batch, answers read in K order) asks each K's question of the same
    step. A K that fails ends the K after it (they would not have run) while
    the K before it go on, and the first K in order that failed is the
    part's failure, in that K's case: the sweep run one K after the other."""
    runs: Runs = {}
    seeds = [_label_seed(c) for c in cases]
    labels = [label for label, _ in seeds]
    ctx.nothing_to_record(*(f"sweep/K{K}/" + ",".join(labels) for K in ks))
    with card.part(DONE, 0):
        with ctx.within(list(cases)):
            ended = _lockstep(ctx, {reinforce.WEIGHT: weight,
                                    reinforce.SURROGATE_GRAD: surrogate_grad}, ks, updates,
                              [s for _, s in seeds], **train_kwargs)
        for K in ks:
            with ctx.within(list(cases)), \
                    ctx.case(f"sweep/K{K}/" + ",".join(labels), f"training at K = {K}"):
                if isinstance(ended[K], BaseException):
                    raise ended[K]
            thetas = ended[K]
            for label, theta in zip(labels, thetas):
                if not np.all(np.isfinite(theta)):
                    raise Fail(f"{label}, K = {K}: the preference table became NaN or "
                               "infinite during training (weights far too large?)", "nonfinite")
                runs[label, K] = theta, expected_success(softmax_policy(theta))
    for (label, K), (_, s) in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        card.note(f"     {label}, K = {K:2d}: success {s:.10f} after {updates(K)} updates")
    return runs if card.passed(DONE) else {}


def _lockstep(ctx: Context, probes: dict, ks: Sequence[int], updates: Callable[[int], int],
              seeds: Sequence[int], **train_kwargs) -> dict:
    """Every K's loop (``rlkit.reinforce.training``, the runs of ``seeds`` on
    fresh generators) advanced together: ``{K: final thetas (S, P, V), or what
    it raised}``; a K after a failed one is not run to its end (its entry is
    never read). A fatal probe error (the worker died or broke the protocol)
    ends them all, in the case of the first K the round trip asked for."""
    clipped = probes[reinforce.SURROGATE_GRAD] is not None
    loops = {K: reinforce.training(K, updates(K), [np.random.default_rng(s) for s in seeds],
                                   lr=ctx.params["lr"], clipped=clipped, **train_kwargs)
             for K in ks}
    ended: dict = {}
    asked: dict = {}
    for K, loop in loops.items():
        if not _advance(loop, K, None, asked, ended):
            break                                    # not run one K after the other
    longest = max(ks, key=updates)
    bar = iter(progress(range(updates(longest)), enable=ctx.show_progress,
                        desc=f"K = {', '.join(map(str, ks))}, {len(seeds)} seed(s)"))
    while asked:
        order = [K for K in ks if K in asked]
        if asked.get(longest, ("",))[0] == reinforce.WEIGHT:
            next(bar, None)
        try:
            answers = ctx.call_many([Call(probes[asked[K][0]].fn, asked[K][1]) for K in order])
        except ProbeFatal as e:              # in the case of the first K it was asking for
            ended[order[0]] = e
            break
        for i, K in enumerate(order):
            question = asked.pop(K)
            try:
                value = probes[question[0]].check(answers[i], *question[1])
            except Exception as e:  # noqa: BLE001 - raised in K's case, in K order
                ended[K], failed = e, True
            else:
                failed = not _advance(loops[K], K, value, asked, ended)
            if failed:
                for later in order[i + 1:]:          # not run one K after the other
                    asked.pop(later, None)
                break
    for _ in bar:
        pass
    return ended


def _advance(loop, K: int, answer, asked: dict, ended: dict) -> bool:
    """Send ``answer`` to K's loop: its next question into ``asked``, or its
    result into ``ended`` (final thetas, or what the judge's side of it
    raised: then False)."""
    try:
        asked[K] = loop.send(answer)
    except StopIteration as done:
        ended[K] = done.value
    except Exception as e:  # noqa: BLE001 - raised in K's case, in K order
        ended[K] = e
        return False
    return True


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
