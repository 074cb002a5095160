"""Judging a K-sweep on the verifier problem (capstone D, exercise 3).

The judge runs the runtime's REINFORCE loop with the submission's weight
function (all seeds in lockstep), then grades two things: the K that must
learn reach the bar, and K = 1 leaves the preference table bit-identical to
the reference (credited only together with the first). Each K is a run of
its own: a K whose run fails (a NaN weight at K = 1, say) fails only the
parts that grade that K, and every other K is graded as usual. The runs
are declared cases with a seed: a hidden run's label names no seed.

A question using it declares three parts (assignment.toml): ``runs`` (0
points: every run of every K completes), ``learns`` and ``k1``
(``requires = "learns"``).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np

from rlkit import reinforce
from rlkit.progress import progress
from rlkit.verifier import expected_success, reference_logits, softmax_policy

from ..grading.gate import Floats
from ..grading.judging import Context, Fail
from ..harness.probe import Call


class Probe(NamedTuple):
    """A function of the submission the loop asks (``rlkit.reinforce``'s
    WEIGHT or SURROGATE_GRAD question): its name, and ``answer(*args)``, the
    gate spec of its answer to those arguments."""
    fn: str
    answer: Callable[..., object]


class Sweep(NamedTuple):
    """A sweep's outcome: ``runs`` ``{(label, K): (theta (S*P, V), success)}``
    of the K whose runs finished, and ``failed`` ``{K: the failure that
    stopped K's run}``."""
    runs: dict
    failed: dict


def run(ctx: Context, weight: Probe, cases: Sequence, ks: Sequence[int],
        updates: Callable[[int], int], *, surrogate_grad: Optional[Probe] = None,
        **train_kwargs) -> Sweep:
    """Train for every K the runs of ``cases`` (declared cases with a seed) in
    lockstep; ``updates(K)`` group updates; with ``surrogate_grad``, each group
    re-used (``rlkit.reinforce.train``'s ``epochs``, ``eps``). Every K runs in
    lockstep too, each on its own generators: one round trip (a batch,
    answers read in K order) asks each K's question of the same step. A K
    that fails stops only itself; a dead worker stops them all."""
    labels = [c.label for c in cases]
    seeds = [int(c.seed) for c in cases]
    if not cases:                      # none in this phase: its parts are not met here
        return Sweep({}, {})
    with ctx.within(list(cases)):
        ended = _lockstep(ctx, {reinforce.WEIGHT: weight,
                                reinforce.SURROGATE_GRAD: surrogate_grad}, ks, updates,
                          seeds, **train_kwargs)
    runs, failed = {}, {}
    for K in ks:
        if isinstance(ended.get(K), BaseException):
            failed[K] = _at_k(ended[K], K)
            continue
        for label, theta in zip(labels, ended[K]):
            if not np.all(np.isfinite(theta)):
                failed[K] = Fail(f"{label}, K = {K}: the preference table became NaN or "
                                 "infinite during training (weights far too large?)",
                                 "nonfinite", fn=weight.fn)
                break
            runs[label, K] = theta, expected_success(softmax_policy(theta))
    for (label, K), (_, s) in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ctx.note(f"     {label}, K = {K:2d}: success {s:.10f} after {updates(K)} updates")
    for K, e in failed.items():
        ctx.note(f"     {_short(e)}")
    return Sweep(runs, failed)


def _at_k(e: BaseException, K: int) -> BaseException:
    """``e`` (what stopped K's run) with K named first in its message."""
    if isinstance(e, Fail):
        e.args = (f"K = {K}: the run stopped: {e}",)
    return e


def _short(e: BaseException) -> str:
    text = str(e)
    return text if len(text) < 160 else text[:157] + "..."


def _lockstep(ctx: Context, probes: dict, ks: Sequence[int], updates: Callable[[int], int],
              seeds: Sequence[int], **train_kwargs) -> dict:
    """Every K's loop (``rlkit.reinforce.training``, the runs of ``seeds`` on
    fresh generators) advanced together: ``{K: final thetas (S, P, V), or what
    stopped it}``. A failed answer stops its own K only; a fatal probe error
    (the worker died or broke the protocol) ends the question."""
    clipped = probes[reinforce.SURROGATE_GRAD] is not None
    loops = {K: reinforce.training(K, updates(K), [np.random.default_rng(s) for s in seeds],
                                   lr=ctx.params["lr"], clipped=clipped, **train_kwargs)
             for K in ks}
    ended: dict = {}
    asked: dict = {}
    for K, loop in loops.items():
        _advance(loop, K, None, asked, ended)
    longest = max(ks, key=updates)
    bar = iter(progress(range(updates(longest)), enable=ctx.show_progress,
                        desc=f"K = {', '.join(map(str, ks))}, {len(seeds)} seed(s)"))
    while asked:
        order = [K for K in ks if K in asked]
        if asked.get(longest, ("",))[0] == reinforce.WEIGHT:
            next(bar, None)
        calls = [Call(probes[asked[K][0]].fn, asked[K][1],
                      answer=probes[asked[K][0]].answer(*asked[K][1])) for K in order]
        answers = ctx.ask_many(calls)         # a dead worker ends the question
        for i, K in enumerate(order):
            if answers.raised_at is not None and i > answers.raised_at:
                break                         # the batch stopped before it: asked again
            asked.pop(K)
            try:
                value = answers[i]
            except Fail as e:            # this K's answer (or an earlier one's raise) failed
                ended[K] = e
                continue
            _advance(loops[K], K, value, asked, ended)
    for _ in bar:
        pass
    return ended


def _advance(loop, K: int, answer, asked: dict, ended: dict) -> None:
    """Send ``answer`` to K's loop: its next question into ``asked``, or its
    result into ``ended`` (final thetas, or what the judge's side raised)."""
    try:
        asked[K] = loop.send(answer)
    except StopIteration as done:
        ended[K] = done.value
    except Exception as e:  # noqa: BLE001 - K's own failure, judged in K's parts
        ended[K] = e


def _first_failure(sweep: Sweep, ks: Sequence[int]) -> Optional[BaseException]:
    return next((sweep.failed[K] for K in ks if K in sweep.failed), None)


def judge(ctx: Context, sweep: Sweep, cases: Sequence, learn_ks: Sequence[int], bar: float, *,
          why_zero: str, k1_success: Optional[float] = None, k1_tol: float = 0.0) -> None:
    """Score ``sweep`` in the question's parts ``runs``, ``learns`` and ``k1``:
    every K in ``learn_ks`` reaches ``bar`` on every seed; K = 1 leaves theta
    bit-identical (and, when given, its success within ``k1_tol`` of
    ``k1_success``). Comparisons are written so that NaN fails. Measurements:
    ``min_success`` of the learning K and the ``bar``."""
    labels = [c.label for c in cases]
    ks = sorted({K for _, K in sweep.runs} | set(sweep.failed))
    if not cases:
        return
    ctx.measure("bar", bar)
    with ctx.part("runs") as part:
        part.case_list()
        first = _first_failure(sweep, ks)
        if first is not None:
            raise first
    with ctx.part("learns") as part:
        part.case_list()
        first = _first_failure(sweep, learn_ks)
        if first is not None:
            raise first
        got = [(label, K, sweep.runs[label, K][1]) for label in labels for K in learn_ks]
        ctx.measure("min_success", min(v for _, _, v in got))
        low = [(label, K, v) for label, K, v in got if not v >= bar]
        if low:
            raise Fail("below the bar: " + ", ".join(f"{label}, K = {K}: {v:.4f}"
                                                     for label, K, v in low))
    with ctx.part("k1") as part:
        part.case_list()
        if 1 in sweep.failed:
            raise sweep.failed[1]
        for label in labels:
            theta, success = sweep.runs[label, 1]
            if not np.array_equal(theta, reference_logits()):
                raise Fail(f"{label}: K = 1 changed theta (max |change| "
                           f"{np.abs(theta - reference_logits()).max():.3g}, success "
                           f"{success:.4f}); {why_zero}")
            if k1_success is not None and not abs(success - k1_success) <= k1_tol:
                raise Fail(f"{label}: K = 1 success {success:.10f}, expected {k1_success}")


def weights_answer(max_abs: float) -> Callable:
    """The gate spec of a weight function's answer to rewards ``r`` (G, K)."""
    return lambda r: Floats(r.shape, max_abs=max_abs)
