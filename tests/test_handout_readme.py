"""Each handout's README.md (written by ``make dist`` from assignment.toml):
what a student who has only the zip needs, consistent with the toml, the
notebook, the PrairieLearn questions and the lock. Its commands are run as
written in tests/test_readme.py (the first hour)."""
from __future__ import annotations

import json
import re
import zipfile

import pytest

from autograder.commands import dist_prairielearn, handout_readme
from autograder.grading import config
from conftest import ROOT, built

ASSIGNMENTS = config.available()


def _readme(assignment_id: str) -> str:
    a = config.load(assignment_id)
    return handout_readme.readme(a, config.handout_facts(a))


def _section(text: str, number: int) -> str:
    return text.split(f"\n## {number}. ", 1)[1].split("\n## ", 1)[0]


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_readme_says_what_the_toml_says(assignment_id):
    a = config.load(assignment_id)
    text = _readme(assignment_id)
    assert "{{" not in text and text.startswith(f"# {a.title}\n")
    for q in a.questions:
        row = next(l for l in text.splitlines() if l.startswith(f"| `{q.name}`"))
        assert f"| {q.points:g} |" in row
        if q.points == 0:
            assert "by hand" in row, row
        else:
            assert ("no: graded only where you submit" in row) == (not q.public), row
    assert f"| total | {a.total_points:g} |" in text
    for f in a.submission_files:
        assert f"`{f}`" in _section(text, 3)
    for f in a.borrowed:
        assert f"Bring your `{f}`" in text
    assert f".venv/bin/python -m autograder grade {assignment_id} ." in _section(text, 2)
    ids = _section(text, 4)
    if a.per_student:
        assert f"`STUDENT_ID` in `{a.submission_files[0]}`" in ids
        assert "Gradescope" in ids and "PrairieLearn" in ids
    else:
        assert "no id is needed" in ids


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_readme_names_the_platforms_questions_and_the_notebooks_zip(assignment_id):
    """PrairieLearn's question titles as its info.json has them; the zip the
    notebook's last cell writes (and replaces) by its name."""
    a = config.load(assignment_id)
    submit = _section(_readme(assignment_id), 3)
    for suffix, questions in dist_prairielearn.parts(a).items():
        title = dist_prairielearn.info_json(a, suffix)["title"]
        line = next(l for l in submit.splitlines() if l.strip().startswith(f"*{title}*"))
        assert all(f"`{q.name}`" in line for q in questions)
    nb = json.loads((ROOT / "student_template" / a.id / f"{a.id}.ipynb").read_text())
    last = "".join(nb["cells"][-1]["source"])
    zip_name = re.search(r'export_path="([^"]+)"', last).group(1)
    assert f"`{zip_name}`" in submit and "replaces it" in submit


def test_readme_setup_commands_are_the_locks_and_the_pip_check_line_is_the_excludes():
    """The setup block installs the handout's two locks with --no-deps; the one
    line on `pip check` names what the lock leaves out on purpose."""
    from packaging.utils import canonicalize_name
    from test_student_lock import excluded
    text = _readme("d_grpo")
    block = re.search(r"```bash\n(.*?)```", _section(text, 1), re.S).group(1).splitlines()
    assert block[0] == "python3 -m venv .venv"
    assert block[1] == ".venv/bin/pip install --no-deps --no-compile -r requirements.txt"
    assert block[2] == ".venv/bin/pip install --no-deps --no-compile -r requirements-lab.txt"
    named = {canonicalize_name(n) for n in re.split(r",\s*|\s+and\s+", handout_readme.LEFT_OUT)}
    assert named <= excluded()


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_every_handout_zip_holds_its_readme(assignment_id):
    with zipfile.ZipFile(built(assignment_id)[0]) as zf:
        shipped = zf.read(f"{assignment_id}/README.md").decode()
    assert shipped == _readme(assignment_id)


def test_a_toml_without_a_summary_stops_the_build(tmp_path):
    import dataclasses
    a = config.load("d_grpo")
    toml = tmp_path / "d_grpo" / "assignment.toml"
    toml.parent.mkdir()
    toml.write_text(re.sub(r'\[handout\]\nsummary = """.*?"""\n', "", a.path.read_text(),
                           flags=re.S))
    with pytest.raises(config.ConfigError, match="summary"):
        handout_readme.readme(dataclasses.replace(a, path=toml), config.handout_facts(a))


@pytest.mark.parametrize("assignment_id", ASSIGNMENTS)
def test_a_hosted_runtime_has_its_install_and_root_its_footprint(assignment_id):
    """The handout ships requirements-hosted.txt (pins only what the checks are built on,
    floors for what a hosted runtime has) and its README says how to use it, on Colab too,
    that jupyter lab needs --allow-root as root, and what a root local grade does to the
    machine and how to avoid it (tests/test_readme.py runs the lines)."""
    from autograder.requirements import HOSTED_FLOORS, HOSTED_REQUIREMENTS, hosted_requirements
    with zipfile.ZipFile(built(assignment_id)[0]) as zf:
        hosted = zf.read(f"{assignment_id}/{HOSTED_REQUIREMENTS}").decode()
    lines = [l for l in hosted.splitlines() if l and not l.startswith("#")]
    assert lines == hosted_requirements()
    assert all(">=" in l for l in lines if l.split(">=")[0] in {f.split(">=")[0]
                                                                for f in HOSTED_FLOORS})
    assert "otter-grader==7.0.0" in lines
    setup = _section(_readme(assignment_id), 1)
    assert f"python3 -m pip install -r {HOSTED_REQUIREMENTS}" in setup
    assert f"python3 -m autograder grade {assignment_id} . --no-sandbox" in setup
    assert "--allow-root" in setup and "Colab" in setup
    for what in ("rlcap-w0", "/var/lib/rlcap", "/run/rlcap-slots", "userdel"):
        assert what in setup, what
