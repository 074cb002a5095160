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
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import numpy as np

from ..harness.probe import MODIFIED, ProbeError, ProbeFatal, ProbeRaised

# A question's outcome, as data (results.json, batch, validate and tables read it).
PASSED, FAILED, RAISED, NOT_IMPLEMENTED = "passed", "failed", "raised", "not_implemented"
CRASHED, TIMED_OUT, AUTOGRADER_FAULT, NOT_GRADED = "crashed", "timed_out", "autograder_fault", \
    "not_graded"
PROTOCOL_ERROR = "protocol_error"    # the worker sent a malformed or oversized answer, or stopped
                                     # reading: the submission's process (it owns the pipe) did it
STATUSES = (PASSED, FAILED, RAISED, NOT_IMPLEMENTED, CRASHED, TIMED_OUT, AUTOGRADER_FAULT,
            NOT_GRADED, PROTOCOL_ERROR)
# the submission crashed (not "not done yet")
SUBMISSION_FAULTS = (RAISED, CRASHED, TIMED_OUT, PROTOCOL_ERROR)


class Fail(Exception):
    """A checked answer is wrong; the message says expected vs got.
    ``kind``: "value", "shape" (type, shape or dtype) or "nonfinite"."""

    def __init__(self, message: str, kind: str = "value"):
        super().__init__(message)
        self.kind = kind


class ReferenceFailed(RuntimeError):
    """The reference or the autograder's data is broken: an autograder fault."""


class NothingToRecord(Exception):
    """Raised while recording by a question whose checks need no stored value
    (a training loop judged against its bar): recording skips the rest."""


class _Hidden(Exception):
    """Marks an exception whose message was already made safe for a hidden case."""


class HiddenFail(Fail, _Hidden):
    pass


class HiddenRaised(ProbeRaised, _Hidden):
    pass


class HiddenFatal(ProbeFatal, _Hidden):
    pass


_KIND_TEXT = {"value": "a wrong answer", "shape": "an answer of the wrong type or shape",
              "nonfinite": "an answer with NaN or inf"}


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
class Outcome:
    """Result of one question: ``fraction`` of its points in [0, 1], feedback
    lines, a status (one of :data:`STATUSES`) and measurements (numbers, e.g.
    the margin to a bar) for tables and ``validate``."""
    fraction: float
    lines: list[str] = field(default_factory=list)
    status: str = ""
    measurements: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.status:
            self.status = PASSED if self.fraction >= 1.0 else FAILED


class Scorecard:
    """Scores a question as weighted parts. A part fails on :class:`Fail` or a
    :class:`ProbeRaised` (the student's function raised); a dead worker
    (:class:`ProbeFatal`) ends the question. A part with ``requires`` counts
    only if that part passed: "nothing changed" answers earn points only
    beside a case whose answer is not zero."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, float, bool, Optional[str]]] = []
        self.lines: list[str] = []
        self.failures: list[str] = []          # the status of each failed part
        self.measurements: dict[str, float] = {}

    @contextmanager
    def part(self, label: str, weight: float, requires: Optional[str] = None) -> Iterator[None]:
        try:
            yield
        except (Fail, ProbeRaised) as e:
            self.parts.append((label, weight, False, requires))
            self.lines.append(f"FAIL {label}: {e}")
            if isinstance(e, ProbeRaised) and e.type != MODIFIED:
                self.failures.append(NOT_IMPLEMENTED if e.type == "NotImplementedError"
                                     else RAISED)
            else:
                self.failures.append(FAILED)
            return
        self.parts.append((label, weight, True, requires))

    def passed(self, label: str) -> bool:
        return any(p[0] == label and p[2] for p in self.parts)

    def note(self, line: str) -> None:
        self.lines.append(line)

    def measure(self, name: str, value: float) -> None:
        """A number worth a column (a median, a margin to a bar): data, not text."""
        self.measurements[name] = float(value)

    def outcome(self) -> Outcome:
        total = sum(w for _, w, _, _ in self.parts)
        earned, lines = 0.0, []
        for label, w, ok, requires in self.parts:
            if ok and requires and not self.passed(requires):
                lines.append(f"no credit for {label}: it counts only once "
                             f"'{requires}' passes")
                continue
            if ok:
                earned += w
                lines.append(f"ok   {label}")
        fraction = earned / total if total else 0.0
        status = PASSED if fraction >= 1.0 else next(
            (s for s in (RAISED, NOT_IMPLEMENTED) if s in self.failures), FAILED)
        return Outcome(fraction, lines + self.lines, status, dict(self.measurements))


class Context:
    """What a question sees: the submission (``call``), expected values, the
    assignment's parameters (``params``; ``hidden``: the ``[hidden]`` table,
    empty in a handout), and whether only public cases run.

    ``public_keys``: the keys the public-only recording produced; ``None``
    while that recording runs (then every case is public)."""

    def __init__(self, call: Callable[..., Any], params: dict[str, Any], *, public_only: bool,
                 expected: Optional[dict[str, np.ndarray]] = None,
                 public_keys: Optional[set[str]] = None, recording: bool = False,
                 show_progress: bool = False, student_id: Optional[str] = None,
                 constant: Optional[Callable[[str], Any]] = None,
                 hidden: Optional[dict[str, Any]] = None):
        self.call = call
        self.student_id = student_id
        self._constant = constant
        self.params = params
        self.hidden = hidden or {}
        self.public_only = public_only
        self.recording = recording
        self.expected = {} if expected is None else expected
        self.public_keys = public_keys
        self.show_progress = show_progress
        self.keys: set[str] = set()            # every case key this run met
        self._in_hidden = False

    # ------------------------------------------------------------------ the submission
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

    # ------------------------------------------------------------------ cases
    def is_public(self, key: str) -> bool:
        if self.public_only or self.public_keys is None:
            return True
        return key in self.public_keys

    @contextmanager
    def case(self, key: str, label: str) -> Iterator[None]:
        """Everything inside concerns case ``key``. Inside a hidden case a
        failure is reported as ``label`` plus the kind of failure only."""
        self.keys.add(key)
        outer = self._in_hidden
        # While recording, the reference's failures are shown in full (instructor side).
        self._in_hidden = hidden = outer or not (self.recording or self.is_public(key))
        try:
            yield
        except _Hidden:
            raise
        except Fail as e:
            if not hidden:
                raise
            raise HiddenFail(f"{label}: {_KIND_TEXT.get(e.kind, 'a wrong answer')} on a hidden "
                             "case (its inputs and expected values are not shown)", e.kind) \
                from None
        except ProbeRaised as e:
            if not hidden:
                raise
            raise HiddenRaised(e.fn, {"type": e.type, "where": e.where, "types": e.types,
                                      "message": "(message not shown: hidden case)"}) from None
        except ProbeFatal as e:
            if not hidden:
                raise
            raise HiddenFatal(str(e), e.kind) from None
        finally:
            self._in_hidden = outer

    def expect(self, key: str, got: Any, *, rtol: float, atol: float, label: str = "",
               oracle: Optional[tuple] = None) -> None:
        """Compare ``got`` with the expected value of case ``key``: the
        reference's answer (recorded now when recording), or, with ``oracle``
        = ``(name, *args)``, the oracle's answer (the reference must match it).
        ``got`` may be a function of no arguments (a probe call): it then runs
        inside the case, so that its failures are hidden with it."""
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
            else:
                raise ReferenceFailed(f"no expected value stored for {key}; rebuild with "
                                      "make dist")
            compare(label, got, want, rtol, atol)

    def check(self, key: str, label: str, got: Any, want: np.ndarray, *, rtol: float,
              atol: float) -> None:
        """Compare ``got`` (a value, or a function of no arguments run inside the
        case) with a value the judge knows (zeros, a bar, an identity)."""
        with self.case(key, label):
            compare(label, got() if callable(got) else got, want, rtol, atol)

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

    @staticmethod
    def oracle_fn(name: str) -> Callable[..., Any]:
        """``"module.function"`` of ``autograder.oracles`` (Gradescope side only)."""
        module, _, fn = name.rpartition(".")
        try:
            return getattr(importlib.import_module(f"autograder.oracles.{module}"), fn)
        except (ImportError, AttributeError) as e:
            raise ReferenceFailed(f"oracle {name} is not available here ({e}); the handout "
                                  "checks public cases with recorded values only") from None


__all__ = ["Fail", "ReferenceFailed", "Outcome", "Scorecard", "Context", "compare",
           "as_float_array", "ProbeError", "ProbeFatal", "ProbeRaised", "STATUSES"]
