"""``make c-logs``: train capstone C's five agents and write their logs.

    python -m instructor.c_logs [--runs 0,3] [--out DIR] [--progress]

Writes ``student_template/c_diagnose/logs/run_<i>.npz`` (the agent of run i
and its seed are in the ``[hidden]`` table of assignment.toml) and the
reference's answer block in ``solutions/c_diagnose/diagnose.py`` (the
default instance's faults and evidence). Bit for bit the same files on every
run: each agent is a deterministic function of its seed, floats are stored as
float32 and ints as int32 (int8 for actions), and the npz (a zip) is written
with fixed timestamps and sorted members.
"""
from __future__ import annotations

import argparse
import functools
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from autograder.grading import config
from autograder.grading.reference import load_reference
from autograder.judges import c_diagnose as judge
from autograder.paths import ROOT, SOLUTIONS_DIR, TEMPLATE_DIR

from . import c_agents

ASSIGNMENT = "c_diagnose"
ZIP_TIME = (2026, 1, 1, 0, 0, 0)
BEGIN, END = "# BEGIN ANSWERS", "# END ANSWERS"


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


@functools.lru_cache(maxsize=None)
def _evidence(run: int) -> str:
    """Run ``run``'s evidence line, with the reference's diagnostics."""
    a = config.load(ASSIGNMENT)
    reference = load_reference(ASSIGNMENT, a.submission_files[0])
    return judge.format_evidence(judge.summary(judge.load_run(run, a.params), reference,
                                               a.params))


def answers_for(student_id: Optional[str], assignment: Optional[config.Assignment] = None
                ) -> dict[str, str]:
    """``{FAULT_<L>: fault, EVIDENCE_<L>: evidence}`` of ``student_id``'s
    instance, with the reference's diagnostics on the stored logs."""
    a = assignment or config.load(ASSIGNMENT)
    out = {}
    for letter, run in judge.letters_for(student_id, a.params).items():
        out[f"FAULT_{letter}"] = a.hidden["agent_faults"][a.hidden["runs"][run]]
        out[f"EVIDENCE_{letter}"] = _evidence(run)
    return out


def answer_block(answers: Mapping[str, str], student_id: str = "") -> str:
    lines = [f"{BEGIN} (the reference's, for STUDENT_ID = {student_id!r}; written by "
             "`make c-logs`)"]
    lines += [f"{k} = {v!r}" for k, v in answers.items()]
    return "\n".join(lines + [END])


def with_answers(source: str, student_id: str, answers: Mapping[str, str]) -> str:
    """``source`` (the reference module) with STUDENT_ID and the answer block replaced."""
    source = re.sub(r'^STUDENT_ID = (\'[^\']*\'|"[^"]*")',
                    lambda m: f"STUDENT_ID = {json.dumps(student_id)}", source, count=1,
                    flags=re.M)
    start, stop = source.index(BEGIN), source.index(END) + len(END)
    return source[:start] + answer_block(answers, student_id) + source[stop:]


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="", help="comma-separated run indices (default all)")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for run_<i>.npz (default: the handout's logs/); with "
                             "--out the reference's answers are left alone")
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
    if args.out is None:
        _evidence.cache_clear()
        path = SOLUTIONS_DIR / ASSIGNMENT / a.submission_files[0]
        path.write_text(with_answers(path.read_text(), "", answers_for(None, a)))
        print(f"wrote the default instance's answers into {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
