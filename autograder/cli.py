"""``python -m autograder``: grade, dist, demo, reproduce."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_grade(args: argparse.Namespace) -> int:
    from .grade import grade
    questions = [q for q in args.questions.split(",") if q] if args.questions else None
    report = grade(args.assignment, Path(args.submission), results=args.results,
                   questions=questions, metadata=args.metadata)
    print(report.table())
    for m in report.messages:
        print(f"note: {m}")
    if args.verbose:
        for q in report.questions:
            print(f"\n== {q.name} ({q.score:g}/{q.max_score:g})\n{q.output}")
    return 0


def _cmd_dist(args: argparse.Namespace) -> int:
    from .dist import build_all
    build_all(only=args.assignment)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import demo
    return demo()


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
    g.set_defaults(func=_cmd_grade)
    d = sub.add_parser("dist", help="build dist/student and dist/gradescope zips")
    d.add_argument("assignment", nargs="?")
    d.set_defaults(func=_cmd_dist)
    m = sub.add_parser("demo", help="build, grade reference and blank template, print table")
    m.set_defaults(func=_cmd_demo)
    args = parser.parse_args(argv)
    sys.exit(args.func(args))
