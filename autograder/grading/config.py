"""Read ``assignments/<id>/assignment.toml``: the single source of truth for an
assignment's submission files, questions, points, visibility, budgets,
seeds and bars."""
from __future__ import annotations

import builtins
import copy
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Optional

from ..harness.limits import DEFAULT_MEMORY_MB
from ..paths import ASSIGNMENTS_DIR, PACKAGE_DIR, read_toml

HIDDEN_TABLE = "hidden"   # [hidden]: hidden cases' inputs (seeds, salts); stripped from handouts
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


class ConfigError(ValueError):
    """assignment.toml is malformed."""


# ----------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class CaseField:
    """One field a case may declare: its type ("int", "float", "str", "bool",
    "list" or "table"), its default (``REQUIRED``: none) and what it means."""
    type: str
    default: Any
    description: str


REQUIRED = object()

# Every field a ``[[questions.cases]]`` entry may hold, declared once. A judge reads the
# ones its question uses (``case.seed``, ``case.K``); an unknown or missing key stops
# ``config.load`` (and so ``make dist`` and ``validate``) with its name.
CASE_FIELDS: dict[str, CaseField] = {
    "name": CaseField("str", REQUIRED, "the case's name: part of its key, never shown for a "
                      "hidden case"),
    "hidden": CaseField("bool", False, "true: only on Gradescope, stripped from the handout, "
                        "run in a worker of its own after every public case"),
    "group": CaseField("str", "", "which of the question's lists of cases it belongs to"),
    "description": CaseField("str", "", "one line for instructors (grade --reveal)"),
    "draw": CaseField("table", {}, "drawn per submission, hidden cases only: {field = [lo, hi]}, "
                      "inclusive integers, or a uniform float when a bound is a float; a "
                      "hidden case's seed is always drawn"),
    "seed": CaseField("int", None, "seeds the judge's generator of the case's inputs"),
    "stream": CaseField("str", "", "instead of a seed: a named public generator (sha256 of "
                        "'public/<stream>'), which public cases of one question may share, "
                        "drawn in declaration order"),
    "kind": CaseField("str", "", "how the inputs are made (e.g. normal, binary, dyadic)"),
    "rewards": CaseField("list", None, "literal rewards (G, K), when the case spells them out"),
    "P": CaseField("int", None, "rows: prompts or reward groups"),
    "K": CaseField("int", None, "group size: responses per prompt"),
    "V": CaseField("int", None, "candidate responses per prompt"),
    "T": CaseField("int", None, "rollout length in steps per environment"),
    "N": CaseField("int", None, "parallel environments"),
    "B": CaseField("int", None, "batch size (samples)"),
    "A": CaseField("int", None, "number of actions"),
    "time_limit": CaseField("int", None, "episode time limit (steps) of the judge's CartPole"),
    "last_step": CaseField("list", None, "episode ends (\"terminated\", \"truncated\") a "
                           "rollout must have on its last step, in some environment"),
    "updates": CaseField("int", None, "training updates"),
    "eps": CaseField("float", None, "clip half-width"),
    "beta": CaseField("float", None, "KL coefficient"),
    "gamma": CaseField("float", None, "discount"),
    "lam": CaseField("float", None, "GAE lambda"),
    "loc": CaseField("float", None, "mean of drawn numbers"),
    "scale": CaseField("float", None, "standard deviation (or scale) of drawn numbers"),
    "spread": CaseField("float", None, "size of a random move away from a point"),
    "p": CaseField("float", None, "probability of a 1 in drawn binary numbers"),
    "switches": CaseField("list", None, "switches (names) turned on for the case"),
    "shows": CaseField("list", None, "slips (names) a drawn case must show: the judge draws "
                       "until the answer with each of them differs from the right one"),
    "agent": CaseField("str", "", "which agent or log the case is about"),
    "fault": CaseField("str", "", "the fault a case shows (answer keys live in [hidden])"),
    "severity": CaseField("float", None, "how strong a case's fault is"),
    "values": CaseField("list", None, "literal numbers the case is made of"),
    "cell": CaseField("int", None, "a cell of the student's own table, by its place in the "
                      "table's row order"),
}
_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,),
          "list": (list,), "table": (dict,)}


@dataclass(frozen=True)
class Case:
    """One declared case of a question: its identity (``name``, ``group``,
    ``hidden``) and its inputs (every other field of :data:`CASE_FIELDS`,
    defaults filled in, in ``table``), read as attributes: ``case.seed``,
    ``case.K``, ``case.values`` (the field named "values").
    ``label`` is what feedback calls it: the name for a public case, "hidden
    case i of n" (its place among the question's hidden cases) for a hidden one."""
    question: str
    name: str
    hidden: bool
    group: str
    description: str
    label: str
    table: dict = field(default_factory=dict, compare=False)   # its input fields, by name
    draw: dict = field(default_factory=dict, compare=False)
    per_student: bool = False      # drawn for one student (resolved from ``draw``)
    hidden_index: int = 0          # a hidden case's place (1 ..) among its question's hidden cases
    hidden_count: int = 0          # ... and how many there are

    def __getattr__(self, name: str) -> Any:
        table = self.__dict__.get("table", {})
        if name in table:
            return table[name]
        raise AttributeError(f"case {self.__dict__.get('name')!r} has no field {name!r}")

    def get(self, name: str, default: Any = None) -> Any:
        value = self.table.get(name)
        return default if value is None else value

    def resolved(self, rng) -> "Case":
        """This case with its ``draw`` fields drawn from ``rng`` (a student's
        instance generator); the same case when it draws nothing."""
        if not self.draw:
            return self
        values = dict(self.table)
        for key in sorted(self.draw):
            lo, hi = self.draw[key]
            if isinstance(lo, float) or isinstance(hi, float):
                values[key] = float(rng.uniform(lo, hi))
            else:
                values[key] = int(rng.integers(lo, hi + 1))
        return replace(self, table=values, per_student=True)


def _case(path: Path, question: str, raw: Any, index: int) -> dict:
    """A raw case table, validated against :data:`CASE_FIELDS`, defaults filled."""
    where = f"{path}: question {question}, case {index + 1}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a case is a table")
    unknown = sorted(set(raw) - set(CASE_FIELDS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; the case fields are "
                          f"{', '.join(CASE_FIELDS)} (autograder/grading/config.py)")
    out = {}
    for key, spec in CASE_FIELDS.items():
        if key not in raw:
            if spec.default is REQUIRED:
                raise ConfigError(f"{where}: missing key {key!r} ({spec.description})")
            out[key] = copy.deepcopy(spec.default)
            continue
        value = raw[key]
        ok = isinstance(value, _TYPES[spec.type]) and not (
            spec.type in ("int", "float") and isinstance(value, bool))
        if not ok:
            raise ConfigError(f"{where}: {key} = {value!r} is not of type {spec.type} "
                              f"({spec.description})")
        out[key] = float(value) if spec.type == "float" else value
    for key, bounds in out["draw"].items():
        if key not in CASE_FIELDS or CASE_FIELDS[key].type not in ("int", "float"):
            raise ConfigError(f"{where}: draw.{key}: only numeric case fields can be drawn")
        if not (isinstance(bounds, list) and len(bounds) == 2
                and all(isinstance(b, (int, float)) for b in bounds) and bounds[0] <= bounds[1]):
            raise ConfigError(f"{where}: draw.{key} = {bounds!r}: expected [lo, hi], lo <= hi")
    if out["draw"] and not out["hidden"]:
        raise ConfigError(f"{where}: only a hidden case may draw (a public case is the same "
                          "for everyone)")
    if out["hidden"] and out["seed"] is not None and "seed" not in out["draw"] \
            and not out["agent"]:
        raise ConfigError(f"{where}: a hidden case's inputs are drawn per submission: write "
                          "draw = { seed = [lo, hi] } instead of a fixed seed (only a case "
                          "about a stored agent's log keeps the seed it names)")
    return out


def _cases(path: Path, question: str, raws: Any) -> tuple[Case, ...]:
    if not isinstance(raws, list):
        raise ConfigError(f"{path}: question {question}: cases is a list of tables")
    tables = [_case(path, question, raw, i) for i, raw in enumerate(raws)]
    seen = set()
    for t in tables:
        ident = (t["group"], t["name"])
        if ident in seen:
            raise ConfigError(f"{path}: question {question}: two cases named {t['name']!r} "
                              f"in group {t['group']!r}")
        seen.add(ident)
    hidden = [t for t in tables if t["hidden"]]
    identity = ("name", "hidden", "group", "description", "draw")
    cases = []
    for t in tables:
        label = (f"hidden case {hidden.index(t) + 1} of {len(hidden)}" if t["hidden"]
                 else t["name"])
        cases.append(Case(question, t["name"], t["hidden"], t["group"], t["description"], label,
                          {k: v for k, v in t.items() if k not in identity}, dict(t["draw"]),
                          hidden_index=hidden.index(t) + 1 if t["hidden"] else 0,
                          hidden_count=len(hidden)))
    return tuple(cases)


# ----------------------------------------------------------------------------- parts
EACH = ("", "case", "item")


@dataclass(frozen=True)
class PartSpec:
    """One scored part of a question, declared in assignment.toml
    (``[[questions.parts]]``): its stable ``id`` (results, the class report and
    the catalogue name it; the ``title`` may be reworded without changing a
    grade), its ``points`` (the question's points are their sum), the part it
    ``requires`` (it earns its points only once that one passed: "nothing
    changed" answers earn points only beside a non-zero one), the case groups
    it runs (``cases``), and:

    * ``each = "case"``: one part per case of those groups, the points split
      equally among them (a bar per training run, a diagnosis per log);
      ``each = "item"``: one part per item the judge names (``count`` of
      them, e.g. the switches a student chose), points split equally;
    * ``uses``: questions whose functions it runs (a bar trained with the
      pieces of other questions): where it fails while one of those lost
      points, its feedback names that question first (``grading.cascade``)."""
    id: str
    title: str
    points: float
    requires: str = ""
    cases: tuple[str, ...] = ("",)
    each: str = ""
    count: int = 0
    uses: tuple[str, ...] = ()


PART_KEYS = ("id", "title", "points", "requires", "cases", "each", "count", "uses")
PART_ID = re.compile(r"^[a-z0-9][a-z0-9_]*$")


def _parts(path: Path, q: dict) -> tuple[PartSpec, ...]:
    """A question's ``[[questions.parts]]``, validated."""
    where = f"{path}: question {q['name']}"
    raws = q.get("parts", [])
    if not isinstance(raws, list):
        raise ConfigError(f"{where}: parts is a list of tables")
    parts = []
    for i, raw in enumerate(raws):
        unknown = sorted(set(raw) - set(PART_KEYS)) if isinstance(raw, dict) else ["?"]
        if unknown:
            raise ConfigError(f"{where}, part {i + 1}: unknown key(s) {unknown}; known: "
                              f"{', '.join(PART_KEYS)}")
        try:
            spec = PartSpec(id=raw["id"], title=raw["title"], points=float(raw["points"]),
                            requires=raw.get("requires", ""),
                            cases=tuple(raw.get("cases", [""])), each=raw.get("each", ""),
                            count=int(raw.get("count", 0)), uses=tuple(raw.get("uses", [])))
        except KeyError as e:
            raise ConfigError(f"{where}, part {i + 1}: missing key {e}") from None
        if not (isinstance(spec.id, str) and PART_ID.match(spec.id)):
            raise ConfigError(f"{where}: part id {spec.id!r} is not a lower-case name "
                              "(letters, digits, _)")
        if spec.points < 0 or spec.each not in EACH or (spec.each == "item") != (spec.count > 0):
            raise ConfigError(f"{where}, part {spec.id}: points >= 0, each one of {EACH}, and "
                              "count > 0 exactly for each = \"item\"")
        parts.append(spec)
    ids = [p.id for p in parts]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"{where}: two parts with one id")
    for p in parts:
        if p.requires and (p.requires not in ids or p.requires == p.id):
            raise ConfigError(f"{where}, part {p.id}: requires {p.requires!r}, which is not "
                              "another part of the question")
    return tuple(parts)


@dataclass(frozen=True)
class Question:
    """One graded question. ``budget_cpu_s`` is the worker's CPU budget;
    ``cases`` its declared cases (the handout's toml holds the public ones);
    ``parts`` its scored parts (:class:`PartSpec`); ``functions`` the
    submission's functions whose own checks it holds (a failure of one of them
    elsewhere is named as this question's: ``grading.cascade``); ``hand``: a
    written answer carried to the results for grading by hand (0 points here);
    ``record``: the reference's answers are recorded (False for a bar, judged
    against its own numbers); ``pad_hidden``: its hidden phase always lasts its
    whole wall-clock limit (no hidden case's handling time shows in a time
    reported to the student)."""
    name: str
    title: str
    points: float
    public: bool              # also runs in the notebook's grader.check
    visibility: str           # Gradescope visibility of its result
    budget_cpu_s: float
    params: dict[str, Any] = field(default_factory=dict)
    cases: tuple[Case, ...] = ()
    parts: tuple[PartSpec, ...] = ()
    functions: tuple[str, ...] = ()
    hand: bool = False
    record: bool = True
    pad_hidden: bool = False

    @property
    def has_hidden_cases(self) -> bool:
        return any(c.hidden for c in self.cases)

    def part(self, part_id: str) -> PartSpec:
        for p in self.parts:
            if p.id == part_id:
                return p
        raise KeyError(f"{self.name} declares no part {part_id!r} (assignment.toml: "
                       f"{', '.join(p.id for p in self.parts) or 'no parts'})")

    def cases_of(self, part: PartSpec, public_only: bool = False) -> list:
        """The declared cases of ``part``'s groups (public ones only, if asked)."""
        return [c for c in self.cases if c.group in part.cases
                and not (public_only and c.hidden)]


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
    per_student: bool = False  # declared: the id matters beyond hidden draws (C's letters)
    memory_mb: int = DEFAULT_MEMORY_MB   # worker address-space limit (MB)
    import_budget_s: float = 10.0   # CPU seconds for importing the submission
    # graded under the stated numerics of autograder/numerics.py (the judge's own runs are
    # graded: the same numbers on every machine of a platform)
    stated_numerics: bool = False
    # [submission] exceptions: builtin exception classes the stubs tell students to raise; the
    # only exception types a hidden case's feedback may name.
    shown_exceptions: tuple[str, ...] = ("NotImplementedError",)
    # [submission] borrowed: submission file -> the assignment whose stub and reference it is
    # (capstone B's ppo.py is capstone A's): kept once, in that assignment's folders.
    borrowed: dict[str, str] = field(default_factory=dict)

    def source(self, base: Path, filename: str) -> Path:
        """Where submission file ``filename`` lives under ``base``, the
        references' ``solutions/`` or the stubs' ``student_template/``:
        ``base/<id>/filename``, or the lending assignment's folder for a
        borrowed file."""
        return Path(base) / self.borrowed.get(filename, self.id) / filename

    def sources(self, base: Path) -> list[Path]:
        """:meth:`source` of every submission file, in ``submission_files`` order."""
        return [self.source(base, f) for f in self.submission_files]

    @property
    def needs_student_id(self) -> bool:
        """Whether a grading needs the student's id: it has hidden cases (every
        hidden instance is drawn per submission, keyed by the salt, the id and
        the submission's digest: ``Context.instance_rng``), or ``[grading]
        per_student`` says so (what a student is told to compute: capstone
        C's letters)."""
        return self.per_student or any(c.hidden for q in self.questions for c in q.cases)

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
        shown = ("NotImplementedError",) + tuple(
            e for e in raw["submission"].get("exceptions", []) if e != "NotImplementedError")
        for e in shown:
            if not (isinstance(getattr(builtins, e, None), type)
                    and issubclass(getattr(builtins, e), BaseException)):
                raise ConfigError(f"{path}: [submission] exceptions: {e!r} is not a builtin "
                                  "exception class")
        borrowed = dict(raw["submission"].get("borrowed", {}))
        if not set(borrowed) <= set(files) or assignment_id in borrowed.values():
            raise ConfigError(f"{path}: [submission] borrowed must map submission files to "
                              "other assignments")
        grading = raw.get("grading", {})
        questions = []
        for q in raw["questions"]:
            unknown_q = sorted(set(q) - set(QUESTION_KEYS))
            if unknown_q:
                raise ConfigError(f"{path}: question {q.get('name', '?')}: unknown key(s) "
                                  f"{unknown_q}; known: {', '.join(QUESTION_KEYS)}")
            vis = q.get("visibility", "visible" if q.get("public") else "after_published")
            if vis not in VISIBILITIES:
                raise ConfigError(f"{path}: question {q['name']}: visibility {vis!r} "
                                  f"is not one of {VISIBILITIES}")
            if float(q["points"]) < 0:
                raise ConfigError(f"{path}: question {q['name']}: negative points")
            parts = _parts(path, q)
            hand = bool(q.get("hand", False))
            if hand and (parts or float(q["points"]) != 0):
                raise ConfigError(f"{path}: question {q['name']}: a hand-graded question has "
                                  "no parts and 0 points here")
            if not hand and not parts:
                raise ConfigError(f"{path}: question {q['name']}: declare its scored parts "
                                  "([[questions.parts]]), or hand = true")
            if parts and abs(sum(p.points for p in parts) - float(q["points"])) > 1e-9:
                raise ConfigError(f"{path}: question {q['name']}: its parts' points add up to "
                                  f"{sum(p.points for p in parts):g}, not its points "
                                  f"{float(q['points']):g}")
            questions.append(Question(
                name=q["name"], title=q.get("title", q["name"]), points=float(q["points"]),
                public=bool(q.get("public", False)), visibility=vis,
                budget_cpu_s=float(q["budget_cpu_s"]), params=dict(q.get("params", {})),
                cases=_cases(path, q["name"], q.get("cases", [])), parts=parts,
                functions=tuple(q.get("functions", [])), hand=hand,
                record=bool(q.get("record", True)), pad_hidden=bool(q.get("pad_hidden", False))))
    except KeyError as e:
        raise ConfigError(f"{path}: missing key {e}") from None
    names = [q.name for q in questions]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: duplicate question names")
    by_name = {q.name: q for q in questions}
    for i, q in enumerate(raw["questions"]):
        source = q.get("cases_from")
        if source is None:
            continue
        if source not in by_name or "cases" in q or by_name[source].cases == ():
            raise ConfigError(f"{path}: question {q['name']}: cases_from = {source!r} names no "
                              "question with cases of its own (and a question takes cases from "
                              "one place only)")
        questions[i] = replace(questions[i], cases=tuple(
            replace(c, question=q["name"]) for c in by_name[source].cases))
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
        hidden=dict(raw.get(HIDDEN_TABLE, {})), shown_exceptions=shown, borrowed=borrowed,
        **{k: cast[types[k]](v) for k, v in grading.items()})
    for q in questions:
        for p in q.parts:
            unknown = [u for u in p.uses if u not in by_name or u == q.name]
            if unknown:
                raise ConfigError(f"{path}: question {q.name}, part {p.id}: uses {unknown}, "
                                  "which are not other questions")
            # A handout's toml (no [hidden]) lacks the hidden cases, hence maybe whole groups.
            # In the full toml a part's groups hold cases, or it declares none (cases = []):
            # a part whose cases never run would be scored by nothing.
            groups = {c.group for c in q.cases}
            if HIDDEN_TABLE in raw and not set(p.cases) <= groups:
                raise ConfigError(f"{path}: question {q.name}, part {p.id}: case group(s) "
                                  f"{sorted(set(p.cases) - groups)} hold no case (a part "
                                  "judged without cases declares cases = [])")
    facts = handout_facts(assignment)
    where = f"{path}: question"
    return replace(assignment, questions=tuple(
        replace(q, title=fill_placeholders(q.title, facts, f"{where} {q.name}'s title"),
                parts=tuple(replace(p, title=fill_placeholders(
                    p.title, facts, f"{where} {q.name}, part {p.id}'s title")) for p in q.parts))
        for q in assignment.questions))


QUESTION_KEYS = ("name", "title", "points", "public", "visibility", "budget_cpu_s", "params",
                 "cases", "cases_from", "parts", "functions", "hand", "record", "pad_hidden")
GRADING_KEYS = ("deadline_s", "wall_factor", "wall_slack_s", "per_student", "memory_mb",
                "import_budget_s", "stated_numerics")


def handout_facts(assignment: Assignment) -> dict[str, Any]:
    """The numbers a handout's text may quote, by placeholder name: ``make
    dist`` fills ``{{name}}`` or ``{{name:.3f}}`` in the notebooks, and
    ``load`` in the question titles. ``params.<key>`` for every ``[params]`` entry (dotted into tables, e.g.
    ``params.hp.num_envs``), ``count.<key>`` for a list in ``[params]`` or
    ``[hidden]``: its entries in both together; ``count.cases.<question>``
    (and ``count.cases.<question>.<group>``): how many cases it has, hidden ones
    included (how many seeds are graded, say, without naming the hidden ones);
    ``public.<question>.<field>`` (and ``public.<question>.<group>.<field>``):
    the field's values over the question's public cases."""
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
    for q in assignment.questions:
        for group in sorted({c.group for c in q.cases}):
            name = q.name + (f".{group}" if group else "")
            mine = [c for c in q.cases if c.group == group]
            facts[f"count.cases.{name}"] = len(mine)
            for key in CASE_FIELDS:
                values = [c.table[key] for c in mine if not c.hidden and key in c.table
                          and c.table[key] is not None]
                if values:
                    facts[f"public.{name}.{key}"] = values
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


# ----------------------------------------------------------------------------- what judges read
def params_read_by_judge(assignment_id: str) -> dict[str, list[str]]:
    """{``[params]`` key: [where]} for every key the assignment's judge (and the
    judge modules it imports) reads as ``ctx.params["key"]`` or through a name
    bound to ``ctx.params`` (``p = ctx.params``). A static reading of the source:
    ``make dist`` and ``validate`` compare it with assignment.toml, so that a
    missing key stops them with its name instead of faulting at grading time."""
    import ast
    judges = PACKAGE_DIR / "judges"
    seen: dict[str, list[str]] = {}
    todo, done = [judges / f"{assignment_id}.py"], set()
    while todo:
        path = todo.pop()
        if path in done or not path.is_file():
            continue
        done.add(path)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
                todo += [judges / f"{n}.py" for n in names if n]
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda))]:
            aliases = {"params"}
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign):
                    pairs = [(node.targets[0], node.value)]
                    if isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs = list(zip(node.targets[0].elts, node.value.elts))
                    for target, value in pairs:
                        if (isinstance(target, ast.Name) and isinstance(value, ast.Attribute)
                                and value.attr == "params"):
                            aliases.add(target.id)
            for node in ast.walk(fn):
                if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                        and isinstance(node.slice.value, str)):
                    continue
                base = node.value
                if (isinstance(base, ast.Attribute) and base.attr == "params") or (
                        isinstance(base, ast.Name) and base.id in aliases - {"params"}):
                    seen.setdefault(node.slice.value, []).append(
                        f"{path.name}:{node.lineno}")
    return seen


def missing_params(assignment: Assignment) -> list[str]:
    """``[params]`` keys the judge reads that assignment.toml lacks, with where."""
    return [f"{key} (read at {', '.join(sorted(set(where))[:3])})"
            for key, where in sorted(params_read_by_judge(assignment.id).items())
            if key not in assignment.params]
