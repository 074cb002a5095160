"""One stated numerics for values stored from one machine and recomputed on another.

A value stored by a generator (``make c-logs``, ``bench/ablations_table.py``)
and recomputed by a test is computed under the stated numerics of
``autograder/numerics.py`` (OpenBLAS's Haswell kernels, numpy without its
AVX-512 loops), which a grading of capstone B runs under too; that module
says why and what it costs.

``python -m instructor.numerics -- CMD ...`` runs CMD under it (``make c-logs`` does); tests use
:func:`run_python`.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

from autograder.numerics import KERNEL, environment  # noqa: F401 - one source of the numerics

ROOT = Path(__file__).resolve().parents[1]


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), for the record of a measurement."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run_python(code: str, timeout: float = 600) -> str:
    """Run ``code`` in a fresh interpreter under the stated numerics, with the
    checkout and tests/ importable (``import test_b_ablations``); its stdout."""
    env = environment()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests")])
    done = subprocess.run([sys.executable, "-c", code], env=env, text=True, cwd=ROOT,
                          capture_output=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"stated-numerics run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    os.execvpe(args[0], args, environment())
