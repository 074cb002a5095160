"""The one gate every value from the submission crosses before judge code
touches it.

A judge asks the submission through ``Context.ask(fn, *args, answer=SPEC)``
(or a batch of :class:`~autograder.harness.probe.Call`, each with its spec):
the spec says what a valid answer is, and :func:`admit` either returns the
answer in the form the judge uses (float64 arrays of the stated shape,
Python floats, checked dicts and lists) or raises
:class:`~autograder.grading.judging.Fail` naming the function and what was
wrong (type, dtype, shape, finiteness, size, string length, dict keys). A
value that fails the gate is a failed case of the submission, never an
autograder fault: nothing the worker sends reaches judge code unchecked.

What crosses the wire is already plain data (``harness.wire``: None, str of
at most 200 characters, lists, dicts with str keys, arrays of bool, int or
float; Python scalars arrive as 0-d arrays); the specs say which of it a
question accepts.

The specs, each a small frozen record:

* :class:`Floats` ``(shape, max_abs=None)``: a finite float64 array of
  exactly ``shape`` (ints and bools accepted, exact); single precision is
  refused (the handouts ask for float64, and the checks' tolerances need
  it). ``()`` is a scalar: :class:`Number` returns a Python float instead.
* :class:`Number`: one finite number (a 0-d array or a 1-element one).
* :class:`Seq` ``(spec, ...)``: a list or tuple of exactly these items.
* :class:`Record` ``(required, optional, extra, max_items)``: a dict with
  these str keys (``extra``: the spec of any other key, else other keys are
  refused).
* :class:`Text` ``(max_len)``: a str.
* :class:`Network` ``(shapes)``: a list of ``{"W": (n_in, n_out), "b":
  (n_out,)}`` layers of those shapes (extra keys ignored).
* :class:`Table` ``(value, max_items)``: a dict of str keys, every value
  of one spec.
* :class:`Lenient` ``(spec)``: like ``spec``, but a value that fails comes
  back as an :class:`Invalid` (the judge decides what it costs) instead of
  failing the case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .status import Kind

MAX_ITEMS = 10_000         # entries of a list or dict any spec reads


class GateFail(Exception):
    """A value failed its spec: ``path`` (where inside it), ``message``, ``kind``."""

    def __init__(self, message: str, kind: Kind = Kind.SHAPE, path: str = ""):
        super().__init__(message)
        self.message, self.kind, self.path = message, kind, path


@dataclass(frozen=True)
class Invalid:
    """What :class:`Lenient` returns for a value that failed its spec."""
    message: str
    kind: Kind = Kind.SHAPE


def describe(value: Any) -> str:
    """A short description of a value as it crossed the wire (no contents)."""
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return f"a {value.dtype} number"
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return f"a dict with {len(value)} keys"
    return "None" if value is None else type(value).__name__


def _at(path: str) -> str:
    """The prefix naming where inside an answer a problem is ("" at its top)."""
    return f"{path}: " if path else ""


def _as_array(value: Any, path: str) -> np.ndarray:
    if isinstance(value, (bool, int, float)) and not isinstance(value, bool):
        value = np.asarray(value)
    if isinstance(value, (list, tuple)):
        try:
            value = np.asarray(value)
        except ValueError:
            raise GateFail(f"{_at(path)}a ragged list, expected an array of numbers"
                           ) from None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise GateFail(f"{_at(path)}expected numbers, got {describe(value)}")
    return value


@dataclass(frozen=True)
class Floats:
    """A finite float64 array of exactly ``shape`` (``max_abs``: its entries'
    bound, e.g. weights near the rewards' scale)."""
    shape: tuple
    max_abs: Optional[float] = None

    def admit(self, value: Any, path: str = "") -> np.ndarray:
        arr = _as_array(value, path)
        shape = tuple(int(n) for n in self.shape)
        name = f"{path}: " if path else ""
        if arr.shape != shape:
            raise GateFail(f"{name}expected shape {shape}, got shape {arr.shape}")
        if arr.dtype.kind == "f" and arr.dtype.itemsize < 8:
            raise GateFail(f"{name}expected float64, got {arr.dtype} (the handout asks for "
                           "float64; single precision loses the digits the check needs)")
        arr = arr.astype(np.float64)
        if not np.all(np.isfinite(arr)):
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
            at = f" at index {bad}" if bad else ""
            raise GateFail(f"{name}contains {arr[bad] if bad else arr.item()}{at}; expected "
                           "finite numbers", Kind.NONFINITE)
        if self.max_abs is not None and arr.size and not np.abs(arr).max() <= self.max_abs:
            raise GateFail(f"{name}an entry of size {np.abs(arr).max():.3g} (more than "
                           f"{self.max_abs:g})", Kind.VALUE)
        return arr


@dataclass(frozen=True)
class Number:
    """One finite number, as a Python float (``integer``: a whole number, as int)."""
    integer: bool = False

    def admit(self, value: Any, path: str = "") -> float:
        arr = _as_array(value, path)
        if arr.size != 1 or arr.ndim > 1:
            raise GateFail(f"{_at(path)}expected one number, got "
                           f"{describe(arr)}")
        if arr.dtype.kind == "f" and arr.dtype.itemsize < 8:
            raise GateFail(f"{_at(path)}expected float64, got {arr.dtype}")
        x = float(arr.reshape(()))
        if not np.isfinite(x):
            raise GateFail(f"{_at(path)}{x} is not finite", Kind.NONFINITE)
        if self.integer:
            if x != round(x) or abs(x) > 2 ** 53:
                raise GateFail(f"{_at(path)}{x:g} is not a whole number")
            return int(x)
        return x


@dataclass(frozen=True)
class Text:
    max_len: int = 200

    def admit(self, value: Any, path: str = "") -> str:
        if not isinstance(value, str):
            raise GateFail(f"{_at(path)}expected a string, got {describe(value)}")
        if len(value) > self.max_len:
            raise GateFail(f"{_at(path)}a string of {len(value)} characters "
                           f"(at most {self.max_len})")
        return value


@dataclass(frozen=True)
class Seq:
    """A list (or tuple, in-process) of exactly these items."""
    items: tuple

    def __init__(self, *items: Any):
        object.__setattr__(self, "items", tuple(items))

    def admit(self, value: Any, path: str = "") -> list:
        n = len(self.items)
        if isinstance(value, np.ndarray) and value.ndim >= 1 and len(value) == n:
            value = list(value)                  # equal-shaped items arrive stacked
        if not isinstance(value, (list, tuple)) or len(value) != n:
            raise GateFail(f"{_at(path)}expected {n} items (a tuple), got "
                           f"{describe(value)}")
        return [spec.admit(v, f"{path or 'item'} {i + 1}" if not path else f"{path}[{i}]")
                for i, (spec, v) in enumerate(zip(self.items, value))]


@dataclass(frozen=True)
class Record:
    """A dict with ``required`` keys (and ``optional`` ones), each of its spec;
    other keys: of spec ``extra``, or refused when ``extra`` is None and
    ``closed`` (else ignored)."""
    required: dict = field(default_factory=dict)
    optional: dict = field(default_factory=dict)
    extra: Any = None
    closed: bool = False
    max_items: int = 64

    def admit(self, value: Any, path: str = "") -> dict:
        name = f"{path}: " if path else ""
        if not isinstance(value, dict):
            raise GateFail(f"{name}expected a dict, got {describe(value)}")
        if len(value) > self.max_items:
            raise GateFail(f"{name}{len(value)} keys (at most {self.max_items})")
        missing = [k for k in self.required if k not in value]
        if missing:
            raise GateFail(f"{name}lacks the key(s) {', '.join(map(repr, missing))}; got "
                           f"{sorted(map(str, value))[:8]}")
        out = {}
        for k, v in value.items():
            spec = self.required.get(k) or self.optional.get(k)
            if spec is None:
                spec = self.extra
                if spec is None:
                    if self.closed:
                        raise GateFail(f"{name}unexpected key {str(k)[:40]!r}")
                    continue
            out[k] = spec.admit(v, f"{path}[{str(k)[:40]!r}]" if path else f"[{str(k)[:40]!r}]")
        return out


@dataclass(frozen=True)
class Table:
    """A dict of str keys, every value of spec ``value``."""
    value: Any
    max_items: int = 200

    def admit(self, value: Any, path: str = "") -> dict:
        return Record(extra=self.value, max_items=self.max_items).admit(value, path)


@dataclass(frozen=True)
class Rows:
    """A 2-D array of numbers with ``width`` columns and 1 to ``max_rows`` rows
    (a student's table)."""
    width: int
    max_rows: int = 200

    def admit(self, value: Any, path: str = "") -> np.ndarray:
        arr = _as_array(value, path)
        if arr.ndim != 2 or arr.shape[1] != self.width or not 1 <= arr.shape[0] <= self.max_rows:
            raise GateFail(f"{_at(path)}expected rows of {self.width} numbers "
                           f"(at most {self.max_rows}), got {describe(arr)}")
        return Floats(arr.shape).admit(arr, path)


@dataclass(frozen=True)
class Network:
    """A network's parameters: a list of ``{"W", "b"}`` layers of ``shapes``
    (``[{"W": (n_in, n_out), "b": (n_out,)}, ...]``)."""
    shapes: tuple

    def admit(self, value: Any, path: str = "") -> list:
        name = f"{path}: " if path else ""
        if not isinstance(value, list) or len(value) != len(self.shapes) or not all(
                isinstance(layer, dict) and {"W", "b"} <= set(layer) for layer in value):
            raise GateFail(f"{name}expected the network's list of {len(self.shapes)} "
                           "{'W', 'b'} layers, got " + describe(value))
        return [{k: Floats(like[k]).admit(layer[k], f"{path or 'layer '}[{i}][{k!r}]")
                 for k in ("W", "b")} for i, (layer, like) in enumerate(zip(value, self.shapes))]


@dataclass(frozen=True)
class Lenient:
    """``spec``, but a failing value comes back as :class:`Invalid`."""
    spec: Any

    def admit(self, value: Any, path: str = "") -> Any:
        try:
            return self.spec.admit(value, path)
        except GateFail as e:
            return Invalid(e.message, e.kind)


@dataclass(frozen=True)
class Anything:
    """Plain data of any form, for a value only shown or carried (a name):
    nothing is computed from it. Sizes are the wire's caps."""

    def admit(self, value: Any, path: str = "") -> Any:
        return value


def admit(spec: Any, value: Any) -> Any:
    """``value`` through ``spec``, or :class:`GateFail`."""
    if spec is None:
        raise TypeError("judge bug: every answer needs a spec (autograder/grading/gate.py)")
    return spec.admit(value)
