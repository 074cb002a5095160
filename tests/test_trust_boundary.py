"""The trust boundary in the tree: what ships where, which way imports go,
and that hidden cases stay hidden.

* Every module is in exactly one shipping class; each zip holds its allowlist
  and nothing else; no handout line stands in a reference solution or an
  oracle unless the stub already has it.
* Imports go one way: harness -> nothing above it; judges -> never oracles or
  commands (oracles are reached by name); rlkit -> nothing of the grader.
* A submission right on every public case and wrong on every hidden one
  shows no expected value of a hidden case anywhere in its results.json.
"""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from autograder.commands import shipping
from autograder.grading import config, expected
from autograder.grading.grade import grade
from autograder.grading.judging import Context
from autograder.harness import wire
from autograder.harness.probe import InProcessCaller
from autograder.harness.worker import digest
from autograder.grading.reference import load_reference
from conftest import ROOT, built

IDS = config.available()


# ----------------------------------------------------------------------------- shipping
def test_every_module_is_in_a_shipping_class():
    assert shipping.unclassified(ROOT, IDS) == []


@pytest.mark.parametrize("assignment", IDS)
def test_zips_hold_their_allowlist_and_nothing_hidden(assignment, tmp_path):
    student_zip, gradescope_zip = built(assignment)
    student = {n.split("/", 1)[1] for n in zipfile.ZipFile(student_zip).namelist()}
    gradescope = set(zipfile.ZipFile(gradescope_zip).namelist())
    code = {n for n in student if n.endswith(".py") and n.split("/")[0] in shipping.PACKAGES}
    assert code == set(shipping.student_files(ROOT, assignment))
    for names in (student, gradescope):
        assert not any(n.startswith(("solutions/", "autograder/commands/",
                                     "autograder/catalogue/", "instructor/", "tests/catalogue"))
                       for n in names), names
    assert not any(n.startswith("autograder/oracles/") for n in student)
    assert {"setup.sh", "run_autograder", "placeholder-results.json"} <= gradescope
    assert any(n.startswith("autograder/oracles/") for n in gradescope)
    # the handout's assignment.toml has no [hidden] table; the Gradescope one keeps it
    with zipfile.ZipFile(student_zip) as zf:
        toml = zf.read(f"{assignment}/assignments/{assignment}/assignment.toml").decode()
        zf.extractall(tmp_path)
    (tmp_path / "a.toml").write_text(toml)
    assert config.HIDDEN_TABLE not in config.read_toml(tmp_path / "a.toml")
    assert shipping.leaks(tmp_path / assignment, assignment, ROOT) == []


# Run in an unzipped Gradescope zip, the checkout out of reach: import each module named.
IMPORTS = r'''
import importlib, sys
sys.meta_path[:] = [f for f in sys.meta_path
                    if not str(getattr(f, "__module__", "")).startswith("__editable__")]
sys.path.insert(0, "")
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as e:
        failed.append(f"{name}: {type(e).__name__}: {e}")
print("\n".join(failed))
'''


def _oracles_named(assignment: str) -> set[str]:
    """The oracle modules the assignment's judge code reaches by name
    (``"<module>.<function>"`` strings in its judge and its helpers)."""
    modules = {p.stem for p in (ROOT / "autograder" / "oracles").glob("*.py")} - {"__init__"}
    files = [f"autograder/judges/{assignment}.py", *shipping.JUDGE_HELPERS.get(assignment, ())]
    text = "\n".join((ROOT / f).read_text() for f in files)
    return {m for m in re.findall(r"[\"'](\w+)\.\w+[\"']", text) if m in modules}


@pytest.mark.parametrize("assignment", IDS)
def test_every_oracle_a_judge_names_imports_from_its_gradescope_zip(assignment, tmp_path):
    """An oracle that imports a module its assignment's zip does not hold is an
    autograder fault on the platform only (B's q4 met one: the capstone-A
    oracle imported A's judge, which B's zip does not ship)."""
    with zipfile.ZipFile(built(assignment)[1]) as zf:
        zf.extractall(tmp_path)
    named = sorted(_oracles_named(assignment))
    assert named, f"{assignment}: its judge names no oracle"
    proc = subprocess.run([sys.executable, "-c", IMPORTS, f"autograder.judges.{assignment}",
                           *(f"autograder.oracles.{m}" for m in named)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", proc.stdout

def test_leak_check_finds_an_oracle_line_in_a_handout(tmp_path):
    """The check itself can fail: a handout file holding an oracle's line."""
    line = "    return tilted - peak - np.log(np.sum(np.exp(tilted - peak), axis=-1, keepdims=True))\n"
    assert line.strip() in (ROOT / "autograder/oracles/exercises.py").read_text()
    (tmp_path / "helper.py").write_text("import numpy as np\n" + line)
    found = shipping.leaks(tmp_path, "exercises", ROOT)
    assert found and found[0][2] == "autograder/oracles/exercises.py"


# ----------------------------------------------------------------------------- imports
def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative ones resolved)."""
    rel = path.relative_to(ROOT).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                out |= {f"{mod}.{a.name}" if not node.module else mod for a in node.names}
            else:
                out.add(node.module)
    return out


FORBIDDEN = {   # importer prefix -> imported prefixes it must not reach
    "rlkit": ("autograder", "instructor"),
    "autograder.harness": ("autograder.grading", "autograder.judges", "autograder.oracles",
                           "autograder.commands", "autograder.catalogue", "instructor"),
    "autograder.grading": ("autograder.judges", "autograder.oracles", "autograder.commands",
                           "autograder.catalogue", "instructor"),
    "autograder.judges": ("autograder.oracles", "autograder.commands", "autograder.catalogue",
                          "instructor"),
    "autograder.oracles": ("autograder.commands", "autograder.catalogue", "instructor"),
    "autograder.paths": ("autograder.",),
    "autograder.requirements": ("autograder.grading", "autograder.harness", "autograder.judges",
                                "autograder.oracles", "autograder.commands"),
    "autograder.cli": ("autograder.commands", "autograder.oracles", "instructor"),
    "autograder.commands": ("tests", "conftest"),
}


def test_imports_go_one_way():
    bad = []
    for f in shipping.source_files(ROOT):
        module = f[:-3].replace("/", ".").removesuffix(".__init__")
        rules = [v for k, v in FORBIDDEN.items() if module == k or module.startswith(k + ".")]
        for imported in _imports(ROOT / f):
            for forbidden in (p for r in rules for p in r):
                if imported == forbidden.rstrip(".") or imported.startswith(forbidden.rstrip(".")
                                                                            + "."):
                    bad.append(f"{module} imports {imported}")
    assert bad == []


def test_the_import_check_sees_a_forbidden_import(tmp_path):
    f = ROOT / "autograder" / "judges" / "_probe_of_the_test.py"
    try:
        f.write_text("from ..oracles import a_ppo\n")
        assert "autograder.oracles" in _imports(f)
    finally:
        f.unlink()


# ----------------------------------------------------------------------------- hidden cases
_fingerprint = digest      # the worker's own digest of a call's arguments


WRAPPER = '''

# ---- appended by the test: right on public cases, wrong on every other call

import numpy as _np

_PUBLIC = set(__PUBLIC__)
_DEPTH = [0]


__FINGERPRINT__
_fingerprint = digest


def _perturb(v):
    if isinstance(v, _np.ndarray) and v.dtype.kind == "f":
        return v * (1 + 1e-3) + 1e-3
    if isinstance(v, float):
        return v * (1 + 1e-3) + 1e-3
    if isinstance(v, (list, tuple)):
        return type(v)(_perturb(x) for x in v)
    if isinstance(v, dict):
        return {k: _perturb(x) for k, x in v.items()}
    return v


def _wrap(name, fn):
    def wrapped(*args):
        outer = _DEPTH[0] == 0
        _DEPTH[0] += 1
        try:
            out = fn(*args)
        finally:
            _DEPTH[0] -= 1
        if outer and _fingerprint([name, list(args)]) not in _PUBLIC:
            return _perturb(out)
        return out
    return wrapped


for _name in __FUNCTIONS__:
    globals()[_name] = _wrap(_name, globals()[_name])
'''


def _public_fingerprints(assignment: config.Assignment) -> set[str]:
    """Fingerprints of every call the public-only judging makes of the reference."""
    from autograder.catalogue.leaks import public_calls
    return public_calls(assignment.id)


def _hidden_submission(assignment: config.Assignment, directory: Path) -> Path:
    import inspect
    source = (ROOT / "solutions" / assignment.id / assignment.submission_files[0]).read_text()
    stub = ast.parse((ROOT / "student_template" / assignment.id /
                      assignment.submission_files[0]).read_text())
    functions = [n.name for n in stub.body if isinstance(n, ast.FunctionDef)
                 and not n.name.startswith("_")]
    wrapper = (WRAPPER.replace("__PUBLIC__", repr(sorted(_public_fingerprints(assignment))))
               .replace("__FUNCTIONS__", repr(functions))
               .replace("__FINGERPRINT__", inspect.getsource(digest)))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / assignment.submission_files[0]).write_text(source + wrapper)
    for other in assignment.submission_files[1:]:        # B: the A module and the table, as given
        shutil.copy(assignment.source(ROOT / "solutions", other), directory / other)
    return directory


def _numbers(values: np.ndarray) -> set[str]:
    """How a value could be printed, for values specific enough to recognise."""
    out = set()
    for v in np.asarray(values, dtype=np.float64).ravel()[:200]:
        for text in (f"{v:.12g}", f"{v:.10g}", repr(float(v))):
            if sum(c.isdigit() for c in text.lstrip("-0.")) >= 7:
                out.add(text)
    return out


@pytest.mark.parametrize("assignment", [pytest.param("d_grpo", marks=pytest.mark.slow),
                                        "exercises", "c_diagnose", "b_ablations",
                                        pytest.param("a_ppo", marks=pytest.mark.slow)])
def test_a_submission_wrong_only_on_hidden_cases_sees_no_hidden_value(assignment, tmp_path):
    a = config.load(assignment)
    values, _, public_keys = expected.load(a)
    hidden = {k: v for k, v in values.items() if k.partition("#")[0] not in public_keys}
    public_numbers = set().union(*(_numbers(v) for k, v in values.items()
                                   if k.partition("#")[0] in public_keys))
    sub = _hidden_submission(a, tmp_path / "sub")
    # the questions with hidden cases (not A's bar: a training run, the same channels)
    questions = [q.name for q in a.questions if q.has_hidden_cases and q.budget_cpu_s < 60]
    results = tmp_path / "results.json"
    report = grade(assignment, sub, questions=questions, results=results, echo=False)
    text = results.read_text()
    data = json.loads(text)
    assert "hidden case" in text, "the submission failed no hidden case"
    assert any(q.score < q.max_score for q in report.questions)
    leaked = sorted({n for v in hidden.values() for n in _numbers(v)} - public_numbers)
    leaked = [n for n in leaked if n in text]
    assert leaked == [], leaked[:10]
    assert data["tests"]


@pytest.mark.parametrize("assignment", IDS)
def test_public_cases_are_the_same_locally_and_on_gradescope(assignment):
    """The public-only recording (the handout's checks) and the full one
    (Gradescope) run the public cases on the same inputs: same answers."""
    a = config.load(assignment)
    public_values, public_keys = expected.record(a, True)
    full_values, full_keys = expected.record(a, False, public_keys)
    assert public_values and set(public_values) <= set(full_values)
    for k, v in public_values.items():
        assert np.array_equal(v, full_values[k]), k


def test_public_toml_drops_only_the_hidden_table():
    from autograder.commands.dist import public_toml
    text = ('[params]\nx = [\n  [1, 2],\n  [3, 4],\n]\n# hidden cases\n[hidden]\nseeds = [\n'
            '  [5, 6],\n  ["a", 7],\n]\nsalt = "s"\n\n[[questions]]\nname = "q"\n')
    (tmp := Path(__import__("tempfile").mkdtemp()) / "a.toml").write_text(public_toml(text))
    parsed = config.read_toml(tmp)
    assert parsed == {"params": {"x": [[1, 2], [3, 4]]}, "questions": [{"name": "q"}]}


# ----------------------------------------------------------------------------- cases as data
def test_case_schema_refuses_unknown_and_missing_keys(tmp_path):
    """An unknown or missing case key stops config.load with its name."""
    base = ('id = "x"\n[submission]\nfiles = ["m.py"]\n[[questions]]\nname = "q1"\npoints = 1\n'
            'budget_cpu_s = 1\n[[questions.parts]]\nid = "p"\ntitle = "the part"\npoints = 1\n')
    for body, word in (('[[questions.cases]]\nname = "a"\nsed = 3\n', "sed"),
                       ('[[questions.cases]]\nseed = 3\n', "name"),
                       ('[[questions.cases]]\nname = "a"\nseed = "3"\n', "seed"),
                       ('[[questions.cases]]\nname = "a"\ndraw = { K = [2, 9] }\n', "hidden"),
                       ('[[questions.cases]]\nname = "a"\nhidden = true\ndraw = { name = [1, 2] }\n',
                        "draw.name")):
        (tmp_path / "x").mkdir(exist_ok=True)
        (tmp_path / "x" / "assignment.toml").write_text(base + body)
        with pytest.raises(config.ConfigError, match=word):
            config.load("x", tmp_path)


def test_part_schema_refuses_what_no_part_can_be(tmp_path):
    """A question's parts are declared records: an unknown key, an id that is
    not a name, points that do not add up to the question's, a requirement or
    a case group that does not exist, a question without parts: each stops
    config.load with what is wrong."""
    head = ('id = "x"\n[submission]\nfiles = ["m.py"]\n[hidden]\ns = 1\n[[questions]]\n'
            'name = "q1"\npoints = 2\nbudget_cpu_s = 1\n')
    case = '[[questions.cases]]\nname = "a"\nseed = 1\n'
    part = '[[questions.parts]]\nid = "{id}"\ntitle = "t"\npoints = {points}\n{extra}'
    for parts, word in (
            ([("p", 2, "weight = 1\n")], "unknown key"),
            ([("Part one", 2, "")], "not a lower-case name"),
            ([("p", 1, "")], "add up to"),
            ([("p", 1, ""), ("q", 1, 'requires = "r"\n')], "requires"),
            ([("p", 2, 'cases = ["nope"]\n')], "hold no case"),
            ([("p", 1, ""), ("p", 1, "")], "one id"),
            ([("p", 2, 'each = "item"\n')], "count"),
            ([], "declare its scored parts")):
        body = "".join(part.format(id=i, points=pts, extra=x) for i, pts, x in parts)
        (tmp_path / "x").mkdir(exist_ok=True)
        (tmp_path / "x" / "assignment.toml").write_text(head + body + case)
        with pytest.raises(config.ConfigError, match=word):
            config.load("x", tmp_path)


def test_a_param_the_judge_reads_is_in_the_toml():
    """Every [params] key a judge reads is declared; the static reading finds one."""
    for a in IDS:
        assert config.missing_params(config.load(a)) == [], a
    assert "k1_success" in config.params_read_by_judge("d_grpo")


def test_judges_hold_no_case_list_and_no_literal_seed():
    """Cases are data: no judge chooses visibility by control flow or seeds a
    generator with a literal."""
    for path in sorted((ROOT / "autograder" / "judges").glob("*.py")):
        text = path.read_text()
        assert not re.search(r"default_rng\(\s*-?\d", text), path.name
        assert "not ctx.public_only" not in text, path.name


def test_hidden_cases_leave_the_handout_toml(tmp_path):
    from autograder.commands.dist import public_toml
    text = ('[[questions]]\nname = "q"\n[[questions.cases]]\nname = "pub"\nseed = 1\n'
            '# the next one is hidden\n[[questions.cases]]\nname = "secret"\nhidden = true\n'
            'seed = 20261201\n# a comment about the next question\n[[questions]]\nname = "r"\n')
    out = public_toml(text)
    assert "secret" not in out and "20261201" not in out
    assert "pub" in out and "a comment about the next question" in out
    (tmp_path / "a.toml").write_text(out)
    assert [q["name"] for q in config.read_toml(tmp_path / "a.toml")["questions"]] == ["q", "r"]
