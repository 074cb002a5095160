"""What each venv needs, read from pyproject.toml (the one list of pins):
the grading venv the runtime and sandbox dependencies, a student the runtime, the
plots and the notebook tools. A student installs the complete lock that
``scripts/lock_student.py`` writes from these pins (``requirements/student/``)."""
from __future__ import annotations

from .paths import ROOT, read_toml

STUDENT_LOCK_DIR = ROOT / "requirements" / "student"
STUDENT_LOCKS = ("requirements.txt", "requirements-lab.txt")   # as named in every handout
GRADER_REQUIREMENTS = "requirements-grader.txt"   # the worker's pins, in every zip (make dist)


def _project() -> dict:
    return read_toml(ROOT / "pyproject.toml")["project"]


def runtime_requirements() -> list[str]:
    """The runtime dependencies alone: what a handout's local grading installs
    into its worker venv (no network filter on a student's own machine)."""
    return list(_project()["dependencies"])


def grader_requirements() -> list[str]:
    """What a grading venv needs: the runtime dependencies and the sandbox's
    (the worker's network filter), nothing else."""
    p = _project()
    return list(p["dependencies"]) + p["optional-dependencies"]["sandbox"]


def student_requirements() -> list[str]:
    """What a student's venv needs for the handout: runtime, plots, otter."""
    p = _project()
    return list(p["dependencies"]) + p["optional-dependencies"]["plots"] + \
        p["optional-dependencies"]["grading"]
