"""Writing a judge: declared parts, derived keys, one gate, blame by rule.

A judge module registers one small function per part of each question
(``[[questions.parts]]`` in assignment.toml: id, title, points, requires, the
case groups it runs) and exposes ``QUESTIONS = judge.questions``::

    judge = Judge()

    @judge.part("q1_double", "doubles")          # once per case of the part's groups
    def doubles(ctx, case):
        x = ctx.case_rng(case).normal(size=case.B)
        got = ctx.ask("double", x, answer=Floats(x.shape))
        ctx.expect(got, oracle=("example.double", x), rtol=1e-12, atol=0.0)

The framework owns every rule a question used to follow by hand:

* **Cases.** It iterates the part's declared cases (public ones first; in a
  grading, every question's public cases, each question in one worker, then
  every question's hidden cases, each in a fresh worker), resolves a hidden
  case's draw (``draw``: per submission, ``instance_rng``) and puts every
  submission's hidden cases in an order and numbering of their own.
* **Keys.** A check's key is derived: ``question/part/case[/name]`` (a drawn
  case adds the instance's hash), never formatted by a judge.
* **Expected values.** ``ctx.expect`` compares with the reference's answer
  recorded at ``make dist`` for a public case, and with the oracle's answer
  (``oracle=(name, *args)``: Gradescope-side code under
  ``autograder.oracles``) for a drawn (hidden) case.
* **Visibility.** A failure inside a hidden case says only the case's label
  and the kind of failure (and the judge's diagnosis); what the worker said
  is kept for ``grade --reveal``.
* **The gate.** ``ctx.ask(fn, *args, answer=SPEC)`` is the only way to ask
  the submission: its answer passes ``grading.gate`` before any judge code
  sees it; a value that fails is a failed case naming ``fn``.
* **Diagnoses.** ``diagnose=`` on ``expect``/``check`` names the slip a wrong
  value matches (only a wrong value is diagnosed; a failing diagnosis is
  none).
* **Scoring.** A part passes when every case it ran passed; points, the
  ``requires`` rule and the status come from the records (``grading.parts``).
* **Blame.** Any exception other than a failed check inside a part, after
  the submission answered, is the submission's (a failed case naming the
  function whose answer could not be used); :class:`ReferenceFailed` (the
  grader's own data) and anything before the submission ran are the
  autograder's.

A question whose parts share work (a training run judged by two parts)
registers one function with ``@judge.question(name)`` and opens its parts
itself: ``with ctx.part("learns") as part: for case in part.cases(): ...``.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import traceback
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import numpy as np

from . import gate, recorded
from .parts import Outcome, PartResult, ended, score
from .safe import one_line
from .status import Kind, Status
from ..harness.probe import (MODIFIED, ProbeError, ProbeFatal, ProbeRaised, call_each)

# The phases of a question: the public cases in one worker, then the hidden cases in a fresh
# one; in-process recording may run both in one ("all").
PUBLIC_PHASE, HIDDEN_PHASE, ALL_PHASES = "public", "hidden", "all"


class Fail(Exception):
    """A checked answer is wrong; the message says expected vs got. ``kind``:
    a :class:`~autograder.grading.status.Kind`; ``diagnosis``: the judge's
    name for the slip the answer matches (never a hidden case's inputs);
    ``fn``: the submission's function whose answer failed."""

    def __init__(self, message: str, kind: Kind | str = Kind.VALUE, diagnosis: str = "",
                 fn: str = ""):
        super().__init__(message)
        self.kind = Kind.of(kind)
        self.diagnosis = diagnosis
        self.fn = fn


class ReferenceFailed(RuntimeError):
    """The reference or the autograder's data is broken: an autograder fault."""


class JudgeBug(ReferenceFailed):
    """A judge broke a rule of the framework (a call outside a declared case in
    the hidden phase, an undeclared part): an autograder fault."""


class _Hidden(Exception):
    """Marks an exception whose message was already made safe for a hidden case:
    the case's label and the kind of failure, nothing the worker produced."""
    case_label = ""


class HiddenFail(Fail, _Hidden):
    def __init__(self, message: str, kind: Kind | str, case_label: str, diagnosis: str = "",
                 fn: str = ""):
        super().__init__(message, kind, diagnosis, fn)
        self.case_label = case_label


class HiddenFatal(ProbeFatal, _Hidden):
    def __init__(self, message: str, kind: str, case_label: str = ""):
        super().__init__(message, kind)
        self.case_label = case_label


def raised_kind(e: ProbeRaised) -> Kind:
    """The kind of a submission's exception: not implemented for
    NotImplementedError or a function the module does not define."""
    if e.type == MODIFIED:
        return Kind.MODIFIED_INPUT
    if e.type == "NotImplementedError" or (
            e.type == "AttributeError" and not e.where
            and e.message.endswith(f"defines no function {e.fn}()")):
        return Kind.NOT_IMPLEMENTED
    return Kind.RAISED


def _summary(a: Any, n: int = 8) -> str:
    """A short text of a value for instructors (``grade --reveal``)."""
    try:
        arr = np.asarray(a, dtype=np.float64)
        flat = ", ".join(f"{v:.6g}" for v in arr.ravel()[:n])
        return f"shape {arr.shape}: [{flat}{', ...' if arr.size > n else ''}]"
    except (TypeError, ValueError):
        return gate.describe(a)


def compare(name: str, got: Any, expected: Any, rtol: float, atol: float) -> None:
    """Raise :class:`Fail` unless ``got`` (already through the gate) matches
    ``expected`` elementwise within ``atol + rtol * |expected|``."""
    expected = np.asarray(expected, dtype=np.float64)
    try:
        got = gate.Floats(expected.shape).admit(got, name)
    except gate.GateFail as e:
        raise Fail(e.message, e.kind) from None
    err = np.abs(got - expected)
    tol = atol + rtol * np.abs(expected)
    if np.all(err <= tol):
        return
    idx = tuple(int(i) for i in np.unravel_index(np.argmax(err - tol), err.shape))
    at = f" at index {idx}" if idx else ""
    raise Fail(f"{name}:{at} expected {expected[idx]:.12g}, got {got[idx]:.12g} "
               f"(abs. error {err[idx]:.3g}, tolerance {tol[idx]:.3g}; "
               f"{int(np.sum(err > tol))} of {err.size} entries off)")


# ----------------------------------------------------------------------------- parts
class _PartScope:
    """An open part: :meth:`cases` iterates its declared cases in this phase,
    each inside its case scope; :meth:`case_list` hands them over without
    scopes (a judge that runs them in lockstep, ``Context.within``)."""

    def __init__(self, ctx: "Context", spec, item: str, cases: Optional[list]):
        self.ctx, self.spec, self.item = ctx, spec, item
        self._cases = cases            # None: the part's declared groups
        self.met = not spec.cases
        self.last = None               # the case judged last (where a failure happened)

    def _mine(self) -> list:
        if self._cases is not None:
            return list(self._cases)
        out = []
        for group in self.spec.cases:
            out += self.ctx.cases_in(group)
        return out

    def cases(self) -> Iterator[Any]:
        ctx = self.ctx
        for case in self._mine():
            self.met, self.last = True, case
            if case.hidden:                   # met: the recording's "no hidden case" check
                ctx.hidden_keys.add(f"{ctx.question.name}/{self.spec.id}/{case.name}")
            with ctx._at(case):
                if ctx.on_case is not None:
                    ctx.on_case(case, *ctx._progress_of(case))
                yield case

    def case_list(self) -> list:
        mine = self._mine()
        self.met = self.met or bool(mine)
        return mine

    def at(self, case: Any):
        """The scope of ``case`` (one of :meth:`case_list`) for the checks inside."""
        self.last = case
        return self.ctx._at(case)


class Context:
    """What a question sees: the submission (:meth:`ask`), the assignment's
    parameters (``params``; ``hidden``: the ``[hidden]`` table, empty in a
    handout), the question's declared cases and parts, and the phase.

    * ``phase`` "public": only the public cases (the handout, the notebook,
      and the first phase of a grading); "hidden": only the hidden cases, in
      a worker that served no public case; "all": both in one pass
      (in-process recording of the reference).
    * In the hidden phase every call of the submission happens inside a
      hidden case (a call outside one is a :class:`JudgeBug`, never a silent
      public call).
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
                 call_many: Optional[Callable[[list], Any]] = None, draw_key: str = ""):
        self._call = call
        self._call_many = call_many or (lambda calls: call_each(call, calls))
        self.student_id = student_id
        self.draw_key = draw_key
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
        self.staff: list[str] = []             # lines for the course staff only (notes)
        self.on_case: Optional[Callable[[Any, int, int], None]] = None   # progress
        self.results: list[PartResult] = []
        self.notes: list[str] = []
        self.measurements: dict[str, float] = {}
        self._current = None                   # the declared case being judged
        self._part: Optional[_PartScope] = None
        self._names: set[str] = set()          # check names used in the current case
        self._answered = 0                     # answers received in the current part
        self.answered = 0                      # answers received in this question
        self._last_fn = ""                     # the function asked last in the current part
        self._order: dict = {}                 # per question: the student's hidden order
        self.diagnoses: Optional[dict] = None  # make dist: what each diagnosis asks of the oracles
        self._logging = False
        self.new_session: Optional[Callable[[], Any]] = None   # a fresh worker (grade.py)
        self.progress_line = ""                # how far a long question got (a deadline's words)
        # the fast tier's memo of long computations (tests only; None when grading for real)
        self.run_memo: Optional[Callable[..., Any]] = None

    # ------------------------------------------------------------------ the submission
    def _send(self, fn: str, *args: Any, may_modify: tuple = ()) -> Any:
        """The one place a single call reaches the submission (tests spy on it)."""
        return self._call(fn, *args, may_modify=may_modify)

    def _send_many(self, calls: list) -> Any:
        """The one place a batch of calls reaches the submission (tests spy on it)."""
        return self._call_many(calls)

    def ask(self, fn: str, *args: Any, answer: Any, may_modify: tuple = ()) -> Any:
        """``fn(*args)`` in the submission, its answer through the gate
        (``answer``: a spec of :mod:`~autograder.grading.gate`). A value that
        fails the gate, or an exception of ``fn``, fails the current case."""
        self._check_hidden(fn)
        self._last_fn = fn
        try:
            value = self._send(fn, *args, may_modify=may_modify)
        except ProbeRaised as e:
            self._answered += 1
            self.answered += 1
            raise self._raise(e) from None
        except ProbeFatal as e:
            raise self._fatal(e) from None
        self._answered += 1
        self.answered += 1
        return self._admit(fn, answer, value)

    def ask_raising(self, fn: str, *args: Any, answer: Any) -> tuple[Optional[ProbeRaised], Any]:
        """``fn(*args)`` where raising may be the right answer (a ValueError the
        handout asks for): ``(the exception, None)`` (its type and message for
        the judge to check; a hidden case's failure never shows them), or
        ``(None, the answer through the gate)``."""
        self._check_hidden(fn)
        self._last_fn = fn
        try:
            value = self._send(fn, *args)
        except ProbeRaised as e:
            self._answered += 1
            self.answered += 1
            return e, None
        except ProbeFatal as e:
            raise self._fatal(e) from None
        self._answered += 1
        self.answered += 1
        return None, self._admit(fn, answer, value)

    def ask_many(self, calls: Sequence[Any]) -> "GatedAnswers":
        """A batch of ``harness.probe.Call`` (each with its ``answer`` spec) in
        one round trip; its answers read in order, each through the gate when
        read (reading a failed call, or one after it, fails as a single call)."""
        for c in calls:
            self._check_hidden(c.fn)
            if c.answer is None:
                raise JudgeBug(f"judge bug: batched call {c.fn}() has no answer spec")
        try:
            answers = self._send_many(list(calls))
        except ProbeFatal as e:
            raise self._fatal(e) from None
        self._answered += 1
        self.answered += 1
        return GatedAnswers(self, answers)

    def _admit(self, fn: str, spec: Any, value: Any) -> Any:
        try:
            return gate.admit(spec, value)
        except gate.GateFail as e:
            raise self._fail(Fail(f"{fn}(): {e.message}", e.kind, fn=fn)) from None

    def constant(self, name: str, answer: Any = None) -> Any:
        """A module-level constant of the submission (a choice key, a written
        answer, ``STUDENT_ID``): None, a str of at most 20000 characters, or a
        finite number; anything else the worker sends reads as None (or, given
        ``answer``, is checked against that spec)."""
        value = self._constant(name) if self._constant else None
        if answer is not None:
            return self._admit(name, answer, value)
        if isinstance(value, str):
            return value[:20000]
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf" \
                and np.isfinite(value):
            return value.item()
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and np.isfinite(value):
            return value
        return None

    def _check_hidden(self, fn: str) -> None:
        if self.phase == HIDDEN_PHASE and not (self._current is not None
                                               and self._current.hidden):
            raise JudgeBug(f"judge bug: {fn}() called outside a hidden case in the hidden "
                           "phase of " + (self.question.name if self.question else "?"))

    def _hidden_case(self) -> bool:
        current = self._current
        return current is not None and current.hidden and not self.recording

    def _case_label(self) -> str:
        return self._current.label if self._current is not None else "a hidden case"

    def _raise(self, e: ProbeRaised) -> Exception:
        """The failure a submission's exception is, as this case may show it."""
        kind = raised_kind(e)
        if not self._hidden_case():
            f = Fail(str(e), kind, fn=e.fn)
            f.raised = e
            return f
        shown = e.type if e.type in self.shown_exceptions else ""
        self._reveal(f"RAISED: {e}")
        return HiddenFail(f"{self._case_label()}: {kind.words}" + (f" ({shown})" if shown else ""),
                          kind, self._case_label(), fn=e.fn)

    def _fatal(self, e: ProbeFatal) -> Exception:
        if not self._hidden_case() or isinstance(e, _Hidden):
            return e
        self._reveal(f"FATAL ({e.kind}): {e}")
        kind = e.kind if e.kind in {k.value for k in Kind} else Kind.CRASHED.value
        return HiddenFatal(f"{self._case_label()}: {Kind.of(kind).words} (its inputs are not "
                           "shown)", kind, self._case_label())

    def _fail(self, f: Fail) -> Fail:
        """``f`` as this case may show it (a hidden case: its label and kind)."""
        if isinstance(f, _Hidden):
            return f
        if not self._hidden_case():
            if self._current is not None and not getattr(f, "case_label", ""):
                f.case_label = self._current.label
            return f
        self._reveal(f"FAIL ({f.kind.value}): {f}")
        return HiddenFail(f"{self._case_label()}: {f.kind.words} (its inputs and expected values "
                          "are not shown)", f.kind, self._case_label(), f.diagnosis, f.fn)

    # ------------------------------------------------------------------ lines for people
    def tell(self, line: str) -> None:
        """A line the student must act on (their id, a file the grading
        ignored): shown in the top-level, always-visible output as well as in
        the question. Public phase only: the hidden phase says nothing of its
        own."""
        if self.phase != HIDDEN_PHASE and line not in self.told:
            self.told.append(line)

    def note(self, line: str) -> None:
        """A line of the question's feedback (public phase only)."""
        if self.phase != HIDDEN_PHASE:
            self.notes.append(line)

    def measure(self, name: str, value: float) -> None:
        """A number worth a column (a median, a margin to a bar): data, not text."""
        self.measurements[name] = float(value)

    # ------------------------------------------------------------------ instances
    def instance_rng(self, tag: str) -> np.random.Generator:
        """A generator for this submission's hidden instance of a question. Its
        key is the instance salt, the student's id and ``draw_key`` (the
        submission's files' digest, ``harness.intake.files_digest``): the same
        files graded again draw the same numbers, any edit draws anew, and
        another student never meets the same draw. The salt lives in
        ``[hidden]``, so a handout cannot derive an instance. (Without a
        ``draw_key``, a bare Context in a test: the student's id alone.)"""
        salt = self.hidden.get("instance_salt", "")
        who = self.student_id or "default"
        key = f"{salt}/{who}/{self.draw_key}/{tag}" if self.draw_key else f"{salt}/{who}/{tag}"
        digest = hashlib.sha256(key.encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def instance_key(self, key: str) -> str:
        """The key of a drawn case: it names the instance (the student and the
        submission, hashed), so that a recorded default instance never stands
        in for a drawn one."""
        who = hashlib.sha256(f"{self.student_id or 'default'}/{self.draw_key}".encode()
                             if self.draw_key else (self.student_id or "default").encode())
        return f"{key}@{who.hexdigest()[:12]}"

    @staticmethod
    def public_rng(tag: str) -> np.random.Generator:
        """A generator for a question's public instance (the same for everyone)."""
        digest = hashlib.sha256(f"public/{tag}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def case_rng(self, case: Any) -> np.random.Generator:
        """The generator of ``case``'s inputs: its declared ``seed`` (or named
        public ``stream``), or for a drawn case, this submission's instance
        generator."""
        if case.per_student:
            return self.instance_rng(f"{case.question}/{case.group}/{case.name}/inputs")
        if case.get("stream"):
            return self.public_rng(case.stream)
        if case.get("seed") is None:
            raise ReferenceFailed(f"case {case.name!r} of {case.question} declares no seed")
        return np.random.default_rng(case.seed)

    # ------------------------------------------------------------------ declared cases
    def declared(self, group: str = "") -> list:
        """Every declared case of ``group`` this context knows (both
        visibilities), as declared (not resolved for a student)."""
        cases = self.question.cases if self.question is not None else ()
        return [c for c in cases if c.group == group]

    def _hidden_order(self) -> dict:
        """{hidden case (group, name): (its place, how many)} for this
        submission: its hidden cases come in an order and numbering of their
        own, so that "hidden case k" means nothing at the next submission or to
        another student."""
        q = self.question
        if q is None:
            return {}
        if q.name not in self._order:
            hidden = [(c.group, c.name) for c in q.cases if c.hidden]
            perm = self.instance_rng(f"{q.name}/hidden-order").permutation(len(hidden))
            self._order[q.name] = {hidden[j]: (i + 1, len(hidden)) for i, j in enumerate(perm)}
        return self._order[q.name]

    def _resolved(self, case: Any) -> Any:
        """``case`` for this student: drawn fields drawn, a hidden case
        numbered in the submission's own order."""
        if case.hidden:
            index, count = self._hidden_order().get((case.group, case.name),
                                                    (case.hidden_index, case.hidden_count))
            case = replace(case, label=f"hidden case {index} of {count}", hidden_index=index,
                           hidden_count=count)
        if case.draw:
            case = case.resolved(self.instance_rng(f"{case.question}/{case.group}/{case.name}/"
                                                   "draw"))
        return case

    def cases_in(self, group: str = "") -> list:
        """The declared cases of ``group`` that run in this phase, resolved for
        this student: public ones in declaration order, then hidden ones in the
        student's order."""
        mine = [self._resolved(c) for c in self.declared(group)
                if (self.phase == ALL_PHASES) or (c.hidden == (self.phase == HIDDEN_PHASE))]
        return sorted(mine, key=lambda c: (c.hidden, c.hidden_index))

    def cases(self, group: str = "") -> Iterator[Any]:
        """:meth:`cases_in`, each inside its case scope (outside any part)."""
        for case in self.cases_in(group):
            with self._at(case):
                yield case

    def _progress_of(self, case: Any) -> tuple[int, int]:
        mine = self.cases_in(case.group)
        names = [c.name for c in mine]
        return (names.index(case.name) + 1 if case.name in names else 0), len(mine)

    @contextmanager
    def _at(self, case: Any) -> Iterator[None]:
        outer, names = self._current, self._names
        self._current, self._names = case, set()
        try:
            yield
        finally:
            self._current, self._names = outer, names

    def memoised(self, key: tuple, compute: Callable[[], Any], *, ignore: tuple = ()) -> Any:
        """``compute()``: a long computation on the submission (a judge's run of
        it). Only the fast tier of trusted submissions (``grading.inprocess``,
        with its memo switched on by a test session) may answer it from an
        earlier grading of the same code, up to the module constants named in
        ``ignore`` (which the computation must not read). A real grading
        always computes."""
        if self.run_memo is None:
            return compute()
        return self.run_memo((self.question.name if self.question else "", *key), compute,
                             ignore)

    @contextmanager
    def fresh_worker(self) -> Iterator[None]:
        """The calls inside go to a fresh worker: a new process that imported the
        submission anew and serves nothing else (in the fast tier, a new import),
        under the question's limits and the grading's deadline. Without one (a
        notebook's check, a bare Context in a test) they go where they went."""
        if self.new_session is None:
            yield
            return
        with self.new_session() as session:
            session.import_module()
            saved = self._call, self._call_many, self._constant
            self._call, self._call_many, self._constant = (session.call, session.call_many,
                                                           session.constant)
            try:
                yield
            finally:
                self._call, self._call_many, self._constant = saved

    @contextmanager
    def within(self, cases: list) -> Iterator[None]:
        """The calls inside belong to ``cases`` together (runs in lockstep):
        hidden if any of them is, labelled by all of their labels."""
        if self.on_case is not None:          # progress: the cases this block runs
            for c in cases:
                self.on_case(c, *self._progress_of(c))
        hidden = [c for c in cases if c.hidden]
        if len(hidden) == 1:
            case = hidden[0]
        elif hidden:
            label = (f"hidden cases {', '.join(str(c.hidden_index) for c in hidden)} of "
                     f"{hidden[0].hidden_count}")
            case = replace(hidden[0], name="+".join(c.name for c in hidden), label=label,
                           per_student=False)
        elif cases:
            case = replace(cases[0], name="+".join(c.name for c in cases))
        else:
            case = None
        with self._at(case):
            yield

    # ------------------------------------------------------------------ parts
    def _spec(self, part_id: str):
        if self.question is None:
            raise JudgeBug(f"judge bug: part {part_id!r} outside a question")
        try:
            return self.question.part(part_id)
        except KeyError as e:
            raise JudgeBug(f"judge bug: {e.args[0]}") from None

    def _instance_points(self, spec) -> float:
        if spec.each == "item":
            return spec.points / spec.count
        if spec.each == "case":
            n = len(self.question.cases_of(spec, public_only=self.public_only))
            return spec.points / n if n else 0.0
        return spec.points

    def _instance(self, spec, item: str, cases: Optional[list]) -> tuple[str, str]:
        """(instance id, title) of a part for ``item`` or its one case."""
        instance, title = spec.id, spec.title
        if item:
            instance, title = f"{spec.id}[{item}]", title.replace("{item}", item)
        elif spec.each == "case" and cases:
            label = cases[0].label if cases[0].hidden else cases[0].name
            instance, title = f"{spec.id}[{label}]", title.replace("{case}", cases[0].label)
        return instance, title

    @contextmanager
    def part(self, part_id: str, item: str = "", cases: Optional[list] = None
             ) -> Iterator[_PartScope]:
        """Judge the declared part ``part_id`` (``item``: the item of a part
        declared ``each = "item"``; ``cases``: the one case of a part declared
        ``each = "case"``). A failed check or a submission's exception inside
        fails it (recorded, not raised); a dead worker ends the question; see
        the module's blame rule for any other exception."""
        spec = self._spec(part_id)
        if bool(item) != (spec.each == "item") or (spec.each == "case") != bool(cases):
            raise JudgeBug(f"judge bug: part {part_id!r} is declared each = {spec.each!r}")
        if self._part is not None:
            raise JudgeBug(f"judge bug: part {part_id!r} opened inside part "
                           f"{self._part.spec.id!r}")
        scope = _PartScope(self, spec, item, cases)
        self._part, self._answered, self._last_fn = scope, 0, ""
        self._names = set()            # check names are per part (and case): keys include both
        instance, title = self._instance(spec, item, cases)
        points = self._instance_points(spec)
        try:
            yield scope
        except (ProbeFatal, ReferenceFailed, KeyboardInterrupt):
            raise
        except (Fail, ProbeRaised) as e:
            self.results.append(self._failed(spec, instance, title, points, e, scope.last))
        except Exception as e:  # noqa: BLE001 - the blame rule
            if not self._answered:
                raise                   # before any answer: the grader's own fault
            self.results.append(self._failed(spec, instance, title, points,
                                             self._unusable(e), scope.last))
        else:
            self.results.append(PartResult(spec.id, instance, title, points, True,
                                           requires=spec.requires, met=scope.met))
        finally:
            self._part = None

    def _unusable(self, e: Exception) -> Fail:
        """An exception of judge code while it handled the submission's answers:
        the submission's (its answer could not be used), told to the staff."""
        fn = self._last_fn or "your code"
        where = "".join(traceback.format_exception_only(type(e), e)).strip()
        self.staff.append(f"{self.question.name if self.question else '?'}: the judge could not "
                          f"use an answer of {fn}(): {one_line(where)[:300]}")
        print(traceback.format_exc(), file=sys.stderr)
        return Fail(f"the answer of {fn}() could not be used by the grader "
                    f"({type(e).__name__}); check its type and shape against the handout",
                    Kind.SHAPE, fn=fn)

    def _failed(self, spec, instance: str, title: str, points: float, e: Exception,
                case: Any) -> PartResult:
        """The record of a part that ``e`` failed in ``case`` (redacted there if
        it is hidden and ``e`` was not yet)."""
        outer = self._current
        self._current = case if case is not None else outer
        try:
            e = self._raise(e) if isinstance(e, ProbeRaised) else self._fail(e)
        finally:
            self._current = outer
        message = str(e) if isinstance(e, _Hidden) or not hasattr(e, "raised") \
            else one_line(str(e))
        return PartResult(spec.id, instance, title, points, False, e.kind.value, message,
                          e.diagnosis, spec.requires, getattr(e, "case_label", ""),
                          isinstance(e, _Hidden), fn=e.fn)

    def each_case(self, part_id: str) -> list:
        """The cases of a part declared ``each = "case"`` in this phase, one
        part each: ``for case in ctx.each_case(id): with ctx.part(id,
        cases=[case]) as part: ...`` (what :meth:`Judge.part` does)."""
        spec = self._spec(part_id)
        out = []
        for group in spec.cases:
            out += self.cases_in(group)
        return out

    def record_failure(self, part_id: str, e: Exception, item: str = "",
                       cases: Optional[list] = None) -> None:
        """Record part ``part_id`` as failed by ``e`` (a :class:`Fail` or a
        submission's exception met elsewhere: one cause reported in each part
        it stops)."""
        with self.part(part_id, item, cases) as scope:
            scope.met = True
            raise e

    def passed(self, part_id: str) -> bool:
        """Every instance of ``part_id`` judged so far passed (and some was)."""
        mine = [r for r in self.results if r.id == part_id and r.met]
        return bool(mine) and all(r.passed for r in mine)

    def outcome(self) -> Outcome:
        """The question's outcome from its part records: a declared part the
        judge never judged fails ("not judged"), so that no part is free."""
        q = self.question
        results = list(self.results)
        seen = {r.id for r in results}
        for spec in (q.parts if q is not None else ()):
            if spec.id in seen:
                continue
            if spec.each == "case" or (spec.cases and not any(self.cases_in(g)
                                                               for g in spec.cases)):
                continue                    # no case of the part runs in this phase
            count = spec.count if spec.each == "item" else 1
            for i in range(count):
                results.append(PartResult(
                    spec.id, f"{spec.id}[{i + 1}]" if spec.each == "item" else spec.id,
                    spec.title.replace("{item}", f"{i + 1}"), self._instance_points(spec),
                    False, Kind.NOT_JUDGED.value, "not judged: an earlier failure of this "
                    "question stopped it", requires=spec.requires))
        if q is not None:
            for spec in q.parts:
                if spec.each == "case":     # a case of this phase whose part was never opened
                    opened = {r.instance for r in results if r.id == spec.id}
                    for case in self.each_case(spec.id):
                        instance, title = self._instance(spec, "", [case])
                        if instance not in opened:
                            results.append(PartResult(
                                spec.id, instance, title, self._instance_points(spec), False,
                                Kind.NOT_JUDGED.value, "not judged: an earlier failure of "
                                "this question stopped it", requires=spec.requires,
                                case=case.label, hidden=case.hidden))
                if spec.each == "item" and not (spec.cases and not any(
                        self.cases_in(g) for g in spec.cases)):   # fewer items than declared
                    mine = [r for r in results if r.id == spec.id]
                    for i in range(len(mine), spec.count):
                        first = next((r for r in mine if not r.passed), None)
                        results.append(PartResult(
                            spec.id, f"{spec.id}[{i + 1}]", spec.title.replace(
                                "{item}", f"{i + 1}"), self._instance_points(spec), False,
                            first.kind if first else Kind.NOT_JUDGED.value,
                            first.message if first else "not judged",
                            first.diagnosis if first else "", spec.requires))
        total = q.points if q is not None else sum(r.points for r in results)
        notes = list(self.notes)
        if self.public_only and q is not None:
            judged = {r.id for r in results if r.met}
            notes += [f"not graded here: {spec.title} (its cases are hidden: graded on "
                      "Gradescope or PrairieLearn)" for spec in q.parts
                      if spec.id not in judged and spec.points > 0]
        return score(results, total, notes, self.measurements)

    # ------------------------------------------------------------------ checks
    def key(self, name: str = "") -> str:
        """The key of the current check: ``question/part/case[/name]``, naming
        the instance for a drawn case."""
        q = self.question.name if self.question is not None else "?"
        parts = [q]
        if self._part is not None:
            parts.append(self._part.spec.id + (f"[{self._part.item}]" if self._part.item
                                               else ""))
        if self._current is not None:
            parts.append(self._current.name)
        if name:
            parts.append(name)
        key = "/".join(parts)
        if self._current is not None and self._current.per_student:
            key = self.instance_key(key)
        return key

    def _new_key(self, name: str) -> str:
        key = self.key(name)
        if name in self._names and self.recording:
            raise JudgeBug(f"judge bug: two checks of one case named {name!r} ({key}); "
                           "give each its own name")
        self._names.add(name)
        self.keys.add(key)
        if self._current is not None and self._current.hidden:
            self.hidden_keys.add(key)
        return key

    def expect(self, got: Any, *, rtol: float, atol: float, oracle: Optional[tuple] = None,
               name: str = "", label: str = "", diagnose: Optional[Callable] = None,
               conceal: bool = False, fn: str = "") -> None:
        """Compare ``got`` (an answer through the gate) with the expected value
        of the current case: the reference's answer recorded for a fixed case,
        the oracle's (``oracle = (name, *args)``) for a drawn case.
        A wrong value is diagnosed by ``diagnose(got)`` (a str); it is blamed on
        ``fn`` (default: the function asked last) for the cascade. ``conceal``:
        the expected value is an answer key (a choice's letter), so a wrong
        value's failure says only that it is wrong, never what was expected."""
        key = self._new_key(name)
        label = label or self._label(name)
        per_student = self._current is not None and self._current.per_student
        if per_student and oracle is None:
            raise JudgeBug(f"judge bug: {key}: a drawn case needs an oracle")
        if per_student:
            want = self._oracle_value(key, *oracle)
        elif self.recording:
            if not isinstance(got, (np.ndarray, float, int)) or not np.all(np.isfinite(got)):
                raise ReferenceFailed(f"reference answer for {key} is {gate.describe(got)}")
            self.expected[key] = np.asarray(got, dtype=np.float64)
            if self.diagnoses is not None and diagnose is not None:
                self._log_diagnosis(diagnose, got)
            return
        elif key in self.expected:
            want = self.expected[key]
        else:
            raise ReferenceFailed(f"no expected value stored for {key}; rebuild with make dist")
        self._compare(label, got, want, rtol, atol, diagnose, conceal, fn)

    def check(self, got: Any, want: Any, *, rtol: float, atol: float, name: str = "",
              label: str = "", diagnose: Optional[Callable] = None, fn: str = "") -> None:
        """Compare ``got`` with a value the judge knows (zeros, a bar, an
        identity, an oracle's answer on judge data); ``fn`` as for :meth:`expect`."""
        self._new_key(name)
        self._compare(label or self._label(name), got, want, rtol, atol, diagnose, fn=fn)

    def fail(self, message: str, kind: Kind | str = Kind.VALUE, diagnosis: str = "",
             fn: str = "") -> Fail:
        """A failure of the current case, to raise."""
        return self._fail(Fail(message, kind, diagnosis, fn or self._last_fn))

    def _label(self, name: str) -> str:
        what = f"{self._last_fn}()" if self._last_fn else (self._part.spec.title if self._part
                                                           else "the answer")
        where = ""
        if self._current is not None and not self._current.hidden:
            where = f" on {self._current.description or self._current.name}"
        return f"{what}{where}" + (f": {name}" if name else "")

    def _compare(self, label: str, got: Any, want: Any, rtol: float, atol: float,
                 diagnose: Optional[Callable], conceal: bool = False, fn: str = "") -> None:
        if self._hidden_case():
            self._reveal("compared", expected=_summary(want), got=_summary(got))
        try:
            compare(label, got, want, rtol, atol)
            if self.diagnoses is not None and diagnose is not None:
                self._log_diagnosis(diagnose, got)
        except Fail as e:
            if conceal and e.kind is Kind.VALUE:
                e = Fail(f"{label}: not the right answer (an answer key: the right one is "
                         "not shown)")
            e.fn = fn or self._last_fn
            if e.kind is Kind.VALUE and diagnose is not None:
                try:
                    e.diagnosis = str(diagnose(got) or "")
                except ProbeFatal:
                    raise                       # the worker died while a diagnosis asked it
                except Exception:  # noqa: BLE001 - a diagnosis that fails is none
                    e.diagnosis = ""
            raise self._fail(e) from None

    def _reveal(self, what: str, **data: Any) -> None:
        """Keep what a hidden case did for instructors (``grade --reveal``)."""
        case = self._current
        if case is None:
            return
        key = self.key()
        last = self.reveal[-1] if self.reveal else None
        if last and last["key"] == key and last["result"] == "compared" and what != "compared":
            last["result"] = what                   # the comparison just made failed
            return
        self.reveal.append({"question": case.question, "case": case.name,
                            "label": case.label, "key": key,
                            "check": self._part.spec.id if self._part else "",
                            "inputs": {k: v for k, v in case.table.items() if v not in
                                       (None, "", [], {})},
                            "result": what, **data})

    # ------------------------------------------------------------------ oracles
    def oracle(self, name: str, oracle: str, *args: Any) -> Any:
        """The oracle ``oracle``'s answer on judge data, named ``name`` within the
        current case (inputs the judge makes with an oracle: recorded for public
        cases, so that the handout has them; computed on Gradescope)."""
        key = self.key(name)
        self.keys.add(key)
        return self._oracle_value(key, oracle, *args)

    def _oracle_value(self, key: str, name: str, *args: Any) -> Any:
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

    def _log_diagnosis(self, diagnose: Callable, got: Any) -> None:
        """``make dist``: run ``diagnose`` on the reference's answer, keeping every
        oracle answer it asks for in ``diagnoses`` (the handout's table)."""
        self._logging = True
        try:
            diagnose(got)
        except Exception:  # noqa: BLE001 - a diagnosis that fails records what it asked
            pass
        finally:
            self._logging = False

    def oracle_fn(self, name: str) -> Callable[..., Any]:
        """``"module.function"`` of ``autograder.oracles`` (Gradescope side only);
        in a handout, the answers a diagnosis of a public case asks of it, as
        recorded at ``make dist`` (``grading.recorded``), if there are any."""
        module, _, fn = name.rpartition(".")
        try:
            found = getattr(importlib.import_module(f"autograder.oracles.{module}"), fn)
        except (ImportError, AttributeError) as e:
            if recorded.has(self.expected, name):
                return recorded.lookup(self.expected, name, ReferenceFailed)
            raise ReferenceFailed(f"oracle {name} is not available here ({e}); the handout "
                                  "checks public cases with recorded values only") from None
        if not self._logging or self.diagnoses is None:
            return found

        def logged(*args: Any, **kwargs: Any) -> Any:
            value = found(*args, **kwargs)
            try:
                self.diagnoses.update(recorded.entries(name, args, kwargs, value))
            except recorded.Unrecordable:
                pass                        # e.g. a loop run with the submission's pieces
            return value
        return logged

    def has_oracles(self) -> bool:
        """Whether the oracles ship here (Gradescope; not a handout): beside
        this very ``autograder`` package. (A handout run in a venv holding the
        repository as an editable install would otherwise find the
        repository's oracles through that install's finder.)"""
        try:
            spec = importlib.util.find_spec("autograder.oracles")
        except ImportError:
            return False
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        return spec is not None and spec.origin is not None and \
            os.path.dirname(os.path.dirname(os.path.abspath(spec.origin))) == here


class GatedAnswers:
    """A batch's answers, each read through its call's gate in order."""

    def __init__(self, ctx: Context, answers: Any):
        self.ctx, self.answers = ctx, answers

    def __len__(self) -> int:
        return len(self.answers)

    @property
    def raised_at(self) -> Optional[int]:
        """The index of the call that raised (the batch stopped there), or None."""
        return len(self.answers.values) if self.answers.error is not None else None

    def __getitem__(self, i: int) -> Any:
        call = self.answers.calls[i]
        try:
            value = self.answers[i]
        except ProbeRaised as e:
            raise self.ctx._raise(e) from None
        return self.ctx._admit(call.fn, call.answer, value)

    def __iter__(self):
        return (self[i] for i in range(len(self)))


# ----------------------------------------------------------------------------- registry
class Judge:
    """A judge module's registry: one function per declared part (or per
    question whose parts share work). ``questions``: ``{name: run(ctx) ->
    Outcome}`` for the grader, the notebook's checks and the recording."""

    def __init__(self) -> None:
        self._parts: dict[tuple[str, str], Callable] = {}
        self._questions: dict[str, Callable] = {}
        self._names: list[str] = []

    def part(self, question: str, part_id: str) -> Callable:
        """Register ``fn(ctx, case)`` for part ``part_id`` of ``question``: run
        once per case of the part's groups (the part fails at its first
        failing case), or once with ``case`` None for a part declared
        ``cases = []``; for a part declared ``each = "case"``, each case is a
        part of its own."""
        def register(fn: Callable) -> Callable:
            self._parts[(question, part_id)] = fn
            if question not in self._names:
                self._names.append(question)
            return fn
        return register

    def question(self, name: str) -> Callable:
        """Register ``fn(ctx)`` judging question ``name``'s parts itself
        (``ctx.part``); it may return an Outcome (a hand-graded answer)."""
        def register(fn: Callable) -> Callable:
            self._questions[name] = fn
            if name not in self._names:
                self._names.append(name)
            return fn
        return register

    def run(self, name: str, ctx: Context) -> Outcome:
        q = ctx.question
        if name in self._questions:
            out = self._questions[name](ctx)
            if isinstance(out, Outcome):
                return out
            return ctx.outcome()
        for spec in q.parts:
            fn = self._parts.get((name, spec.id))
            if fn is None:
                raise JudgeBug(f"judge bug: part {spec.id!r} of {name} has no judge function")
            for cases in ([[c] for c in ctx.each_case(spec.id)] if spec.each == "case"
                          else [None]):
                with ctx.part(spec.id, cases=cases) as scope:
                    for case in scope.cases() if spec.cases else [None]:   # caseless: once
                        fn(ctx, case)
        return ctx.outcome()

    @property
    def questions(self) -> dict[str, Callable[[Context], Outcome]]:
        return {n: (lambda ctx, n=n: self.run(n, ctx)) for n in self._names}


WRITTEN = "written_answer"    # a hand-graded question's measurement: 1 answered, 0 missing
# Where a student finds a written answer's criteria: the handout README's section that
# `make dist` writes from an assignment's [handout] rubric (commands/handout_readme.py, "## 5."; the
# staff's rubric.md, with its model answers, stays in the repository).
RUBRIC_WHERE = "your handout's README.md, section 5"


def hand_graded(lines: list[str], answered: bool = True) -> Outcome:
    """A written answer carried to the results for grading by hand (0 points
    here); ``answered=False`` where it is missing or blank (the measurement
    :data:`WRITTEN` is 0: the notebook's check fails on it)."""
    return ended(Status.HAND_GRADED, lines, {WRITTEN: float(answered)})


__all__ = ["Fail", "ReferenceFailed", "JudgeBug", "Outcome", "PartResult", "Context", "Judge",
           "compare", "ProbeError", "ProbeFatal", "ProbeRaised", "Status", "Kind"]
