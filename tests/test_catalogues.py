"""Every catalogued wrong submission loses points on the questions it names.

The catalogues (tests/catalogue/<id>.py) hold realistic mistakes written as
edits of the reference; only the named questions are graded, to keep CI short.
"""
from __future__ import annotations

import importlib

import pytest

from autograder.grading import config
from autograder.grading.grade import grade

CASES = [(a, w) for a in config.available()
         for w in importlib.import_module(f"autograder.catalogue.{a}").WRONG]


@pytest.mark.parametrize("assignment,wrong", CASES, ids=[f"{a}-{w.name}" for a, w in CASES])
def test_catalogue_entry_loses_points_where_it_should(assignment, wrong, tmp_path):
    sub = wrong.write(assignment, tmp_path / "sub", config.load(assignment).submission_files)
    report = grade(assignment, sub, questions=list(wrong.loses), echo=False)
    for q in report.questions:
        assert q.score < q.max_score, f"{wrong.name} kept full marks on {q.name}:\n{q.output}"
        assert "FAIL" in q.output or q.score == 0, q.output


@pytest.mark.parametrize("assignment", config.available())
def test_every_graded_question_has_a_wrong_submission_that_fails_it(assignment):
    """A check that cannot fail is a defect: each question with points is named
    by at least one catalogue entry (which the test above makes lose points)."""
    wrong = importlib.import_module(f"autograder.catalogue.{assignment}").WRONG
    named = {q for w in wrong for q in w.loses}
    graded = {q.name for q in config.load(assignment).questions if q.points > 0}
    assert graded <= named, f"no wrong submission for {sorted(graded - named)}"
