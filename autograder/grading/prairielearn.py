"""PrairieLearn's external grader: grade the job laid out under ``root``
(``/grade`` in PrairieLearn's container) and write its results.json.

PrairieLearn's layout (its docs, ``externalGrading.md``, "The Grading
Process"): the uploaded files in ``student/``, the question's ``tests/``
folder in ``tests/``, the course's listed server files in
``serverFilesCourse/`` (this grader, under ``rlcap/<id>/``), the question's
data in ``data/data.json``; the grader writes ``results/results.json``.

``tests/rlcap.json`` (written by ``make dist``) names the assignment and the
questions this PrairieLearn question grades: ``{"assignment": "d_grpo",
"questions": ["q1_centred", ...]}``.

The student id for per-student instances: PrairieLearn's data.json names no
user (its fields: params, correct_answers, submitted_answers, format_errors,
partial_scores, score, feedback, variant_seed, options,
raw_submitted_answers, gradable). It has ``variant_seed``, an integer drawn
per variant; the questions are ``singleVariant``, so each student (or
group) has one variant of each question, and that variant's seed is the
id (decimal text). The question's page shows it (its ``server.py`` copies it
into ``params``), so that ``STUDENT_ID`` in the module can match.

    python -m autograder.grading.prairielearn ROOT [--questions q1,q2]
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Optional

from .. import MIN_NUMPY

SETTINGS = "rlcap.json"          # in the question's tests/ folder


def lacking() -> list[str]:
    """What this interpreter lacks to run the grader (stdlib only, so that it
    can say so where the grader's own imports would fail): [] if nothing."""
    from importlib import metadata, util
    if sys.version_info < (3, 10):
        return [f"Python 3.10 or newer (it is {sys.version.split()[0]})"]
    needed = ["numpy", "threadpoolctl"] + (["tomli"] if sys.version_info < (3, 11) else [])
    missing = [name for name in needed if util.find_spec(name) is None]
    if "numpy" not in missing:
        version = metadata.version("numpy")
        try:
            old = tuple(int(x) for x in version.split(".")[:2]) < MIN_NUMPY
        except ValueError:
            old = True
        if old:
            missing.append(f"numpy {'.'.join(map(str, MIN_NUMPY))} or newer (it has {version})")
    return missing


def read_variant_id(data_json: Path) -> Optional[str]:
    """``variant_seed`` of PrairieLearn's data.json as decimal text, or None
    when the file or the field is missing or not an integer."""
    try:
        seed = json.loads(Path(data_json).read_text()).get("variant_seed")
    except (OSError, ValueError, AttributeError):
        return None
    return str(seed) if isinstance(seed, int) and not isinstance(seed, bool) else None


def read_settings(root: Path) -> tuple[str, list[str]]:
    """(assignment id, question names) of ``tests/rlcap.json``."""
    settings = json.loads((Path(root) / "tests" / SETTINGS).read_text())
    return str(settings["assignment"]), [str(q) for q in settings["questions"]]


def grade_job(root: Path, only: Optional[list[str]] = None) -> dict:
    """Grade the job under ``root``, write ``root/results/results.json`` and
    return it. ``only``: grade just these of the question's questions (tests).
    A run that fails (the grader's own fault) is written not gradable."""
    from . import config
    from .grade import grade
    from .results import pl_failed_run, write_atomically
    from ..harness.sandbox import WorkerUnavailable
    root = Path(root)
    results = root / "results" / "results.json"
    start = time.monotonic()
    assignment_id, names = read_settings(root)
    if only:
        names = [n for n in names if n in only]
    assignment = config.load(assignment_id)
    student_id = read_variant_id(root / "data" / "data.json") if assignment.needs_student_id \
        else None
    try:
        report = grade(assignment_id, root / "student", questions=names, echo=False,
                       student_id=student_id)
        data = report.to_prairielearn()
    except Exception as e:  # noqa: BLE001 - a fault of the grader must still leave results
        if isinstance(e, WorkerUnavailable):        # the log (staff) gets what to do
            print(e.detail, file=sys.stderr)
            detail = str(e)
        else:
            print(traceback.format_exc(), file=sys.stderr)
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        data = pl_failed_run(assignment_id, "autograder fault, please tell the course staff: "
                             + detail, [assignment.question(n) for n in names])
        data["extra_data"]["execution_time"] = round(time.monotonic() - start, 1)
    write_atomically(results, data)
    return data


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.grading.prairielearn",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="the job's folder (/grade on PrairieLearn)")
    parser.add_argument("--questions", help="tests only: grade just these (comma-separated)")
    args = parser.parse_args(argv)
    # run_prairielearn's `timeout` sends SIGTERM: unwind, so the sandbox kills the worker uid.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    only = [q for q in args.questions.split(",") if q] if args.questions else None
    missing = lacking()
    if missing:                 # results.json stays the placeholder: not gradable, no attempt
        print(f"rlcap: the grader cannot run on {sys.executable}: it lacks "
              f"{', '.join(missing)}. To fix: use the course image (make dist writes its "
              "Dockerfile: docs/prairielearn.md), or an image whose python3 has numpy (1.26 "
              "or newer) and threadpoolctl", file=sys.stderr)
        return 0
    if argv is None:
        try:
            from .. import numerics
            numerics.ensure(read_settings(args.root)[0], "autograder.grading.prairielearn",
                            sys.argv[1:])
        except (OSError, ValueError, KeyError):
            pass                    # an unreadable job: grade_job writes it not gradable
    data = grade_job(args.root, only)
    print(f"score {data['score']:.4f}, gradable {data['gradable']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
