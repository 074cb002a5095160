"""What each venv needs, read from pyproject.toml (the one list of pins):
the grading venv only the runtime dependencies, a student the runtime, the
plots and the notebook tools. A student installs the complete lock that
``scripts/lock_student.py`` writes from these pins (``requirements/student/``)."""
from __future__ import annotations

from .paths import ROOT, read_toml

STUDENT_LOCK_DIR = ROOT / "requirements" / "student"
STUDENT_LOCKS = ("requirements.txt", "requirements-lab.txt")   # as named in every handout
GRADER_REQUIREMENTS = "requirements-grader.txt"   # the worker's pins, in every zip (make dist)


def _project() -> dict:
    return read_toml(ROOT / "pyproject.toml")["project"]


def grader_requirements() -> list[str]:
    """What the grading venv needs: the runtime dependencies, nothing else."""
    return list(_project()["dependencies"])


def student_requirements() -> list[str]:
    """What a student's venv needs for the handout: runtime, plots, otter."""
    p = _project()
    return list(p["dependencies"]) + p["optional-dependencies"]["plots"] + \
        p["optional-dependencies"]["grading"]
