"""``make dist``: the student handout zip and the Gradescope autograder zip of
every assignment that exists.

dist/student/<id>.zip      <id>/ stubs, notebook, otter tests, rlkit/, the public
                           checks (autograder code + public expected values)
dist/gradescope/<id>.zip   setup.sh, run_autograder, requirements-grader.txt,
                           rlkit/, autograder/ + hidden expected values; no solutions
"""
from __future__ import annotations

import shutil
import sys
import zipfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from . import config, expected
from .paths import DIST_DIR, PACKAGE_DIR, ROOT, TEMPLATE_DIR

# Instructor-only modules; neither zip needs them.
INSTRUCTOR_ONLY = {"reproduce.py", "dist.py", "demo.py", "figures.py", "batch.py", "validate.py"}
STUDENT_EXCLUDE = INSTRUCTOR_ONLY | {"gradescope", "expected"}
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def grader_requirements() -> list[str]:
    """What the grading venv needs: the runtime dependencies, nothing else."""
    return list(_pyproject()["project"]["dependencies"])


def student_requirements() -> list[str]:
    p = _pyproject()["project"]
    return list(p["dependencies"]) + p["optional-dependencies"]["plots"] + \
        p["optional-dependencies"]["grading"]


def otter_test_file(assignment_id: str, q: config.Question) -> str:
    """An otter exception-format test file whose one case runs our public check."""
    return f'''"""Public check {q.name}: {q.title}. Runs the same judge as Gradescope, on public cases."""
from otter.test_files import test_case

OK_FORMAT = False
name = "{q.name}"
points = {q.points!r}


@test_case(points={q.points!r}, hidden=False)
def test_{q.name}(env):
    from autograder.public import check
    check("{assignment_id}", "{q.name}")
'''


def _copy_package(src: Path, dst: Path, exclude: set[str], judge: str) -> None:
    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = set(IGNORE(directory, names))
        if Path(directory) == src:
            skip |= exclude & set(names)
        if Path(directory).name == "judges":
            # only this assignment's judge and the shared helpers
            others = {f"{a}.py" for a in config.ASSIGNMENT_IDS if a != judge}
            skip |= others & set(names)
        return skip
    shutil.copytree(src, dst, ignore=ignore)


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


def build_student(assignment: config.Assignment, stage: Path) -> Path:
    shutil.copytree(TEMPLATE_DIR / assignment.id, stage, ignore=IGNORE)
    shutil.copytree(ROOT / "rlkit", stage / "rlkit", ignore=IGNORE)
    _copy_package(PACKAGE_DIR, stage / "autograder", STUDENT_EXCLUDE, assignment.id)
    (stage / "assignments" / assignment.id).mkdir(parents=True)
    shutil.copy(assignment.path, stage / "assignments" / assignment.id / "assignment.toml")
    exp = stage / "autograder" / "expected"
    public_npz = [p for p in expected.save(assignment, DIST_DIR / "build" / "expected")
                  if p.name.endswith(".public.npz")][0]
    exp.mkdir()
    shutil.copy(public_npz, exp / public_npz.name)
    tests = stage / "tests"
    tests.mkdir(exist_ok=True)
    for q in assignment.questions:
        if q.public:
            (tests / f"{q.name}.py").write_text(otter_test_file(assignment.id, q))
    (stage / "requirements.txt").write_text("\n".join(student_requirements()) + "\n")
    zip_path = DIST_DIR / "student" / f"{assignment.id}.zip"
    _zip_dir(stage, zip_path, prefix=f"{assignment.id}/")
    return zip_path


def build_gradescope(assignment: config.Assignment, stage: Path) -> Path:
    stage.mkdir(parents=True)
    for script in ("setup.sh", "run_autograder"):
        text = (PACKAGE_DIR / "gradescope" / script).read_text()
        text = text.replace("@ASSIGNMENT@", assignment.id).replace(
            "@DEADLINE_S@", str(int(assignment.deadline_s) + 60))
        (stage / script).write_text(text)
        (stage / script).chmod(0o755)
    shutil.copytree(ROOT / "rlkit", stage / "rlkit", ignore=IGNORE)
    _copy_package(PACKAGE_DIR, stage / "autograder", STUDENT_EXCLUDE, assignment.id)
    (stage / "assignments" / assignment.id).mkdir(parents=True)
    shutil.copy(assignment.path, stage / "assignments" / assignment.id / "assignment.toml")
    exp = stage / "autograder" / "expected"
    exp.mkdir()
    for p in expected.save(assignment, DIST_DIR / "build" / "expected"):
        shutil.copy(p, exp / p.name)
    (stage / "requirements-grader.txt").write_text("\n".join(grader_requirements()) + "\n")
    zip_path = DIST_DIR / "gradescope" / f"{assignment.id}.zip"
    _zip_dir(stage, zip_path)
    return zip_path


def build(assignment_id: str) -> tuple[Path, Path]:
    assignment = config.load(assignment_id)
    stage = DIST_DIR / "build" / assignment_id
    shutil.rmtree(stage, ignore_errors=True)
    student = build_student(assignment, stage / "student")
    gradescope = build_gradescope(assignment, stage / "gradescope")
    return student, gradescope


def build_all(only: str | None = None) -> list[Path]:
    built = []
    for a in ([only] if only else config.available()):
        built.extend(build(a))
        print(f"built {built[-2].relative_to(ROOT)} and {built[-1].relative_to(ROOT)}")
    return built
