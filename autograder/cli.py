"""``python -m autograder``: grade (everyone); grade-all, validate, dist, demo
(instructors: not in a student handout)."""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path


def _fail(command: str, reason: str) -> int:
    print(f"{command}: {reason}", file=sys.stderr)
    return 2


NO_POSIX = ("needs Linux or macOS (it runs your code in a sandboxed process with POSIX limits); "
            "on Windows use WSL, or the notebook's grader.check cells, which work here")


def _cmd_grade(args: argparse.Namespace) -> int:
    from . import numerics
    from .grading.config import ConfigError, load
    from .grading.grade import grade
    from .harness import sandbox
    if sandbox.fcntl is None:
        return _fail("grade", NO_POSIX)
    # run_autograder's `timeout` sends SIGTERM: unwind, so the sandbox kills the worker uid.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    questions = [q for q in args.questions.split(",") if q] if args.questions else None
    if args.argv is not None:                 # the command line's (not a test's call of main)
        numerics.ensure(args.assignment, "autograder", args.argv)
    try:
        assignment = load(args.assignment)
        for q in questions or []:
            assignment.question(q)
    except (ConfigError, KeyError) as e:
        return _fail("grade", e.args[0])
    if not Path(args.submission).exists():
        return _fail("grade", f"{args.submission} does not exist (give the folder or zip "
                     "holding " + ", ".join(assignment.submission_files) + ")")
    try:
        report = grade(args.assignment, Path(args.submission), results=args.results,
                       questions=questions, metadata=args.metadata, sandbox=not args.no_sandbox)
    except sandbox.WorkerUnavailable as e:      # results.json says it to the student
        return _fail("grade", e.detail)         # what to do, for whoever runs this
    print(report_text(report, verbose=args.verbose))
    if args.reveal:
        print(reveal_text(assignment, report))
    return 0


def report_text(report, verbose: bool = False) -> str:
    """A grading's table and notes (and with ``verbose`` every question's
    feedback) for a terminal or a log: every text a submission controls
    shown escaped, every note on one line."""
    from .grading.safe import terminal
    lines = [report.table()] + ["note: " + terminal(m).replace("\n", "\n      ")
                                for m in report.messages]
    sandboxing = next((n for n in report.notes if "sandboxed" in n), "")
    if sandboxing:
        lines.append(f"sandbox: {terminal(sandboxing)}")
    if verbose:
        lines += [f"\n== {q.name} ({q.score_text()})\n{terminal(q.output)}"
                  for q in report.questions]
    elif any(q.graded and not q.passed for q in report.questions):
        lines.append("(the table shows one failure per question; add -v for every part of "
                     "each question's feedback)")
    return "\n".join(lines)


def reveal_text(assignment, report) -> str:
    """For instructors (``grade --reveal``): each hidden case the grading met,
    with its inputs, the check, what the submission returned against what was
    expected, and what it said. Never written to results.json."""
    from .grading.safe import terminal
    if not any(q.has_hidden_cases for q in assignment.questions):
        return ("--reveal: this copy of the assignment holds no hidden cases (a student "
                "handout): nothing to reveal")
    if not report.reveal:
        return ("--reveal: no hidden case ran (graded here on the public cases only, or every "
                "question ended before its hidden phase)")
    lines = ["hidden cases (instructors only; the student saw only the labels):"]
    for r in report.reveal:
        inputs = ", ".join(f"{k} = {v}" for k, v in sorted(r["inputs"].items()))
        lines.append(f"  {r['question']}: {r['label']} = case {r['case']!r} ({inputs or 'no fields'})")
        lines.append(f"      {r['check']}: {r['result']}")
        if "expected" in r:
            lines.append(f"      expected {r['expected']}")
            lines.append(f"      got      {r['got']}")
    return terminal("\n".join(lines))


def _instructor(name: str):
    """An instructor command's module, or None in a student handout."""
    import importlib
    try:
        return importlib.import_module(f"autograder.commands.{name}")
    except ImportError:
        return None


HANDOUT = "is an instructor command; this handout has only `grade`"


def _cmd_dist(args: argparse.Namespace) -> int:
    dist = _instructor("dist")
    if dist is None:
        return _fail("dist", HANDOUT)
    dist.build_all(only=args.assignment)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    demo = _instructor("demo")
    return _fail("demo", HANDOUT) if demo is None else demo.demo()


def _cmd_grade_all(args: argparse.Namespace) -> int:
    batch = _instructor("batch")
    if batch is None:
        return _fail("grade-all", HANDOUT)
    grade_all = batch.grade_all
    questions = [q for q in args.questions.split(",") if q] if args.questions else None
    one = _one_submission(args.assignment, Path(args.folder))
    if one:
        return _fail("grade-all", one)
    try:
        grade_all(args.assignment, Path(args.folder), jobs=args.jobs, force=args.force,
                  questions=questions, out=args.out, timeout_s=args.timeout,
                  anonymous=args.anonymous)
    except (FileNotFoundError, KeyError, ValueError) as e:
        print(f"grade-all: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2
    return 0


def _one_submission(assignment_id: str, folder: Path) -> str:
    """Why ``folder`` is one submission rather than a class (it holds a
    submission file itself, or is a file), or ""."""
    import zipfile

    from .grading.config import ConfigError, load
    from .harness.intake import renamed_copy
    try:
        files = load(assignment_id).submission_files
    except ConfigError:
        return ""                        # grade_all says what is wrong with the id
    if folder.is_file() and not zipfile.is_zipfile(folder):     # an export's zip is a class
        return (f"{folder} is a file: grade-all takes a folder of submissions (one sub-folder "
                f"or zip each) or a Gradescope export; grade one submission with "
                f"`python -m autograder grade {assignment_id} {folder}`")
    if not folder.is_dir():
        return ""
    mine = [p.name for p in folder.iterdir() if p.is_file() and (
        p.name in files or any(renamed_copy(p.name, f) for f in files))]
    if mine:
        return (f"{folder} holds {', '.join(sorted(mine)[:3])} itself: it is one submission, not "
                f"a class; grade it with `python -m autograder grade {assignment_id} {folder}` "
                "(grade-all takes a folder of submissions, one sub-folder or zip each, or a "
                "Gradescope export)")
    return ""


def _cmd_validate(args: argparse.Namespace) -> int:
    module = _instructor("validate")
    if module is None:
        return _fail("validate", HANDOUT)
    validate = module.validate
    questions = [q for q in args.questions.split(",") if q] if args.questions else None
    return validate(args.assignment or None, quick=args.quick, jobs=args.jobs,
                    assignments_dir=args.assignments_dir, questions=questions,
                    catalogue=not args.no_catalogue, keep=args.keep,
                    **({"slow_budget_s": args.slow_budget} if args.slow_budget else {}))


def _cmd_worker_venv(args: argparse.Namespace) -> int:
    import os
    from .harness.sandbox import WorkerUnavailable, build_worker_venv, worker_venv_path
    if os.geteuid() != 0:
        return _fail("worker-venv", "only needed (and only possible) as root: without root "
                     "the worker runs with this interpreter")
    try:
        python = build_worker_venv(rebuild=args.rebuild, echo=print)
    except WorkerUnavailable as e:
        return _fail("worker-venv", str(e))
    print(f"worker venv ready: {python} ({'rebuilt' if args.rebuild else 'kept if present'}; "
          f"{worker_venv_path()})")
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", help="grade one submission (folder or zip)")
    g.add_argument("assignment")
    g.add_argument("submission")
    g.add_argument("--results", type=Path, help="write Gradescope results.json here")
    g.add_argument("--questions", help="comma-separated question names (default: all)")
    g.add_argument("--metadata", type=Path,
                   help="Gradescope submission_metadata.json (student id for per-student cases)")
    g.add_argument("-v", "--verbose", action="store_true", help="print every question's feedback")
    g.add_argument("--reveal", action="store_true",
                   help="instructors: also print each hidden case's inputs, expected value, what "
                        "the submission returned and said (needs the hidden cases: a checkout or "
                        "the Gradescope zip's data; never written to results.json)")
    g.add_argument("--no-sandbox", action="store_true",
                   help="as root: run the code as root, without the sandbox's system users and "
                        "worker venv (a hosted runtime or a container you throw away; resource "
                        "limits still apply)")
    g.set_defaults(func=_cmd_grade)
    w = sub.add_parser("worker-venv", help="as root: build the sandboxed worker's venv once "
                       "(grading builds it on a fresh machine and never rebuilds it)")
    w.add_argument("--rebuild", action="store_true",
                   help="replace it atomically (gradings running meanwhile are unaffected)")
    w.set_defaults(func=_cmd_worker_venv)
    b = sub.add_parser("grade-all", help="grade a folder of submissions or a Gradescope export "
                       "in parallel; writes results, grades.csv, a summary and the class "
                       "report")
    b.add_argument("assignment")
    b.add_argument("folder", help="one sub-folder or zip per submission, or Gradescope's "
                   "'Export Submissions' folder (or zip) with submission_metadata.yml")
    b.add_argument("--jobs", type=int, help="parallel gradings (default: number of CPUs)")
    b.add_argument("--force", action="store_true", help="regrade submissions already graded")
    b.add_argument("--questions", help="comma-separated question names (default: all)")
    b.add_argument("--out", type=Path, help="output folder (default: <folder>/_grades)")
    b.add_argument("--timeout", type=float,
                   help="wall-clock seconds per submission (default: deadline_s + 10%%, >= 30 s)")
    b.add_argument("--anonymous", action="store_true",
                   help="the class report (report.html, report.json) without names, ids, "
                        "links or code (for showing to a class)")
    b.set_defaults(func=_cmd_grade_all)
    v = sub.add_parser("validate", help="after editing assignment.toml: the reference gets full "
                       "marks, the blank template zero, every catalogued mistake loses points")
    v.add_argument("assignment", nargs="*", help="assignment ids (default: all)")
    v.add_argument("--quick", action="store_true",
                   help="catalogue: skip slow questions (budget_cpu_s >= --slow-budget)")
    v.add_argument("--slow-budget", type=float, metavar="S",
                   help="--quick: a question is slow when its budget_cpu_s >= S (default 20)")
    v.add_argument("--jobs", type=int, help="parallel gradings (default: number of CPUs)")
    v.add_argument("--assignments-dir", type=Path,
                   help="validate the assignment.toml files of this folder instead of assignments/")
    v.add_argument("--questions", help="comma-separated question names (default: all)")
    v.add_argument("--no-catalogue", action="store_true",
                   help="reference and template only")
    v.add_argument("--keep", type=Path, help="keep every submission and results.json here")
    v.set_defaults(func=_cmd_validate)
    d = sub.add_parser("dist", help="build dist/student and dist/gradescope zips")
    d.add_argument("assignment", nargs="?")
    d.set_defaults(func=_cmd_dist)
    m = sub.add_parser("demo", help="build, grade reference and blank template, print table")
    m.set_defaults(func=_cmd_demo)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:]) if argv is None else None    # to start again as it was
    sys.exit(args.func(args))
