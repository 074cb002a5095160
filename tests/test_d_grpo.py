"""Capstone D through the real harness: reference, template, catalogue, zips."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from autograder.grading import config
from autograder.grading.grade import grade
from autograder.commands.demo import run_gradescope_zip
from conftest import ROOT, built, graded

A = config.load("d_grpo")


@pytest.mark.slow
def test_reference_gets_full_marks():
    report = graded("d_grpo", "solutions")
    assert [q.score for q in report.questions] == [q.points for q in A.questions], report.table()


def test_blank_template_gets_zero_and_says_why():
    report = graded("d_grpo", "student_template")
    assert report.score == 0, report.table()
    assert "not implemented yet" in report.questions[0].output


@pytest.mark.slow
def test_gradescope_zip_grades_reference_without_solutions():
    """run_autograder end to end in a temp AUTOGRADER_ROOT; same score as the direct run."""
    _, gs_zip = built("d_grpo")
    res = run_gradescope_zip(gs_zip, [ROOT / "solutions" / "d_grpo" / "grpo.py"])
    assert res["extra_data"]["expected_source"] == "stored"
    assert res["score"] == A.total_points
    direct = graded("d_grpo", "solutions")
    assert [t["score"] for t in res["tests"]] == [q.score for q in direct.questions]
    assert {t["visibility"] for t in res["tests"]} <= {"visible", "after_published"}
    hidden = [t for t in res["tests"] if not A.question(t["name"].split(":")[0]).public]
    assert hidden and all(t["visibility"] == "after_published" for t in hidden)


def test_gradescope_zip_layout():
    _, gs_zip = built("d_grpo")
    names = zipfile.ZipFile(gs_zip).namelist()
    assert "setup.sh" in names and "run_autograder" in names
    assert not any(n.startswith("solutions/") for n in names)
    reference = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()
    for n in names:
        if n.endswith(".py"):
            assert reference not in zipfile.ZipFile(gs_zip).read(n).decode()


def _canaries() -> list[str]:
    """Lines of the reference found neither in the stub nor in the shipped
    runtime and grader code: if one is in the handout, the solution leaked."""
    shipped = "\n".join(p.read_text() for d in ("rlkit", "autograder")
                        for p in (ROOT / d).rglob("*.py"))
    shipped += (ROOT / "student_template" / "d_grpo" / "grpo.py").read_text()
    ref = (ROOT / "solutions" / "d_grpo" / "grpo.py").read_text()
    return [l.strip() for l in ref.splitlines()
            if len(l.strip()) > 20 and l.strip() not in shipped and not l.strip().startswith("#")]


def test_student_zip_has_no_solution_and_no_hidden_value():
    student_zip, _ = built("d_grpo")
    zf = zipfile.ZipFile(student_zip)
    names = zf.namelist()
    assert "d_grpo/grpo.py" in names and "d_grpo/d_grpo.ipynb" in names
    assert not any("solutions" in n or n.endswith("d_grpo.npz") or "reproduce" in n
                   for n in names), names
    canaries = _canaries()
    assert len(canaries) >= 5
    blob = b"".join(zf.read(n) for n in names).decode("utf-8", "replace")
    leaked = [c for c in canaries if c in blob]
    assert not leaked, leaked
    # Hidden expected values: no hidden case's number appears in the public file.
    from autograder.grading import expected
    full, _, public_keys = expected.load(A)
    hidden_keys = [k for k in full if k.partition("#")[0] not in public_keys]
    assert hidden_keys
    with zf.open("d_grpo/autograder/expected/d_grpo.public.npz") as f:
        public = np.load(f, allow_pickle=False)
        stored = set(public.files) - {expected.PUBLIC_KEYS}
        assert stored.isdisjoint(hidden_keys)
        assert stored < set(full)
    for k in hidden_keys:
        for v in full[k].ravel()[:8]:
            text = repr(float(v))
            if len(text) >= 10:                   # a specific number, not 1.0 or 0.5
                assert text not in blob, (k, text)


def test_grade_cli_writes_results_and_exits_zero(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "grpo.py").write_text((ROOT / "student_template" / "d_grpo" / "grpo.py").read_text())
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "d_grpo", str(sub),
                           "--results", str(out), "--questions", "q1_centred,q2_standardised"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["score"] == 0 and len(res["tests"]) == 2
    assert res["extra_data"]["autograder_version"]
    assert "q1_centred" in proc.stdout and "total" in proc.stdout


@pytest.mark.slow
def test_a_ddof1_std_loses_q2_and_the_k1_parts_only_with_the_cause_named(tmp_path):
    """The sample std (ddof=1) is NaN at K = 1: q2 loses its points, the
    sweeps' K = 1 parts lose theirs (charged again on purpose: K = 1 must stay
    put), every other K is graded on its own and learns, and each failure
    in the sweeps names q2 first."""
    from autograder.catalogue.d_grpo import WRONG
    entry = next(w for w in WRONG if w.name == "sample_std")
    sub = entry.write("d_grpo", tmp_path / "sub", ("grpo.py",))
    report = grade("d_grpo", sub, echo=False, in_process=True)
    lost = {q.name: q.max_score - q.score for q in report.questions}
    assert lost == {"q1_centred": 0, "q2_standardised": 2.0, "q3_leave_one_out": 0,
                    "q4_enumeration": 0, "q5_ratio_clip": 0, "q6_k_sweep": 1.0,
                    "q7_clipped_sweep": 0.5}, lost
    for name in ("q6_k_sweep", "q7_clipped_sweep"):
        q = next(q for q in report.questions if q.name == name)
        parts = {p["id"]: p for p in q.parts}
        assert parts["learns"]["passed"] and not parts["k1"]["passed"]
        assert "fails in q2_standardised" in parts["k1"]["cause"]
        assert parts["k1"]["fn"] == "group_standardised_weight"
    q2 = next(q for q in report.questions if q.name == "q2_standardised")
    assert "ddof=1" in q2.output
