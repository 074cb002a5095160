"""Gradescope round trip with the zip's own setup.sh: build the grading venv
from the system python3 (as on Gradescope's image), then run_autograder with
that venv on the reference and on the blank template."""
from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from autograder.grading import config
from autograder.commands.demo import run_gradescope_zip
from conftest import ROOT, built

pytestmark = pytest.mark.slow     # notebooks, gradings and training runs: minutes


@pytest.fixture(scope="module")
def gradescope_venv(tmp_path_factory) -> Path:
    """setup.sh run for real into a private venv location."""
    src = tmp_path_factory.mktemp("gs-setup")
    with zipfile.ZipFile(built("d_grpo")[1]) as zf:
        zf.extractall(src)
    venv = tmp_path_factory.mktemp("venv") / "rlcap-venv"
    proc = subprocess.run(["bash", str(src / "setup.sh")], env=dict(os.environ, RLCAP_VENV=str(venv)),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "grading venv ready: numpy 2.2.6" in proc.stdout
    return venv


def _run(venv: Path, which: str) -> dict:
    files = [ROOT / which / "d_grpo" / f for f in config.load("d_grpo").submission_files]
    return run_gradescope_zip(built("d_grpo")[1], files, python=str(venv / "bin" / "python"),
                              metadata={"users": [{"email": "ada@example.edu", "name": "Ada",
                                                   "sid": "12345"}]})


def test_setup_sh_venv_grades_reference_and_template(gradescope_venv):
    a = config.load("d_grpo")
    ref = _run(gradescope_venv, "solutions")
    assert ref["score"] == a.total_points, ref["output"]
    assert ref["extra_data"]["expected_source"] == "stored"
    blank = _run(gradescope_venv, "student_template")
    assert blank["score"] == 0 and len(blank["tests"]) == len(a.questions)
