"""One stated numerics for runs whose numbers must be the same on every machine.

Training runs are chaotic: the last bit of a matrix product or a tanh moves a
median return by hundreds. CPUs of this fleet differ in both: OpenBLAS picks
its SkylakeX kernels where AVX-512 exists (Haswell kernels elsewhere), and
numpy dispatches AVX-512 loops (tanh, exp) there. The stated numerics are
OpenBLAS's Haswell kernels, one BLAS thread and numpy without its AVX-512
loops (``NPY_DISABLE_CPU_FEATURES``), which every x86-64 CPU here runs (AVX2
is the oldest we meet); on a CPU without AVX-512 they are what numpy and
OpenBLAS pick anyway. Values stored by a generator (``make c-logs``,
``bench/ablations_table.py``: ``instructor/numerics.py``) are computed under
them, and so is a grading whose assignment grades numbers of the judge's own
runs (``stated_numerics = true`` in its assignment.toml: capstone B, whose
claim is graded on the judge's runs of the student's experiment), so that a
re-grade on another machine of the platform gives the same numbers. The
price, measured on an AMD EPYC with AVX-512: a reference training run takes
7.8 s instead of 4.3 s (numpy's tanh without its AVX-512 loop).

Such a grading's entry points (``python -m autograder grade``, PrairieLearn's
``autograder.grading.prairielearn``, ``grade-all``'s jobs) call
:func:`ensure` first: it starts the process again under the stated numerics
(the same pid and arguments) unless they are in effect. The worker inherits
them (``harness.probe.worker_env``).
"""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Optional, Sequence

KERNEL = "Haswell"
MARK = "RLCAP_NUMERICS"          # set to "stated" in a process started under them


def _avx512_features() -> list[str]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:                        # pragma: no cover - numpy 1.x layout
        from numpy.core._multiarray_umath import __cpu_features__
    return sorted(k for k, on in __cpu_features__.items() if on and k.startswith("AVX512"))


def environment(base: Optional[dict] = None) -> dict[str, str]:
    """``base`` (default os.environ) with the stated numerics (on x86-64: on
    another architecture, one BLAS thread and its own kernels)."""
    env = dict(os.environ if base is None else base)
    if platform.machine().lower() in ("x86_64", "amd64"):
        env["OPENBLAS_CORETYPE"] = KERNEL
    env["OPENBLAS_NUM_THREADS"] = "1"
    env[MARK] = "stated"
    disabled = _avx512_features()
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    else:
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
    return env


def in_effect() -> bool:
    """Whether this process was started under the stated numerics."""
    return os.environ.get(MARK) == "stated"


def described() -> str:
    """The numerics of this process, in words (for the staff's notes)."""
    if in_effect():
        return (f"stated numerics (OpenBLAS {KERNEL} kernels, numpy without AVX-512 loops: "
                "the same numbers on every x86-64 machine)")
    return "this machine's own numerics (its BLAS kernels and numpy loops)"


def wanted(assignment_id: str, assignments_dir: Optional[Path] = None) -> bool:
    """Whether the assignment grades under the stated numerics here: it asks
    for them and the judge's runs can happen (the oracles ship: not in a
    handout, whose checks run nothing of the kind). False when it cannot be
    read: the grading says why."""
    if not (Path(__file__).resolve().parent / "oracles").is_dir():
        return False
    from .grading import config
    try:
        return config.load(assignment_id, assignments_dir).stated_numerics
    except Exception:  # noqa: BLE001 - an unreadable assignment is the grading's to report
        return False


def ensure(assignment_id: str, module: str, argv: Sequence[str],
           assignments_dir: Optional[Path] = None, env: Optional[dict] = None) -> None:
    """Start this process again as ``python -m module *argv`` under the stated
    numerics when ``assignment_id`` asks for them and they are not in effect;
    else return. ``env``: the environment to start from (default os.environ)."""
    if in_effect() or not wanted(assignment_id, assignments_dir):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", module, *argv], environment(env))
