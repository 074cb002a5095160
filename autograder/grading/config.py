"""Read ``assignments/<id>/assignment.toml``: the single source of truth for an
assignment's submission files, questions, points, visibility, budgets,
seeds and bars."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Optional

from ..harness.sandbox import DEFAULT_MEMORY_MB
from ..paths import ASSIGNMENTS_DIR, read_toml

HIDDEN_TABLE = "hidden"   # [hidden]: hidden cases' inputs (seeds, salts); stripped from handouts
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


class ConfigError(ValueError):
    """assignment.toml is malformed."""


@dataclass(frozen=True)
class Question:
    """One graded question. ``budget_cpu_s`` is the worker's CPU budget."""
    name: str
    title: str
    points: float
    public: bool              # also runs in the notebook's grader.check
    visibility: str           # Gradescope visibility of its result
    budget_cpu_s: float
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Assignment:
    id: str
    title: str
    submission_files: tuple[str, ...]
    questions: tuple[Question, ...]
    params: dict[str, Any]
    path: Path
    hidden: dict[str, Any] = field(default_factory=dict)   # [hidden]; {} in a handout
    # [grading]: each default is declared here once; assignment.toml may override it.
    deadline_s: float = 540.0  # overall wall-clock deadline for one grading run
    wall_factor: float = 4.0   # wall-clock backstop = budget * wall_factor + wall_slack_s
    wall_slack_s: float = 5.0
    per_student: bool = False  # hidden instances drawn from the student id
    memory_mb: int = DEFAULT_MEMORY_MB   # worker address-space limit (MB)
    import_budget_s: float = 10.0   # CPU seconds for importing the submission

    @property
    def total_points(self) -> float:
        return sum(q.points for q in self.questions)

    def question(self, name: str) -> Question:
        for q in self.questions:
            if q.name == name:
                return q
        raise KeyError(f"{self.id} has no question {name!r}; "
                       f"it has {', '.join(q.name for q in self.questions)}")


def load(assignment_id: str, directory: Optional[Path] = None) -> Assignment:
    """Parse and validate ``assignment.toml`` of ``assignment_id`` (under
    ``directory``, default the checkout's ``assignments/``)."""
    path = Path(directory or ASSIGNMENTS_DIR) / assignment_id / "assignment.toml"
    if not path.is_file():
        known = available(directory)
        raise ConfigError(f"no assignment {assignment_id!r}; the assignments are: "
                          f"{', '.join(known) or '(none)'}")
    raw = read_toml(path)
    try:
        files = tuple(raw["submission"]["files"])
        grading = raw.get("grading", {})
        questions = []
        for q in raw["questions"]:
            vis = q.get("visibility", "visible" if q.get("public") else "after_published")
            if vis not in VISIBILITIES:
                raise ConfigError(f"{path}: question {q['name']}: visibility {vis!r} "
                                  f"is not one of {VISIBILITIES}")
            if float(q["points"]) < 0:
                raise ConfigError(f"{path}: question {q['name']}: negative points")
            questions.append(Question(
                name=q["name"], title=q.get("title", q["name"]), points=float(q["points"]),
                public=bool(q.get("public", False)), visibility=vis,
                budget_cpu_s=float(q["budget_cpu_s"]), params=dict(q.get("params", {}))))
    except KeyError as e:
        raise ConfigError(f"{path}: missing key {e}") from None
    names = [q.name for q in questions]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: duplicate question names")
    types = {f.name: f.type for f in fields(Assignment)}
    unknown = set(grading) - set(GRADING_KEYS)
    if unknown:
        raise ConfigError(f"{path}: [grading] has unknown keys {sorted(unknown)}; known: "
                          f"{', '.join(GRADING_KEYS)}")
    cast = {"float": float, "int": int, "bool": bool}
    assignment = Assignment(
        id=raw.get("id", assignment_id), title=raw.get("title", assignment_id),
        submission_files=files, questions=tuple(questions),
        params=dict(raw.get("params", {})), path=path,
        hidden=dict(raw.get(HIDDEN_TABLE, {})),
        **{k: cast[types[k]](v) for k, v in grading.items()})
    facts = handout_facts(assignment)
    return replace(assignment, questions=tuple(
        replace(q, title=fill_placeholders(q.title, facts, f"{path}: {q.name}'s title"))
        for q in assignment.questions))


GRADING_KEYS = ("deadline_s", "wall_factor", "wall_slack_s", "per_student", "memory_mb",
                "import_budget_s")


def handout_facts(assignment: Assignment) -> dict[str, Any]:
    """The numbers a handout's text may quote, by placeholder name: ``make
    dist`` fills ``{{name}}`` or ``{{name:.3f}}`` in the notebooks, and
    ``load`` in the question titles. ``params.<key>`` for every ``[params]`` entry (dotted into tables, e.g.
    ``params.hp.num_envs``) and ``count.<key>`` for a list in ``[params]`` or
    ``[hidden]``: its entries in both together (how many seeds are graded,
    say, without naming the hidden ones)."""
    facts: dict[str, Any] = {}

    def walk(prefix: str, table: dict) -> None:
        for key, value in table.items():
            if isinstance(value, dict):
                walk(f"{prefix}{key}.", value)
            else:
                facts[f"params.{prefix}{key}"] = value
    walk("", assignment.params)
    for key in {**assignment.params, **assignment.hidden}:
        lists = [t[key] for t in (assignment.params, assignment.hidden)
                 if isinstance(t.get(key), list)]
        if lists:
            facts[f"count.{key}"] = sum(len(v) for v in lists)
    return facts


PLACEHOLDER = re.compile(r"\{\{\s*([\w.]+)\s*(?::([^}]*))?\}\}")


def fill_placeholders(text: str, facts: dict[str, Any], where: str) -> str:
    """``{{params.bar}}`` -> its value in assignment.toml; ``{{name:fmt}}``
    formats it; a list prints as "1, 2, 3". An unknown name is an error."""
    def value(m: re.Match) -> str:
        name, fmt = m.group(1), m.group(2) or ""
        if name not in facts:
            raise ConfigError(f"{where}: {{{{{name}}}}} names nothing in assignment.toml "
                              f"(known: {', '.join(sorted(facts))})")
        v = facts[name]
        return ", ".join(format(x, fmt) for x in v) if isinstance(v, list) else format(v, fmt)
    return PLACEHOLDER.sub(value, text)


def available(directory: Optional[Path] = None) -> list[str]:
    """Assignment ids: the folders of ``directory`` (default ``assignments/``)
    that hold an assignment.toml, sorted."""
    base = Path(directory or ASSIGNMENTS_DIR)
    if not base.is_dir():
        return []
    return sorted(d.name for d in base.iterdir() if (d / "assignment.toml").is_file())
