"""The README's commands, run as written: the instructor tour from the repo
root, and the student's setup and local grading in an unzipped handout."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.paths import DIST_DIR
from conftest import ROOT, built

README = (ROOT / "README.md").read_text()

pytestmark = pytest.mark.slow     # notebooks, gradings and training runs: minutes


def _bash_block(section: str) -> list[str]:
    """Command lines of the first ```bash block under ``## section``."""
    body = README.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    return [l.strip() for l in block.splitlines() if l.strip() and not l.lstrip().startswith("#")]


def _sh(cmd: str, cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def test_instructor_tour_runs_as_written(tmp_path):
    folder = tmp_path / "folder"
    for which in ("solutions", "student_template"):
        shutil.copytree(ROOT / which / "d_grpo", folder / which,
                        ignore=shutil.ignore_patterns("*.ipynb"))
    lines = _bash_block("For instructors")
    assert lines[0] == "make dist" and len(lines) == 5
    out = {}
    for line in lines:
        out[line] = _sh(line.replace("path/to/folder", str(folder)), ROOT).stdout
    assert (DIST_DIR / "gradescope" / "d_grpo.zip").is_file()
    assert "total             16.00/16" in out[lines[1]]
    assert "total              0.00/16" in out[lines[2]] and "not implemented yet" in out[lines[2]]
    csv = (folder / "_grades" / "grades.csv").read_text()
    assert "solutions" in csv and "student_template" in csv
    assert "16" in out[lines[3]] or "summary" in out[lines[3]].lower()


def test_student_setup_and_local_grading_run_as_written(tmp_path):
    with zipfile.ZipFile(built("d_grpo")[0]) as zf:
        zf.extractall(tmp_path)
    handout = tmp_path / "d_grpo"
    lines = [l.replace("<id>", "d_grpo") for l in _bash_block("For students")]
    setup, grade = lines[0], lines[-1]
    assert setup.startswith("python3 -m venv .venv") and "grade d_grpo ." in grade
    _sh(setup, handout)
    out = _sh(grade, handout).stdout
    assert "total" in out and "not implemented yet" in out
    assert "the other checks are graded on Gradescope" in out
    # The first hour goes on in the student's own venv: the notebook with the stubs stops
    # cleanly at the first function to write; with working code every check shows its pass
    # and the figures are written; the local grade gives the public points.
    run_nb = ("RLCAP_QUICK=1 .venv/bin/jupyter nbconvert --to notebook --execute d_grpo.ipynb "
              "--output executed.ipynb")
    stubbed = subprocess.run(["bash", "-c", run_nb], cwd=handout, capture_output=True, text=True,
                             timeout=600)
    assert stubbed.returncode != 0 and "NotImplementedError" in stubbed.stderr, \
        stubbed.stderr[-2000:]
    shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", handout / "grpo.py")
    _sh(run_nb, handout)
    executed = (handout / "executed.ipynb").read_text()
    for q in ("q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"):
        assert f"{q} results: All test cases passed!" in executed
    assert (handout / "figures" / "success_vs_k.png").is_file()
    assert "total" in _sh(grade, handout).stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")
def test_an_ordinary_user_grades_an_unzipped_handout():
    """The handout belongs to an ordinary user (not root): the local grade runs
    as that user, with the sandbox's unprivileged fallback."""
    import tempfile
    home = Path(tempfile.mkdtemp(prefix="rlcap-student-"))   # pytest's tmp_path is root's only
    try:
        _grade_as_nobody(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _grade_as_nobody(home: Path) -> None:
    with zipfile.ZipFile(built("d_grpo")[0]) as zf:
        zf.extractall(home)
    handout = home / "d_grpo"
    shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", handout / "grpo.py")
    os.chmod(home, 0o755)
    subprocess.run(["chown", "-R", "nobody:nogroup", str(handout)], check=True)
    # the user's own Python with numpy: the world-readable worker venv stands in for theirs
    from autograder.harness.sandbox import build_worker_venv
    python = str(build_worker_venv())
    proc = subprocess.run(["runuser", "-u", "nobody", "--", "env", f"HOME={handout}",
                           python, "-m", "autograder", "grade", "d_grpo", ".",
                           "--questions", "q1_centred,q2_standardised,q3_leave_one_out"],
                          cwd=handout, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "total              5.00/5" in proc.stdout, proc.stdout[-2000:]
