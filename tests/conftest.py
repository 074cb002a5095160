"""Shared fixtures: build the zips once, grade each reference once per session."""
from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from autograder import config
from autograder.grade import grade

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_dist():
    """``make dist`` once per session: {assignment id: (student zip, gradescope zip)}."""
    from autograder.dist import build
    return {a: build(a) for a in config.available()}


@functools.lru_cache(maxsize=None)
def graded(assignment_id: str, which: str, questions: tuple[str, ...] = ()):
    """Grade the reference ('solutions') or the blank stubs ('student_template'),
    cached for the session."""
    a = config.load(assignment_id)
    tmp = Path(f"/tmp/rlcap-test-{assignment_id}-{which}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in a.submission_files:
        shutil.copy(ROOT / which / assignment_id / f, tmp / f)
    return grade(assignment_id, tmp, questions=list(questions) or None, echo=False)
