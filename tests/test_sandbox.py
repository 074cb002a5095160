"""Hostile submissions: each is graded, with results.json written, a message,
no more points than the blank template, and nothing left running. Run
through ``grade`` and through the Gradescope zip's ``run_autograder``."""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
import zipfile
from pathlib import Path

import pytest

from autograder.commands.demo import run_gradescope_zip
from autograder.grading.grade import grade
from autograder.harness.sandbox import _pids_of_uid
from autograder.catalogue.hostile import HOSTILE
from conftest import ROOT, built

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root (CI runs as root)")
QUESTIONS = ["q1_centred", "q2_standardised"]
CANARY = "leave-one-out needs K >= 2 responses per group"      # a line of the reference


def _worker_pids(text: str) -> list[int]:
    """Live processes of the worker uid that graded ``text``'s submission."""
    match = re.search(r"sandboxed: worker runs as \S+ \(uid (\d+)\)", text)
    assert match, "the report does not say which uid the worker ran as"
    return _pids_of_uid(int(match.group(1)))


def _worker_files(text: str) -> list[str]:
    """Files of the worker uid that graded ``text``'s submission in the
    world-writable places."""
    uid = int(re.search(r"\(uid (\d+)\)", text).group(1))
    found = []
    for top in ("/tmp", "/var/tmp", "/dev/shm"):
        for dirpath, dirnames, filenames in os.walk(top):
            for name in dirnames + filenames:
                try:
                    if os.lstat(os.path.join(dirpath, name)).st_uid == uid:
                        found.append(os.path.join(dirpath, name))
                except OSError:
                    pass
    return found


def _tree_hash() -> str:
    """Hash of the grader files the hostile submissions try to rewrite."""
    h = hashlib.sha256()
    for p in (ROOT / "autograder" / "grading" / "judging.py", ROOT / "autograder" / "judges" / "d_grpo.py"):
        h.update(p.read_bytes())
    return h.hexdigest()


def _source(h, agroot: str = "/nonexistent-agroot") -> str:
    return h.source.replace("{root}", str(ROOT)).replace("{agroot}", agroot)


@ROOT_ONLY
@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.name for h in HOSTILE])
def test_hostile_submission_through_grade(hostile, tmp_path):
    before = _tree_hash()
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(_source(hostile))
    results = tmp_path / "results.json"
    t0 = time.monotonic()
    grade("d_grpo", sub, questions=list(hostile.questions), results=results, echo=False)
    data = json.loads(results.read_text())
    text = json.dumps(data)
    assert data["score"] == 0 and "placeholder" not in data["extra_data"]
    assert len(data["tests"]) == len(hostile.questions)
    assert "sandboxed" in text
    if hostile.message:
        assert hostile.message in text, text[:2000]
    assert "CPU budget" not in text or "protocol error" not in hostile.message
    assert CANARY not in text and "FORGED" not in text
    assert len(text) < 300_000                       # output caps hold
    assert _tree_hash() == before
    assert not _worker_pids(text), "processes of the worker uid survived"
    assert not _worker_files(text), "files of the worker uid survived"
    assert not [p for p in hostile.leaves if os.path.lexists(p)]
    assert time.monotonic() - t0 < 120
    if hostile.name == "daemon_forges_results_later":
        time.sleep(4)
        assert json.loads(results.read_text()) == data


@ROOT_ONLY
@pytest.mark.parametrize("name", ["daemon_forges_results_later", "forges_results_json",
                                  "reads_grader_files_and_raises_them", "infinite_loop_at_import",
                                  "huge_weights_on_late_updates", "huge_weights_first_update",
                                  "zombie_leader_with_live_thread", "leaves_files_in_tmp",
                                  "forged_16mb_reply", "stops_reading_requests"])
def test_hostile_submission_through_run_autograder(name, tmp_path):
    hostile = next(h for h in HOSTILE if h.name == name)
    sub = tmp_path / "grpo.py"
    # run_gradescope_zip picks its own AUTOGRADER_ROOT under /tmp; point guesses at its parent.
    sub.write_text(_source(hostile, agroot="/tmp/rlcap-gs-*"))
    res = run_gradescope_zip(built("d_grpo")[1], [sub], questions=hostile.questions)
    assert res["score"] == 0 and "FORGED" not in json.dumps(res)
    assert "placeholder" not in res["extra_data"] and len(res["tests"]) == len(hostile.questions)
    if hostile.message:
        assert hostile.message in json.dumps(res)
    assert CANARY not in json.dumps(res)
    assert not _worker_pids(json.dumps(res))
    assert not [p for p in hostile.leaves if os.path.lexists(p)]


def test_zip_slip_and_symlinks_are_refused(tmp_path):
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("/etc/evil.py", "x = 1")
        zf.writestr("a/../../evil.py", "x = 1")
        link = zipfile.ZipInfo("grpo.py")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    report = grade("d_grpo", z, questions=["q1_centred"], echo=False)
    assert report.score == 0
    text = " ".join(report.messages)
    assert "unsafe" in text and "evil.py" in text and "grpo.py was not found" in text
    assert not (tmp_path.parent / "evil.py").exists() and not Path("/etc/evil.py").exists()
