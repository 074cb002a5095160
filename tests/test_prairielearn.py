"""PrairieLearn: the layout ``make dist`` writes, graded the way PrairieLearn's
external grader runs it (a job folder laid out like /grade, info.json's
entrypoint, no namespaces as in its container), for every assignment.

To stay lean each job grades at most two of its question's questions, those
with a CPU budget of 10 s at most (``RLCAP_QUESTIONS``, as the Gradescope
tests do): the score is then the
fraction of those questions' points, so the reference must get 1.0 and the
blank template 0.0 on them. The full runs are ``make demo``'s (Gradescope).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from autograder.grading.status import Status

from autograder.catalogue.hostile import FILESYSTEM, HOSTILE
from autograder.catalogue.leaks import CHANNELS, Leak
from autograder.commands import dist_prairielearn as pl
from autograder.commands.demo import run_prairielearn_job
from autograder.grading import config, judging
from autograder.grading.prairielearn import read_variant_id
from autograder.grading.results import (PL_MAX_BYTES, QuestionResult, Report, pl_failed_run,
                                        pl_placeholder)
from autograder.paths import DIST_DIR
from conftest import ROOT, built

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs root (CI runs as root)")
NO_NAMESPACES = {"RLCAP_NO_NAMESPACES": "1"}       # PrairieLearn's container gives none
PART = ("id", "instance", "label", "points", "passed", "kind", "message", "diagnosis", "case",
        "hidden", "fn", "cause")


def _pl_dir(assignment: str) -> Path:
    built(assignment)                   # make dist of the assignment, once per session
    return DIST_DIR / "prairielearn" / assignment


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_schema(data: dict) -> None:
    """PrairieLearn's results.json as its docs describe it (``score`` in [0, 1];
    ``gradable``; ``format_errors``; ``tests[]`` with name, points, max_points,
    message, output), with our records in ``extra_data``, under 1 MB."""
    assert len(json.dumps(data, indent=2).encode()) < PL_MAX_BYTES
    assert isinstance(data["gradable"], bool)
    assert _number(data["score"]) and 0.0 <= data["score"] <= 1.0
    assert isinstance(data["message"], str) and isinstance(data["tests"], list)
    if not data["gradable"]:
        assert data["format_errors"] and all(isinstance(e, str) and e
                                             for e in data["format_errors"])
        assert data["score"] == 0.0
    for t in data["tests"]:
        assert isinstance(t["name"], str) and t["name"]
        assert _number(t["points"]) and _number(t["max_points"])
        assert 0 <= t["points"] <= t["max_points"]
        assert isinstance(t["message"], str) and isinstance(t["output"], str)
        # the message is the test's one-line verdict, not a line of its output again
        assert t["message"] and "\n" not in t["message"]
        assert t["message"].strip() not in [l.strip() for l in t["output"].splitlines()]
        extra = t["extra_data"]
        assert Status.of(extra["status"]) is not None and isinstance(extra["question"], str)
        assert isinstance(extra["measurements"], dict) and _number(extra["seconds"])
        for part in extra["parts"]:
            assert set(PART) <= set(part)
            assert isinstance(part["label"], str) and _number(part["points"])
            assert isinstance(part["passed"], bool) and isinstance(part["hidden"], bool)
            assert all(isinstance(part[k], str) for k in ("kind", "message", "diagnosis",
                                                          "case"))
    extra = data["extra_data"]
    for key in ("autograder_version", "assignment", "expected_source", "student_id",
                "student_id_source"):
        assert isinstance(extra[key], str)
    assert all(isinstance(n, str) for n in extra["notes"])
    maximum = sum(t["max_points"] for t in data["tests"])
    if data["gradable"] and maximum:
        assert abs(sum(t["points"] for t in data["tests"]) / maximum - data["score"]) < 1e-6


def _cheapest(questions: list[config.Question], n: int = 2, budget_s: float = 10) -> list[str]:
    """Up to ``n`` questions with points and a CPU budget of ``budget_s`` at most
    (cheapest first), else the one cheapest question with points."""
    scored = sorted((q for q in questions if q.points > 0), key=lambda q: q.budget_cpu_s)
    return [q.name for q in ([q for q in scored if q.budget_cpu_s <= budget_s][:n]
                             or scored[:1])]


JOBS = [(a, suffix) for a in config.available() for suffix in pl.parts(config.load(a))]


def test_every_assignment_has_its_layout_and_nothing_of_solutions():
    for a in config.available():
        assignment = config.load(a)
        out = _pl_dir(a)
        server = out / "serverFilesCourse" / "rlcap" / a
        assert (server / "run_prairielearn").stat().st_mode & 0o111
        assert json.loads((server / "placeholder-results.json").read_text())["gradable"] is False
        assert not [p for p in out.rglob("*") if "solutions" in p.parts]
        # the Gradescope zip's grading files, its scripts swapped for the entry point, and the
        # pinned pyseccomp, which the stock image lacks (its MIT licence beside it)
        tree = {p.relative_to(server).as_posix() for p in server.rglob("*") if p.is_file()}
        zipped = set(zipfile.ZipFile(built(a)[1]).namelist())
        vendored = {"vendor/pyseccomp.py", "vendor/pyseccomp-0.1.2.LICENSE"}
        assert tree == zipped - {"setup.sh", "run_autograder"} | {"run_prairielearn"} | vendored
        assert "pyseccomp==0.1.2;" in (server / "requirements-grader.txt").read_text()
        import pyseccomp
        assert (server / "vendor" / "pyseccomp.py").read_bytes() == \
            Path(pyseccomp.__file__).read_bytes()
        names = []
        for suffix, questions in pl.parts(assignment).items():
            qdir = out / "questions" / "rlcap" / f"{a}{suffix}"
            info = json.loads((qdir / "info.json").read_text())
            opts = info["externalGradingOptions"]
            assert info["gradingMethod"] == "External" and info["singleVariant"] is True
            assert opts["image"] == "prairielearn/grader-python" and opts["enabled"]
            assert opts["entrypoint"] == f"/grade/serverFilesCourse/rlcap/{a}/run_prairielearn"
            assert opts["serverFilesCourse"] == [f"rlcap/{a}/"]
            assert assignment.deadline_s + 70 < opts["timeout"] <= 600
            assert not opts["enableNetworking"]
            html = (qdir / "question.html").read_text()
            assert f'<pl-file-upload file-names="{", ".join(assignment.submission_files)}">' \
                in html and "<pl-external-grader-results>" in html
            settings = json.loads((qdir / "tests" / "rlcap.json").read_text())
            assert settings == {"assignment": a, "questions": [q.name for q in questions]}
            names += settings["questions"]
            assert all((q.visibility == "visible") == (suffix == "") for q in questions)
        assert sorted(names) == sorted(q.name for q in assignment.questions)


SEED = 1815                     # data.json's variant_seed in these jobs


def _files(assignment: str, which: str, tmp_path: Path) -> list[Path]:
    """The submission files of ``which`` (solutions or student_template)."""
    a = config.load(assignment)
    return a.sources(ROOT / which)


@ROOT_ONLY
@pytest.mark.parametrize("assignment,suffix", JOBS, ids=[f"{a}{s or '_visible'}" for a, s in JOBS])
def test_reference_full_marks_template_zero(assignment, suffix, tmp_path):
    a = config.load(assignment)
    questions = _cheapest(pl.parts(a)[suffix])
    for which, want in (("solutions", 1.0), ("student_template", 0.0)):
        data = run_prairielearn_job(_pl_dir(assignment), assignment + suffix,
                                    _files(assignment, which, tmp_path), questions=questions,
                                    data={"params": {}, "variant_seed": SEED}, env=NO_NAMESPACES)
        check_schema(data)
        assert data["gradable"] and data["score"] == want, (which, data["message"],
                                                            [t["message"] for t in data["tests"]])
        assert sorted(t["extra_data"]["question"] for t in data["tests"]) == sorted(questions)
        assert data["extra_data"]["expected_source"] == "stored"       # solutions/ not there
        assert "no namespaces" in " ".join(data["extra_data"]["notes"])
        assert data["extra_data"]["student_id"] == (str(SEED) if a.needs_student_id else "")


@ROOT_ONLY
def test_per_student_instance_is_the_variant_seed(tmp_path):
    """Capstone C's letters come from data.json's variant_seed (as Gradescope's
    from the sid): the reference, whose diagnose() derives each letter's fault
    from its log, gets full marks under every seed; the page shows the seed."""
    files = _files("c_diagnose", "solutions", tmp_path)
    scores = {}
    for seed in (424242, 424243):
        data = run_prairielearn_job(_pl_dir("c_diagnose"), "c_diagnose_hidden", files,
                                    data={"params": {}, "variant_seed": seed},
                                    questions=["q5_faults"], env=NO_NAMESPACES)
        check_schema(data)
        assert data["extra_data"]["student_id"] == str(seed)
        assert data["extra_data"]["student_id_source"] == "metadata"
        scores[seed] = data["score"]
    assert scores == {424242: 1.0, 424243: 1.0}, scores
    assert read_variant_id(tmp_path / "missing.json") is None
    (tmp_path / "d.json").write_text('{"variant_seed": true}')
    assert read_variant_id(tmp_path / "d.json") is None
    server = (_pl_dir("c_diagnose") / "questions" / "rlcap" / "c_diagnose_hidden" / "server.py")
    scope: dict = {}
    exec(server.read_text(), scope)
    page = {"params": {}, "variant_seed": 424242}
    scope["generate"](page)
    assert page["params"]["rlcap_student_id"] == "424242"    # the page shows what is graded
    html = server.with_name("question.html").read_text()
    assert "{{params.rlcap_student_id}}" in html


@ROOT_ONLY
def test_missing_file_is_not_gradable_and_no_python_leaves_the_placeholder(tmp_path):
    (tmp_path / "notes.txt").write_text("not the module")
    data = run_prairielearn_job(_pl_dir("d_grpo"), "d_grpo", [tmp_path / "notes.txt"],
                                questions=["q1_centred"], env=NO_NAMESPACES)
    check_schema(data)
    assert not data["gradable"] and "grpo.py" in data["format_errors"][0]
    ref = ROOT / "solutions" / "d_grpo" / "grpo.py"
    data = run_prairielearn_job(_pl_dir("d_grpo"), "d_grpo", [ref], python="/nonexistent/python",
                                questions=["q1_centred"], env=NO_NAMESPACES)
    check_schema(data)
    assert not data["gradable"] and data["extra_data"]["placeholder"]


def test_autograder_fault_is_not_gradable_and_size_is_capped():
    ok = QuestionResult("q1", "one", 1.0, 1.0, "visible", "ok", status=Status.PASSED)
    fault = QuestionResult("q2", "two", 0.0, 2.0, "visible", "autograder fault",
                           status=Status.AUTOGRADER_FAULT)
    data = Report("d_grpo", questions=[ok, fault]).to_prairielearn()
    check_schema(data)
    assert not data["gradable"] and "q2" in data["format_errors"][0]
    check_schema(pl_failed_run("d_grpo", "the venv is broken", config.load("d_grpo").questions))
    check_schema(pl_placeholder("d_grpo"))
    # 40 questions of 40,000 characters with 50 parts of 5,000 each: 10 MB before fitting
    part = {"id": "p", "instance": "p", "label": "a part", "kind": "value",
            "message": "\u00e9" * 5000, "diagnosis": "", "case": "hidden case 1 of 2",
            "points": 1, "passed": False, "hidden": False, "fn": "f", "cause": ""}
    big = Report("d_grpo", questions=[
        QuestionResult(f"q{i}", "t", 0.0, 1.0, "visible", "y" * 40_000, status=Status.FAILED,
                       parts=[dict(part) for _ in range(50)]) for i in range(40)])
    data = big.to_prairielearn()
    check_schema(data)
    assert data["tests"][0]["extra_data"]["parts"]          # shortened, not dropped


# ------------------------------------------------------------------------- hostile submissions
PL_HOSTILE = ["forges_results_json", "daemon_forges_results_later",
              "reads_grader_files_and_raises_them", "rewrites_grader_files",
              "infinite_loop_at_import", "prints_200_mb", "forged_20mb_error_message",
              "zombie_leader_with_live_thread", "leaves_files_in_tmp", "reads_assignment_toml"]


@ROOT_ONLY
@pytest.mark.parametrize("name", PL_HOSTILE)
def test_hostile_submission_through_the_entry_point(name, tmp_path):
    """No more than the blank template (0), nothing forged, none of the
    grader's files read or changed, a valid results.json under 1 MB. The
    entry's own chmods are what protect the grader here: the job root is
    0755, as /grade is."""
    h = next(h for h in HOSTILE + FILESYSTEM if h.name == name)
    job = Path(tempfile.mkdtemp(prefix="rlcap-pl-hostile-"))    # made 0755 like /grade
    grader = job / "serverFilesCourse" / "rlcap" / "d_grpo"
    (tmp_path / "grpo.py").write_text(h.source.replace("{root}", str(grader))
                                      .replace("{agroot}", str(job)))
    try:
        data = run_prairielearn_job(_pl_dir("d_grpo"), "d_grpo", [tmp_path / "grpo.py"],
                                    questions=h.questions, env=NO_NAMESPACES, keep=job)
        _check_hostile(h, job, grader, data)
    finally:
        shutil.rmtree(job, ignore_errors=True)


def _check_hostile(h, job: Path, grader: Path, data: dict) -> None:
    check_schema(data)
    # PrairieLearn lays the job out readable (0755 folders): the entry made it private
    assert {stat.S_IMODE((job / d).stat().st_mode) for d in
            ("serverFilesCourse", "shared", "tests", "data", "student")} == {0o700}
    text = json.dumps(data)
    assert data["score"] == 0 and "FORGED" not in text and len(data["tests"]) == len(h.questions)
    if h.message:
        assert h.message in text, text[:2000]
    judge = (ROOT / "autograder" / "judges" / "d_grpo.py").read_bytes()
    assert (grader / "autograder" / "judges" / "d_grpo.py").read_bytes() == judge
    if h.name == "reads_grader_files_and_raises_them":
        assert_read_nothing(data)
    if h.name == "reads_assignment_toml":         # the job folder's grader: its toml, its salt
        assert f"{grader}/assignments/d_grpo/assignment.toml: PermissionError" in text, text[:2000]
        assert "assignment.toml: READ" not in text and "instance_salt" not in text
    if h.name == "infinite_loop_at_import":    # it hung while importing (it raised nothing):
        assert data["gradable"]                 # graded, 0; not "does not compile or import"


def assert_read_nothing(data: dict) -> None:
    """reads_grader_files_and_raises_them raised every file's text, or the error
    reading it: only errors may stand there (without the entry's chmods the
    expected values' bytes do)."""
    shown = data["message"] + "".join(t["message"] + t["output"] for t in data["tests"])
    said = re.search(r"LEAK (.*?) \(at grpo\.py", shown)
    assert said, shown[:2000]
    assert all(re.fullmatch(r"\w+Error\(\d+, '[^']*'\)", x)
               for x in said.group(1).split(" | ")), said.group(1)[:500]


@ROOT_ONLY
@pytest.mark.parametrize("channel", CHANNELS)
def test_hidden_cases_leak_nothing_through_the_entry_point(channel, tmp_path, monkeypatch):
    """Capstone D's leak catalogue: every question with hidden cases loses
    points and no number the judge sent in a hidden case reaches results.json
    (the hidden inputs are those of a grading of the same submission for the
    same variant: D's hidden cases are drawn per student)."""
    from test_hidden_channels import _hidden_questions, _leaked, _public, _spied_grade
    a = config.load("d_grpo")
    questions = _hidden_questions(a, cheap=True)
    sub = Leak(channel).write("d_grpo", a.submission_files, tmp_path / "sub", _public("d_grpo"))
    _, sent = _spied_grade(monkeypatch, "d_grpo", sub, tmp_path / "r.json", questions,
                           student_id="1815")      # run_prairielearn_job's variant seed
    assert sent[judging.HIDDEN_PHASE]
    visible = ""
    for suffix, part in pl.parts(a).items():
        mine = [q.name for q in part if q.name in questions]
        if mine:
            data = run_prairielearn_job(_pl_dir("d_grpo"), "d_grpo" + suffix,
                                        [sub / f for f in a.submission_files],
                                        questions=mine, env=NO_NAMESPACES)
            check_schema(data)
            assert all(t["points"] < t["max_points"] for t in data["tests"]), data["tests"]
            visible += json.dumps(data)
    assert _leaked(sent, visible) == []


# ------------------------------------------------------------------------------- the docs
def _readme_commands() -> list[str]:
    """docs/prairielearn.md's commands: the copy into a course (its two lines, which the
    README's PrairieLearn tour repeats) and the job graded outside PrairieLearn."""
    import doc_pages
    copy = doc_pages.bash("docs/prairielearn.md", "Add an assignment to a course")
    assert copy == doc_pages.bash("README.md", "Tour: course author on PrairieLearn")
    return copy + doc_pages.bash("docs/prairielearn.md", "Grade a job outside PrairieLearn")[:1]


@ROOT_ONLY
def test_readme_adds_the_questions_to_a_course_and_runs_a_job(tmp_path):
    """docs/prairielearn.md's commands as written: copy the layout into a course, then
    grade a job laid out from the course's copy, outside PrairieLearn."""
    copy_questions, copy_server, run = _readme_commands()
    course = tmp_path / "course"
    (course / "questions").mkdir(parents=True)
    for cmd in (copy_questions, copy_server):
        cmd = cmd.replace("<course>", str(course)).replace("<id>", "d_grpo") \
            .replace("dist/", f"{DIST_DIR}/")
        _pl_dir("d_grpo")
        subprocess.run(["bash", "-c", cmd], check=True, cwd=ROOT)
    for suffix in pl.parts(config.load("d_grpo")):
        assert (course / "questions" / "rlcap" / f"d_grpo{suffix}" / "info.json").is_file()
    job = Path(tempfile.mkdtemp(prefix="rlcap-pl-readme-"))
    try:
        shutil.copytree(course / "serverFilesCourse" / "rlcap" / "d_grpo",
                        job / "serverFilesCourse" / "rlcap" / "d_grpo")
        shutil.copytree(course / "questions" / "rlcap" / "d_grpo" / "tests", job / "tests")
        (job / "student").mkdir()
        shutil.copy(ROOT / "solutions" / "d_grpo" / "grpo.py", job / "student")
        (job / "data").mkdir()
        (job / "data" / "data.json").write_text('{"params": {}, "variant_seed": 7}')
        env = dict(os.environ, RLCAP_QUESTIONS="q1_centred", **NO_NAMESPACES)
        subprocess.run(["bash", "-c", run.replace("/tmp/job", str(job))], check=True, cwd=ROOT,
                       env=env, capture_output=True)
        data = json.loads((job / "results" / "results.json").read_text())
        check_schema(data)
        assert data["score"] == 1.0 and len(data["tests"]) == 1
    finally:
        shutil.rmtree(job, ignore_errors=True)


def test_dist_declares_the_topic_and_tags_the_questions_use(built_dist):
    """PrairieLearn's sync warns about a topic or tag infoCourse.json does not
    declare: make dist writes every one the questions' info.json use, to paste
    (dist/prairielearn/infoCourse-additions.json, each entry as infoCourse.json
    has them), and the steps beside it; every tag starts with "rlcap" (no clash
    with a course's own tags, e.g. "released")."""
    top = DIST_DIR / "prairielearn"
    additions = json.loads((top / pl.ADDITIONS).read_text())
    topics = {t["name"] for t in additions["topics"]}
    declared = {t["name"] for t in additions["tags"]}
    assert all(set(t) == {"name", "color", "description"}
               for t in additions["topics"] + additions["tags"])
    for a in config.available():
        for suffix in pl.parts(config.load(a)):
            info = json.loads((top / a / "questions" / "rlcap" / f"{a}{suffix}" /
                               "info.json").read_text())
            assert info["topic"] in topics and set(info["tags"]) <= declared
    assert all(t.startswith("rlcap") for t in declared)
    steps = (top / pl.STEPS).read_text()
    assert pl.ADDITIONS in steps and "infoCourse.json" in steps
