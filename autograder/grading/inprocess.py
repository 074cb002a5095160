"""The fast tier: a submission's functions called in this process, with the
worker's protocol replaced by a direct call.

:class:`LocalSession` stands where ``harness.probe.ProbeSession`` stands in
``grade``: the same methods (``import_module``, ``constant``, ``call``,
``call_many``, ``output_tail``), the same exceptions, and the same data on
the way back (every answer goes through the wire's encoding and decoding,
so that the judge receives exactly what a worker would send: lists for
tuples, 0-d arrays for numbers, strings cut at 200 characters). What it does
not give is any isolation: no uid, no limits, no namespace, no time-out.

Long computations the judge marks (``Context.memoised``: capstone B's
runs of a student's experiment) may be shared between gradings of the same
code when a test session switches :data:`RUN_MEMO` on; a real grading
never reaches this module.

It is for **trusted** code only: the catalogue's mistake classes and correct
styles (``tests/test_catalogues.py``), whose judge logic it runs in a
fraction of the time. Hostile submissions, time-outs, crashes and every
protocol path are graded through the sandbox (``harness``), never here.
"""
from __future__ import annotations

import ast
import copy
import hashlib
import importlib
import io
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from ..harness import wire
from ..harness.probe import Answers, ProbeRaised, _check_modified, _checked
from ..harness.worker import (call_and_watch, describe_exception, function_of, run_calls,
                              to_constant)


# The memo of ``Context.memoised`` computations (None: off). A test session sets a dict; its
# keys are (the code's identity, the judge's key), its values deep-copied in and out.
RUN_MEMO: Optional[dict] = None


def code_identity(directory: str, ignore: tuple = ()) -> str:
    """sha256 of the ``.py`` files in ``directory`` (names and texts), each
    without its top-level assignments to the names in ``ignore``."""
    h = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.py")):
        text = path.read_text(errors="replace")
        if ignore:
            try:
                body = ast.parse(text).body
            except SyntaxError:
                body = []
            drop: set[int] = set()
            for node in body:
                targets = node.targets if isinstance(node, ast.Assign) else \
                    [node.target] if isinstance(node, ast.AnnAssign) else []
                if any(isinstance(t, ast.Name) and t.id in ignore for t in targets):
                    drop.update(range(node.lineno - 1, node.end_lineno))
            text = "\n".join(line for i, line in enumerate(text.split("\n")) if i not in drop)
        h.update(path.name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def _round_trip(value: Any) -> Any:
    """``value`` as a worker would send it (plain data through the wire)."""
    return wire.decode(wire.encode({"ok": value}))["ok"]


class LocalSession:
    """One question's "worker", in this process: the submission module
    imported from ``directory`` under its own name, fresh for each session
    (earlier imports of the submission's modules are forgotten first)."""

    def __init__(self, directory: Path, module: str, *args: Any, **kwargs: Any):
        self.directory = str(Path(directory).resolve())
        self.module_name = module
        self.module = None
        self.calls = 0
        self.usage: dict = {}
        self._out = io.StringIO()

    def _forget(self) -> None:
        """Drop every module loaded from the submission's folder (and one of the
        submission's names), so that this session imports its own copy."""
        names = {f[:-3] for f in os.listdir(self.directory) if f.endswith(".py")}
        for name, mod in list(sys.modules.items()):
            path = getattr(mod, "__file__", None) or ""
            if name in names or (path and os.path.dirname(os.path.realpath(path))
                                 == self.directory):
                del sys.modules[name]

    def _run(self, fn, *args):
        with redirect_stdout(self._out), redirect_stderr(self._out):
            return fn(*args)

    def import_module(self) -> None:
        self._forget()
        sys.path.insert(0, self.directory)
        try:
            self.module = self._run(importlib.import_module, self.module_name)
        except Exception as exc:  # noqa: BLE001 - the submission's
            raise ProbeRaised(f"import {self.module_name}",
                              describe_exception(exc, self.directory)) from None
        finally:
            sys.path.remove(self.directory)

    def _function(self, fn: str):
        func = function_of(self.module, fn)
        if func is None:
            raise AttributeError(f"{self.module_name}.py defines no function {fn}()")
        return func

    def constant(self, name: str) -> Any:
        return _round_trip(to_constant(getattr(self.module, name, None)))

    def call(self, fn: str, *args: Any, may_modify: tuple = ()) -> Any:
        self.calls += 1
        try:
            value, modified = self._run(call_and_watch, self._function(fn),
                                        list(copy.deepcopy(_round_trip(list(args)))))
        except Exception as exc:  # noqa: BLE001 - the submission's
            raise ProbeRaised(fn, describe_exception(exc, self.directory)) from None
        _check_modified(fn, modified, may_modify)
        return _round_trip(value)

    def call_many(self, calls: Sequence) -> Answers:
        calls = _checked(calls)
        self.calls += 1
        out = {"ok": [], "modified": []}
        requests = _round_trip([c.request() for c in calls])
        try:
            self._run(run_calls, self._function, requests, out)
        except Exception as exc:  # noqa: BLE001 - the submission's
            fn = calls[len(out["ok"])].fn
            return Answers(calls, _round_trip(out["ok"]), out["modified"],
                           ProbeRaised(fn, describe_exception(exc, self.directory)))
        return Answers(calls, _round_trip(out["ok"]), out["modified"], None)

    def memo(self, key: tuple, compute: Callable[[], Any], ignore: tuple = ()) -> Any:
        """``compute()``, or its value from an earlier grading of the same code
        (up to the constants ``ignore``) while :data:`RUN_MEMO` is on."""
        if RUN_MEMO is None:
            return compute()
        full = (code_identity(self.directory, ignore), key)
        if full not in RUN_MEMO:
            RUN_MEMO[full] = copy.deepcopy(compute())
        return copy.deepcopy(RUN_MEMO[full])

    def output_tail(self, limit: int = 1500) -> str:
        return self._out.getvalue()[-limit:]

    def close(self) -> None:
        self._forget()

    def __enter__(self) -> "LocalSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
