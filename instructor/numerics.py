"""One stated numerics for values stored from one machine and recomputed on another.

Training runs are chaotic: the last bit of a matrix product or a tanh moves a
median return by hundreds. CPUs of this fleet differ in both: OpenBLAS picks
its SkylakeX kernels where AVX-512 exists (Haswell kernels elsewhere), and
numpy dispatches AVX-512 loops (tanh, exp) there. A value stored by a
generator (``make c-logs``, ``bench/ablations_table.py``) and recomputed by a
test is therefore computed under one stated configuration: OpenBLAS's Haswell
kernels and numpy without its AVX-512 loops (``NPY_DISABLE_CPU_FEATURES``),
which every x86-64 CPU here runs (AVX2 is the oldest we meet). On a CPU
without AVX-512 this is what numpy and OpenBLAS pick anyway.

``python -m instructor.numerics -- CMD ...`` runs CMD under it (``make c-logs`` does); tests use
:func:`run_python`.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

KERNEL = "Haswell"
ROOT = Path(__file__).resolve().parents[1]


def _avx512_features() -> list[str]:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:                        # pragma: no cover - numpy 1.x layout
        from numpy.core._multiarray_umath import __cpu_features__
    return sorted(k for k, on in __cpu_features__.items() if on and k.startswith("AVX512"))


def environment(base: dict | None = None) -> dict[str, str]:
    """``base`` (default os.environ) with the stated numerics."""
    env = dict(os.environ if base is None else base)
    env["OPENBLAS_CORETYPE"] = KERNEL
    env["OPENBLAS_NUM_THREADS"] = "1"
    disabled = _avx512_features()
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    else:
        env.pop("NPY_DISABLE_CPU_FEATURES", None)
    return env


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
