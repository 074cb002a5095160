"""Interpreters that stand for the places our grader runs but we cannot boot
here: PrairieLearn's stock ``prairielearn/grader-python`` image (its own
CPython and packages in a venv, no pip index at grading time) and a hosted
notebook such as Google Colab (root, the system CPython with packages
installed system-wide, no venv).

The CPythons come from pyenv (3.10, 3.12, 3.13 beside the machine's 3.11).
A pyenv build lives under root's home (mode 0700), where the worker's uid
cannot start it, and links ``libpython`` through an absolute RUNPATH into
that home; so each is copied, once, to ``CACHE`` (world-readable), without
its test suite, and its RUNPATH rewritten to ``$ORIGIN/../lib`` in place.
Packages are installed while the test SETS UP (pip may use the network
then); everything is cached in ``CACHE`` by its pins and reused within and
across sessions. Building one: about 15 s (the copy, then pip).

    stock_python("3.12", ["numpy==1.26.4", "threadpoolctl==3.6.0"])        # a venv
    stock_python("3.12", [...], venv=False)                                 # system-wide
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
CACHE = Path(os.environ.get("RLCAP_TEST_PYTHONS", "/var/cache/rlcap-test-pythons"))
SKIPPED = ("test", "idlelib", "tkinter", "turtledemo", "site-packages", "config-*")
LAYOUT = 2          # bumped when what a stand-in holds changes (its cache key): 2 keeps the
                    # stdlib's bytecode, as PrairieLearn's image compiles its own
# What PrairieLearn's graders/python image held when it had numpy 1.26.4 (its requirements.txt
# up to 2026-01; Miniforge's CPython, 3.12 then: numpy 1.26 has no wheel for 3.13) and what it
# holds since (uv's CPython 3.13, numpy 2.4.6), restricted to what our grader imports: numpy and
# threadpoolctl (a dependency of its scikit-learn). 3.6.0: the newest threadpoolctl of both.
STOCK_1_26 = ("3.12", ("numpy==1.26.4", "threadpoolctl==3.6.0"))
STOCK_2_4 = ("3.13", ("numpy==2.4.6", "threadpoolctl==3.6.0"))
# A pip that can reach no index: what a grading job with networking off gives.
NO_INDEX_ENV = {"PIP_NO_INDEX": "1", "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
                "PIP_FIND_LINKS": "", "PIP_CONFIG_FILE": os.devnull}


def pyenv_version(minor: str) -> Optional[Path]:
    """The newest pyenv build of ``minor`` (e.g. "3.12"), or None."""
    if not PYENV.is_dir():
        return None
    found = [p for p in PYENV.iterdir()
             if re.fullmatch(re.escape(minor) + r"\.\d+", p.name)
             and (p / "bin" / f"python{minor}").is_file()]
    return max(found, key=lambda p: int(p.name.rsplit(".", 1)[1]), default=None)


def _patch_runpath(binary: Path, old: str) -> None:
    """Rewrite the RUNPATH ``old`` of ``binary`` to ``$ORIGIN/../lib`` (same
    place in the string table, NUL-padded: the new string is shorter)."""
    data = binary.read_bytes()
    needle, new = old.encode() + b"\0", b"$ORIGIN/../lib\0"
    if data.count(needle) != 1 or len(new) > len(needle):
        raise RuntimeError(f"{binary}: RUNPATH {old!r} not found once")
    binary.write_bytes(data.replace(needle, new.ljust(len(needle), b"\0")))


def _world_readable(path: Path) -> None:
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(path)], check=True)


def portable(minor: str, dest: Path) -> Path:
    """Copy pyenv's ``minor`` to ``dest`` (made here), usable by any uid;
    returns its ``bin/python<minor>``."""
    src = pyenv_version(minor)
    if src is None:
        raise FileNotFoundError(f"no pyenv build of Python {minor} in {PYENV}")
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED))
    (dest / "lib" / f"python{minor}" / "site-packages").mkdir(exist_ok=True)
    python = dest / "bin" / f"python{minor}"
    _patch_runpath(python, str(src / "lib"))
    _world_readable(dest)
    return python


def _pip(python: Path, pins: tuple[str, ...]) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", "--only-binary=:all:", *pins],
                   check=True, capture_output=True, timeout=900)


def stock_python(minor: str, pins: tuple[str, ...] | list[str], venv: bool = True) -> Path:
    """An interpreter of CPython ``minor`` with exactly ``pins`` installed:
    in a venv (``venv``), else into the copied CPython itself (system-wide).
    Built once under a lock (atomically renamed into ``CACHE``); returns it."""
    pins = tuple(pins)
    key = hashlib.sha256(repr((minor, sorted(pins), venv, LAYOUT)).encode()).hexdigest()[:10]
    name = f"{'venv' if venv else 'system'}-{minor}-{key}"
    python = CACHE / name / "bin" / f"python{minor}"
    CACHE.mkdir(parents=True, exist_ok=True)
    os.chmod(CACHE, 0o755)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists():
            return python
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=CACHE))
        try:
            if venv:
                base = CACHE / f"cpython-{minor}-{LAYOUT}"
                if not base.exists():
                    staging = Path(tempfile.mkdtemp(prefix=".cpython-", dir=CACHE))
                    portable(minor, staging / "py")
                    os.rename(staging / "py", base)
                    os.rmdir(staging)
                # a venv's python is a symlink to the base, as PrairieLearn's /venv
                subprocess.run([str(base / "bin" / f"python{minor}"), "-m", "venv",
                                str(tmp / "v")], check=True, capture_output=True)
                _pip(tmp / "v" / "bin" / f"python{minor}", pins)   # (bin/pip's shebang
                                                                  # names tmp: use -m pip)
            else:
                py = portable(minor, tmp / "v")
                subprocess.run([str(py), "-m", "ensurepip", "--default-pip"], check=True,
                               capture_output=True)
                _pip(py, pins)
            _world_readable(tmp / "v")
            os.rename(tmp / "v", CACHE / name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return python


def without(python: Path, module: str, dest: Path) -> Path:
    """A venv at ``dest`` (of ``python``'s base CPython, no pip) whose packages
    are ``python``'s venv's, linked, but for ``module`` (an image that lacks a
    piece the grader needs; "" for none); world-readable. Returns its
    interpreter."""
    python = Path(python)
    minor = python.name[len("python"):]
    base = Path(os.path.realpath(python))
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(dest)], check=True,
                   capture_output=True)
    source = python.parents[1] / "lib" / f"python{minor}" / "site-packages"
    target = dest / "lib" / f"python{minor}" / "site-packages"
    for entry in source.iterdir():
        name = entry.name.split("-")[0].split(".")[0].lower()
        if name != module.lower():
            (target / entry.name).symlink_to(entry)
    _world_readable(dest)
    return dest / "bin" / f"python{minor}"
