"""A question's outcome as records: one :class:`PartResult` per declared part
(``[[questions.parts]]`` in assignment.toml; one per case or item for a part
declared ``each``), scored into an :class:`Outcome`; the public and hidden
phases merged by part instance; a hidden phase's parts reduced to what may
be shown.

Identity is the part's ``id`` (and ``instance`` for a part per case or
item), never its title: results.json, tables, the class report and the
catalogue read ids, so a title can be reworded without changing a grade.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterable, Optional

from .status import Kind, Status, question_status


@dataclass
class PartResult:
    """One scored part, as data (results.json's ``extra_data.parts``).

    ``points``: what it is worth here (an instance's share of its part);
    ``passed``: every case it ran passed; ``credited``: passed, and the part
    it ``requires`` passed too. For a failure: its ``kind``
    (:class:`~autograder.grading.status.Kind`), the judge's ``message``, the
    ``diagnosis`` (the slip the answer matches, in words a student can act
    on), the ``case`` that failed (its label), ``hidden`` (a hidden case's
    failure: the message is then the case label and the kind only), ``fn``
    (the submission's function whose answer or exception failed it) and
    ``cause`` (``grading.cascade``: the question where ``fn``, or a piece
    the part uses, fails on its own). ``met``: some case of the part ran in
    this phase (a part whose cases are all hidden meets none in the public
    phase, and is not scored there)."""
    id: str
    instance: str
    title: str
    points: float
    passed: bool
    kind: str = ""
    message: str = ""
    diagnosis: str = ""
    requires: str = ""
    case: str = ""
    hidden: bool = False
    credited: bool = False
    fn: str = ""
    cause: str = ""
    met: bool = True

    def record(self) -> dict:
        return {"id": self.id, "instance": self.instance, "label": self.title,
                "points": self.points, "passed": self.passed, "credited": self.credited,
                "kind": self.kind, "message": self.message, "diagnosis": self.diagnosis,
                "case": self.case, "hidden": self.hidden, "requires": self.requires,
                "fn": self.fn, "cause": self.cause}

    def line(self, required: str = "") -> str:
        """The part as one feedback entry (FAIL lines carry the diagnosis below);
        ``required``: the title of the part it requires (default its id)."""
        if self.credited:
            return f"ok   {self.title}"
        if self.passed:
            return (f"no credit for {self.title}: it counts only once "
                    f"'{required or self.requires}' passes")
        first = f"{self.cause}. Here: " if self.cause else ""
        diagnosis = f"\n     diagnosis: {self.diagnosis}" if self.diagnosis else ""
        return f"FAIL {self.title}: {first}{self.message}{diagnosis}"


@dataclass
class Outcome:
    """One question's result: ``fraction`` of its points in [0, 1], feedback
    ``lines``, its :class:`~autograder.grading.status.Status`,
    ``measurements`` (numbers such as a bar's margin, for tables and
    ``validate``), its ``parts`` as records and the judge's ``notes``."""
    fraction: float
    lines: list[str] = field(default_factory=list)
    status: Status = Status.PASSED
    measurements: dict[str, float] = field(default_factory=dict)
    parts: list[PartResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ended: bool = False       # the whole question's result, not its parts' (see ``ended``)

    def __post_init__(self) -> None:
        self.status = Status(self.status)


def ended(status: Status, lines: list[str], measurements: Optional[dict] = None) -> Outcome:
    """A question that did not finish, was not graded, or failed outside any
    part: no points, whatever another phase says."""
    return Outcome(0.0, list(lines), status, dict(measurements or {}), ended=True)


def score(parts: list[PartResult], total: float, notes: Iterable[str] = (),
          measurements: Optional[dict] = None) -> Outcome:
    """The outcome of ``parts`` out of ``total`` points: a part counts when it
    passed and every instance of the part it requires passed; parts not met
    are left out (neither earned nor shown), and the fraction is of the met
    parts' points."""
    met = [p for p in parts if p.met]
    passed_ids = {p.id for p in met if p.passed} - {p.id for p in met if not p.passed}
    earned, oks, fails = 0.0, [], []
    titles = {p.id: p.title for p in reversed(met)}        # a part's first instance's title
    for part in met:
        part.credited = part.passed and (not part.requires or part.requires in passed_ids)
        if part.credited:
            earned += part.points
        (oks if part.passed else fails).append(part.line(titles.get(part.requires, "")))
    if not met:                       # this phase met no part: it decides nothing
        return Outcome(1.0, list(notes), Status.PASSED, dict(measurements or {}), [],
                       list(notes))
    # Out of the points of the parts met here: a part whose cases are all hidden is graded
    # on the platform, not by a local run (its phase meets it, and the merge counts it).
    # Points are the toml's decimals (thirds, sevenths): every part earned is 1 exactly.
    met_points = min(total, sum(p.points for p in met))
    if met_points > 0:
        fraction = 1.0 if earned >= met_points - 1e-9 else earned / met_points
    else:
        fraction = 1.0 if all(p.passed for p in met) else 0.0
    status = question_status([p.kind for p in met if not p.passed])
    if status is Status.PASSED and fraction < 1.0 - 1e-12:
        status = Status.FAILED            # a part counted only beside one that failed
    notes = list(notes)
    return Outcome(fraction, oks + fails + notes, status, dict(measurements or {}), met, notes)


def hidden_phase_part(part: PartResult) -> PartResult:
    """A part as the hidden phase may report it: id, title, points, passed or
    not, and for a failure only its kind, the failing case's label, the
    judge's diagnosis and the function's name; the message is rebuilt from
    those (nothing the worker produced, and no number the judge computed
    from a hidden input, survives)."""
    if part.passed:
        return replace(part, message="", diagnosis="", kind="", case="", fn="")
    kind = Kind.of(part.kind)
    case = part.case if part.case.startswith("hidden case") else "a hidden case"
    return replace(part, kind=kind.value, case=case, hidden=True,
                   message=f"{case}: {kind.words} (its inputs and expected values are not "
                           "shown)")


def merge_phases(public: Outcome, hidden: Outcome, total: float) -> Outcome:
    """One question's outcome from its public and hidden phases: an instance
    passes when it passed in every phase that met it; its failure is
    reported from the public phase when that failed (the numbers are the
    student's to see), else as the hidden phase may report it. Notes come
    from the public phase only; measurements from both
    (:func:`merge_measurements`)."""
    hidden_parts = {p.instance: hidden_phase_part(p) for p in hidden.parts if p.met}
    merged: list[PartResult] = []
    for part in public.parts:
        other = hidden_parts.pop(part.instance, None)
        merged.append(replace(part) if not part.passed or other is None or other.passed
                      else other)
    merged += hidden_parts.values()
    return score(merged, total, public.notes,
                 merge_measurements(public.measurements, hidden.measurements))


def hidden_phase_outcome(outcome: Outcome, total: float) -> Outcome:
    """``outcome`` of a hidden phase as it may be shown: parts rebuilt by
    :func:`hidden_phase_part`, no notes, no free-text lines."""
    return score([hidden_phase_part(p) for p in outcome.parts], total, (),
                 outcome.measurements)


def merge_measurements(public: dict, hidden: dict) -> dict:
    """Both phases' measurements: a ``min_*`` (``max_*``) measured in both is
    the smaller (larger) of the two, so that it covers every run; any other
    name measured in both keeps the public phase's value (a bar, a setting)."""
    out = dict(hidden)
    for name, value in public.items():
        if name in hidden and name.startswith("min_"):
            out[name] = min(value, hidden[name])
        elif name in hidden and name.startswith("max_"):
            out[name] = max(value, hidden[name])
        else:
            out[name] = value
    return out
