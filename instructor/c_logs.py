"""``make c-logs``: train capstone C's five agents and write their logs.

    python -m instructor.c_logs [--runs 0,3] [--out DIR] [--progress]

    python -m instructor.c_logs --pool all      (q7's hidden logs)

Writes ``student_template/c_diagnose/logs/run_<i>.npz`` (the agent of run i
and its seed are in the ``[hidden]`` table of assignment.toml), or with
``--pool`` the hidden pool of q7 (``[hidden] pool_dir/<case>.npz``, one per
hidden case: agent, seed and severity declared there; Gradescope zip only). Bit for bit the same files on every
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
from autograder.paths import ROOT, TEMPLATE_DIR

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


def pool_log(case, progress: bool = False) -> dict[str, np.ndarray]:
    """The stored arrays of q7's hidden case ``case``: its ``agent`` trained
    from its ``seed``, the fault's knob (``c_agents.SEVERITY``) at its ``severity``."""
    overrides = {}
    if case.get("severity") is not None:
        knob = c_agents.SEVERITY[case.agent]
        overrides[knob] = int(case.severity) if knob == "buffer_size" else float(case.severity)
    return compact(c_agents.train(case.agent, int(case.seed), progress=progress,
                                  overrides=overrides))


def pool_cases(a: config.Assignment) -> list:
    """q7's hidden cases: one stored log each."""
    return [c for c in a.question("q7_unseen").cases if c.hidden]


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="", help="comma-separated run indices (default all)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for run_<i>.npz (default: the handout's logs/)")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--pool", default="", help="write q7's hidden logs instead: 'all' or "
                        "comma-separated case names, into [hidden] pool_dir")
    args = parser.parse_args(argv)
    a = config.load(ASSIGNMENT)
    if args.pool:
        out = ROOT / a.hidden["pool_dir"]
        out.mkdir(parents=True, exist_ok=True)
        names = set(args.pool.split(","))
        for case in pool_cases(a):
            if args.pool == "all" or case.name in names:
                data = npz_bytes(pool_log(case, args.progress))
                (out / f"{case.name}.npz").write_bytes(data)
                print(f"wrote {out / f'{case.name}.npz'} ({len(data) / 1e6:.2f} MB)", flush=True)
        return
    runs = [int(r) for r in args.runs.split(",") if r] or list(range(len(a.hidden["runs"])))
    out = args.out or TEMPLATE_DIR / ASSIGNMENT / a.params["logs_dir"]
    out.mkdir(parents=True, exist_ok=True)
    for i in runs:
        data = npz_bytes(run_log(i, a.hidden, args.progress))
        (out / f"run_{i}.npz").write_bytes(data)
        print(f"wrote {out / f'run_{i}.npz'} ({len(data) / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main()
