"""A hidden case says only what the judge chose, on every channel of the worker.

Each entry of ``autograder/catalogue/leaks.py`` pushes the inputs it was sent
out through one channel (exception type name, a forged ``where``, a stash
shown later, printed output before ``os._exit``, a malformed frame). Graded
through the real worker, no number the judge sent in a hidden case may stand
anywhere in results.json (feedback, ``extra_data``) or the printed table, and
every question with hidden cases loses points (the entries answer like the
reference on every public call and wrongly on every other).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import functools

from autograder.catalogue.leaks import CHANNELS, Leak, public_calls
from autograder.commands.demo import run_gradescope_zip
from autograder.grading import config, judging
from autograder.grading.grade import grade
from autograder.harness import namespaces as harness_namespaces
from conftest import built

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root (CI runs as root)")


def _numbers(args, out: set) -> set:
    """How the floats of a call's arguments could be printed, for values
    specific enough to recognise (7 significant digits or more)."""
    if isinstance(args, np.ndarray):
        if args.dtype.kind == "f":
            for v in args.ravel()[:400]:
                for text in (repr(float(v)), f"{v:.12g}", f"{v:.10g}", f"{v:.8g}"):
                    if sum(c.isdigit() for c in text.lstrip("-0.")) >= 7:
                        out.add(text)
    elif isinstance(args, float):
        _numbers(np.array([args]), out)
    elif isinstance(args, (list, tuple)):
        for a in args:
            _numbers(a, out)
    elif isinstance(args, dict):
        for a in args.values():
            _numbers(a, out)
    return out


def _spied_grade(monkeypatch, assignment: str, sub, results, questions, student_id=None):
    """Grade with every call the judge makes recorded by phase (``student_id``:
    whose hidden instance, as a platform gives it)."""
    sent = {judging.PUBLIC_PHASE: [], judging.HIDDEN_PHASE: []}
    call, call_many = judging.Context._send, judging.Context._send_many

    def spy(self, fn, *args, **kwargs):
        if self.phase in sent:
            sent[self.phase].append(args)
        return call(self, fn, *args, **kwargs)

    def spy_many(self, calls):             # a batch's arguments (but answers of earlier calls)
        if self.phase in sent:
            sent[self.phase].extend(c.args for c in calls)
        return call_many(self, calls)
    monkeypatch.setattr(judging.Context, "_send", spy)
    monkeypatch.setattr(judging.Context, "_send_many", spy_many)
    report = grade(assignment, sub, questions=questions, results=results, echo=False,
                   student_id=student_id)
    monkeypatch.setattr(judging.Context, "_send", call)
    monkeypatch.setattr(judging.Context, "_send_many", call_many)
    return report, sent


@functools.lru_cache(maxsize=None)
def _public(assignment: str) -> frozenset:
    return frozenset(public_calls(assignment))


def _hidden_questions(a: config.Assignment, cheap: bool = True) -> list[str]:
    """The questions with hidden cases (``cheap``: those with a CPU budget of
    10 s at most: the channels are the same in a training loop, and its public
    phase, the reference's run, costs tens of seconds)."""
    return [q.name for q in a.questions if q.has_hidden_cases
            and (q.budget_cpu_s <= 10 or not cheap)]


def _leaked(sent: dict, visible: str) -> list[str]:
    hidden = _numbers(sent[judging.HIDDEN_PHASE], set()) - _numbers(sent[judging.PUBLIC_PHASE],
                                                                     set())
    return sorted(n for n in hidden if n in visible)


CASES = [(a, c) for a in config.available() for c in CHANNELS
         if config.load(a).questions and _hidden_questions(config.load(a))]


@ROOT_ONLY
@pytest.mark.parametrize("assignment,channel", CASES, ids=[f"{a}-{c}" for a, c in CASES])
def test_a_hidden_case_leaks_nothing_through_grade(assignment, channel, tmp_path, monkeypatch):
    a = config.load(assignment)
    sub = Leak(channel).write(assignment, a.submission_files, tmp_path / "sub",
                              _public(assignment))
    results = tmp_path / "results.json"
    questions = _hidden_questions(a, cheap=channel != "stash_and_reveal")
    report, sent = _spied_grade(monkeypatch, assignment, sub, results, questions)
    visible = results.read_text() + report.table() + "\n".join(report.messages)
    assert sent[judging.HIDDEN_PHASE], "no hidden case ran: the test proves nothing"
    assert _leaked(sent, visible) == []
    # right on every public call by design, so it keeps what needs no hidden case; every
    # question with hidden cases loses points
    assert all(q.score < q.max_score for q in report.questions), report.table()


@ROOT_ONLY
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
@pytest.mark.parametrize("channel", CHANNELS)
def test_d_leaks_nothing_through_run_autograder(channel, namespaces, tmp_path, monkeypatch):
    """The Gradescope path, with and without namespaces: the hidden inputs are
    those an in-process grading of the same submission sent (the cases are
    the same: no metadata, the default instance)."""
    a = config.load("d_grpo")
    questions = _hidden_questions(a, cheap=True)
    if not namespaces:
        monkeypatch.setenv("RLCAP_NO_NAMESPACES", "1")
        monkeypatch.setattr(harness_namespaces, "_NAMESPACES", {})
    sub = Leak(channel).write("d_grpo", a.submission_files, tmp_path / "sub", _public("d_grpo"))
    report, sent = _spied_grade(monkeypatch, "d_grpo", sub, tmp_path / "r.json", questions)
    assert ("sandboxed" in " ".join(report.notes)) and (
        ("namespace" in " ".join(report.notes).lower()) or not namespaces)
    res = run_gradescope_zip(built("d_grpo")[1], [sub / f for f in a.submission_files],
                             questions=questions)
    visible = json.dumps(res) + (tmp_path / "r.json").read_text()
    assert sent[judging.HIDDEN_PHASE]
    assert _leaked(sent, visible) == []
    assert all(t["score"] < t["max_score"] for t in res["tests"]), res["tests"]


def test_the_search_finds_a_leak_when_there_is_one():
    """The check itself: a hidden number printed in feedback is found."""
    x = np.array([0.123456789012, 1.5])
    sent = {judging.PUBLIC_PHASE: [], judging.HIDDEN_PHASE: [(x,)]}
    assert "0.123456789012" in _leaked(sent, f"got {x[0]:.12g} somewhere")
    assert _leaked(sent, "nothing here") == []


def _numpy_dirs() -> list:
    """Every numpy package a worker may import here (the worker venvs, the
    platform venv, the grader's own)."""
    from pathlib import Path

    from autograder.harness.slots import STATE_DIR
    found = [Path(np.__file__).parent]
    for base in (STATE_DIR, Path("/opt")):
        found += sorted(Path(base).glob("*venv*/lib/python3*/site-packages/numpy"))
    return [d for d in found if d.is_dir()]


def _evict(path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _resident(path) -> bool:
    """Whether the first page of ``path`` is in the page cache, asked of the
    kernel (mincore(2) on a one-page mapping), not timed: a witness that load
    cannot fool (a timed read under a busy CI machine can pass its cut)."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, mmap.PAGESIZE, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap {path}")
        vec = (ctypes.c_ubyte * 1)()
        failed = libc.mincore(addr, mmap.PAGESIZE, vec)
        libc.munmap(addr, mmap.PAGESIZE)
        if failed:
            raise OSError(ctypes.get_errno(), f"mincore {path}")
        return bool(vec[0] & 1)
    finally:
        os.close(fd)


@ROOT_ONLY
@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_the_page_cache_carries_nothing_from_a_hidden_phase_to_a_visible_line(
        namespaces, tmp_path, monkeypatch):
    """A channel no sandbox closes, used for real: the hidden phases warm
    files of numpy's test suite by the bits of their inputs, and every public
    case times its own files and shows what it found warm (``leaks.PAGE_CACHE``).
    Every visible phase runs first, so no visible line shows a warm file and
    every public part stands; yet the channel was live: the files only the
    hidden phases read are warm after the grading."""
    from autograder.catalogue.leaks import (PAGE_CACHE_SENTINELS, PAGE_CACHE_SLOT,
                                            page_cache_files)
    a = config.load("d_grpo")
    questions = ["q1_centred", "q2_standardised", "q3_leave_one_out"]
    if not namespaces:
        monkeypatch.setenv("RLCAP_NO_NAMESPACES", "1")
        monkeypatch.setattr(harness_namespaces, "_NAMESPACES", {})
    files = [page_cache_files(d) for d in _numpy_dirs()]
    files = [f for f in files if len(f) >= 4 * PAGE_CACHE_SLOT]
    assert files, "no numpy test suite to warm"
    witness = 3 * PAGE_CACHE_SLOT                    # slot 3: read by hidden calls only
    for f in files:
        for path in f[:4 * PAGE_CACHE_SLOT]:
            _evict(path)
    assert not any(_resident(f[witness + i]) for f in files
                   for i in range(PAGE_CACHE_SENTINELS)), "eviction failed: no cold start"
    sub = Leak("page_cache").write("d_grpo", a.submission_files, tmp_path / "sub",
                                   _public("d_grpo"))
    report = grade("d_grpo", sub, questions=questions, results=tmp_path / "r.json", echo=False)
    visible = (tmp_path / "r.json").read_text() + report.table() + "\n".join(report.messages)
    assert "page cache" not in visible, visible
    for q in report.questions:          # no public case failed; the hidden ones did
        assert q.score < q.max_score and all(p["passed"] or p["hidden"] for p in q.parts), \
            q.output
    warm = max(sum(_resident(f[witness + i]) for i in range(PAGE_CACHE_SENTINELS))
               for f in files)
    assert warm >= PAGE_CACHE_SENTINELS // 2, "the hidden phases warmed nothing: no channel"
