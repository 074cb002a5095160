"""Where the kernel allows it (a VM or a machine as root: CI, lab machines),
each worker runs in namespaces of its own of every kind that holds state
(``nsinit.py`` builds them): PID, mount, network, IPC (System V objects,
POSIX queues), UTS, cgroup where the kernel has it, and a user namespace
mapping only the slot's uid and gid where unprivileged user namespaces are
allowed (the uid's keyrings are then per worker). It sees only the system's
/usr and /etc, its interpreter, the worker files and its submission; its
/proc lists only its own processes; /tmp, /var/tmp, /dev/shm and its scratch
home are private size-limited tmpfs (``fspolicy.TMPFS_MB``); its only
network device is a loopback that is down; and when the worker ends, the
kernel kills everything it started and destroys every IPC object it made.
Where it does not (a container without CAP_SYS_ADMIN: Gradescope,
PrairieLearn), the worker runs without namespaces, and the file-system
policy (Landlock, else the watchdog) and the sweeps hold instead.

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
"""
from __future__ import annotations

import os
import shutil
from typing import Callable

from . import fspolicy, slots

# Every namespace that holds state, one each per worker (util-linux's unshare): PID, mount,
# network, System V IPC and POSIX queues, host name; the cgroup namespace where the kernel
# has it (Linux 4.6). The user namespace: see nsinit.py.
NAMESPACE_FLAGS = ("--pid", "--mount", "--net", "--ipc", "--uts", "--cgroup")
OPTIONAL_FLAGS = ("--cgroup",)
_NAMESPACES: dict = {}           # what the trial found, once per process


def reaper_prefix() -> list[str]:
    """The command that starts the reaper in the worker's namespaces."""
    return (["unshare", "--fork"] + list(_NAMESPACES.get("flags", NAMESPACE_FLAGS))
            + ["--propagation", "private", "--kill-child", "--"])


def root_spec(python: str, worker_dir: str) -> dict:
    """What ``nsinit.build_root`` needs besides the sandbox: the new root's
    mount point, the read-only folders (the interpreter's, the worker's),
    the tmpfs' limits."""
    return {"root": str(slots.STATE_DIR / "nsroot"),
            "read_only": python_dirs(python) + [str(worker_dir)],
            "tmpfs_options": f"size={fspolicy.TMPFS_MB}m,nr_inodes={fspolicy.TMPFS_FILES}"}


def python_dirs(python: str) -> list[str]:
    """Directories the worker's interpreter needs besides /usr: its venv (or
    installation prefix) when outside /usr."""
    dirs = []
    for exe in (os.path.abspath(python), os.path.realpath(python)):
        prefix = os.path.dirname(os.path.dirname(exe))
        if not (prefix == "/usr" or prefix.startswith("/usr/")) and prefix not in dirs:
            dirs.append(prefix)
    return dirs


def namespaces_work(trial: Callable[[list[str]], bool]) -> bool:
    """Can this machine give a worker its own namespaces (NAMESPACE_FLAGS; the
    cgroup one only where the kernel has it)? (No in most containers.)
    ``trial(argv)``: run ``argv`` as a worker in namespaces, True if it
    exited 0. Tried once per process with a trivial command, then whether
    the worker got a user namespace of its own (``namespaces_held``)."""
    if "ok" not in _NAMESPACES:
        if os.environ.get("RLCAP_NO_NAMESPACES") or not shutil.which("unshare"):
            _NAMESPACES["ok"] = False
        else:
            (slots.STATE_DIR / "nsroot").mkdir(mode=0o755, parents=True, exist_ok=True)
            full = NAMESPACE_FLAGS
            required = tuple(f for f in full if f not in OPTIONAL_FLAGS)
            _NAMESPACES["ok"] = False
            for flags in (full, full, required):       # once more: a transient failure
                _NAMESPACES["flags"] = flags
                if trial(["/usr/bin/env", "true"]):
                    _NAMESPACES["ok"] = True
                    break
            if _NAMESPACES["ok"]:                        # nsinit's own_user_namespace took?
                host = os.readlink("/proc/self/ns/user")
                differs = f'[ "$(readlink /proc/self/ns/user)" != "{host}" ]'
                _NAMESPACES["user"] = trial(["/bin/sh", "-c", differs])
    return _NAMESPACES["ok"]


def namespaces_held() -> str:
    """The namespaces each worker gets here, as words ("PID, mount, ... and
    network"), once a trial ran."""
    names = ["PID", "mount", "IPC", "UTS"]
    names += ["cgroup"] if "--cgroup" in _NAMESPACES.get("flags", ()) else []
    names += ["user"] if _NAMESPACES.get("user") else []
    return ", ".join(names) + " and network"
