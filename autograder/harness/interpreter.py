"""Which Python runs the worker, as the worker uid.

The worker's interpreter (:func:`_candidates`), the first that passes the
worker's self-test as the worker uid (``sandbox._works``: its uid, its
namespaces, its Landlock ruleset and its syscall allowlist):
AUTOGRADER_WORKER_PYTHON, the pins' venv of Gradescope's setup.sh or
PrairieLearn's course image (PLATFORM_VENV), the worker venv below, then the
grader's own interpreter (PrairieLearn's stock image, a hosted notebook's
system Python; numpy MIN_NUMPY or newer). Only if none works is the worker
venv built (pip needs PyPI: not on a machine with no network device).
pyseccomp, where the interpreter lacks it, comes from the grader's
``vendor/`` (PrairieLearn).

Measured on these machines: the default ``python3`` is a pyenv build inside
root's home (mode 0700), so a worker dropped to another uid cannot start it
(EACCES); Debian's system ``python3`` is reachable. The worker venv
(``venv-<py>-<hash of its pins>`` in STATE_DIR) is built from it once,
atomically (a temporary directory renamed into place, under a lock), by
``python -m autograder worker-venv`` or by the first grading on a fresh
machine; grading never deletes or rebuilds it. An unusable interpreter is an
autograder fault (:class:`~.slots.WorkerUnavailable`), never the student's.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .. import MIN_NUMPY
from ..paths import ROOT
from ..requirements import GRADER_REQUIREMENTS, grader_requirements
from . import slots
from .slots import WorkerUnavailable

try:
    import fcntl
except ImportError:      # pragma: no cover - Windows: nothing here runs there
    fcntl = None

if TYPE_CHECKING:
    from .sandbox import Sandbox

WORKER_PYTHON_ENV = "AUTOGRADER_WORKER_PYTHON"
PLATFORM_VENV = "/opt/rlcap-venv"   # the pins' venv of Gradescope's setup.sh and of PrairieLearn's
                                    # course image (dist/prairielearn/image/Dockerfile)
# What a student reads when no interpreter can run the worker (the log has the detail).
NO_WORKER = ("no Python could run your code here (a fault of the course's grading setup, "
             "not of your code; the grading log says what the course staff must do)")
# Pure-Python modules the worker needs that an image may lack (PrairieLearn's stock image has no
# pyseccomp): make dist ships them in ROOT/VENDOR_DIR; the worker's folder gets a copy, which
# its interpreter imports first (the script's folder leads sys.path).
VENDOR_DIR = "vendor"
VENDORED = ("pyseccomp.py",)


def _grader_requirements() -> list[str]:
    """The grading venv's pins: the zip's own requirements-grader.txt (the
    Gradescope zip: runtime and sandbox; a handout: the runtime only, so no
    network filter is required on a student's machine), else the checkout's
    pyproject.toml; [] where neither is found."""
    path = ROOT / GRADER_REQUIREMENTS
    if path.is_file():
        return [l.strip() for l in path.read_text().splitlines() if l.strip()]
    if (ROOT / "pyproject.toml").is_file():
        return grader_requirements()
    return []


def syscall_filter_required() -> bool:
    """Whether the worker must install its syscall allowlist: wherever the
    grading venv brings pyseccomp (a checkout, the Gradescope zip); not in a
    student's handout graded as root on the student's own machine."""
    return any(re.match(r"pyseccomp\b", r.strip(), re.I) for r in _grader_requirements())


def _base_python() -> Optional[str]:
    """The interpreter the worker venv is built from: the system python3,
    which every uid can run (a pyenv or conda build often lives under a home
    the worker uid cannot enter), unless it is older than 3.10 (Amazon Linux
    2023's is 3.9): then this interpreter's own base."""
    system = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
    if system and _version(system) >= (3, 10):
        return system
    return getattr(sys, "_base_executable", "") or sys.executable


@functools.lru_cache(maxsize=None)
def _version(python: str) -> tuple[int, ...]:
    """(major, minor) of ``python``, () if it does not run."""
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        return tuple(int(x) for x in out[:2])
    except (OSError, TypeError, ValueError, subprocess.SubprocessError):
        return ()


@functools.lru_cache(maxsize=None)
def _venv_name() -> str:
    """``venv-<major><minor>`` of the interpreter the venv is built from (not
    of the one grading: a student's 3.12 venv gets a worker on the system's
    3.11, and its name says 3.11)."""
    version = _version(_base_python() or "") or sys.version_info[:2]
    return "venv-%d%d" % tuple(version)


def worker_venv_path() -> Path:
    """STATE_DIR/venv-<py>-<hash of the grader requirements>: a change of the
    pins gets a venv of its own, built once; an older one is left alone (in a
    handout, which knows no pins: STATE_DIR/venv-<py>)."""
    pins = sorted(_grader_requirements())
    if not pins:
        return slots.STATE_DIR / _venv_name()
    digest = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:8]
    return slots.STATE_DIR / f"{_venv_name()}-{digest}"


def build_worker_venv(rebuild: bool = False, echo=None) -> Path:
    """The worker venv (STATE_DIR/venv-<py>-<hash>), built from the system python3
    with only the runtime's pinned dependencies: in a temporary directory,
    then renamed into place, under a lock, so that a grading never sees a
    half-built venv. An existing venv is kept unless ``rebuild`` (the
    explicit command); returns its interpreter."""
    base = _base_python()
    if not base:
        raise WorkerUnavailable("no python3 (3.10 or newer) to build the worker venv from")
    slots.STATE_DIR.mkdir(parents=True, exist_ok=True)
    os.chmod(slots.STATE_DIR, 0o755)
    venv = worker_venv_path()
    with open(slots.STATE_DIR / "venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if venv.exists() and not rebuild:
            return venv / "bin" / "python"
        tmp = Path(tempfile.mkdtemp(prefix=f".{_venv_name()}-build-", dir=slots.STATE_DIR))
        step = f"`{base} -m venv` (Debian and Ubuntu: the python3-venv package)"
        try:
            if echo:
                echo(f"building the worker venv in {tmp} (then {venv})")
            subprocess.run([base, "-m", "venv", str(tmp)], check=True, capture_output=True)
            step = "pip, installing " + ", ".join(_grader_requirements())
            subprocess.run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", *_grader_requirements()],
                           check=True, capture_output=True)
            step = "making it readable"
            subprocess.run(["chmod", "-R", "a+rX,go-w", str(tmp)], check=True)
            os.chmod(tmp, 0o755)
            old = None
            if venv.exists():
                old = Path(tempfile.mkdtemp(prefix=f".{_venv_name()}-old-", dir=slots.STATE_DIR))
                os.rename(venv, old / "venv")
            os.rename(tmp, venv)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except (OSError, subprocess.CalledProcessError) as e:
            shutil.rmtree(tmp, ignore_errors=True)
            said = (getattr(e, "stderr", b"") or b"").decode(errors="replace").splitlines()
            errors = [l.strip() for l in said if l.startswith("ERROR") or "Error" in l][-2:]
            why = "; ".join(errors) or ((e.strerror or str(e)) if isinstance(e, OSError) else
                                        f"exit status {e.returncode}")
            raise WorkerUnavailable(f"building the worker venv {venv} failed at {step}: "
                                    f"{why}") from None
    return venv / "bin" / "python"


def _own_numpy() -> str:
    """The numpy version of this interpreter ("" without numpy)."""
    try:
        import numpy
        return str(numpy.__version__)
    except ImportError:
        return ""


def _old_numpy(version: str) -> bool:
    """Whether numpy ``version`` is older than MIN_NUMPY (or unreadable)."""
    try:
        return tuple(int(x) for x in version.split(".")[:2]) < MIN_NUMPY
    except ValueError:
        return True


def _candidates(venv_python: str) -> list[str]:
    """The interpreters the worker may run on, in order: the one named by
    AUTOGRADER_WORKER_PYTHON, Gradescope's (and the course image's)
    /opt/rlcap-venv, the worker venv of STATE_DIR, and the grader's own
    (PrairieLearn's stock image, a hosted notebook's system Python) unless its
    numpy is older than MIN_NUMPY. Existing ones only, each once."""
    found = [os.environ.get(WORKER_PYTHON_ENV), f"{PLATFORM_VENV}/bin/python", venv_python]
    if not _old_numpy(_own_numpy()):
        found.append(sys.executable)
    return [p for i, p in enumerate(found) if p and os.path.exists(p) and p not in found[:i]]


def network_devices() -> list[str]:
    """This network namespace's interfaces other than loopback (from
    /proc/net/dev): [] in a container started without a network (PrairieLearn
    with ``enableNetworking: false``, ``docker run --network none``)."""
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return ["(unknown: /proc/net/dev unreadable)"]
    names = [line.split(":", 1)[0].strip() for line in lines if ":" in line]
    return [n for n in names if n != "lo"]


def libseccomp_loads() -> bool:
    """Whether libseccomp (``libseccomp.so.2``, what pyseccomp binds) loads here."""
    import ctypes
    try:
        ctypes.CDLL("libseccomp.so.2")
        return True
    except OSError:
        return False


_DIAGNOSE = """import json, sys
out = {"python": "%d.%d.%d" % sys.version_info[:3]}
for name in ("numpy", "threadpoolctl", "pyseccomp"):
    try:
        out[name] = str(getattr(__import__(name), "__version__", "present"))
    except Exception:
        out[name] = ""
print(json.dumps(out))
"""


def _blocked(path: Path) -> Optional[Path]:
    """The first directory on the way to ``path`` (itself included when a
    directory) that other users cannot pass through, or None."""
    p = Path(os.path.abspath(path))
    for d in reversed([p] + list(p.parents)):
        try:
            st = os.stat(d)
        except OSError:
            return d
        if stat.S_ISDIR(st.st_mode) and not st.st_mode & stat.S_IXOTH:
            return d
    return None


def _no_worker(sb: "Sandbox", candidates: list[str], venv_python: str,
               build_error: str) -> tuple[str, str]:
    """(why no interpreter ran the worker, what to do), for the course staff
    (or a student grading as root on their own machine): one clause per
    interpreter tried, read as root (only when grading cannot go on)."""
    blocked = _blocked(sb.parent)
    if blocked is not None:
        return (f"the worker account cannot pass through {blocked} (mode "
                f"{stat.S_IMODE(os.stat(blocked).st_mode):04o}), where its sandboxes live "
                f"(RLCAP_STATE_DIR={slots.STATE_DIR})",
                f"`chmod o+x {blocked}`, or set RLCAP_STATE_DIR to a folder every user can "
                f"pass through (the default is {slots.DEFAULT_STATE_DIR})")
    needed = ["numpy", "threadpoolctl"] + (["pyseccomp"] if sb.syscall_filter else [])
    why = []
    for python in candidates:
        where = _blocked(Path(os.path.realpath(python))) or _blocked(Path(python))
        if where is not None:
            why.append(f"{python}: under {where}, which other users cannot enter")
            continue
        try:
            proc = subprocess.run([python, "-E", "-s", "-c", _DIAGNOSE], cwd=sb.worker_dir,
                                  capture_output=True, text=True, timeout=60)
            facts = json.loads(proc.stdout.strip().splitlines()[-1])
        except (OSError, ValueError, IndexError, subprocess.SubprocessError):
            why.append(f"{python}: does not run")
            continue
        missing = [m for m in needed if not facts.get(m)]
        label = f"{python} (Python {facts['python']}" + (
            f", numpy {facts['numpy']})" if facts.get("numpy") else ")")
        if missing:
            why.append(f"{label}: lacks {', '.join(missing)}")
        elif sb.syscall_filter and not libseccomp_loads():
            why.append(f"{label}: cannot install the network filter: libseccomp "
                       "(libseccomp.so.2) is not on this machine, which has a network")
        else:
            why.append(f"{label}: failed the worker's self-test as the worker account")
    own = _own_numpy()
    if own and _old_numpy(own):
        why.append(f"{sys.executable}: numpy {own} is older than "
                   f"{'.'.join(map(str, MIN_NUMPY))}, the oldest measured")
    if build_error and not os.path.exists(venv_python):
        why.append(f"{venv_python.rsplit('/bin/', 1)[0]} (the worker venv): {build_error}")
    if not syscall_filter_required():               # a handout: a student's own machine
        todo = ("install the handout's requirements.txt where every user can import them "
                "(as root, without --user), or build the worker venv once with PyPI "
                "reachable: `python -m autograder worker-venv`")
    else:
        todo = ("on PrairieLearn, use the course image (make dist writes its Dockerfile: "
                "docs/prairielearn.md); elsewhere give the worker an interpreter every user "
                "can run, with " + ", ".join(needed) + " (AUTOGRADER_WORKER_PYTHON names it), "
                "or, as root with PyPI reachable, run `python -m autograder worker-venv "
                "--rebuild`")
    return "; ".join(why) or "no interpreter found", todo
