"""What ships where: the one allowlist of the handout zip, the Gradescope zip
and the PrairieLearn grader tree (``serverFilesCourse/rlcap/<id>/``, the
Gradescope zip's grading files: ``dist.grader_tree``).

Every source file of the checkout's packages (``autograder/``, ``rlkit/``,
``instructor/``) is in exactly one of three classes, by pattern:

* ``STUDENT``: the handout's modules (and the Gradescope zip's): the runtime,
  the harness, grading, the public judge code. No oracle, no solution.
* ``GRADESCOPE_ONLY``: what grading adds, on Gradescope and PrairieLearn (the
  oracles).
* ``INSTRUCTOR_ONLY``: neither zip (commands, catalogues, figures).

``{id}`` in a pattern is the assignment id; ``JUDGE_HELPERS`` lists the shared
judge modules an assignment's judge needs. A module that matches no class
fails ``make dist`` and a test, so a new module never ships by default.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

STUDENT = (
    "rlkit/*.py",
    "autograder/__init__.py", "autograder/__main__.py", "autograder/cli.py",
    "autograder/paths.py", "autograder/requirements.py", "autograder/numerics.py",
    "autograder/harness/*.py",
    "autograder/grading/*.py",
    "autograder/judges/__init__.py", "autograder/judges/{id}.py",
)
GRADESCOPE_ONLY = ("autograder/oracles/*.py",)
INSTRUCTOR_ONLY = ("autograder/commands/*.py", "autograder/catalogue/*.py", "instructor/*.py")
JUDGE_HELPERS = {
    "a_ppo": ("autograder/judges/ppo_pieces.py", "autograder/judges/slips.py"),
    "b_ablations": ("autograder/judges/ppo_pieces.py", "autograder/judges/ablation_pieces.py"),
    "d_grpo": ("autograder/judges/ksweep.py", "autograder/judges/reward_groups.py",
               "autograder/judges/slips.py"),
    "exercises": ("autograder/judges/ksweep.py", "autograder/judges/reward_groups.py",
                  "autograder/judges/slips.py"),
}
# Data files (not modules) an assignment's judge reads, from the checkout root: the Gradescope
# zip copies them to the same paths; the handout holds only those of its student_template/<id>/
# (a hidden pool under autograder/ is never in it).
JUDGE_DATA = {
    "c_diagnose": ("student_template/c_diagnose/logs/run_*.npz",
                   "autograder/hidden_logs/c_diagnose/*.npz"),   # q7's pool: grading only
}
JUDGES = "autograder/judges/*.py"      # every judge module: each belongs to some assignment
PACKAGES = ("rlkit", "autograder", "instructor")


def source_files(root: Path) -> list[str]:
    """Every ``.py`` file of the packages, as posix paths relative to ``root``."""
    return sorted(p.relative_to(root).as_posix() for pkg in PACKAGES
                  for p in (root / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def _match(path: str, patterns, assignment_id: str) -> bool:
    return any(fnmatch.fnmatchcase(path, pat.replace("{id}", assignment_id)) for pat in patterns)


def student_files(root: Path, assignment_id: str) -> list[str]:
    """The package files of ``assignment_id``'s handout."""
    allowed = STUDENT + JUDGE_HELPERS.get(assignment_id, ())
    return [f for f in source_files(root) if _match(f, allowed, assignment_id)]


def gradescope_files(root: Path, assignment_id: str) -> list[str]:
    """The package files of ``assignment_id``'s Gradescope zip."""
    allowed = STUDENT + GRADESCOPE_ONLY + JUDGE_HELPERS.get(assignment_id, ())
    return [f for f in source_files(root) if _match(f, allowed, assignment_id)]


def judge_data_files(root: Path, assignment_id: str) -> list[str]:
    """The data files of ``JUDGE_DATA`` for ``assignment_id``, as posix paths from ``root``."""
    return sorted(p.relative_to(root).as_posix() for pat in JUDGE_DATA.get(assignment_id, ())
                  for p in root.glob(pat) if p.is_file())


def unclassified(root: Path, assignment_ids: list[str]) -> list[str]:
    """Source files in no class (for no assignment): each must be classified."""
    def classified(f: str) -> bool:
        if _match(f, GRADESCOPE_ONLY + INSTRUCTOR_ONLY, ""):
            return True
        return any(_match(f, STUDENT + JUDGE_HELPERS.get(a, ()), a) for a in assignment_ids)
    return [f for f in source_files(root) if not classified(f)]




# ----------------------------------------------------------------------------- the leak check
MIN_LINE = 20          # shorter lines are idioms ("return out", "for t in range(T):")
_TRIVIAL = ("import ", "from ", "#", "@", '"""', "'''", "def ", "class ", "raise NotImplementedError")


IDIOMS = frozenset({         # lines that say nothing of an answer, wherever they stand
    "rng = np.random.default_rng(seed)",
    "theta = np.asarray(theta, dtype=np.float64)",
    "x = np.asarray(x, dtype=np.int64)",
    "y = np.asarray(y, dtype=np.int64)",
    "actions = np.asarray(actions)",
    "rows = np.arange(ys.shape[0])[:, None]",
    "pi = softmax_policy(theta)",
})


def _norm(line: str) -> str:
    return " ".join(line.split())


def significant_lines(text: str) -> set[str]:
    """Normalised lines worth comparing: code or prose, not idioms."""
    out = set()
    for raw in text.splitlines():
        line = _norm(raw)
        if len(line) >= MIN_LINE and not line.startswith(_TRIVIAL):
            out.add(line)
    return out


def _text_of(path: Path) -> str:
    text = path.read_text(errors="replace")
    if path.suffix == ".ipynb":                     # the cells' sources, line by line
        import json
        try:
            cells = json.loads(text).get("cells", [])
            return "\n".join("".join(c.get("source", [])) for c in cells)
        except ValueError:
            return text
    return text


def leaks(stage: Path, assignment_id: str, root: Path) -> list[tuple[str, str, str]]:
    """Lines of the handout in ``stage`` that also stand in a reference solution
    (any assignment's) or in a Gradescope-only module (an oracle), and that
    the assignment's stubs do not already contain: ``(shipped file, line,
    where else)``."""
    forbidden: dict[str, str] = {}
    oracles = [f for f in source_files(root) if _match(f, GRADESCOPE_ONLY, "")]
    for f in oracles + sorted(
            p.relative_to(root).as_posix() for p in (root / "solutions").rglob("*.py")):
        for line in significant_lines((root / f).read_text()):
            forbidden.setdefault(line, f)
    from ..grading import config
    given = set()
    borrowed = config.load(assignment_id).borrowed
    for p in [*(root / "student_template" / assignment_id).rglob("*.py"),
              *(root / "student_template" / other / f for f, other in borrowed.items())]:
        given |= significant_lines(p.read_text())
    found = []
    for p in sorted(stage.rglob("*")):
        if not p.is_file() or p.suffix not in (".py", ".ipynb", ".toml", ".txt", ".md"):
            continue
        rel = p.relative_to(stage).as_posix()
        for line in sorted(significant_lines(_text_of(p)) - given - IDIOMS):
            if line in forbidden:
                found.append((rel, line, forbidden[line]))
    return found
