"""The worker's syscall allowlist: a seccomp filter, deny by default,
installed by the worker before it imports the submission.

Only the system calls listed in ``ALLOWED`` pass (some with conditions on
their arguments); every other call fails with ENOSYS ("not implemented",
so that libraries fall back as on an older kernel: glibc's ``clone3``
falls back to ``clone``), and the calls of ``REFUSED`` fail with the errno
given there. The list is what CPython, numpy, OpenBLAS threads and the
worker protocol use after the filter is loaded, measured with ``strace -f``
on the reference of every assignment and every correct style of the
catalogue (``autograder/catalogue/<id>.py``'s ``RIGHT``), plus threads,
``fork``, multiprocessing's fork pools and queues, temporary files, numpy's
``save``/``load``/``memmap`` and signals (``bench/syscall_census.py``
repeats the measurement). The filter applies the same in both sandbox modes
(with namespaces and in a container without them, as on Gradescope), is
inherited by every process the worker starts, cannot be removed, sets
``no_new_privs`` and needs no privilege.

What it closes (each refused with the errno in ``REFUSED``):

* kernel objects that outlive the process or reach another one: System V
  shared memory, message queues and semaphores, POSIX message queues, the
  keyrings, memfds (shared memory is then only a file in the worker's
  size-limited tmpfs, or in the watched places of the fallback, which the
  quota counts), eventfds, inotify, timers, io_uring, BPF, userfaultfd,
  perf events, pidfds;
* other processes: ``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``;
  new namespaces (``unshare``, ``setns``, ``clone`` with a CLONE_NEW* flag;
  ``clone3``, whose flags seccomp cannot read, gets ENOSYS);
* the network: ``socket()`` for every family but AF_UNIX, and for AF_UNIX
  every type but SOCK_STREAM (a datagram socket can ``sendto`` any address);
  ``connect``, ``bind``, ``listen`` and ``accept`` for every socket, so
  that no AF_UNIX socket reaches a name, abstract (``sun_path`` starting
  with a NUL byte, one namespace per network namespace: the host's in a
  container) or in the file system. Seccomp cannot read ``sun_path`` (it
  sees only register arguments, not the memory they point to), so the calls
  that take a name are refused outright: the worker protocol uses pipes,
  and ``socketpair()`` still gives a submission a connected pair;
  ``setsockopt`` is refused too (no larger socket buffers);
* locks and the page cache of shared files (``flock``, ``fcntl``'s locks,
  ``mincore``): the system's files are the same inodes for every worker on
  the machine, so a lock or a page's residency is a bit two concurrent
  gradings could pass;
* programs: ``execve`` (a program would run under this filter anyway; the
  worker needs none, and ``ctypes.util.find_library`` is spared its
  ``ldconfig`` by :func:`answer_known_libraries`).

It uses ``pyseccomp`` (PyPI: a ctypes binding to the system's libseccomp,
API-compatible with libseccomp's own Python binding; pure Python, so it
installs into the worker venv from pip on any CPython, and needs only
``libseccomp.so.2``, which apt itself depends on in Debian and Ubuntu).
libseccomp compiles the rules for the native architecture; a call made
through another ABI (i386's ``int 0x80`` on x86_64, x32 numbers) matches
no rule of it and kills the process.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import socket

PR_GET_NO_NEW_PRIVS = 39

# Allowed unconditionally, by what needs them.
ALLOWED = (
    # files and descriptors (the interpreter, imports, the worker's log and pipes, tempfile,
    # numpy's save/load/memmap; files land only in the sandbox dir, the home and the tmp places)
    "read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "close_range",
    "open", "openat", "creat", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs",
    "fstatfs", "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents",
    "getdents64", "getcwd", "chdir", "fchdir", "dup", "dup2", "dup3", "pipe", "pipe2",
    "ftruncate", "fsync", "fdatasync", "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir",
    "rename", "renameat", "renameat2", "link", "linkat", "chmod", "fchmod", "fchmodat", "umask",
    "utimensat",
    # memory (mbind: OpenBLAS's buffers; msync: numpy.memmap)
    "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "msync", "mbind", "get_mempolicy",
    # threads and processes (clone: see CONDITIONAL; the reaper accounts and ends the tree)
    "futex", "set_robust_list", "rseq", "sched_yield", "sched_getaffinity",
    "gettid", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
    "getresgid", "getgroups", "getpgrp", "getpgid", "getsid", "setsid", "setpgid", "wait4",
    "waitid", "exit", "exit_group", "restart_syscall",
    # signals (kill and tgkill reach only the worker's own uid, i.e. its own tree)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
    "rt_sigsuspend", "sigaltstack", "pause", "kill", "tgkill", "tkill", "alarm", "getitimer",
    "setitimer",
    # time, limits, identity of the machine, randomness
    "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time",
    "times", "getrusage", "getrlimit", "uname", "sysinfo", "getrandom", "getcpu",
    # waiting on descriptors (the worker protocol polls its pipes)
    "poll", "ppoll", "select", "pselect6",
    # a connected AF_UNIX pair (socket/socketpair: see CONDITIONAL); nothing here takes a name
    "sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "getsockname", "getpeername",
    "getsockopt",
)

# Refused with a stated errno (everything else unlisted: ENOSYS), by what they would reach.
REFUSED = {
    # kernel objects outliving the process or shared with other processes
    "shmget": errno.EPERM, "shmat": errno.EPERM, "shmctl": errno.EPERM, "shmdt": errno.EPERM,
    "msgget": errno.EPERM, "msgsnd": errno.EPERM, "msgrcv": errno.EPERM, "msgctl": errno.EPERM,
    "semget": errno.EPERM, "semop": errno.EPERM, "semtimedop": errno.EPERM,
    "semctl": errno.EPERM,
    "mq_open": errno.EPERM, "mq_unlink": errno.EPERM, "mq_timedsend": errno.EPERM,
    "mq_timedreceive": errno.EPERM, "mq_notify": errno.EPERM, "mq_getsetattr": errno.EPERM,
    "add_key": errno.EPERM, "request_key": errno.EPERM, "keyctl": errno.EPERM,
    "memfd_create": errno.EPERM, "memfd_secret": errno.EPERM,
    "io_uring_setup": errno.EPERM, "io_uring_enter": errno.EPERM,
    "io_uring_register": errno.EPERM,
    "bpf": errno.EPERM, "userfaultfd": errno.EPERM, "perf_event_open": errno.EPERM,
    "flock": errno.EPERM, "mincore": errno.EPERM,      # a lock or the page cache of a shared file
    "eventfd": errno.EPERM, "eventfd2": errno.EPERM, "inotify_init": errno.EPERM,
    "inotify_init1": errno.EPERM, "fanotify_init": errno.EPERM, "timerfd_create": errno.EPERM,
    "signalfd": errno.EPERM, "signalfd4": errno.EPERM, "timer_create": errno.EPERM,
    # other processes and the kernel
    "ptrace": errno.EPERM, "process_vm_readv": errno.EPERM, "process_vm_writev": errno.EPERM,
    "kcmp": errno.EPERM, "pidfd_open": errno.EPERM, "pidfd_getfd": errno.EPERM,
    "pidfd_send_signal": errno.EPERM, "unshare": errno.EPERM, "setns": errno.EPERM,
    "execve": errno.EPERM, "execveat": errno.EPERM, "personality": errno.EPERM,
    "vfork": errno.EPERM, "fork": errno.EPERM,
    # the network: names (abstract or in the file system) and larger buffers
    "connect": errno.EACCES, "bind": errno.EACCES, "listen": errno.EACCES,
    "accept": errno.EACCES, "accept4": errno.EACCES, "setsockopt": errno.EACCES,
    # clone3 passes its flags in memory, which seccomp cannot read: glibc falls back to clone
    "clone3": errno.ENOSYS,
}

# Namespace flags of clone(): refused (a new user namespace would give the worker capabilities).
CLONE_NEW = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000,
             "CLONE_NEWUTS": 0x04000000, "CLONE_NEWIPC": 0x08000000,
             "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
             "CLONE_NEWNET": 0x40000000}
SOCK_TYPE_MASK = 0xF
# ioctl requests: TCGETS (isatty, on every open()), TIOCGWINSZ (terminal size), FIONREAD,
# FIONBIO, FIOCLEX, FIONCLEX (CPython's set_inheritable and set_blocking)
IOCTLS = (0x5401, 0x5413, 0x541B, 0x5421, 0x5451, 0x5450)
# fcntl commands: F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC, F_SETPIPE_SZ,
# F_GETPIPE_SZ (no locks, leases, notifications, owners or seals)
FCNTLS = (0, 1, 2, 3, 4, 1030, 1031, 1032)
# prctl options: PR_SET_PDEATHSIG, PR_GET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_NAME,
# PR_GET_NAME (thread names), PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS, PR_SET_VMA (glibc names
# anonymous mappings)
PRCTLS = (1, 2, 3, 15, 16, 21, PR_GET_NO_NEW_PRIVS, 0x53564D41)
DEFAULT_ERRNO = errno.ENOSYS


SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def answer_known_libraries() -> None:
    """Make ``ctypes.util.find_library`` answer libc and libseccomp by soname
    (for good, in this process): its lookup runs ``ldconfig -p`` and ``gcc``,
    programs the filter refuses, from a fork each, and threadpoolctl and
    rlkit ask it for libc in every worker."""
    find = ctypes.util.find_library
    if getattr(find, "answers_known", False):
        return

    def known(name):
        return SONAMES.get(name) or find(name)
    known.answers_known = True
    ctypes.util.find_library = known


@contextlib.contextmanager
def known_libraries():
    """:func:`answer_known_libraries` for the duration of a ``with``."""
    find = ctypes.util.find_library
    answer_known_libraries()
    try:
        yield
    finally:
        ctypes.util.find_library = find


def _seccomp():
    with known_libraries():
        import pyseccomp
    return pyseccomp


def build():
    """The filter (a ``pyseccomp.SyscallFilter``), not loaded. Names this
    machine's libseccomp does not know are left out: unlisted, they stay
    refused."""
    sc = _seccomp()
    f = sc.SyscallFilter(sc.ERRNO(DEFAULT_ERRNO))
    f.set_attr(sc.Attr.CTL_NNP, 1)
    f.set_attr(sc.Attr.CTL_TSYNC, 1)
    try:
        f.set_attr(sc.Attr.CTL_OPTIMIZE, 2)     # a binary tree of syscall numbers (libseccomp 2.5)
    except OSError:
        pass

    def rule(action, name, *args):
        try:
            f.add_rule(action, name, *args)
        except (OSError, ValueError):        # unknown to this libseccomp, or not on this arch
            pass
    for name in ALLOWED:
        rule(sc.ALLOW, name)
    for name, code in REFUSED.items():
        rule(sc.ERRNO(code), name)
    ns_mask = sum(CLONE_NEW.values())
    rule(sc.ALLOW, "clone", sc.Arg(0, sc.MASKED_EQ, ns_mask, 0))
    for flag in CLONE_NEW.values():
        rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for call in ("socket", "socketpair"):
        rule(sc.ALLOW, call, sc.Arg(0, sc.EQ, socket.AF_UNIX),
             sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, socket.SOCK_STREAM))
        rule(sc.ERRNO(errno.EACCES), call, sc.Arg(0, sc.NE, socket.AF_UNIX))
        for kind in range(SOCK_TYPE_MASK + 1):
            if kind != socket.SOCK_STREAM:
                rule(sc.ERRNO(errno.EACCES), call, sc.Arg(0, sc.EQ, socket.AF_UNIX),
                     sc.Arg(1, sc.MASKED_EQ, SOCK_TYPE_MASK, kind))
    for request in IOCTLS:
        rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.EQ, request))
    for command in FCNTLS:
        rule(sc.ALLOW, "fcntl", sc.Arg(1, sc.EQ, command))
    for option in PRCTLS:
        rule(sc.ALLOW, "prctl", sc.Arg(0, sc.EQ, option))
    rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0))   # its own limits (no hard limit rises)
    rule(sc.ALLOW, "setrlimit")
    return f


def install() -> None:
    """Load the filter into this process (and so every later child); raises
    OSError (or ImportError) if it cannot be loaded or does not hold."""
    build().load()
    check()


def check() -> None:
    """Raise OSError unless no_new_privs is set and the filter refuses an
    AF_INET socket (EACCES) and a System V segment (EPERM)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1:
        raise OSError("no_new_privs is not set")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        raise OSError("the seccomp filter let an AF_INET socket through")
    except PermissionError:
        pass
    ipc_private, ipc_creat = 0, 0o1000
    if libc.shmget(ipc_private, 4096, ipc_creat | 0o600) != -1 or ctypes.get_errno() != errno.EPERM:
        raise OSError("the seccomp filter let shmget through")
