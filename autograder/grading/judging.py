"""Building blocks of a judge: comparing answers with expected values,
scoring a question in parts, and the context a question runs in.

A question is a function ``question(ctx) -> Outcome``. It asks the
submission through ``ctx.call(fn, *args)`` and checks each answer inside a
*case* (``ctx.expect``, ``ctx.check`` or ``with ctx.case(key, label)``):

* Public or hidden is structural: a case is public only if the public-only
  recording at ``make dist`` produced its key. Every other case is hidden:
  a failure inside it names the check and the kind of failure, never the
  inputs, the expected value, the student's exception message or output.
* Expected values are the reference's answers (recorded at build time), or an
  oracle's (``ctx.oracle``: Gradescope-side code under ``autograder.oracles``,
  reached by name, so that a judge imports where no oracle ships; the handout
  uses the values recorded for its public cases).
"""
from __future__ import annotations

import hashlib
import importlib
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np

from . import recorded
from .safe import one_line
from ..harness.probe import (CRASHED, MODIFIED, PROTOCOL_ERROR, TIMED_OUT, WORKER_FAULT,
                             ProbeError, ProbeFatal, ProbeRaised, call_each)

# A question's outcome, as data (results.json, batch, validate and tables read it).
PASSED, FAILED, RAISED, NOT_IMPLEMENTED = "passed", "failed", "raised", "not_implemented"
AUTOGRADER_FAULT, NOT_GRADED = WORKER_FAULT, "not_graded"
# CRASHED, TIMED_OUT and PROTOCOL_ERROR (a malformed or oversized answer, or a worker that stopped
# reading: the submission's process, which owns the pipe, did it) are the probe's words.
STATUSES = (PASSED, FAILED, RAISED, NOT_IMPLEMENTED, CRASHED, TIMED_OUT, AUTOGRADER_FAULT,
            NOT_GRADED, PROTOCOL_ERROR)
# the submission crashed (not "not done yet")
SUBMISSION_FAULTS = (RAISED, CRASHED, TIMED_OUT, PROTOCOL_ERROR)


class Fail(Exception):
    """A checked answer is wrong; the message says expected vs got.
    ``kind``: "value", "shape" (type, shape or dtype) or "nonfinite".
    ``diagnosis``: the judge's name for the slip the answer matches, in words
    a student can act on (never a hidden case's inputs)."""

    def __init__(self, message: str, kind: str = "value", diagnosis: str = ""):
        super().__init__(message)
        self.kind = kind
        self.diagnosis = diagnosis


class ReferenceFailed(RuntimeError):
    """The reference or the autograder's data is broken: an autograder fault."""


class JudgeBug(ReferenceFailed):
    """A judge called the submission outside a declared case in the hidden
    phase (every call there must belong to a hidden case): an autograder fault."""


class NothingToRecord(Exception):
    """Raised while recording by a question whose checks need no stored value
    (a training loop judged against its bar): recording skips the rest."""


class _Hidden(Exception):
    """Marks an exception whose message was already made safe for a hidden case:
    the case's label and the kind of failure, nothing the worker produced."""
    case_label = ""


class HiddenFail(Fail, _Hidden):
    def __init__(self, message: str, kind: str, case_label: str, diagnosis: str = ""):
        super().__init__(message, kind, diagnosis)
        self.case_label = case_label


class HiddenRaised(ProbeRaised, _Hidden):
    def __init__(self, fn: str, info: dict, case_label: str, kind: str):
        super().__init__(fn, info)
        self.case_label, self.kind = case_label, kind
        self.args = (f"{case_label}: {KIND_TEXT[kind]}" + (
            f" ({info['type']})" if info.get("shown_type") else ""),)

    def __str__(self) -> str:
        return self.args[0]


class HiddenFatal(ProbeFatal, _Hidden):
    def __init__(self, message: str, kind: str, case_label: str = ""):
        super().__init__(message, kind)
        self.case_label = case_label


# The phases of a question: the public cases in one worker, then the hidden cases in a fresh
# one; in-process recording may run both in one ("all").
PUBLIC_PHASE, HIDDEN_PHASE, ALL_PHASES = "public", "hidden", "all"

# What a hidden case may say about a failure: one of these kinds, in the judge's words.
MODIFIED_INPUT = "modified_input"
KIND_TEXT = {
    "value": "wrong value",
    "shape": "wrong type, shape or dtype",
    "nonfinite": "not finite (NaN or inf)",
    RAISED: "raised an exception",
    NOT_IMPLEMENTED: "not implemented (NotImplementedError)",
    MODIFIED_INPUT: "changed its input in place",
    TIMED_OUT: "ran out of time, memory or file quota",
    CRASHED: "ended the process",
    PROTOCOL_ERROR: "broke the protocol",
}
KINDS = tuple(KIND_TEXT)


def _summary(a: Any, n: int = 8) -> str:
    """A short text of a value for instructors (``grade --reveal``)."""
    try:
        arr = np.asarray(a, dtype=np.float64)
        flat = ", ".join(f"{v:.6g}" for v in arr.ravel()[:n])
        return f"shape {arr.shape}: [{flat}{', ...' if arr.size > n else ''}]"
    except (TypeError, ValueError):
        return describe(a)


def describe(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    return f"{type(a).__name__} {a!r}"[:200]


def as_float_array(name: str, got: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``got`` as a finite float64 array of exactly ``shape``, or :class:`Fail`.
    The handouts ask for float64 everywhere: float32 (or float16) loses
    precision the checks' tolerances do not allow, so it fails; Python floats
    and integer arrays (exact) are accepted."""
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
        raise Fail(f"{name}: expected a float array of shape {shape}, got {describe(got)}",
                   "shape")
    if got.shape != tuple(shape):
        raise Fail(f"{name}: expected shape {tuple(shape)}, got shape {got.shape}", "shape")
    if got.dtype.kind == "f" and got.dtype.itemsize < 8:
        raise Fail(f"{name}: expected float64, got {got.dtype} (the handout asks for float64; "
                   "single precision loses the digits the check needs)", "shape")
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        bad = np.argwhere(~np.isfinite(got))[0]
        raise Fail(f"{name}: contains {got[tuple(bad)]} at index {tuple(int(i) for i in bad)}; "
                   "expected finite numbers", "nonfinite")
    return got


def compare(name: str, got: Any, expected: np.ndarray, rtol: float, atol: float) -> None:
    """Raise :class:`Fail` unless ``got`` matches ``expected`` elementwise within
    ``atol + rtol * |expected|``. Shapes and dtypes are checked first."""
    expected = np.asarray(expected, dtype=np.float64)
    got = as_float_array(name, got, expected.shape)
    err = np.abs(got - expected)
    tol = atol + rtol * np.abs(expected)
    if np.all(err <= tol):
        return
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(err - tol), err.shape))
    raise Fail(f"{name}: at index {idx} expected {expected[idx]:.12g}, got {got[idx]:.12g} "
               f"(abs. error {err[idx]:.3g}, tolerance {tol[idx]:.3g}; "
               f"{int(np.sum(err > tol))} of {err.size} entries off)")


@dataclass
class Part:
    """One scored part of a question, as data (``extra_data``, tables, the class
    report): its label and weight, whether it passed, and for a failure its
    kind (:data:`KINDS`), the judge's message, the judge's diagnosis and the
    label of the case that failed. ``hidden``: the failure is a hidden case's
    (its message is then the case label and the kind, nothing else)."""
    label: str
    weight: float
    passed: bool
    kind: str = ""
    message: str = ""
    diagnosis: str = ""
    requires: Optional[str] = None
    case: str = ""
    hidden: bool = False
    credited: bool = False          # passed, and what it requires passed too

    def record(self) -> dict:
        return {"label": self.label, "weight": self.weight, "passed": self.passed,
                "credited": self.credited, "kind": self.kind, "message": self.message,
                "diagnosis": self.diagnosis, "case": self.case, "hidden": self.hidden,
                "requires": self.requires}


@dataclass
class Outcome:
    """Result of one question: ``fraction`` of its points in [0, 1], feedback
    lines, a status (one of :data:`STATUSES`), measurements (numbers, e.g.
    the margin to a bar) for tables and ``validate``, and its parts as records."""
    fraction: float
    lines: list[str] = field(default_factory=list)
    status: str = ""
    measurements: dict[str, float] = field(default_factory=dict)
    parts: list[Part] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)     # the judge's notes (public phase)

    def __post_init__(self) -> None:
        if not self.status:
            self.status = PASSED if self.fraction >= 1.0 else FAILED


def _failure_status(kinds: Iterable[str]) -> str:
    kinds = list(kinds)
    return next((s for s in (RAISED, NOT_IMPLEMENTED) if s in kinds), FAILED)


def score_parts(parts: list[Part], notes: list[str], measurements: dict) -> Outcome:
    """The outcome of ``parts``: credit (a part with ``requires`` counts only
    beside the part it requires), feedback lines, status."""
    passed = {p.label for p in parts if p.passed}
    total = sum(p.weight for p in parts)
    earned, lines, fails = 0.0, [], []
    for part in parts:
        part.credited = part.passed and (not part.requires or part.requires in passed)
        if part.passed and not part.credited:
            lines.append(f"no credit for {part.label}: it counts only once "
                         f"'{part.requires}' passes")
        elif part.credited:
            earned += part.weight
            lines.append(f"ok   {part.label}")
        else:
            fails.append(f"FAIL {part.label}: {part.message}"
                         + (f"\n     diagnosis: {part.diagnosis}" if part.diagnosis else ""))
    fraction = earned / total if total else 0.0
    status = PASSED if fraction >= 1.0 else _failure_status(p.kind for p in parts
                                                            if not p.passed)
    return Outcome(fraction, lines + fails + list(notes), status, dict(measurements),
                   list(parts), list(notes))


class Scorecard:
    """Scores a question as weighted parts. A part fails on :class:`Fail` or a
    :class:`ProbeRaised` (the student's function raised); a dead worker
    (:class:`ProbeFatal`) ends the question. A part with ``requires`` counts
    only if that part passed: "nothing changed" answers earn points only
    beside a case whose answer is not zero."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.notes: list[str] = []
        self.measurements: dict[str, float] = {}

    @contextmanager
    def part(self, label: str, weight: float, requires: Optional[str] = None) -> Iterator[None]:
        try:
            yield
        except (Fail, ProbeRaised) as e:
            if isinstance(e, ProbeRaised):
                kind = getattr(e, "kind", None) if isinstance(e, _Hidden) else None
                kind = kind or (MODIFIED_INPUT if e.type == MODIFIED else
                                NOT_IMPLEMENTED if e.type == "NotImplementedError" else RAISED)
                diagnosis = ""
            else:
                kind, diagnosis = e.kind, e.diagnosis
            message = one_line(str(e)) if isinstance(e, ProbeRaised) else str(e)   # its text
            self.parts.append(Part(label, weight, False, kind, message, diagnosis, requires,
                                   getattr(e, "case_label", ""), isinstance(e, _Hidden)))
            return
        self.parts.append(Part(label, weight, True, requires=requires))

    def passed(self, label: str) -> bool:
        return any(p.label == label and p.passed for p in self.parts)

    def note(self, line: str) -> None:
        self.notes.append(line)

    def measure(self, name: str, value: float) -> None:
        """A number worth a column (a median, a margin to a bar): data, not text."""
        self.measurements[name] = float(value)

    def outcome(self) -> Outcome:
        return score_parts([replace(p) for p in self.parts], self.notes, self.measurements)


def hidden_phase_part(part: Part) -> Part:
    """A part as the hidden phase may report it: the judge's label and weight,
    passed or not, and for a failure only its kind, the failing case's label
    and the judge's diagnosis; the message is rebuilt from those (so nothing the
    worker produced, and no number the judge computed from a hidden input,
    survives)."""
    if part.passed:
        return Part(part.label, part.weight, True, requires=part.requires)
    kind = part.kind if part.kind in KIND_TEXT else "value"
    case = part.case if part.case.startswith("hidden case") else "a hidden case"
    return Part(part.label, part.weight, False, kind, f"{case}: {KIND_TEXT[kind]} (its inputs "
                "and expected values are not shown)", part.diagnosis, part.requires, case, True)


def merge_phases(public: Outcome, hidden: Outcome) -> Outcome:
    """One question's outcome from its public and hidden phases: a part passes
    when it passed in both (a part a phase did not meet passed there); its
    failure is reported from the public phase when that failed (the numbers
    are the student's to see), else as the hidden phase may report it.
    Notes come from the public phase only; measurements from both
    (:func:`_merge_measurements`)."""
    hidden_parts = {p.label: hidden_phase_part(p) for p in hidden.parts}
    merged: list[Part] = []
    for part in public.parts:
        other = hidden_parts.pop(part.label, None)
        merged.append(replace(part) if not part.passed or other is None or other.passed
                      else other)
    merged += hidden_parts.values()
    return score_parts(merged, public.notes, _merge_measurements(public.measurements,
                                                                 hidden.measurements))


def _merge_measurements(public: dict, hidden: dict) -> dict:
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


def hidden_phase_outcome(outcome: Outcome) -> Outcome:
    """``outcome`` of a hidden phase as it may be shown: parts rebuilt by
    :func:`hidden_phase_part`, no notes, no free-text lines."""
    return score_parts([hidden_phase_part(p) for p in outcome.parts], [],
                       outcome.measurements)


def _name_case(e: Exception, case: Any) -> None:
    """A public case's failure names its declared case (the part record's
    ``case``, read by the class report); the innermost case names it."""
    if case is not None and not getattr(e, "case_label", ""):
        e.case_label = case.label


class Context:
    """What a question sees: the submission (``call``), expected values, the
    assignment's parameters (``params``; ``hidden``: the ``[hidden]`` table,
    empty in a handout), the question's declared cases (``cases(group)``) and
    the phase it runs in.

    * ``phase`` "public": only the public cases (the handout, the notebook,
      and the first phase of a grading); "hidden": only the hidden cases, in a
      worker that served no public case; "all": both in one pass (in-process
      recording of the reference).
    * Every call of the submission in the hidden phase must happen while a
      hidden case is being iterated (:meth:`cases`); a call outside one is a
      judge bug (:class:`JudgeBug`), never a silent public call.
    * ``public_keys``: the keys the public-only recording produced (``None``
      while that recording runs)."""

    def __init__(self, call: Callable[..., Any], params: dict[str, Any], *, public_only: bool,
                 expected: Optional[dict[str, np.ndarray]] = None,
                 public_keys: Optional[set[str]] = None, recording: bool = False,
                 show_progress: bool = False, student_id: Optional[str] = None,
                 constant: Optional[Callable[[str], Any]] = None,
                 hidden: Optional[dict[str, Any]] = None,
                 question: Any = None, phase: Optional[str] = None,
                 shown_exceptions: Iterable[str] = ("NotImplementedError",),
                 call_many: Optional[Callable[[list], Any]] = None):
        self._call = call
        self._call_many = call_many or (lambda calls: call_each(call, calls))
        self.student_id = student_id
        self._constant = constant
        self.params = params
        self.hidden = hidden or {}
        self.public_only = public_only
        self.phase = phase or (PUBLIC_PHASE if public_only else ALL_PHASES)
        self.question = question
        self.recording = recording
        self.expected = {} if expected is None else expected
        self.public_keys = public_keys
        self.show_progress = show_progress
        self.shown_exceptions = frozenset(shown_exceptions)
        self.keys: set[str] = set()            # every case key this run met
        self.hidden_keys: set[str] = set()     # ... of them, the keys met in hidden cases
        self.reveal: list[dict] = []           # hidden cases as instructors may see them
        self.told: list[str] = []              # lines for the top-level output (ctx.tell)
        self.on_case: Optional[Callable[[Any, int, int], None]] = None   # progress
        self._current = None                   # the declared case being iterated
        self._in_hidden = False

    # ------------------------------------------------------------------ the submission
    def call(self, fn: str, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args)`` in the submission (a probe call)."""
        self._check_hidden(fn)
        return self._call(fn, *args, **kwargs)

    def call_many(self, calls: list) -> Any:
        """A batch of calls (``harness.probe.Call``) in one round trip: the
        probe's ``Answers``, to be read in order (see ``call_many`` there)."""
        for c in calls:
            self._check_hidden(c.fn)
        return self._call_many(calls)

    def _check_hidden(self, fn: str) -> None:
        if self.phase == HIDDEN_PHASE and not (self._current is not None
                                               and self._current.hidden):
            raise JudgeBug(f"judge bug: {fn}() called outside a hidden case in the hidden "
                           "phase of " + (self.question.name if self.question else "?"))

    def tell(self, line: str) -> None:
        """A line the student must act on (their id, a file the grading ignored):
        shown in the top-level, always-visible output as well as in the
        question. Public phase only: the hidden phase says nothing of its own."""
        if self.phase != HIDDEN_PHASE and line not in self.told:
            self.told.append(line)

    def constant(self, name: str) -> Any:
        """A module-level constant of the submission (a choice key, a written
        answer): str (at most 20000 characters), int, float, or None."""
        return self._constant(name) if self._constant else None

    def instance_rng(self, tag: str) -> np.random.Generator:
        """A generator for this student's own (hidden) instance of a question:
        the same student id, tag and instance salt always give the same numbers.
        The salt lives in ``[hidden]``, so a handout cannot derive an instance."""
        salt = self.hidden.get("instance_salt", "")
        digest = hashlib.sha256(f"{salt}/{self.student_id or 'default'}/{tag}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def instance_key(self, key: str) -> str:
        """The key of a per-student case: it names the student (hashed), so a
        recorded default instance never stands in for another student's."""
        who = hashlib.sha256((self.student_id or "default").encode()).hexdigest()[:12]
        return f"{key}@{who}"

    @staticmethod
    def public_rng(tag: str) -> np.random.Generator:
        """A generator for a question's public instance (the same for everyone)."""
        digest = hashlib.sha256(f"public/{tag}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    # ------------------------------------------------------------------ declared cases
    def declared(self, group: str = "") -> list:
        """Every declared case of ``group`` this context knows (both visibilities)."""
        cases = self.question.cases if self.question is not None else ()
        return [c for c in cases if c.group == group]

    def cases(self, group: str = "") -> Iterator[Any]:
        """The declared cases of ``group`` that run in this phase, public ones
        first; a hidden case that draws per student comes resolved for this
        student. While one is being iterated, every case key met belongs to
        it (hidden keys of a per-student case name the student)."""
        mine = [c for c in self.declared(group)
                if (self.phase == ALL_PHASES) or (c.hidden == (self.phase == HIDDEN_PHASE))]
        mine.sort(key=lambda c: c.hidden)
        outer = self._current
        try:
            for i, case in enumerate(mine):
                if self.on_case is not None:
                    self.on_case(case, i + 1, len(mine))
                if case.draw:
                    case = case.resolved(self.instance_rng(f"{case.question}/{case.group}/"
                                                           f"{case.name}/draw"))
                self._current = case
                yield case
        finally:
            self._current = outer

    @contextmanager
    def within(self, cases: list) -> Iterator[None]:
        """The calls inside belong to ``cases`` together (runs in lockstep):
        hidden if any of them is, labelled by all of their labels."""
        outer = self._current
        hidden = [c for c in cases if c.hidden]
        if len(hidden) == 1:
            self._current = hidden[0]
        elif hidden:
            label = (f"hidden cases {', '.join(str(c.hidden_index) for c in hidden)} of "
                     f"{hidden[0].hidden_count}")
            self._current = replace(hidden[0], label=label, per_student=False)
        elif cases:
            self._current = cases[0]
        try:
            yield
        finally:
            self._current = outer

    def case_rng(self, case: Any) -> np.random.Generator:
        """The generator of ``case``'s inputs: its declared ``seed`` (or named
        public ``stream``), or for a case drawn per student, this student's
        instance generator."""
        if case.per_student:
            return self.instance_rng(f"{case.question}/{case.group}/{case.name}/inputs")
        if case.get("stream"):
            return self.public_rng(case.stream)
        if case.get("seed") is None:
            raise ReferenceFailed(f"case {case.name!r} of {case.question} declares no seed")
        return np.random.default_rng(case.seed)

    def _key(self, key: str) -> str:
        current = self._current
        if current is not None and current.per_student and "@" not in key:
            return self.instance_key(key)
        return key

    @contextmanager
    def case(self, key: str, label: str) -> Iterator[None]:
        """Everything inside concerns case ``key`` (of the declared case being
        iterated, if any). Inside a hidden case a failure is reported as the
        case's label plus the kind of failure only; what the worker said is
        kept for ``grade --reveal``."""
        key = self._key(key)
        self.keys.add(key)
        current = self._current
        hidden_case = current is not None and current.hidden
        if hidden_case:
            self.hidden_keys.add(key)
        outer = self._in_hidden
        # While recording, the reference's failures are shown in full (instructor side).
        self._in_hidden = hidden = outer or (hidden_case and not self.recording)
        case_label = current.label if hidden_case else "a hidden case"
        try:
            yield
        except _Hidden:
            raise
        except Fail as e:
            if not hidden:
                _name_case(e, current)
                raise
            self._reveal(current, key, label, f"FAIL ({e.kind}): {e}")
            raise HiddenFail(f"{case_label}: {KIND_TEXT.get(e.kind, KIND_TEXT['value'])} (its "
                             "inputs and expected values are not shown)", e.kind, case_label,
                             e.diagnosis) from None
        except ProbeRaised as e:
            if not hidden:
                _name_case(e, current)
                raise
            kind = (MODIFIED_INPUT if e.type == MODIFIED else
                    NOT_IMPLEMENTED if e.type == "NotImplementedError" else RAISED)
            shown = e.type if e.type in self.shown_exceptions else ""
            self._reveal(current, key, label, f"RAISED: {e}")
            raise HiddenRaised(e.fn, {"type": shown or "an exception", "shown_type": bool(shown),
                                      "types": e.types, "message": "", "where": ""},
                               case_label, kind) from None
        except ProbeFatal as e:
            if not hidden:
                raise
            self._reveal(current, key, label, f"FATAL ({e.kind}): {e}")
            kind = e.kind if e.kind in KIND_TEXT else CRASHED
            raise HiddenFatal(f"{case_label}: {KIND_TEXT[kind]} (its inputs are not shown)",
                              kind, case_label) from None
        finally:
            self._in_hidden = outer

    def _reveal(self, case: Any, key: str, label: str, what: str, **data: Any) -> None:
        """Keep what a hidden case did for instructors (``grade --reveal``)."""
        if case is None:
            return
        last = self.reveal[-1] if self.reveal else None
        if last and last["key"] == key and last["result"] == "compared" and what != "compared":
            last["result"] = what                   # the comparison just made failed
            return
        self.reveal.append({"question": case.question, "case": case.name,
                            "label": case.label, "key": key, "check": label,
                            "inputs": {k: v for k, v in case.table.items() if v not in
                                       (None, "", [], {})},
                            "result": what, **data})

    def expect(self, key: str, got: Any, *, rtol: float, atol: float, label: str = "",
               oracle: Optional[tuple] = None) -> None:
        """Compare ``got`` with the expected value of case ``key``: the
        reference's answer (recorded now when recording), or, with ``oracle``
        = ``(name, *args)``, the oracle's answer (the reference must match it).
        ``got`` may be a function of no arguments (a probe call): it then runs
        inside the case, so that its failures are hidden with it. A case drawn
        per student needs an oracle (nothing recorded can stand in for it)."""
        key = self._key(key)
        label = label or key.split("/", 1)[-1]
        with self.case(key, label):
            if callable(got):
                got = got()
            if oracle is not None:
                want = self.oracle(key, *oracle)
            elif self.recording:
                if not isinstance(got, np.ndarray) or not np.all(np.isfinite(got)):
                    raise ReferenceFailed(f"reference answer for {key} is {describe(got)}")
                self.expected[key] = np.asarray(got, dtype=np.float64)
                return
            elif key in self.expected:
                want = self.expected[key]
            elif self._current is not None and self._current.per_student:
                raise ReferenceFailed(f"{key}: a case drawn per student needs an oracle")
            else:
                raise ReferenceFailed(f"no expected value stored for {key}; rebuild with "
                                      "make dist")
            self._compare(key, label, got, want, rtol, atol)

    def check(self, key: str, label: str, got: Any, want: np.ndarray, *, rtol: float,
              atol: float) -> None:
        """Compare ``got`` (a value, or a function of no arguments run inside the
        case) with a value the judge knows (zeros, a bar, an identity)."""
        key = self._key(key)
        with self.case(key, label):
            self._compare(key, label, got() if callable(got) else got, want, rtol, atol)

    def _compare(self, key: str, label: str, got: Any, want: Any, rtol: float,
                 atol: float) -> None:
        current = self._current
        if current is not None and current.hidden and not self.recording:
            self._reveal(current, key, label, "compared", expected=_summary(want),
                         got=_summary(got))
        compare(label, got, want, rtol, atol)

    def nothing_to_record(self, *keys: str) -> None:
        """While recording, register ``keys`` as cases and stop this question:
        a loop judged against a bar stores nothing, so the reference need not
        run it at build time (``validate`` grades the reference on the bars)."""
        if self.recording:
            self.keys.update(keys)
            raise NothingToRecord()

    # ------------------------------------------------------------------ oracles
    def oracle(self, key: str, name: str, *args: Any) -> Any:
        """The oracle ``name``'s answer for case ``key`` (an array, or a tuple of
        arrays): recorded (public cases in a handout; every non-instance case
        in the Gradescope zip), else computed by ``autograder.oracles`` (and
        recorded when recording)."""
        key = self._key(key)
        self.keys.add(key)
        parts = sorted((k for k in self.expected if k.startswith(key + "#")),
                       key=lambda k: int(k.rpartition("#")[2]))
        if not self.recording:
            if key in self.expected:
                return self.expected[key]
            if parts:
                return tuple(self.expected[k] for k in parts)
        value = self.oracle_fn(name)(*args)
        if isinstance(value, tuple):          # several arrays: stored as key#0, key#1, ...
            value = tuple(np.asarray(v) for v in value)
            if self.recording:
                self.expected.update({f"{key}#{i}": v for i, v in enumerate(value)})
            return value
        value = np.asarray(value, dtype=np.float64)
        if self.recording:
            self.expected[key] = value
        return value

    def oracle_fn(self, name: str) -> Callable[..., Any]:
        """``"module.function"`` of ``autograder.oracles`` (Gradescope side only);
        in a handout, the answers a diagnosis of a public case asks of it, as
        recorded at ``make dist`` (``grading.recorded``), if there are any."""
        module, _, fn = name.rpartition(".")
        try:
            return getattr(importlib.import_module(f"autograder.oracles.{module}"), fn)
        except (ImportError, AttributeError) as e:
            if recorded.has(self.expected, name):
                return recorded.lookup(self.expected, name, ReferenceFailed)
            raise ReferenceFailed(f"oracle {name} is not available here ({e}); the handout "
                                  "checks public cases with recorded values only") from None


__all__ = ["Fail", "ReferenceFailed", "JudgeBug", "Outcome", "Part", "Scorecard", "Context",
           "compare", "merge_phases", "hidden_phase_outcome",
           "as_float_array", "ProbeError", "ProbeFatal", "ProbeRaised", "STATUSES"]
