"""``make dist``: the student handout zip, the Gradescope autograder zip and
the PrairieLearn course folder of every assignment in ``assignments/``. What
each holds is the allowlist of :mod:`autograder.commands.shipping` plus the
files built here (PrairieLearn's: :mod:`autograder.commands.dist_prairielearn`).

dist/student/<id>.zip      <id>/ README.md (from the toml), stubs, notebook, otter
                           tests, rlkit/, the public
                           checks (harness, grading, this assignment's judge),
                           assignment.toml without [hidden], public expected values
                           and the oracles' answers their diagnoses ask for,
                           the students' locks (requirements.txt, requirements-lab.txt)
dist/gradescope/<id>.zip   setup.sh, run_autograder, the placeholder results.json,
                           requirements-grader.txt, rlkit/, autograder/ with the
                           oracles and every expected value; no solutions
dist/prairielearn/<id>/    questions/rlcap/<id>[_hidden]/ (info.json, question.html,
                           tests/rlcap.json) and serverFilesCourse/rlcap/<id>/ (the
                           Gradescope zip's grading files, run_prairielearn)
"""
from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

from . import shipping
from ..grading import config, expected
from ..grading.results import write_placeholder
from ..paths import DIST_DIR, PACKAGE_DIR, ROOT, TEMPLATE_DIR, read_toml
from ..requirements import (GRADER_REQUIREMENTS, HOSTED_REQUIREMENTS, STUDENT_LOCK_DIR,
                            STUDENT_LOCKS, hosted_requirements,
                            grader_requirements, runtime_requirements)

IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
PLACEHOLDER = "placeholder-results.json"     # run_autograder copies it first
HANDOUT_README = "README.md"                  # the handout's own (commands/handout_readme.py)


HOSTED_HEADER = """\
# For a hosted runtime with no venv (Colab, a JupyterHub, a root kernel): README.md, section
# "No venv". Pinned: what the notebook's checks are built on. The rest are floors: pip keeps
# the runtime's own numpy, matplotlib, pandas, IPython and Jupyter where they satisfy them.
#     python3 -m pip install -r requirements-hosted.txt
"""


class ShippingError(RuntimeError):
    """A zip would hold something the allowlist does not declare."""


HIDDEN_CASE = re.compile(r"^\s*hidden\s*=\s*true\b")


def public_toml(text: str, facts: dict | None = None) -> str:
    """assignment.toml without its ``[hidden]`` table (and the comment above it)
    and without its hidden cases (``[[questions.cases]]`` blocks that say
    ``hidden = true``; a dropped block's trailing comments stay, they belong to
    what follows), its placeholders filled from ``facts``
    (``config.handout_facts`` of the whole file: a handout cannot count the
    hidden cases itself)."""
    if facts is not None:
        text = config.fill_placeholders(text, facts, "assignment.toml")
    lines, out, skipping = text.splitlines(keepends=True), [], False
    block: list[str] = []               # the [[questions.cases]] block being read

    def flush() -> None:
        if block and any(HIDDEN_CASE.match(line) for line in block):
            body = max(i for i, line in enumerate(block)
                       if line.strip() and not line.lstrip().startswith("#"))
            out.extend(block[body + 1:])
        else:
            out.extend(block)
        block.clear()
    for line in lines:
        header = re.match(r"^\s*\[\[?\s*([A-Za-z0-9_.-]+)\s*\]\]?\s*(#.*)?$", line)
        if header:
            flush()
            skipping = header.group(1).split(".")[0] == config.HIDDEN_TABLE
            if header.group(1) == "questions.cases" and not skipping:
                block.append(line)
                continue
        if block:
            block.append(line)
        elif not skipping:
            out.append(line)
    flush()
    while out and out[-1].lstrip().startswith("#") and "hidden" in out[-1].lower():
        out.pop()
    return "".join(out)


def otter_test_file(assignment_id: str, q: config.Question) -> str:
    """An otter exception-format test file whose one case runs our public check."""
    return f'''"""Public check {q.name}: {q.title}. Runs the same judge as Gradescope, on public cases."""
from otter.test_files import test_case

OK_FORMAT = False
name = "{q.name}"
points = {q.points!r}


@test_case(points={q.points!r}, hidden=False)
def test_{q.name}(env):
    from autograder.grading.public import check
    check("{assignment_id}", "{q.name}")
'''


def _copy_files(files: list[str], stage: Path) -> None:
    for f in files:
        (stage / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, stage / f)


def _check_allowlist(stage: Path, allowed: set[str]) -> None:
    """Every file in ``stage`` must be declared (allowlist or built here)."""
    extra = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*")
                   if p.is_file() and p.relative_to(stage).as_posix() not in allowed)
    if extra:
        raise ShippingError(f"not on the allowlist: {', '.join(extra)}")


def _zip_dir(directory: Path, zip_path: Path, prefix: str = "") -> None:
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(directory.rglob("*")):
            info = zipfile.ZipInfo(prefix + path.relative_to(directory).as_posix(),
                                   date_time=(2026, 1, 1, 0, 0, 0))
            if path.is_dir():
                continue
            mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())


def fill_notebook(path: Path, facts: dict) -> None:
    """Fill the placeholders of a notebook's cells (text and code), in place:
    the handout quotes assignment.toml's numbers, whatever they are today."""
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        text = "".join(cell["source"])
        filled = config.fill_placeholders(text, facts, f"{path.name}, cell {i}")
        if filled != text:
            cell["source"] = filled.splitlines(keepends=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def build_student(assignment: config.Assignment, stage: Path) -> Path:
    shutil.copytree(TEMPLATE_DIR / assignment.id, stage, ignore=IGNORE)
    for f in assignment.borrowed:             # another assignment's stub (B's ppo.py is A's)
        shutil.copy(assignment.source(TEMPLATE_DIR, f), stage / f)
    facts = config.handout_facts(assignment)
    for notebook in stage.glob("*.ipynb"):
        fill_notebook(notebook, facts)
    allowed = {p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file()}
    files = shipping.student_files(ROOT, assignment.id)
    _copy_files(files, stage)
    toml = f"assignments/{assignment.id}/assignment.toml"
    (stage / toml).parent.mkdir(parents=True)
    (stage / toml).write_text(public_toml(assignment.path.read_text(), facts))
    shipped = read_toml(stage / toml)
    if config.HIDDEN_TABLE in shipped or any(c.get("hidden") for q in shipped.get("questions", [])
                                            for c in q.get("cases", [])):
        raise ShippingError(f"{toml}: the [hidden] table or a hidden case was not stripped")
    public_npz = expected.save(assignment, DIST_DIR / "build" / "expected")["public"]
    npz = f"autograder/expected/{public_npz.name}"
    (stage / npz).parent.mkdir(parents=True)
    shutil.copy(public_npz, stage / npz)
    # the oracles' answers the public checks' diagnoses ask for (the handout has no oracle)
    diagnoses = expected.save_diagnoses(assignment, DIST_DIR / "build" / "expected")
    diagnoses_npz = f"autograder/expected/{diagnoses.name}"
    shutil.copy(diagnoses, stage / diagnoses_npz)
    tests = [f"tests/{q.name}.py" for q in assignment.questions if q.public]
    (stage / "tests").mkdir(exist_ok=True)
    for q in assignment.questions:
        if q.public:
            (stage / "tests" / f"{q.name}.py").write_text(otter_test_file(assignment.id, q))
    from .handout_readme import readme         # the page a student starts from
    (stage / HANDOUT_README).write_text(readme(assignment, facts))
    for lock in STUDENT_LOCKS:           # pinned for every Python and platform (`make lock`)
        shutil.copy(STUDENT_LOCK_DIR / lock, stage / lock)
    # what a local `grade` as root installs into the sandboxed worker's venv (the handout has
    # no pyproject.toml): the runtime's pins (the Gradescope zip adds the network filter's)
    (stage / GRADER_REQUIREMENTS).write_text("\n".join(runtime_requirements()) + "\n")
    (stage / HOSTED_REQUIREMENTS).write_text(HOSTED_HEADER + "\n".join(hosted_requirements())
                                             + "\n")
    _check_allowlist(stage, allowed | set(files) | set(tests)
                     | {toml, npz, diagnoses_npz, HANDOUT_README, GRADER_REQUIREMENTS,
                        HOSTED_REQUIREMENTS, *STUDENT_LOCKS})
    leaked = shipping.leaks(stage, assignment.id, ROOT)
    if leaked:
        raise ShippingError(f"the {assignment.id} handout holds lines of hidden code:\n" +
                            "\n".join(f"  {f}: {line!r} (also in {where})"
                                       for f, line, where in leaked[:30]))
    zip_path = DIST_DIR / "student" / f"{assignment.id}.zip"
    _zip_dir(stage, zip_path, prefix=f"{assignment.id}/")
    return zip_path


def grader_tree(assignment: config.Assignment, stage: Path) -> set[str]:
    """What grading needs, copied into ``stage`` (the Gradescope zip's root, or
    PrairieLearn's ``serverFilesCourse/rlcap/<id>/``): the allowlisted package
    files and judge data, the whole assignment.toml, every expected value and
    requirements-grader.txt. Returns the paths written (posix, from ``stage``)."""
    files = shipping.gradescope_files(ROOT, assignment.id)
    files += shipping.judge_data_files(ROOT, assignment.id)
    _copy_files(files, stage)
    toml = f"assignments/{assignment.id}/assignment.toml"
    (stage / toml).parent.mkdir(parents=True)
    shutil.copy(assignment.path, stage / toml)
    npz = []
    (stage / "autograder" / "expected").mkdir(parents=True)
    for p in expected.save(assignment, DIST_DIR / "build" / "expected").values():
        npz.append(f"autograder/expected/{p.name}")
        shutil.copy(p, stage / npz[-1])
    (stage / GRADER_REQUIREMENTS).write_text("\n".join(grader_requirements()) + "\n")
    return set(files) | set(npz) | {toml, GRADER_REQUIREMENTS}


def platform_script(name: str, assignment: config.Assignment, stage: Path) -> str:
    """Copy the template ``autograder/<name>`` into ``stage`` (executable), its
    placeholders filled; returns its file name."""
    text = (PACKAGE_DIR / name).read_text()
    text = text.replace("@ASSIGNMENT@", assignment.id).replace(
        "@DEADLINE_S@", str(int(assignment.deadline_s) + 60))
    target = stage / Path(name).name
    target.write_text(text)
    target.chmod(0o755)
    return target.name


def build_gradescope(assignment: config.Assignment, stage: Path) -> Path:
    stage.mkdir(parents=True)
    scripts = [platform_script(f"gradescope/{s}", assignment, stage)
               for s in ("setup.sh", "run_autograder")]
    write_placeholder(stage / PLACEHOLDER, assignment.id)
    allowed = grader_tree(assignment, stage)
    _check_allowlist(stage, allowed | set(scripts) | {PLACEHOLDER})
    zip_path = DIST_DIR / "gradescope" / f"{assignment.id}.zip"
    _zip_dir(stage, zip_path)
    return zip_path


def build(assignment_id: str) -> tuple[Path, Path]:
    unclassified = shipping.unclassified(ROOT, config.available())
    if unclassified:
        raise ShippingError("modules in no shipping class (autograder/commands/shipping.py): "
                            + ", ".join(unclassified))
    assignment = config.load(assignment_id)
    unread = config.missing_params(assignment)
    if unread:
        raise config.ConfigError(f"{assignment_id}: the judge reads [params] keys "
                                 f"assignment.toml lacks: {'; '.join(unread)}")
    stage = DIST_DIR / "build" / assignment_id
    shutil.rmtree(stage, ignore_errors=True)
    student = build_student(assignment, stage / "student")
    gradescope = build_gradescope(assignment, stage / "gradescope")
    from .dist_prairielearn import build_prairielearn
    build_prairielearn(assignment)
    return student, gradescope


def build_all(only: str | None = None) -> list[Path]:
    built = []
    for a in ([only] if only else config.available()):
        built.extend(build(a))
        shown = [p.relative_to(ROOT) if p.is_relative_to(ROOT) else p
                 for p in (built[-2], built[-1], DIST_DIR / "prairielearn" / a)]
        print(f"built {shown[0]}, {shown[1]} and {shown[2]}/; the handout holds no line of "
              "solutions/ or of a Gradescope-only module")
    return built
