"""Every catalogued wrong submission loses points on the questions it names.

The catalogues (tests/catalogue/<id>.py) hold realistic mistakes written as
edits of the reference; only the named questions are graded, to keep CI short.
"""
from __future__ import annotations

import importlib

import pytest

from autograder.grading import config
from autograder.grading.grade import grade

SLOW_BUDGET_S = 20.0      # a question this costly trains: its entries are slow tests


def _case(a: str, w):
    budgets = {q.name: q.budget_cpu_s for q in config.load(a).questions}
    slow = any(budgets.get(q, 0) >= SLOW_BUDGET_S for q in w.loses)
    return pytest.param(a, w, id=f"{a}-{w.name}", marks=[pytest.mark.slow] if slow else [])


CASES = [_case(a, w) for a in config.available()
         for w in importlib.import_module(f"autograder.catalogue.{a}").WRONG]


@pytest.mark.parametrize("assignment,wrong", CASES)
def test_catalogue_entry_loses_points_where_it_should(assignment, wrong, tmp_path):
    sub = wrong.write(assignment, tmp_path / "sub", config.load(assignment).submission_files)
    report = grade(assignment, sub, questions=list(wrong.loses), echo=False)
    for q in report.questions:
        assert q.score < q.max_score, f"{wrong.name} kept full marks on {q.name}:\n{q.output}"
        assert "FAIL" in q.output or q.score == 0, q.output
    if wrong.diagnosis:
        assert any(wrong.diagnosis in q.output for q in report.questions), \
            f"{wrong.name}: the feedback does not say {wrong.diagnosis!r}"
    if wrong.not_said:
        assert not any(wrong.not_said in q.output for q in report.questions), \
            f"{wrong.name}: the feedback names a wrong cause, {wrong.not_said!r}"


@pytest.mark.parametrize("assignment", config.available())
def test_every_graded_question_has_a_wrong_submission_that_fails_it(assignment):
    """A check that cannot fail is a defect: each question with points is named
    by at least one catalogue entry (which the test above makes lose points)."""
    wrong = importlib.import_module(f"autograder.catalogue.{assignment}").WRONG
    named = {q for w in wrong for q in w.loses}
    graded = {q.name for q in config.load(assignment).questions if q.points > 0}
    assert graded <= named, f"no wrong submission for {sorted(graded - named)}"


def _right_case(a: str, r):
    budgets = {q.name: q.budget_cpu_s for q in config.load(a).questions}
    slow = any(budgets.get(q, 0) >= SLOW_BUDGET_S for q in r.keeps)
    return pytest.param(a, r, id=f"{a}-{r.name}", marks=[pytest.mark.slow] if slow else [])


RIGHT = [_right_case(a, r) for a in config.available()
         for r in getattr(importlib.import_module(f"autograder.catalogue.{a}"), "RIGHT", [])]


@pytest.mark.parametrize("assignment,right", RIGHT)
def test_correct_work_in_another_style_keeps_full_marks(assignment, right, tmp_path):
    """A check that fails correct work is a defect too."""
    sub = right.write(assignment, tmp_path / "sub", config.load(assignment).submission_files)
    report = grade(assignment, sub, questions=list(right.keeps), echo=False)
    for q in report.questions:
        assert q.score == q.max_score, f"{right.name} lost points on {q.name}:\n{q.output}"


@pytest.mark.parametrize("assignment", config.available())
def test_every_assignment_has_three_correct_styles(assignment):
    module = importlib.import_module(f"autograder.catalogue.{assignment}")
    assert len(getattr(module, "RIGHT", [])) >= 3
