"""Who the worker runs as: one unprivileged uid per concurrent grading.

As root (Gradescope, PrairieLearn, CI) the worker runs under a dedicated
uid, ``rlcap-w<slot>`` (one per concurrent grading on the machine, created
on first use, in a group of its own). A slot (its uid) is machine-wide, and
so is its lock (``SLOT_LOCK_DIR``, whatever ``RLCAP_STATE_DIR`` says): one
grading at a time holds a slot, so every process of the slot's uid belongs
to that grading's worker tree, and the sweeps and kills touch nothing else.

The state dir (``STATE_DIR``, ``RLCAP_STATE_DIR`` or ``/var/lib/rlcap``:
root's, 0755) holds the worker venv, the sandboxes' parent and the
namespaces' mount point; :func:`sandbox_parent` is where this user's
sandbox folders go.
"""
from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

try:                     # POSIX only; without them (Windows) nothing here can run, but the
    import fcntl         # notebook's in-process checks, which import this module, still work
    import pwd
except ImportError:      # pragma: no cover - exercised by a test that hides these modules
    fcntl = pwd = None

USER_PREFIX = "rlcap-w"
SLOTS = 8                                      # parallel gradings, one uid each
DEFAULT_STATE_DIR = Path("/var/lib/rlcap")
STATE_DIR = Path(os.environ.get("RLCAP_STATE_DIR", DEFAULT_STATE_DIR))   # root, 0755
# The slots' locks: machine-wide like the uids they guard (never under STATE_DIR, which a
# grading may point elsewhere). /run is root's, per boot: a lock outlives no reboot.
SLOT_LOCK_DIR = Path("/run/rlcap-slots")


class WorkerUnavailable(RuntimeError):
    """No interpreter usable by the worker uid (or no slot to run it in): an
    autograder fault. ``str()`` is what a student may read (results.json);
    ``detail`` what the course staff need, for the grading log (the
    interpreters tried and why each failed, what to do); never a pip
    command line in either."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail or message


def sandbox_parent() -> Path:
    """Where this user's sandbox directories live: root's in STATE_DIR
    (0711), anyone else's in their own temp dir (``rlcap-sandboxes-<uid>``,
    0700), so that any number of users can grade on one machine."""
    state = STATE_DIR
    if os.geteuid() == 0:
        parent, mode = state / "sandboxes", 0o711
    else:
        parent, mode = Path(tempfile.gettempdir()) / f"rlcap-sandboxes-{os.geteuid()}", 0o700
    parent.parent.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:           # the worker uid must pass through STATE_DIR (a `mktemp -d`
        st = os.lstat(state)        # one is 0700); its venv below is made 0755 the same way
        if stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & stat.S_IXOTH:
            os.chmod(state, stat.S_IMODE(st.st_mode) | 0o011)
    try:
        parent.mkdir(mode=mode)
    except FileExistsError:
        pass
    st = os.lstat(parent)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():   # squatted: use a fresh one
        return Path(tempfile.mkdtemp(prefix=f"rlcap-sandboxes-{os.geteuid()}-"))
    os.chmod(parent, mode)
    return parent


def ensure_user(name: str) -> tuple[int, int]:
    """(uid, gid) of the slot user ``name``, created (a system user with a
    group of its own, no home, no shell) if missing."""
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", "--user-group", name],
                       capture_output=True)          # a concurrent useradd may have won
        pw = pwd.getpwnam(name)
    return pw.pw_uid, pw.pw_gid


def lock_dir(path: Path) -> Path:
    """``path`` as a directory only root can enter (made if missing; a
    squatted one, not root's or a symlink, is refused)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        raise WorkerUnavailable(f"{path} is not a directory of root's: refusing its locks")
    os.chmod(path, 0o700)
    return path


def try_lock(path: Path) -> Optional[int]:
    """An exclusive lock on ``path`` (made if missing): its descriptor, or None if held."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


def acquire_slot() -> tuple[int, list[int]]:
    """Lock one of SLOTS uid slots for this grading run: (slot, lock fds).
    The lock is machine-wide (``SLOT_LOCK_DIR``), as the slot's uid is. The
    slot's locks where graders of earlier versions took them (``locks/``
    under STATE_DIR and under the default state dir) are taken too, so that
    such a grader on the same machine never shares the slot either."""
    machine = lock_dir(SLOT_LOCK_DIR)
    legacy = []
    for state in dict.fromkeys((STATE_DIR, DEFAULT_STATE_DIR)):
        (state / "locks").mkdir(parents=True, exist_ok=True)
        legacy.append(state / "locks")
    while True:
        for slot in range(SLOTS):
            fds = []
            for lock in [machine] + legacy:
                fd = try_lock(lock / f"slot-{slot}")
                if fd is None:
                    break
                fds.append(fd)
            if len(fds) == 1 + len(legacy):
                return slot, fds
            for fd in fds:
                os.close(fd)
        time.sleep(0.2)
