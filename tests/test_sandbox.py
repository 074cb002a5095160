"""Hostile submissions: each is graded, with results.json written, a message,
no more points than the blank template, and nothing left running. Run
through ``grade`` and through the Gradescope zip's ``run_autograder``."""
from __future__ import annotations

import array
import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from autograder.commands.demo import run_gradescope_zip
from autograder.grading.grade import grade
from autograder.harness.sandbox import _pids_of_uid
from autograder.catalogue.hostile import BATCH, HOSTILE, SWEEP_BATCH
from conftest import ROOT, built

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root (CI runs as root)")
QUESTIONS = ["q1_centred", "q2_standardised"]
CANARY = "leave-one-out needs K >= 2 responses per group"      # a line of the reference
REFERENCE_TEXT = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()


@contextlib.contextmanager
def _slot_held(text: str):
    """Hold the machine-wide lock of the slot that graded ``text``'s submission
    while checking what its uid left: yields False when another grading (a
    parallel test) holds the slot now, whose processes and files are its own."""
    from autograder.harness import slots
    slot = re.search(r"worker runs as rlcap-w(\d+) ", text)
    assert slot, "the report does not say which slot the worker ran in"
    fds = []
    try:                              # every lock a grader (of this or an earlier version) takes
        for d in dict.fromkeys((slots.SLOT_LOCK_DIR, slots.DEFAULT_STATE_DIR / "locks",
                                slots.STATE_DIR / "locks")):
            fd = slots.try_lock(d / f"slot-{slot.group(1)}") if d.is_dir() else -1
            if fd is None:
                yield False
                return
            fds.append(fd)
        yield True
    finally:
        for fd in fds:
            if fd >= 0:
                os.close(fd)


def _worker_pids(text: str) -> list[str]:
    """Live processes of the worker uid that graded ``text``'s submission (with
    their state, parent and command line), checked while no grading holds its
    slot."""
    with _slot_held(text) as free:
        return _uid_processes(text) if free else []


def _uid_processes(text: str) -> list[str]:
    match = re.search(r"sandboxed: worker runs as \S+ \(uid (\d+)\)", text)
    assert match, "the report does not say which uid the worker ran as"
    found = []
    for pid in _pids_of_uid(int(match.group(1))):
        try:
            status = Path(f"/proc/{pid}/status").read_text().splitlines()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:120]
            found.append(f"{pid} {[l for l in status if l.startswith(('State', 'PPid'))]} {cmd}")
        except OSError:
            continue
    return found


def _worker_files(text: str) -> list[str]:
    """Files of the worker uid that graded ``text``'s submission in the
    world-writable places, checked while no grading holds its slot."""
    with _slot_held(text) as free:
        return _uid_files(text) if free else []


def _uid_files(text: str) -> list[str]:
    """What the worker uid owns in the world-writable places (counted by
    descriptor: any depth, any path length), and its slot's quarantine boxes."""
    from autograder.harness import sweeps
    from autograder.harness.fspolicy import swept_places
    uid = int(re.search(r"\(uid (\d+)\)", text).group(1))
    slot = re.search(r"worker runs as rlcap-w(\d+) ", text).group(1)
    found = []
    for top in swept_places():
        size, entries = sweeps.usage(top, uid)
        if entries:
            found.append(f"{top}: {entries} entries ({size} bytes) of uid {uid}")
        found += [f"{top}/{e}" for e in os.listdir(top)
                  if e == f"{sweeps.QUARANTINE_PREFIX}w{slot}"]
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
@pytest.mark.parametrize("assignment, module, hostile",
                         [("a_ppo", "ppo.py", h) for h in BATCH]
                         + [("d_grpo", "grpo.py", h) for h in SWEEP_BATCH],
                         ids=[h.name for h in BATCH + SWEEP_BATCH])
def test_forged_batch_reply_is_refused(assignment, module, hostile, tmp_path):
    """A's loop asks for a minibatch's pieces in one round trip, D's K-sweep
    for every K's weights of a step; a forged answer to the batch ends the
    question as a protocol error, 0 points."""
    sub = tmp_path / "sub"
    sub.mkdir()
    reference = (ROOT / "solutions" / assignment / module).read_text()
    (sub / module).write_text(reference + "\n" + _source(hostile))
    t0 = time.monotonic()
    report = grade(assignment, sub, questions=list(hostile.questions), echo=False)
    (q,) = report.questions
    assert q.score == 0 and q.status == "protocol_error", (q.status, q.output[:500])
    assert hostile.message in q.output and "batch of" in q.output, q.output[:500]
    assert not _worker_pids(report.notes[0]), "processes of the worker uid survived"
    assert time.monotonic() - t0 < 120


@ROOT_ONLY
@pytest.mark.parametrize("name", ["daemon_forges_results_later", "forges_results_json",
                                  "reads_grader_files_and_raises_them", "infinite_loop_at_import",
                                  "huge_weights_on_late_updates", "huge_weights_first_update",
                                  "zombie_leader_with_live_thread", "leaves_files_in_tmp",
                                  "forged_16mb_reply", "stops_reading_requests",
                                  "reads_assignment_toml"])
def test_hostile_submission_through_run_autograder(name, tmp_path):
    from autograder.catalogue.hostile import FILESYSTEM
    hostile = next(h for h in HOSTILE + FILESYSTEM if h.name == name)
    sub = tmp_path / "grpo.py"
    # run_gradescope_zip picks its own AUTOGRADER_ROOT under /tmp; point guesses at its parent.
    sub.write_text(_source(hostile, agroot="/tmp/rlcap-gs-*"))
    res = run_gradescope_zip(built("d_grpo")[1], [sub], questions=hostile.questions)
    assert res["score"] == 0 and "FORGED" not in json.dumps(res)
    assert "placeholder" not in res["extra_data"] and len(res["tests"]) == len(hostile.questions)
    if hostile.message:     # (the feedback in the message: this case has failed under load)
        assert hostile.message in json.dumps(res), [t.get("output") for t in res["tests"]]
    assert CANARY not in json.dumps(res)
    assert "assignment.toml: READ" not in json.dumps(res) and "instance_salt" not in json.dumps(res)
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


# ---------------------------------------------------------------- round 2: intake, isolation
from autograder.catalogue.hostile import DECLARED_ID, HOSTILE_ZIPS, THIEF   # noqa: E402


@pytest.mark.parametrize("name", sorted(HOSTILE_ZIPS))
def test_broken_zip_gives_a_message_and_a_zero(name, tmp_path):
    build, message = HOSTILE_ZIPS[name]
    z = tmp_path / "sub.zip"
    z.write_bytes(build())
    results = tmp_path / "results.json"
    report = grade("d_grpo", z, questions=["q1_centred"], results=results, echo=False)
    data = json.loads(results.read_text())
    assert report.score == 0 and data["score"] == 0 and len(data["tests"]) == 1
    assert "placeholder" not in data["extra_data"]
    assert message in data["output"], data["output"]


def _grade_in_subprocess(name: str, tmp_path: Path, env: dict) -> dict:
    """Grade a hostile entry in a fresh process (``env``: e.g. no namespaces)."""
    h = next(h for h in HOSTILE if h.name == name)
    sub = tmp_path / name
    sub.mkdir()
    (sub / "grpo.py").write_text(_source(h))
    results = tmp_path / f"{name}.json"
    subprocess.run([sys.executable, "-m", "autograder", "grade", "d_grpo", str(sub),
                    "--questions", ",".join(h.questions), "--results", str(results)],
                   cwd=ROOT, env=dict(os.environ, **env), capture_output=True, timeout=300)
    return json.loads(results.read_text())


@ROOT_ONLY
@pytest.mark.slow
@pytest.mark.parametrize("name", ["zombie_leader_with_live_thread", "leaves_files_in_tmp",
                                  "daemon_forges_results_later"])
def test_fallback_without_namespaces_sweeps_processes_and_files(name, tmp_path):
    """Where the kernel gives no namespaces (Gradescope's container), the uid
    sweep (zombie leaders with live threads included) and the file sweep hold."""
    data = _grade_in_subprocess(name, tmp_path, {"RLCAP_NO_NAMESPACES": "1"})
    text = json.dumps(data)
    assert data["score"] == 0 and "uid sweep" in text
    time.sleep(1)
    assert not _worker_pids(text) and not _worker_files(text)
    h = next(h for h in HOSTILE if h.name == name)
    assert not [p for p in h.leaves if os.path.lexists(p)]


@ROOT_ONLY
def test_unusable_worker_venv_fails_closed_and_is_never_deleted(tmp_path, monkeypatch):
    from autograder.harness import sandbox, slots
    monkeypatch.setattr(slots, "STATE_DIR", tmp_path / "state")
    venv = sandbox.worker_venv_path()
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
    monkeypatch.setattr(sandbox, "_works", lambda *a: False)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(REFERENCE_TEXT)
    results = tmp_path / "results.json"
    with pytest.raises(sandbox.WorkerUnavailable) as raised:
        grade("d_grpo", sub, questions=["q1_centred"], results=results, echo=False)
    data = json.loads(results.read_text())
    assert data["score"] == 0 and data["tests"][0]["extra_data"]["status"] == "autograder_fault"
    assert "no Python can run the submission's worker" in raised.value.detail   # the log's
    assert sandbox.NO_WORKER in data["output"] and "venv" not in data["output"]   # students'
    assert (venv / "bin" / "python").exists(), "grading deleted the shared venv"


def test_sandbox_roots_are_per_user():
    from autograder.harness.sandbox import sandbox_parent
    parent = sandbox_parent()
    st = os.stat(parent)
    assert st.st_uid == os.geteuid() and not st.st_mode & 0o077 & ~0o011
    assert str(os.geteuid()) in parent.name or parent.name == "sandboxes"


def test_declared_student_id_never_files_a_csv_row(tmp_path):
    from autograder.commands import export, tables
    from autograder.grading import config
    template = (ROOT / "student_template" / "exercises" / "exercises.py").read_text()
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "exercises.py").write_text(DECLARED_ID.source.replace("{template}", template))
    a = config.load("exercises")
    results = tmp_path / "results.json"
    grade("exercises", sub, questions=["ex2_terms"], results=results, echo=False)
    data = json.loads(results.read_text())
    assert data["extra_data"]["student_id_source"] == "declared"
    row = tables.Row(export.Submission("sub", sub), data, "graded")
    tables.write_csv(tmp_path / "grades.csv", [row], [a.question("ex2_terms")])
    import csv
    with open(tmp_path / "grades.csv", newline="") as f:
        (line,) = list(csv.DictReader(f))
    assert line["sid"] == "" and line["declared_id"] == "victim-1815"
    assert "self-declared STUDENT_ID" in line["reason"]
    # With metadata, the declared id is ignored.
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"users": [{"sid": "ada-1", "email": "a@x", "name": "A"}]}))
    report = grade("exercises", sub, questions=["ex2_terms"], metadata=meta, echo=False)
    assert report.student_id == "ada-1" and report.student_id_source == "metadata"


VICTIM_META = {"name": "Ada Lovelace", "sid": "1815", "email": "ada@example.edu"}


@ROOT_ONLY
@pytest.mark.slow
def test_thief_beside_victim_in_grade_all_gains_nothing(tmp_path):
    """grade-all --jobs 2 on a Gradescope export: the thief (looking for the
    victim through /proc, the class folder, temp dirs) scores 0 and its
    feedback names no classmate; the victim keeps full marks."""
    import tempfile
    root = Path(tempfile.mkdtemp(prefix="rlcap-class-", dir="/tmp")) / "export"
    root.mkdir()
    try:
        _thief_beside_victim(root)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def _thief_beside_victim(root: Path) -> None:
    os.chmod(root.parent, 0o755)                     # a class folder readable by everyone
    os.chmod(root, 0o755)
    (root / "submission_1").mkdir()
    (root / "submission_1" / "grpo.py").write_text(REFERENCE_TEXT)
    (root / "submission_2").mkdir()
    (root / "submission_2" / "grpo.py").write_text(_source(THIEF))
    for p in root.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    (root / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '1815'\n"
        "    :email: ada@example.edu\n"
        "submission_2:\n  :submitters:\n  - :name: Thief\n    :sid: '666'\n"
        "    :email: thief@example.edu\n")
    os.chmod(root / "submission_metadata.yml", 0o644)
    qs = "q1_centred,q2_standardised"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade-all", "d_grpo", str(root),
                           "--jobs", "2", "--questions", qs], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    grades = root / "_grades"
    victim = json.loads((grades / "submission_1" / "results.json").read_text())
    if "no namespaces" in json.dumps(victim) and "Landlock (ABI" not in json.dumps(victim):
        if "WARNING: no namespaces" in proc.stdout:      # no ACLs here: only a warning can help
            pytest.skip("no namespaces, Landlock or ACLs here: grade-all warns that the class "
                        "folder is readable")
        assert "uids are denied" in proc.stdout            # an ACL keeps the slot users out
    thief = json.loads((grades / "submission_2" / "results.json").read_text())
    assert victim["score"] == 3
    text = json.dumps(thief)
    assert thief["score"] == 0 and "placeholder" not in thief["extra_data"]
    for secret in VICTIM_META.values():
        assert secret not in text
    assert CANARY not in text
    assert not (grades / "submission_1" / ".submission").exists()     # private copies removed
    assert not _worker_pids(text)


@ROOT_ONLY
def test_thief_alone_through_grade_and_run_autograder(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(_source(THIEF))
    report = grade("d_grpo", sub, questions=list(THIEF.questions), echo=False)
    assert report.score == 0
    res = run_gradescope_zip(built("d_grpo")[1], [sub / "grpo.py"], questions=THIEF.questions)
    assert res["score"] == 0 and CANARY not in json.dumps(res)


TEST_USERS = ("rlcap-test-a", "rlcap-test-b")


@ROOT_ONLY
@pytest.mark.slow
def test_two_non_root_users_grade_on_one_machine(tmp_path):
    """Two ordinary users grade at the same time with the default temp dir:
    each gets a sandbox root of its own (no PermissionError), both complete."""
    import pwd
    import tempfile
    from autograder.harness.sandbox import build_worker_venv
    python = str(build_worker_venv())                     # world-readable, has numpy
    share = Path(tempfile.mkdtemp(prefix="rlcap-two-users-", dir="/tmp"))
    created = []
    try:
        os.chmod(share, 0o755)
        tree = share / "src"
        for part in ("autograder", "rlkit", "assignments", "solutions", "student_template"):
            shutil.copytree(ROOT / part, tree / part,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
        subprocess.run(["chmod", "-R", "a+rX", str(share)], check=True)
        procs = []
        for user in TEST_USERS:
            try:
                pwd.getpwnam(user)
            except KeyError:
                subprocess.run(["useradd", "--no-create-home", "--home-dir", "/nonexistent",
                                "--shell", "/usr/sbin/nologin", user], check=True)
                created.append(user)
            home = share / f"home-{user}"
            home.mkdir()
            shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", home / "grpo.py")
            shutil.chown(home, user)
            shutil.chown(home / "grpo.py", user)
            procs.append(subprocess.Popen(
                ["runuser", "-u", user, "--", "env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin",
                 f"PYTHONPATH={tree}", python, "-m", "autograder", "grade", "d_grpo", str(home),
                 "--questions", "q1_centred,q2_standardised", "--results",
                 str(home / "results.json")],
                cwd=str(tree), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs = [p.communicate(timeout=600)[0] for p in procs]
        for user, proc, out in zip(TEST_USERS, procs, outs):
            assert proc.returncode == 0, out[-2000:]
            data = json.loads((share / f"home-{user}" / "results.json").read_text())
            assert data["score"] == 3 and "not sandboxed" in json.dumps(data), out[-2000:]
            uid = pwd.getpwnam(user).pw_uid
            assert Path(tempfile.gettempdir(), f"rlcap-sandboxes-{uid}").stat().st_uid == uid
    finally:
        for user in TEST_USERS:
            try:
                uid = pwd.getpwnam(user).pw_uid
                shutil.rmtree(Path(tempfile.gettempdir()) / f"rlcap-sandboxes-{uid}",
                              ignore_errors=True)
            except KeyError:
                pass
        for user in created:
            subprocess.run(["userdel", user], capture_output=True)
        shutil.rmtree(share, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["forged_16mb_reply", "forged_20mb_error_message"])
def test_judge_memory_stays_small_under_forged_replies(name):
    """The judge's peak RSS (a fresh process) stays under 200 MB whatever the
    worker sends (measured: about 55 MB). The peak is the process's own
    (``VmHWM``): ``getrusage``'s ``ru_maxrss`` also counts the forking parent's
    pages from before ``exec``, i.e. the pytest worker's, which grows over a suite."""
    code = ("import sys, tempfile, pathlib\n"
            "from autograder.catalogue.hostile import HOSTILE\n"
            "from autograder.grading.grade import grade\n"
            "h = next(h for h in HOSTILE if h.name == sys.argv[1])\n"
            "d = pathlib.Path(tempfile.mkdtemp()); (d / 'grpo.py').write_text(h.source)\n"
            "r = grade('d_grpo', d, questions=['q1_centred'], echo=False)\n"
            "import shutil; shutil.rmtree(d)\n"
            "peak = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
            "print(peak, r.questions[0].status)\n")
    out = subprocess.run([sys.executable, "-c", code, name], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    peak_kb, status = out.stdout.split()[-2:]
    assert status == "protocol_error" and int(peak_kb) < 200 * 1024, out.stdout


@ROOT_ONLY
def test_slot_files_are_readable_only_by_root_and_the_slot():
    from autograder.harness.sandbox import open_sandbox
    with open_sandbox() as a, open_sandbox() as b:
        assert a.uid != b.uid and a.gid != b.gid
        for sb in (a, b):
            d = sb.new_dir()
            (d / "grpo.py").write_text("x = 1\n")
            os.chmod(d / "grpo.py", 0o640)
            for path, mode in ((d, 0o2750), (d / "grpo.py", 0o640),
                               (sb.worker_dir, 0o2750), (sb.worker_dir / "worker.py", 0o640)):
                st = os.stat(path)
                assert (st.st_uid, st.st_gid) == (0, sb.gid), path
                assert stat.S_IMODE(st.st_mode) == mode, (path, oct(st.st_mode))
            assert not os.stat(sb.parent).st_mode & 0o044            # no listing by others


# ---------------------------------------------------------------- round 3: network, tree, slots
import socket  # noqa: E402
import threading  # noqa: E402

from autograder.catalogue.hostile import NETWORK, TREE  # noqa: E402
from autograder.harness import namespaces as namespaces_module  # noqa: E402
from autograder.harness import probe as probe_module, sandbox as sandbox_module  # noqa: E402

MODES = pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])


class _Recorder:
    """Records every connection and datagram that reaches ``socks`` (bound
    already, stream sockets listening), on a thread that stops itself after
    15 minutes; ``close`` stops it and closes the sockets."""

    def _start(self, socks: list) -> None:
        self.got: list[bytes] = []
        self.socks = socks
        for s in socks:
            s.settimeout(0.2)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        deadline = time.monotonic() + 900
        while not self.stop.is_set() and time.monotonic() < deadline:
            for s in self.socks:
                try:
                    if s.type == socket.SOCK_DGRAM:
                        self.got.append(s.recv(65536))
                    else:
                        conn, _ = s.accept()
                        conn.settimeout(1)
                        self.got.append(b"CONNECTED " + conn.recv(65536))
                        conn.close()
                except OSError:
                    continue

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


class Listener(_Recorder):
    """TCP on 127.0.0.1 and ::1 and UDP on 127.0.0.1, one port each, recording
    every connection and byte that reaches them."""

    def __init__(self):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        self.port = tcp.getsockname()[1]
        tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        tcp6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        tcp6.bind(("::1", self.port))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        self.udp = udp.getsockname()[1]
        for s in (tcp, tcp6):
            s.listen(8)
        self._start([tcp, tcp6, udp])

    def source(self, h) -> str:
        return _source(h).replace("{port}", str(self.port)).replace("{udp}", str(self.udp))


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


def _set_mode(monkeypatch, namespaces: bool) -> None:
    if not namespaces:
        monkeypatch.setenv("RLCAP_NO_NAMESPACES", "1")
    else:
        monkeypatch.delenv("RLCAP_NO_NAMESPACES", raising=False)
    monkeypatch.setattr(namespaces_module, "_NAMESPACES", {})


@ROOT_ONLY
@MODES
@pytest.mark.parametrize("hostile", NETWORK, ids=[h.name for h in NETWORK])
def test_network_reaches_no_listener(hostile, namespaces, listener, tmp_path, monkeypatch):
    _set_mode(monkeypatch, namespaces)
    if hostile.name == "net_sees_interfaces":   # Landlock refuses /proc: see what the network
        monkeypatch.setenv(sandbox_module.NO_LANDLOCK_ENV, "1")    # namespace alone shows
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(listener.source(hostile))
    results = tmp_path / "results.json"
    grade("d_grpo", sub, questions=list(hostile.questions), results=results, echo=False)
    data = json.loads(results.read_text())
    text = json.dumps(data)
    assert data["score"] == 0 and ("network namespace" in text) == namespaces, text[-600:]
    if hostile.message:
        assert hostile.message in text, text[:3000]
    assert "SOCKET OPEN" not in text and "io_uring OPEN" not in text
    time.sleep(0.3)
    assert listener.got == [], listener.got[:3]
    if hostile.name == "net_sees_interfaces" and namespaces:   # only a loopback, down, unused
        netdev = data["tests"][0]["output"].split("NETDEV ", 1)[1].split(" (at grpo.py")[0]
        devices = [l.split(":")[0].strip() for l in netdev.split("\\n")[2:] if ":" in l]
        assert devices == ["lo"], netdev[:500]
    assert not _worker_pids(text) and not _worker_files(text)


@ROOT_ONLY
def test_seccomp_refuses_af_inet_without_namespaces(tmp_path):
    """The filter alone (RLCAP_NO_NAMESPACES=1, as in a container): the worker's
    AF_INET socket is refused with EACCES, AF_UNIX and socketpair work."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(BLANK_SOURCE + (
        "import socket\n"
        "def centred_weight(r):\n"
        "    a, b = socket.socketpair()\n"
        "    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n"
        "    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"))
    out = tmp_path / "r.json"
    subprocess.run([sys.executable, "-m", "autograder", "grade", "d_grpo", str(sub),
                    "--questions", "q1_centred", "--results", str(out)], cwd=ROOT,
                   env=dict(os.environ, RLCAP_NO_NAMESPACES="1"), capture_output=True,
                   timeout=300)
    data = json.loads(out.read_text())
    first = data["tests"][0]["output"]
    assert "no namespaces here" in json.dumps(data) and "seccomp" in json.dumps(data)
    assert "raised PermissionError: [Errno 13] Permission denied" in first, first


BLANK_SOURCE = next(h for h in HOSTILE if h.name == "os_exit").source.split("import os")[0]


class TreeSpy:
    """What every worker tree of one grading used: the reaper's reports, and
    an independent sampler (every 2 ms) of the memory of the slot uids."""

    def __init__(self, monkeypatch):
        self.usages: list[dict] = []
        self.peak_mb = 0.0
        close = probe_module.ProbeSession.close
        spy = self

        def recording(session):
            fresh = not session._closed
            close(session)
            if fresh:
                spy.usages.append(dict(session.usage, budget=session.budget_cpu_s))
        monkeypatch.setattr(probe_module.ProbeSession, "close", recording)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        import pwd
        uids = {p.pw_uid for p in pwd.getpwall() if p.pw_name.startswith("rlcap-w")}
        while not self.stop.is_set():
            kb = 0
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                fields = dict(l.split(":", 1) for l in status.splitlines() if ":" in l)
                if int(fields.get("Uid", "0 0").split()[0]) in uids:
                    kb += sum(int(fields.get(k, "0 kB").split()[0]) for k in ("RssAnon", "RssShmem"))
            self.peak_mb = max(self.peak_mb, kb / 1024)
            time.sleep(0.002)

    def close(self):
        self.stop.set()
        self.thread.join(5)


@ROOT_ONLY
@MODES
@pytest.mark.parametrize("hostile", TREE, ids=[h.name for h in TREE])
def test_tree_limits_hold(hostile, namespaces, tmp_path, monkeypatch):
    """Each tree attack scores 0, the tree stays under the question's CPU budget
    + 1 s and the memory limit + 10 % (measured by the reaper and, for memory,
    by an independent sampler), at most Limits.nproc tasks, nothing left."""
    from autograder.grading import config
    _set_mode(monkeypatch, namespaces)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(_source(hostile))
    results = tmp_path / "results.json"
    spy = TreeSpy(monkeypatch)
    try:
        grade("d_grpo", sub, questions=list(hostile.questions), results=results, echo=False)
    finally:
        spy.close()
    data = json.loads(results.read_text())
    text = json.dumps(data)
    assert data["score"] == 0 and ("network namespace" in text) == namespaces, text[-600:]
    if hostile.message:
        assert hostile.message in text, text[:3000]
    if hostile.name == "fills_disk":        # with namespaces: the 64 MB tmpfs, 4 without Landlock
        tmpfs = "wrote 64 MB" if "Landlock (ABI" in text else "wrote 256 MB"
        assert ("file quota" in text) if not namespaces else (tmpfs in text), text[:2000]
    if hostile.name == "memfd_memory":      # memfds refused: unlinked files in /dev/shm instead
        assert ("memory limit" in text) if not namespaces else ("No space left" in text), \
            text[:2000]
    assert "FOUND" not in text
    memory = config.load("d_grpo").memory_mb
    assert spy.usages and all(u.get("cpu_s", 0) <= u["budget"] + 1 for u in spy.usages), spy.usages
    assert spy.peak_mb <= memory * 1.1, (spy.peak_mb, spy.usages)
    assert all(u.get("tasks", 0) <= sandbox_module.Limits(1).nproc for u in spy.usages)
    assert not _worker_pids(text), "processes of the worker uid survived"
    assert not _worker_files(text), "files of the worker uid survived"
    assert not [p for p in hostile.leaves if os.path.lexists(p)]
    print(hostile.name, "namespaces" if namespaces else "fallback",
          f"peak {spy.peak_mb:.0f} MB", [(u.get("verdict"), u.get("cpu_s")) for u in spy.usages])


RUN_AUTOGRADER_ROUND3 = ["net_tcp_to_loopback", "net_shell_dev_tcp", "fork_cpu_multiplier",
                         "fork_memory_multiplier", "fills_disk", "cross_question_file"]


@ROOT_ONLY
@pytest.mark.slow
@MODES
@pytest.mark.parametrize("name", RUN_AUTOGRADER_ROUND3)
def test_round3_through_run_autograder(name, namespaces, listener, tmp_path, monkeypatch):
    """The Gradescope path, as in its container (no namespaces) and on a machine
    with them: the filter and the tree's limits hold, nothing reaches the
    listener or stays behind."""
    _set_mode(monkeypatch, namespaces)
    h = next(h for h in NETWORK + TREE if h.name == name)
    sub = tmp_path / "grpo.py"
    sub.write_text(listener.source(h))
    res = run_gradescope_zip(built("d_grpo")[1], [sub], questions=h.questions)
    text = json.dumps(res)
    assert res["score"] == 0 and "placeholder" not in res["extra_data"], text[:2000]
    assert ("network namespace" in text) == namespaces and "FOUND" not in text
    if h.message:
        assert h.message in text, text[:2000]
    time.sleep(0.3)
    assert listener.got == []
    assert not _worker_pids(text) and not _worker_files(text)
    assert not [p for p in h.leaves if os.path.lexists(p)]


def _burner() -> str:
    """Every function forks 3 children that each hold 300 MB and spin, spins
    itself for a second and answers zeros: a question's worker ends about
    every second, and with it a sweep of its slot."""
    body = ("    for _ in range(3):\n"
            "        if os.fork() == 0:\n"
            "            a = np.ones(300 * 2**20 // 8)\n"
            "            while True:\n"
            "                a[0] += 1\n"
            "    t = time.time()\n"
            "    while time.time() < t + 1:\n"
            "        pass\n"
            "    return np.zeros_like(np.asarray(args[0], dtype=float))\n")
    return ("import os, time\nimport numpy as np\n" +
            "".join(f"def {fn}(*args):\n{body}" for fn in
                    ("centred_weight", "group_standardised_weight", "leave_one_out_weight",
                     "policy_ratio", "clipped_surrogate_grad")))


@ROOT_ONLY
@pytest.mark.slow
def test_two_gradings_under_different_state_dirs_keep_their_slots(tmp_path):
    """A grading of the reference beside one of a CPU-and-memory-burning hostile,
    each under its own RLCAP_STATE_DIR and without namespaces: each gets a slot
    of its own (the lock is machine-wide) and the reference keeps full marks."""
    from autograder.grading import config
    a = config.load("d_grpo")
    ref_qs = ["q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"]
    ref, bad = tmp_path / "ref", tmp_path / "bad"
    for d in (ref, bad):
        d.mkdir()
    (ref / "grpo.py").write_text(REFERENCE_TEXT)
    (bad / "grpo.py").write_text(_burner())
    import tempfile
    states = Path(tempfile.mkdtemp(prefix="rlcap-states-", dir="/tmp"))    # the slots can enter
    os.chmod(states, 0o755)
    procs = []
    for name, sub, qs in (("bad", bad, ref_qs), ("ref", ref, ref_qs)):
        env = dict(os.environ, RLCAP_NO_NAMESPACES="1", RLCAP_STATE_DIR=str(states / name),
                   AUTOGRADER_WORKER_PYTHON=sys.executable)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "autograder", "grade", "d_grpo", str(sub), "--questions",
             ",".join(qs), "--results", str(tmp_path / f"{name}.json")], cwd=ROOT, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(1.0)                    # the hostile is burning when the reference starts
    t0 = time.monotonic()
    try:
        for p in procs:
            p.wait(timeout=600)
    finally:
        shutil.rmtree(states, ignore_errors=True)
    bad_data, ref_data = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("bad", "ref"))
    full = sum(a.question(q).points for q in ref_qs)
    assert ref_data["score"] == full, [t["output"][:300] for t in ref_data["tests"]]
    assert bad_data["score"] == 0
    uid = lambda d: re.search(r"\(uid (\d+)\)", json.dumps(d)).group(1)    # noqa: E731
    assert uid(ref_data) != uid(bad_data)
    assert not _worker_pids(json.dumps(bad_data))
    print(f"side by side: reference {ref_data['score']}/{full}, hostile 0, "
          f"{time.monotonic() - t0:.1f} s")


# ---------------------------------------------------------------- round 3: output, intake caps
from autograder.catalogue.hostile import OUTPUT, forged_names_zip, many_members  # noqa: E402
from autograder.grading.safe import _UNSAFE  # noqa: E402


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _clean_results(data: dict) -> None:
    """No string of results.json holds a raw control character, and no line of
    its feedback is a forged one."""
    for text in _strings(data):
        assert not _UNSAFE.search(text), repr(text[:200])
        assert not any(l.startswith("q1_centred: 1") and "FULL MARKS" in l
                       for l in text.splitlines()), repr(text[:300])


@ROOT_ONLY
def test_escapes_and_forged_lines_through_grade_and_run_autograder(tmp_path):
    h = next(h for h in OUTPUT if h.name == "escape_sequences_in_messages")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(h.source)
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "d_grpo", str(sub), "-v",
                           "--questions", ",".join(h.questions), "--results", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for text in (proc.stdout, proc.stderr):
        assert "\x1b" not in text and "\u202e" not in text, text[-1500:]
        assert not any(l.startswith("q1_centred: 1") and "FULL MARKS" in l
                       for l in text.splitlines())
    assert "\\x1b[2J" in proc.stdout                        # shown, escaped
    data = json.loads(out.read_text())
    assert data["score"] == 0
    _clean_results(data)
    res = run_gradescope_zip(built("d_grpo")[1], [sub / "grpo.py"], questions=h.questions)
    assert res["score"] == 0
    _clean_results(res)
    z = tmp_path / "forged.zip"
    z.write_bytes(forged_names_zip())
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "d_grpo", str(z),
                           "--questions", "q1_centred"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert "\x1b" not in proc.stdout and "notes\\nq1_centred" in proc.stdout, proc.stdout
    assert not any(l.startswith("q1_centred: 1") and "FULL MARKS" in l
                   for l in proc.stdout.splitlines())


@pytest.mark.parametrize("name", ["formula_student_id", "megabyte_student_id"])
def test_declared_id_is_capped_and_never_a_formula(name, tmp_path):
    """A self-declared STUDENT_ID that is a formula, or 1 MB with escapes: results.json
    stays small, the id is capped and escaped, its CSV cell is text."""
    from autograder.commands import export, tables
    from autograder.grading import config
    from autograder.grading.results import MAX_ID
    h = next(h for h in OUTPUT if h.name == name)
    template = (ROOT / "student_template" / "exercises" / "exercises.py").read_text()
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "exercises.py").write_text(h.source.replace("{template}", template))
    results = tmp_path / "results.json"
    grade("exercises", sub, questions=["ex2_terms"], results=results, echo=False)
    text = results.read_text()
    data = json.loads(text)
    assert len(text) < 50_000, len(text)
    assert len(data["extra_data"]["student_id"]) <= MAX_ID
    _clean_results(data)
    row = tables.Row(export.Submission("sub", sub), data, "graded")
    tables.write_csv(tmp_path / "grades.csv", [row], [config.load("exercises").question("ex2_terms")])
    import csv
    with open(tmp_path / "grades.csv", newline="") as f:
        (line,) = list(csv.DictReader(f))
    assert not line["declared_id"].startswith(("=", "+", "-", "@")) and line["declared_id"]
    assert not any(_UNSAFE.search(v) for v in line.values())


def test_300000_zip_members_are_refused_at_once(tmp_path):
    """Refused from the zip's end record, before zipfile reads its directory
    (which took 18 s and 230 MB)."""
    z = tmp_path / "sub.zip"
    z.write_bytes(many_members(300_000))
    t0 = time.monotonic()
    report = grade("d_grpo", z, questions=["q1_centred"], echo=False)
    assert time.monotonic() - t0 < 10 and report.score == 0
    assert any("300000 members (more than 1000)" in m for m in report.messages), report.messages


@ROOT_ONLY
@pytest.mark.slow
@MODES
def test_round3_through_grade_all(namespaces, listener, tmp_path):
    """Every NETWORK and TREE entry beside the reference in one class folder,
    grade-all --jobs 2: each hostile scores 0, the reference keeps full marks,
    the listener hears nothing, no process or file of any slot is left."""
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="rlcap-class-", dir="/tmp"))
    try:
        (folder / "reference").mkdir()
        (folder / "reference" / "grpo.py").write_text(REFERENCE_TEXT)
        for h in NETWORK + TREE:
            (folder / h.name).mkdir()
            (folder / h.name / "grpo.py").write_text(listener.source(h))
        env = dict(os.environ)
        env.pop("RLCAP_NO_NAMESPACES", None)
        if not namespaces:
            env["RLCAP_NO_NAMESPACES"] = "1"
        proc = subprocess.run([sys.executable, "-m", "autograder", "grade-all", "d_grpo",
                               str(folder), "--jobs", "2", "--questions", "q1_centred"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
        import csv
        with open(folder / "_grades" / "grades.csv", newline="") as f:
            rows = {r["submission"]: r for r in csv.DictReader(f)}
        assert float(rows["reference"]["total"]) == 1, rows["reference"]
        for h in NETWORK + TREE:
            assert float(rows[h.name]["total"]) == 0, rows[h.name]
        time.sleep(0.3)
        assert listener.got == []
        for p in (folder / "_grades").glob("*/results.json"):
            text = p.read_text()
            assert ("network namespace" in text) == namespaces
            assert not _worker_pids(text) and not _worker_files(text), p
        for h in TREE:
            assert not [p for p in h.leaves if os.path.lexists(p)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- round 4: deny by default
import ctypes  # noqa: E402
import platform  # noqa: E402

from autograder.catalogue.hostile import ABSTRACT_LISTENER, KERNEL  # noqa: E402
from autograder.grading import judging  # noqa: E402
from test_hidden_channels import _leaked, _spied_grade  # noqa: E402

from autograder.harness.sweeps import (KEY_SPEC_USER_KEYRING,  # noqa: E402
                                       KEY_SPEC_USER_SESSION_KEYRING, KEYCTL_NR)

KEYCTL = KEYCTL_NR.get(platform.machine(), KEYCTL_NR["x86_64"])
KEYCTL_READ = 11
KEYCTL_GET_KEYRING_ID = 0


def _posix_queues(uid: int) -> list[str]:
    """POSIX queues of ``uid`` in this IPC namespace: /dev/mqueue where mounted,
    else an mqueue file system mounted in a private mount namespace."""
    script = f"find {{d}} -mindepth 1 -uid {uid}"
    if os.path.ismount("/dev/mqueue"):
        out = subprocess.run(["sh", "-c", script.format(d="/dev/mqueue")], capture_output=True,
                             text=True)
    else:
        import tempfile
        d = tempfile.mkdtemp(prefix="rlcap-mq-")
        try:
            out = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                  f"mount -t mqueue none {d} && " + script.format(d=d)],
                                 capture_output=True, text=True)
        finally:
            os.rmdir(d)
        assert out.returncode == 0, out.stderr
    return out.stdout.split()


def _keys_of(uid: int, gid: int) -> list[str]:
    """What ``uid`` has in the kernel's keys: its /proc/key-users line when it
    counts more than its two (empty) user keyrings, and any key linked in those
    (read by a child that drops to the uid)."""
    found = []
    for _ in range(40):                  # the key collector frees unlinked keys soon after
        line = next((l for l in Path("/proc/key-users").read_text().splitlines()
                     if l.split(":")[0].strip() == str(uid)), "")
        if not line or int(line.split()[2].split("/")[0]) <= 2:
            break
        time.sleep(0.05)
    else:
        found.append(f"key-users: {line}")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            libc = ctypes.CDLL(None, use_errno=True)
            # the kernel links a new user keyring into the new user session keyring (this
            # child's read creates both, for a uid that never had them): not a leftover
            user_ring = libc.syscall(KEYCTL, KEYCTL_GET_KEYRING_ID,
                                     ctypes.c_long(KEY_SPEC_USER_KEYRING), 0)
            for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
                buf = ctypes.create_string_buffer(4096)
                n = libc.syscall(KEYCTL, KEYCTL_READ, ctypes.c_long(ring), buf, 4096)
                ids = array.array("i", buf.raw[:max(0, min(n, 4096)) // 4 * 4])
                n = 4 * sum(1 for i in ids if i != user_ring) if n >= 0 else n
                os.write(w, f"{ring}:{n}\n".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read().split()
    os.waitpid(pid, 0)
    found += [f"keyring {g} holds {g.split(':')[1]} bytes of key ids" for g in got
              if g.split(":")[1] not in ("0", "-1")]
    return found


def _kernel_leftovers(text: str) -> list[str]:
    """System V objects, POSIX queues and keys of the worker uid that graded
    ``text``'s submission, checked while no grading holds its slot."""
    import pwd
    from autograder.harness.sandbox import sysv_objects
    uid = int(re.search(r"\(uid (\d+)\)", text).group(1))
    gid = pwd.getpwuid(uid).pw_gid
    with _slot_held(text) as free:
        if not free:
            return []
        return ([f"sysv {k} {i}" for k, i in sysv_objects(uid)]
                + [f"queue {q}" for q in _posix_queues(uid)] + _keys_of(uid, gid))


class AbstractListener(_Recorder):
    """AF_UNIX listeners (stream and datagram) on ``ABSTRACT_LISTENER`` in the
    test's network namespace (the host's: a container-mode worker's too),
    recording what reaches them."""

    def __init__(self):
        stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stream.bind(ABSTRACT_LISTENER)
        stream.listen(8)
        dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        dgram.bind(ABSTRACT_LISTENER)
        self._start([stream, dgram])


@ROOT_ONLY
@MODES
@pytest.mark.parametrize("hostile", KERNEL, ids=[h.name for h in KERNEL])
def test_kernel_objects_carry_nothing(hostile, namespaces, tmp_path, monkeypatch):
    """Each way to stash q1's inputs (public and hidden) in a kernel object for
    q2 (a System V segment, queues, keyrings, an abstract socket, io_uring, a
    helper library's server) is refused by the allowlist in both modes: 0
    points, the refusal in q2's public feedback, no hidden input anywhere
    visible, nothing at the test's abstract listener, and no IPC object, queue,
    key, process or file of the worker's uid afterwards."""
    _set_mode(monkeypatch, namespaces)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(_source(hostile))
    results = tmp_path / "results.json"
    listener = AbstractListener()
    try:
        report, sent = _spied_grade(monkeypatch, "d_grpo", sub, results, list(hostile.questions))
    finally:
        time.sleep(0.2)
        listener.close()
    data = json.loads(results.read_text())
    text = json.dumps(data)
    visible = results.read_text() + report.table() + "\n".join(report.messages)
    assert data["score"] == 0 and ("network namespace" in text) == namespaces, text[-600:]
    assert hostile.message in text, text[:3000]
    assert "FOUND" not in text and "io_uring OPEN" not in text
    assert sent[judging.HIDDEN_PHASE] and _leaked(sent, visible) == []
    assert listener.got == [], listener.got[:3]
    assert not _worker_pids(text), "processes of the worker uid survived"
    assert not _worker_files(text), "files of the worker uid survived"
    assert not _kernel_leftovers(text), "kernel objects of the worker uid survived"


@ROOT_ONLY
@MODES
def test_sweep_removes_what_the_uid_left_in_the_kernel(namespaces, monkeypatch):
    """The second wall, without the allowlist: System V objects and keys made
    by the slot uid itself are gone after the sweep that follows every worker
    (with namespaces the System V objects went with the worker's IPC
    namespace, and its keys with its user namespace, where it has one); its
    POSIX queues cannot be made at all (RLIMIT_MSGQUEUE is 0)."""
    from autograder.harness.sandbox import Limits, open_sandbox, sysv_objects
    _set_mode(monkeypatch, namespaces)
    with open_sandbox() as sb:
        assert sb.namespaces == namespaces
        maker = (
            "import ctypes, os, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            f"add_key = {({'aarch64': 217}.get(platform.machine(), 248))}\n"
            "ok = [libc.shmget(0, 4096, 0o1001600) >= 0, libc.msgget(0, 0o1600) >= 0,\n"
            "      libc.semget(0, 1, 0o1600) >= 0]\n"
            "for ring in (-4, -5):\n"
            "    ok.append(libc.syscall(add_key, b'user', b'rlcap-t', b'secret', 6,\n"
            "                           ctypes.c_long(ring)) > 0)\n"
            "q = libc.mq_open(b'/rlcap-t', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
            "ok.append(q < 0 and ctypes.get_errno() == 24)      # EMFILE: RLIMIT_MSGQUEUE\n"
            "sys.exit(0 if all(ok) else 1)\n")
        where = sb.new_dir()
        proc = sb.popen([sb.python, "-c", maker], Limits(10), where,
                        {"PATH": "/usr/bin:/bin", "HOME": str(where / "home")})
        try:
            assert proc.wait(timeout=60) == 0
        finally:
            proc.end()
            proc.report()
        kinds = sorted(k for k, _ in sysv_objects(sb.uid))
        if sb.namespaces:                 # the worker's IPC namespace ended with it
            assert kinds == []
        else:
            assert kinds == ["msg", "sem", "shm"]
        if sb.namespaces and namespaces_module._NAMESPACES.get("user"):
            assert _keys_of(sb.uid, sb.gid) == []   # its keyrings ended with its user namespace
        else:
            assert _keys_of(sb.uid, sb.gid), "the keys were not made: the test proves nothing"
        sb.sweep_worker(where / "home")
        assert sysv_objects(sb.uid) == [] and _posix_queues(sb.uid) == []
        assert _keys_of(sb.uid, sb.gid) == []


ALLOWLIST_PROBE = r"""
import ctypes, errno, json, os, socket, sys, threading
sys.path.insert(0, sys.argv[1])
import numpy as np
import syscalls
syscalls.install()
import pyseccomp
libc = ctypes.CDLL(None, use_errno=True)
def raw(name, *args):
    nr = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    libc.syscall(nr, *args)
    return ctypes.get_errno()
got = {name: raw(name, 0, 0, 0, 0, 0) for name in (
    "shmget", "msgget", "semget", "mq_open", "add_key", "request_key", "keyctl", "memfd_create",
    "io_uring_setup", "bpf", "userfaultfd", "perf_event_open", "ptrace", "process_vm_readv",
    "pidfd_open", "unshare", "setns", "execve", "flock", "mincore", "inotify_init1", "eventfd2",
    "clone3", "kexec_load", "mount", "setuid")}
got["clone(CLONE_NEWUSER)"] = raw("clone", 0x10000000 | 17, 0, 0, 0, 0)
def refused(make):
    try:
        make()
    except OSError as e:
        return e.errno
    return 0
got["socket(AF_INET)"] = refused(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
got["socket(AF_UNIX, SOCK_DGRAM)"] = refused(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
got["connect(abstract)"] = refused(lambda: s.connect(b"\0rlcap-probe"))
got["bind(abstract)"] = refused(lambda: s.bind(b"\0rlcap-probe"))
a, b = socket.socketpair()
a.sendall(b"x")
assert b.recv(1) == b"x"
from threadpoolctl import threadpool_limits
with threadpool_limits(2):                       # OpenBLAS threads under the filter
    m = np.random.default_rng(0).random((400, 400))
    m = m @ m
t = threading.Thread(target=sum, args=(range(1000),)); t.start(); t.join()
pid = os.fork()
if pid == 0:
    os._exit(7)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
print(json.dumps(got))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp is Linux's")
def test_allowlist_refuses_each_class_and_keeps_what_grading_needs(tmp_path):
    """The filter alone (no root needed): every call of the classes it closes
    is refused with its errno (EPERM named, EACCES for the network, ENOSYS
    for anything unlisted and for clone3), while a socket pair, OpenBLAS
    threads, threads and fork still work."""
    pytest.importorskip("pyseccomp")
    script = tmp_path / "probe.py"
    script.write_text(ALLOWLIST_PROBE)
    proc = subprocess.run([sys.executable, str(script), str(ROOT / "autograder" / "harness")],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    import errno
    expected = {name: errno.EPERM for name in (
        "shmget", "msgget", "semget", "mq_open", "add_key", "request_key", "keyctl",
        "memfd_create", "io_uring_setup", "bpf", "userfaultfd", "perf_event_open", "ptrace",
        "process_vm_readv", "pidfd_open", "unshare", "setns", "execve", "flock", "mincore",
        "inotify_init1", "eventfd2", "clone(CLONE_NEWUSER)")}
    expected.update({"clone3": errno.ENOSYS, "kexec_load": errno.ENOSYS, "mount": errno.ENOSYS,
                     "setuid": errno.ENOSYS, "socket(AF_INET)": errno.EACCES,
                     "socket(AF_UNIX, SOCK_DGRAM)": errno.EACCES,
                     "connect(abstract)": errno.EACCES, "bind(abstract)": errno.EACCES})
    assert got == expected


@ROOT_ONLY
@pytest.mark.slow
@pytest.mark.parametrize("hostile", KERNEL, ids=[h.name for h in KERNEL])
def test_kernel_objects_through_run_autograder_without_namespaces(hostile, tmp_path,
                                                                  monkeypatch):
    """The Gradescope path as in its container (no namespaces): each kernel
    object stash is refused, scores 0, and leaves nothing of the worker uid."""
    _set_mode(monkeypatch, False)
    sub = tmp_path / "grpo.py"
    sub.write_text(_source(hostile))
    listener = AbstractListener()
    try:
        res = run_gradescope_zip(built("d_grpo")[1], [sub], questions=hostile.questions)
    finally:
        time.sleep(0.2)
        listener.close()
    text = json.dumps(res)
    assert res["score"] == 0 and "placeholder" not in res["extra_data"], text[:2000]
    assert "no namespaces here" in text and hostile.message in text, text[:3000]
    assert "FOUND" not in text and listener.got == []
    assert not _worker_pids(text) and not _worker_files(text) and not _kernel_leftovers(text)


# ---------------------------------------------------------------- round 5: the file system
from autograder.catalogue.hostile import FILESYSTEM  # noqa: E402
from autograder.harness import fspolicy, landlock, sweeps  # noqa: E402

HAS_LANDLOCK = landlock.abi() > 0
# The modes: a machine with namespaces; Gradescope's and PrairieLearn's (no namespaces), with
# Landlock where the kernel has it, and as on a kernel without it (the watchdog, the sweeps and
# the ACL then hold).


def _set_fs_mode(monkeypatch, mode: str) -> bool:
    """Set the sandbox mode; returns whether the worker is under Landlock."""
    _set_mode(monkeypatch, mode == "namespaces")
    if mode == "fallback-no-landlock":
        monkeypatch.setenv(sandbox_module.NO_LANDLOCK_ENV, "1")
    else:
        monkeypatch.delenv(sandbox_module.NO_LANDLOCK_ENV, raising=False)
    return HAS_LANDLOCK and mode != "fallback-no-landlock"


class PlaceSpy:
    """The largest size the slot uids' files reached in each world-writable
    place during a grading, sampled every 2 ms by descriptor (not the
    reaper's own count)."""

    def __init__(self):
        import pwd
        self.uids = {p.pw_uid for p in pwd.getpwall() if p.pw_name.startswith("rlcap-w")}
        self.peak_mb = {p: 0.0 for p in fspolicy.swept_places()}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while not self.stop.is_set():
            for place in self.peak_mb:
                got = sum(sweeps.usage(place, uid)[0] for uid in self.uids) / 2**20
                self.peak_mb[place] = max(self.peak_mb[place], got)
            time.sleep(0.002)

    def close(self):
        self.stop.set()
        self.thread.join(5)


# (a deep tree's sweep costs 2.8 ms per folder on an ext4 disk: 2,200 of them per worker
# without Landlock, the home's and /tmp's, about 15 s in all)
FS_CASES = [pytest.param(h, mode, id=f"{h.name}-{mode}", marks=(
    [pytest.mark.slow] if (h.name, mode) == ("deep_tree_everywhere", "fallback-no-landlock")
    else [])) for h in FILESYSTEM for mode in ("namespaces", "fallback", "fallback-no-landlock")]


@ROOT_ONLY
@pytest.mark.parametrize("hostile, mode", FS_CASES)
def test_file_system_attacks_hold(hostile, mode, tmp_path, monkeypatch):
    """Deep trees and long paths in every writable place, reads of the grader's
    assignment.toml, a forbidden dtype: 0 points, never an autograder fault,
    nothing left on disk (nothing quarantined), /dev/shm never past the quota
    + 64 MB, the toml never read, the dtype a protocol error. With Landlock
    every place but the home is refused by the kernel."""
    landlocked = _set_fs_mode(monkeypatch, mode)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text(_source(hostile))
    results = tmp_path / "results.json"
    spy = PlaceSpy()
    t0 = time.monotonic()
    try:
        grade("d_grpo", sub, questions=list(hostile.questions), results=results, echo=False)
    finally:
        spy.close()
    data = json.loads(results.read_text())
    text = json.dumps(data)
    statuses = [t["extra_data"]["status"] for t in data["tests"]]
    assert data["score"] == 0 and "placeholder" not in data["extra_data"], text[:2000]
    assert "autograder_fault" not in statuses, text[:3000]
    assert ("Landlock (ABI" in text) == landlocked and "for the staff" not in text, text[-1500:]
    if hostile.message:
        assert hostile.message in text, text[:3000]
    if landlocked and "PLACES" in text:               # only the home could be written
        for place in ("/tmp", "/dev/shm"):
            assert f"{place}: PermissionError 13" in text, text[:3000]
    if hostile.name == "long_paths_everywhere":
        assert max(spy.peak_mb.values()) <= fspolicy.QUOTA_MB + 64, spy.peak_mb
        if mode != "namespaces":                      # the watchdog's quota (the home's)
            assert "file quota" in text and statuses == ["timed_out"], text[:2000]
    if hostile.name == "reads_assignment_toml":
        assert "assignment.toml: READ" not in text and "instance_salt" not in text, text[:3000]
        if landlocked:
            assert "/proc/key-users: PermissionError" in text, text[:3000]
    if hostile.name == "forbidden_dtype_frame":
        assert statuses == ["protocol_error"], statuses
    assert not _worker_pids(text), "processes of the worker uid survived"
    assert not _worker_files(text), "files of the worker uid survived"
    print(hostile.name, mode, f"{time.monotonic() - t0:.1f} s",
          {p: round(mb) for p, mb in spy.peak_mb.items()})


def test_sweeps_walk_any_depth_and_path_length_by_descriptor(tmp_path):
    """2,000 nested folders (twice Python's recursion limit) and 20 folders of
    240-character names (a path past PATH_MAX, 4,096 bytes) with a file at
    each bottom: counted whole (the blocks the files occupy), counting stops
    at a limit, and emptied whole; at most MAX_OPEN folders open at a time."""
    top = tmp_path / "home"
    top.mkdir()
    back = os.open(".", os.O_RDONLY)
    try:
        os.chdir(top)
        for _ in range(2000):
            os.mkdir("d")
            os.chdir("d")
        Path("leaf").write_bytes(b"x" * 10_000)
        os.chdir(top)
        for i in range(20):
            os.mkdir(f"{i:02d}" + "L" * 238)
            os.chdir(f"{i:02d}" + "L" * 238)
        Path("big").write_bytes(b"y" * 3_000_000)
        assert len(os.getcwd()) > 4096
    finally:
        os.fchdir(back)
        os.close(back)
    size, entries = sweeps.usage(top, None, top_owned=True)
    assert entries == 2000 + 1 + 20 + 1 and size >= 3_000_000 + 10_000
    assert sweeps.usage(top, None, top_owned=True, limit_entries=50)[1] == 51
    opened, before = [], len(os.listdir("/proc/self/fd"))
    real_open = os.open

    def counting(*a, **k):
        fd = real_open(*a, **k)
        opened.append(len(os.listdir("/proc/self/fd")) - before)
        return fd
    os.open = counting
    try:
        walk = sweeps.empty(top)
    finally:
        os.open = real_open
    assert walk.left == [] and walk.entries == entries and os.listdir(top) == []
    assert max(opened) <= sweeps.MAX_OPEN + 2, max(opened)


@ROOT_ONLY
def test_what_cannot_be_removed_is_quarantined_and_told_never_a_fault(tmp_path):
    """A file the sweep cannot remove (made immutable here; a worker cannot do
    that itself) in the worker's home: the grading goes on, the entry is moved
    into a root-only folder out of the home, and the staff are told."""
    import fcntl as fcntl_module
    from autograder.harness.sandbox import open_sandbox
    FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, IMMUTABLE = 0x80086601, 0x40086602, 0x10
    with open_sandbox() as sb:
        d = sb.new_dir()
        stuck = d / "home" / "deep" / "stuck"
        stuck.parent.mkdir()
        stuck.write_text("x")
        fd = os.open(stuck, os.O_RDONLY)
        try:
            flags = bytearray(4)
            fcntl_module.ioctl(fd, FS_IOC_GETFLAGS, flags)
            flags = (int.from_bytes(flags, "little") | IMMUTABLE).to_bytes(4, "little")
            try:
                fcntl_module.ioctl(fd, FS_IOC_SETFLAGS, flags)
            except OSError:
                pytest.skip("this file system has no immutable flag")
        finally:
            os.close(fd)
        (d / "home" / "other").write_text("y")
        try:
            sb.sweep_worker(d / "home")
            assert os.listdir(d / "home") == []
            boxes = [e for e in os.listdir(d) if e.startswith(sweeps.QUARANTINE_PREFIX)]
            assert len(boxes) == 1 and stat.S_IMODE(os.stat(d / boxes[0]).st_mode) == 0o700
            assert any("quarantined as" in n and "for the staff" in n for n in sb.staff_notes)
        finally:
            for p in d.rglob("stuck"):
                fd = os.open(p, os.O_RDONLY)
                fcntl_module.ioctl(fd, FS_IOC_SETFLAGS, bytes(4))
                os.close(fd)


@pytest.mark.skipif(not HAS_LANDLOCK, reason="this kernel has no Landlock")
def test_landlock_rules_read_the_interpreter_and_write_only_the_home(tmp_path):
    """The worker's ruleset alone (no root needed), in a fresh interpreter:
    numpy imports and computes, the home is written, the submission's folder
    is read; a protected folder (a grader's tree, its assignment.toml), /tmp,
    /dev/shm, /proc and /etc/passwd are refused; an interpreter whose prefix
    holds the protected folder is carved around it."""
    grader = tmp_path / "grader"
    (grader / "assignments").mkdir(parents=True)
    (grader / "assignments" / "assignment.toml").write_text("instance_salt = 'k'\n")
    here, sandbox_dir = tmp_path / "worker", tmp_path / "sb"
    (sandbox_dir / "home").mkdir(parents=True)
    (sandbox_dir / "grpo.py").write_text("x = 1\n")
    here.mkdir()
    for name in ("fspolicy.py", "landlock.py"):
        shutil.copy(ROOT / "autograder" / "harness" / name, here / name)
    fspolicy.write_policy(here, fspolicy.grader_paths(grader))
    probe = (
        "import os, sys, json\n"
        f"sys.path.insert(0, {str(here)!r})\n"
        "import fspolicy\n"
        f"print(fspolicy.enforce({str(sandbox_dir)!r}, {str(sandbox_dir / 'home')!r}, "
        f"{str(here)!r}))\n"
        "import numpy as np\n"
        "assert float(np.linalg.norm(np.ones(4))) == 2.0\n"
        f"open({str(sandbox_dir / 'home' / 'f')!r}, 'w').write('ok')\n"
        f"assert open({str(sandbox_dir / 'grpo.py')!r}).read() == 'x = 1\\n'\n"
        "out = {}\n"
        f"for p in [{str(grader / 'assignments' / 'assignment.toml')!r}, '/tmp/x', '/dev/shm/x',\n"
        "          '/proc/self/status', '/etc/passwd']:\n"
        "    try:\n"
        "        open(p, 'a' if p.startswith(('/tmp', '/dev/shm')) else 'r').close()\n"
        "        out[p] = 'opened'\n"
        "    except OSError as e:\n"
        "        out[p] = e.errno\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, cwd=sandbox_dir,
                          env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    import errno
    assert set(got.values()) == {errno.EACCES}, got
    assert (sandbox_dir / "home" / "f").read_text() == "ok"
    carved = dict(fspolicy.carve(str(tmp_path), [str(grader)]))
    assert str(grader) not in carved and str(here) in carved and str(sandbox_dir) in carved


def test_forbidden_dtype_is_a_protocol_error_not_a_dead_worker():
    """A frame whose array claims dtype object (or a dtype numpy does not
    know): WireProtocol, which the probe reports as protocol_error."""
    from autograder.harness import wire
    for dtype in ("|O", "<U4", "not-a-dtype"):
        header = json.dumps({"ok": {"__nd__": 0, "dtype": dtype, "shape": [1]}}).encode()
        body = struct.pack("<Q", len(header)) + header + struct.pack("<QQ", 1, 8) + b"x" * 8
        with pytest.raises(wire.WireProtocol):
            wire.decode(body)


@ROOT_ONLY
@pytest.mark.parametrize("landlocked", [True, False], ids=["landlock", "no-landlock"])
def test_grade_all_worker_cannot_read_assignment_toml(landlocked, tmp_path):
    """grade-all as root without namespaces (a container), with Landlock and
    as on a kernel without it (then the ACL on the grader's tree holds): the
    worker's open() of assignment.toml fails."""
    if landlocked and not HAS_LANDLOCK:
        pytest.skip("this kernel has no Landlock")
    import tempfile
    h = next(h for h in FILESYSTEM if h.name == "reads_assignment_toml")
    folder = Path(tempfile.mkdtemp(prefix="rlcap-class-", dir="/tmp"))
    try:
        os.chmod(folder, 0o755)
        (folder / "toml_reader").mkdir()
        (folder / "toml_reader" / "grpo.py").write_text(_source(h))
        env = dict(os.environ, RLCAP_NO_NAMESPACES="1")
        env.pop(sandbox_module.NO_LANDLOCK_ENV, None)
        if not landlocked:
            env[sandbox_module.NO_LANDLOCK_ENV] = "1"
        proc = subprocess.run([sys.executable, "-m", "autograder", "grade-all", "d_grpo",
                               str(folder), "--jobs", "1", "--questions", "q1_centred"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        text = (folder / "_grades" / "toml_reader" / "results.json").read_text()
        assert "TOML" in text and f"{ROOT}/assignments/d_grpo/assignment.toml: " \
            "PermissionError" in text, text[:3000]
        assert "assignment.toml: READ" not in text and "instance_salt" not in text
        assert ("Landlock (ABI" in text) == landlocked
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_acl_denies_only_the_given_uids_and_comes_off_again():
    """The fallback's ACL (no namespaces, no Landlock): ``user:<uid>:---`` for
    the slot uids keeps them out of a world-readable folder, no one else's
    access changes (the mask is the group's bits), and taking the entries off
    leaves the folder as it was (no ACL at all)."""
    import tempfile
    folder = Path(tempfile.mkdtemp(prefix="rlcap-acl-", dir="/tmp"))   # every user may enter
    try:
        _acl_roundtrip(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _acl_roundtrip(folder: Path) -> None:
    (folder / "assignment.toml").write_text("instance_salt = 'k'\n")
    os.chmod(folder / "assignment.toml", 0o644)
    os.chmod(folder, 0o755)
    mode = os.stat(folder).st_mode
    why = fspolicy.deny_uids(str(folder), [4242, 4243])
    if why:
        pytest.skip(why)
    assert fspolicy.deny_uids(str(folder), [4242]) == ""            # idempotent
    assert os.stat(folder).st_mode == mode
    if os.geteuid() == 0:
        def reads(uid: int) -> bool:
            pid = os.fork()
            if pid == 0:
                try:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                    open(folder / "assignment.toml").close()
                    os._exit(0)
                except OSError:
                    os._exit(1)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert not reads(4242) and not reads(4243) and reads(4244)
    fspolicy.allow_uids(str(folder), [4242, 4243])
    with pytest.raises(OSError):
        os.getxattr(folder, fspolicy.ACL_XATTR)
    assert os.stat(folder).st_mode == mode
