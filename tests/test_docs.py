"""The README is a front door and docs/ holds the pages: the README stays short and
links every page; every link between them resolves; and every ```bash block on every
page is run as written by a named test, or named here with the reason it is not.

The blocks a test runs are read from the page by that test (``doc_pages.bash``), so an
edited command is the command run; where two pages say the same lines (the README's
tours and the pages they point to, the handout's README and docs/students.md), the
lines are held equal here and one copy is run."""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

import doc_pages
from conftest import ROOT, built

README_MAX_LINES = 200
PAGES = {"students.md", "instructors.md", "gradescope.md", "prairielearn.md",
         "grading-model.md", "sandbox.md", "adding-an-assignment.md", "measured.md"}

# (page, the heading a bash block sits under, its first line) -> where it is run, or why not
RUN = {
    ("README.md", "Tour: student", "python3 -m venv .venv"):
        "test_docs: the handout README's lines (run by test_readme's first hour)",
    ("docs/students.md", "The first hour", "python3 -m venv .venv"):
        "test_docs: the handout README's lines (run by test_readme's first hour)",
    ("docs/students.md", "No venv: hosted runtimes and root",
     "python3 -m pip install -r requirements-hosted.txt"):
        "test_docs: the handout README's 'No venv' lines (run by test_readme.py::"
        "test_a_hosted_kernel_without_a_venv_installs_and_grades_as_written)",
    ("README.md", "Tour: instructor", "make dist"):
        "test_readme.py::test_instructor_tour_runs_as_written",
    ("docs/instructors.md", "The tour", "make dist"):
        "test_readme.py::test_instructor_tour_runs_as_written",
    ("README.md", "Tour: course author on PrairieLearn", "cp -r dist/prairielearn/<id>/questions/rlcap <course>/questions/"):
        "test_prairielearn.py::test_readme_adds_the_questions_to_a_course_and_runs_a_job",
    ("docs/prairielearn.md", "Add an assignment to a course", "cp -r dist/prairielearn/<id>/questions/rlcap <course>/questions/"):
        "test_prairielearn.py::test_readme_adds_the_questions_to_a_course_and_runs_a_job",
    ("docs/prairielearn.md", "Grade a job outside PrairieLearn",
     "RLCAP_PL_ROOT=/tmp/job AUTOGRADER_PYTHON=.venv/bin/python bash /tmp/job/serverFilesCourse/rlcap/d_grpo/run_prairielearn"):
        "test_prairielearn.py::test_readme_adds_the_questions_to_a_course_and_runs_a_job",
    ("docs/prairielearn.md", "Grade a job outside PrairieLearn",
     "RLCAP_NO_NAMESPACES=1 PIP_NO_INDEX=1 RLCAP_STATE_DIR=$(mktemp -d) RLCAP_PL_ROOT=/tmp/job AUTOGRADER_PYTHON=<python3> bash /tmp/job/serverFilesCourse/rlcap/d_grpo/run_prairielearn"):
        "test_stock_image.py::test_readme_grades_as_the_stock_image_would",
    ("docs/gradescope.md", "Try the autograder outside Gradescope",
     "RLCAP_VENV=/tmp/rlcap-venv bash setup.sh"):
        "test_gradescope_setup.py::test_run_autograder_outside_gradescope_as_the_readme_says",
}
NOT_RUN = {
    ("README.md", "The two commands", "make demo"):
        "make test is the suite itself (CI runs it: .ci/run); make demo takes 7-20 minutes "
        "of 2 cores, and its parts are the tested commands (dist, grade, grade-all)",
    ("docs/prairielearn.md", "A course image (optional)",
     "docker build --platform linux/amd64 -t <account>/rlcap-grader dist/prairielearn/image"):
        "needs a Docker engine and a registry account; make dist writes the Dockerfile and "
        "tests/test_stock_image.py checks it; RLCAP_PL_IMAGE's effect on info.json is tested",
}


def _blocks() -> dict:
    return {(page, heading, lines[0]): lines for page in doc_pages.PAGES
            for heading, lines in doc_pages.blocks(page)}


def test_the_readme_is_a_front_door():
    """Under 200 lines: what it is, the two commands, one tour per role, links to every
    page (and every page exists)."""
    readme = doc_pages.text("README.md")
    assert len(readme.splitlines()) < README_MAX_LINES, len(readme.splitlines())
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings[0] == "The two commands"
    for role in ("student", "instructor", "course author on Gradescope",
                 "course author on PrairieLearn", "course author adding an assignment"):
        assert f"Tour: {role}" in headings, role
    assert {p.name for p in (ROOT / "docs").glob("*.md")} >= PAGES
    for page in PAGES:
        assert f"](docs/{page})" in readme, f"the README does not link docs/{page}"


def test_every_link_between_the_pages_resolves():
    """Relative links (and their #anchors, GitHub's slugs of the headings) point at
    files and headings that exist."""
    def slug(heading: str) -> str:
        return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")

    broken = []
    for page in doc_pages.PAGES:
        base = (ROOT / page).parent
        for target in re.findall(r"\]\(([^)\s]+)\)", doc_pages.text(page)):
            if re.match(r"https?://", target):
                continue
            path, _, anchor = target.partition("#")
            file = (base / path).resolve() if path else ROOT / page
            if not file.exists():
                broken.append(f"{page}: {target}")
            elif anchor and file.suffix == ".md":
                slugs = {slug(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), re.M)}
                if anchor not in slugs:
                    broken.append(f"{page}: {target} (no such heading)")
    assert not broken, broken


def test_every_bash_block_is_run_by_a_test_or_says_why_not():
    found = _blocks()
    unclaimed = [k for k in found if k not in RUN and k not in NOT_RUN]
    assert not unclaimed, "bash blocks no test runs (add them to RUN or NOT_RUN):\n" + \
        "\n".join(map(str, unclaimed))
    stale = [k for k in {**RUN, **NOT_RUN} if k not in found]
    assert not stale, f"RUN or NOT_RUN names blocks no page has: {stale}"
    for where in RUN.values():                       # the named test exists
        for name in re.findall(r"(test_\w+\.py)::(test_\w+)", where):
            assert f"def {name[1]}(" in (ROOT / "tests" / name[0]).read_text(), name
    assert all(len(why) > 40 for why in NOT_RUN.values())


def _handout_readme(assignment: str = "d_grpo") -> str:
    with zipfile.ZipFile(built(assignment)[0]) as zf:
        return zf.read(f"{assignment}/README.md").decode()


def _handout_bash(text: str, heading: str) -> list[str]:
    body = text.split(f"\n{heading}", 1)[1]
    body = re.split(r"\n#{2,3} ", body, 1)[0]
    block = re.search(r"```bash\n(.*?)```", body, re.S).group(1)
    return [l.strip() for l in block.splitlines() if l.strip()]


def test_the_student_pages_say_the_handouts_lines():
    """docs/students.md and the README's student tour say the handout README's first
    hour (set-up and local grade) and its "No venv" lines, with <id> for the id; the
    handout's are the lines tests/test_readme.py runs."""
    handout = _handout_readme().replace("d_grpo", "<id>")
    first_hour = _handout_bash(handout, "## 1. Set up") + _handout_bash(handout, "## 2. Work")
    assert doc_pages.bash("docs/students.md", "The first hour") == first_hour
    assert doc_pages.bash("README.md", "Tour: student") == first_hour
    assert doc_pages.bash("docs/students.md", "No venv: hosted runtimes and root") == \
        _handout_bash(handout, "### No venv")


def test_the_grading_model_has_the_leads_section():
    """The lead fills "What a student sees, phase by phase" (an information-flow table)."""
    assert "## What a student sees, phase by phase" in doc_pages.text("docs/grading-model.md")
