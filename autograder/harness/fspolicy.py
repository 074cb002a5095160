"""What the worker may read and write: the file-system policy, in one place.

Deny by default, in both sandbox modes (the worker's own namespaces, and a
container without them: Gradescope, PrairieLearn), wherever the kernel has
Landlock (``landlock.py``): before it imports the submission, the worker
enforces on itself a ruleset under which it may

* read (files and listings; nothing may be executed, ``execve`` being
  refused by the syscall allowlist too): its interpreter's installation
  (``sys.prefix``, ``sys.base_prefix`` and their exec twins: the standard
  library, the packages it imports), the system's libraries (``SYSTEM_DIRS``:
  ``/usr``, ``/lib*``), the loader's cache and the time zone
  (``SYSTEM_FILES``), its own script folder (the worker, the runtime
  ``rlkit``) and its submission's sandbox folder;
* read and write ``/dev/null``, read ``/dev/zero`` and ``/dev/urandom``
  (``DEVICES``; no device ``ioctl``);
* read, make, write, rename and remove in its own home (``$HOME``, also
  ``TMPDIR``) and nowhere else;

and nothing more: not the grader's tree (its checkout, ``assignment.toml``
with its ``instance_salt``, the expected values; Gradescope's
``/autograder``; PrairieLearn's ``/grade``), not other gradings' folders, not
``/tmp``, ``/var/tmp`` or ``/dev/shm`` (so no POSIX semaphores: a
``multiprocessing`` lock or pool raises PermissionError), not ``/proc``
(other processes' command lines, ``/proc/key-users``) or ``/sys``, not
``/etc`` beyond the two files above, and no TCP ``bind``/``connect``. From
ABI 6 on, abstract AF_UNIX sockets and signals reach only processes of the
worker's own tree. A path's existence stays visible (``stat`` is never
refused), its contents do not.

An allowed folder that holds a protected one (the grader's checkout, the
other gradings' sandboxes; say an interpreter whose prefix is ``/``, or a
grader installed into ``/usr/local``) is *carved*: the rule goes to each of
its entries but the one on the way to the protected folder, level by level
(:func:`carve`). The protected folders are written by the judge into the
worker's folder (``POLICY_FILE``) before the worker starts.

Where the kernel has no Landlock, the worker writes where its uid may (its
home; without namespaces also the world-writable places, ``SWEPT``), and
the fallback holds: its reaper's watchdog keeps the files the tree owns
there under one quota (``QUOTA_MB``, ``QUOTA_FILES``, counted by descriptor
by ``sweeps.usage``), and everything of the uid's there is removed after
every worker (``sweeps.py``). The grader's folders are then private only by
their permissions: Gradescope's ``setup.sh`` and PrairieLearn's
``run_prairielearn`` make them so, and elsewhere the notes warn
(:func:`readable_by_others`).

Stdlib only: the worker imports it from its copied-out folder (with
``landlock.py``); the judge imports it as part of the package.
"""
import errno
import json
import os
import stat
import sys

try:
    from . import landlock
except ImportError:              # run from the worker's copied-out folder
    import landlock  # type: ignore[no-redef]

SYSTEM_DIRS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")
DEVICES = {"/dev/null": landlock.READ_FILE | landlock.WRITE_FILE | landlock.TRUNCATE,
           "/dev/zero": landlock.READ_FILE, "/dev/urandom": landlock.READ_FILE,
           "/dev/random": landlock.READ_FILE}
# Never granted whole, whatever holds them (an interpreter installed at /, say): the places
# other processes write, the kernel's views of the machine, the users' homes.
NEVER = ("/tmp", "/var/tmp", "/dev", "/run", "/proc", "/sys", "/home", "/root", "/var/lib",
         "/var/run", "/var/lock", "/var/crash", "/var/mail", "/var/spool", "/mnt", "/media",
         "/autograder", "/grade", "/srv", "/boot")
POLICY_FILE = "fspolicy.json"    # in the worker's folder: {"protected": [...]}

# ---------------------------------------------------------------- the fallback (no Landlock)
# World-writable places (Debian, Ubuntu): a worker without namespaces and without Landlock can
# write there, so the fallback holds them to the quota and sweeps them after every worker.
SWEPT = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue", "/var/crash")
TMPFS_MB = 64                    # each private tmpfs of the namespaces mode (/tmp, home, ...)
TMPFS_FILES = 2048               # ... and its number of files
QUOTA_MB = 4 * TMPFS_MB          # files of one worker tree without namespaces
QUOTA_FILES = 4 * TMPFS_FILES    # (the four tmpfs' sizes together)


def swept_places():
    """The world-writable places of SWEPT that exist here, once each."""
    places, seen = [], set()
    for p in SWEPT:
        real = os.path.realpath(p)
        if os.path.isdir(real) and real not in seen:
            seen.add(real)
            places.append(real)
    return places


def watched_places(sandbox, home, landlocked):
    """Where the reaper's watchdog counts the tree's files without namespaces:
    the sandbox folder (its home and its output log inside), the home if it
    lies elsewhere, and, without Landlock, every world-writable place."""
    sandbox, home = str(sandbox), str(home)
    inside = home.startswith(sandbox.rstrip("/") + "/")
    return ([] if landlocked else swept_places()) + [sandbox] + ([] if inside else [home])


# ---------------------------------------------------------------- the worker's rules
def _real(path):
    return os.path.realpath(path)


def _under(path, top):
    """``path`` is ``top`` or lies beneath it (both real, absolute)."""
    return path == top or path.startswith(top.rstrip("/") + "/")


def carve(allowed, protected):
    """``allowed`` (a folder) as rules that leave out every folder of
    ``protected`` that lies within it (or is it): [(path, is_dir)]."""
    inside = [p for p in protected if _under(p, allowed)]
    if not inside:
        return [(allowed, True)]
    if allowed in inside:
        return []
    out = []
    try:
        names = sorted(os.listdir(allowed))
    except OSError:
        return []
    for name in names:
        child = os.path.join(allowed, name)
        if any(_under(p, child) for p in inside):
            if os.path.isdir(child) and not os.path.islink(child):
                out += carve(child, inside)
            continue
        try:
            st = os.lstat(child)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode):
            real = _real(child)
            if any(_under(real, p) or _under(p, real) for p in inside) or not os.path.exists(real):
                continue
            out.append((real, os.path.isdir(real)))
        else:
            out.append((child, stat.S_ISDIR(st.st_mode)))
    return out


def interpreter_dirs():
    """This interpreter's installation: its prefixes (the venv's and its
    base's), as given and as real paths."""
    dirs = []
    for p in (sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", ""),
              getattr(sys, "base_exec_prefix", "")):
        for q in (os.path.abspath(p), _real(p)) if p else ():
            if q not in dirs:
                dirs.append(q)
    return dirs


def worker_rules(sandbox, home, here, protected):
    """The worker's Landlock rules [(path, rights)]: see the module's
    docstring. ``sandbox``: its submission's folder (its working
    directory), ``home``: its home, ``here``: its script folder,
    ``protected``: folders never to be read (the grader's), besides NEVER."""
    guard = sorted({_real(p) for p in list(protected) + list(NEVER)})
    read = []
    for top in interpreter_dirs() + [_real(d) for d in SYSTEM_DIRS if os.path.isdir(d)]:
        for path, is_dir in carve(top, guard):
            read.append((path, landlock.READ if is_dir else landlock.READ_FILE))
    rules = read + [(f, landlock.READ_FILE) for f in SYSTEM_FILES]
    rules += list(DEVICES.items())
    rules += [(_real(here), landlock.READ), (_real(sandbox), landlock.READ),
              (_real(home), landlock.WRITE)]
    return rules


def read_protected(here):
    """The protected folders the judge wrote beside the worker (POLICY_FILE)."""
    with open(os.path.join(here, POLICY_FILE)) as f:
        return [str(p) for p in json.load(f)["protected"]]


def enforce(sandbox, home, here):
    """Enforce the worker's rules on this process (the worker, before it
    imports the submission); then check that they hold: a protected folder
    and /proc cannot be listed, the home can be written. Returns the ABI
    version enforced; raises OSError when any step fails."""
    if not home or not os.path.isabs(home):
        raise OSError("fspolicy: no absolute HOME to allow")
    protected = read_protected(here)
    version = landlock.restrict(worker_rules(sandbox, home, here, protected))
    for path in protected + ["/proc/self", "/tmp"]:
        try:
            os.listdir(path)
        except (PermissionError, FileNotFoundError):
            continue
        raise OSError(f"fspolicy: {path} can still be listed under the worker's ruleset")
    probe = os.path.join(home, ".rlcap-landlock-probe")
    with open(probe, "w") as f:
        f.write("ok")
    os.unlink(probe)
    return version


# ---------------------------------------------------------------- the judge's side
SITE_DIRS = ("site-packages", "dist-packages")
GRADER_PARTS = ("autograder", "assignments", "solutions", "instructor")


def grader_dirs(root):
    """The grader's own folders: its tree ``root`` (a checkout, Gradescope's
    ``/autograder/source``, PrairieLearn's ``serverFilesCourse/rlcap/<id>``),
    or, where the grader was installed into an interpreter's site-packages
    (``root`` is that folder, shared with numpy), its parts there."""
    root = _real(str(root))
    if os.path.basename(root) not in SITE_DIRS:
        return [root]
    return [os.path.join(root, p) for p in GRADER_PARTS if os.path.isdir(os.path.join(root, p))]


def grader_paths(root, extra=()):
    """The folders the worker must never read, for POLICY_FILE: the grader's
    (:func:`grader_dirs`) and ``extra`` (other gradings' sandboxes, a folder
    of assignment.toml files)."""
    return sorted({_real(str(p)) for p in [*grader_dirs(root), *extra]})


ACL_XATTR = "system.posix_acl_access"
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 1, 2, 4, 8, 16, 32
ACL_UNDEFINED = 0xFFFFFFFF


def deny_uids(path, uids):
    """Where neither namespaces nor Landlock hide ``path`` from the worker:
    add a POSIX ACL entry ``user:<uid>:---`` for each of ``uids`` (the slot
    users) to the folder ``path``, so that those uids, and only they, can no
    longer enter it (a named user's entry takes precedence over "other"); the
    mask is the group's permission bits, so no other user's access changes.
    Idempotent. Returns "" when done, else why not (no ACLs on this file
    system, not Linux)."""
    import struct
    try:
        try:
            raw = os.getxattr(path, ACL_XATTR)
        except OSError as e:
            if e.errno != errno.ENODATA:                # none yet: made from the mode bits
                raise
            raw = b""
        mode = os.stat(path).st_mode
        if raw:
            entries = {(t, i): p for t, p, i in struct.iter_unpack("<HHI", raw[4:])}
        else:
            entries = {(ACL_USER_OBJ, ACL_UNDEFINED): (mode >> 6) & 7,
                       (ACL_GROUP_OBJ, ACL_UNDEFINED): (mode >> 3) & 7,
                       (ACL_OTHER, ACL_UNDEFINED): mode & 7}
        wanted = {(ACL_USER, int(u)) for u in uids}
        if all(entries.get(k) == 0 for k in wanted):
            return ""
        for key in wanted:
            entries[key] = 0
        entries.setdefault((ACL_MASK, ACL_UNDEFINED), entries[(ACL_GROUP_OBJ, ACL_UNDEFINED)])
        data = struct.pack("<I", 2) + b"".join(
            struct.pack("<HHI", t, p, i) for (t, i), p in sorted(entries.items()))
        os.setxattr(path, ACL_XATTR, data)
        return ""
    except (OSError, AttributeError) as e:
        return (f"no POSIX ACLs on {path} ({os.strerror(e.errno)})"
                if isinstance(e, OSError) and e.errno else f"no POSIX ACLs here ({e})")


def allow_uids(path, uids):
    """Undo :func:`deny_uids` for ``uids``: their entries go; an ACL left
    with no named user or group is removed (the mode bits say the same).
    Never raises."""
    import struct
    try:
        raw = os.getxattr(path, ACL_XATTR)
        entries = {(t, i): p for t, p, i in struct.iter_unpack("<HHI", raw[4:])}
        for u in uids:
            entries.pop((ACL_USER, int(u)), None)
        if not any(t in (ACL_USER, ACL_GROUP) for t, _ in entries):
            os.removexattr(path, ACL_XATTR)
            return
        os.setxattr(path, ACL_XATTR, struct.pack("<I", 2) + b"".join(
            struct.pack("<HHI", t, p, i) for (t, i), p in sorted(entries.items())))
    except (OSError, AttributeError):
        pass


def write_policy(worker_dir, protected):
    """POLICY_FILE in the worker's folder (created by root, readable by the slot)."""
    path = os.path.join(str(worker_dir), POLICY_FILE)
    with open(path, "w") as f:
        json.dump({"protected": list(protected)}, f)
    return path


def readable_by_others(path):
    """Whether any other uid can reach ``path`` (every ancestor searchable by
    'other' and the path itself readable)."""
    p = _real(str(path))
    parts = [p]
    while parts[-1] != "/":
        parts.append(os.path.dirname(parts[-1]))
    for d in parts:
        mode = os.stat(d).st_mode
        if not mode & stat.S_IXOTH or (d == p and not mode & stat.S_IROTH):
            return False
    return True
