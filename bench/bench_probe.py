"""Probe round-trip overhead: one call of a student function through the
worker process versus the same call in-process, measured in one run.

    .venv/bin/python bench/bench_probe.py

Prints microseconds per call and the ratio, for a (4, K) reward array (the
K-sweep of capstone D) and a (256, 2) logits minibatch (capstone A).
"""
from __future__ import annotations

import shutil
import time

import numpy as np

from autograder.paths import SOLUTIONS_DIR
from autograder.harness.probe import InProcessCaller, ProbeSession
from autograder.grading.reference import load_reference
from autograder.harness.sandbox import Limits, open_sandbox

CALLS = 3000


def per_call_us(call, fn, *args) -> float:
    call(fn, *args)
    t0 = time.perf_counter()
    for _ in range(CALLS):
        call(fn, *args)
    return (time.perf_counter() - t0) / CALLS * 1e6


def main() -> None:
    rng = np.random.default_rng(0)
    cases = [("d_grpo", "grpo.py", "group_standardised_weight", (rng.random((4, 8)),)),
             ("a_ppo", "ppo.py", "clipped_policy_loss",
              (rng.normal(size=(256, 2)), rng.integers(0, 2, 256), rng.normal(size=256) - 1.0,
               rng.normal(size=256), 0.2))]
    with open_sandbox() as sb:
        print(sb.note)
        for assignment, filename, fn, args in cases:
            directory = sb.new_dir()
            shutil.copy(SOLUTIONS_DIR / assignment / filename, directory / filename)
            module = filename[:-3]
            local = per_call_us(InProcessCaller(load_reference(assignment, filename)).call, fn,
                                *args)
            with ProbeSession(directory, module, Limits(60), 120, sb) as session:
                session.import_module()
                remote = per_call_us(session.call, fn, *args)
            print(f"{assignment}.{fn}: in-process {local:7.1f} us, through the probe "
                  f"{remote:7.1f} us per call; overhead {remote - local:6.1f} us "
                  f"(ratio {remote / local:.1f}x)")


if __name__ == "__main__":
    main()
