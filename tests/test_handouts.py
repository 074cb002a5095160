"""Stub modules and reference modules agree on everything but the answers:
the same functions with the same signatures, and every piece the handout
gives complete (not raising NotImplementedError) is the reference's, verbatim."""
from __future__ import annotations

import ast

import pytest

from autograder.grading import config
from conftest import ROOT

FILES = [(a, f) for a in config.available() for f in config.load(a).submission_files
         if f.endswith(".py") and f not in config.load(a).borrowed]     # checked where they live


def _functions(path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text())
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _raises_not_implemented(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n)
               for n in ast.walk(fn))


@pytest.mark.parametrize("assignment,filename", FILES)
def test_stub_and_reference_share_api_and_given_code(assignment, filename):
    a = config.load(assignment)
    stub = _functions(a.source(ROOT / "student_template", filename))
    ref = _functions(a.source(ROOT / "solutions", filename))
    public = {n for n in stub if not n.startswith("_")}
    assert public == {n for n in ref if not n.startswith("_")}
    for name in public:
        assert ast.unparse(stub[name].args) == ast.unparse(ref[name].args), name
    given = [n for n in public if not _raises_not_implemented(stub[n])]
    for name in given:
        assert ast.unparse(stub[name]) == ast.unparse(ref[name]), f"given {name}() differs"
    assert len(given) < len(public), "the stub asks the student for nothing"


# (assignment, [params] key, a changed value): numbers the notebooks and titles quote
EDITS = [("a_ppo", "bar", 437), ("a_ppo", "updates", 71), ("a_ppo", "eval_seed_offset", 913),
         ("a_ppo", "eval_episodes", 23),
         ("d_grpo", "sweep_budget", 6800), ("d_grpo", "ceiling", 0.4987),
         ("d_grpo", "clip_updates", 1700), ("d_grpo", "clip_eps", 0.15),
         ("d_grpo", "clip_epochs", 3), ("d_grpo", "k1_success", 0.0711),
         ("exercises", "ex3_budget", 1700), ("exercises", "ex3_bar", 0.485)]


@pytest.mark.parametrize("assignment,key,value", EDITS)
def test_an_edited_toml_changes_what_the_handout_says(assignment, key, value, tmp_path):
    """assignment.toml is the one place for the bars: the notebooks and the
    question titles quote it (filled at make dist), so an edit reaches both."""
    import dataclasses
    import json
    import shutil

    from autograder.commands.dist import fill_notebook
    a = config.load(assignment)
    old = a.params[key]
    edited = dataclasses.replace(a, params={**a.params, key: value})
    nb = tmp_path / f"{assignment}.ipynb"
    shutil.copy(ROOT / "student_template" / assignment / nb.name, nb)
    fill_notebook(nb, config.handout_facts(edited))
    cells = ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"]]
    text = "\n".join(cells)
    assert "{{" not in text
    shown = f"{value:.3f}" if key == "k1_success" else str(value)
    assert shown in text, f"the notebook never quotes {key}"
    distinctive = {"bar": "450", "updates": "60 updates", "eval_seed_offset": "777",
                   "sweep_budget": "6400", "ceiling": "0.499", "clip_updates": "1600",
                   "clip_eps": "eps = 0.2", "clip_epochs": "4 epochs", "k1_success": "0.062",
                   "ex3_budget": "1600", "ex3_bar": "0.49}"}
    if key in distinctive:
        assert distinctive[key] not in text, f"{distinctive[key]!r} ({key} = {old}) is hard-coded"


def test_question_titles_quote_the_toml():
    titles = {q.name: q.title for q in config.load("a_ppo").questions}
    p = config.load("a_ppo").params
    assert f"> {p['bar']} after {p['updates']} updates on 3 seeds" in titles["q7_bar"]
    assert all("{{" not in q.title for a in config.available() for q in config.load(a).questions)


def test_an_unknown_placeholder_stops_the_build():
    with pytest.raises(config.ConfigError, match="names nothing"):
        config.fill_placeholders("above {{params.nonsense}}", {"params.bar": 1}, "test")


def test_without_posix_modules_the_notebook_checks_work_and_grade_says_why(tmp_path):
    """Windows has no fcntl, pwd or resource: the notebook's in-process checks
    must still run, and the local `grade` command must say what it needs."""
    import subprocess
    import sys
    code = (
        "import sys\n"
        "for m in ('fcntl', 'pwd', 'resource'): sys.modules[m] = None\n"
        "from autograder.grading import public\n"
        "assert public.check('d_grpo', 'q1_centred', show_progress=False) == 1.0\n"
        "from autograder import cli\n"
        "sys.exit(cli.main(['grade', 'd_grpo', '.']))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "solutions" / "d_grpo",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "needs Linux or macOS" in proc.stderr and "WSL" in proc.stderr


@pytest.mark.parametrize("assignment", config.available())
def test_notebook_cells_have_ids(assignment):
    """nbformat 4.5: a cell without an id warns today and will be an error."""
    import json
    nb = json.loads((ROOT / "student_template" / assignment / f"{assignment}.ipynb").read_text())
    assert (nb["nbformat"], nb["nbformat_minor"]) >= (4, 5)
    assert all("id" in c for c in nb["cells"])
