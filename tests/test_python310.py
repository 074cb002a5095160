"""Gradescope's base image runs Python 3.10 and students run 3.10 - 3.14: every
Python file of both zips must use only what Python 3.10 has (vermin reads the
code; the suite itself runs on a newer Python)."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.grading import config
from conftest import built

VERMIN = Path(sys.executable).with_name("vermin")


@pytest.mark.parametrize("assignment", config.available())
@pytest.mark.parametrize("which", ["student", "gradescope"])
def test_every_python_file_of_the_zip_runs_on_python_3_10(assignment, which, tmp_path):
    zip_path = built(assignment)[0 if which == "student" else 1]
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp_path)
    files = sorted(str(p) for p in tmp_path.rglob("*.py"))
    assert files
    proc = subprocess.run([str(VERMIN), "--target=3.10-", "--violations", "--no-tips",
                           "--eval-annotations", "--no-parse-comments", *files],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_the_check_fails_on_code_that_needs_python_3_11(tmp_path):
    """The check itself can fail: a module needing 3.11 is refused."""
    (tmp_path / "new.py").write_text("import tomllib\n")
    proc = subprocess.run([str(VERMIN), "--target=3.10-", "--violations", "--no-tips",
                           str(tmp_path / "new.py")], capture_output=True, text=True)
    assert proc.returncode != 0 and "3.11" in proc.stdout
