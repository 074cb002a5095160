"""PrairieLearn's stock image against the Gradescope path: the same grades?

For every assignment, the reference and the blank template (every question) and
a few catalogue entries (the first ``--wrong`` entries of ``WRONG`` and the
first ``--right`` of ``RIGHT``, each on the questions it names) are graded

* through the Gradescope zip's ``run_autograder`` on the project's venv (the
  pins: numpy 2.2.6; the worker on the pinned worker venv), and
* through PrairieLearn's entry point (``run_prairielearn``, both questions of
  the assignment) on stand-ins of the stock ``prairielearn/grader-python``
  (``tests/stock_python.py``): CPython 3.12 with numpy 1.26.4 (the image until
  2026-01) and CPython 3.13 with numpy 2.4.6 (since), no namespaces, a fresh
  state dir, pip unable to reach any index; grader and worker on the image's
  Python.

Prints one line per (submission, question): the points on each path and
whether the judge's measurements (bar margins) are the same; then the seconds
of each path. Both paths grade the same student's instance (``STUDENT``: the
sid in Gradescope's metadata, the variant seed in PrairieLearn's data.json). Exits 1 if any points differ. Run as root from the repository
root (about 25 minutes on 2 cores):

    nice -n 10 .venv/bin/python bench/stock_image_parity.py [--assignments d_grpo,exercises]
"""
from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from autograder.commands import dist_prairielearn as pl  # noqa: E402
from autograder.commands.demo import run_gradescope_zip, run_prairielearn_job  # noqa: E402
from autograder.commands.dist import build  # noqa: E402
from autograder.grading import config  # noqa: E402
from autograder.paths import DIST_DIR  # noqa: E402
from stock_python import NO_INDEX_ENV, STOCK_1_26, STOCK_2_4, stock_python  # noqa: E402


@functools.lru_cache(maxsize=None)
def gradescope_zip(assignment: str) -> Path:
    """make dist of ``assignment`` once (its Gradescope zip; its PrairieLearn layout too)."""
    return build(assignment)[1]


def submissions(assignment: str, n_wrong: int, n_right: int, tmp: Path):
    """(label, files, questions or None for all) to grade."""
    a = config.load(assignment)
    yield "reference", a.sources(ROOT / "solutions"), None
    yield "blank template", a.sources(ROOT / "student_template"), None
    cat = importlib.import_module(f"autograder.catalogue.{assignment}")
    entries = list(getattr(cat, "WRONG", []))[:n_wrong] + list(getattr(cat, "RIGHT", []))[:n_right]
    for e in entries:
        d = e.write(assignment, tmp / e.name, tuple(a.submission_files))
        yield (f"{type(e).__name__.lower()} {e.name}", [d / f for f in a.submission_files],
               list(e.loses))


STUDENT = 1815       # the per-student instance graded on both paths: Gradescope's sid, and
                     # PrairieLearn's variant_seed (c_diagnose's and exercises' hidden draws)


def gradescope(assignment: str, files, questions) -> tuple[dict, dict]:
    data = run_gradescope_zip(gradescope_zip(assignment), files, questions=questions or (),
                              metadata={"users": [{"sid": str(STUDENT)}]})
    return ({t["extra_data"]["question"]: t["score"] for t in data["tests"]},
            {t["extra_data"]["question"]: t["extra_data"]["measurements"] for t in data["tests"]})


def prairielearn(assignment: str, files, questions, python: str, state: str) -> tuple[dict, dict]:
    a = config.load(assignment)
    points, measured = {}, {}
    env = dict(NO_INDEX_ENV, RLCAP_NO_NAMESPACES="1", RLCAP_STATE_DIR=state)
    gradescope_zip(assignment)
    for suffix, part in pl.parts(a).items():
        mine = [q.name for q in part if questions is None or q.name in questions]
        if not mine:
            continue
        data = run_prairielearn_job(DIST_DIR / "prairielearn" / assignment,
                                    assignment + suffix, files, python=python,
                                    questions=mine if questions else (), env=env,
                                    data={"params": {}, "variant_seed": STUDENT})
        if not data["gradable"]:
            raise SystemExit(f"{assignment}{suffix}: not gradable: {data['format_errors']}")
        for t in data["tests"]:
            points[t["extra_data"]["question"]] = t["points"]
            measured[t["extra_data"]["question"]] = t["extra_data"]["measurements"]
    return points, measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignments", default=",".join(config.available()))
    parser.add_argument("--wrong", type=int, default=2)
    parser.add_argument("--right", type=int, default=1)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: every path grades in the sandbox")
    stands = {f"PL numpy {pins[0].split('==')[1]}": (str(stock_python(minor, pins)),
                                                     tempfile.mkdtemp(prefix="rlcap-pl-state-"))
              for minor, pins in (STOCK_1_26, STOCK_2_4)}
    seconds = {"Gradescope (pins)": 0.0, **{k: 0.0 for k in stands}}
    differ = 0
    print(f"{'assignment':<12} {'submission':<44} {'question':<24} "
          + " ".join(f"{k:>18}" for k in seconds) + "  measurements")
    for assignment in args.assignments.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            for label, files, questions in submissions(assignment, args.wrong, args.right,
                                                       Path(tmp)):
                t0 = time.monotonic()
                ref_points, ref_measured = gradescope(assignment, files, questions)
                seconds["Gradescope (pins)"] += time.monotonic() - t0
                results = []
                for name, (python, state) in stands.items():
                    t0 = time.monotonic()
                    results.append(prairielearn(assignment, files, questions, python, state))
                    seconds[name] += time.monotonic() - t0
                for q in ref_points:
                    got = [r[0].get(q) for r in results]
                    same = all(r[1].get(q) == ref_measured[q] for r in results)
                    differ += any(g != ref_points[q] for g in got)
                    print(f"{assignment:<12} {label[:44]:<44} {q:<24} "
                          + " ".join(f"{p:>18}" for p in [ref_points[q]] + got)
                          + f"  {'same' if same else json.dumps([ref_measured[q]] + [r[1].get(q) for r in results])}",
                          flush=True)
    print("seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))
    print("points differ on", differ, "question(s)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
