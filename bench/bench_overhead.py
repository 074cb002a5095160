"""The sandbox's cost per submission: grading capstone D's blank template
(every question, sandboxed as root: each question's public and hidden phase
in a worker of its own, every worker a fresh interpreter) is all overhead,
since each answer is NotImplementedError at once.

    .venv/bin/python bench/bench_overhead.py [--runs 3]

Prints, measured in this run: the wall and CPU seconds of one grading of the
blank template sandboxed, the same unsandboxed (the worker as this user, no
namespaces, filter or watchdog), their difference per submission and per
worker, and their ratio.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.grading.grade import grade  # noqa: E402


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _one(sub: Path, sandbox: bool) -> tuple[float, float, int, str]:
    """(wall s, CPU s of this process and its reaped children, workers, note)."""
    import autograder.harness.probe as probe
    started = [0]
    init = probe.ProbeSession.__init__

    def counting(self, *a, **k):
        started[0] += 1
        init(self, *a, **k)
    probe.ProbeSession.__init__ = counting
    try:
        c0, t0 = _cpu(), time.perf_counter()
        report = grade("d_grpo", sub, echo=False, sandbox=sandbox)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
    finally:
        probe.ProbeSession.__init__ = init
    assert report.score == 0 and len(report.questions) == 7, report.table()
    return wall, cpu, started[0], report.notes[0] if report.notes else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_overhead: run as root (the sandbox needs it)")
    sub = Path(tempfile.mkdtemp(prefix="rlcap-bench-"))
    shutil.copy(ROOT / "student_template" / "d_grpo" / "grpo.py", sub / "grpo.py")
    try:
        _one(sub, True)                                  # warm: the worker venv, page cache
        results = {True: [], False: []}
        for _ in range(args.runs):
            for sandbox in (True, False):
                results[sandbox].append(_one(sub, sandbox))
    finally:
        shutil.rmtree(sub, ignore_errors=True)
    on, off = results[True], results[False]
    print(on[0][3])
    med = lambda rows, i: statistics.median(r[i] for r in rows)    # noqa: E731
    workers = on[0][2]
    print(f"blank d_grpo template, 7 questions, {workers} workers, median of {args.runs} "
          f"on {os.cpu_count()} cores:")
    print(f"  sandboxed:   wall {med(on, 0):.2f} s, CPU {med(on, 1):.2f} s per submission")
    print(f"  unsandboxed: wall {med(off, 0):.2f} s, CPU {med(off, 1):.2f} s per submission")
    extra = med(on, 0) - med(off, 0)
    print(f"  sandbox overhead: {extra:+.2f} s wall per submission ({extra / workers * 1000:+.0f} "
          f"ms per worker); sandboxed / unsandboxed = {med(on, 0) / med(off, 0):.2f}")


if __name__ == "__main__":
    main()
