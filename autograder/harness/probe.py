"""Judge-side access to a submission's functions.

:class:`ProbeSession` runs them in a separate worker process (grading that
counts); :class:`InProcessCaller` calls an already-imported module directly
(the notebook's public checks, and recording the reference's answers).
Both expose ``call(fn, *args)`` and ``call_many(calls)`` (a batch: several
calls in one round trip, e.g. A's minibatch) and raise the same exceptions,
so a check is written once.
"""
from __future__ import annotations

import copy
import os
import signal
import subprocess
import time
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, Sequence

from . import wire
from .fspolicy import QUOTA_FILES, QUOTA_MB
from .limits import Limits
from .sandbox import Sandbox
from .worker import (MAX_MESSAGE, call_and_watch, describe_exception, fed, function_of,
                     run_calls, to_constant)



class ProbeError(Exception):
    """A probe gave no usable answer; ``str(e)`` is student-facing feedback."""


class ProbeRaised(ProbeError):
    """The student's function raised; the worker is still alive."""

    def __init__(self, fn: str, info: dict):
        self.fn, self.type, self.message, self.where = fn, str(info.get("type", "?")), \
            str(info.get("message", "")), str(info.get("where", ""))
        types = info.get("types")
        self.types = [str(x) for x in types][:20] if isinstance(types, list) else [self.type]
        where = f" (at {self.where})" if self.where else ""
        if self.type == "NotImplementedError":
            text = f"{fn}() is not implemented yet (it raised NotImplementedError{where})"
        else:
            text = f"{fn}() raised {self.type}: {self.message}{where}"
        super().__init__(text)


    def is_a(self, name: str) -> bool:
        """``isinstance`` by class name: the exception or one of its bases is ``name``."""
        return name in self.types


MODIFIED = "ModifiedItsInput"     # ProbeRaised.type of a call that changed its arguments


def _check_modified(fn: str, modified: Any, may_modify: tuple) -> None:
    if not isinstance(modified, list):
        return
    bad = [int(i) for i in modified if isinstance(i, int) and i not in may_modify]
    if bad:
        which = ", ".join(f"argument {i + 1}" for i in bad)
        raise ProbeRaised(fn, {"type": MODIFIED, "message": f"{fn}() changed its input ({which}) "
                               "in place; graded functions must leave their inputs unchanged "
                               "(work on a copy)"})


# How a worker can end a question: these words are also question statuses
# (``grading.status.Status``), one vocabulary from the pipe to the CSV. WORKER_FAULT: the
# worker could not be set up (before any code of the submission ran): the autograder's fault.
TIMED_OUT, CRASHED, PROTOCOL_ERROR = "timed_out", "crashed", "protocol_error"
WORKER_FAULT = "autograder_fault"


class ProbeFatal(ProbeError):
    """The worker died, hung or broke the protocol: the question is over.
    ``kind``: TIMED_OUT (CPU budget, memory or file quota of its tree, or the
    wall clock), CRASHED (signal or exit), PROTOCOL_ERROR (a malformed or
    oversized answer, or a worker that stops reading or answering) or
    WORKER_FAULT (the sandbox or the worker could not start)."""

    def __init__(self, message: str, kind: str = CRASHED):
        super().__init__(message)
        self.kind = kind


class Result(NamedTuple):
    """An argument of a batched call: the answer of call ``index`` of the same
    batch (an earlier one), as a float64 array (``worker.fed``)."""
    index: int


class Call(NamedTuple):
    """One call of a batch: ``fn(*args)``; an argument may be a :class:`Result`.
    ``may_modify``: indices of arguments it may change (see ``call``);
    ``answer``: the spec its answer must meet (``grading.gate``; the judge's
    side reads it, the worker never sees it)."""
    fn: str
    args: tuple
    may_modify: tuple = ()
    answer: Any = None

    def request(self) -> dict:
        """The call as the worker reads it (``worker.run_calls``)."""
        feed = [[i, a.index] for i, a in enumerate(self.args) if isinstance(a, Result)]
        return {"fn": self.fn, "args": [None if isinstance(a, Result) else a for a in self.args],
                "feed": feed}


class Answers:
    """A batch's answers in call order. Reading the answer of the call that
    raised, or of any call after it, raises that call's :class:`ProbeRaised`;
    reading an answer checks that call's ``may_modify``. A judge that reads
    the answers in order (validating each before the next) so fails exactly
    as it would have calling one by one."""

    def __init__(self, calls: Sequence[Call], values: list, modified: list,
                 error: "ProbeRaised | None"):
        self.calls, self.values, self.modified, self.error = calls, values, modified, error

    def __len__(self) -> int:
        return len(self.calls)

    def __getitem__(self, i: int) -> Any:
        if not 0 <= i < len(self.calls):
            raise IndexError(i)
        if i >= len(self.values):
            raise self.error
        _check_modified(self.calls[i].fn, self.modified[i], self.calls[i].may_modify)
        return self.values[i]


def _checked(calls: Sequence[Call]) -> list[Call]:
    """``calls``, each fed only answers of calls before it (else a judge bug)."""
    calls = list(calls)
    for k, c in enumerate(calls):
        if any(isinstance(a, Result) and not 0 <= a.index < k for a in c.args):
            raise ValueError(f"judge bug: batched call {k} ({c.fn}) is fed a later answer")
    return calls


def _batch_name(calls: Sequence[Call]) -> str:
    """A batch as feedback names it: a batch of one function (the K-sweep's
    step) as a call of it, as a single call's feedback names it."""
    if not calls:
        return "an empty batch"
    if all(c.fn == calls[0].fn for c in calls):
        return f"{calls[0].fn}()"
    return f"{calls[0].fn}() and the {len(calls) - 1} call(s) batched with it"


def call_each(call, calls: Sequence[Call]) -> Answers:
    """A batch made with single calls (``call(fn, *args, may_modify=...)``):
    for a caller without ``call_many``."""
    calls, values = _checked(calls), []
    for c in calls:
        try:
            args = [fed(values[a.index]) if isinstance(a, Result) else a for a in c.args]
        except TypeError as e:
            return Answers(calls, values, [None] * len(values),
                           ProbeRaised(c.fn, {"type": "TypeError", "message": str(e)}))
        try:
            values.append(call(c.fn, *args, may_modify=c.may_modify))
        except ProbeRaised as e:
            return Answers(calls, values, [None] * len(values), e)
    return Answers(calls, values, [None] * len(values), None)


class InProcessCaller:
    """Call functions of ``module`` directly, converting results as the worker does."""

    def __init__(self, module: ModuleType):
        self.module = module

    def constant(self, name: str) -> Any:
        return to_constant(getattr(self.module, name, None))

    def call(self, fn: str, *args: Any, may_modify: tuple = ()) -> Any:
        func = function_of(self.module, fn)
        if func is None:
            raise ProbeRaised(fn, {"type": "AttributeError",
                                   "message": f"the module defines no function {fn}()"})
        try:
            # Like the wire, hand over copies: the callee may modify its inputs.
            value, modified = call_and_watch(func, list(copy.deepcopy(args)))
        except Exception as exc:  # noqa: BLE001 - student-facing
            path = os.path.dirname(os.path.realpath(getattr(self.module, "__file__", "") or "."))
            raise ProbeRaised(fn, describe_exception(exc, path)) from None
        _check_modified(fn, modified, may_modify)
        return value

    def call_many(self, calls: Sequence[Call]) -> Answers:
        """The batch ``calls`` in order, as the worker runs it (``worker.run_calls``)."""
        calls, out = _checked(calls), {"ok": [], "modified": []}

        def function(fn: str):
            func = function_of(self.module, fn)
            if func is None:
                raise AttributeError(f"the module defines no function {fn}()")
            return func
        try:
            run_calls(function, [c.request() for c in copy.deepcopy(list(calls))], out)
        except Exception as exc:  # noqa: BLE001 - student-facing
            path = os.path.dirname(os.path.realpath(getattr(self.module, "__file__", "") or "."))
            fn = calls[len(out["ok"])].fn
            return Answers(calls, out["ok"], out["modified"],
                           ProbeRaised(fn, describe_exception(exc, path)))
        return Answers(calls, out["ok"], out["modified"], None)


def worker_env(sandbox: Path) -> dict[str, str]:
    """A scrubbed environment: BLAS single-threaded, HOME in the sandbox's scratch dir; the
    grader's own choice of BLAS kernel and numpy CPU features passed on (a stated numerics,
    instructor/numerics.py, reaches the student's code too)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(sandbox), "MPLCONFIGDIR": str(sandbox),
           "TMPDIR": str(sandbox),
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    for keep in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NPY_DISABLE_CPU_FEATURES"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    return env


class ProbeSession:
    """One worker process serving one question.

    The worker runs with ``sandbox``'s interpreter and uid under ``limits``
    (CPU seconds, memory, file size, processes: the CPU and memory counted
    over its whole tree); ``wall_s`` is the wall-clock backstop for the
    whole session. After :meth:`close`, ``usage`` holds what the tree used
    (``treewatch``'s report: ``cpu_s``, ``peak_mb``, ``files_mb``, ``tasks``).
    """

    def __init__(self, directory: Path, module: str, limits: Limits, wall_s: float,
                 sandbox: Sandbox):
        self.sandbox_dir, self.module = Path(directory), module
        self.sandbox = sandbox
        self.budget_cpu_s = limits.cpu_s
        self.deadline = time.monotonic() + wall_s
        self.calls = 0
        self.usage: dict = {}
        self._ready = self._closed = False
        self._memory_mb = limits.memory_mb
        self._modified: Any = None
        self.log = self.sandbox_dir / ".worker-output.txt"
        sandbox.prepare_log(self.log)
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        try:
            # No path of the submission in the command line: the worker's cwd is its sandbox.
            self.proc = sandbox.popen(
                [sandbox.python, "-E", "-s", "-B", str(sandbox.worker_dir / "worker.py"),
                 "--fd-in", str(req_r), "--fd-out", str(rep_w)] + sandbox.worker_flags(),
                limits, self.sandbox_dir, worker_env(self.sandbox_dir / "home"),
                pass_fds=(req_r, rep_w))
        except BaseException:
            for fd in (req_w, rep_r):
                os.close(fd)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        os.set_blocking(req_w, False)          # sends carry the question's deadline
        os.set_blocking(rep_r, False)          # receives wait (poll) with it
        self.fd_out, self.fd_in = req_w, rep_r
        self._reader, self._writer = wire.Reader(rep_r), wire.Writer(req_w)

    def _request(self, message: dict, fn: str, action: str) -> Any:
        """Send one request; ``action`` names it in feedback ("centred_weight()")."""
        if self.proc.poll() is not None:
            raise ProbeFatal(*self._death_message(action))
        try:
            self._writer.send(message, self.deadline)
        except wire.WireTimeout:
            self.close()
            raise ProbeFatal(f"{action}: protocol error: the worker stopped reading requests "
                             "(its request pipe stayed full until the time limit)", PROTOCOL_ERROR)
        except (wire.WireError, OSError):
            self.close()
            raise ProbeFatal(*self._death_message(action))
        try:
            if not self._ready:
                self._await_ready(action)
            reply = self._reader.receive(self.deadline)
        except wire.WireTimeout:
            self.close()
            raise ProbeFatal(f"{action} did not answer within the time limit of this question "
                             f"(CPU budget {self.budget_cpu_s:.0f} s); is there an infinite loop?",
                             TIMED_OUT)
        except wire.WireProtocol as e:
            self.close()
            raise ProbeFatal(f"{action}: protocol error: the worker's answer was refused "
                             f"({e}); answers must be numbers, arrays or lists of them",
                             PROTOCOL_ERROR)
        except (wire.WireError, OSError):
            self.close()
            raise ProbeFatal(*self._death_message(action))
        self.calls += 1
        if not isinstance(reply, dict) or not ("ok" in reply or "error" in reply):
            self.close()
            raise ProbeFatal(f"{action}: protocol error: malformed answer from the worker",
                             PROTOCOL_ERROR)
        return reply

    @staticmethod
    def _raised(fn: str, error: Any) -> ProbeRaised:
        """The worker's report of an exception, every field capped."""
        error = error if isinstance(error, dict) else {}
        types = error.get("types")
        return ProbeRaised(fn, {"type": str(error.get("type", "?"))[:100],
                                "message": str(error.get("message", ""))[:MAX_MESSAGE],
                                "where": str(error.get("where", ""))[:MAX_MESSAGE],
                                "types": [str(x)[:100] for x in types][:20]
                                if isinstance(types, list) else None})

    def _answer(self, message: dict, fn: str, action: str) -> Any:
        """One request's answer (``ok``), or the exception it raised."""
        reply = self._request(message, fn, action)
        if "error" in reply:
            raise self._raised(fn, reply["error"])
        self._modified = reply.get("modified")
        return reply.get("ok")

    def _await_ready(self, action: str) -> None:
        """The worker's first frame: ``{"ready": true}`` once it set itself up
        (its network filter) and before any code of the submission ran.
        Anything else, or no frame, is the autograder's fault."""
        try:
            first = self._reader.receive(self.deadline)
        except wire.WireError:
            self.close()
            raise ProbeFatal(*self._death_message(action)) from None
        if isinstance(first, dict) and first.get("ready") is True:
            self._ready = True
            return
        self.close()
        fault = first.get("fault") if isinstance(first, dict) else None
        raise ProbeFatal(f"{action}: the worker could not start: "
                         f"{str(fault or 'no ready frame')[:500]}", WORKER_FAULT)

    def _death_message(self, action: str) -> tuple[str, str]:
        """(feedback, kind) for a worker that stopped answering: the tree's
        verdict when the reaper killed it at a limit, else its exit."""
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return (f"{action}: protocol error: the worker closed its pipe but kept running",
                    PROTOCOL_ERROR)
        used = self.proc.report()
        if not self._ready:
            why = used.get("fault") or f"it ended before it was ready (exit code {code})"
            return f"{action}: the worker could not start: {str(why)[:500]}", WORKER_FAULT
        verdict = used.get("verdict")
        if verdict == "cpu" or (not verdict and code in (-signal.SIGXCPU, -signal.SIGKILL)):
            spent = (f"; counted over every process and thread it started: "
                     f"{float(used['cpu_s']):.1f} s" if verdict else "")
            return (f"{action} used up this question's CPU budget of {self.budget_cpu_s:.0f} s "
                    f"(the reference needs a fraction of it{spent})", TIMED_OUT)
        if verdict == "memory":
            return (f"{action} used more than the memory limit of {self._memory_mb} MB "
                    "(counted over every process it started)", TIMED_OUT)
        if verdict == "files":
            where = ("in its home" if self.sandbox.landlock else
                     "in /tmp, /var/tmp, /dev/shm and its home together")
            return (f"{action} wrote more than {QUOTA_MB} MB (or {QUOTA_FILES} files) {where}: "
                    "the file quota", TIMED_OUT)
        if code < 0:
            return f"{action}: your code crashed the Python process (signal {-code})", CRASHED
        return (f"{action}: your code ended the Python process (exit code {code}), "
                "e.g. sys.exit()", CRASHED)

    def import_module(self) -> None:
        """Import the submission module; raises ProbeRaised on import errors."""
        self._answer({"op": "import", "module": self.module}, f"import {self.module}",
                     f"importing {self.module}.py")

    def constant(self, name: str) -> Any:
        """A module-level constant of the submission (str/int/float or None)."""
        return self._answer({"op": "constant", "module": self.module, "name": name}, name,
                            f"reading {name} from {self.module}.py")

    def call(self, fn: str, *args: Any, may_modify: tuple = ()) -> Any:
        """``fn(*args)`` in the worker; a call that modified an argument not in
        ``may_modify`` (indices) raises :class:`ProbeRaised` of type MODIFIED."""
        value = self._answer({"op": "call", "module": self.module, "fn": fn,
                              "args": list(args)}, fn, f"{fn}()")
        _check_modified(fn, self._modified, may_modify)
        return value

    def call_many(self, calls: Sequence[Call]) -> Answers:
        """The batch ``calls`` in one round trip, run in order by the worker,
        which stops at the first call that raises (``worker.run_calls``).
        The reply must hold one answer per call made: one per call, or fewer
        and the exception of the next; else the worker broke the protocol."""
        calls = _checked(calls)
        names = _batch_name(calls)
        reply = self._request({"op": "calls", "module": self.module,
                               "calls": [c.request() for c in calls]},
                              calls[0].fn if calls else "", names)
        values, modified = reply.get("ok"), reply.get("modified")
        raised = "error" in reply
        if values is None and raised:
            values = []
        if not isinstance(values, list) or len(values) > len(calls) - raised or \
                (not raised and len(values) != len(calls)):
            self.close()
            raise ProbeFatal(f"{names}: protocol error: the worker's answer to a batch of "
                             f"{len(calls)} calls was malformed", PROTOCOL_ERROR)
        if not isinstance(modified, list) or len(modified) != len(values):
            modified = [None] * len(values)
        error = self._raised(calls[len(values)].fn, reply["error"]) if raised else None
        return Answers(calls, values, modified, error)

    def output_tail(self, limit: int = 1500) -> str:
        """The last ``limit`` characters the student's code printed."""
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self.fd_out, self.fd_in):
            try:
                os.close(fd)
            except OSError:
                pass
        self.fd_out = self.fd_in = -1
        self.proc.end()                   # the reaper kills the whole tree and reports
        self.usage = self.proc.report()
        # children that left the tree, the uid's files, the scratch home
        self.sandbox.sweep_worker(self.sandbox_dir / "home")

    def __enter__(self) -> "ProbeSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
