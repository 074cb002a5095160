"""Hidden draws per submission: the references and the catalogue under many draws.

Every hidden instance is drawn per submission (the salt, the student's id and
the files' digest: ``Context.instance_rng``), so a grading's hidden cases are
one draw of many. This grades, in the fast tier (in-process), each
reference under ``--draws`` draws (one student id each) and prints the
smallest score and every question that lost points; with ``--catalogue``,
each catalogued wrong submission of the chosen questions under the same
draws: the spread of its score (a partly right submission's score may move
with the draw) and any draw on which it kept full marks (a check that a draw
can miss).

Run from the repository root:

    .venv/bin/python bench/draws.py d_grpo --draws 20
    .venv/bin/python bench/draws.py c_diagnose --draws 20 --catalogue --questions q7_unseen
    .venv/bin/python bench/draws.py a_ppo --draws 20 --skip q7_bar,q8_train
"""
from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.grading import config  # noqa: E402
from autograder.grading.grade import grade  # noqa: E402


def _grade(assignment: str, directory: Path, questions, sid: str):
    return grade(assignment, directory, questions=questions, echo=False, in_process=True,
                 student_id=sid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignment")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--questions", default="", help="comma-separated (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated questions to leave out")
    parser.add_argument("--catalogue", action="store_true",
                        help="also the catalogue's WRONG entries naming these questions")
    args = parser.parse_args()
    a = config.load(args.assignment)
    wanted = [q.name for q in a.questions
              if (not args.questions or q.name in args.questions.split(","))
              and q.name not in args.skip.split(",")]
    ids = [f"draw-{i:02d}" for i in range(args.draws)]
    print(f"{a.id}: {len(ids)} draws of {', '.join(wanted)}; CPU {_cpu()}")

    ref = Path(tempfile.mkdtemp(prefix="draws-ref-"))
    for src in a.sources(ROOT / "solutions"):
        shutil.copy(src, ref / src.name)
    start, scores, lost = time.process_time(), [], {}
    for sid in ids:
        r = _grade(a.id, ref, wanted, sid)
        scores.append(r.score)
        for q in r.questions:
            if q.score < q.max_score - 1e-9:
                lost.setdefault(q.name, []).append((sid, round(q.score, 3), str(q.status)))
    full = sum(q.points for q in a.questions if q.name in wanted)
    print(f"reference: min {min(scores):g} of {full:g} over {len(ids)} draws "
          f"({time.process_time() - start:.0f} CPU-s); lost: {lost or 'nothing'}")
    shutil.rmtree(ref, ignore_errors=True)
    if not args.catalogue:
        return
    wrong = importlib.import_module(f"autograder.catalogue.{a.id}").WRONG
    for w in wrong:
        mine = [q for q in w.loses if q in wanted]
        if not mine:
            continue
        sub = w.write(a.id, Path(tempfile.mkdtemp(prefix="draws-w-")), a.submission_files)
        got = []
        for sid in ids:
            r = _grade(a.id, sub, mine, sid)
            got.append(sum(q.score for q in r.questions))
        most = sum(a.question(q).points for q in mine)
        kept = sum(g >= most - 1e-9 for g in got)
        print(f"  {w.name:55s} {', '.join(mine)}: mean {np.mean(got):.2f} min {min(got):.2f} "
              f"max {max(got):.2f} of {most:g}" + (f"  FULL MARKS on {kept} draw(s)" if kept
                                                  else ""))
        shutil.rmtree(sub, ignore_errors=True)


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f", {os.cpu_count()} cores"
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
