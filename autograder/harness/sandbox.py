"""Where and as whom the probe worker runs: the sandbox, assembled.

What the worker gets, one module per concern:

* who it runs as (``slots.py``): as root, a dedicated unprivileged uid per
  concurrent grading (``rlcap-w<slot>``, machine-wide lock), with the
  worker script and runtime copied to a folder of the slot (``root:slot``
  02750, files 0640); without root there is no sandbox (grading still
  works, and the report says so);
* its namespaces, where the kernel gives them (``namespaces.py``,
  ``nsinit.py``), else none (a container: Gradescope, PrairieLearn);
* what it may read and write (``fspolicy.py``, ``landlock.py``): a Landlock
  allowlist in both modes where the kernel has it (its interpreter, the
  system's libraries, the runtime and its submission to read, its home to
  write, nothing else); without Landlock the watchdog's quota and the
  sweeps;
* what it may ask the kernel (``syscalls.py``): a seccomp allowlist, in
  both modes;
* its limits (``limits.py``), accounted over its whole tree by its reaper
  (``treewatch.py``);
* what is swept after it (``sweeps.py``): without namespaces, after every
  question every process of the uid is killed (zombie group leaders with
  live threads included), its System V objects removed, its keyrings
  emptied and its files in the places it could write removed, by
  descriptor, whatever their depth or path length; what cannot be removed
  is quarantined and told to the staff, never the grading's fault;
* which Python runs it (``interpreter.py``).

In every mode the worker (``worker.py``) installs its file-system and
syscall allowlists before it imports the submission, and says "ready"
only then; a worker that cannot is an autograder fault, never the
student's.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from ..paths import ROOT
from . import fspolicy, interpreter, landlock, namespaces, slots, sweeps
from .fspolicy import (QUOTA_FILES, QUOTA_MB, SWEPT, TMPFS_FILES, TMPFS_MB,  # noqa: F401
                       swept_places)
from .interpreter import (NO_WORKER, PLATFORM_VENV, VENDOR_DIR, VENDORED,  # noqa: F401
                          WORKER_PYTHON_ENV, build_worker_venv, libseccomp_loads,
                          network_devices, syscall_filter_required, worker_venv_path)
from .limits import DEFAULT_MEMORY_MB, Limits  # noqa: F401
from .namespaces import NAMESPACE_FLAGS, namespaces_held  # noqa: F401
from .slots import (DEFAULT_STATE_DIR, SLOT_LOCK_DIR, SLOTS, STATE_DIR,  # noqa: F401
                    USER_PREFIX, WorkerUnavailable, sandbox_parent)
from .sweeps import clear_keyrings, remove_sysv_objects, sysv_objects  # noqa: F401

try:                     # Linux/POSIX only (it reads /proc and os.sysconf); the notebook's
    from . import treewatch   # in-process checks import this module on any OS
except (ImportError, AttributeError):   # pragma: no cover - a test hides the POSIX modules
    treewatch = None

try:                     # POSIX only; without them (Windows) nothing here can run, but the
    import fcntl         # notebook's in-process checks, which import this module, still work
    import resource
except ImportError:      # pragma: no cover - exercised by a test that hides these modules
    fcntl = resource = None

HARNESS_DIR = Path(__file__).resolve().parent   # WORKER_FILES
WORKER_FILES = ("worker.py", "wire.py", "syscalls.py", "nsinit.py", "treewatch.py", "sweeps.py",
                "landlock.py", "fspolicy.py")
NO_LANDLOCK_ENV = "RLCAP_NO_LANDLOCK"       # tests: grade as on a kernel without Landlock


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
    landlock: int = 0                 # the Landlock ABI the worker enforces (0: none)
    slot: Optional[int] = None
    staff_notes: list[str] = field(default_factory=list)    # what a sweep could not remove
    _lock_fds: list[int] = field(default_factory=list)
    _own_dirs: list[Path] = field(default_factory=list)
    _acl_paths: list[str] = field(default_factory=list)     # where close() takes its ACL off
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

    def worker_flags(self) -> list[str]:
        """The worker's command-line switches for its allowlists."""
        return ((["--landlock"] if self.landlock else [])
                + (["--seccomp"] if self.syscall_filter else []))

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
            watch.update(files_mb=QUOTA_MB, files_count=QUOTA_FILES,
                         places=fspolicy.watched_places(cwd, home, bool(self.landlock)))
        status_r, status_w = os.pipe()
        spec = {"namespaces": self.namespaces, "sandbox": str(cwd), "home": home,
                "uid": self.uid if self.enabled else None,
                "gid": self.gid if self.enabled else None, "rlimits": rlimits,
                "argv": argv, "env": env, "pass_fds": list(pass_fds), "status_fd": status_w,
                "watch": watch}
        # the reaper runs as root (before its pivot_root, with namespaces): the judge's interpreter
        reaper = [sys.executable, "-I", "-S", str(self.worker_dir / "nsinit.py")]
        if self.namespaces:
            spec.update(namespaces.root_spec(self.python, str(self.worker_dir)))
            reaper = namespaces.reaper_prefix() + reaper
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

    # ------------------------------------------------------------ sweeps
    def _tell_staff(self, text: str) -> None:
        """A note for the course staff: in the grading's notes and its log,
        never a fault of the submission's grading."""
        note = f"for the staff: {text}"
        if note not in self.staff_notes:
            self.staff_notes.append(note)
            print(f"rlcap: {note}", file=sys.stderr, flush=True)

    def _quarantine(self, walk: sweeps.Walk, parent: str, into: Optional[str] = None) -> None:
        """Move every entry directly under ``parent`` that kept something out
        of the worker's reach (``sweeps.quarantine``), and tell the staff."""
        for name in sorted(walk.top_level_stuck):
            went = sweeps.quarantine(parent, name, f"w{self.slot}", into)
            self._tell_staff(f"could not remove what the worker uid left in {parent} "
                             f"({'; '.join(walk.left[:3])}); quarantined as {went}: remove it "
                             "by hand (as root)")

    def kill_all(self) -> int:
        """Kill every process of the worker uid (a ``setsid`` child escapes a
        process-group kill; a zombie group leader may still have live
        threads); returns how many were found. No-op unsandboxed."""
        return sweeps.kill_uid(self.uid) if self.enabled else 0

    def sweep_files(self) -> int:
        """Remove the worker uid's files from the world-writable places (the
        fallback's private tmp), by descriptor; returns how many entries went."""
        if not self.enabled:
            return 0
        removed = 0
        for place in swept_places():
            walk = sweeps.remove_owned(place, self.uid)
            removed += walk.entries
            self._quarantine(walk, place)
        return removed

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
        keys = sweeps.key_users(self.uid)
        if keys and keys != self._keys_seen:
            removed += clear_keyrings(self.uid, self.gid)
            self._keys_seen = sweeps.settled_key_users(self.uid)
        return removed

    def sweep_worker(self, home: Path) -> int:
        """After every worker (so after every question phase): kill what is
        left of the uid, remove its kernel objects and its files from the
        swept places and empty its scratch ``home``, so that nothing one
        worker wrote reaches the next (with namespaces the files were in
        private tmpfs, the IPC objects in the worker's own IPC namespace).
        What cannot be removed from the home is moved out of it, into a
        folder of the sandbox only root can enter."""
        found = self.kill_all() + self.sweep_kernel_objects() + self.sweep_files()
        walk = sweeps.empty(home)
        self._quarantine(walk, str(home), into=str(Path(home).parent))
        return found + walk.entries

    def close(self) -> None:
        self.kill_all()
        self.sweep_kernel_objects()
        self.sweep_files()
        for d in self._own_dirs:
            walk = sweeps.remove_tree(d)
            if walk.left:
                went = sweeps.quarantine(str(d.parent), d.name, f"w{self.slot}")
                self._tell_staff(f"could not remove the sandbox folder {d} "
                                 f"({'; '.join(walk.left[:3])}); quarantined as {went}: "
                                 "remove it by hand (as root)")
        self._own_dirs.clear()
        if self._acl_paths:
            with _acl_lock():
                for d in self._acl_paths:
                    fspolicy.allow_uids(d, [self.uid])
            self._acl_paths.clear()
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


def _pids_of_uid(uid: int) -> list[int]:
    """Processes of ``uid`` (``sweeps.pids_of_uid``; the tests' name for it)."""
    return sweeps.pids_of_uid(uid)


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
    fspolicy.write_policy(dest, fspolicy.grader_paths(ROOT, [dest.parent]))
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in [dirpath] + [os.path.join(dirpath, f) for f in filenames]:
            is_dir = name == dirpath
            if gid is not None:
                os.chown(name, 0, gid)
                os.chmod(name, 0o2750 if is_dir else 0o640)
            else:
                os.chmod(name, 0o700 if is_dir else 0o600)


def _readable_by_others(path: Path) -> bool:
    """Whether any other uid can reach ``path`` (``fspolicy.readable_by_others``)."""
    return fspolicy.readable_by_others(path)


def _unsandboxed(parent: Path, note: str, worker_dir: Optional[Path] = None) -> Sandbox:
    """A sandbox that is none: the worker runs as this user on this interpreter."""
    if worker_dir is None:
        worker_dir = Path(tempfile.mkdtemp(prefix="worker-", dir=parent))
        os.rmdir(worker_dir)
    _copy_worker_files(worker_dir, None)
    sb = Sandbox(False, sys.executable, worker_dir, note, parent=parent)
    sb._own_dirs.append(worker_dir)
    return sb


def _without_filter(sb: Sandbox) -> str:
    """Turn the syscall allowlist off where it cannot be installed (no
    libseccomp on the machine, e.g. PrairieLearn's stock image may lack it)
    and the worker has no network anyway (its own network namespace, or a
    machine with no device but loopback); returns why, or "" (filter as
    required). Kernel objects are then held by the worker's IPC namespace, or
    without one only by the sweep after every worker. A machine with a
    network and no libseccomp keeps the filter required: the worker then
    fails its self-test and grading stops as a fault."""
    if not sb.syscall_filter or interpreter.libseccomp_loads():
        return ""
    if sb.namespaces:
        sb.syscall_filter = False
        return ("libseccomp is not on this machine; the worker's own network and IPC "
                "namespaces hold the network and System V objects")
    if not interpreter.network_devices():
        sb.syscall_filter = False
        return ("libseccomp is not on this machine, which has no network device but "
                "loopback: no network to refuse; SysV IPC and other kernel objects are not "
                "refused, only swept after every worker")
    return ""


def _try(sb: Sandbox, argv: list[str], where: Path) -> bool:
    """Run ``argv`` as a worker would, in the sandbox directory ``where``."""
    try:
        proc = sb.popen(argv, Limits(30), where,
                        {"PATH": "/usr/bin:/bin", "HOME": str(where / "home"),
                         "TMPDIR": str(where / "home")})
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
    its Landlock ruleset and syscall allowlist enforced) and imports numpy,
    threadpoolctl and rlkit."""
    probe = Sandbox(sb.enabled, python, sb.worker_dir, "", sb.uid, sb.gid, sb.namespaces,
                    sb.syscall_filter, sb.parent, sb.landlock)
    return _try(probe, [python, "-E", "-s", "-B", str(sb.worker_dir / "worker.py"),
                        "--self-test"] + sb.worker_flags(), where)


def _namespaces_work(sb: Sandbox, python: str, where: Path) -> bool:
    """Whether workers get namespaces here (``namespaces.namespaces_work``),
    tried with ``python``'s sandbox in ``where``."""
    trial = Sandbox(True, python, sb.worker_dir, "", sb.uid, sb.gid, True, parent=sb.parent)
    return namespaces.namespaces_work(lambda argv: _try(trial, argv, where))


def landlock_abi() -> int:
    """The Landlock ABI the workers enforce here: the kernel's (0 without it,
    or with RLCAP_NO_LANDLOCK set: tests of the fallback)."""
    return 0 if os.environ.get(NO_LANDLOCK_ENV) else landlock.abi()


def _files_words(sb: Sandbox) -> str:
    """What the note says of the worker's files."""
    if sb.landlock:
        return (f"Landlock (ABI {sb.landlock}): it reads only its interpreter, the system's "
                "libraries, the runtime and its submission, and writes only its home; the "
                "grader's files, other gradings, /tmp, /dev/shm and /proc are refused")
    return ("no Landlock on this kernel: the worker's files are held by the "
            + ("namespaces' private tmpfs" if sb.namespaces else
               "watchdog's quota and removed after every question"))


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
    slot, fds = slots.acquire_slot()
    sb = None
    try:
        uid, gid = slots.ensure_user(f"{USER_PREFIX}{slot}")
        _copy_worker_files(worker_dir, gid)
        sb = Sandbox(True, sys.executable, worker_dir, "", uid=uid, gid=gid, parent=parent,
                     syscall_filter=syscall_filter_required(), landlock=landlock_abi(),
                     slot=slot, _lock_fds=fds)
        sb._own_dirs.append(worker_dir)
        sb.kill_all()                                   # leftovers of an earlier crash
        sb.sweep_kernel_objects()
        sb.sweep_files()
        venv_python = str(worker_venv_path() / "bin" / "python")
        reachable = interpreter._blocked(parent) is None   # else no worker can start at all
        candidates = interpreter._candidates(venv_python) if reachable else []
        trial = sb.new_dir()
        sb.namespaces = reachable and _namespaces_work(sb, (candidates or [sys.executable])[0],
                                                       trial)
        unfiltered = _without_filter(sb)
        exposed = _hide_grader(sb)
        python = next((p for p in candidates if _works(sb, p, trial)), None)
        build_error = ""
        if python is None and reachable and not os.path.exists(venv_python):
            if sb.namespaces or interpreter.network_devices():   # a fresh machine: built once
                try:
                    python = str(build_worker_venv())
                    python = python if _works(sb, python, trial) else None
                except WorkerUnavailable as e:
                    build_error = e.detail
            else:
                build_error = ("not built: this machine has no network (no device but "
                               "loopback), and pip needs PyPI")
        if python is None:
            why, todo = interpreter._no_worker(sb, candidates, venv_python, build_error)
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
           "no namespaces here (a container?): uid sweep, /tmp sweep and IPC and key sweep "
           "after every question")
    how += "; files: " + _files_words(sb)
    how += ("; a seccomp allowlist (deny by default: no socket but a connected AF_UNIX pair, "
            "no System V IPC, queues, keys, io_uring or exec)" if sb.syscall_filter else
            f"; no syscall filter ({unfiltered})" if unfiltered else
            "; no syscall filter (a handout: pyseccomp is not part of it)")
    how += f"; worker Python: {python}" + (
        f" (the grader's own: Python {'%d.%d.%d' % sys.version_info[:3]}, numpy "
        f"{interpreter._own_numpy()})" if python == sys.executable else "")
    how += "; CPU and memory counted over the worker's whole tree"
    sb.note = f"sandboxed: worker runs as {USER_PREFIX}{slot} (uid {uid}); {how}"
    if exposed:
        sb.note += (f"; WARNING: the grader's folder {exposed} is readable by other users and so "
                    "by the worker (on Gradescope setup.sh makes it private)")
    return sb


@contextmanager
def _acl_lock():
    """One grader at a time rewrites an ACL (two gradings of one checkout each
    add and remove their own slot's entry)."""
    slots.STATE_DIR.mkdir(parents=True, exist_ok=True)
    with open(slots.STATE_DIR / "acl.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _hide_grader(sb: Sandbox) -> str:
    """Where neither namespaces nor Landlock keep the grader's folders from the
    worker: deny the slot's uid each of them that other users can read (an
    ACL entry ``user:<uid>:---``, ``fspolicy.deny_uids``; taken off again by
    ``close``). Called before the worker's interpreter is chosen, so that one
    inside the grader's tree fails its self-test. Returns the first folder
    still readable by the worker ("" when none)."""
    if sb.namespaces or sb.landlock:
        return ""
    for d in fspolicy.grader_dirs(ROOT):
        if not _readable_by_others(Path(d)):
            continue
        with _acl_lock():
            why = fspolicy.deny_uids(d, [sb.uid])
        if why:
            return d
        sb._acl_paths.append(d)
    return ""
