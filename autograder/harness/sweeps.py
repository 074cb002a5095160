"""What a worker uid leaves behind, found and removed: files (by descriptor),
processes, System V objects and keys.

Files. A worker may leave a tree of any depth and any path length in the
places it may write (its home; without Landlock also the world-writable
places, ``fspolicy.SWEPT``): 1,100 nested folders made by relative
``mkdir``/``chdir``, or folders of 250-character names nested past
PATH_MAX (4,096 bytes). Every walk here goes by descriptor: each folder is
opened with ``openat`` relative to its parent (``O_NOFOLLOW``: no symlink
is followed), listed, and its entries are examined and removed relative to
it (``fstatat``, ``unlinkat``), so no path is ever built and no length
limit applies; the walk is a loop over an explicit stack, never a
recursion, and it holds at most ``MAX_OPEN`` folders open at once, however
deep the tree (a deeper folder is closed and opened again from its child by
``..``, its device and inode checked). Sizes count what files occupy on
their file system (``st_blocks``), not what they claim.

* :func:`usage`: bytes and entries a uid owns under a place (the reaper's
  quota; it stops as soon as a limit is passed);
* :func:`remove_owned`: remove what a uid owns under a place (inside a
  folder it owns, everything; world-writable folders of others are entered
  and left);
* :func:`empty`: remove everything inside a folder (the worker's home);
* :func:`remove_tree`: a folder and everything inside (a grading's
  sandbox folder at the end).

Whatever cannot be removed is never an error of the caller's grading: the
sweep returns it as ``left`` (for a note to the staff), and :func:`quarantine`
moves the entry that holds it out of the worker's reach (renamed into a
folder only root can enter, made root's and mode 0).

Processes and kernel objects (root's sweeps after every worker without
namespaces, where the kernel ends nothing for us): :func:`kill_uid` kills
every process of the uid (stopped first, zombie leaders with live threads
included), :func:`remove_sysv_objects` its System V segments, queues and
semaphore sets, :func:`clear_keyrings` its user keyrings.

Stdlib only: the worker's reaper (``treewatch.py``) imports it from a
copied-out folder where it has places to watch (no namespaces); ``ctypes``
is imported only by the kernel-object sweeps, which the judge runs.
"""
import errno
import os
import platform
import signal
import stat
import time

MAX_OPEN = 32                    # folders held open at once, whatever the depth
O_DIR = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
         | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
QUARANTINE_PREFIX = ".rlcap-quarantine-"


class _Dir:
    """A folder on the walk's stack: its descriptor (None while closed to
    keep the count of open ones down), its name in its parent, its device
    and inode, the names still to examine, whether the uid owns it (then
    everything inside is the uid's), and whether it is being removed."""
    __slots__ = ("fd", "name", "dev", "ino", "names", "owned", "doomed")

    def __init__(self, fd, name, st, owned, doomed):
        self.fd, self.name, self.dev, self.ino = fd, name, st.st_dev, st.st_ino
        self.names = os.listdir(fd)
        self.owned, self.doomed = owned, doomed


class Walk:
    """One descriptor walk under ``top`` (see the module's docstring).
    ``uid`` None: every entry counts as the uid's. ``remove``: remove the
    uid's entries (children before their folder). ``top_owned``: ``top``
    itself is the uid's (everything inside counts), though never removed
    here. ``limit_bytes``/``limit_entries``: stop once either is passed
    (counting only). After :meth:`run`: ``bytes``, ``entries`` (the uid's,
    counted or removed), ``left`` (what could not be removed or examined:
    descriptions for the staff, at most LEFT_SHOWN)."""

    LEFT_SHOWN = 20

    def __init__(self, top, uid=None, remove=False, top_owned=False,
                 limit_bytes=None, limit_entries=None):
        self.top, self.uid, self.remove, self.top_owned = str(top), uid, remove, top_owned
        self.limit_bytes, self.limit_entries = limit_bytes, limit_entries
        self.bytes = self.entries = 0
        self.left = []
        self.stuck = set()            # (dev, ino) of the uid's folders that kept something
        self.top_level_stuck = set()  # names directly under top whose subtree kept something
        self.stack = []

    # -- bookkeeping
    def _where(self, name=None):
        depth = len(self.stack) - 1 + (name is not None)
        first = self.stack[1].name if len(self.stack) > 1 else name
        return (f"{self.top}/{first}" + (f"/... ({depth} levels deep)/{name}"
                                         if depth > 1 and name is not None else ""))

    def _failed(self, name, err):
        if len(self.left) < self.LEFT_SHOWN:
            self.left.append(f"{self._where(name)}: {os.strerror(err) if err else 'left'}")
        elif len(self.left) == self.LEFT_SHOWN:
            self.left.append("... (more)")
        first = self.stack[1].name if len(self.stack) > 1 else name
        if first is not None:
            self.top_level_stuck.add(first)

    def _over(self):
        return ((self.limit_bytes is not None and self.bytes > self.limit_bytes)
                or (self.limit_entries is not None and self.entries > self.limit_entries))

    def _close_shallow(self):
        """Close the shallowest open folder but the top (the anchor) when too
        many are open. The open ones are always the top and a run at the
        deep end of the stack, from ``self.first_open`` on."""
        if len(self.stack) - self.first_open + 1 > MAX_OPEN:
            d = self.stack[self.first_open]
            os.close(d.fd)
            d.fd = None
            self.first_open += 1

    def _reopen(self, i, child_fd):
        """Give ``stack[i]`` (closed) its descriptor again: ``..`` of its child's,
        else its names from the nearest open ancestor; its device and inode
        must match (the tree may have moved: then None)."""
        d = self.stack[i]
        tries = []
        if child_fd is not None:
            tries.append(lambda: os.open("..", O_DIR, dir_fd=child_fd))

        def by_names():
            j = max(k for k in (0, self.first_open) if k < i)
            fd = os.dup(self.stack[j].fd)
            for k in range(j + 1, i + 1):
                nxt = os.open(self.stack[k].name, O_DIR, dir_fd=fd)
                os.close(fd)
                fd = nxt
            return fd
        tries.append(by_names)
        for attempt in tries:
            try:
                fd = attempt()
            except OSError:
                continue
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == (d.dev, d.ino):
                d.fd = fd
                self.first_open = min(self.first_open, i)
                return fd
            os.close(fd)
        return None

    # -- the walk
    def run(self):
        try:
            fd = os.open(self.top, O_DIR)
        except OSError:
            return self
        try:
            top = _Dir(fd, None, os.fstat(fd), self.uid is None or self.top_owned, False)
        except OSError:
            os.close(fd)
            return self
        self.stack = [top]
        self.first_open = 1
        try:
            self._loop()
        finally:
            for d in self.stack:
                if d.fd is not None:
                    os.close(d.fd)
            self.stack = []
        return self

    def _loop(self):
        while self.stack:
            if self._over():
                return
            d = self.stack[-1]
            if d.fd is None:                     # (never: the deepest folder is kept open)
                d.names = []
            if not d.names:
                self._leave()
                continue
            name = d.names.pop()
            try:
                st = os.stat(name, dir_fd=d.fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as e:
                if d.owned and self.remove:
                    self._failed(name, e.errno)
                continue
            owned = d.owned or (self.uid is not None and st.st_uid == self.uid)
            is_dir = stat.S_ISDIR(st.st_mode)
            if owned:
                self.bytes += st.st_blocks * 512
                self.entries += 1
            if is_dir and (owned or st.st_mode & stat.S_IWOTH):
                self._enter(d, name, st, owned)
            elif owned and self.remove:
                try:
                    os.unlink(name, dir_fd=d.fd)
                except FileNotFoundError:
                    pass
                except OSError as e:
                    self._failed(name, e.errno)

    def _enter(self, d, name, st, owned):
        try:
            fd = os.open(name, O_DIR, dir_fd=d.fd)
        except OSError as e:
            if owned and self.remove:
                self._failed(name, e.errno)
            return
        try:
            got = os.fstat(fd)
            if (got.st_dev, got.st_ino) != (st.st_dev, st.st_ino):
                raise OSError(errno.ESTALE, "moved")
            child = _Dir(fd, name, got, owned, owned and self.remove)
        except OSError as e:
            os.close(fd)
            if owned and self.remove:
                self._failed(name, e.errno)
            return
        self.stack.append(child)
        self._close_shallow()

    def _leave(self):
        """Done with the deepest folder: close it and, when it is being
        removed, remove it from its parent (which gets its descriptor back
        first, if it was closed)."""
        child = self.stack.pop()
        self.first_open = min(self.first_open, max(1, len(self.stack)))
        if not self.stack:
            if child.fd is not None:
                os.close(child.fd)
            return
        parent = self.stack[-1]
        if parent.fd is None and self._reopen(len(self.stack) - 1, child.fd) is None:
            if child.fd is not None:             # the tree moved while walked: the rest of
                os.close(child.fd)               # this folder is told, not examined
            self._failed(child.name, errno.ESTALE)
            parent.names = []
            self.stuck.add((parent.dev, parent.ino))
            return
        if child.fd is not None:
            os.close(child.fd)
        if (child.dev, child.ino) in self.stuck:
            self.stuck.add((parent.dev, parent.ino))
        elif child.doomed:
            try:
                os.rmdir(child.name, dir_fd=parent.fd)
            except FileNotFoundError:
                pass
            except OSError as e:
                self._failed(child.name, e.errno)
                self.stuck.add((parent.dev, parent.ino))


def usage(top, uid=None, top_owned=False, limit_bytes=None, limit_entries=None):
    """(bytes, entries) the uid owns under ``top`` (``uid`` None: everything
    under it), counting stopped once a limit is passed."""
    w = Walk(top, uid, False, top_owned, limit_bytes, limit_entries).run()
    return w.bytes, w.entries


def remove_owned(top, uid):
    """Remove what ``uid`` owns under the place ``top`` (not ``top`` itself):
    the finished :class:`Walk` (``entries`` removed, ``left``,
    ``top_level_stuck``: names directly under ``top`` that kept something)."""
    return Walk(top, uid, remove=True).run()


def empty(top):
    """Remove everything inside the folder ``top`` (kept itself)."""
    return Walk(top, None, remove=True, top_owned=True).run()


def remove_tree(path):
    """Remove the folder ``path`` and everything inside: the :class:`Walk`
    (``left`` empty when all went)."""
    w = empty(path)
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        if not w.left:
            w.left.append(f"{path}: {os.strerror(e.errno)}")
    return w


def quarantine(parent, name, tag, into=None):
    """Move ``parent/name`` out of every worker's reach, by a rename (so on
    the same file system): into ``<into>/.rlcap-quarantine-<tag>`` (``into``:
    ``parent`` unless given; the box root's, mode 0700, made if missing),
    under a fresh name, made root's and mode 0. Returns where it went, or
    why it could not be moved."""
    into = parent if into is None else into
    box = os.path.join(into, QUARANTINE_PREFIX + tag)
    try:
        try:
            os.mkdir(box, 0o700)
        except FileExistsError:
            st = os.lstat(box)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
                raise OSError(errno.EEXIST, f"{box} is not root's folder")
        os.chmod(box, 0o700)
        dest = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        pfd = os.open(parent, O_DIR)
        try:
            bfd = os.open(box, O_DIR)
            try:
                os.rename(name, dest, src_dir_fd=pfd, dst_dir_fd=bfd)
                os.chown(dest, 0, 0, dir_fd=bfd, follow_symlinks=False)
                if not stat.S_ISLNK(os.stat(dest, dir_fd=bfd, follow_symlinks=False).st_mode):
                    os.chmod(dest, 0, dir_fd=bfd)
            finally:
                os.close(bfd)
        finally:
            os.close(pfd)
        return os.path.join(box, dest)
    except OSError as e:
        return f"(not moved: {os.strerror(e.errno) if e.errno else e})"


# ---------------------------------------------------------------- processes of a uid
KILL_WAIT_S = 5.0                # killed processes may take a while to go


def _status(path):
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


def pids_of_uid(uid):
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


def kill_uid(uid, wait_s=KILL_WAIT_S):
    """Kill every process of ``uid`` (stopped first, so none forks away; a
    ``setsid`` child escapes a process-group kill): how many were found."""
    found, deadline = 0, time.monotonic() + wait_s
    while time.monotonic() < deadline:
        pids = pids_of_uid(uid)
        if not pids:
            return found
        found += len(pids)
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.01)
    return found


# ---------------------------------------------------------------- kernel objects of a uid
SYSV = {"shm": "shmid", "msg": "msqid", "sem": "semid"}      # /proc/sysvipc/<kind>: id column
IPC_RMID = 0
KEYCTL_NR = {"x86_64": 250, "aarch64": 219}                   # syscall numbers of keyctl
KEYCTL_CLEAR = 7
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5


def sysv_objects(uid):
    """(kind, id) of every System V object of this IPC namespace that ``uid``
    owns or created."""
    found = []
    for kind, column in SYSV.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        head = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(head, line.split()))
            if str(uid) in (row.get("uid"), row.get("cuid")) and column in row:
                found.append((kind, int(row[column])))
    return found


def remove_sysv_objects(uid):
    """Remove ``uid``'s System V segments, queues and semaphore sets (as root):
    how many went. A segment still attached goes when its last process does
    (the uid's processes are killed before)."""
    objects = sysv_objects(uid)
    if not objects:
        return 0
    import ctypes
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


def key_users(uid):
    """``uid``'s line of /proc/key-users (its number of keys and their bytes), or ""."""
    try:
        with open("/proc/key-users") as f:
            return next((l.strip() for l in f if l.split(":")[0].strip() == str(uid)), "")
    except OSError:
        return ""


def settled_key_users(uid, wait_s=0.2):
    """``uid``'s /proc/key-users line once the kernel's key collector has freed
    the keys a clear unlinked (it runs soon after, not at once)."""
    line, deadline = key_users(uid), time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(0.005)
        again = key_users(uid)
        if again == line:
            return line
        line = again
    return line


def clear_keyrings(uid, gid):
    """Empty ``uid``'s user and user-session keyrings (a child drops to the uid:
    root cannot name another uid's keyrings); returns 1 if the child did, else
    0 (no keyctl here: an unknown architecture, or a container's own seccomp
    profile, which then refuses it to the worker too)."""
    nr = KEYCTL_NR.get(platform.machine())
    if nr is None:
        return 0
    import ctypes
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
