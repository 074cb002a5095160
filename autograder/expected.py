"""Expected values: the reference's answers to the judge's questions.

In the repo they are recorded from ``solutions/`` on demand; ``make dist``
stores them as ``autograder/expected/<id>.npz`` (hidden, Gradescope zip
only) and ``<id>.public.npz`` (public cases only, also in the handout).
"""
from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType

import numpy as np

from . import config
from .judging import Context, ReferenceFailed
from .paths import PACKAGE_DIR, SOLUTIONS_DIR
from .probe import InProcessCaller
from .reference import load_reference

EXPECTED_DIR = PACKAGE_DIR / "expected"


def judge_module(assignment_id: str) -> ModuleType:
    return importlib.import_module(f"autograder.judges.{assignment_id}")


def stored_path(assignment_id: str, public: bool) -> Path:
    return EXPECTED_DIR / f"{assignment_id}{'.public' if public else ''}.npz"


def has_reference(assignment: config.Assignment) -> bool:
    return all((SOLUTIONS_DIR / assignment.id / f).is_file() for f in assignment.submission_files)


def record(assignment: config.Assignment, public_only: bool) -> dict[str, np.ndarray]:
    """Run the reference in-process on every recorded question; it must score 100 %."""
    judge = judge_module(assignment.id)
    reference = load_reference(assignment.id, assignment.submission_files[0])
    expected: dict[str, np.ndarray] = {}
    for q in assignment.questions:
        if q.name not in judge.RECORDED or (public_only and not q.public):
            continue
        caller = InProcessCaller(reference)
        ctx = Context(caller.call, assignment.params, public_only=public_only,
                      expected=expected, recording=True, constant=caller.constant)
        outcome = judge.QUESTIONS[q.name](ctx)
        if outcome.fraction != 1.0:
            raise ReferenceFailed(f"{assignment.id}/{q.name}: the reference scores "
                                  f"{outcome.fraction:.0%}:\n" + "\n".join(outcome.lines))
    return expected


@functools.lru_cache(maxsize=None)
def _recorded(assignment_id: str, public_only: bool) -> dict[str, np.ndarray]:
    return record(config.load(assignment_id), public_only)


def load(assignment: config.Assignment) -> tuple[dict[str, np.ndarray], bool]:
    """Expected values and whether they cover hidden cases (False: public only)."""
    if has_reference(assignment):
        return dict(_recorded(assignment.id, False)), True
    for public in (False, True):
        path = stored_path(assignment.id, public)
        if path.is_file():
            with np.load(path, allow_pickle=False) as data:
                return {k: data[k] for k in data.files}, not public
    raise ReferenceFailed(f"no expected values for {assignment.id}: neither solutions/ nor "
                          f"{stored_path(assignment.id, False)} exist")


def save(assignment: config.Assignment, directory: Path) -> list[Path]:
    """Write ``<id>.npz`` and ``<id>.public.npz`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for public in (False, True):
        path = directory / stored_path(assignment.id, public).name
        np.savez(path, **_recorded(assignment.id, public))
        paths.append(path)
    return paths
