"""The oracles' answers a diagnosis asks for on the public cases, recorded at
``make dist`` for the handout, which ships no oracle.

Where a public case fails, a judge names the slip the answer matches by
re-running an oracle with each slip (``judges/slips.py``). A handout has no
oracle, so ``make dist`` records the reference's public cases once more with
every check's diagnosis run on the reference's answer (a diagnosis computes
each slip's answer from the case's inputs, whatever the answer:
``expected.record_diagnoses``) and keeps what each oracle returned to the
diagnosis, keyed by the oracle's name and a digest of its arguments. In the handout, ``Context.oracle_fn`` answers from
this table (:func:`lookup`): the same inputs give the recorded answer, any
other input is a miss, and a diagnosis that misses says nothing (as before).

What is recorded is computed from the public cases' inputs only: wrong
answers (each slip's) and right ones the handout already holds as the public
expected values. The table is ``autograder/expected/<id>.diagnoses.npz``.

The digest rounds each float to 32 bits of mantissa, so that inputs the
handout recomputes on another machine (a last-bit difference of a vector
instruction) still find their entry; an input that cannot be digested (an
object, a callable) is never recorded and never found.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Optional

import numpy as np

PREFIX = "diagnosis-oracle"         # keys: PREFIX/<oracle name>/<digest>[#i]
MANTISSA_BITS = 32


class Unrecordable(TypeError):
    """An argument or answer that the table cannot hold."""


def _feed_array(h, a: np.ndarray) -> None:
    if a.dtype.kind == "f" or a.dtype.kind == "c":
        a = np.asarray(a, dtype=np.float64 if a.dtype.kind == "f" else np.complex128)
        parts = [a] if a.dtype.kind == "f" else [a.real, a.imag]
        h.update(f"f{a.dtype.kind}{a.shape};".encode())
        for x in parts:
            finite = np.isfinite(x)
            m, e = np.frexp(np.where(finite, x, 0.0))
            q = np.round(m * 2.0 ** MANTISSA_BITS).astype(np.int64)
            code = np.where(np.isnan(x), 1, np.where(np.isinf(x), np.sign(x) * 2, 0))
            h.update(np.ascontiguousarray(q).tobytes())
            h.update(np.ascontiguousarray(e.astype(np.int32)).tobytes())
            h.update(np.ascontiguousarray(code.astype(np.int8)).tobytes())
    elif a.dtype.kind in "biu":
        h.update(f"i{a.dtype.kind}{a.shape};".encode())
        h.update(np.ascontiguousarray(a.astype(np.int64)).tobytes())
    elif a.dtype.kind in "US":
        h.update(f"s{a.shape};".encode())
        h.update("\x00".join(map(str, a.ravel())).encode())
    else:
        raise Unrecordable(f"an array of dtype {a.dtype}")


def _feed(h, x: Any) -> None:
    if x is None or isinstance(x, (bool, str)):
        h.update(f"{type(x).__name__}:{x!r};".encode())
    elif isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        h.update(f"int:{int(x)};".encode())
    elif isinstance(x, (float, np.floating, np.ndarray, np.bool_)):
        _feed_array(h, np.asarray(x))
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}[{len(x)}](".encode())
        for item in x:
            _feed(h, item)
        h.update(b")")
    elif isinstance(x, dict):
        h.update(f"dict[{len(x)}](".encode())
        for k in sorted(x, key=str):
            _feed(h, str(k))
            _feed(h, x[k])
        h.update(b")")
    else:
        raise Unrecordable(f"a {type(x).__name__}")


def digest(name: str, args: tuple, kwargs: Optional[dict] = None) -> str:
    """A digest of the call ``name(*args, **kwargs)``; :class:`Unrecordable`
    when an argument is not plain data (numbers, strings, arrays, and lists,
    tuples and dicts of them)."""
    h = hashlib.sha256(f"{name}(".encode())
    _feed(h, tuple(args))
    _feed(h, dict(kwargs or {}))
    return h.hexdigest()[:32]


def entries(name: str, args: tuple, kwargs: Optional[dict], value: Any) -> dict[str, np.ndarray]:
    """The table's entries for one call and its answer ``value`` (an array or a
    number, or a tuple of them: ``#0``, ``#1``, ...)."""
    key = f"{PREFIX}/{name}/{digest(name, args, kwargs)}"
    if isinstance(value, tuple):
        out = {f"{key}#{i}": np.asarray(v) for i, v in enumerate(value)}
    else:
        out = {key: np.asarray(value)}
    if any(v.dtype.kind not in "biuf" for v in out.values()):
        raise Unrecordable("an answer that is not numbers")
    return out


def has(table: dict, name: str) -> bool:
    """Whether the table holds any answer of the oracle ``name``."""
    start = f"{PREFIX}/{name}/"
    return any(k.startswith(start) for k in table)


def _plain(v: np.ndarray) -> Any:
    return v.item() if v.ndim == 0 else v


def lookup(table: dict, name: str, miss: Callable[[str], Exception]) -> Callable[..., Any]:
    """The oracle ``name`` answered from ``table``: a recorded call gives its
    recorded answer (a 0-d answer as a Python number), any other raises
    ``miss(reason)``."""
    def recorded(*args: Any, **kwargs: Any) -> Any:
        try:
            key = f"{PREFIX}/{name}/{digest(name, args, kwargs)}"
        except Unrecordable as e:
            raise miss(f"oracle {name} is not in this handout (its arguments hold {e})") \
                from None
        if key in table:
            return _plain(table[key])
        parts = sorted((k for k in table if k.startswith(key + "#")),
                       key=lambda k: int(k.rpartition("#")[2]))
        if parts:
            return tuple(_plain(table[k]) for k in parts)
        raise miss(f"oracle {name}: no answer recorded for these inputs (the handout holds "
                   "the oracles' answers on its public cases only)")
    return recorded
