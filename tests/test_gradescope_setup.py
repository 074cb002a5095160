"""Gradescope round trip with the zip's own setup.sh: build the grading venv
from the system python3 (as on Gradescope's image), then run_autograder with
that venv on the reference and on the blank template."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from autograder.grading import config
from autograder.commands.demo import run_gradescope_zip
from conftest import ROOT, built

pytestmark = pytest.mark.slow     # notebooks, gradings and training runs: minutes


def _readme_outside_gradescope() -> tuple[str, str]:
    """The two commands of docs/gradescope.md's "Try the autograder outside Gradescope"."""
    import doc_pages
    setup, run = doc_pages.bash("docs/gradescope.md", "Try the autograder outside Gradescope")
    assert setup.startswith("RLCAP_VENV=/tmp/rlcap-venv bash setup.sh")
    assert run.startswith("AUTOGRADER_PYTHON=/tmp/rlcap-venv/bin/python AUTOGRADER_ROOT=/tmp/ag")
    return setup, run


@pytest.fixture(scope="module")
def gradescope_venv(tmp_path_factory) -> Path:
    """setup.sh run for real into a private venv location, as the README says."""
    src = tmp_path_factory.mktemp("gs-setup")
    with zipfile.ZipFile(built("d_grpo")[1]) as zf:
        zf.extractall(src)
    venv = tmp_path_factory.mktemp("venv") / "rlcap-venv"
    setup = _readme_outside_gradescope()[0].replace("/tmp/rlcap-venv", str(venv))
    proc = subprocess.run(["bash", "-c", setup], cwd=src, capture_output=True, text=True,
                          timeout=600)
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


def test_run_autograder_outside_gradescope_as_the_readme_says(gradescope_venv, tmp_path):
    """README's second command, on a folder laid out as it describes (source/ = the
    unzipped autograder, submission/, results/): the reference gets full marks."""
    ag = tmp_path / "ag"
    with zipfile.ZipFile(built("d_grpo")[1]) as zf:
        zf.extractall(ag / "source")
    (ag / "submission").mkdir()
    (ag / "results").mkdir()
    for f in config.load("d_grpo").submission_files:
        shutil.copy(ROOT / "solutions" / "d_grpo" / f, ag / "submission" / f)
    run = _readme_outside_gradescope()[1].replace("/tmp/rlcap-venv", str(gradescope_venv)) \
        .replace("/tmp/ag", str(ag))
    env = dict(os.environ, RLCAP_QUESTIONS="q1_centred,q3_leave_one_out")   # seconds, not minutes
    proc = subprocess.run(["bash", "-c", run], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((ag / "results" / "results.json").read_text())
    a = config.load("d_grpo")
    want = a.question("q1_centred").points + a.question("q3_leave_one_out").points
    assert results["score"] == want and len(results["tests"]) == 2, results.get("output")
