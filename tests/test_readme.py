"""The README's and the docs' commands, run as written: the instructor tour from
the repo root, and the student's setup and local grading in an unzipped handout
(the handout's own README, which docs/students.md and the README's student tour
repeat; tests/test_docs.py holds them equal)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from autograder.paths import DIST_DIR
from conftest import ROOT, built

import doc_pages

slow = pytest.mark.slow           # notebooks, gradings and training runs: minutes


def _sh(cmd: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


@slow
def test_instructor_tour_runs_as_written(tmp_path):
    folder = tmp_path / "folder"
    for which in ("solutions", "student_template"):
        shutil.copytree(ROOT / which / "d_grpo", folder / which,
                        ignore=shutil.ignore_patterns("*.ipynb"))
    lines = doc_pages.bash("docs/instructors.md", "The tour")
    assert lines == doc_pages.bash("README.md", "Tour: instructor")    # the README's tour
    assert lines[0] == "make dist" and len(lines) == 5
    out = {}
    for line in lines:
        out[line] = _sh(line.replace("path/to/folder", str(folder)), ROOT).stdout
    assert (DIST_DIR / "gradescope" / "d_grpo.zip").is_file()
    assert "total             16.00/16" in out[lines[1]]
    assert "total              0.00/16" in out[lines[2]] and "not implemented yet" in out[lines[2]]
    csv = (folder / "_grades" / "grades.csv").read_text()
    assert "solutions" in csv and "student_template" in csv
    assert (folder / "_grades" / "report.html").is_file()         # the class report
    assert "16" in out[lines[3]] or "summary" in out[lines[3]].lower()


STUDENT_VENV_TARGET_MB = 300      # the bound on a student's venv (README gives the measure)
# The student's `python3`: the machine's, or the one in this folder when set (e.g. a CPython
# 3.10, 3.12 or 3.13 build readable by every user), to run the first hour on each Python.
STUDENT_PYTHON_DIR = os.environ.get("RLCAP_STUDENT_PYTHON_DIR", "")


def _student_path() -> str:
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return f"{STUDENT_PYTHON_DIR}:{path}" if STUDENT_PYTHON_DIR else path


def _handout_block(handout: Path, section: str) -> list[str]:
    """Command lines of the first ```bash block under ``## <section>`` of the
    handout's own README.md (what a student with only the zip reads)."""
    text = (handout / "README.md").read_text()
    body = text.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    return [l.strip() for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def _student_lines(handout: Path) -> tuple[str, str, str, str]:
    """(make the venv, JupyterLab, start JupyterLab, grade) as the handout's
    README writes them."""
    setup = _handout_block(handout, "1. Set up")
    grade = _handout_block(handout, "2. Work")
    assert setup[0] == "python3 -m venv .venv" and "--no-deps" in setup[1]
    assert "requirements-lab.txt" in setup[2] and setup[3].startswith(".venv/bin/jupyter lab ")
    assert grade == [f".venv/bin/python -m autograder grade {handout.name} ."]
    return f"{setup[0]} && {setup[1]}", setup[2], setup[3], grade[0]


def _first_hour(handout: Path, run) -> None:
    """The handout README's lines in an unzipped handout, through ``run(cmd)``
    (which returns a CompletedProcess): venv, local grade of the stubs, the notebook
    with the stubs (Run All reaches the end, saying what is not written yet) and with
    working code (every check's pass shown,
    the figure written, the submission zip written, and replaced on a second run),
    the local grade again, and of the zip. (``jupyter lab`` starts a server: the
    notebook runs through nbconvert instead, in the venv the README made.)"""
    setup, _, _, grade = _student_lines(handout)
    _ok(run(setup), setup)
    version = _ok(run(".venv/bin/python -c 'import sys; print(sys.version)'"), "version").stdout
    print(f"the student's venv: CPython {version.strip()}")
    if STUDENT_PYTHON_DIR:
        wanted = _ok(subprocess.run([f"{STUDENT_PYTHON_DIR}/python3", "-c",
                                     "import sys; print(sys.version)"], capture_output=True,
                                    text=True), "python3").stdout
        assert version == wanted, (version, wanted)
    out = _ok(run(grade), grade).stdout
    assert "total" in out and "not implemented yet" in out
    assert "the other checks are graded where you submit" in out
    run_nb = ("RLCAP_QUICK=1 .venv/bin/jupyter nbconvert --to notebook --execute d_grpo.ipynb "
              "--output executed.ipynb")
    _ok(run(run_nb), run_nb)             # with the stubs, Run All reaches the last cell
    stubbed = (handout / "executed.ipynb").read_text()
    assert "is not implemented yet" in stubbed and "Traceback" not in stubbed
    (handout / "grpo.py").write_text((ROOT / "solutions" / "d_grpo" / "grpo.py").read_text())
    for _ in range(2):                   # the zip cell replaces its zip
        _ok(run(run_nb), run_nb)
        assert [p.name for p in handout.glob("*.zip")] == ["d_grpo_submission.zip"]
    executed = (handout / "executed.ipynb").read_text()
    for q in ("q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"):
        assert f"{q} results: All test cases passed!" in executed
    assert (handout / "figures" / "success_vs_k.png").is_file()
    assert "total" in _ok(run(grade), grade).stdout
    from_zip = grade.replace(" .", " d_grpo_submission.zip")
    assert re.search(r"^q1_centred +1\.00/1", _ok(run(from_zip), from_zip).stdout, re.M)


def _ok(proc: subprocess.CompletedProcess, cmd: str) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def _megabytes(path: Path) -> float:
    """Disk usage, as ``du -sh`` reports it to the student (MiB)."""
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1024


@slow
def test_student_setup_and_local_grading_run_as_written(tmp_path):
    with zipfile.ZipFile(built("d_grpo")[0]) as zf:
        zf.extractall(tmp_path)
    handout = tmp_path / "d_grpo"
    # A fresh machine: no worker venv yet, so a local grade as root builds one from what the
    # handout ships (its requirements-grader.txt), never from the repo. (Beside the default
    # /var/lib/rlcap: the worker's uid must reach the venv, and a worker in namespaces has
    # private /tmp and /var/tmp, so a state dir there would be hidden from it.)
    import tempfile
    state = Path(tempfile.mkdtemp(prefix="rlcap-fresh-state-",
                                  dir="/var/lib" if os.geteuid() == 0 else None))
    os.chmod(state, 0o755)
    env = dict(os.environ, RLCAP_STATE_DIR=str(state), PATH=_student_path())

    def run(cmd):
        return subprocess.run(["bash", "-c", cmd], cwd=handout, capture_output=True, text=True,
                              timeout=900, env=env)

    try:
        _first_hour(handout, run)
        if os.geteuid() == 0:
            assert any(state.glob("venv-*/bin/python")), "the local grade built no worker venv"
    finally:
        shutil.rmtree(state, ignore_errors=True)
    size = _megabytes(handout / ".venv")
    print(f"student venv after a notebook run: {size:.0f} MB")
    assert size < STUDENT_VENV_TARGET_MB, f"the student venv takes {size:.0f} MB"
    _, lab, start_lab, _ = _student_lines(handout)     # JupyterLab on top, from the same lock
    _ok(run(lab), lab)
    version = start_lab.replace(" d_grpo.ipynb", " --version")
    assert re.match(r"4\.", _ok(run(version), version).stdout)
    _pip_check_is_what_the_readme_says(run(".venv/bin/pip check").stdout)
    print(f"with JupyterLab: {_megabytes(handout / '.venv'):.0f} MB")


def _pip_check_is_what_the_readme_says(report: str) -> None:
    """`pip check` names exactly the packages the handout README's one line
    names (what the lock leaves out on purpose)."""
    from autograder.commands.handout_readme import LEFT_OUT
    missing = {canonicalize_name(m) for m in re.findall(
        r"requires ([\w.-]+), which is not installed", report)}
    said = {canonicalize_name(n) for n in re.split(r",\s*|\s+and\s+", LEFT_OUT)}
    assert missing == said, (missing, said)


@slow
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_an_ordinary_user_has_the_same_first_hour():
    """The handout belongs to an ordinary user (not root), who creates the venv,
    runs the notebook and grades locally (the sandbox's unprivileged fallback)."""
    import tempfile
    home = Path(tempfile.mkdtemp(prefix="rlcap-student-"))   # pytest's tmp_path is root's only
    try:
        with zipfile.ZipFile(built("d_grpo")[0]) as zf:
            zf.extractall(home)
        handout = home / "d_grpo"
        os.chmod(home, 0o755)
        subprocess.run(["chown", "-R", "nobody:nogroup", str(handout)], check=True)

        def run(cmd):
            return subprocess.run(
                ["runuser", "-u", "nobody", "--", "env", "-i", f"HOME={handout}",
                 f"PATH={_student_path()}", "bash", "-c", cmd],
                cwd=handout, capture_output=True, text=True, timeout=900)

        _first_hour(handout, run)
        import pwd
        owners = {pwd.getpwuid(p.lstat().st_uid).pw_name for p in (handout / ".venv").rglob("*")}
        assert owners == {"nobody"}, owners      # built by the user, not by root
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _a_hosted_python(dest: Path) -> Path:
    """A CPython 3.10+ that is no venv and not marked externally managed, as a hosted
    runtime's (Colab's): a copy of one of pyenv's builds (this machine's are root's), its
    test suites left out. The runtime's own kernel (ipykernel) is installed by the test."""
    found = sorted(Path(os.path.expanduser("~/.pyenv/versions")).glob("3.1[0-9]*"))
    found = [p for p in found if re.fullmatch(r"3\.1[0-4]\.\d+", p.name)]
    if not found:
        pytest.skip("no CPython 3.10-3.14 build to copy (pyenv's) for a hosted runtime")
    shutil.copytree(found[-1], dest, symlinks=True,
                    ignore=shutil.ignore_patterns("test", "tests", "__pycache__", "idlelib"))
    return dest / "bin"


def _hosted_block(handout: Path) -> list[str]:
    """The command lines of the handout README's "No venv" section."""
    text = (handout / "README.md").read_text()
    body = text.split("\n### No venv", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    return [l.strip() for l in block.splitlines() if l.strip()]


@slow
def test_a_hosted_kernel_without_a_venv_installs_and_grades_as_written(tmp_path):
    """The handout README's "No venv" lines, as written, on a Python that is no venv (a copy
    of a CPython build standing in for Colab's: root, its own packages, pip installs into
    its own site-packages) with its own kernel: the install keeps the runtime's kernel, the
    local grade changes nothing outside the folder (--no-sandbox), the notebook runs and
    passes its checks, and the Colab steps name the same install. Debian's system Python
    refuses the install (externally managed), as the README says."""
    with zipfile.ZipFile(built("d_grpo")[0]) as zf:
        zf.extractall(tmp_path)
    handout = tmp_path / "d_grpo"
    bin_dir = _a_hosted_python(tmp_path / "runtime")
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("VIRTUAL_ENV", None)

    def run(cmd):
        return _ok(subprocess.run(["bash", "-c", cmd], cwd=handout, capture_output=True,
                                  text=True, timeout=900, env=env), cmd)

    kernel = "python3 -c 'import ipykernel; print(ipykernel.__version__)'"
    run("python3 -m pip install --quiet ipykernel")              # the runtime's own kernel
    before = run(kernel).stdout
    install, grade = _hosted_block(handout)
    assert install == "python3 -m pip install -r requirements-hosted.txt"
    assert grade == "python3 -m autograder grade d_grpo . --no-sandbox"
    run(install)
    assert run(kernel).stdout == before, "the install replaced the runtime's kernel"
    out = run(grade).stdout
    assert "not implemented yet" in out and "not sandboxed (asked for)" in out, out
    (handout / "grpo.py").write_text((ROOT / "solutions" / "d_grpo" / "grpo.py").read_text())
    run("RLCAP_QUICK=1 python3 -m nbconvert --to notebook --execute d_grpo.ipynb "
        "--output executed.ipynb")
    executed = (handout / "executed.ipynb").read_text()
    for q in ("q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"):
        assert f"{q} results: All test cases passed!" in executed
    assert (handout / "d_grpo_submission.zip").is_file()
    assert re.search(r"^total +12\.00/12", run(grade).stdout, re.M)
    readme = (handout / "README.md").read_text()
    assert "`%pip install -r requirements-hosted.txt`" in readme
    refused = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "--dry-run", "-r",
                              "requirements-hosted.txt"], cwd=handout, capture_output=True,
                             text=True)
    if Path("/usr/lib/python3.11/EXTERNALLY-MANAGED").exists():
        assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr
        assert "externally-managed-environment" in readme


def test_adding_an_assignment_names_what_every_assignment_has():
    """The section's steps describe the assignments as they are: every path it names
    exists for every assignment, and the names it cites exist."""
    import importlib

    from autograder.grading import config
    from autograder.grading.judging import Context
    body = doc_pages.section("docs/adding-an-assignment.md", "The steps")
    paths = {p for p in re.findall(r"`([\w/<>.]+)`", body) if "/" in p}
    assert {"assignments/<id>/assignment.toml", "solutions/<id>/", "student_template/<id>/",
            "autograder/judges/<id>.py", "autograder/catalogue/<id>.py",
            "autograder/commands/shipping.py"} <= paths
    for assignment_id in config.available():
        for p in paths:
            path = ROOT / p.replace("<id>", assignment_id)
            if "<id>" in p and "oracles" in p:
                continue                      # only where a judge has hidden-case oracles
            assert path.exists(), f"the docs name {p}; {path} is missing"
        assert (ROOT / "student_template" / assignment_id / f"{assignment_id}.ipynb").is_file()
        judge = importlib.import_module(f"autograder.judges.{assignment_id}")
        names = {q.name for q in config.load(assignment_id).questions}
        assert set(judge.QUESTIONS) == names
        catalogue = importlib.import_module(f"autograder.catalogue.{assignment_id}")
        assert catalogue.WRONG and len(catalogue.RIGHT) >= 3, assignment_id
    for method in re.findall(r"`ctx\.(\w+)`", body):
        assert hasattr(Context, method), f"the docs cite ctx.{method}"
