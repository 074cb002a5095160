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


def _outputs(cell) -> str:
    """Everything a code cell shows, as text."""
    out = []
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            out.append(o.get("text", ""))
        elif o.get("output_type") == "error":
            out.append(f"{o.get('ename')}: {o.get('evalue')}")
        else:
            out.append(o.get("data", {}).get("text/plain", ""))
    return "\n".join(out)


def _reaches_the_end(nb: nbformat.NotebookNode, assignment: str, handout: Path) -> dict:
    """Run All reached every cell (``_run`` without allow_errors raised on none), every
    check cell and the export cell ran, and no cell shows a traceback or numpy's warnings
    in red; returns {the experiment's name: what its cell printed}."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "a cell did not run"
    for c in code:
        text = _outputs(c)
        assert ("Traceback" not in text and "Error at line" not in text) or "grader.check" in c.source, \
            f"a traceback in an experiment cell:\n{c.source[:200]}\n{text[:2000]}"
        assert not any(o.get("name") == "stderr" and "Warning" in o.get("text", "")
                       for o in c.get("outputs", [])), f"warnings in red:\n{text[:1000]}"
    checks = [c for c in code if re.search(r'grader\.check\("(\w+)"\)', c.source)
              and "QUICK" not in c.source]
    assert checks and all(" results:" in _outputs(c) for c in checks), "a check did not show"
    assert (handout / f"{assignment}_submission.zip").is_file(), "the export cell did not run"
    return {m.group(1): _outputs(c) for c in code
            for m in [re.search(r'experiment\("\w+", "([^"]+)"', c.source)] if m}


@pytest.mark.parametrize("assignment", [n[0] for n in NOTEBOOKS])
def test_stub_notebook_runs_to_the_end(assignment, tmp_path):
    """A student who runs every cell of the untouched handout (Run All) reaches every
    check and the export cell: an experiment cell that meets a function not written yet
    says which and what to do, with no traceback; the cells after it say they are
    skipped."""
    handout = _unzip_handout(assignment, tmp_path)
    nb = _run(handout / f"{assignment}.ipynb")
    said = _reaches_the_end(nb, assignment, handout)
    stopped = [text for text in said.values() if "is not implemented yet" in text]
    assert stopped, said
    assert all("Write it, then run this cell again" in text for text in stopped)


# A common slip per notebook (the issue's): a wrong piece that makes an experiment fail (D's
# ddof=1 gives NaN at K = 1, C's diagnostic breaks on the logs' (U, S, A) arrays) or turn to
# NaN (A's and B's variance with its sign slipped: the square root of a negative number).
# (file, [(old, new)], the experiment whose cell must give the diagnosis, words of it)
SLIPS = {
    "d_grpo": ("grpo.py", [("(r.std(axis=-1, keepdims=True) + STD_EPS)",
                            "(r.std(axis=-1, ddof=1, keepdims=True) + STD_EPS)")],
               "the K-sweep", "matches the std with ddof=1"),
    "a_ppo": ("ppo.py", [("    return (adv - adv.mean()) / (adv.std() + ADV_EPS)",
                          "    return (adv - adv.mean()) / (np.sqrt(adv.mean() ** 2 - (adv ** 2).mean())"
                          " + ADV_EPS)"),
                         ("advantages = _normalised(advantages)",
                          "advantages = normalise_advantages(advantages)")],
              "the training cell", "FAIL normalise_advantages()"),
    "b_ablations": ("ablations.py", [("batch_mean, batch_var = obs.mean(axis=0), obs.var(axis=0)",
                                      "batch_mean, batch_var = obs.mean(axis=0), "
                                      "obs.mean(axis=0) ** 2 - (obs ** 2).mean(axis=0)")],
                    "the smoke test", "FAIL update_obs_stats()"),
    "c_diagnose": ("diagnose.py", [("    return np.take_along_axis(logp, np.asarray(actions, "
                                    "dtype=np.int64)[..., None],\n                              "
                                    "axis=-1)[..., 0]",
                                    "    return logp[np.arange(len(actions)), actions]")],
                   "the figure", "FAIL approx_kl()"),
}


@pytest.mark.parametrize("assignment", list(SLIPS))
def test_notebook_with_a_wrong_piece_runs_to_the_end(assignment, tmp_path):
    """Run All with a common slip in the reference reaches every check and the export
    cell; the experiment that meets the slip prints the public check's diagnosis word for
    word and what to fix, with no traceback."""
    handout = _unzip_handout(assignment, tmp_path)
    for src in config.load(assignment).sources(ROOT / "solutions"):
        shutil.copy(src, handout / src.name)
    file, edits, where, words = SLIPS[assignment]
    text = (handout / file).read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (handout / file).write_text(text)
    nb = _run(handout / f"{assignment}.ipynb")
    said = _reaches_the_end(nb, assignment, handout)
    assert words in said[where] and "grader.check(" in said[where], said[where][:2000]
    assert "Fix " in said[where] and "then run this cell again" in said[where]
    check = next(_outputs(c) for c in nb.cells if c.cell_type == "code" and words in _outputs(c)
                 and "results:" in _outputs(c))       # the check cell says the same words
    line = next(l for l in said[where].splitlines() if words in l).strip()
    assert line in " ".join(check.split()) or line in check
