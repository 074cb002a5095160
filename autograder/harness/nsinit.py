"""The worker's reaper: PID 1 of its private namespaces, or (where there are
none) a child subreaper; in both, the supervisor of the worker's tree.

With namespaces, ``unshare --fork --pid --mount --net --ipc --uts [--cgroup]
--propagation private --kill-child`` starts this script as root inside a new
PID, mount, network, IPC, UTS (and cgroup) namespace. It builds a new root
holding only what the worker needs (the system's /usr, /etc, ...; the
worker's interpreter, its script directory and the submission's sandbox
directory; fresh /proc; size-limited tmpfs for /tmp, /var/tmp, /dev/shm and
the scratch home), enters it with ``pivot_root`` and detaches the old root
(nothing of the host's tree stays mounted in the namespace), then forks the
worker under the slot's uid with its resource limits and waits. The worker,
before its ``execve``, moves into a user namespace of its own that maps only
its uid and gid (where the kernel allows unprivileged user namespaces): what
the kernel keeps per user namespace, the uid's keyrings, is then its own.
The network namespace holds only a loopback device, and it is down: no
socket reaches anything; the IPC namespace's System V objects and POSIX
queues are the worker's alone and are destroyed with it. When the worker
exits, this process exits with the worker's status (a signal ``s`` as
``128 + s``) and the kernel kills every other process of the namespace:
nothing the worker started outlives it, whatever it did (``setsid``, a
zombie leader with live threads, a double fork). Everything outside the
allowlist (the grader's checkout, the class folder, other slots, users'
homes) does not exist in the worker's view, and its /proc lists only its own
processes.

Without namespaces (a container: Gradescope; or grading without root) the
judge starts this script directly: it makes itself the subreaper of the
worker's tree (orphans are reparented to it, not to the container's init),
forks the worker (under the slot's uid when there is one) and, when the
worker ends, kills and reaps the rest of the tree itself.

In both, ``treewatch.supervise`` accounts CPU, memory and files over the
whole tree while it waits, kills the tree at the question's limits, and
reports what the tree used on a pipe that only the judge holds.

The spec comes in the environment (``RLCAP_NSINIT``, JSON), never in a
command line. Stdlib only: it runs as a script from a copied-out directory.
"""
import ctypes
import json
import os
import resource
import signal
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36
SETUP_FAILED = 125               # exit status when the sandbox could not be built
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)   # no libc wrapper
OLD_ROOT = "/.old-root"

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(src, target, fstype, flags, data=None):
    if _libc.mount(src.encode() if src else None, target.encode(),
                   fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                   data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {src} on {target}: {os.strerror(err)}")


def _bind(src, target, writable=False):
    if os.path.isdir(src):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "w").close()
    _mount(src, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if writable else MS_RDONLY)
    if not src.startswith("/dev/"):
        flags |= MS_NODEV
    _mount(None, target, None, flags)


def _tmpfs(target, options):
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)


def build_root(spec):
    new = spec["root"]
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096")
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"):
        if os.path.islink(top):
            os.symlink(os.readlink(top), new + top)
        elif os.path.isdir(top):
            _bind(top, new + top)
    for path in spec["read_only"]:
        if not os.path.exists(new + path):
            _bind(path, new + path)
    _bind(spec["sandbox"], new + spec["sandbox"], writable=True)
    quota = spec["tmpfs_options"]
    _tmpfs(new + "/dev", "mode=0755,size=64k")
    for node in ("null", "zero", "full", "random", "urandom"):
        _bind("/dev/" + node, new + "/dev/" + node, writable=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, new + "/dev/" + name)
    uid, gid = spec["uid"], spec["gid"]
    for place in ("/tmp", "/var/tmp", "/dev/shm"):
        _tmpfs(new + place, f"mode=1777,{quota}")
    _tmpfs(new + spec["home"], f"mode=0700,uid={uid},gid={gid},{quota}")
    os.makedirs(new + "/proc", exist_ok=True)
    _mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if PIVOT_ROOT is not None:
        os.makedirs(new + OLD_ROOT)
    _mount(None, new, None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY,
           "mode=0755,size=1m,nr_inodes=4096")
    enter_root(new)
    os.chdir(spec["sandbox"])


def enter_root(new):
    """Make ``new`` this mount namespace's root: ``pivot_root``, then the old
    root detached, so that the host's tree is not mounted anywhere in it (and
    the worker may make a user namespace, which a chroot forbids); ``chroot``
    where pivot_root fails or its syscall number is not known here (the
    worker then gets no user namespace)."""
    if PIVOT_ROOT is None or _libc.syscall(PIVOT_ROOT, new.encode(),
                                           (new + OLD_ROOT).encode()) != 0:
        os.chroot(new)                  # (pivot_root refuses a root on the initramfs' rootfs)
        return
    os.chdir("/")
    if _libc.umount2(OLD_ROOT.encode(), MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"detaching the old root: {os.strerror(err)}")


def own_user_namespace(uid, gid):
    """Put this process (already ``uid``:``gid``, with namespaces) in a user
    namespace of its own that maps only ``uid`` and ``gid`` to themselves:
    what the kernel keeps per user namespace (the uid's user and user-session
    keyrings) is then the worker's own and ends with it. The process keeps no
    capability across its ``execve`` (its uid is not 0 in the namespace).
    Skipped where the kernel refuses unprivileged user namespaces."""
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)      # (the uid change cleared it: /proc/self
    if _libc.unshare(CLONE_NEWUSER) != 0:          # would be root's, its maps unwritable)
        return False
    for name, text in (("uid_map", f"{uid} {uid} 1"), ("setgroups", "deny"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    return True


def _child(spec):
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    if spec.get("status_fd") is not None:
        os.close(spec["status_fd"])                   # the judge's channel, never the worker's
    for name, (soft, hard) in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if spec["uid"] is not None:
        os.setgroups([])
        os.setgid(spec["gid"])
        os.setuid(spec["uid"])
        if spec["namespaces"]:
            own_user_namespace(spec["uid"], spec["gid"])
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)      # (after the uid change, which clears it)
    os.execve(spec["argv"][0], spec["argv"], spec["env"])


def _fault(spec, text):
    """Tell the judge that the sandbox could not be built (not the student's doing)."""
    if spec.get("status_fd") is not None:
        try:
            os.write(spec["status_fd"], (json.dumps({"fault": text[:500]}) + "\n").encode())
        except OSError:
            pass


def main():
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)      # the judge's side gone: this tree goes too
    spec = json.loads(os.environ.pop("RLCAP_NSINIT"))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import treewatch                                  # beside this script (before pivot_root)
    try:
        if spec["namespaces"]:
            build_root(spec)
        else:
            if _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
            os.chdir(spec["sandbox"])
    except OSError as e:
        _fault(spec, f"nsinit: {e}")
        print(f"nsinit: {e}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGUSR1})
    pid = os.fork()
    if pid == 0:
        try:
            _child(spec)
        finally:
            os._exit(SETUP_FAILED)
    for fd in spec["pass_fds"]:                       # only the worker holds the pipe ends
        os.close(fd)
    code = treewatch.supervise(pid, treewatch.Watch(spec["watch"]), spec.get("status_fd"),
                               end_tree=not spec["namespaces"])
    os._exit(code)


if __name__ == "__main__":
    main()
