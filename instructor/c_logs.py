"""``make c-logs``: train capstone C's five agents and write their logs.

    python -m instructor.c_logs [--runs 0,3] [--out DIR] [--progress]

Writes ``student_template/c_diagnose/logs/run_<i>.npz`` (the agent of run i
and its seed are in the ``[hidden]`` table of assignment.toml). Bit for bit the same files on every
run: each agent is a deterministic function of its seed, floats are stored as
float32 and ints as int32 (int8 for actions), and the npz (a zip) is written
with fixed timestamps and sorted members.
"""
from __future__ import annotations

import argparse
import io
import zipfile
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from autograder.grading import config
from autograder.paths import TEMPLATE_DIR

from . import c_agents

ASSIGNMENT = "c_diagnose"
ZIP_TIME = (2026, 1, 1, 0, 0, 0)


def compact(log: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The stored dtypes: float32 floats, int8 actions, int32 other ints."""
    out = {}
    for k, v in log.items():
        v = np.asarray(v)
        if v.dtype.kind == "f":
            out[k] = v.astype(np.float32)
        elif k == "actions":
            out[k] = v.astype(np.int8)
        else:
            out[k] = v.astype(np.int32)
    return out


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An ``np.load``-able npz whose bytes depend on the arrays only."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue())
    return buf.getvalue()


def run_log(i: int, hidden: Mapping, progress: bool = False) -> dict[str, np.ndarray]:
    """Run ``i``'s stored arrays (agent and seed from ``[hidden]``)."""
    return compact(c_agents.train(hidden["runs"][i], int(hidden["run_seeds"][i]),
                                  progress=progress))


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="", help="comma-separated run indices (default all)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for run_<i>.npz (default: the handout's logs/)")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args(argv)
    a = config.load(ASSIGNMENT)
    runs = [int(r) for r in args.runs.split(",") if r] or list(range(len(a.hidden["runs"])))
    out = args.out or TEMPLATE_DIR / ASSIGNMENT / a.params["logs_dir"]
    out.mkdir(parents=True, exist_ok=True)
    for i in runs:
        data = npz_bytes(run_log(i, a.hidden, args.progress))
        (out / f"run_{i}.npz").write_bytes(data)
        print(f"wrote {out / f'run_{i}.npz'} ({len(data) / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main()
