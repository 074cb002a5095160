"""Where and as whom the probe worker runs.

As root (Gradescope, CI) the worker runs under a dedicated unprivileged uid
(``rlcap-w<slot>``, one per concurrent grading on the machine, created on
first use), with its own interpreter, and the worker script and runtime
copied to a directory of the slot. Each slot's files are readable only by
root and that slot (directories ``root:rlcap-w<slot>`` 02750, files 0640).

A slot (its uid ``rlcap-w<N>``) is machine-wide, and so is its lock
(``SLOT_LOCK_DIR``, whatever ``RLCAP_STATE_DIR`` says): one grading at a
time holds a slot, so every process of the slot's uid belongs to that
grading's worker tree, and the sweeps and kills below touch nothing else.

Where the kernel allows it (a VM or a machine as root: CI, lab machines),
each worker runs in namespaces of its own of every kind that holds state
(``nsinit.py``): PID, mount, network, IPC (System V objects, POSIX queues),
UTS, cgroup where the kernel has it, and a user namespace mapping only the
slot's uid and gid where unprivileged user namespaces are allowed (the uid's
keyrings are then per worker). It sees only the system's /usr and /etc, its
interpreter, the worker files and its submission; its /proc lists only its
own processes; /tmp, /var/tmp, /dev/shm and its scratch home are private
size-limited tmpfs; its only network device is a loopback that is down; and
when the worker ends, the kernel kills everything it started and destroys
every IPC object it made. Where it does not (a container without
CAP_SYS_ADMIN, e.g. Gradescope), the fallback: the worker's reaper
(``nsinit.py`` without namespaces) is the subreaper of its tree and kills
what is left of it when the worker ends; the watchdog holds the
world-writable places and the home to the same quota as the tmpfs; after
every question every process of the uid is killed (zombie group leaders with
live threads included), its System V objects removed, its user keyrings
emptied, and the uid's files in the world-writable places (``SWEPT``,
``/dev/mqueue`` among them) and the home removed; its RLIMIT_MSGQUEUE is 0.
The grader never changes the permissions of the user's folders; on
Gradescope setup.sh makes its own source folder private.

Why util-linux's ``unshare`` and our ``nsinit.py`` rather than bubblewrap
(``bwrap --unshare-all --die-with-parent``): run by root, ``bwrap
--unshare-user --uid N`` maps the sandbox's uid N to root outside (measured
on Debian 12's bubblewrap 0.8.0: the sandboxed process is uid 0 in the host's
``ps``), and without a user namespace it keeps every capability, so the
reaper would still drop to the slot uid itself; run as the slot uid it needs
unprivileged user namespaces for everything, its ``--tmpfs`` cannot limit a
tmpfs's number of files (an inode is memory no quota sees), and its own init
would stand between our reaper and the worker, where the reaper must be PID 1
of the namespace to account and end the tree. It would replace only
``nsinit.build_root``'s mounts, and on Gradescope, which gives no namespaces
at all, nothing; ``unshare`` is part of util-linux, on every Debian and
Ubuntu.

In every mode (``treewatch.py``, in the reaper) CPU, memory and files are
accounted over the worker's whole tree (every process and thread it
started), and the tree is killed at the question's CPU budget or the
memory limit; the worker (``worker.py``) installs a seccomp syscall
allowlist (``syscalls.py``: deny by default; no System V IPC, POSIX queue,
key, memfd, io_uring, exec, socket but a connected AF_UNIX pair, ...) before
it imports the submission, so that even a container without namespaces
gives it no network and no kernel object that outlives it or reaches
another process.

Without root there is no sandbox: grading still works, and the report says
so. Resource limits (CPU, address space, file size, processes) and the
tree's accounting apply in every case; the uid-wide process limit, the
file quota, the sweeps and the syscall allowlist only when the uid is the
worker's.

The worker's interpreter (:func:`_candidates`), the first that passes the
worker's self-test as the worker uid: AUTOGRADER_WORKER_PYTHON, the pins'
venv of Gradescope's setup.sh or PrairieLearn's course image
(PLATFORM_VENV), the worker venv below, then the grader's own interpreter
(PrairieLearn's stock image, a hosted notebook's system Python; numpy
MIN_NUMPY or newer). Only if none works is the worker venv built (pip
needs PyPI: not on a machine with no network device). pyseccomp, where the
interpreter lacks it, comes from the grader's ``vendor/`` (PrairieLearn).

Shared state: the worker venv (``venv-<py>-<hash of its pins>`` in
STATE_DIR) is built once,
atomically (a temporary directory renamed into place, under a lock), by
``python -m autograder worker-venv`` or by the first grading on a fresh
machine; grading never deletes or rebuilds it. An unusable interpreter is an
autograder fault (:class:`WorkerUnavailable`), never the student's.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .. import MIN_NUMPY
from ..paths import ROOT
from ..requirements import GRADER_REQUIREMENTS, grader_requirements

try:                     # Linux/POSIX only (it reads /proc and os.sysconf); the notebook's
    from . import treewatch   # in-process checks import this module on any OS
except (ImportError, AttributeError):   # pragma: no cover - a test hides the POSIX modules
    treewatch = None

try:                     # POSIX only; without them (Windows) nothing here can run, but the
    import fcntl         # notebook's in-process checks, which import this module, still work
    import pwd
    import resource
except ImportError:      # pragma: no cover - exercised by a test that hides these modules
    fcntl = pwd = resource = None

HARNESS_DIR = Path(__file__).resolve().parent   # WORKER_FILES
WORKER_FILES = ("worker.py", "wire.py", "syscalls.py", "nsinit.py", "treewatch.py")
USER_PREFIX = "rlcap-w"
SLOTS = 8                                      # parallel gradings, one uid each
DEFAULT_STATE_DIR = Path("/var/lib/rlcap")
STATE_DIR = Path(os.environ.get("RLCAP_STATE_DIR", DEFAULT_STATE_DIR))   # root, 0755
# The slots' locks: machine-wide like the uids they guard (never under STATE_DIR, which a
# grading may point elsewhere). /run is root's, per boot: a lock outlives no reboot.
SLOT_LOCK_DIR = Path("/run/rlcap-slots")
WORKER_PYTHON_ENV = "AUTOGRADER_WORKER_PYTHON"
PLATFORM_VENV = "/opt/rlcap-venv"   # the pins' venv of Gradescope's setup.sh and of PrairieLearn's
                                    # course image (dist/prairielearn/image/Dockerfile)
DEFAULT_MEMORY_MB = 1024                       # worker address space, unless assignment.toml says
TMPFS_MB = 64                                  # each private tmpfs (/tmp, /dev/shm, home, ...)
TMPFS_FILES = 2048                             # ... and its number of files
QUOTA_MB = 4 * TMPFS_MB                        # files of one worker tree without namespaces
QUOTA_FILES = 4 * TMPFS_FILES                  # (the four tmpfs' sizes together)
KILL_WAIT_S = 5.0                              # killed processes may take a while to go
# World-writable places (Debian, Ubuntu): a worker without namespaces can write there, so
# the fallback holds them to the quota and sweeps them after every worker.
SWEPT = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue", "/var/crash")


class WorkerUnavailable(RuntimeError):
    """No interpreter usable by the worker uid: an autograder fault. ``str()``
    is what a student may read (results.json); ``detail`` what the course
    staff need, for the grading log (the interpreters tried and why each
    failed, what to do); never a pip command line in either."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail or message


# What a student reads when no interpreter can run the worker (the log has the detail).
NO_WORKER = ("no Python could run your code here (a fault of the course's grading setup, "
             "not of your code; the grading log says what the course staff must do)")
# Pure-Python modules the worker needs that an image may lack (PrairieLearn's stock image has no
# pyseccomp): make dist ships them in ROOT/VENDOR_DIR; the worker's folder gets a copy, which
# its interpreter imports first (the script's folder leads sys.path).
VENDOR_DIR = "vendor"
VENDORED = ("pyseccomp.py",)


def sandbox_parent() -> Path:
    """Where this user's sandbox directories live: root's in STATE_DIR
    (0711), anyone else's in their own temp dir (``rlcap-sandboxes-<uid>``,
    0700), so that any number of users can grade on one machine."""
    if os.geteuid() == 0:
        parent, mode = STATE_DIR / "sandboxes", 0o711
    else:
        parent, mode = Path(tempfile.gettempdir()) / f"rlcap-sandboxes-{os.geteuid()}", 0o700
    parent.parent.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:           # the worker uid must pass through STATE_DIR (a `mktemp -d`
        st = os.lstat(STATE_DIR)    # one is 0700); its venv below is made 0755 the same way
        if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & stat.S_IXOTH:
            os.chmod(STATE_DIR, stat.S_IMODE(st.st_mode) | 0o011)
    try:
        parent.mkdir(mode=mode)
    except FileExistsError:
        pass
    st = os.lstat(parent)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():   # squatted: use a fresh one
        return Path(tempfile.mkdtemp(prefix=f"rlcap-sandboxes-{os.geteuid()}-"))
    os.chmod(parent, mode)
    return parent


@dataclass(frozen=True)
class Limits:
    """Per-worker resource limits: CPU seconds (hard = soft + 1 s, since
    SIGXCPU can be caught), address space, largest file written, processes."""
    cpu_s: float
    memory_mb: int = DEFAULT_MEMORY_MB
    file_mb: int = 64
    nproc: int = 16                  # processes and threads of the slot uid
    nofile: int = 256

    def rlimits(self, dedicated: bool) -> dict[str, tuple[int, int]]:
        cpu = max(1, int(round(self.cpu_s)))
        mem, size = self.memory_mb * 1024 * 1024, self.file_mb * 1024 * 1024
        limits = {"RLIMIT_CPU": (cpu, cpu + 1), "RLIMIT_AS": (mem, mem),
                  "RLIMIT_FSIZE": (size, size), "RLIMIT_CORE": (0, 0),
                  "RLIMIT_NOFILE": (self.nofile, self.nofile)}
        if dedicated:
            limits["RLIMIT_NPROC"] = (self.nproc, self.nproc)
            limits["RLIMIT_MSGQUEUE"] = (0, 0)     # no POSIX queue, whatever the filter
        return limits


@dataclass
class Sandbox:
    enabled: bool
    python: str
    worker_dir: Path                  # WORKER_FILES and rlkit/ for the worker
    note: str
    uid: Optional[int] = None
    gid: Optional[int] = None
    namespaces: bool = False          # each worker in its own namespaces (NAMESPACE_FLAGS)
    syscall_filter: bool = False      # the worker installs its allowlist (sandboxed, but a handout)
    parent: Path = field(default_factory=sandbox_parent)
    _lock_fds: list[int] = field(default_factory=list)
    _own_dirs: list[Path] = field(default_factory=list)
    _keys_seen: Optional[str] = None          # the uid's /proc/key-users line after a sweep

    def new_dir(self) -> Path:
        """A fresh sandbox directory for one submission: root-owned, readable
        by the slot's group only (setgid, so files created in it are too),
        with a scratch ``home/`` writable by the worker."""
        d = Path(tempfile.mkdtemp(prefix="sb-", dir=self.parent))
        home = d / "home"
        home.mkdir(mode=0o700)
        if self.enabled:
            os.chown(d, 0, self.gid)
            os.chmod(d, 0o2750)
            os.chown(home, self.uid, self.gid)
        self._own_dirs.append(d)
        return d

    def prepare_log(self, path: Path) -> None:
        """Create the worker's output log so that the worker may append to it."""
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        if self.enabled:
            os.fchown(fd, self.uid, self.gid)
        os.close(fd)

    def popen(self, argv: list[str], limits: Limits, cwd: Path, env: dict[str, str],
              pass_fds: tuple[int, ...] = ()) -> "WorkerProcess":
        """Start ``argv`` as the worker under its reaper (``nsinit.py``): in
        its namespaces when available, else as a subreaper in a new session,
        under the dropped uid when sandboxed; ``limits`` applied to every
        process and accounted over the whole tree."""
        common = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL, start_new_session=True)
        rlimits = limits.rlimits(dedicated=self.enabled)
        if not sys.platform.startswith("linux"):        # no /proc, no prctl (macOS, unsandboxed)
            def apply_limits() -> None:
                for name, value in rlimits.items():
                    resource.setrlimit(getattr(resource, name), value)
            return WorkerProcess(subprocess.Popen(argv, cwd=cwd, env=env, pass_fds=pass_fds,
                                                  preexec_fn=apply_limits, **common), None)
        home = str(Path(env.get("HOME", cwd / "home")))
        watch = {"cpu_s": limits.cpu_s, "memory_mb": limits.memory_mb,
                 "uid": self.uid if self.enabled else None}
        if self.enabled and not self.namespaces:        # the tmpfs' quota, held by the watchdog
            inside = home.startswith(str(cwd).rstrip("/") + "/")    # home is counted with cwd
            watch.update(files_mb=QUOTA_MB, files_count=QUOTA_FILES,
                         places=swept_places() + [str(cwd)] + ([] if inside else [home]))
        status_r, status_w = os.pipe()
        spec = {"namespaces": self.namespaces, "sandbox": str(cwd), "home": home,
                "uid": self.uid if self.enabled else None,
                "gid": self.gid if self.enabled else None, "rlimits": rlimits,
                "argv": argv, "env": env, "pass_fds": list(pass_fds), "status_fd": status_w,
                "watch": watch}
        # the reaper runs as root (before its pivot_root, with namespaces): the judge's interpreter
        reaper = [sys.executable, "-I", "-S", str(self.worker_dir / "nsinit.py")]
        if self.namespaces:
            spec.update(root=str(STATE_DIR / "nsroot"),
                        read_only=_python_dirs(self.python) + [str(self.worker_dir)],
                        tmpfs_options=f"size={TMPFS_MB}m,nr_inodes={TMPFS_FILES}")
            reaper = (["unshare", "--fork"] + list(_NAMESPACES.get("flags", NAMESPACE_FLAGS))
                      + ["--propagation", "private", "--kill-child", "--"] + reaper)
        try:
            proc = subprocess.Popen(reaper, cwd="/", pass_fds=tuple(pass_fds) + (status_w,),
                                    env={"PATH": "/usr/bin:/bin",
                                         "RLCAP_NSINIT": json.dumps(spec)}, **common)
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        return WorkerProcess(proc, status_r, self.namespaces)

    def kill_all(self) -> int:
        """Kill every process of the worker uid (a ``setsid`` child escapes a
        process-group kill; a zombie group leader may still have live
        threads); returns how many were found. No-op unsandboxed."""
        if not self.enabled:
            return 0
        found, deadline = 0, time.monotonic() + KILL_WAIT_S
        while time.monotonic() < deadline:
            pids = _pids_of_uid(self.uid)
            if not pids:
                return found
            found += len(pids)
            for sig in (signal.SIGSTOP, signal.SIGKILL):    # freeze first: no forking away
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
            time.sleep(0.01)
        return found

    def sweep_files(self) -> int:
        """Remove the worker uid's files from /tmp, /var/tmp and /dev/shm (the
        fallback's private tmp); returns how many entries went."""
        if not self.enabled:
            return 0
        return sum(_remove_owned(Path(p), self.uid) for p in swept_places())

    def sweep_kernel_objects(self) -> int:
        """Remove what the uid owns in the kernel besides processes and files:
        its System V segments, queues and semaphore sets (by owner or creator,
        from ``/proc/sysvipc``), and the keys of its user and user-session
        keyrings (when ``/proc/key-users`` shows that they changed since the
        last sweep). POSIX queues go with the files (``/dev/mqueue`` in
        SWEPT, where mounted); the worker's RLIMIT_MSGQUEUE of 0 lets it make
        none anyway. The worker's allowlist refuses every call that makes
        these objects; this is the second wall (the first, with namespaces:
        the worker's own IPC namespace, which ends with it). Returns how many
        objects went. No-op unsandboxed."""
        if not self.enabled:
            return 0
        removed = remove_sysv_objects(self.uid)
        keys = _key_users(self.uid)
        if keys and keys != self._keys_seen:
            removed += clear_keyrings(self.uid, self.gid)
            self._keys_seen = _settled_key_users(self.uid)
        return removed

    def sweep_worker(self, home: Path) -> int:
        """After every worker (so after every question phase): kill what is
        left of the uid, remove its kernel objects and its files from the
        swept places and empty its scratch ``home``, so that nothing one
        worker wrote reaches the next (with namespaces the files were in
        private tmpfs, the IPC objects in the worker's own IPC namespace)."""
        found = self.kill_all() + self.sweep_kernel_objects() + self.sweep_files()
        try:
            entries = list(os.scandir(home))
        except OSError:
            return found
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
                found += 1
            except OSError:
                continue
        return found

    def close(self) -> None:
        self.kill_all()
        self.sweep_kernel_objects()
        self.sweep_files()
        for d in self._own_dirs:
            shutil.rmtree(d, ignore_errors=True)
        self._own_dirs.clear()
        for fd in self._lock_fds:
            os.close(fd)
        self._lock_fds.clear()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WorkerProcess:
    """A started worker, seen from the judge: the process the judge started
    (``unshare`` with namespaces, else the reaper itself, or the worker where
    there is no /proc) and the read end of the reaper's status pipe."""

    def __init__(self, proc: subprocess.Popen, status_fd: Optional[int],
                 namespaces: bool = False):
        self.proc, self.status_fd, self.namespaces = proc, status_fd, namespaces
        self._report: Optional[dict] = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def wait(self, timeout: Optional[float] = None) -> int:
        """The worker's exit status (negative: a signal; the reaper reports a
        signal ``s`` as ``128 + s``)."""
        code = self.proc.wait(timeout=timeout)
        return -(code - 128) if self.status_fd is not None and code > 128 else code

    def end(self) -> None:
        """End the worker's whole tree: the reaper kills it and reports what it
        used (SIGUSR1); SIGKILL to the process group if it does not end."""
        if self.proc.poll() is None and self.status_fd is not None:
            reaper = self.proc.pid
            if self.namespaces:                         # unshare's child is the reaper
                kids = treewatch.children(self.proc.pid)
                reaper = kids[0] if kids else None
            if reaper is not None:
                try:
                    os.kill(reaper, signal.SIGUSR1)
                    self.proc.wait(timeout=2)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def report(self) -> dict:
        """What the reaper reported once the tree ended: ``verdict`` ("",
        "cpu", "memory", "files"), ``cpu_s``, ``peak_mb``, ``files_mb``,
        ``tasks``, ``exit``; or ``fault`` (the sandbox could not be built);
        {} when it reported nothing (killed, or no reaper)."""
        if self._report is None:
            self._report = {}
            if self.status_fd is not None:
                os.set_blocking(self.status_fd, False)
                try:
                    data = os.read(self.status_fd, 65536)
                except (BlockingIOError, OSError):
                    data = b""
                os.close(self.status_fd)
                self.status_fd = -1                     # still "has a reaper" for wait()
                try:
                    got = json.loads(data.decode().splitlines()[0]) if data.strip() else {}
                    self._report = got if isinstance(got, dict) else {}
                except (ValueError, UnicodeDecodeError):
                    self._report = {}
        return self._report


def swept_places() -> list[str]:
    """The world-writable places of SWEPT that exist here, once each."""
    places, seen = [], set()
    for p in SWEPT:
        real = os.path.realpath(p)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            places.append(real)
    return places


def _pids_of_uid(uid: int) -> list[int]:
    """Processes whose real or effective uid is ``uid``: live ones, and
    zombie thread-group leaders that still have a live thread (a raw exit of
    the main thread leaves one; killing the group ends the threads). Dead
    zombies awaiting a reaper are left alone."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            state, ids = _status(f"/proc/{entry}/status")
            if ids is None or uid not in ids:
                continue
            if state in ("Z", "X"):
                threads = [t for t in os.listdir(f"/proc/{entry}/task") if t != entry]
                if not any(_status(f"/proc/{entry}/task/{t}/status")[0] not in ("Z", "X", "")
                           for t in threads):
                    continue
            pids.append(int(entry))
        except (FileNotFoundError, ProcessLookupError, PermissionError, NotADirectoryError):
            continue
    return pids


def _status(path: str) -> tuple[str, Optional[tuple[int, int]]]:
    """(state letter, (real uid, effective uid)) from a /proc status file."""
    state, ids = "", None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("State:"):
                    state = line.split()[1]
                elif line.startswith("Uid:"):
                    parts = line.split()
                    ids = (int(parts[1]), int(parts[2]))
                    break
    except (FileNotFoundError, ProcessLookupError):
        pass
    return state, ids


SYSV = {"shm": "shmid", "msg": "msqid", "sem": "semid"}      # /proc/sysvipc/<kind>: id column
IPC_RMID = 0
KEYCTL_NR = {"x86_64": 250, "aarch64": 219}                   # syscall numbers of keyctl
KEYCTL_CLEAR = 7
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5


def sysv_objects(uid: int) -> list[tuple[str, int]]:
    """(kind, id) of every System V object of this IPC namespace that ``uid``
    owns or created."""
    found = []
    for kind, column in SYSV.items():
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        head = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(head, line.split()))
            if str(uid) in (row.get("uid"), row.get("cuid")) and column in row:
                found.append((kind, int(row[column])))
    return found


def remove_sysv_objects(uid: int) -> int:
    """Remove ``uid``'s System V segments, queues and semaphore sets (as root):
    how many went. A segment still attached goes when its last process does
    (the uid's processes are killed before)."""
    objects = sysv_objects(uid)
    if not objects:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    removed = 0
    for kind, ident in objects:
        if kind == "shm":
            ok = libc.shmctl(ident, IPC_RMID, None) == 0
        elif kind == "msg":
            ok = libc.msgctl(ident, IPC_RMID, None) == 0
        else:
            ok = libc.semctl(ident, 0, IPC_RMID) == 0
        removed += ok
    return removed


def _key_users(uid: int) -> str:
    """``uid``'s line of /proc/key-users (its number of keys and their bytes), or ""."""
    try:
        with open("/proc/key-users") as f:
            return next((l.strip() for l in f if l.split(":")[0].strip() == str(uid)), "")
    except OSError:
        return ""


def _settled_key_users(uid: int, wait_s: float = 0.2) -> str:
    """``uid``'s /proc/key-users line once the kernel's key collector has freed
    the keys a clear unlinked (it runs soon after, not at once)."""
    line, deadline = _key_users(uid), time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(0.005)
        again = _key_users(uid)
        if again == line:
            return line
        line = again
    return line


def clear_keyrings(uid: int, gid: int) -> int:
    """Empty ``uid``'s user and user-session keyrings (a child drops to the uid:
    root cannot name another uid's keyrings); returns 1 if the child did, else
    0 (no keyctl here: an unknown architecture, or a container's own seccomp
    profile, which then refuses it to the worker too)."""
    nr = KEYCTL_NR.get(platform.machine())
    if nr is None:
        return 0
    pid = os.fork()
    if pid == 0:                                           # pragma: no cover - the child
        code = 1
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            libc = ctypes.CDLL(None, use_errno=True)
            code = 0
            for spec in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
                if libc.syscall(nr, KEYCTL_CLEAR, ctypes.c_long(spec)) != 0:
                    code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return int(os.waitstatus_to_exitcode(status) == 0)


def _remove_owned(top: Path, uid: int) -> int:
    """Remove every entry under ``top`` owned by ``uid`` (no symlink followed)."""
    removed = 0
    try:
        entries = list(os.scandir(top))
    except OSError:
        return 0
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
            if st.st_uid == uid:
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
                removed += 1
            elif stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH:
                removed += _remove_owned(Path(e.path), uid)   # a world-writable subfolder
        except OSError:
            continue
    return removed


def _python_dirs(python: str) -> list[str]:
    """Directories the worker's interpreter needs besides /usr: its venv (or
    installation prefix) when outside /usr."""
    dirs = []
    for exe in (os.path.abspath(python), os.path.realpath(python)):
        prefix = os.path.dirname(os.path.dirname(exe))
        if not (prefix == "/usr" or prefix.startswith("/usr/")) and prefix not in dirs:
            dirs.append(prefix)
    return dirs


def _ensure_user(name: str) -> tuple[int, int]:
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", "--user-group", name],
                       capture_output=True)          # a concurrent useradd may have won
        pw = pwd.getpwnam(name)
    return pw.pw_uid, pw.pw_gid


def _lock_dir(path: Path) -> Path:
    """``path`` as a directory only root can enter (made if missing; a
    squatted one, not root's or a symlink, is refused)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        raise WorkerUnavailable(f"{path} is not a directory of root's: refusing its locks")
    os.chmod(path, 0o700)
    return path


def _try_lock(path: Path) -> Optional[int]:
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def _acquire_slot() -> tuple[int, list[int]]:
    """Lock one of SLOTS uid slots for this grading run: (slot, lock fds).
    The lock is machine-wide (``SLOT_LOCK_DIR``), as the slot's uid is. The
    slot's locks where graders of earlier versions took them (``locks/``
    under STATE_DIR and under the default state dir) are taken too, so that
    such a grader on the same machine never shares the slot either."""
    machine = _lock_dir(SLOT_LOCK_DIR)
    legacy = []
    for state in dict.fromkeys((STATE_DIR, DEFAULT_STATE_DIR)):
        (state / "locks").mkdir(parents=True, exist_ok=True)
        legacy.append(state / "locks")
    while True:
        for slot in range(SLOTS):
            fds = []
            for lock in [machine] + legacy:
                fd = _try_lock(lock / f"slot-{slot}")
                if fd is None:
                    break
                fds.append(fd)
            if len(fds) == 1 + len(legacy):
                return slot, fds
            for fd in fds:
                os.close(fd)
        time.sleep(0.2)


# Every namespace that holds state, one each per worker (util-linux's unshare): PID, mount,
# network, System V IPC and POSIX queues, host name; the cgroup namespace where the kernel
# has it (Linux 4.6). The user namespace: see nsinit.py.
NAMESPACE_FLAGS = ("--pid", "--mount", "--net", "--ipc", "--uts", "--cgroup")
OPTIONAL_FLAGS = ("--cgroup",)
_NAMESPACES: dict = {}


def _try(sb: Sandbox, argv: list[str], where: Path) -> bool:
    """Run ``argv`` as a worker would, in the sandbox directory ``where``."""
    try:
        proc = sb.popen(argv, Limits(30), where,
                        {"PATH": "/usr/bin:/bin", "HOME": str(where / "home")})
    except (OSError, subprocess.SubprocessError):
        return False
    try:
        return proc.wait(timeout=60) == 0
    except subprocess.SubprocessError:
        return False
    finally:
        proc.end()
        proc.report()


def _works(sb: Sandbox, python: str, where: Path) -> bool:
    """``python`` runs the worker as grading would (same uid, same namespaces,
    its syscall allowlist installed) and imports numpy, threadpoolctl and rlkit."""
    probe = Sandbox(sb.enabled, python, sb.worker_dir, "", sb.uid, sb.gid, sb.namespaces,
                    sb.syscall_filter, sb.parent)
    return _try(probe, [python, "-E", "-s", "-B", str(sb.worker_dir / "worker.py"),
                        "--self-test"] + (["--seccomp"] if sb.syscall_filter else []), where)


def _namespaces_work(sb: Sandbox, python: str, where: Path) -> bool:
    """Can this machine give a worker its own namespaces (NAMESPACE_FLAGS; the
    cgroup one only where the kernel has it)? (No in most containers.) Tried
    once per process with a trivial command, then whether the worker got a
    user namespace of its own (``namespaces_held``)."""
    if "ok" not in _NAMESPACES:
        if os.environ.get("RLCAP_NO_NAMESPACES") or not shutil.which("unshare"):
            _NAMESPACES["ok"] = False
        else:
            (STATE_DIR / "nsroot").mkdir(mode=0o755, parents=True, exist_ok=True)
            trial = Sandbox(True, python, sb.worker_dir, "", sb.uid, sb.gid, True,
                            parent=sb.parent)
            full = NAMESPACE_FLAGS
            required = tuple(f for f in full if f not in OPTIONAL_FLAGS)
            _NAMESPACES["ok"] = False
            for flags in (full, full, required):       # once more: a transient failure
                _NAMESPACES["flags"] = flags
                if _try(trial, ["/usr/bin/env", "true"], where):
                    _NAMESPACES["ok"] = True
                    break
            if _NAMESPACES["ok"]:                        # nsinit's own_user_namespace took?
                host = os.readlink("/proc/self/ns/user")
                differs = f'[ "$(readlink /proc/self/ns/user)" != "{host}" ]'
                _NAMESPACES["user"] = _try(trial, ["/bin/sh", "-c", differs], where)
    return _NAMESPACES["ok"]


def namespaces_held() -> str:
    """The namespaces each worker gets here, as words ("PID, mount, ... and
    network"), once a trial ran."""
    names = ["PID", "mount", "IPC", "UTS"]
    names += ["cgroup"] if "--cgroup" in _NAMESPACES.get("flags", ()) else []
    names += ["user"] if _NAMESPACES.get("user") else []
    return ", ".join(names) + " and network"


def _grader_requirements() -> list[str]:
    """The grading venv's pins: the zip's own requirements-grader.txt (the
    Gradescope zip: runtime and sandbox; a handout: the runtime only, so no
    network filter is required on a student's machine), else the checkout's
    pyproject.toml; [] where neither is found."""
    path = ROOT / GRADER_REQUIREMENTS
    if path.is_file():
        return [l.strip() for l in path.read_text().splitlines() if l.strip()]
    if (ROOT / "pyproject.toml").is_file():
        return grader_requirements()
    return []


def syscall_filter_required() -> bool:
    """Whether the worker must install its syscall allowlist: wherever the
    grading venv brings pyseccomp (a checkout, the Gradescope zip); not in a
    student's handout graded as root on the student's own machine."""
    return any(re.match(r"pyseccomp\b", r.strip(), re.I) for r in _grader_requirements())


def _base_python() -> Optional[str]:
    """The interpreter the worker venv is built from: the system python3,
    which every uid can run (a pyenv or conda build often lives under a home
    the worker uid cannot enter), unless it is older than 3.10 (Amazon Linux
    2023's is 3.9): then this interpreter's own base."""
    system = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
    if system and _version(system) >= (3, 10):
        return system
    return getattr(sys, "_base_executable", "") or sys.executable


@functools.lru_cache(maxsize=None)
def _version(python: str) -> tuple[int, ...]:
    """(major, minor) of ``python``, () if it does not run."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return tuple(int(x) for x in out[:2])
    except (OSError, TypeError, ValueError, subprocess.SubprocessError):
        return ()


@functools.lru_cache(maxsize=None)
def _venv_name() -> str:
    """``venv-<major><minor>`` of the interpreter the venv is built from (not
    of the one grading: a student's 3.12 venv gets a worker on the system's
    3.11, and its name says 3.11)."""
    version = _version(_base_python() or "") or sys.version_info[:2]
    return "venv-%d%d" % tuple(version)


def worker_venv_path() -> Path:
    """STATE_DIR/venv-<py>-<hash of the grader requirements>: a change of the
    pins gets a venv of its own, built once; an older one is left alone (in a
    handout, which knows no pins: STATE_DIR/venv-<py>)."""
    pins = sorted(_grader_requirements())
    if not pins:
        return STATE_DIR / _venv_name()
    digest = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:8]
    return STATE_DIR / f"{_venv_name()}-{digest}"


def build_worker_venv(rebuild: bool = False, echo=None) -> Path:
    """The worker venv (STATE_DIR/venv-<py>-<hash>), built from the system python3
    with only the runtime's pinned dependencies: in a temporary directory,
    then renamed into place, under a lock, so that a grading never sees a
    half-built venv. An existing venv is kept unless ``rebuild`` (the
    explicit command); returns its interpreter."""
    base = _base_python()
    if not base:
        raise WorkerUnavailable("no python3 (3.10 or newer) to build the worker venv from")
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(STATE_DIR, 0o755)
    venv = worker_venv_path()
    with open(STATE_DIR / "venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if venv.exists() and not rebuild:
            return venv / "bin" / "python"
        tmp = Path(tempfile.mkdtemp(prefix=f".{_venv_name()}-build-", dir=STATE_DIR))
        step = f"`{base} -m venv` (Debian and Ubuntu: the python3-venv package)"
        try:
            if echo:
                echo(f"building the worker venv in {tmp} (then {venv})")
            subprocess.run([base, "-m", "venv", str(tmp)], check=True, capture_output=True)
            step = "pip, installing " + ", ".join(_grader_requirements())
            subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", *_grader_requirements()],
                           check=True, capture_output=True)
            step = "making it readable"
            subprocess.run(["chmod", "-R", "a+rX,go-w", str(tmp)], check=True)
            os.chmod(tmp, 0o755)
            old = None
            if venv.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{_venv_name()}-old-", dir=STATE_DIR))
                os.rename(venv, old / "venv")
            os.rename(tmp, venv)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except (OSError, subprocess.CalledProcessError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            said = (getattr(e, "stderr", b"") or b"").decode(errors="replace").splitlines()
            errors = [l.strip() for l in said if l.startswith("ERROR") or "Error" in l][-2:]
            why = "; ".join(errors) or ((e.strerror or str(e)) if isinstance(e, OSError) else
                                        f"exit status {e.returncode}")
            raise WorkerUnavailable(f"building the worker venv {venv} failed at {step}: "
                                    f"{why}") from None
    return venv / "bin" / "python"


def _copy_worker_files(dest: Path, gid: Optional[int]) -> None:
    """WORKER_FILES and rlkit/ into ``dest``: root:slot
    group, directories 02750 and files 0640 (0700/0600 without a slot)."""
    dest.mkdir(mode=0o700)
    for name in WORKER_FILES:
        shutil.copy(HARNESS_DIR / name, dest / name)
    for name in VENDORED:
        if (ROOT / VENDOR_DIR / name).is_file():
            shutil.copy(ROOT / VENDOR_DIR / name, dest / name)
    shutil.copytree(ROOT / "rlkit", dest / "rlkit",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
            is_dir = name == dirpath
            if gid is not None:
                os.chown(name, 0, gid)
                os.chmod(name, 0o2750 if is_dir else 0o640)
            else:
                os.chmod(name, 0o700 if is_dir else 0o600)


def _readable_by_others(path: Path) -> bool:
    """Whether any other uid can reach ``path`` (every ancestor searchable
    by 'other' and the path itself readable)."""
    p = path.resolve()
    for parent in [p] + list(p.parents):
        mode = os.stat(parent).st_mode
        if not mode & stat.S_IXOTH or (parent == p and not mode & stat.S_IROTH):
            return False
    return True


def _unsandboxed(parent: Path, note: str, worker_dir: Optional[Path] = None) -> Sandbox:
    """A sandbox that is none: the worker runs as this user on this interpreter."""
    if worker_dir is None:
        worker_dir = Path(tempfile.mkdtemp(prefix="worker-", dir=parent))
        os.rmdir(worker_dir)
    _copy_worker_files(worker_dir, None)
    sb = Sandbox(False, sys.executable, worker_dir, note, parent=parent)
    sb._own_dirs.append(worker_dir)
    return sb


def _own_numpy() -> str:
    """The numpy version of this interpreter ("" without numpy)."""
    try:
        import numpy
        return str(numpy.__version__)
    except ImportError:
        return ""


def _old_numpy(version: str) -> bool:
    """Whether numpy ``version`` is older than MIN_NUMPY (or unreadable)."""
    try:
        return tuple(int(x) for x in version.split(".")[:2]) < MIN_NUMPY
    except ValueError:
        return True


def _candidates(venv_python: str) -> list[str]:
    """The interpreters the worker may run on, in order: the one named by
    AUTOGRADER_WORKER_PYTHON, Gradescope's (and the course image's)
    /opt/rlcap-venv, the worker venv of STATE_DIR, and the grader's own
    (PrairieLearn's stock image, a hosted notebook's system Python) unless its
    numpy is older than MIN_NUMPY. Existing ones only, each once."""
    found = [os.environ.get(WORKER_PYTHON_ENV), f"{PLATFORM_VENV}/bin/python", venv_python]
    if not _old_numpy(_own_numpy()):
        found.append(sys.executable)
    return [p for i, p in enumerate(found) if p and os.path.exists(p) and p not in found[:i]]


def network_devices() -> list[str]:
    """This network namespace's interfaces other than loopback (from
    /proc/net/dev): [] in a container started without a network (PrairieLearn
    with ``enableNetworking: false``, ``docker run --network none``)."""
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return ["(unknown: /proc/net/dev unreadable)"]
    names = [line.split(":", 1)[0].strip() for line in lines if ":" in line]
    return [n for n in names if n != "lo"]


def libseccomp_loads() -> bool:
    """Whether libseccomp (``libseccomp.so.2``, what pyseccomp binds) loads here."""
    import ctypes
    try:
        ctypes.CDLL("libseccomp.so.2")
        return True
    except OSError:
        return False


def _without_filter(sb: Sandbox) -> str:
    """Turn the syscall allowlist off where it cannot be installed (no
    libseccomp on the machine, e.g. PrairieLearn's stock image may lack it)
    and the worker has no network anyway (its own network namespace, or a
    machine with no device but loopback); returns why, or "" (filter as
    required). Kernel objects are then held by the worker's IPC namespace, or
    without one only by the sweep after every worker. A machine with a
    network and no libseccomp keeps the filter required: the worker then
    fails its self-test and grading stops as a fault."""
    if not sb.syscall_filter or libseccomp_loads():
        return ""
    if sb.namespaces:
        sb.syscall_filter = False
        return ("libseccomp is not on this machine; the worker's own network and IPC "
                "namespaces hold the network and System V objects")
    if not network_devices():
        sb.syscall_filter = False
        return ("libseccomp is not on this machine, which has no network device but "
                "loopback: no network to refuse; SysV IPC and other kernel objects are not "
                "refused, only swept after every worker")
    return ""


_DIAGNOSE = """import json, sys
out = {"python": "%d.%d.%d" % sys.version_info[:3]}
for name in ("numpy", "threadpoolctl", "pyseccomp"):
    try:
        out[name] = str(getattr(__import__(name), "__version__", "present"))
    except Exception:
        out[name] = ""
print(json.dumps(out))
"""


def _blocked(path: Path) -> Optional[Path]:
    """The first directory on the way to ``path`` (itself included when a
    directory) that other users cannot pass through, or None."""
    p = Path(os.path.abspath(path))
    for d in reversed([p] + list(p.parents)):
        try:
            st = os.stat(d)
        except OSError:
            return d
        if stat.S_ISDIR(st.st_mode) and not st.st_mode & stat.S_IXOTH:
            return d
    return None


def _no_worker(sb: Sandbox, candidates: list[str], venv_python: str,
               build_error: str) -> tuple[str, str]:
    """(why no interpreter ran the worker, what to do), for the course staff
    (or a student grading as root on their own machine): one clause per
    interpreter tried, read as root (only when grading cannot go on)."""
    blocked = _blocked(sb.parent)
    if blocked is not None:
        return (f"the worker account cannot pass through {blocked} (mode "
                f"{stat.S_IMODE(os.stat(blocked).st_mode):04o}), where its sandboxes live "
                f"(RLCAP_STATE_DIR={STATE_DIR})",
                f"`chmod o+x {blocked}`, or set RLCAP_STATE_DIR to a folder every user can "
                f"pass through (the default is {DEFAULT_STATE_DIR})")
    needed = ["numpy", "threadpoolctl"] + (["pyseccomp"] if sb.syscall_filter else [])
    why = []
    for python in candidates:
        where = _blocked(Path(os.path.realpath(python))) or _blocked(Path(python))
        if where is not None:
            why.append(f"{python}: under {where}, which other users cannot enter")
            continue
        try:
            proc = subprocess.run([python, "-E", "-s", "-c", _DIAGNOSE], cwd=sb.worker_dir,
                                  capture_output=True, text=True, timeout=60)
            facts = json.loads(proc.stdout.strip().splitlines()[-1])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            why.append(f"{python}: does not run")
            continue
        missing = [m for m in needed if not facts.get(m)]
        label = f"{python} (Python {facts['python']}" + (
            f", numpy {facts['numpy']})" if facts.get("numpy") else ")")
        if missing:
            why.append(f"{label}: lacks {', '.join(missing)}")
        elif sb.syscall_filter and not libseccomp_loads():
            why.append(f"{label}: cannot install the network filter: libseccomp "
                       "(libseccomp.so.2) is not on this machine, which has a network")
        else:
            why.append(f"{label}: failed the worker's self-test as the worker account")
    own = _own_numpy()
    if own and _old_numpy(own):
        why.append(f"{sys.executable}: numpy {own} is older than "
                   f"{'.'.join(map(str, MIN_NUMPY))}, the oldest measured")
    if build_error and not os.path.exists(venv_python):
        why.append(f"{venv_python.rsplit('/bin/', 1)[0]} (the worker venv): {build_error}")
    if not syscall_filter_required():               # a handout: a student's own machine
        todo = ("install the handout's requirements.txt where every user can import them "
                "(as root, without --user), or build the worker venv once with PyPI "
                "reachable: `python -m autograder worker-venv`")
    else:
        todo = ("on PrairieLearn, use the course image (make dist writes its Dockerfile: "
                "docs/prairielearn.md); elsewhere give the worker an interpreter every user "
                "can run, with " + ", ".join(needed) + " (AUTOGRADER_WORKER_PYTHON names it), "
                "or, as root with PyPI reachable, run `python -m autograder worker-venv "
                "--rebuild`")
    return "; ".join(why) or "no interpreter found", todo


def open_sandbox(force_off: bool = False) -> Sandbox:
    """The sandbox for one grading run (call ``close()`` when done). Raises
    :class:`WorkerUnavailable` (an autograder fault) when, as root, no
    interpreter works for the worker uid; a handout (graded as root on a
    student's own machine) grades unsandboxed instead, its note saying why
    and what to do."""
    if force_off and os.geteuid() == 0:       # nothing under STATE_DIR: the temp dir's only
        parent = Path(tempfile.mkdtemp(prefix="rlcap-sandboxes-0-"))
    else:
        parent = sandbox_parent()
    worker_dir = Path(tempfile.mkdtemp(prefix="worker-", dir=parent))
    os.rmdir(worker_dir)
    if force_off and os.geteuid() == 0:
        sb = _unsandboxed(parent, "not sandboxed (asked for): the submission runs as root, "
                          "with the resource limits; no system user or worker venv is "
                          "created", worker_dir)
        sb._own_dirs.append(parent)
        return sb
    if force_off or os.geteuid() != 0:
        return _unsandboxed(parent, f"not sandboxed: grading runs as uid {os.geteuid()} (not "
                            "root), so the submission runs with this user's rights; resource "
                            "limits still apply", worker_dir)
    slot, fds = _acquire_slot()
    sb = None
    try:
        uid, gid = _ensure_user(f"{USER_PREFIX}{slot}")
        _copy_worker_files(worker_dir, gid)
        sb = Sandbox(True, sys.executable, worker_dir, "", uid=uid, gid=gid, parent=parent,
                     syscall_filter=syscall_filter_required(), _lock_fds=fds)
        sb._own_dirs.append(worker_dir)
        sb.kill_all()                                   # leftovers of an earlier crash
        sb.sweep_kernel_objects()
        sb.sweep_files()
        venv_python = str(worker_venv_path() / "bin" / "python")
        reachable = _blocked(parent) is None            # else no worker can start at all
        candidates = _candidates(venv_python) if reachable else []
        trial = sb.new_dir()
        sb.namespaces = reachable and _namespaces_work(sb, (candidates or [sys.executable])[0],
                                                       trial)
        unfiltered = _without_filter(sb)
        python = next((p for p in candidates if _works(sb, p, trial)), None)
        build_error = ""
        if python is None and reachable and not os.path.exists(venv_python):
            if sb.namespaces or network_devices():    # a fresh machine: built once, atomically
                try:
                    python = str(build_worker_venv())
                    python = python if _works(sb, python, trial) else None
                except WorkerUnavailable as e:
                    build_error = e.detail
            else:
                build_error = ("not built: this machine has no network (no device but "
                               "loopback), and pip needs PyPI")
        if python is None:
            why, todo = _no_worker(sb, candidates, venv_python, build_error)
            if not syscall_filter_required():         # a handout, on the student's machine
                sb.close()
                return _unsandboxed(parent, f"not sandboxed: {why}; so your code ran as this "
                                    f"user (root), with the resource limits. To sandbox it: "
                                    f"{todo}")
            raise WorkerUnavailable(NO_WORKER, f"rlcap: no Python can run the submission's "
                                    f"worker (as {USER_PREFIX}{slot}, uid {uid}): {why}. "
                                    f"To fix: {todo}")
    except BaseException:
        if sb is not None:
            sb.close()                                 # its dirs, the lock
        else:
            for fd in fds:
                os.close(fd)
            shutil.rmtree(worker_dir, ignore_errors=True)
        raise
    sb.python = python
    how = (f"own {namespaces_held()} namespace: private /proc, /tmp, /dev/shm and System V "
           "IPC, no network; grader files and other submissions out of sight"
           if sb.namespaces else
           "no namespaces here (a container?): file quota held by the watchdog, uid sweep, "
           "/tmp sweep and IPC and key sweep after every question")
    how += ("; a seccomp allowlist (deny by default: no socket but a connected AF_UNIX pair, "
            "no System V IPC, queues, keys, io_uring or exec)" if sb.syscall_filter else
            f"; no syscall filter ({unfiltered})" if unfiltered else
            "; no syscall filter (a handout: pyseccomp is not part of it)")
    how += f"; worker Python: {python}" + (
        f" (the grader's own: Python {'%d.%d.%d' % sys.version_info[:3]}, numpy "
        f"{_own_numpy()})" if python == sys.executable else "")
    how += "; CPU and memory counted over the worker's whole tree"
    sb.note = f"sandboxed: worker runs as {USER_PREFIX}{slot} (uid {uid}); {how}"
    if not sb.namespaces and _readable_by_others(ROOT):
        sb.note += (f"; WARNING: the grader's folder {ROOT} is readable by other users and so "
                    "by the worker (on Gradescope setup.sh makes it private)")
    return sb
