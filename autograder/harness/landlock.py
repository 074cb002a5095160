"""Landlock, the kernel's file-system allowlist for an unprivileged process
(Linux 5.13 and newer, where the kernel was built with it and boots it).

A process builds a *ruleset* (``landlock_create_ruleset``): the access
rights it *handles*, each refused from then on unless a rule allows it
beneath a given directory (``landlock_add_rule``), then enforces it on
itself (``landlock_restrict_self``, after ``no_new_privs``). The
restriction holds for every thread and every later child, cannot be lifted,
and needs no privilege: it is the same in a container without namespaces
(Gradescope, PrairieLearn) and in the worker's own namespaces. Files opened
before it are not affected; ``stat``, ``chdir`` and ``readlink`` are never
refused (a path's existence stays visible, not its contents).

What each ABI version adds (the kernel answers the highest it knows): 1 the
file rights (execute, read, write, list, make and remove each kind of
entry); 2 ``REFER`` (links and renames across folders); 3 ``TRUNCATE``;
4 TCP ``bind``/``connect``; 5 device ``ioctl``; 6 scopes (abstract AF_UNIX
sockets and signals reach only processes of the same domain); 7 logging
flags. :func:`restrict` handles every right the running kernel knows, so
everything not allowed is refused.

Stdlib only (``ctypes``): the worker imports it from its copied-out folder,
and the judge asks :func:`abi` whether the kernel has it. The policy (what
the worker may read and write) is ``fspolicy.py``'s.
"""
import ctypes
import errno
import os
import platform

# System call numbers (the same on every architecture since Linux 5.13: the unified table).
CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS, PR_GET_NO_NEW_PRIVS = 38, 39

# File-system rights, by the ABI version that brought them.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MAKE_SYM, REFER, TRUNCATE, IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1,
             5: (1 << 16) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV   # all a file rule may hold
# Network rights (ABI 4): TCP bind and connect. Scopes (ABI 6).
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = READ_FILE | READ_DIR
WRITE = (WRITE_FILE | READ_FILE | READ_DIR | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG
         | MAKE_SOCK | MAKE_FIFO | MAKE_SYM | REFER | TRUNCATE)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_LIBC = []


def _libc():
    if not _LIBC:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        _LIBC.append(libc)
    return _LIBC[0]


def abi() -> int:
    """The kernel's Landlock ABI version: 0 where it has none (an older kernel,
    Landlock not among its security modules, or a container's seccomp profile
    refusing the call)."""
    if platform.system() != "Linux":
        return 0
    version = _libc().syscall(CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(0, int(version))


def _threads() -> int:
    """This process's number of threads (/proc/self/status), 0 if unreadable."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def handled(version: int) -> tuple[int, int, int]:
    """(file-system, network, scope) rights a ruleset of ABI ``version`` handles: all it knows."""
    fs = FS_BY_ABI.get(version, FS_BY_ABI[5]) if version >= 1 else 0
    net = NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    return fs, net, scoped


def _fail(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"landlock: {what}: {os.strerror(err)}")


def restrict(rules, version: int = 0) -> int:
    """Enforce on this process (and every later child) a ruleset that refuses
    every right the kernel knows except what ``rules`` allow: ``(path,
    rights)`` pairs, each allowing ``rights`` beneath ``path`` (a folder) or
    on it (a file: only FILE_RIGHTS count). A path that does not exist is
    skipped. Returns the ABI version enforced; raises OSError when the kernel
    has no Landlock or refuses the ruleset."""
    version = version or abi()
    if version < 1:
        raise OSError(errno.EOPNOTSUPP, "landlock: this kernel has no Landlock")
    if _threads() != 1:              # restrict_self binds the calling thread only (and its
        raise OSError(errno.EBUSY,   # later children): a thread started before would be free
                      f"landlock: {_threads()} threads; restrict before starting any")
    fs, net, scoped = handled(version)
    attr = _RulesetAttr(fs, net, scoped)
    size = ctypes.sizeof(_RulesetAttr) if version >= 6 else (16 if version >= 4 else 8)
    ruleset = _libc().syscall(CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                            ctypes.c_uint32(0))
    if ruleset < 0:
        raise _fail("create_ruleset")
    try:
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                is_dir = (os.fstat(fd).st_mode & 0o170000) == 0o040000
                allowed = rights & fs if is_dir else rights & fs & FILE_RIGHTS
                if not allowed:
                    continue
                beneath = _PathBeneath(allowed, fd)
                if _libc().syscall(ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH),
                                 ctypes.byref(beneath), ctypes.c_uint32(0)) != 0:
                    raise _fail(f"add_rule {path}")
            finally:
                os.close(fd)
        if _libc().prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1 and \
                _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if _libc().syscall(RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise _fail("restrict_self")
    finally:
        os.close(ruleset)
    return version
