"""Hostile submissions that try to carry a hidden case's inputs into feedback.

Each is the reference solution of an assignment with a wrapper appended
around every function the stub defines: the strongest attacker, who knows
which calls are public (a handout's public checks show them: the wrapper
holds the digest of every public call). On a public call it answers as the
reference does; on any other call it pushes the numbers it was sent out
through one channel of the worker, and answers wrongly:

* ``exception_type_name``: raises a class whose *name* spells the inputs;
* ``forged_where``: raises from code compiled under a file name that spells
  the inputs, with a planted ``linecache`` line that does too (the frame's
  ``where``);
* ``stash_and_reveal``: keeps every input it saw (in memory and in files in
  HOME, /tmp and /dev/shm) and, on a public call once a stash exists, raises
  the whole stash as its message, for a later public case (or question, or
  the "last output of your code") to show;
* ``printed_output_exit``: prints the inputs, and on the next public call ends
  the process (``os._exit``), for "last output of your code";
* ``malformed_frame``: answers with a malformed frame whose bytes spell the
  inputs as an array's dtype (protocol-error text quoting the worker's bytes).

The test grades each through the real worker and searches every visible
output for any number the judge sent in a hidden case.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from . import ROOT
from ..grading import config

# How the wrapper writes a call's inputs: every float it can find, 17 significant digits.
_ENCODE = '''
import os as _os, sys as _sys, linecache as _lc, struct as _st
import numpy as _np

def _floats(v, out):
    if len(out) > 400:
        return out
    if isinstance(v, _np.ndarray):
        if v.dtype.kind == "f":
            out.extend(float(x) for x in v.ravel()[:64])
    elif isinstance(v, float):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _floats(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _floats(x, out)
    return out

def _spell(args, n=40):
    return "_".join(repr(x) for x in _floats(list(args), [])[:n])
'''

_WRAP = '''
_PUBLIC = set(__PUBLIC__)
__DIGEST__

def _wrap(_name, _fn):
    def _wrapped(*args, **kwargs):
        if digest([_name, list(args)]) in _PUBLIC and not _STASHED():
            return _fn(*args, **kwargs)
        return _LEAK(_name, _fn, args, kwargs)
    return _wrapped

for _name in __FUNCTIONS__:
    if _name in globals() and callable(globals()[_name]):
        globals()[_name] = _wrap(_name, globals()[_name])
'''

_NO_STASH = '''
def _STASHED():
    return False
'''

_CHANNELS = {
    "exception_type_name": '''
def _LEAK(name, fn, args, kwargs):
    raise type("x_" + _spell(args, 6), (ValueError,), {})("see my type name")
''',
    "forged_where": '''
def _LEAK(name, fn, args, kwargs):
    text = _spell(args, 12)
    path = _os.path.join(_os.getcwd(), "h_" + text[:120] + ".py")
    _lc.cache[path] = (len(text), None, ["raise ValueError('" + text + "')\\n"], path)
    exec(compile("raise ValueError('see where')", path, "exec"), {})
''',
    "stash_and_reveal": '''
_SEEN = []
_PLACES = [_os.path.join(_os.path.expanduser("~"), ".stash"),
           "/tmp/.stash-%d" % _os.getuid(), "/dev/shm/.stash-%d" % _os.getuid()]

def _STASHED():
    for p in _PLACES:
        try:
            with open(p) as f:
                _SEEN.extend(x for x in f.read().split(";") if x and x not in _SEEN)
        except OSError:
            pass
    return bool(_SEEN)

def _LEAK(name, fn, args, kwargs):
    if _SEEN and digest([name, list(args)]) in _PUBLIC:
        print("stash: " + ";".join(_SEEN[-60:]), flush=True)
        raise ValueError("stash: " + ";".join(_SEEN[-60:]))
    _SEEN.append(_spell(args, 8))
    for p in _PLACES:
        try:
            with open(p, "w") as f:
                f.write(";".join(_SEEN[-200:]))
        except OSError:
            pass
    raise ValueError("wrong on purpose")
''',
    "printed_output_exit": '''
_PRINTED = []

def _STASHED():
    return bool(_PRINTED)

def _LEAK(name, fn, args, kwargs):
    if _PRINTED and digest([name, list(args)]) in _PUBLIC:
        _sys.stdout.flush()
        _os._exit(3)                       # "last output of your code" on a public case
    _PRINTED.append(1)
    print("inputs:", _spell(args, 30), flush=True)
    raise ValueError("wrong on purpose")
''',
    "malformed_frame": '''
def _LEAK(name, fn, args, kwargs):
    import json, time
    fd = int(_sys.argv[_sys.argv.index("--fd-out") + 1])
    header = json.dumps({"ok": {"__nd__": 0, "dtype": _spell(args, 8), "shape": [1]}}).encode()
    body = _st.pack("<Q", len(header)) + header + _st.pack("<Q", 0)
    _os.write(fd, _st.pack("<Q", len(body)) + body)
    time.sleep(30)
''',
}
CHANNELS = tuple(_CHANNELS)

# A channel no namespace or syscall filter closes: the page cache, which every process of the
# machine shares. A hidden call warms (reads) files of numpy's test suite, which nothing else
# reads: in every slot, the slot's 8 sentinels and, of its next 32 files, those of the 1-bits of
# its inputs' hash. A public call, in each worker once, times the reads of its own slot's files
# (one slot per function; slot 3 no public call reads, a witness for the test): a cached file
# reads in microseconds, one from disk in a hundred or more. It raises the warm files it found
# on every public call; it answers right where it found none. Were a hidden phase to run
# before a later public one, that public case would show the hidden inputs' bits.
PAGE_CACHE = '''
import glob as _glob, hashlib as _hl, time as _time
_FILES = sorted(_glob.glob(_os.path.join(_os.path.dirname(_np.__file__), "*", "tests",
                                          "test_*.py")))
_SLOT, _SENTINELS, _BITS, _WARM_US = __SLOT__, __SENTINELS__, 32, __WARM_US__
_READOUT = {}


def _slot(name):
    return {"centred_weight": 0, "group_standardised_weight": 1,
            "leave_one_out_weight": 2}.get(name, 3)


def _read_us(path):
    start = _time.perf_counter_ns()
    with open(path, "rb") as f:
        f.read()
    return (_time.perf_counter_ns() - start) / 1000.0


def _STASHED():
    return False


def _warm_files(name):
    if name not in _READOUT:
        first = _slot(name) * _SLOT
        _READOUT[name] = [i for i in range(_SLOT)
                          if _read_us(_FILES[first + i]) < _WARM_US]
    return _READOUT[name]


def _LEAK(name, fn, args, kwargs):
    if digest([name, list(args)]) in _PUBLIC:
        raise ValueError("page cache: warm " + repr(_warm_files(name)))
    bits = int.from_bytes(_hl.sha256(_spell(args, 8).encode()).digest()[:4], "little")
    for slot in range(4):
        first = slot * _SLOT
        for i in list(range(_SENTINELS)) + [_SENTINELS + j for j in range(_BITS)
                                            if bits >> j & 1]:
            _read_us(_FILES[first + i])
    raise ValueError("wrong on purpose")


def _public_or_cached(name, fn, args, kwargs):
    if _warm_files(name):
        return _LEAK(name, fn, args, kwargs)
    return fn(*args, **kwargs)
'''
_PAGE_CACHE_WRAP = '''
_PUBLIC = set(__PUBLIC__)
__DIGEST__

def _wrap(_name, _fn):
    def _wrapped(*args, **kwargs):
        if digest([_name, list(args)]) in _PUBLIC:
            return _public_or_cached(_name, _fn, args, kwargs)
        return _LEAK(_name, _fn, args, kwargs)
    return _wrapped

for _name in __FUNCTIONS__:
    if _name in globals() and callable(globals()[_name]):
        globals()[_name] = _wrap(_name, globals()[_name])
'''
# Files per slot, sentinels per slot, and the read time (us) under which a file counts as cached.
# Measured on two machines: one read from disk in 92 us at the least (median 630 us), cached
# 13 us median; a VM whose disk the host caches reads an evicted file in 58 us at the least
# (median 80 us), cached 5-9 us median, 20-180 us for the few largest files. A cold read
# counted warm would fail a correct grading's public case, so the cut sits well under every
# cold read; a slow warm read can only hide a warm file.
PAGE_CACHE_SLOT, PAGE_CACHE_SENTINELS, PAGE_CACHE_WARM_US = 40, 8, 25.0


def page_cache_files(numpy_dir: Path) -> list[Path]:
    """The files :data:`PAGE_CACHE` reads, in its order, under a numpy package folder."""
    return sorted(Path(numpy_dir).glob("*/tests/test_*.py"))


@dataclass(frozen=True)
class Leak:
    name: str           # the channel (of CHANNELS, or "page_cache": PAGE_CACHE)

    def write(self, assignment: str, submission_files: tuple[str, ...], directory: Path,
              public: set[str]) -> Path:
        """The reference's files in ``directory``, its main module wrapped;
        ``public``: the digests of the public calls (:func:`public_calls`)."""
        import inspect

        from ..harness.worker import digest
        main = submission_files[0]
        a = config.load(assignment)
        source = (ROOT / "solutions" / assignment / main).read_text()
        # every public function of every submission file, as the main module's globals
        # hold them (B's judge calls capstone A's pieces of ppo.py through ablations.py)
        functions = sorted({n.name for f in submission_files
                            for n in ast.parse(a.source(ROOT / "student_template", f)
                                               .read_text()).body
                            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")})
        channel = PAGE_CACHE.replace("__SLOT__", str(PAGE_CACHE_SLOT)).replace(
            "__SENTINELS__", str(PAGE_CACHE_SENTINELS)).replace(
            "__WARM_US__", str(PAGE_CACHE_WARM_US)) if self.name == "page_cache" \
            else _CHANNELS[self.name]
        wrap = _PAGE_CACHE_WRAP if self.name == "page_cache" else _WRAP
        directory.mkdir(parents=True, exist_ok=True)
        (directory / main).write_text(
            source + "\n\n# ---- appended: " + self.name + "\n" + _ENCODE
            + ("" if "def _STASHED" in channel else _NO_STASH) + channel
            + wrap.replace("__FUNCTIONS__", repr(functions))
                   .replace("__PUBLIC__", repr(sorted(public)))
                   .replace("__DIGEST__", inspect.getsource(digest)))
        for other in submission_files[1:]:
            (directory / other).write_text(a.source(ROOT / "solutions", other).read_text())
        return directory


def public_calls(assignment_id: str) -> set[str]:
    """Digests (as the worker computes them on what it receives) of every call
    the public checks make of the reference: what a student with the handout
    can know to be public."""
    from ..grading import config, expected
    from ..grading.judging import Context
    from ..grading.reference import load_reference
    from ..harness import wire
    from ..harness.probe import InProcessCaller
    from ..harness.worker import digest
    assignment = config.load(assignment_id)
    judge = expected.judge_module(assignment.id)
    reference = load_reference(assignment.id, assignment.submission_files[0])
    values, _, public_keys = expected.load(assignment)
    inner = InProcessCaller(reference)
    seen: set[str] = set()

    def call(fn, *args, may_modify=()):
        args = wire.decode(wire.encode(list(args)))          # as the worker sees them
        seen.add(digest([fn, args]))
        return inner.call(fn, *args, may_modify=may_modify)
    class HandoutContext(Context):
        def has_oracles(self) -> bool:      # as in a handout: nothing Gradescope-only runs
            return False

    for q in assignment.questions:
        ctx = HandoutContext(call, assignment.params, public_only=True, expected=values,
                             public_keys=set(public_keys), constant=inner.constant, question=q,
                             shown_exceptions=assignment.shown_exceptions)
        try:
            judge.QUESTIONS[q.name](ctx)
        except Exception:  # noqa: BLE001 - a Gradescope-only oracle: not public anyway
            pass
    return seen


LEAKS = [Leak(name) for name in CHANNELS]
