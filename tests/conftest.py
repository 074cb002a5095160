"""Shared fixtures: build the zips once, grade each reference once per session."""
from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get("PYTEST_XDIST_WORKER"):       # `make test` runs pytest -n auto: one dist/ each
    os.environ.setdefault("RLCAP_DIST_DIR",
                          str(ROOT / "dist" / f"tests-{os.environ['PYTEST_XDIST_WORKER']}"))

from autograder.grading import config, inprocess  # noqa: E402
from autograder.grading.grade import grade  # noqa: E402

# The fast tier (trusted catalogue code only) keeps the judge's long runs (capstone B's runs of
# a student's experiment) for the session: entries whose code is the same up to their claim
# share them (test_catalogues groups them on one worker). Real gradings never memoise.
inprocess.RUN_MEMO = {}


# `make test` distributes with --dist loadgroup: a file's tests stay on one worker (they share
# its module- and session-scoped fixtures, e.g. one graded class), except the catalogue's,
# which are independent gradings and the longest file by far (about half the suite's CPU):
# each of those is scheduled on its own, so that both workers share them.
SPREAD_FILES = {"test_catalogues.py"}


# tryfirst: xdist's worker turns xdist_group marks into node-id suffixes in its own
# collection hook; ours must mark the items before it runs, or no group exists and every
# test is scheduled on its own (each worker then sets up the module fixtures again).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name not in SPREAD_FILES and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.path.name))


@functools.lru_cache(maxsize=None)
def built(assignment_id: str) -> tuple[Path, Path]:
    """``make dist`` of one assignment, once per session: (student zip, gradescope zip)."""
    from autograder.commands.dist import build
    return build(assignment_id)


@pytest.fixture(scope="session")
def built_dist():
    """{assignment id: (student zip, gradescope zip)} for every assignment."""
    return {a: built(a) for a in config.available()}


@functools.lru_cache(maxsize=None)
def graded(assignment_id: str, which: str, questions: tuple[str, ...] = ()):
    """Grade the reference ('solutions') or the blank stubs ('student_template')
    directly, cached for the session."""
    a = config.load(assignment_id)
    tmp = Path(tempfile.mkdtemp(prefix=f"rlcap-test-{assignment_id}-"))   # 0700: private
    for src in a.sources(ROOT / which):
        shutil.copy(src, tmp / src.name)
    try:
        return grade(assignment_id, tmp, questions=list(questions) or None, echo=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@functools.lru_cache(maxsize=None)
def zip_graded(assignment_id: str, which: str) -> dict:
    """results.json of grading ``which`` through the Gradescope zip's own
    run_autograder (solutions/ out of sight), once per session."""
    from autograder.commands.demo import run_gradescope_zip
    a = config.load(assignment_id)
    return run_gradescope_zip(built(assignment_id)[1],
                              a.sources(ROOT / which))
