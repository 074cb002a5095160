"""The probe worker: the only process that imports a student's code.

Run as a script (``python worker.py --fd-in R --fd-out W [--landlock]
[--seccomp]``, in the submission's sandbox directory as its working
directory: no path of a submission appears in a command line) so that it
needs nothing but this file, ``wire.py``, ``syscalls.py``, ``fspolicy.py``,
``landlock.py`` and the runtime beside it. Before it reads a request (so
before any of the submission's code runs) it opens what it needs (its log,
numpy), enforces the file-system allowlist (``--landlock``: sandboxed
gradings on a kernel with Landlock), installs the syscall allowlist
(``--seccomp``) and sends one frame, ``{"ready": true}``, or ``{"fault":
text}`` and exits when it could not set itself up: the judge then knows the
fault is the autograder's. Then
it answers one request at a time: call function ``fn`` of module ``module``
with the given arguments and send back plain data (or the exception's type
and message), or (``op`` "calls") a batch of such calls in order, a call's
argument possibly an earlier answer of the same batch (:func:`fed`),
stopping at the first that raises. It reports nothing else; the judge
decides what the answers mean. ``--self-test`` sets up as for grading,
imports what grading needs and exits 0 (the sandbox tries each interpreter
with it).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")   # before numpy loads (wire.py): no BLAS thread pool, so
                                        # the worker has one thread when Landlock binds it
try:
    from . import fspolicy, syscalls, wire
except ImportError:           # run as a script from a copied-out directory
    import fspolicy  # type: ignore[no-redef]
    import syscalls  # type: ignore[no-redef]
    import wire  # type: ignore[no-redef]

MAX_MESSAGE = 2000            # characters of an exception message sent back
MAX_STRING = 200              # characters of a string in a returned value (a name, a label)
SETUP_FAILED = 126            # exit status after a {"fault": ...} frame


def to_plain(value):
    """Convert a student's return value to wire data: arrays of bool/int/float,
    possibly inside tuples, lists and dicts (e.g. network parameters), short
    strings (a name the judge checks against its list: at most MAX_STRING
    characters, the rest cut), or None. Anything else raises TypeError."""
    import numpy as np
    if value is None:
        return None
    if isinstance(value, str):
        return value[:MAX_STRING]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, list):
        try:
            arr = np.asarray(value)
        except ValueError:                       # ragged: a list of structures
            arr = None
        if arr is None or arr.dtype.kind not in wire.ALLOWED_KINDS:
            return [to_plain(v) for v in value]
        return arr
    arr = np.asarray(value)
    if arr.dtype.kind not in wire.ALLOWED_KINDS:
        raise TypeError(f"returned a value of type {type(value).__name__} "
                        f"(as an array: dtype {arr.dtype}); expected numbers")
    return arr


def to_constant(value):
    """A module-level constant (``STUDENT_ID``, a written answer) as a str (at
    most 20000 characters), int,
    float or None; anything else becomes None."""
    if isinstance(value, str):
        return value[:20000]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def digest(value) -> str:
    """A digest of an argument's contents (arrays by shape, dtype and bytes), to
    tell whether a call modified it."""
    import hashlib
    import numpy as np
    h = hashlib.blake2b(digest_size=16)

    def feed(v):
        if isinstance(v, np.ndarray):
            h.update(f"a{v.dtype.str}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif isinstance(v, (list, tuple)):
            h.update(b"[")
            for x in v:
                feed(x)
            h.update(b"]")
        elif isinstance(v, dict):
            h.update(b"{")
            for k in sorted(v, key=str):
                h.update(str(k).encode())
                feed(v[k])
            h.update(b"}")
        else:
            h.update(repr(v).encode())
    feed(value)
    return h.hexdigest()


def snapshot(value):
    """The contents of an argument as a comparable value (arrays by dtype,
    shape and bytes), to tell whether a call modified it: as :func:`digest`
    tells, without hashing."""
    import numpy as np
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (list, tuple)):
        return ("[",) + tuple(snapshot(x) for x in value)
    if isinstance(value, dict):
        return ("{",) + tuple((str(k), snapshot(value[k])) for k in sorted(value, key=str))
    return repr(value)


def call_and_watch(fn, args: list) -> tuple:
    """``fn(*args)`` as plain data, and the indices of the arguments it modified."""
    before = [snapshot(a) for a in args]
    value = to_plain(fn(*args))
    return value, [i for i, (a, s) in enumerate(zip(args, before)) if snapshot(a) != s]


def fed(value):
    """An answer of a batched call as a later call of the batch receives it:
    a float64 copy, what the judge's ``as_float_array`` hands on for a valid
    answer (the judge validates the answer itself before it reads the later
    call's); anything but an array of numbers raises TypeError."""
    import numpy as np
    if not isinstance(value, np.ndarray) or value.dtype.kind not in wire.ALLOWED_KINDS:
        raise TypeError("an earlier call of this batch did not return an array of numbers")
    return value.astype(np.float64)


def plain_copy(value):
    """``value`` (plain data) with its arrays copied: an answer kept while
    later calls of its batch run, which may modify what it shares."""
    import numpy as np
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [plain_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_copy(v) for k, v in value.items()}
    return value


def function_of(module, fn: str):
    """The function ``fn`` of ``module``, or None: a plain name, or one module
    deep (``"helpers.step"``: the function of the module ``module``
    imported as ``helpers``, the one its own code calls)."""
    owner, _, name = fn.rpartition(".")
    if owner:
        module = getattr(module, owner, None) if "." not in owner else None
        if not isinstance(module, type(os)):
            return None
    func = getattr(module, name, None)
    return func if callable(func) else None


def run_calls(function, calls: list, out: dict) -> None:
    """A batch (``[{"fn", "args", "feed": [[argument, earlier call], ...]}]``)
    in order: each call's answer and modified arguments appended to
    ``out["ok"]`` and ``out["modified"]``; the first call that raises stops
    the batch (its exception propagates, ``out`` keeps the answers before
    it). ``function(name)`` returns the callable or raises."""
    for call in calls:
        args = list(call["args"])
        for i, j in call.get("feed", ()):
            if not 0 <= j < len(out["ok"]):
                raise ValueError("a batched call was fed the answer of a call not made before it")
            args[i] = fed(out["ok"][j])
        value, changed = call_and_watch(function(call["fn"]), args)
        out["ok"].append(plain_copy(value))
        out["modified"].append(changed)


def describe_exception(exc: BaseException, sandbox: str) -> dict:
    """Type, message and the innermost frame inside the submission."""
    where, message = "", str(exc)
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(sandbox):
            where = f"{os.path.basename(frame.filename)}, line {frame.lineno}: {frame.line}"
    if isinstance(exc, SyntaxError) and str(exc.filename or "").startswith(sandbox):
        # the line as written (its quotes and brackets), not only its number
        where = f"{os.path.basename(exc.filename)}, line {exc.lineno}: " + \
            str(exc.text or "").strip()
        message = str(exc.msg)
    return {"type": type(exc).__name__, "message": message[:MAX_MESSAGE], "where": where,
            "types": [c.__name__ for c in type(exc).__mro__][:20]}


def serve(fd_in: int, fd_out: int, sandbox: str) -> None:
    modules = {}
    reader = wire.Reader(fd_in)
    while True:
        try:
            request = reader.receive()
        except wire.WireError:
            return                                   # judge went away
        batch = None
        try:
            name = request["module"]
            if name not in modules:
                modules[name] = importlib.import_module(name)

            def function(fn, module=modules[name], name=name):
                func = function_of(module, fn)
                if func is None:
                    raise AttributeError(f"{name}.py defines no function {fn}()")
                return func
            if request.get("op") == "import":
                reply = {"ok": None}
            elif request.get("op") == "constant":
                reply = {"ok": to_constant(getattr(modules[name], request["name"], None))}
            elif request.get("op") == "calls":
                batch = {"ok": [], "modified": []}
                run_calls(function, request["calls"], batch)
                reply = batch
            else:
                value, modified = call_and_watch(function(request["fn"]), request["args"])
                reply = {"ok": value, "modified": modified}
        except BaseException as exc:                 # noqa: BLE001 - report everything
            if isinstance(exc, KeyboardInterrupt):
                raise
            reply = dict(batch or {}, error=describe_exception(exc, sandbox))
        try:
            wire.send(fd_out, reply)
        except TypeError as exc:                     # unsendable value slipped through
            wire.send(fd_out, {"error": {"type": "TypeError", "message": str(exc), "where": ""}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd-in", type=int)
    parser.add_argument("--fd-out", type=int)
    parser.add_argument("--landlock", action="store_true")
    parser.add_argument("--seccomp", action="store_true")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    fault = ""
    sandbox = os.path.realpath(os.getcwd())
    here = os.path.dirname(os.path.realpath(__file__))     # wire.py and rlkit/
    if not args.self_test:
        # The student's prints go to a log file, never into the protocol pipe.
        log = os.open(os.path.join(sandbox, ".worker-output.txt"),
                      os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
    if args.landlock:
        # The file system (fspolicy.py): read the interpreter, the runtime and the submission,
        # write the home, nothing else. First, while the worker has one thread (OpenBLAS may
        # start more): Landlock binds the calling thread and its later children only.
        try:
            fspolicy.enforce(sandbox, os.environ.get("HOME", ""), here)
        except Exception as exc:                     # noqa: BLE001 - reported, then exit
            fault = ("the file-system allowlist could not be enforced: "
                     f"{type(exc).__name__}: {exc}")
    if args.seccomp and not fault:
        try:
            syscalls.install()
        except Exception as exc:                     # noqa: BLE001 - reported, then exit
            fault = f"the syscall filter could not be installed: {type(exc).__name__}: {exc}"
    # libc by soname: no ldconfig or gcc to run, which the filter refuses, and no temporary file
    # (find_library's gcc probe makes one), where only the home may be written
    syscalls.answer_known_libraries()
    if args.landlock and os.environ.get("HOME"):
        os.environ.setdefault("TMPDIR", os.environ["HOME"])
    try:                      # what every worker needs (under the allowlists, as the
        import numpy  # noqa: F401                  # submission's own imports will be)
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass
    if args.self_test:
        import numpy, rlkit  # noqa: F401,E401
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
        sys.exit(SETUP_FAILED if fault else 0)
    sys.path[:] = [sandbox, here] + [p for p in sys.path if p not in ("", here)]
    wire.send(args.fd_out, {"fault": fault} if fault else {"ready": True})
    if fault:
        sys.exit(SETUP_FAILED)
    serve(args.fd_in, args.fd_out, sandbox)


if __name__ == "__main__":
    main()
