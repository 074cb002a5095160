"""Building blocks of a judge: comparing answers with expected values,
scoring a question in parts, and the context a question runs in.

A question is a function ``question(ctx) -> Outcome``. It asks the
submission through ``ctx.call(fn, *args)`` and checks each answer with
``ctx.expect(key, got, ...)``: when ``ctx`` is recording (the reference runs
in-process at build time) the answer is stored as the expected value; when
grading, it is compared with the stored one.
"""
from __future__ import annotations

import hashlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import numpy as np

from .probe import ProbeError, ProbeFatal, ProbeRaised


class Fail(Exception):
    """A checked answer is wrong; the message says expected vs got."""


class ReferenceFailed(RuntimeError):
    """The reference solution failed its own check: the assignment is broken."""


def describe(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    return f"{type(a).__name__} {a!r}"[:200]


def as_float_array(name: str, got: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``got`` as a finite float64 array of exactly ``shape``, or :class:`Fail`."""
    if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
        raise Fail(f"{name}: expected a float array of shape {shape}, got {describe(got)}")
    if got.shape != tuple(shape):
        raise Fail(f"{name}: expected shape {tuple(shape)}, got shape {got.shape}")
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        bad = np.argwhere(~np.isfinite(got))[0]
        raise Fail(f"{name}: contains {got[tuple(bad)]} at index {tuple(int(i) for i in bad)}; "
                   "expected finite numbers")
    return got


def compare(name: str, got: Any, expected: np.ndarray, rtol: float, atol: float) -> None:
    """Raise :class:`Fail` unless ``got`` matches ``expected`` elementwise within
    ``atol + rtol * |expected|``. Shapes and dtypes are checked first."""
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
    """Result of one question: ``fraction`` of its points in [0, 1], feedback lines."""
    fraction: float
    lines: list[str] = field(default_factory=list)


class Scorecard:
    """Scores a question as weighted parts. A part fails on :class:`Fail` or a
    :class:`ProbeRaised` (the student's function raised); a dead worker
    (:class:`ProbeFatal`) ends the question. A part with ``requires`` counts
    only if that part passed: "nothing changed" answers earn points only
    beside a case whose answer is not zero."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, float, bool, Optional[str]]] = []
        self.lines: list[str] = []

    @contextmanager
    def part(self, label: str, weight: float, requires: Optional[str] = None) -> Iterator[None]:
        try:
            yield
        except (Fail, ProbeRaised) as e:
            self.parts.append((label, weight, False, requires))
            self.lines.append(f"FAIL {label}: {e}")
            return
        self.parts.append((label, weight, True, requires))

    def passed(self, label: str) -> bool:
        return any(p[0] == label and p[2] for p in self.parts)

    def note(self, line: str) -> None:
        self.lines.append(line)

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
        return Outcome(earned / total if total else 0.0, lines + self.lines)


class Context:
    """What a question sees: the submission (``call``), the expected values, the
    assignment's parameters, and whether only public cases run."""

    def __init__(self, call: Callable[..., Any], params: dict[str, Any], *, public_only: bool,
                 expected: Optional[dict[str, np.ndarray]] = None, recording: bool = False,
                 show_progress: bool = False, student_id: Optional[str] = None,
                 constant: Optional[Callable[[str], Any]] = None):
        self.call = call
        self.student_id = student_id
        self._constant = constant
        self.params = params
        self.public_only = public_only
        self.recording = recording
        self.expected = {} if expected is None else expected
        self.show_progress = show_progress

    def constant(self, name: str) -> Any:
        """A module-level constant of the submission (a choice key, a written
        answer): str (at most 20000 characters), int, float, or None."""
        return self._constant(name) if self._constant else None

    def instance_rng(self, tag: str) -> np.random.Generator:
        """A generator for this student's own instance of a question: the same
        student id and tag always give the same numbers."""
        digest = hashlib.sha256(f"{self.student_id or 'default'}/{tag}".encode()).digest()
        return np.random.default_rng(int.from_bytes(digest[:8], "little"))

    def expect(self, key: str, got: Any, *, rtol: float, atol: float) -> None:
        """Record ``got`` as the expected value of ``key`` (reference), or compare."""
        if self.recording:
            if not isinstance(got, np.ndarray) or not np.all(np.isfinite(got)):
                raise ReferenceFailed(f"reference answer for {key} is {describe(got)}")
            self.expected[key] = np.asarray(got, dtype=np.float64)
            return
        if key not in self.expected:
            raise ReferenceFailed(f"no expected value stored for {key}; rebuild with make dist")
        name = key.split("/", 1)[-1]
        try:
            compare(name, got, self.expected[key], rtol, atol)
        except Fail as e:
            if not name.startswith("hidden"):
                raise
            # Hidden cases say what is wrong, never what the right answer is.
            text = str(e)
            shape_problem = "expected shape" in text or "expected a float array" in text \
                or "finite" in text
            raise Fail(text if shape_problem else
                       f"{name}: wrong answer on a hidden case (values not shown)") from None


__all__ = ["Fail", "ReferenceFailed", "Outcome", "Scorecard", "Context", "compare",
           "as_float_array", "ProbeError", "ProbeFatal", "ProbeRaised"]
