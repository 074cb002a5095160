"""No network for the worker: a seccomp filter, installed by the worker
before it imports the submission.

``socket()`` is refused (EACCES) for every address family but AF_UNIX, and
io_uring (whose IORING_OP_SOCKET makes sockets without ``socket()``) is
refused (EPERM); ``socketpair()`` and AF_UNIX sockets stay (Python's
multiprocessing uses them). Everything else is allowed: this filter is
about the network, not a syscall allowlist. The filter sets
``no_new_privs`` and is inherited by every process the worker starts,
across ``execve`` too (``bash -c 'echo > /dev/tcp/...'`` gets no socket
either), and a process cannot remove it. It needs no privilege, so it
works inside a Docker container without CAP_SYS_ADMIN (Gradescope), where
the worker has no network namespace; where it has one, the filter is a
second wall.

It uses ``pyseccomp`` (PyPI: a ctypes binding to the system's libseccomp,
API-compatible with libseccomp's own Python binding; pure Python, so it
installs into the worker venv from pip on any CPython, and needs only
``libseccomp.so.2``, which apt itself depends on in Debian and Ubuntu).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import socket

PR_GET_NO_NEW_PRIVS = 39
REFUSED = ("io_uring_setup", "io_uring_enter", "io_uring_register")


def _seccomp():
    """pyseccomp, sparing its import the two ``ldconfig -p`` runs of
    ``find_library`` (the worker starts once per question)."""
    find = ctypes.util.find_library
    sonames = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}
    ctypes.util.find_library = lambda name: sonames.get(name) or find(name)
    try:
        import pyseccomp
    finally:
        ctypes.util.find_library = find
    return pyseccomp


def install() -> None:
    """Load the filter into this process (and so every later child); raises
    OSError (or ImportError) if it cannot be loaded or does not hold."""
    sc = _seccomp()
    f = sc.SyscallFilter(sc.ALLOW)
    f.set_attr(sc.Attr.CTL_NNP, 1)
    f.add_rule(sc.ERRNO(errno.EACCES), "socket", sc.Arg(0, sc.NE, socket.AF_UNIX))
    for name in REFUSED:
        f.add_rule(sc.ERRNO(errno.EPERM), name)
    f.load()
    check()


def check() -> None:
    """Raise OSError unless no_new_privs is set and an AF_INET socket is refused."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1:
        raise OSError("no_new_privs is not set")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except PermissionError:
        return
    raise OSError("the seccomp filter let an AF_INET socket through")
