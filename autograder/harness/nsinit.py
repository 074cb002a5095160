"""PID 1 of one worker's private namespaces (run as root by ``unshare``).

``unshare --fork --pid --mount --propagation private --kill-child`` starts
this script as root inside a new PID and mount namespace. It builds a new
root holding only what the worker needs (the system's /usr, /etc, ...; the
worker's interpreter, its script directory and the submission's sandbox
directory; fresh /proc; size-limited tmpfs for /tmp, /var/tmp, /dev/shm and
the scratch home), chroots into it, then forks the worker under the slot's
uid with its resource limits and waits. When the worker exits, this process
exits with the worker's status (a signal ``s`` as ``128 + s``) and the
kernel kills every other process of the namespace: nothing the worker
started outlives it, whatever it did (``setsid``, a zombie leader with live
threads, a double fork). Everything outside the allowlist (the grader's
checkout, the class folder, other slots, users' homes) does not exist in
the worker's view, and its /proc lists only its own processes.

The spec comes in the environment (``RLCAP_NSINIT``, JSON), never in a
command line. Stdlib only: it runs as a script from a copied-out directory.
"""
import ctypes
import json
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
SETUP_FAILED = 125               # exit status when the namespace could not be built

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
    _mount(None, new, None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY,
           "mode=0755,size=1m,nr_inodes=4096")
    os.chroot(new)
    os.chdir(spec["sandbox"])


def _child(spec):
    for name, (soft, hard) in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    os.setgroups([])
    os.setgid(spec["gid"])
    os.setuid(spec["uid"])
    os.execve(spec["argv"][0], spec["argv"], spec["env"])


def main():
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)      # unshare gone: this process and the namespace go
    spec = json.loads(os.environ.pop("RLCAP_NSINIT"))
    try:
        build_root(spec)
    except OSError as e:
        print(f"nsinit: {e}", file=sys.stderr)
        os._exit(SETUP_FAILED)
    pid = os.fork()
    if pid == 0:
        try:
            _child(spec)
        finally:
            os._exit(SETUP_FAILED)
    keep = set(spec["pass_fds"])
    for fd in keep:                                   # only the worker holds the pipe ends
        os.close(fd)
    while True:                                       # reap orphans until the worker ends
        try:
            got, status = os.wait()
        except ChildProcessError:
            os._exit(SETUP_FAILED)
        if got == pid:
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()
