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
nested brackets): 37-57 MB. A frame is read into one
preallocated buffer and arrays are decoded from views of it, so the judge's
memory stays within about twice ``MAX_FRAME`` whatever the worker sends.
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


def _encode_value(value: Any, blobs: list[bytes]) -> Any:
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype.kind not in ALLOWED_KINDS:
            raise TypeError(f"cannot send an array of dtype {arr.dtype}")
        blobs.append(arr.tobytes())
        return {"__nd__": len(blobs) - 1, "dtype": arr.dtype.str, "shape": list(arr.shape)}
    if isinstance(value, (list, tuple)):
        return [_encode_value(v, blobs) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode_value(v, blobs) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot send a value of type {type(value).__name__}")


_DTYPES: dict[str, np.dtype] = {}


def _dtype(text: str) -> np.dtype:
    dtype = _DTYPES.get(text)
    if dtype is None:
        dtype = np.dtype(text)
        if dtype.kind not in ALLOWED_KINDS or dtype.hasobject:
            raise WireError(f"refusing array of dtype {dtype}")
        _DTYPES[text] = dtype
    return dtype


def _decode_value(value: Any, blobs: list, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise WireProtocol(f"header nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict) and "__nd__" in value:
        dtype = _dtype(value["dtype"])
        shape = value["shape"]
        if not isinstance(shape, list) or len(shape) > MAX_NDIM or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2 ** 40
                for s in shape):
            raise WireProtocol("malformed array shape")
        blob = blobs[int(value["__nd__"])]
        if math.prod(shape) * dtype.itemsize != len(blob):
            raise WireProtocol("array size does not match its shape")
        return np.frombuffer(blob, dtype=dtype).reshape(tuple(shape)).copy()
    if isinstance(value, list):
        return [_decode_value(v, blobs, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k: _decode_value(v, blobs, depth + 1) for k, v in value.items()}
    return value


def _check_header(text: bytes) -> None:
    """Refuse a header nested too deeply or holding too many values before
    json parses it (a cheap scan; strings may over-count, never under)."""
    depth = deepest = 0
    values = 1
    for b in text:
        if b in (0x5B, 0x7B):                 # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif b in (0x5D, 0x7D):
            depth -= 1
        elif b == 0x2C:                       # ,
            values += 1
    if deepest > MAX_DEPTH:
        raise WireProtocol(f"header nested deeper than {MAX_DEPTH} levels")
    if values > MAX_VALUES:
        raise WireProtocol(f"header holds more than {MAX_VALUES} values")


def encode(message: Any) -> bytes:
    """Serialise ``message`` into one frame (without the length prefix)."""
    blobs: list[bytes] = []
    header = json.dumps(_encode_value(message, blobs), allow_nan=True).encode()
    parts = [_LEN.pack(len(header)), header, _LEN.pack(len(blobs))]
    for b in blobs:
        parts += [_LEN.pack(len(b)), b]
    return b"".join(parts)


def decode(frame) -> Any:
    """Inverse of :func:`encode`; raises :class:`WireProtocol` on malformed
    or oversized data. ``frame``: bytes, bytearray or memoryview."""
    try:
        view = memoryview(frame)
        pos = 0
        (n,) = _LEN.unpack_from(view, pos); pos += 8
        if n > MAX_HEADER or pos + n > len(view):
            raise WireProtocol(f"header of {n} bytes (limit {MAX_HEADER})")
        text = bytes(view[pos:pos + n]); pos += n
        _check_header(text)
        header = json.loads(text)
        del text
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
        return _decode_value(header, blobs)
    except WireError:
        raise
    except Exception as e:  # malformed JSON, short buffer, bad dtype, too deep ...
        raise WireProtocol(f"malformed frame: {type(e).__name__}: {str(e)[:200]}") from None


def send(fd: int, message: Any, deadline: float | None = None) -> None:
    """Write one frame. With a ``deadline`` (a ``time.monotonic()`` instant;
    ``fd`` should then be non-blocking), a reader that stops reading raises
    :class:`WireTimeout` instead of blocking forever."""
    frame = encode(message)
    data = memoryview(_LEN.pack(len(frame)) + frame)
    while data:
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([], [fd], [], timeout)[1]:
                raise WireTimeout("the other side stopped reading before the deadline")
        try:
            n = os.write(fd, data[:1 << 16])
        except BlockingIOError:
            continue
        except BrokenPipeError:
            raise WireClosed("the other side closed the pipe") from None
        data = data[n:]


def _read_into(fd: int, buf: memoryview, deadline: float | None) -> None:
    pos = 0
    while pos < len(buf):
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([fd], [], [], timeout)[0]:
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


