"""The probe wire format: length-prefixed frames holding a JSON header and
raw numeric arrays. No pickle anywhere: only JSON scalars, lists, dicts and
arrays of bool / int / float dtypes cross the boundary."""
from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from typing import Any

import numpy as np

MAX_FRAME = 256 * 1024 * 1024          # bytes; larger answers are refused
ALLOWED_KINDS = "biuf"                 # bool, signed/unsigned int, float
_LEN = struct.Struct("<Q")


class WireError(RuntimeError):
    """The peer broke the protocol, closed the pipe or timed out."""


class WireTimeout(WireError):
    pass


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


def _decode_value(value: Any, blobs: list[bytes]) -> Any:
    if isinstance(value, dict) and "__nd__" in value:
        dtype = _dtype(value["dtype"])
        shape = tuple(int(s) for s in value["shape"])
        blob = blobs[int(value["__nd__"])]
        if math.prod(shape) * dtype.itemsize != len(blob):
            raise WireError("array size does not match its shape")
        return np.frombuffer(blob, dtype=dtype).reshape(shape).copy()
    if isinstance(value, list):
        return [_decode_value(v, blobs) for v in value]
    if isinstance(value, dict):
        return {k: _decode_value(v, blobs) for k, v in value.items()}
    return value


def encode(message: Any) -> bytes:
    """Serialise ``message`` into one frame (without the length prefix)."""
    blobs: list[bytes] = []
    header = json.dumps(_encode_value(message, blobs), allow_nan=True).encode()
    parts = [_LEN.pack(len(header)), header, _LEN.pack(len(blobs))]
    for b in blobs:
        parts += [_LEN.pack(len(b)), b]
    return b"".join(parts)


def decode(frame: bytes) -> Any:
    """Inverse of :func:`encode`; raises :class:`WireError` on malformed data."""
    try:
        pos = 0
        (n,) = _LEN.unpack_from(frame, pos); pos += 8
        header = json.loads(frame[pos:pos + n]); pos += n
        (count,) = _LEN.unpack_from(frame, pos); pos += 8
        blobs = []
        for _ in range(count):
            (m,) = _LEN.unpack_from(frame, pos); pos += 8
            blobs.append(frame[pos:pos + m]); pos += m
        if pos != len(frame):
            raise WireError("trailing bytes in frame")
        return _decode_value(header, blobs)
    except WireError:
        raise
    except Exception as e:  # malformed JSON, short buffer, bad dtype ...
        raise WireError(f"malformed frame: {e}") from None


def send(fd: int, message: Any) -> None:
    frame = encode(message)
    data = memoryview(_LEN.pack(len(frame)) + frame)
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, remaining = [], n
    while remaining:
        if deadline is not None:
            timeout = deadline - time.monotonic()
            if timeout <= 0 or not select.select([fd], [], [], timeout)[0]:
                raise WireTimeout("no answer before the deadline")
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise WireError("the other side closed the pipe")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, deadline: float | None = None) -> Any:
    """Read one frame; ``deadline`` is a ``time.monotonic()`` instant."""
    (n,) = _LEN.unpack(_read_exact(fd, 8, deadline))
    if n > MAX_FRAME:
        raise WireError(f"frame of {n} bytes exceeds the {MAX_FRAME}-byte limit")
    return decode(_read_exact(fd, n, deadline))
