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
