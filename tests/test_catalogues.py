"""Every catalogued wrong submission loses points on the questions it names.

The catalogues (autograder/catalogue/<id>.py) hold realistic mistakes written
as edits of the reference; only the named questions are graded, to keep CI
short. They are trusted code, so they run in the fast tier
(``grading.inprocess``: the same judge, the worker's protocol replaced by a
direct call, every answer still through the wire's encoding and the gate);
the sandbox is proven by the hostile catalogues (test_sandbox,
test_hidden_channels, test_batch) and, below, by one entry per protocol path
per assignment graded both ways with the same verdict.
"""
from __future__ import annotations

import functools
import importlib
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.grading import config, inprocess
from autograder.grading.grade import grade
from autograder.judges.b_ablations import UNREAD_BY_PIECES
from conftest import ROOT

SLOW_BUDGET_S = 20.0      # a question this costly trains: its entries are slow tests
SHARED_RUNS = "b-experiment-of-the-reference-code"


@functools.lru_cache(maxsize=None)
def _reference_code(a: str) -> str:
    with tempfile.TemporaryDirectory(prefix="rlcap-code-") as tmp:
        for src in config.load(a).sources(ROOT / "solutions"):
            shutil.copy(src, Path(tmp) / src.name)
        return inprocess.code_identity(tmp, UNREAD_BY_PIECES)


def _marks(a: str, w, questions) -> list:
    """slow where a graded question trains; capstone B's experiment graded on the reference's
    code (up to the claim) in one group, so that one worker's memo runs it once."""
    budgets = {q.name: q.budget_cpu_s for q in config.load(a).questions}
    marks = [pytest.mark.slow] if any(budgets.get(q, 0) >= SLOW_BUDGET_S for q in questions) \
        else []
    if a == "b_ablations" and "q5_experiment" in questions:
        with tempfile.TemporaryDirectory(prefix="rlcap-entry-") as tmp:
            directory = w.write(a, Path(tmp), config.load(a).submission_files)
            if inprocess.code_identity(str(directory), UNREAD_BY_PIECES) == _reference_code(a):
                marks.append(pytest.mark.xdist_group(SHARED_RUNS))
    return marks


def _case(a: str, w):
    return pytest.param(a, w, id=f"{a}-{w.name}", marks=_marks(a, w, w.loses))


CASES = [_case(a, w) for a in config.available()
         for w in importlib.import_module(f"autograder.catalogue.{a}").WRONG]


@pytest.mark.parametrize("assignment,wrong", CASES)
def test_catalogue_entry_loses_points_where_it_should(assignment, wrong, tmp_path):
    sub = wrong.write(assignment, tmp_path / "sub", config.load(assignment).submission_files)
    report = grade(assignment, sub, questions=list(wrong.loses), echo=False, in_process=True)
    for q in report.questions:
        assert q.status != "autograder_fault", f"{wrong.name}: {q.name}:\n{q.output}"
        assert q.score < q.max_score, f"{wrong.name} kept full marks on {q.name}:\n{q.output}"
        assert "FAIL" in q.output or q.score == 0, q.output
    if wrong.diagnosis:
        assert any(wrong.diagnosis in q.output for q in report.questions), \
            f"{wrong.name}: the feedback does not say {wrong.diagnosis!r}"
    if wrong.not_said:
        assert not any(wrong.not_said in q.output for q in report.questions), \
            f"{wrong.name}: the feedback names a wrong cause, {wrong.not_said!r}"
    if wrong.lost_parts:
        lost = {p["id"] for q in report.questions for p in q.parts if not p["credited"]}
        assert set(wrong.lost_parts) <= lost <= set(wrong.lost_parts) | set(wrong.may_lose), \
            (f"{wrong.name}: lost parts {sorted(lost)}, declared {sorted(wrong.lost_parts)}"
             + (f" (and maybe {sorted(wrong.may_lose)})" if wrong.may_lose else ""),
             [q.output for q in report.questions])


@pytest.mark.parametrize("assignment", config.available())
def test_every_graded_question_has_a_wrong_submission_that_fails_it(assignment):
    """A check that cannot fail is a defect: each question with points is named
    by at least one catalogue entry (which the test above makes lose points)."""
    wrong = importlib.import_module(f"autograder.catalogue.{assignment}").WRONG
    named = {q for w in wrong for q in w.loses}
    graded = {q.name for q in config.load(assignment).questions if q.points > 0}
    assert graded <= named, f"no wrong submission for {sorted(graded - named)}"


def _right_case(a: str, r):
    return pytest.param(a, r, id=f"{a}-{r.name}", marks=_marks(a, r, r.keeps))


RIGHT = [_right_case(a, r) for a in config.available()
         for r in getattr(importlib.import_module(f"autograder.catalogue.{a}"), "RIGHT", [])]


@pytest.mark.parametrize("assignment,right", RIGHT)
def test_correct_work_in_another_style_keeps_full_marks(assignment, right, tmp_path):
    """A check that fails correct work is a defect too."""
    sub = right.write(assignment, tmp_path / "sub", config.load(assignment).submission_files)
    report = grade(assignment, sub, questions=list(right.keeps), echo=False, in_process=True)
    for q in report.questions:
        assert q.score == q.max_score, f"{right.name} lost points on {q.name}:\n{q.output}"


@pytest.mark.parametrize("assignment", config.available())
def test_every_assignment_has_three_correct_styles(assignment):
    module = importlib.import_module(f"autograder.catalogue.{assignment}")
    assert len(getattr(module, "RIGHT", [])) >= 3


# One entry per protocol path and assignment, graded through the sandboxed worker and in the
# fast tier: the same scores, statuses and part outcomes. The paths: single calls and module
# constants (every assignment), batched calls (``call_many``: D's K-sweep, A's and B's
# minibatch inside the judge's loop), dict and list answers (B's train_arrays, C's diagnose).
PROTOCOL_PATHS = [
    ("d_grpo", "sample_std", ("q2_standardised", "q6_k_sweep")),
    ("a_ppo", None, ("q8_train",)),
    ("b_ablations", None, ("q3_switches",)),
    ("c_diagnose", None, ("q5_faults", "q6_evidence")),
    ("exercises", None, None),
]


def _protocol_entry(assignment: str, name, questions):
    wrong = importlib.import_module(f"autograder.catalogue.{assignment}").WRONG
    entry = next((w for w in wrong if w.name == name), None) if name else next(
        (w for w in wrong if questions is None or set(questions) & set(w.loses)), wrong[0])
    return entry, list(questions or entry.loses)


@pytest.mark.slow
@pytest.mark.parametrize("assignment,name,questions", PROTOCOL_PATHS,
                         ids=[p[0] for p in PROTOCOL_PATHS])
def test_the_fast_tier_grades_as_the_sandbox_does(assignment, name, questions, tmp_path):
    entry, questions = _protocol_entry(assignment, name, questions)
    sub = entry.write(assignment, tmp_path / "sub", config.load(assignment).submission_files)
    fast = grade(assignment, sub, questions=questions, echo=False, in_process=True)
    slow = grade(assignment, sub, questions=questions, echo=False)
    assert not any("in-process" in n for n in slow.notes)
    for f, s in zip(fast.questions, slow.questions):
        assert (f.name, f.score, f.status) == (s.name, s.score, s.status), (f.output, s.output)
        assert [(p["instance"], p["passed"], p["kind"]) for p in f.parts] == \
            [(p["instance"], p["passed"], p["kind"]) for p in s.parts]
