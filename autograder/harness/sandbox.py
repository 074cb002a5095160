"""Where and as whom the probe worker runs.

As root (Gradescope, CI) the worker runs under a dedicated unprivileged uid
(``rlcap-w<slot>``, created on first use), with its own interpreter, the
worker script and the runtime copied to a directory it can read, and the
grader's own checkout made unreadable to it (mode 0700). After every
question every process of that uid is killed. Without root there is no
sandbox: grading still works, and the report says so.

Resource limits (CPU, address space, file size, processes) apply in both
cases; the uid-wide process limit only when the uid is the worker's own.
"""
from __future__ import annotations

import fcntl
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..paths import ROOT
from ..requirements import grader_requirements

HARNESS_DIR = Path(__file__).resolve().parent   # worker.py and wire.py
USER_PREFIX = "rlcap-w"
SLOTS = 8                                      # parallel gradings, one uid each
STATE_DIR = Path("/var/lib/rlcap")             # worker venv and slot locks (root, 0755)
SANDBOX_PARENT = Path(tempfile.gettempdir()) / "rlcap-sandboxes"   # root, 0711
WORKER_PYTHON_ENV = "AUTOGRADER_WORKER_PYTHON"


DEFAULT_MEMORY_MB = 1024                       # worker address space, unless assignment.toml says


@dataclass(frozen=True)
class Limits:
    """Per-worker resource limits: CPU seconds (hard = soft + 1 s, since
    SIGXCPU can be caught), address space, largest file written, processes."""
    cpu_s: float
    memory_mb: int = DEFAULT_MEMORY_MB
    file_mb: int = 64
    nproc: int = 64
    nofile: int = 256


@dataclass
class Sandbox:
    enabled: bool
    python: str
    worker_dir: Path                  # worker.py, wire.py and rlkit/ for the worker
    note: str
    uid: Optional[int] = None
    gid: Optional[int] = None
    _lock_fd: Optional[int] = None
    _own_dirs: list[Path] = field(default_factory=list)

    def new_dir(self) -> Path:
        """A fresh sandbox directory for one submission: root-owned, readable
        by the worker, with a writable ``home/`` scratch space inside."""
        SANDBOX_PARENT.mkdir(mode=0o711, exist_ok=True)
        os.chmod(SANDBOX_PARENT, 0o711)
        d = Path(tempfile.mkdtemp(prefix="sb-", dir=SANDBOX_PARENT))
        os.chmod(d, 0o755)
        home = d / "home"
        home.mkdir(mode=0o700)
        if self.enabled:
            os.chown(home, self.uid, self.gid)
        self._own_dirs.append(d)
        return d

    def prepare_log(self, path: Path) -> None:
        """Create the worker's output log so that the worker may append to it."""
        path.touch(mode=0o600)
        path.write_bytes(b"")
        if self.enabled:
            os.chown(path, self.uid, self.gid)

    def popen_kwargs(self, limits: Limits) -> dict:
        """Arguments for subprocess.Popen: new session, dropped uid, limits."""
        cpu = max(1, int(round(limits.cpu_s)))
        dedicated = self.enabled

        def apply_limits() -> None:        # runs in the child, after the uid drop
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            mem = limits.memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            size = limits.file_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_NOFILE, (limits.nofile, limits.nofile))
            if dedicated:
                resource.setrlimit(resource.RLIMIT_NPROC, (limits.nproc, limits.nproc))

        kwargs = {"start_new_session": True, "preexec_fn": apply_limits}
        if self.enabled:
            kwargs.update(user=self.uid, group=self.gid, extra_groups=[])
        return kwargs

    def kill_all(self) -> int:
        """Kill every process of the worker uid (a ``setsid`` child escapes a
        process-group kill); returns how many were found. No-op unsandboxed."""
        if not self.enabled:
            return 0
        found = 0
        for _ in range(50):
            pids = _pids_of_uid(self.uid)
            if not pids:
                return found
            found += len(pids)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGSTOP)     # freeze first: no forking away
                except ProcessLookupError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        return found

    def close(self) -> None:
        self.kill_all()
        for d in self._own_dirs:
            shutil.rmtree(d, ignore_errors=True)
        self._own_dirs.clear()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _pids_of_uid(uid: int) -> list[int]:
    """Live processes (zombies excluded: they are dead, awaiting a reaper)
    whose real or effective uid is ``uid``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                state = ""
                for line in f:
                    if line.startswith("State:"):
                        state = line.split()[1]
                    elif line.startswith("Uid:"):
                        ids = line.split()
                        if state not in ("Z", "X") and uid in (int(ids[1]), int(ids[2])):
                            pids.append(int(entry))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return pids


def _ensure_user(name: str) -> tuple[int, int]:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", "--user-group", name],
                       check=True, capture_output=True)
        pw = pwd.getpwnam(name)
    return pw.pw_uid, pw.pw_gid


def _acquire_slot() -> tuple[int, int]:
    """Lock one of SLOTS uid slots for this grading run: (slot, lock fd)."""
    lock_dir = STATE_DIR / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    while True:
        for slot in range(SLOTS):
            fd = os.open(lock_dir / f"slot-{slot}", os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return slot, fd
            except BlockingIOError:
                os.close(fd)
        time.sleep(0.2)


def _works_as(python: str, uid: int, gid: int, worker_dir: Path) -> bool:
    try:
        r = subprocess.run([python, "-E", "-s", "-B", "-c",
                            "import sys; sys.path.insert(0, sys.argv[1]); "
                            "import numpy, threadpoolctl, wire, rlkit", str(worker_dir)],
                           user=uid, group=gid, extra_groups=[], cwd="/",
                           env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
                           capture_output=True, timeout=60)
        return r.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _grader_requirements() -> list[str]:
    path = ROOT / "requirements-grader.txt"
    if path.is_file():
        return [l.strip() for l in path.read_text().splitlines() if l.strip()]
    return grader_requirements()


def _build_worker_venv(uid: int, gid: int, worker_dir: Path) -> Optional[str]:
    """A venv outside the (now private) checkout, from the system python3,
    with only the runtime's pinned dependencies; reused across runs."""
    base = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
    if not base:
        return None
    venv = STATE_DIR / f"venv-{sys.version_info.major}{sys.version_info.minor}"
    python = str(venv / "bin" / "python")
    if os.path.exists(python) and _works_as(python, uid, gid, worker_dir):
        return python
    shutil.rmtree(venv, ignore_errors=True)
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(STATE_DIR, 0o755)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *_grader_requirements()], check=True, capture_output=True)
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    return python if _works_as(python, uid, gid, worker_dir) else None


def _copy_worker_files(dest: Path) -> None:
    dest.mkdir(mode=0o755)
    for name in ("worker.py", "wire.py"):
        shutil.copy(HARNESS_DIR / name, dest / name)
    shutil.copytree(ROOT / "rlkit", dest / "rlkit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(dest)], check=True)


def _make_private(path: Path) -> None:
    """Mode 0700 on the grader's checkout: source, expected values and any
    solutions become unreadable to other uids (root is unaffected)."""
    os.chmod(path, 0o700)


def open_sandbox(force_off: bool = False) -> Sandbox:
    """The sandbox for one grading run (call ``close()`` when done)."""
    SANDBOX_PARENT.mkdir(mode=0o711, exist_ok=True)
    worker_dir = Path(tempfile.mkdtemp(prefix="worker-", dir=SANDBOX_PARENT))
    os.rmdir(worker_dir)
    _copy_worker_files(worker_dir)
    if force_off or os.geteuid() != 0:
        sb = Sandbox(False, sys.executable, worker_dir,
                     f"not sandboxed: grading runs as uid {os.geteuid()} (not root), so the "
                     "submission runs with this user's rights; resource limits still apply")
        sb._own_dirs.append(worker_dir)
        return sb
    slot, fd = _acquire_slot()
    uid, gid = _ensure_user(f"{USER_PREFIX}{slot}")
    _make_private(ROOT)
    candidates = [os.environ.get(WORKER_PYTHON_ENV), "/opt/rlcap-venv/bin/python", sys.executable]
    python = next((p for p in candidates if p and os.path.exists(p)
                   and _works_as(p, uid, gid, worker_dir)), None)
    if python is None:
        python = _build_worker_venv(uid, gid, worker_dir)
    if python is None:
        os.close(fd)
        raise RuntimeError("no Python interpreter with numpy is usable by the worker uid")
    sb = Sandbox(True, python, worker_dir, f"sandboxed: worker runs as {USER_PREFIX}{slot} "
                 f"(uid {uid})", uid=uid, gid=gid, _lock_fd=fd)
    sb._own_dirs.append(worker_dir)
    sb.kill_all()                                   # leftovers of an earlier crash
    return sb
