"""Expected values: the reference's (and the oracles') answers to the judge's
questions, and which cases are public.

In the repo they are recorded from ``solutions/`` on demand; ``make dist``
stores them as ``autograder/expected/<id>.npz`` (every case; Gradescope zip
only) and ``<id>.public.npz`` (public cases only; also in the handout). A
case is public only if the public-only recording produced it: its key is
listed under :data:`PUBLIC_KEYS` in both files.
"""
from __future__ import annotations

import functools
import importlib
from pathlib import Path
from types import ModuleType
from typing import Iterable, Optional

import numpy as np

from . import config, recorded
from .judging import HIDDEN_PHASE, PUBLIC_PHASE, Context, ReferenceFailed
from .parts import merge_phases
from ..harness.probe import InProcessCaller
from ..paths import EXPECTED_DIR, SOLUTIONS_DIR

PUBLIC_KEYS = "__public_keys__"


def judge_module(assignment_id: str) -> ModuleType:
    return importlib.import_module(f"autograder.judges.{assignment_id}")


def stored_path(assignment_id: str, public: bool) -> Path:
    return EXPECTED_DIR / f"{assignment_id}{'.public' if public else ''}.npz"


def diagnoses_path(assignment_id: str) -> Path:
    """The handout's table of the oracles' answers its diagnoses ask for
    (:mod:`.recorded`)."""
    return EXPECTED_DIR / f"{assignment_id}.diagnoses.npz"


def has_reference(assignment: config.Assignment) -> bool:
    return all(p.is_file() for p in assignment.sources(SOLUTIONS_DIR))


def record(assignment: config.Assignment, public_only: bool,
           public_keys: set[str] | None = None,
           questions: Optional[Iterable[str]] = None,
           diagnoses: Optional[dict] = None) -> tuple[dict[str, np.ndarray], set[str]]:
    """Run the reference in-process on ``questions`` (default: all); each must
    score 100 %. Returns the recorded values and the case keys met (with
    ``public_only``: the public cases). ``diagnoses``: a table that receives
    the oracles' answers each check's diagnosis asks for (run on the
    reference's answer, public-only recordings: :mod:`.recorded`)."""
    from .reference import load_reference
    judge = judge_module(assignment.id)
    reference = load_reference(assignment.id, assignment.submission_files[0],
                               assignment.path.parent.parent)
    expected: dict[str, np.ndarray] = {}
    keys: set[str] = set()
    wanted = set(questions) if questions else None
    for q in assignment.questions:
        if (public_only and not q.public) or (wanted is not None and q.name not in wanted):
            continue
        if not q.record or q.hand:      # judged against its bar, or by hand: nothing to store
            continue
        phases = [PUBLIC_PHASE] + ([HIDDEN_PHASE] if q.has_hidden_cases and not public_only
                                   else [])
        judged: set[str] = set()
        outcomes = []
        for phase in phases:
            caller = InProcessCaller(reference)
            ctx = Context(caller.call, assignment.params, public_only=public_only,
                          expected=expected, public_keys=public_keys, recording=True,
                          constant=caller.constant, hidden=assignment.hidden, question=q,
                          phase=phase, shown_exceptions=assignment.shown_exceptions,
                          call_many=caller.call_many)
            ctx.diagnoses = diagnoses if public_only else None
            outcome = judge.QUESTIONS[q.name](ctx)
            keys |= ctx.keys
            judged |= {p.id for p in outcome.parts if p.met}
            if phase == HIDDEN_PHASE and not ctx.hidden_keys:
                raise ReferenceFailed(f"{assignment.id}/{q.name}: the hidden phase checked no "
                                      "hidden case (a judge that scores without cases would "
                                      "ignore them)")
            if public_keys is not None and ctx.hidden_keys & public_keys:
                raise ReferenceFailed(f"{assignment.id}/{q.name}: hidden cases met public keys "
                                      f"{sorted(ctx.hidden_keys & public_keys)[:3]}")
            outcomes.append(outcome)
        # scored as a grading scores it: both phases merged (a part may require one whose
        # cases all run in the other phase)
        outcome = merge_phases(*outcomes, q.points) if len(outcomes) == 2 else outcomes[0]
        if outcome.fraction != 1.0:
            raise ReferenceFailed(f"{assignment.id}/{q.name}: the reference scores "
                                  f"{outcome.fraction:.0%}:\n" + "\n".join(outcome.lines))
        never = [p.id for p in q.parts if p.id not in judged]
        if not public_only and never:
            raise ReferenceFailed(f"{assignment.id}/{q.name}: part(s) {never} declared in "
                                  "assignment.toml but never judged")
    return expected, keys


@functools.lru_cache(maxsize=None)
def _recorded_question(assignment_id: str, directory: Path | None,
                       question: str) -> tuple[dict, frozenset]:
    """One question's (every value, public keys), recorded once per process."""
    assignment = config.load(assignment_id, directory)
    _, public_keys = record(assignment, True, questions=[question])
    values, _ = record(assignment, False, public_keys, questions=[question])
    return values, frozenset(public_keys)


def _recorded(assignment: config.Assignment,
              questions: Optional[Iterable[str]] = None) -> tuple[dict, dict, frozenset]:
    """(every value, public values, public keys) of ``questions`` (default all)."""
    values: dict[str, np.ndarray] = {}
    public: set[str] = set()
    for q in questions or [q.name for q in assignment.questions]:
        v, k = _recorded_question(assignment.id, assignment.path.parent.parent, q)
        values.update(v)
        public |= k
    public_values = {k: v for k, v in values.items() if k.partition("#")[0] in public}
    return values, public_values, frozenset(public)


def load(assignment: config.Assignment, questions: Optional[Iterable[str]] = None
         ) -> tuple[dict[str, np.ndarray], bool, frozenset]:
    """Expected values (of ``questions``, default all), whether they cover
    hidden cases (False: public only), and the public case keys."""
    if has_reference(assignment):
        values, _, public = _recorded(assignment, questions)
        return dict(values), True, public
    for public_file in (False, True):
        path = stored_path(assignment.id, public_file)
        if path.is_file():
            with np.load(path, allow_pickle=False) as data:
                values = {k: data[k] for k in data.files if k != PUBLIC_KEYS}
                public = frozenset(str(k) for k in data[PUBLIC_KEYS]) \
                    if PUBLIC_KEYS in data.files else frozenset()
            if public_file and diagnoses_path(assignment.id).is_file():
                with np.load(diagnoses_path(assignment.id), allow_pickle=False) as data:
                    values.update({k: data[k] for k in data.files
                                   if k.startswith(recorded.PREFIX + "/")})
            return values, not public_file, public
    raise ReferenceFailed(f"no expected values for {assignment.id}: neither solutions/ nor "
                          f"{stored_path(assignment.id, False)} exist")


def save(assignment: config.Assignment, directory: Path) -> dict[str, Path]:
    """Write ``<id>.npz`` (every case) and ``<id>.public.npz`` (public cases)
    into ``directory``; returns ``{"hidden": path, "public": path}``."""
    directory.mkdir(parents=True, exist_ok=True)
    values, public_values, public = _recorded(assignment)
    keys = np.array(sorted(public), dtype=str)
    paths = {}
    for which, data in (("hidden", values), ("public", public_values)):
        path = directory / stored_path(assignment.id, which == "public").name
        np.savez(path, **data, **{PUBLIC_KEYS: keys})
        paths[which] = path
    return paths


def record_diagnoses(assignment: config.Assignment) -> dict[str, np.ndarray]:
    """The oracles' answers the diagnoses of the public checks ask for
    (:mod:`.recorded`): a public-only recording of the reference in which
    every check also runs its diagnosis on the reference's answer, each
    oracle call it makes kept (a diagnosis computes the slips' answers from
    the case's inputs, whatever the answer)."""
    table: dict[str, np.ndarray] = {}
    record(assignment, True, diagnoses=table)
    return table


def save_diagnoses(assignment: config.Assignment, directory: Path) -> Path:
    """Write ``<id>.diagnoses.npz`` (:func:`record_diagnoses`) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / diagnoses_path(assignment.id).name
    np.savez_compressed(path, **record_diagnoses(assignment))
    return path
