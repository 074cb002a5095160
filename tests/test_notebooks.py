"""Handout notebooks run top to bottom in a real Jupyter kernel (quick mode),
from the unzipped student handout, with the reference module in place."""
from __future__ import annotations

import os
import re
from datetime import datetime
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from autograder.grading import config
from autograder.grading.grade import grade
from conftest import ROOT, built

# (assignment, a line the notebook prints with the reference, questions graded quickly)
NOTEBOOKS = [
    ("d_grpo", "K =  1: success of a sampled response 0.062",
     ["q1_centred", "q2_standardised", "q3_leave_one_out", "q5_ratio_clip"]),
    ("a_ppo", "median return over 20 sampled-action episodes",
     ["q1_distribution", "q2_gae", "q4_clipped_gradient", "q5_losses"]),
    ("b_ablations", "saved 18 rows to ablation_results.json",
     ["q1_obs_normalisation", "q2_shared_gradients", "q6_why"]),
    ("exercises", "centred weight, K = 1: success 0.062, max |theta - theta_ref| = 0",
     ["ex1_token_scores", "ex1_response_score", "ex3_prediction", "ex4_tilted", "ex4_threshold"]),
    ("c_diagnose", "agent A: 'saturated_policy' because early_entropy = ",
     ["q1_entropy", "q4_replay"]),
]

pytestmark = pytest.mark.slow     # notebooks, gradings and training runs: minutes

FIGURES = {"d_grpo": ["success_vs_k"], "a_ppo": ["learning_curves", "ppo_diagnostics"],
           "exercises": ["beta_crossing"], "c_diagnose": ["diagnostics"],
           "b_ablations": ["ablations", "ablation_curves"]}      # figures/<name>.png and .json, per notebook


def _unzip_handout(assignment: str, dest: Path) -> Path:
    with zipfile.ZipFile(built(assignment)[0]) as zf:
        zf.extractall(dest)
    return dest / assignment


def _run(nb_path: Path, timeout: int = 300, allow_errors: bool = False) -> nbformat.NotebookNode:
    nb = nbformat.read(nb_path, as_version=4)
    os.environ["RLCAP_QUICK"] = "1"
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                            resources={"metadata": {"path": str(nb_path.parent)}})
    client.execute()
    return nb


@pytest.mark.parametrize("assignment,printed,questions", NOTEBOOKS, ids=[n[0] for n in NOTEBOOKS])
def test_notebook_runs_with_reference_and_export_grades_the_same(assignment, printed, questions,
                                                                 tmp_path):
    handout = _unzip_handout(assignment, tmp_path)
    for src in config.load(assignment).sources(ROOT / "solutions"):
        shutil.copy(src, handout / src.name)
    nb = _run(handout / f"{assignment}.ipynb")
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []))
    assert printed in text
    assert "Test case failed" not in text
    for cell in nb.cells:        # every check that ran shows otter's verdict, and it is a pass
        m = re.search(r'grader\.check\("(\w+)"\)', cell.source)
        if cell.cell_type != "code" or not m or "QUICK" in cell.source:   # skipped when quick
            continue
        shown = [o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])]
        assert f"{m.group(1)} results: All test cases passed!" in shown, \
            f"grader.check({m.group(1)!r}) did not pass: {shown[-1:] or cell.get('outputs')}"
    for name in FIGURES[assignment]:
        for ext in (".png", ".json"):
            assert (handout / "figures" / f"{name}{ext}").is_file(), f"no figures/{name}{ext}"
    slow = {q.name for q in config.load(assignment).questions if q.budget_cpu_s >= 20}
    for cell in nb.cells:
        m = re.search(r'grader\.check\("(\w+)"\)', cell.source)
        if cell.cell_type == "code" and m and m.group(1) not in slow and "if not QUICK" not in cell.source:
            t = cell.metadata["execution"]
            seconds = (datetime.fromisoformat(t["shell.execute_reply"].replace("Z", "+00:00"))
                       - datetime.fromisoformat(t["iopub.execute_input"].replace("Z", "+00:00")))
            assert seconds.total_seconds() < 2.0, f"grader.check({m.group(1)!r}) took {seconds}"
    exported = list(handout.glob("*.zip"))
    assert len(exported) == 1, "grader.export did not write one zip"
    from_zip = grade(assignment, exported[0], questions=questions, echo=False)
    loose = grade(assignment, handout, questions=questions, echo=False)
    assert from_zip.score == loose.score == sum(x.max_score for x in loose.questions)


@pytest.mark.parametrize("assignment", [n[0] for n in NOTEBOOKS])
def test_notebook_with_stubs_stops_at_not_implemented(assignment, tmp_path):
    handout = _unzip_handout(assignment, tmp_path)
    with pytest.raises(CellExecutionError) as err:
        _run(handout / f"{assignment}.ipynb")
    assert "NotImplementedError" in str(err.value) or "not implemented yet" in str(err.value)


@pytest.mark.parametrize("assignment", [n[0] for n in NOTEBOOKS])
def test_stub_notebook_run_past_errors_shows_no_cascade(assignment, tmp_path):
    """A student who runs every cell of the untouched handout (Run All with
    errors allowed, or cell by cell) sees NotImplementedError where code is
    missing (and the notebook's own AssertionError where a choice is not made
    yet), and no KeyError or NameError in the cells after it: those say they
    are skipped until the cell above finishes."""
    handout = _unzip_handout(assignment, tmp_path)
    nb = _run(handout / f"{assignment}.ipynb", allow_errors=True)
    errors = [(o.get("ename"), o.get("evalue", "")[:200]) for c in nb.cells
              if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors, "the stubs raised nothing"
    assert all(name in ("NotImplementedError", "AssertionError") for name, _ in errors), errors
