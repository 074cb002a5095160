"""What a student or an instructor meets on the first day, from the command
line: uploads as browsers name them, a file where a folder was expected, a
class folder that is one submission, questions not graded here, an id to act
on, a typo in an id, and nothing long that is silent."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import zipfile

import pytest

from conftest import ROOT, built

REFERENCE = ROOT / "solutions" / "d_grpo" / "grpo.py"


def _cli(*args: str, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("name", ["grpo (1).py", "grpo-1.py", "grpo(2).py"])
def test_a_browser_renamed_upload_is_graded_and_named(name, tmp_path):
    shutil.copy(REFERENCE, tmp_path / name)
    proc = _cli("grade", "d_grpo", str(tmp_path), "--questions", "q1_centred",
                "--results", str(tmp_path / "r.json"))
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["score"] == 1, proc.stdout
    assert f"graded '{name}' as grpo.py" in data["output"]      # top-level, always visible
    assert f"graded '{name}' as grpo.py" in proc.stdout


def test_two_renamed_copies_are_not_guessed(tmp_path):
    for name in ("grpo (1).py", "grpo (2).py"):
        shutil.copy(REFERENCE, tmp_path / name)
    proc = _cli("grade", "d_grpo", str(tmp_path), "--questions", "q1_centred")
    assert "grpo.py was not found" in proc.stdout and "0.00/1" in proc.stdout


def test_a_file_where_a_folder_is_expected(tmp_path):
    proc = _cli("grade", "d_grpo", str(REFERENCE), "--questions", "q1_centred")
    assert proc.returncode == 0 and "1.00/1" in proc.stdout, proc.stdout
    assert "was not found" not in proc.stdout
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    proc = _cli("grade", "d_grpo", str(other), "--questions", "q1_centred")
    notes = [l for l in proc.stdout.splitlines() if l.startswith("note:")]
    assert any("notes.txt is not a file of this submission" in n for n in notes), proc.stdout
    assert not any("not a folder of folders" in n for n in notes), notes   # no contradiction


def test_the_notebooks_zip_kept_as_one_file_is_graded_from_inside(tmp_path):
    """A platform that stores an uploaded zip as a file (PrairieLearn's file upload) hands
    the grader a folder holding only the notebook's export: graded from inside it, saying so."""
    with zipfile.ZipFile(tmp_path / "d_grpo_submission.zip", "w") as zf:
        zf.write(REFERENCE, "grpo.py")
        zf.writestr("d_grpo.ipynb", "{}")
        zf.writestr("__zip_filename__", "d_grpo_submission.zip")
    upload = tmp_path / "upload"
    upload.mkdir()
    shutil.move(tmp_path / "d_grpo_submission.zip", upload / "d_grpo_submission.zip")
    proc = _cli("grade", "d_grpo", str(upload), "--questions", "q1_centred")
    assert "1.00/1" in proc.stdout and "not a folder of folders" not in proc.stdout, proc.stdout
    assert "graded grpo.py from inside d_grpo_submission.zip" in proc.stdout


def test_grade_all_on_one_submission_refuses_and_writes_nothing(tmp_path):
    shutil.copy(REFERENCE, tmp_path / "grpo.py")
    proc = _cli("grade-all", "d_grpo", str(tmp_path))
    assert proc.returncode == 2
    assert "it is one submission" in proc.stderr and "autograder grade d_grpo" in proc.stderr
    assert not (tmp_path / "_grades").exists()


def test_questions_not_graded_here_show_no_zero(tmp_path):
    """A handout grades the public questions: the others show "-/N", never 0.00/N."""
    with zipfile.ZipFile(built("d_grpo")[0]) as zf:
        zf.extractall(tmp_path / "h")
    handout = tmp_path / "h" / "d_grpo"
    shutil.copy(REFERENCE, handout / "grpo.py")
    proc = _cli("grade", "d_grpo", ".", "-v", "--questions", "q1_centred,q4_enumeration",
                cwd=handout)
    assert "q4_enumeration: -/2 not graded here" in proc.stderr, proc.stderr
    assert "== q4_enumeration (-/2 not graded here)" in proc.stdout
    assert "q4_enumeration: 0.00/2" not in proc.stderr


def test_a_long_question_is_not_silent():
    """D's K-sweep (several seconds): per-case progress lines on stderr."""
    proc = _cli("grade", "d_grpo", str(REFERENCE.parent), "--questions", "q6_k_sweep")
    lines = [l for l in proc.stderr.splitlines() if l.strip().startswith("q6_k_sweep")]
    assert lines[0].strip() == "q6_k_sweep ..."
    assert any("hidden phase" in l for l in lines), proc.stderr
    assert lines[-1].strip().startswith("q6_k_sweep: 4.00/4 (")


def test_c_id_warning_is_in_the_top_level_output(tmp_path):
    """A student whose STUDENT_ID is empty is graded on Gradescope's id: the
    always-visible top-level output says so (q5 and q6 are after_published)."""
    sub = tmp_path / "sub"
    sub.mkdir()
    for f in ("diagnose.py",):
        shutil.copy(ROOT / "solutions" / "c_diagnose" / f, sub / f)
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"users": [{"sid": "A0012345", "email": "a@example.edu"}]}))
    text = (sub / "diagnose.py").read_text()
    (sub / "diagnose.py").write_text(re.sub(r'^STUDENT_ID = .*$', 'STUDENT_ID = ""', text,
                                            flags=re.M))
    _cli("grade", "c_diagnose", str(sub), "--questions", "q5_faults",
         "--metadata", str(meta), "--results", str(tmp_path / "r.json"))
    data = json.loads((tmp_path / "r.json").read_text())
    assert "STUDENT_ID in diagnose.py is empty" in data["output"], data["output"]


def test_a_mistyped_assignment_id_says_only_that():
    proc = _cli("validate", "d_grp", "--quick")
    assert proc.returncode == 1
    assert "validated nothing" not in proc.stdout
    assert "no assignment 'd_grp'" in proc.stdout and "d_grpo" in proc.stdout


def test_grade_all_says_what_each_running_job_is_doing(tmp_path, capsys):
    """grade-all's second line (a log line every LOG_EVERY_S without a
    terminal): each running job's question, phase and case from its grade.log."""
    from autograder.commands import batch
    from autograder.commands.runner import Job
    log = tmp_path / "grade.log"
    log.write_text("x" * 10_000 + "\n  q6_k_sweep ...\n"
                   "  q6_k_sweep: hidden phase, hidden case 2 (2 of 4 of its group; 9 s so far)\n")
    status = batch._StatusLine()
    status.bar, status.LOG_EVERY_S = None, 0.0
    status([(Job("ada", "d_grpo", tmp_path, tmp_path / "r.json", log, 60.0), 12.3)])
    line = capsys.readouterr().err
    assert line.startswith("running: ada: q6_k_sweep: hidden phase, hidden case 2 (2 of 4"), line
    assert "[12 s]" in line


def test_summary_counts_question_time_outs():
    """summary.txt: each status that ended a question has a column of its own
    (one word, one meaning): a question that timed out is counted as such,
    apart from raises and crashes, per question and in the total row (one
    count per submission); whole submissions (nothing implemented) are in no
    column but the line below."""
    from autograder.commands.export import Submission
    from autograder.commands.tables import GRADED, Row, question_time_outs, summary_table
    from autograder.grading import config
    from autograder.grading.status import Status
    qs = config.load("d_grpo").questions[:2]
    TIMED_OUT = str(Status.TIMED_OUT)

    def row(statuses, whole=""):
        tests = [{"name": q.name, "score": 0.0, "max_score": q.points,
                  "extra_data": {"question": q.name, "status": st}}
                 for q, st in zip(qs, statuses)]
        data = {"score": 0.0, "tests": tests, "extra_data": {"status": whole or "graded"}}
        return Row(Submission("s", ROOT), data, GRADED)

    rows = [row([TIMED_OUT, TIMED_OUT]), row(["raised", TIMED_OUT]), row(["passed", "passed"]),
            row(["not_implemented", "not_implemented"], "nothing_implemented")]
    lines = summary_table(rows, qs).splitlines()
    head = lines[0].replace("timed out", "timed_out").split()
    assert head[-5:] == ["raised", "crashed", "timed_out", "deadline", "faults"]
    cells = [dict(zip(head, line.rsplit(None, 10)[-11:])) for line in lines[1:4]]
    assert (cells[0]["timed_out"], cells[0]["raised"]) == ("1", "1")
    assert (cells[1]["timed_out"], cells[1]["raised"]) == ("2", "0")
    assert (cells[2]["timed_out"], cells[2]["raised"]) == ("2", "1")      # the total row
    assert lines[-1] == "graded as a whole (in no column above): 1 nothing implemented"
    assert question_time_outs(rows) == 3


def test_the_worker_venv_is_named_by_the_python_it_is_built_from():
    """A student's venv on another CPython gets a worker venv built from the
    system python3: its name gives the system's version, not the student's."""
    from autograder.harness import interpreter, sandbox
    base = interpreter._base_python()
    tag = subprocess.run([base, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert sandbox.worker_venv_path().name.startswith(f"venv-{tag}")


def test_progress_is_one_line_per_step_in_order(capsys):
    """A long question's progress: a line as each case starts, in the order
    they run (hidden case 1 before 2, however quick); a group of more than ten
    cases: one line per 10 % of it; a quick question: none."""
    from types import SimpleNamespace as NS

    from autograder.grading.grade import _Progress
    long_q, quick_q = NS(name="q_long", budget_cpu_s=90.0), NS(name="q_quick", budget_cpu_s=5.0)
    progress = _Progress(echo=True)
    progress.start(long_q)
    public = NS(hidden=False, name="seed 1", group="", label="seed 1")
    progress(long_q, "public", public, 1, 1)
    for _ in range(3):                   # a judge may go through its cases several times
        for i in (1, 2):
            progress(long_q, "hidden", NS(hidden=True, name=f"h{i}", group="",
                                          label=f"hidden case {i} of 2"), i, 2)
    for i in range(1, 28):
        progress(long_q, "hidden", NS(hidden=True, name=f"p{i}", group="pool",
                                      label=f"hidden case {i + 2} of 29"), i, 27)
    progress.start(quick_q)
    progress(quick_q, "public", public, 1, 1)
    lines = [l.strip() for l in capsys.readouterr().err.splitlines()]
    assert lines[0] == "q_long ..." and lines[-1] == "q_quick ..."
    assert lines[1].startswith("q_long: public phase, case 'seed 1' (1 of 1)")
    assert lines[2].startswith("q_long: hidden phase, hidden case 1 of 2 (")
    assert lines[3].startswith("q_long: hidden phase, hidden case 2 of 2 (")
    assert not any("hidden case 1 of 2" in l for l in lines[4:])    # once each
    pool = [int(l.split("hidden case ")[1].split()[0]) for l in lines[4:-1]]
    assert len(pool) == 10 and pool == sorted(pool) and pool[0] == 3


def test_demo_ends_with_what_it_built_where():
    """`make demo`'s last lines: every handout, Gradescope zip and PrairieLearn
    folder, the figures and the class reports, each where it is, and the time."""
    from autograder.commands.demo import built_summary
    from autograder.paths import DIST_DIR
    ids = config_ids()
    built = [(a, DIST_DIR / "student" / f"{a}.zip", DIST_DIR / "gradescope" / f"{a}.zip",
              DIST_DIR / "prairielearn" / a) for a in ids]
    reports = {"a_ppo": DIST_DIR / "demo" / "a_ppo" / "_grades" / "report.html"}
    text = built_summary(built, [DIST_DIR / "figures" / "success_vs_k.png"], reports, 421.0)
    assert "built and checked in 7.0 min" in text
    dist = DIST_DIR.relative_to(ROOT).as_posix()      # dist/, or a test worker's own
    for a in ids:
        for where in (f"{dist}/student/{a}.zip", f"{dist}/gradescope/{a}.zip",
                      f"{dist}/prairielearn/{a}/"):
            assert f"\n    {where}\n" in text + "\n", where
    assert f"{dist}/figures/" in text
    assert f"a_ppo: {dist}/demo/a_ppo/_grades/report.html" in text


def config_ids() -> list[str]:
    from autograder.grading import config
    return config.available()


def test_a_blank_submissions_reason_is_one_short_fact():
    """grades.csv's reason for the untouched stubs says what the class report says,
    "nothing implemented", not every stub's NotImplementedError message."""
    from autograder.commands.tables import reason
    from conftest import graded
    data = graded("d_grpo", "student_template", ("q1_centred", "q2_standardised",
                                                 "q3_leave_one_out")).to_gradescope()
    assert data["extra_data"]["status"] == "nothing_implemented"
    assert reason(data) == "nothing implemented (every question: not implemented yet)"


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="the sandbox's footprint is root's")
def test_no_sandbox_as_root_leaves_nothing_outside_a_temporary_folder(tmp_path):
    """grade --no-sandbox (the handout README's line for a hosted runtime or a root
    kernel): graded, saying it was not sandboxed, and no state dir made."""
    import os
    state = tmp_path / "state"                      # would hold sandboxes/, locks/, venv-*
    shutil.copy(REFERENCE, tmp_path / "grpo.py")
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "d_grpo", str(tmp_path),
                           "--questions", "q1_centred", "--no-sandbox"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, RLCAP_STATE_DIR=str(state)))
    assert "1.00/1" in proc.stdout and "not sandboxed (asked for)" in proc.stdout, proc.stdout
    assert not state.exists()
