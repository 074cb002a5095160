"""Wire caps, measured in one run: the largest frame and JSON header the
references send and receive (what the caps in ``autograder/harness/wire.py``
are sized from), and the judge's peak memory while forged replies arrive.

    .venv/bin/python bench/bench_wire.py [--skip-slow]
"""
from __future__ import annotations

import resource
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.grading import config
from autograder.grading.grade import grade
from autograder.harness import wire
from autograder.paths import SOLUTIONS_DIR

SIZES = {"frame": 0, "header": 0}


def _track(frame) -> None:
    SIZES["frame"] = max(SIZES["frame"], len(frame))
    SIZES["header"] = max(SIZES["header"], struct.unpack_from("<Q", frame, 0)[0])


def measure_references(skip_slow: bool) -> None:
    frame, decode = wire.frame, wire.decode

    def tracked_frame(message):
        data = frame(message)
        _track(data[8:])
        return data

    def tracked_decode(data):
        _track(data)
        return decode(data)

    wire.frame, wire.decode = tracked_frame, tracked_decode
    for a in config.available():
        assignment = config.load(a)
        qs = [q.name for q in assignment.questions if not (skip_slow and q.budget_cpu_s >= 60)]
        tmp = Path(tempfile.mkdtemp(prefix="rlcap-bench-wire-"))
        for src in assignment.sources(SOLUTIONS_DIR):
            shutil.copy(src, tmp / src.name)
        SIZES.update(frame=0, header=0)
        report = grade(a, tmp, questions=qs, echo=False)
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"{a}: {report.score:g}/{report.graded_max_score:g} on {len(qs)} questions; "
              f"largest frame {SIZES['frame']:,} bytes ({wire.MAX_FRAME / SIZES['frame']:.0f}x "
              f"under the cap), largest header {SIZES['header']:,} bytes "
              f"({wire.MAX_HEADER / SIZES['header']:.0f}x under)", flush=True)
    wire.frame, wire.decode = frame, decode


FORGED = ["forged_16mb_reply", "forged_deep_header", "forged_20mb_error_message",
          "claims_2gb_frame"]


def judge_peak_memory() -> None:
    """Grade each forged-reply submission in a fresh judge process; print its peak RSS."""
    code = (
        "import resource, sys, tempfile, pathlib\n"
        "from autograder.catalogue.hostile import HOSTILE\n"
        "from autograder.grading.grade import grade\n"
        "h = next(h for h in HOSTILE if h.name == sys.argv[1])\n"
        "d = pathlib.Path(tempfile.mkdtemp()); (d / 'grpo.py').write_text(h.source)\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "r = grade('d_grpo', d, questions=['q1_centred'], echo=False)\n"
            "import shutil; shutil.rmtree(d)\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(f'{before / 1024:.0f} {peak / 1024:.0f} {r.questions[0].status}')\n")
    for name in FORGED:
        proc = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True)
        if proc.returncode:
            print(f"{name}: the judge process failed: {proc.stderr[-1500:]}", flush=True)
            continue
        out = proc.stdout.split()
        print(f"{name}: judge peak RSS {out[1]} MB (after imports {out[0]} MB); "
              f"status {out[2]}", flush=True)


if __name__ == "__main__":
    print(f"caps: frame {wire.MAX_FRAME:,} B, header {wire.MAX_HEADER:,} B, depth "
          f"{wire.MAX_DEPTH}, values {wire.MAX_VALUES:,}, arrays {wire.MAX_ARRAYS:,}")
    judge_peak_memory()
    measure_references("--skip-slow" in sys.argv)
