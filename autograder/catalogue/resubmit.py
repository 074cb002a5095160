"""Students who resubmit and learn from everything they are shown.

A hidden case is worth something to a student only if what one submission
learns about it still holds at the next. Hidden instances are drawn per
submission (``Context.instance_rng``: the salt, the student's id and the
files' digest), so nothing should. The students here give the replay every
advantage a real one could hope for, and more:

* :class:`Replay` (any assignment): right on every public call (the
  handout's checks show them), wrong on every other, and, from a memory kept
  *outside* its files, right on every hidden input met before. After each
  grading the student "works offline": the reference's answer to every
  hidden input its code saw (as if every channel had carried the inputs out
  perfectly) goes into the memory. Its next submission is the same code with
  a line changed (``# submission k``), as a student's would be.
* :class:`PositionReplay` (capstone C's q7): a ``diagnose()`` with no rule,
  answering each hidden log by its call position within its family from a
  table; after each grading the table learns the true fault of every log at
  every position (again more than any feedback says).
* :class:`FingerprintReplay` (capstone C's q7): a class that tabulates each
  hidden log's fingerprint (its episode count and return total) against its
  fault, over every submission of its members (the fault of every log met,
  granted), and answers from the table.

Both run in the fast tier (``grading.inprocess``), where the memory is a
module of this process (:data:`MEMORY`); in the sandbox a worker has no such
memory, so this is an upper bound. The same files graded again draw the same
instance: there the memory does hit (``tests/test_resubmission.py`` shows it),
which is what a per-student draw would give every resubmission.
"""
from __future__ import annotations

import inspect
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT
from ..grading import config

# The replaying student's memory, outside its files: {name: {...}} (in-process gradings only).
MEMORY: dict[str, dict] = {}

_WRAP = '''

# ---- appended: a student who replays what earlier submissions met (submission __K__)
import autograder.catalogue.resubmit as _resubmit
__DIGEST__
_PUBLIC = set(__PUBLIC__)
_MEMORY = _resubmit.MEMORY.setdefault(__NAME__, {"seen": {}, "known": {}, "hits": 0})


def _replaying(_name, _fn):
    def _wrapped(*args, **kwargs):
        key = digest([_name, list(args)])
        if key in _PUBLIC:
            return _fn(*args, **kwargs)
        if key in _MEMORY["known"]:
            _MEMORY["hits"] += 1
            _MEMORY.setdefault("hit", []).append((_name, args))
            return _MEMORY["known"][key]
        _MEMORY["seen"][key] = (_name, args)
        raise ValueError("an input not met before")
    return _wrapped


for _name in __FUNCTIONS__:
    if _name in globals() and callable(globals()[_name]):
        globals()[_name] = _replaying(_name, globals()[_name])
'''


@dataclass
class Replay:
    """A replaying student of ``assignment`` (its memory: ``MEMORY[name]``)."""
    assignment: str
    name: str = "replay"
    public: frozenset = field(default_factory=frozenset)

    @property
    def memory(self) -> dict:
        return MEMORY.setdefault(self.name, {"seen": {}, "known": {}, "hits": 0})

    def forget(self) -> None:
        MEMORY.pop(self.name, None)

    def write(self, directory: Path, k: int) -> Path:
        """Submission ``k``: the reference wrapped (and ``# submission k``)."""
        import ast

        from ..harness.worker import digest
        from .leaks import public_calls
        a = config.load(self.assignment)
        if not self.public:
            self.public = frozenset(public_calls(self.assignment))
        main = a.submission_files[0]
        functions = sorted({n.name for f in a.submission_files
                            for n in ast.parse(a.source(ROOT / "student_template", f)
                                               .read_text()).body
                            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")})
        directory.mkdir(parents=True, exist_ok=True)
        (directory / main).write_text(
            a.source(ROOT / "solutions", main).read_text()
            + _WRAP.replace("__K__", str(k)).replace("__NAME__", repr(self.name))
                   .replace("__FUNCTIONS__", repr(functions))
                   .replace("__PUBLIC__", repr(sorted(self.public)))
                   .replace("__DIGEST__", inspect.getsource(digest)))
        for other in a.submission_files[1:]:
            (directory / other).write_text(a.source(ROOT / "solutions", other).read_text())
        return directory

    def study(self) -> int:
        """Offline, after a grading: the reference's answer to every input met
        and not yet known goes into the memory. Returns how many were added."""
        from ..grading.reference import load_reference
        a = config.load(self.assignment)
        reference = load_reference(a.id, a.submission_files[0])
        mem, added = self.memory, 0
        for key, (fn, args) in list(mem["seen"].items()):
            if key in mem["known"]:
                continue
            try:
                mem["known"][key] = getattr(reference, fn)(*args)
                added += 1
            except Exception:  # noqa: BLE001 - an input whose right answer is to raise
                pass
        return added


_POSITION = '''

# ---- appended: no rule; each hidden log answered by its call position (submission __K__)
import autograder.catalogue.resubmit as _resubmit
_TABLE = _resubmit.MEMORY.setdefault(__NAME__, {"table": {}, "seen": []})
_CALLS = {"ppo": 0, "dqn": 0}


def diagnose(log):
    fam = "ppo" if "logits_before" in log else "dqn"
    position = _CALLS[fam]
    _CALLS[fam] += 1
    _TABLE["seen"].append((fam, position, _resubmit.fingerprint(log)))
    fault = _TABLE["table"].get((fam, position), "healthy")
    stats = summary(log)
    cited = [k for k in stats if k in THRESHOLDS] if fault == "healthy" else CITE[fault]
    return fault, {k: stats[k] for k in cited}
'''

_FINGERPRINT = '''

# ---- appended: no rule; each hidden log answered by its fingerprint (submission __K__)
import autograder.catalogue.resubmit as _resubmit
_TABLE = _resubmit.MEMORY.setdefault(__NAME__, {"table": {}, "seen": [], "hits": 0})


def diagnose(log):
    fp = _resubmit.fingerprint(log)
    _TABLE["seen"].append(fp)
    fault = _TABLE["table"].get(fp)
    _TABLE["hits"] += fault is not None
    fault = fault or "healthy"
    stats = summary(log)
    cited = [k for k in stats if k in THRESHOLDS] if fault == "healthy" else CITE[fault]
    return fault, {k: stats[k] for k in cited}
'''


def fingerprint(log: dict) -> tuple:
    """A log's bookkeeping fingerprint (its episode count and return total)."""
    import numpy as np
    returns = np.asarray(log["episode_returns"], dtype=np.float64)
    return int(returns.size), round(float(returns.sum()), 6)


@dataclass
class PositionReplay:
    """Capstone C's q7 answered by call position within each family; the table
    learns, after each grading, the true fault of the log met at every
    position (:meth:`study`), and answers each position with the fault seen
    there most often so far."""
    name: str = "position-replay"
    observed: dict = field(default_factory=dict)    # (family, position) -> Counter of faults

    @property
    def memory(self) -> dict:
        return MEMORY.setdefault(self.name, {"table": {}, "seen": []})

    def forget(self) -> None:
        MEMORY.pop(self.name, None)
        self.observed.clear()

    def write(self, directory: Path, k: int) -> Path:
        a = config.load("c_diagnose")
        main = a.submission_files[0]
        directory.mkdir(parents=True, exist_ok=True)
        (directory / main).write_text(
            a.source(ROOT / "solutions", main).read_text()
            + _POSITION.replace("__K__", str(k)).replace("__NAME__", repr(self.name)))
        return directory

    def study(self, truth: dict) -> int:
        """Learn the true fault at every position met (``truth``: the answer
        key of the grading's own draw by fingerprint, :func:`draw_truth`);
        returns how many positions were met."""
        mem = self.memory
        for fam, position, fp in mem["seen"]:
            if fp in truth:
                self.observed.setdefault((fam, position), Counter())[truth[fp]] += 1
        met = len(mem["seen"])
        mem["seen"] = []
        mem["table"] = {pos: c.most_common(1)[0][0] for pos, c in self.observed.items()}
        return met


@dataclass
class FingerprintReplay:
    """Capstone C's q7 answered from a table {fingerprint: fault} that a class
    fills over all its members' submissions (each member a student id; the
    fault of every hidden log met granted, :func:`draw_truth`): a log met
    again with the same episode count and return total is named right."""
    name: str = "fingerprint-replay"

    @property
    def memory(self) -> dict:
        return MEMORY.setdefault(self.name, {"table": {}, "seen": [], "hits": 0})

    def forget(self) -> None:
        MEMORY.pop(self.name, None)

    def write(self, directory: Path, k: int) -> Path:
        a = config.load("c_diagnose")
        main = a.submission_files[0]
        directory.mkdir(parents=True, exist_ok=True)
        (directory / main).write_text(
            a.source(ROOT / "solutions", main).read_text()
            + _FINGERPRINT.replace("__K__", str(k)).replace("__NAME__", repr(self.name)))
        return directory

    def study(self, truth: dict) -> int:
        """Tabulate the fault of every log the last grading met; returns how
        many it met."""
        mem = self.memory
        for fp in mem["seen"]:
            if fp in truth:
                mem["table"][fp] = truth[fp]
        met = len(mem["seen"])
        mem["seen"] = []
        return met


def draw_truth(student_id: str, draw_key: str) -> dict:
    """``{fingerprint: fault}`` of the hidden logs of capstone C's q7 that a
    submission (``student_id``, its files' digest ``draw_key``) meets, as its
    draw shows them (``judges.c_diagnose.drawn_log``)."""
    from ..grading.judging import HIDDEN_PHASE, Context
    from ..judges import c_diagnose
    a = config.load("c_diagnose")
    ctx = Context(lambda *_, **__: None, a.params, public_only=False, student_id=student_id,
                  hidden=a.hidden, question=a.question("q7_unseen"), phase=HIDDEN_PHASE,
                  draw_key=draw_key)
    return {fingerprint(c_diagnose.drawn_log(ctx, case)): case.fault
            for case in c_diagnose.students_logs(ctx)}
