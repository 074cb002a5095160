"""The notebook's public checks: ``grader.check("q...")`` lands here.

It runs the very judge question that grades on Gradescope and PrairieLearn,
in-process, on the public cases only, and raises AssertionError with the
judge's feedback when a case fails: the failed parts first, the one carrying
the judge's diagnosis (the slip the answer matches) leading.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

from . import config, expected
from .judging import Context, Fail, ReferenceFailed
from .status import Status
from .results import failure_text, lead_failure
from ..harness.probe import InProcessCaller, ProbeError


def _student_module(name: str):
    """Import (or re-import, to pick up edits) the student's module from the cwd."""
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def check(assignment_id: str, question: str, *, show_progress: bool = True) -> float:
    """Run ``question``'s public cases against the student's module.

    Returns the fraction of the question's points the public cases earn
    (1.0), or raises AssertionError with the feedback lines."""
    assignment = config.load(assignment_id)
    q = assignment.question(question)
    if not q.public:
        raise AssertionError(f"{question} is graded only where you submit (Gradescope or "
                             "PrairieLearn): it has no public check")
    judge = expected.judge_module(assignment.id)
    module = _student_module(assignment.submission_files[0][:-3])
    exp, _, public_keys = expected.load(assignment, [q.name])
    caller = InProcessCaller(module)
    ctx = Context(caller.call, assignment.params, public_only=True, expected=exp,
                  public_keys=set(public_keys), show_progress=show_progress,
                  constant=caller.constant, question=q,
                  shown_exceptions=assignment.shown_exceptions)
    try:
        outcome = judge.QUESTIONS[q.name](ctx)
    except (ProbeError, Fail, ReferenceFailed) as e:
        raise AssertionError(str(e)) from None
    if outcome.status is Status.HAND_GRADED:      # a written answer: nothing to pass here
        return 1.0
    if outcome.fraction < 1.0:
        raise AssertionError(f"{q.title}: {outcome.fraction * q.points:g}/{q.points:g} "
                             "points on the public cases\n" + "\n".join(feedback(outcome)))
    return outcome.fraction


def feedback(outcome) -> list[str]:
    """The outcome's feedback lines, the most useful first: the failed parts
    (the one :func:`results.lead_failure` picks first, each with its diagnosis
    before its numbers), then the rest (passed parts, notes)."""
    records = [p.record() for p in outcome.parts]
    failed = [r for r in records if not r["passed"]]
    if not failed:
        return list(outcome.lines)
    lead = lead_failure(records)
    failed.remove(lead)
    return [failure_text(r) for r in [lead, *failed]] + \
        [line for line in outcome.lines if not line.startswith("FAIL ")]
