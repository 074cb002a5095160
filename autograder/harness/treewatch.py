"""The worker tree's supervisor: reap, account, kill at the limits, report.

Runs inside the worker's reaper (``nsinit.py``: PID 1 of the worker's
namespaces, or a child subreaper where there are none), which is the
ancestor of every process the worker starts: orphans are reparented to it.
Every ``INTERVAL_S`` it walks the tree (``/proc/<pid>/task/<tid>/children``
from itself down) and sums, over every process and thread of it:

* CPU seconds: what it reaped (``RUSAGE_CHILDREN``: exact for every process
  that was waited for) plus each live process's own and reaped children's
  time; as a second lower bound, the last time seen of every process ever
  seen (a child whose parent ignores SIGCHLD is reaped by the kernel without
  accounting). The larger of the two is the tree's CPU.
* memory (MB): each live process's RssAnon + RssShmem (private and shared
  anonymous memory; pages shared copy-on-write after a fork count once per
  process, so a forking tree is charged at least what it uses), plus the
  blocks of regular files it holds open after deleting them, plus the bytes
  queued in the AF_UNIX sockets it holds (kernel buffers no RSS shows: up to
  about 0.4 MB per socket pair, 14 processes of 256 descriptors could queue
  456 MB). Pipe buffers are not readable from outside; the uid's pipe quota
  bounds them (``bench/bench_hidden_memory.py``).
* files (MB, and a count) in ``places`` owned by ``uid``: where there are no
  namespaces, the worker's sandbox folder and home, and where there is no
  Landlock either, the world-writable directories (with namespaces those are
  size-limited tmpfs already, and ``places`` is empty). Counted by
  descriptor (``sweeps.usage``: any depth, any path length, by the blocks a
  file occupies), stopping as soon as the quota is passed.

At a limit it kills the whole tree (SIGKILL; in a fallback sandbox every
process of the slot uid) and records why. When the worker ends (or the judge
sends SIGUSR1: "the session is over"), the rest of the tree is killed and
reaped, and one JSON line goes to ``status_fd`` (a pipe only the judge
reads): the verdict ("" or "cpu", "memory", "files"), the tree's CPU
seconds, peak memory MB, peak files MB and peak number of tasks, and the
worker's exit code. Stdlib only: a copied-out script imports it.
"""
import json
import os
import resource
import signal
import time


INTERVAL_S = 0.02                # one accounting pass (a /proc walk of the tree: ~0.1 ms)
FILES_EVERY = 5                  # ... open deleted files and socket buffers every 5th pass
FILES_DUTY = 4                   # the places' files: again once 4 times the last walk's time
                                 # passed (every pass while a walk takes under 5 ms)
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _sweeps():
    """``sweeps.py`` (the descriptor walk), imported only where there are places
    to watch (no namespaces): with namespaces the reaper, which cannot write
    bytecode in its read-only folder, would compile it for every worker."""
    try:
        from . import sweeps
    except ImportError:          # run by nsinit.py from the worker's copied-out folder
        import sweeps  # type: ignore[no-redef]
    return sweeps


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def children(pid):
    """Child pids of ``pid`` (every thread's children)."""
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        out += [int(c) for c in _read(f"/proc/{pid}/task/{tid}/children").split()]
    return out


def tree(root):
    """Every descendant pid of ``root`` (not ``root`` itself)."""
    seen, todo = [], children(root)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo += children(pid)
    return seen


def _stat(pid):
    """(start time, own CPU s, reaped children's CPU s, state) or None."""
    raw = _read(f"/proc/{pid}/stat")
    if not raw:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    own = (int(fields[11]) + int(fields[12])) / _TICK
    kids = (int(fields[13]) + int(fields[14])) / _TICK
    return int(fields[19]), own, kids, fields[0]


def _memory_kb(pid):
    """(RssAnon + RssShmem in kB, threads) of ``pid``."""
    kb, threads = 0, 1
    for line in _read(f"/proc/{pid}/status").splitlines():
        if line.startswith((b"RssAnon:", b"RssShmem:")):
            kb += int(line.split()[1])
        elif line.startswith(b"Threads:"):
            threads = int(line.split()[1])
    return kb, threads


def _deleted_open_files(pid, seen, sockets=None):
    """Bytes of regular files ``pid`` holds open after unlinking them; the
    inodes of the sockets it holds are added to ``sockets``."""
    total = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return 0
    for fd in fds:
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kind = st.st_mode & 0o170000
        if kind == 0o140000 and sockets is not None:
            sockets.add(st.st_ino)
        elif st.st_nlink == 0 and kind == 0o100000 and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLMSG_ERROR, NLMSG_DONE = 4, 20, 2, 3
NLM_F_DUMP_REQUEST = 0x1 | 0x300
UDIAG_SHOW_PEER, UDIAG_SHOW_RQLEN, UNIX_DIAG_PEER, UNIX_DIAG_RQLEN = 0x04, 0x10, 2, 4


def unix_socket_bytes(inodes):
    """Bytes queued in the AF_UNIX sockets whose inodes are ``inodes`` (the
    kernel's sock_diag, in this network namespace): what each has to read,
    plus what it sent that is not read yet where its peer is not one of them
    (a socket passed away in a message, say). 0 where the kernel has no
    unix_diag."""
    if not inodes:
        return 0
    import socket
    import struct
    try:
        nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    except OSError:
        return 0
    total = 0
    with nl:
        req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0,
                          UDIAG_SHOW_RQLEN | UDIAG_SHOW_PEER, 0, 0)
        nl.sendto(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_DUMP_REQUEST,
                              1, 0) + req, (0, 0))
        while True:
            data = nl.recv(1 << 16)
            if not data:
                return total
            pos = 0
            while pos + 16 <= len(data):
                length, kind = struct.unpack_from("=IH", data, pos)
                if kind in (NLMSG_DONE, NLMSG_ERROR) or length < 16:
                    return total
                if length >= 32 and struct.unpack_from("=I", data, pos + 20)[0] in inodes:
                    peer, queues, at = None, (0, 0), pos + 32   # nlmsghdr 16 + unix_diag_msg 16
                    while at + 4 <= pos + length:
                        alen, atype = struct.unpack_from("=HH", data, at)
                        if alen < 4:
                            break
                        if atype == UNIX_DIAG_RQLEN and alen >= 12:
                            queues = struct.unpack_from("=II", data, at + 4)
                        elif atype == UNIX_DIAG_PEER and alen >= 8:
                            peer = struct.unpack_from("=I", data, at + 4)[0]
                        at += (alen + 3) & ~3
                    total += queues[0] + (queues[1] if peer not in inodes else 0)
                pos += (length + 3) & ~3


def uid_pids(uid):
    """Every process whose real or effective uid is ``uid`` (from /proc)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            for line in _read(f"/proc/{entry}/status").splitlines():
                if line.startswith(b"Uid:"):
                    ids = line.split()[1:3]
                    if str(uid).encode() in ids:
                        pids.append(int(entry))
                    break
    return pids


class Watch:
    """The limits of one worker tree and what it used so far."""

    def __init__(self, spec):
        self.cpu_s = spec.get("cpu_s")                  # None: no CPU limit
        self.memory_mb = spec.get("memory_mb")
        self.files_mb = spec.get("files_mb")
        self.files_count = spec.get("files_count")
        self.places = spec.get("places") or []
        self.uid = spec.get("uid")                      # the slot uid (fallback kills by uid)
        self.seen = {}                                  # (pid, start) -> last own CPU s
        self.used = {"verdict": "", "cpu_s": 0.0, "peak_mb": 0.0, "files_mb": 0.0,
                     "files": 0, "tasks": 0}
        self.passes = 0
        self._files_due = 0.0                           # when the places are walked next
        self.ended = {}                                 # reaped pid -> wait status

    def account(self):
        """One pass: returns the verdict ("" while under every limit)."""
        pids = tree(os.getpid())
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        exact = reaped.ru_utime + reaped.ru_stime
        kb = tasks = 0
        for pid in pids:
            st = _stat(pid)
            if st is None:
                continue
            start, own, kids, state = st
            exact += own + kids
            key = (pid, start)
            self.seen[key] = max(self.seen.get(key, 0.0), own)
            if state not in (b"Z", b"X"):
                m, threads = _memory_kb(pid)
                kb, tasks = kb + m, tasks + threads
        self.passes += 1
        if self.passes % FILES_EVERY == 1:
            held, sockets, files = set(), set(), 0
            for pid in pids:
                files += _deleted_open_files(pid, held, sockets)
            self._deleted_kb = (files + unix_socket_bytes(sockets)) / 1024
        now = time.monotonic()
        if self.places and now >= self._files_due:
            sweeps = _sweeps()
            size = count = 0
            for place in self.places:
                left_b = None if self.files_mb is None else self.files_mb * 2**20 - size
                left_n = None if self.files_count is None else self.files_count - count
                s, c = sweeps.usage(place, self.uid, limit_bytes=left_b, limit_entries=left_n)
                size, count = size + s, count + c
            self._files_due = now + FILES_DUTY * (time.monotonic() - now)
            u = self.used
            u["files_mb"] = max(u["files_mb"], size / 2**20)
            u["files"] = max(u["files"], count)
            if self.files_mb is not None and (size / 2**20 > self.files_mb
                                              or count > self.files_count):
                return "files"
        kb += getattr(self, "_deleted_kb", 0.0)
        u = self.used
        u["cpu_s"] = max(u["cpu_s"], exact, sum(self.seen.values()))
        u["peak_mb"] = max(u["peak_mb"], kb / 1024)
        u["tasks"] = max(u["tasks"], tasks)
        if self.cpu_s is not None and u["cpu_s"] > self.cpu_s:
            return "cpu"
        if self.memory_mb is not None and kb / 1024 > self.memory_mb:
            return "memory"
        return ""

    def kill_tree(self):
        """SIGKILL every process of the tree (and, with a slot uid outside
        namespaces, every process of that uid), stopped first so that none
        forks away."""
        for _ in range(50):
            pids = set(tree(os.getpid()))
            if self.uid is not None:
                pids.update(uid_pids(self.uid))
            pids.discard(os.getpid())
            if not pids:
                return
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except (ProcessLookupError, PermissionError):
                        pass
            self.reap()
            time.sleep(0.002)

    def reap(self):
        """Reap every ended child, keeping their wait statuses in ``ended``."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.ended[pid] = status


def supervise(worker, watch, status_fd, end_tree):
    """Wait for ``worker`` while accounting the tree; returns its exit code
    (``128 + s`` for a signal). ``end_tree``: kill the rest of the tree when
    the worker ends (without a PID namespace, nothing else would). SIGCHLD
    and SIGUSR1 must be blocked in the caller before it forked."""
    code = None
    while code is None:
        watch.reap()
        if worker in watch.ended:
            c = os.waitstatus_to_exitcode(watch.ended[worker])
            code = 128 - c if c < 0 else c
            break
        verdict = watch.account()
        if verdict:
            watch.used["verdict"] = watch.used["verdict"] or verdict
            watch.kill_tree()
            continue
        got = signal.sigtimedwait((signal.SIGCHLD, signal.SIGUSR1), INTERVAL_S)
        if got is not None and got.si_signo == signal.SIGUSR1:
            watch.kill_tree()               # the judge ended the session
    if end_tree:
        watch.kill_tree()
    if status_fd is not None:
        try:
            os.write(status_fd, (json.dumps(dict(watch.used, exit=code)) + "\n").encode())
        except OSError:
            pass
    return code
