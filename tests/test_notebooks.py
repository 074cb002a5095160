"""Handout notebooks run top to bottom in a real Jupyter kernel (quick mode),
from the unzipped student handout, with the reference module in place."""
from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from autograder.grade import grade
from conftest import ROOT


def _unzip_handout(student_zip: Path, dest: Path, assignment: str) -> Path:
    with zipfile.ZipFile(student_zip) as zf:
        zf.extractall(dest)
    return dest / assignment


def _run(nb_path: Path, timeout: int = 300) -> nbformat.NotebookNode:
    nb = nbformat.read(nb_path, as_version=4)
    os.environ["RLCAP_QUICK"] = "1"
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(nb_path.parent)}})
    client.execute()
    return nb


def test_d_notebook_runs_with_reference_and_export_grades_the_same(built_dist, tmp_path):
    student_zip, _ = built_dist["d_grpo"]
    handout = _unzip_handout(student_zip, tmp_path, "d_grpo")
    shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", handout / "grpo.py")
    nb = _run(handout / "d_grpo.ipynb")
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []))
    assert "K =  1: success of a sampled response 0.062" in text
    exported = [p for p in handout.glob("*.zip")]
    assert len(exported) == 1, "grader.export did not write one zip"
    q = ["q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"]
    from_zip = grade("d_grpo", exported[0], questions=q, echo=False)
    loose = grade("d_grpo", handout, questions=q, echo=False)
    assert from_zip.score == loose.score == sum(x.max_score for x in loose.questions)


def test_d_notebook_with_stubs_stops_at_not_implemented(built_dist, tmp_path):
    student_zip, _ = built_dist["d_grpo"]
    handout = _unzip_handout(student_zip, tmp_path, "d_grpo")
    with pytest.raises(CellExecutionError) as err:
        _run(handout / "d_grpo.ipynb")
    assert "NotImplementedError" in str(err.value) or "not implemented yet" in str(err.value)
