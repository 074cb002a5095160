"""The probe wire format: length-prefixed frames holding a JSON header and
raw numeric arrays. No pickle anywhere: only JSON scalars, lists, dicts and
arrays of bool / int / float dtypes cross the boundary.

The judge reads what an untrusted worker writes, so every size is capped
(one place, here) before memory is spent on it: the frame, the JSON header,
its nesting depth and number of values, the number of arrays and their
dimensions. The caps are sized from the largest real answers with headroom
(measured with ``bench/bench_wire.py``: the largest
frame the references exchange is 0.24 MB (capstone A; exercises 0.22 MB,
capstone D 0.07 MB) and the largest header 2.4 kB; a student's written answer
is at most 20,000 characters). Measured judge peak RSS while forged replies
arrive (a 16 MB header, a 20 MB error message, a 2 GB frame length, 100,000
nested brackets): 37-57 MB. A :class:`Reader` reads frames into one standing
buffer (a frame longer than it into one buffer of its own, after its length
was checked) and arrays are copied out of views of it, so the judge's memory
stays within about twice ``MAX_FRAME`` whatever the worker sends.

Cost per message (issue 29, measured with ``bench/bench_probe.py``): one
wait and usually one read per frame received, one wait and one write per
frame sent; a header text seen before (the judge's loops repeat the same
call on the same shapes) is parsed and checked once (:func:`_header_plan`,
a bounded cache); contiguous arrays are joined into the frame without an
intermediate copy.
"""
from __future__ import annotations

import errno
import json
import math
import os
import select
import struct
import time
from typing import Any

import numpy as np

MAX_FRAME = 32 * 1024 * 1024           # bytes of one frame (largest real: 0.24 MB)
MAX_HEADER = 1024 * 1024               # bytes of its JSON header (largest real: 2.4 kB)
MAX_DEPTH = 32                         # nesting of lists / dicts
MAX_VALUES = 100_000                   # JSON values in one header
MAX_ARRAYS = 10_000                    # arrays in one frame
MAX_NDIM = 32
ALLOWED_KINDS = "biuf"                 # bool, signed/unsigned int, float
_LEN = struct.Struct("<Q")


class WireError(RuntimeError):
    """The peer broke the protocol, closed the pipe or timed out."""


class WireTimeout(WireError):
    pass


class WireClosed(WireError):
    """The other side closed the pipe (e.g. the worker died)."""


class WireProtocol(WireError):
    """A malformed or oversized frame: a protocol error."""


_SCALARS = frozenset((type(None), bool, int, float, str))
_CONTAINERS = frozenset((list, dict))
def _json_encoder():
    """The header's JSON encoder: the C encoder made once (``JSONEncoder.encode``
    makes it anew for every message), or ``JSONEncoder.encode`` where the C
    encoder is missing or not the one this knows."""
    slow = json.JSONEncoder(allow_nan=True, separators=(",", ":")).encode
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii
        fast = c_make_encoder(None, None, encode_basestring_ascii, None, ":", ",", False,
                              False, True)
        probe = {"a": [1.5, float("nan"), -float("inf"), "\u00e9", None, True, 2 ** 70]}
        if "".join(fast(probe, 0)) == slow(probe):
            return lambda value: "".join(fast(value, 0))
    except (ImportError, TypeError):
        pass
    return slow


_JSON = _json_encoder()
_SCAN = json.JSONDecoder().scan_once          # one JSON value from a position: (value, end)


def _encode_array(arr: np.ndarray, blobs: list) -> dict:
    """The array's header entry; its bytes (the array itself when C-contiguous:
    :func:`frame` joins them at once, one copy) appended to ``blobs``."""
    dtype = arr.dtype
    if dtype.kind not in ALLOWED_KINDS:
        raise TypeError(f"cannot send an array of dtype {dtype}")
    blobs.append(arr if arr.flags.c_contiguous else arr.tobytes())
    return {"__nd__": len(blobs) - 1, "dtype": dtype.str, "shape": list(arr.shape)}


def _encode_value(value: Any, blobs: list[bytes]) -> Any:
    kind = type(value)                              # the common cases first, by exact type
    if kind in _SCALARS:
        return value
    if kind is np.ndarray:
        return _encode_array(value, blobs)
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else _encode_value(v, blobs) for v in value]
    if kind is dict:
        return {str(k): v if type(v) in _SCALARS else _encode_value(v, blobs)
                for k, v in value.items()}
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return _encode_array(np.asarray(value), blobs)
    if isinstance(value, (list, tuple)):
        return [_encode_value(v, blobs) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode_value(v, blobs) for k, v in value.items()}
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot send a value of type {type(value).__name__}")


_DTYPES: dict[str, np.dtype] = {}


def _dtype(text: str) -> np.dtype:
    dtype = _DTYPES.get(text)
    if dtype is None:
        dtype = np.dtype(text)
        if dtype.kind not in ALLOWED_KINDS or dtype.hasobject:
            raise WireProtocol(f"refusing array of dtype {dtype}")
        _DTYPES[text] = dtype
    return dtype


class _Slot:
    """Where an array goes in a decoded header: blob ``index`` holds
    ``nbytes`` bytes of ``dtype``, read as ``shape`` (checked once)."""
    __slots__ = ("index", "dtype", "shape", "nbytes")

    def __init__(self, value: dict):
        try:
            dtype = _DTYPES[value["dtype"]]
        except (KeyError, TypeError):
            dtype = _dtype(value["dtype"])
        shape = value["shape"]
        if type(shape) is not list or len(shape) > MAX_NDIM:
            raise WireProtocol("malformed array shape")
        size = dtype.itemsize
        for s in shape:
            if type(s) is not int or not 0 <= s < 2 ** 40:
                raise WireProtocol("malformed array shape")
            size *= s
        index = value["__nd__"]
        if type(index) is not int or index < 0:
            raise WireProtocol("malformed array index")
        self.index, self.dtype, self.shape, self.nbytes = index, dtype, tuple(shape), size

    def array(self, blobs: list) -> np.ndarray:
        if self.index >= len(blobs) or len(blobs[self.index]) != self.nbytes:
            raise WireProtocol("array size does not match its shape")
        return np.frombuffer(blobs[self.index], dtype=self.dtype).reshape(self.shape).copy()


def _plan(value: Any, depth: int = 0) -> Any:
    """A parsed header with its array placeholders checked and made :class:`_Slot`."""
    if depth > MAX_DEPTH:
        raise WireProtocol(f"header nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind is dict:
        if "__nd__" in value:
            return _Slot(value)
        return {k: v if type(v) not in _CONTAINERS else _plan(v, depth + 1)
                for k, v in value.items()}
    if kind is list:
        return [v if type(v) not in _CONTAINERS else _plan(v, depth + 1) for v in value]
    return value


def _build(plan: Any, blobs: list) -> Any:
    """The message a :func:`_plan` describes, its arrays copied out of ``blobs``
    (new containers every time: a plan is never handed out)."""
    kind = type(plan)
    if kind is _Slot:
        return plan.array(blobs)
    if kind is dict:
        return {k: v if type(v) in _SCALARS else _build(v, blobs) for k, v in plan.items()}
    if kind is list:
        return [v if type(v) in _SCALARS else _build(v, blobs) for v in plan]
    return plan


# The judge's loops repeat a few headers (the same call on the same shapes): each header
# text is parsed and checked once. The worker chooses the texts, so the cache is bounded.
_PLANS: dict[bytes, Any] = {}
PLAN_CACHE = 64                    # headers kept (each at most CACHED_HEADER bytes)
CACHED_HEADER = 4096


def _header_plan(text: bytes) -> Any:
    plan = _PLANS.get(text)
    if plan is None:
        _check_header(text)
        chars = text.decode()
        header, end = _SCAN(chars, 0)
        if end != len(chars):
            raise WireProtocol("trailing bytes after the header")
        plan = _plan(header)
        if len(text) <= CACHED_HEADER:
            if len(_PLANS) >= PLAN_CACHE:
                _PLANS.clear()
            _PLANS[text] = plan
    return plan


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _check_header(text: bytes) -> None:
    """Refuse a header nested too deeply or holding too many values before
    json parses it (a cheap scan; strings may over-count, never under)."""
    if text.count(b",") + 1 > MAX_VALUES:
        raise WireProtocol(f"header holds more than {MAX_VALUES} values")
    marks = text.translate(None, _NOT_BRACKETS)
    if len(marks) <= MAX_DEPTH:                       # cannot nest deeper than its brackets
        return
    depth = 0
    for b in marks:
        if b in (0x5B, 0x7B):                          # [ {
            depth += 1
            if depth > MAX_DEPTH:
                raise WireProtocol(f"header nested deeper than {MAX_DEPTH} levels")
        else:
            depth -= 1


def frame(message: Any) -> bytes:
    """``message`` as the bytes that go on the pipe: the length, then the frame."""
    blobs: list = []
    header = _JSON(_encode_value(message, blobs)).encode()
    parts = [b"", _LEN.pack(len(header)), header, _LEN.pack(len(blobs))]
    size = 16 + len(header)
    for b in blobs:
        n = b.nbytes if type(b) is np.ndarray else len(b)
        parts += [_LEN.pack(n), b]
        size += 8 + n
    parts[0] = _LEN.pack(size)
    return b"".join(parts)


def encode(message: Any) -> bytes:
    """Serialise ``message`` into one frame (without the length prefix)."""
    return frame(message)[8:]


def decode(frame) -> Any:
    """Inverse of :func:`encode`; raises :class:`WireProtocol` on malformed
    or oversized data. ``frame``: bytes, bytearray or memoryview."""
    try:
        view = memoryview(frame)
        pos = 0
        (n,) = _LEN.unpack_from(view, pos); pos += 8
        if n > MAX_HEADER or pos + n > len(view):
            raise WireProtocol(f"header of {n} bytes (limit {MAX_HEADER})")
        plan = _header_plan(bytes(view[pos:pos + n])); pos += n
        (count,) = _LEN.unpack_from(view, pos); pos += 8
        if count > MAX_ARRAYS:
            raise WireProtocol(f"{count} arrays in one frame (limit {MAX_ARRAYS})")
        blobs = []
        for _ in range(count):
            (m,) = _LEN.unpack_from(view, pos); pos += 8
            if pos + m > len(view):
                raise WireProtocol("array runs past the end of the frame")
            blobs.append(view[pos:pos + m]); pos += m
        if pos != len(view):
            raise WireProtocol("trailing bytes in frame")
        return _build(plan, blobs)
    except WireError:
        raise
    except Exception as e:  # malformed JSON, short buffer, bad dtype, too deep ...
        raise WireProtocol(f"malformed frame: {type(e).__name__}: {str(e)[:200]}") from None


def _poller(fd: int, events: int):
    poller = select.poll()
    poller.register(fd, events)
    return poller


def _ready(poller, deadline: float) -> bool:
    """Whether ``poller``'s fd became ready before ``deadline``."""
    timeout = deadline - time.monotonic()
    return timeout > 0 and bool(poller.poll(math.ceil(timeout * 1000)))


def _write(fd: int, data: memoryview, deadline: float | None, poller=None) -> None:
    while data:
        if deadline is not None:
            poller = poller or _poller(fd, select.POLLOUT)
            if not _ready(poller, deadline):
                raise WireTimeout("the other side stopped reading before the deadline")
        try:
            n = os.write(fd, data[:1 << 16])
        except BlockingIOError:
            n = 0
        except BrokenPipeError:
            raise WireClosed("the other side closed the pipe") from None
        data = data[n:]


def send(fd: int, message: Any, deadline: float | None = None) -> None:
    """Write one frame. With a ``deadline`` (a ``time.monotonic()`` instant;
    ``fd`` should then be non-blocking), a reader that stops reading raises
    :class:`WireTimeout` instead of blocking forever: each write waits for
    the pipe to take data (a pipe the reader shrank and stopped emptying
    never does)."""
    _write(fd, memoryview(frame(message)), deadline)


class Writer:
    """:func:`send` on one pipe, its poll object made once."""

    def __init__(self, fd: int):
        self.fd = fd
        self._poller = _poller(fd, select.POLLOUT)

    def send(self, message: Any, deadline: float | None = None) -> None:
        _write(self.fd, memoryview(frame(message)), deadline, self._poller)


def _read_into(fd: int, buf: memoryview, deadline: float | None) -> None:
    pos = 0
    while pos < len(buf):
        if deadline is not None and not _ready(_poller(fd, select.POLLIN), deadline):
            raise WireTimeout("no answer before the deadline")
        try:
            n = os.readv(fd, [buf[pos:pos + (1 << 20)]])
        except BlockingIOError:
            continue
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            raise WireClosed(f"reading the pipe failed: {e}") from None
        if not n:
            raise WireClosed("the other side closed the pipe")
        pos += n


def receive(fd: int, deadline: float | None = None) -> Any:
    """Read one frame; ``deadline`` is a ``time.monotonic()`` instant. The
    length is checked before anything is allocated."""
    head = bytearray(8)
    _read_into(fd, memoryview(head), deadline)
    (n,) = _LEN.unpack(head)
    if n > MAX_FRAME:
        raise WireProtocol(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte limit")
    buf = bytearray(n)
    _read_into(fd, memoryview(buf), deadline)
    return decode(buf)




STANDING = 1 << 20     # bytes of a Reader's buffer: every real frame fits (largest 0.24 MB)


class Reader:
    """Frames from one pipe through one standing buffer, allocated once: per
    frame one wait (with a deadline) and usually one read, which may also
    take in the start of the next frame (kept for the next call). A frame
    longer than the buffer (no real one is) gets a buffer of its own, once
    its length passed ``MAX_FRAME``: the reader's memory stays within
    ``STANDING + MAX_FRAME`` whatever the other side sends."""

    def __init__(self, fd: int, size: int = STANDING):
        self.fd = fd
        self.buf = bytearray(size)
        self.view = memoryview(self.buf)
        self.start = self.end = 0                     # the unread bytes: buf[start:end]
        self._poller = _poller(fd, select.POLLIN)

    def _read(self, into: memoryview, deadline: float | None) -> int:
        """One read into ``into`` (after waiting for data when ``deadline``)."""
        while True:
            if deadline is not None and not _ready(self._poller, deadline):
                raise WireTimeout("no answer before the deadline")
            try:
                n = os.readv(self.fd, [into])
            except BlockingIOError:
                continue
            except OSError as e:
                raise WireClosed(f"reading the pipe failed: {e}") from None
            if not n:
                raise WireClosed("the other side closed the pipe")
            return n

    def _fill(self, count: int, deadline: float | None) -> None:
        """At least ``count`` (<= the buffer's size) unread bytes in the buffer."""
        if self.start + count > len(self.buf):        # move the unread bytes to the front
            kept = self.end - self.start
            self.buf[:kept] = self.view[self.start:self.end]
            self.start, self.end = 0, kept
        while self.end - self.start < count:
            self.end += self._read(self.view[self.end:], deadline)

    def receive(self, deadline: float | None = None) -> Any:
        """The next frame, decoded (arrays copied out of the buffer); ``deadline``
        is a ``time.monotonic()`` instant. The length is checked first."""
        self._fill(8, deadline)
        (n,) = _LEN.unpack_from(self.buf, self.start)
        if n > MAX_FRAME:
            raise WireProtocol(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte limit")
        if 8 + n <= len(self.buf):
            self._fill(8 + n, deadline)
            body = self.view[self.start + 8:self.start + 8 + n]
            self.start += 8 + n
            if self.start == self.end:
                self.start = self.end = 0
            return decode(body)
        own = bytearray(n)
        have = self.end - self.start - 8
        own[:have] = self.view[self.start + 8:self.end]
        self.start = self.end = 0
        view = memoryview(own)
        while have < n:
            have += self._read(view[have:have + (1 << 20)], deadline)
        return decode(own)
