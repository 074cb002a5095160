"""Where no venv of our pins can be built: PrairieLearn's stock image and a
hosted notebook, stood in for by pyenv's CPythons (``stock_python.py``).

PrairieLearn's ``prairielearn/grader-python`` with ``enableNetworking: false``:
its own CPython and packages (here 3.12 with numpy 1.26.4 and threadpoolctl
3.6.0, the image's pins that matter to us until 2026-01; README says what the
image holds since), no namespaces, no pip index (pip may download while a
test SETS UP; at grading time PIP_NO_INDEX and a dead index URL stand for the
missing network), a fresh state dir made as ``mktemp -d`` makes it (0700).
The grader and the worker both run on the image's Python: the references get
1.0, the blank templates 0, a missing file and a module that does not
import are not gradable, and an image lacking a piece is a fault whose
message to students holds no pip and whose log tells the staff what to do.

A hosted notebook (Google Colab): root, the system CPython with packages
installed into it (no venv), no namespaces; a handout's local grade works
there, and says in one line what to do where its sandbox cannot be built.

Cost (2 cores, as measured): the stand-ins are built once per machine (about
20 s each, cached in /var/cache/rlcap-test-pythons); each job grades at most
two cheap questions.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from autograder.commands import dist_prairielearn as pl
from autograder.commands.demo import run_prairielearn_job
from autograder.grading import config
from autograder.grading.grade import grade
from autograder.harness import interpreter, namespaces, sandbox
from autograder.requirements import grader_requirements
from conftest import ROOT, built
from stock_python import (NO_INDEX_ENV, STOCK_1_26, pyenv_version, stock_python, without)
from test_prairielearn import _cheapest, _pl_dir, check_schema

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root (CI runs as root)")
NEEDS_312 = pytest.mark.skipif(pyenv_version("3.12") is None,
                               reason="no pyenv CPython 3.12 to stand for the stock image")


@pytest.fixture(scope="session")
def stock() -> str:
    """The stand-in's interpreter: a venv of CPython 3.12 with numpy 1.26.4 and
    threadpoolctl 3.6.0, nothing else (no pyseccomp, no tomli)."""
    return str(stock_python(*STOCK_1_26))


def _state() -> str:
    """A fresh state dir as `mktemp -d` makes it (root's, 0700): no worker venv."""
    return tempfile.mkdtemp(prefix="rlcap-state-")


def _env(state: str) -> dict:
    return dict(NO_INDEX_ENV, RLCAP_NO_NAMESPACES="1", RLCAP_STATE_DIR=state)


def _job(assignment: str, suffix: str, files, python: str, state: str, log=None, **kw) -> dict:
    data = run_prairielearn_job(_pl_dir(assignment), assignment + suffix, files, python=python,
                                env=_env(state), log=log, **kw)
    check_schema(data)
    return data


JOBS = [(a, s) for a in config.available() for s in pl.parts(config.load(a))]


@pytest.mark.slow            # builds a CPython stand-in on first use (about 20 s)
@ROOT_ONLY
@NEEDS_312
@pytest.mark.parametrize("assignment,suffix", JOBS, ids=[f"{a}{s or '_visible'}" for a, s in JOBS])
def test_stock_image_grades_reference_one_and_template_zero(assignment, suffix, stock):
    a = config.load(assignment)
    questions = _cheapest(pl.parts(a)[suffix])
    state = _state()
    try:
        for which, want in (("solutions", 1.0), ("student_template", 0.0)):
            data = _job(assignment, suffix, a.sources(ROOT / which), stock, state,
                        questions=questions, data={"params": {}, "variant_seed": 1815})
            assert data["gradable"] and data["score"] == want, \
                (which, data.get("format_errors"), [t["output"][:300] for t in data["tests"]])
            note = " ".join(data["extra_data"]["notes"])
            assert f"worker Python: {stock} (the grader's own: Python 3.12" in note, note
            assert "numpy 1.26.4" in note and "no namespaces" in note
            assert "a seccomp allowlist" in note    # the vendored pyseccomp
        assert not list(Path(state).glob("venv-*")), "a worker venv was built"
    finally:
        shutil.rmtree(state, ignore_errors=True)


@pytest.mark.slow            # builds a CPython stand-in on first use (about 20 s)
@ROOT_ONLY
@NEEDS_312
def test_stock_image_not_gradable_cases(stock, tmp_path):
    """A missing file, a SyntaxError and an ImportError at import are not
    gradable, each with its reason; a crash while importing is graded (0)."""
    state = _state()
    try:
        (tmp_path / "notes.txt").write_text("not the module")
        data = _job("d_grpo", "", [tmp_path / "notes.txt"], stock, state,
                    questions=["q1_centred"])
        assert not data["gradable"] and "not found in the upload: grpo.py" in \
            data["format_errors"][0]
        reference = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()
        for name, text, said in (
                ("syntax", reference.replace("def centred_weight(", "def centred_weight(("),
                 "SyntaxError"),
                ("import", "import torch_that_is_not_here\n" + reference,
                 "ModuleNotFoundError")):
            sub = tmp_path / name
            sub.mkdir()
            (sub / "grpo.py").write_text(text)
            data = _job("d_grpo", "", [sub / "grpo.py"], stock, state, questions=["q1_centred"])
            assert not data["gradable"] and said in data["format_errors"][0], data
            assert "does not compile or import" in data["format_errors"][0]
        (tmp_path / "crash").mkdir()
        (tmp_path / "crash" / "grpo.py").write_text("import os\nos._exit(3)\n")
        data = _job("d_grpo", "", [tmp_path / "crash" / "grpo.py"], stock, state,
                    questions=["q1_centred"])
        assert data["gradable"] and data["score"] == 0.0
    finally:
        shutil.rmtree(state, ignore_errors=True)


@pytest.mark.slow            # builds a CPython stand-in on first use (about 20 s)
@ROOT_ONLY
@NEEDS_312
def test_stock_image_lacking_a_piece_tells_the_staff_and_shows_no_pip(stock, tmp_path):
    """An image whose python3 lacks threadpoolctl (the grader's own imports need
    it): the placeholder stands (not gradable, no attempt used) and the job's
    log says what is missing and what to do. An image whose Python the worker
    account cannot start (installed under a private folder), with no index
    for pip: not gradable; the student reads one line without pip in it, the
    log names each interpreter tried and why it failed."""
    home = Path(tempfile.mkdtemp(prefix="rlcap-images-"))
    os.chmod(home, 0o755)
    (home / "private").mkdir(mode=0o700)
    state = _state()
    try:
        python = str(without(stock, "threadpoolctl", home / "venv"))
        log = tmp_path / "no-tpc.log"
        data = _job("d_grpo", "", [ROOT / "solutions" / "d_grpo" / "grpo.py"], python, state,
                    log=log, questions=["q1_centred"])
        assert not data["gradable"] and data["extra_data"]["placeholder"]
        said = log.read_text()
        assert f"rlcap: the grader cannot run on {python}: it lacks threadpoolctl. To fix: " \
            "use the course image" in said, said

        private = str(without(stock, "", home / "private" / "venv"))
        log = tmp_path / "private.log"
        data = _job("d_grpo", "", [ROOT / "solutions" / "d_grpo" / "grpo.py"], private, state,
                    log=log, questions=["q1_centred"])
        assert not data["gradable"] and data["score"] == 0.0
        shown = json.dumps({k: data[k] for k in ("format_errors", "message", "tests")})
        assert "no Python could run your code here" in data["format_errors"][0]
        assert "pip" not in shown.lower() and "private" not in shown
        said = log.read_text()
        assert f"{private}: under {home / 'private'}, which other users cannot enter" in said
        assert "(the worker venv): building the worker venv" in said and "course image" in said
        assert "Traceback" not in said, said
        assert not list(Path(state).glob("venv-*")), "a half-built venv was left"
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)


@ROOT_ONLY
def test_without_libseccomp_the_filter_goes_only_where_there_is_no_network(monkeypatch,
                                                                            tmp_path):
    """The stated weaker mode: no libseccomp on the machine (the stock image may
    lack it) and no network device but loopback (PrairieLearn with networking
    off): the worker runs without its syscall filter (kernel objects only
    swept), and the note says so; with a network device the filter stays
    required."""
    sub = tmp_path / "sub"
    sub.mkdir()
    shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", sub)
    monkeypatch.setenv("RLCAP_NO_NAMESPACES", "1")
    namespaces._NAMESPACES.clear()
    monkeypatch.setattr(interpreter, "libseccomp_loads", lambda: False)
    monkeypatch.setattr(interpreter, "network_devices", lambda: [])
    report = grade("d_grpo", sub, questions=["q1_centred"], echo=False)
    note = " ".join(report.notes)
    assert report.score == 1.0 and "no syscall filter (libseccomp is not on this machine, " \
        "which has no network device but loopback" in note, note
    monkeypatch.setattr(interpreter, "network_devices", lambda: ["eth0"])
    report = grade("d_grpo", sub, questions=["q1_centred"], echo=False)
    assert "a seccomp allowlist" in " ".join(report.notes)
    namespaces._NAMESPACES.clear()


# --------------------------------------------------------------- a hosted notebook (issue 41)
@pytest.fixture(scope="module")
def colab(tmp_path_factory) -> tuple[str, Path]:
    """(the system Python of a hosted notebook: CPython 3.12 with the handout's
    runtime pins installed into it, no venv; the d_grpo handout, unzipped, with
    the reference in it)."""
    python = str(stock_python("3.12", ("numpy==2.2.6", "threadpoolctl==3.6.0"), venv=False))
    home = tmp_path_factory.mktemp("colab")
    with zipfile.ZipFile(built("d_grpo")[0]) as zf:
        zf.extractall(home)
    shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", home / "d_grpo")
    return python, home / "d_grpo"


def _local_grade(python: str, handout: Path, state: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "autograder", "grade", "d_grpo", ".",
                           "--questions", "q1_centred"], cwd=handout, capture_output=True,
                          text=True, timeout=300,
                          env=dict(NO_INDEX_ENV, PATH="/usr/bin:/bin", HOME="/root",
                                   RLCAP_NO_NAMESPACES="1", RLCAP_STATE_DIR=state, **env))


@pytest.mark.slow            # builds a CPython stand-in on first use (about 20 s)
@ROOT_ONLY
@NEEDS_312
def test_hosted_notebook_grades_with_a_mktemp_state_dir(colab):
    python, handout = colab
    state = _state()
    try:
        proc = _local_grade(python, handout, state)
        assert proc.returncode == 0 and "total        1.00/1" in proc.stdout, \
            proc.stdout + proc.stderr
        assert f"sandbox: sandboxed: worker runs as" in proc.stdout
        assert f"worker Python: {python} (the grader's own" in proc.stdout
        assert os.stat(state).st_mode & 0o001                 # the worker passes through it
    finally:
        shutil.rmtree(state, ignore_errors=True)


@pytest.mark.slow            # builds a CPython stand-in on first use (about 20 s)
@ROOT_ONLY
@NEEDS_312
def test_hosted_notebook_says_what_to_do_where_the_worker_cannot_run(colab):
    """A state dir under a folder other users cannot enter (as ~/state is for
    root): the local grade still comes, unsandboxed, with one line saying why
    and what to do (no traceback, no venv built)."""
    python, handout = colab
    hidden = Path(tempfile.mkdtemp(prefix="rlcap-private-"))      # 0700, root's
    try:
        proc = _local_grade(python, handout, str(hidden / "state"))
        assert proc.returncode == 0 and "total        1.00/1" in proc.stdout, \
            proc.stdout + proc.stderr
        line = next(l for l in proc.stdout.splitlines() if l.startswith("sandbox: "))
        assert f"not sandboxed: the worker account cannot pass through {hidden} " in line
        assert f"`chmod o+x {hidden}`" in line and "Traceback" not in proc.stderr
        assert not list((hidden / "state").glob("venv-*"))
    finally:
        shutil.rmtree(hidden, ignore_errors=True)


# ----------------------------------------------------------------------------- the course image
def test_course_image_dockerfile_is_the_stock_image_and_our_pins(monkeypatch):
    built("d_grpo")
    text = (pl.DIST_DIR / "prairielearn" / "image" / "Dockerfile").read_text()
    assert text == pl.dockerfile()
    lines = [l for l in text.replace("\\\n", " ").splitlines() if l and not l.startswith("#")]
    assert lines[0] == "FROM prairielearn/grader-python"
    assert lines[1] == "RUN dnf install -y libseccomp && dnf clean all"
    run = shlex.split(lines[2])
    assert run[:5] == ["RUN", "python3", "-m", "venv", pl.COURSE_VENV] and len(lines) == 3
    pip = run[run.index("&&") + 1:]
    assert pip[:4] == [f"{pl.COURSE_VENV}/bin/python", "-m", "pip", "install"]
    pins = pip[pip.index("--disable-pip-version-check") + 1:pip.index("&&")]
    assert pins == grader_requirements()                      # our pins, nothing else
    assert pip[pip.index("&&") + 1:] == ["chmod", "-R", "a+rX", pl.COURSE_VENV]
    # the grader prefers that venv: the entry point runs on it, the sandbox tries it first
    entry = (ROOT / "autograder" / "prairielearn" / "run_prairielearn").read_text()
    assert f"[ -x {pl.COURSE_VENV}/bin/python ]" in entry
    assert pl.COURSE_VENV == sandbox.PLATFORM_VENV
    monkeypatch.setenv(pl.IMAGE_ENV, "someone/rlcap-grader")
    info = pl.info_json(config.load("d_grpo"), "")
    assert info["externalGradingOptions"]["image"] == "someone/rlcap-grader"


# ------------------------------------------------------------------------------- the docs
@ROOT_ONLY
@NEEDS_312
@pytest.mark.slow            # builds a CPython stand-in on first use (about 20 s)
def test_readme_grades_as_the_stock_image_would(stock):
    """docs/prairielearn.md's command for grading a job as the stock image would, as
    written: the reference of d_grpo's first question gets 1.0 on the stand-in."""
    import doc_pages
    [command] = doc_pages.bash("docs/prairielearn.md", "Grade a job outside PrairieLearn", 1)
    assert command.startswith("RLCAP_NO_NAMESPACES=1 ")
    layout = _pl_dir("d_grpo")
    job = Path(tempfile.mkdtemp(prefix="rlcap-pl-readme-"))
    os.chmod(job, 0o755)
    try:
        shutil.copytree(layout / "serverFilesCourse" / "rlcap" / "d_grpo",
                        job / "serverFilesCourse" / "rlcap" / "d_grpo")
        shutil.copytree(layout / "questions" / "rlcap" / "d_grpo" / "tests", job / "tests")
        (job / "student").mkdir()
        shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", job / "student")
        (job / "data").mkdir()
        (job / "data" / "data.json").write_text('{"params": {}, "variant_seed": 7}')
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "RLCAP_"))}
        proc = subprocess.run(["bash", "-c", command.replace("/tmp/job", str(job))
                               .replace("<python3>", stock)], cwd=ROOT, capture_output=True,
                              text=True, env=dict(env, RLCAP_QUESTIONS="q1_centred"))
        data = json.loads((job / "results" / "results.json").read_text())
        check_schema(data)
        assert data["gradable"] and data["score"] == 1.0, proc.stderr[-2000:]
        assert f"worker Python: {stock} (the grader's own" in " ".join(
            data["extra_data"]["notes"])
    finally:
        shutil.rmtree(job, ignore_errors=True)
