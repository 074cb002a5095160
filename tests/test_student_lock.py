"""The students' locks (requirements/student/) install from wheels on CPython 3.10-3.14
for Linux, macOS and Windows, and are complete: pip downloads each target's pins
(``pip download --no-deps --only-binary=:all: --python-version X --platform P``), and
every requirement that a downloaded wheel declares for that target is locked at a
version it accepts, or is one of the exclusions named in excludes.txt.

pip evaluates the lock's markers for the interpreter it runs on, not for
``--python-version``/``--platform``, so the pins of each target are chosen here with
``packaging``'s markers and handed to pip without markers.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from autograder.paths import read_toml
from autograder.requirements import student_requirements
from conftest import ROOT

LOCK_DIR = ROOT / "requirements" / "student"
PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")
# (sys_platform, platform_system, platform_machine, os_name, pip --platform tags)
PLATFORMS = {
    "linux-x86_64": ("linux", "Linux", "x86_64", "posix",
                     ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                      "manylinux_2_5_x86_64", "manylinux1_x86_64", "linux_x86_64"]),
    "macos-arm64": ("darwin", "Darwin", "arm64", "posix", ["macosx_12_0_arm64"]),
    "macos-x86_64": ("darwin", "Darwin", "x86_64", "posix", ["macosx_12_0_x86_64"]),
    "windows-amd64": ("win32", "Windows", "AMD64", "nt", ["win_amd64"]),
}
TARGETS = [(py, plat) for py in PYTHONS for plat in PLATFORMS]


def marker_env(python: str, platform: str) -> dict[str, str]:
    sys_platform, system, machine, os_name, _ = PLATFORMS[platform]
    return {"python_version": python, "python_full_version": python + ".0",
            "implementation_version": python + ".0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "sys_platform": sys_platform,
            "platform_system": system, "platform_machine": machine, "os_name": os_name,
            "platform_release": "", "platform_version": "", "extra": ""}


def lock_lines(path: Path) -> list[Requirement]:
    """The pins of one lock file and of the files it includes with ``-r``."""
    out = []
    for line in path.read_text().splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or line.startswith("--only-binary"):
            continue
        if line.startswith("-r "):
            out += lock_lines(path.parent / line[3:].strip())
            continue
        out.append(Requirement(line))
    return out


def excluded() -> set[str]:
    names = set()
    for line in (LOCK_DIR / "excludes.txt").read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            names.add(canonicalize_name(name))
    return names


def pins_for(lines: list[Requirement], env: dict) -> dict[str, Version]:
    """{name: version} of the lines whose marker holds in ``env``; one version a name."""
    pins: dict[str, Version] = {}
    for req in lines:
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        (spec,) = req.specifier
        assert spec.operator == "==", f"{req}: not pinned with =="
        name, version = canonicalize_name(req.name), Version(spec.version)
        assert pins.setdefault(name, version) == version, \
            f"{name}: pinned at {pins[name]} and {version} for {env['python_version']}"
    return pins


def _requires(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        msg = Parser().parsestr(zf.read(meta).decode())
    return [Requirement(r) for r in msg.get_all("Requires-Dist") or []]


def unmet(pins: dict[str, Version], requires: dict[str, list[Requirement]],
          env: dict, roots: list[Requirement]) -> list[str]:
    """What the pinned wheels (and the roots) require in ``env`` that the pins lack,
    following extras (``nbconvert[webpdf]`` needs what nbconvert's webpdf extra needs)."""
    problems, skip = [], excluded()
    todo = [("(top level)", r, "") for r in roots]
    todo += [(name, r, "") for name, reqs in requires.items() for r in reqs]
    seen = set()
    while todo:
        who, req, extra = todo.pop()
        if (who, str(req), extra) in seen:
            continue
        seen.add((who, str(req), extra))
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        name = canonicalize_name(req.name)
        if name in skip:
            continue
        if name not in pins:
            problems.append(f"{who} requires {req}: not in the lock")
            continue
        if not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{who} requires {req}: the lock has {pins[name]}")
        for ex in req.extras:
            todo += [(f"{name}[{ex}]", r, ex) for r in requires.get(name, [])]
    return problems


def download(pins: dict[str, Version], python: str, platform: str, dest: Path) -> dict:
    """pip downloads these pins' wheels for the target into a folder of its own under
    ``dest``; {name: wheel path}.  One folder per target: pip processes that save the same
    pure-Python wheel into one folder at once race (one replaces the file while the other
    sets its mode: FileNotFoundError, seen on CI)."""
    dest = dest / f"{python}-{platform}"
    dest.mkdir()
    wanted = dest / "wanted.txt"
    wanted.write_text("".join(f"{n}=={v}\n" for n, v in sorted(pins.items())))
    tags = [a for tag in PLATFORMS[platform][4] for a in ("--platform", tag)]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "--python-version", python,
         "--implementation", "cp", *tags, "--dest", str(dest), "-r", str(wanted)],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"CPython {python} on {platform}:\n{proc.stderr[-3000:]}"
    # pip stops with "No matching distribution" when a pin has no wheel for the target;
    # the wheels of one name and version declare the same requirements on every target
    # (they differ by markers), so any of them serves for the metadata
    wheels = {}
    for f in dest.glob("*.whl"):
        name, version, _, _ = parse_wheel_filename(f.name)
        if pins.get(name) == version:
            wheels[name] = f
    missing = sorted(set(pins) - set(wheels))
    assert not missing, f"CPython {python} on {platform}: no wheel found for {missing}"
    return wheels


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """Every target's wheels of the lab lock (a superset of the plain one)."""
    lines = lock_lines(LOCK_DIR / "requirements-lab.txt")
    dest = tmp_path_factory.mktemp("wheels")
    with ThreadPoolExecutor(4) as pool:
        found = pool.map(lambda t: (t, download(pins_for(lines, marker_env(*t)), *t, dest)),
                         TARGETS)
        return dict(found)


def _lab_roots() -> list[Requirement]:
    lab = read_toml(ROOT / "pyproject.toml")["project"]["optional-dependencies"]["lab"]
    return [Requirement(r) for r in student_requirements() + lab]


@pytest.mark.slow
@pytest.mark.parametrize("lock, roots", [
    ("requirements.txt", lambda: [Requirement(r) for r in student_requirements()]),
    ("requirements-lab.txt", _lab_roots)], ids=["plain", "lab"])
def test_lock_installs_from_wheels_and_is_complete(wheels, lock, roots):
    lines = lock_lines(LOCK_DIR / lock)
    problems = []
    for target in TARGETS:
        env = marker_env(*target)
        pins = pins_for(lines, env)
        requires = {name: _requires(wheels[target][name]) for name in pins}
        problems += [f"CPython {target[0]} on {target[1]}: {p}"
                     for p in unmet(pins, requires, env, roots())]
    assert not problems, "\n".join(problems[:40])


def disagreements(lines: list[Requirement], roots: list[str]) -> list[str]:
    """The top-level pins (``roots``) that the lock does not satisfy, per target."""
    problems = []
    for target in TARGETS:
        env = marker_env(*target)
        pins = pins_for(lines, env)
        for root in map(Requirement, roots):
            if root.marker is None or root.marker.evaluate(env):
                name = canonicalize_name(root.name)
                if name not in pins or not root.specifier.contains(pins[name]):
                    problems.append(f"{root}: the lock has {pins.get(name)} for CPython "
                                    f"{target[0]} on {target[1]}; run `make lock`")
    return problems


def test_lock_follows_pyproject_and_keeps_exclusions_out():
    """The handout's top-level pins in pyproject.toml stand in the lock as written
    (a pin edited without `make lock` fails here), and no excluded package is locked."""
    lines = lock_lines(LOCK_DIR / "requirements.txt")
    assert not disagreements(lines, student_requirements())
    roots = student_requirements()
    first = next(i for i, r in enumerate(roots) if Requirement(r).marker is None)
    edited = roots[:first] + [roots[first] + ".post1"] + roots[first + 1:]   # a pin moved on
    assert len(disagreements(lines, edited)) == len(TARGETS)      # the check can fail
    for target in TARGETS:
        assert not excluded() & set(pins_for(lines, marker_env(*target)))


def test_completeness_check_fails_on_a_gap():
    """The check above is not blind: a lock that lacks a needed package, or pins one
    at a version its dependent refuses, or skips an extra's need, is reported."""
    env = marker_env("3.12", "linux-x86_64")
    pins = {"a": Version("1.0"), "b": Version("2.0")}
    requires = {"a": [Requirement("b>=3"), Requirement("c; python_version >= '3.11'"),
                      Requirement("d[x]")],
                "b": [Requirement("e; sys_platform == 'win32'")]}
    problems = unmet({**pins, "d": Version("1")}, {**requires, "d": [Requirement("f; extra == 'x'")]},
                     env, [Requirement("a==1.0")])
    text = "\n".join(problems)
    assert re.search(r"b>=3: the lock has 2.0", text)
    assert "c; python_version >= \"3.11\": not in the lock" in text
    assert "f; extra == \"x\": not in the lock" in text
    assert "e;" not in text                      # win32 only: not needed on Linux
    assert "playwright" in excluded()


CHECK_EVERY_PUBLIC_QUESTION = """
import os, shutil, sys, zipfile
from pathlib import Path
handout, solutions = Path(sys.argv[1]), Path(sys.argv[2])
os.chdir(handout); sys.path.insert(0, str(handout))
import numpy
from autograder.grading import config, public
print("numpy", numpy.__version__)
a = config.load(handout.name)
for src in a.sources(solutions):
    if src.exists():
        shutil.copy(src, handout / src.name)
for q in a.questions:
    if q.public:
        public.check(a.id, q.name, show_progress=False)
        print("pass", q.name)
"""


@pytest.mark.slow
def test_public_checks_pass_with_every_numpy_the_lock_installs(tmp_path, built_dist):
    """A student on CPython 3.14 gets another numpy than the one the expected values
    were recorded with (2.2.6 has no 3.14 wheel): every public check of every handout
    passes on the reference with each numpy version the lock pins (installed here into a
    venv of this interpreter, which every pinned numpy supports)."""
    import numpy
    lines = lock_lines(LOCK_DIR / "requirements.txt")
    versions = {pins_for(lines, marker_env(py, plat))["numpy"] for py, plat in TARGETS}
    others = sorted(v for v in versions if str(v) != numpy.__version__)
    assert others, "the lock pins one numpy only: nothing to check here"
    for version in others:
        venv = tmp_path / f"numpy-{version}"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--target",
                        str(next((venv / "lib").glob("python3*")) / "site-packages"),
                        f"numpy=={version}", "threadpoolctl==3.6.0",
                        "tomli==2.2.1; python_version < '3.11'"], check=True)
        for assignment_id, (student_zip, _) in built_dist.items():
            with zipfile.ZipFile(student_zip) as zf:
                zf.extractall(venv / "handouts")
            proc = subprocess.run(
                [str(venv / "bin" / "python"), "-c", CHECK_EVERY_PUBLIC_QUESTION,
                 str(venv / "handouts" / assignment_id), str(ROOT / "solutions")],
                capture_output=True, text=True, timeout=600, env={"PATH": "/usr/bin:/bin"})
            assert proc.returncode == 0, \
                f"numpy {version}, {assignment_id}:\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}"
            assert f"numpy {version}\n" in proc.stdout and "\npass " in proc.stdout
