"""What each venv needs, read from pyproject.toml (the one list of pins):
the grading venv the runtime and sandbox dependencies, a student the runtime, the
plots and the notebook tools. A student installs the complete lock that
``scripts/lock_student.py`` writes from these pins (``requirements/student/``)."""
from __future__ import annotations

from .paths import ROOT, read_toml

STUDENT_LOCK_DIR = ROOT / "requirements" / "student"
STUDENT_LOCKS = ("requirements.txt", "requirements-lab.txt")   # as named in every handout
GRADER_REQUIREMENTS = "requirements-grader.txt"   # the worker's pins, in every zip (make dist)
HOSTED_REQUIREMENTS = "requirements-hosted.txt"   # a hosted runtime's install (make dist)
# What a hosted runtime (Colab, a JupyterHub, a root kernel without a venv) usually has and
# keeps: lower bounds only, so that pip leaves the runtime's own versions in place. The
# floors: numpy 2 (the handout's code and public expected values are numpy 2's), the plots'.
HOSTED_FLOORS = ("numpy>=2.0", "matplotlib>=3.7", "tqdm>=4.64")


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


def hosted_requirements() -> list[str]:
    """A hosted runtime's install, resolved by pip against what the runtime has:
    pinned, what the handout's checks are built on (otter-grader, threadpoolctl,
    tomli); :data:`HOSTED_FLOORS` for what such a runtime has already (numpy,
    matplotlib, tqdm: kept where installed). Everything else (IPython, the
    kernel, pandas, Jupyter) is left to pip's resolution: an installed version
    that otter-grader accepts is kept."""
    p = _project()
    pinned = [r for r in p["dependencies"] if not r.startswith("numpy")]
    otter = [r.replace("[grading]", "") for r in p["optional-dependencies"]["grading"]
             if r.startswith("otter-grader")]
    return otter + pinned + list(HOSTED_FLOORS)
