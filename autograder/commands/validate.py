"""``python -m autograder validate [<id> ...] [--quick]``: after editing
points, seeds or bars in ``assignment.toml``, check that grading still
separates right from wrong:

* the reference (``solutions/<id>/``) gets full marks on every question; for
  questions with a bar, its measured values are printed against the bar
  (the margin an instructor has before the reference itself fails);
* the blank template (``student_template/<id>/``) gets zero, without crashing;
* every entry of the catalogue of wrong submissions
  (``autograder/catalogue/<id>.py``) loses points on each of its ``loses``
  questions.

``--quick`` leaves out slow questions for the catalogue: a question is slow
when its ``budget_cpu_s`` in assignment.toml is at least ``--slow-budget``
(default :data:`SLOW_BUDGET_S` = 20 s: the training loops, i.e. a_ppo's
``q7_bar``, d_grpo's ``q6_k_sweep`` and ``q7_clipped_sweep``, the exercises'
``ex3_k1_run``). A catalogue entry is then graded on its other ``loses``
questions only, and skipped when it loses only on slow ones. The reference
is always graded on every selected question (its margins to the bars are
what an edit of a bar needs to see), and so is the template.

Every grading runs in a process of its own, in parallel (``--jobs``), through
the same runner as ``grade-all``. Exit code 0: nothing broke; 1: something
broke (listed at the end); 2: nothing to validate or a usage error.
"""
from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Optional

from ..grading import config
from .runner import Job, default_jobs, run_jobs, timeout_for
from .tables import crashes, question_outcomes, read_results
from ..grading.status import Status
from ..paths import SOLUTIONS_DIR, TEMPLATE_DIR

SLOW_BUDGET_S = 20.0                       # --quick: questions at least this costly are slow
OWN_JOB_BUDGET_S = 20.0                    # the reference's questions this costly get a job each
CATALOGUE = "autograder.catalogue"


@dataclass
class Check:
    """One grading to run and what it must show."""
    assignment: str
    kind: str                              # reference | template | catalogue
    label: str
    files: Path                            # folder holding the submission files
    questions: list[str]
    loses: tuple[str, ...] = ()            # catalogue: must lose points on each
    cost: float = 0.0


@dataclass
class Outcome:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    counts: dict = field(default_factory=dict)


def load_catalogue(assignment_id: str) -> Optional[ModuleType]:
    """``autograder/catalogue/<id>.py``, or None when the assignment has none."""
    try:
        return importlib.import_module(f"{CATALOGUE}.{assignment_id}")
    except ModuleNotFoundError:
        return None


# ----------------------------------------------------------------------------- bars
def bar_report(measurements: dict) -> list[str]:
    """The reference's measured values against a bar, from the question's
    measurements (data the judge recorded, not its feedback text)."""
    m = measurements or {}
    if "bar" not in m:
        return []
    lines = []
    for name, text, op in (("min_success", "success of the K that must learn", ">="),
                           ("min_median", "median return", ">")):
        if name in m:
            lines.append(f"{text}: min {m[name]:.10g} vs bar {op} {m['bar']:g}: margin "
                         f"{m[name] - m['bar']:+.3g}")
    return lines


# ----------------------------------------------------------------------------- planning
def _copy_files(sources: list[Path], dest: Path) -> Optional[Path]:
    if not all(src.is_file() for src in sources):
        return None
    dest.mkdir(parents=True, exist_ok=True)
    for src in sources:
        shutil.copy(src, dest / src.name)
    return dest


def plan(assignment: config.Assignment, work: Path, *, quick: bool,
         questions: Optional[list[str]], catalogue: bool, out: Outcome,
         slow_budget_s: float = SLOW_BUDGET_S) -> list[Check]:
    a = assignment
    selected = [a.question(q) for q in questions] if questions else list(a.questions)
    names = [q.name for q in selected]
    budget = {q.name: q.budget_cpu_s for q in a.questions}
    slow = {q.name for q in a.questions if q.budget_cpu_s >= slow_budget_s}
    checks = []

    ref = _copy_files(a.sources(SOLUTIONS_DIR), work / a.id / "reference")
    if ref is None:
        out.notes.append(f"{a.id}: no reference in {SOLUTIONS_DIR / a.id} (e.g. an unpacked "
                         "Gradescope zip): the reference was not validated")
    else:
        # Costly questions get a job each (they run side by side), the rest one job.
        costly = [q for q in selected if q.budget_cpu_s >= OWN_JOB_BUDGET_S]
        cheap = [q.name for q in selected if q not in costly]
        for q in costly:
            checks.append(Check(a.id, "reference", f"reference/{q.name}", ref, [q.name],
                                cost=budget[q.name]))
        if cheap:
            checks.append(Check(a.id, "reference", "reference/" + "+".join(cheap)[:80], ref,
                                cheap, cost=sum(budget[q] for q in cheap)))
    tpl = _copy_files(a.sources(TEMPLATE_DIR), work / a.id / "template")
    if tpl is None:
        out.notes.append(f"{a.id}: no template in {TEMPLATE_DIR / a.id}: not validated")
    else:
        checks.append(Check(a.id, "template", "template", tpl, names, cost=1.0))

    if not catalogue:
        out.notes.append(f"{a.id}: catalogue not run (--no-catalogue)")
        return checks
    module = load_catalogue(a.id)
    if module is None:
        out.notes.append(f"{a.id}: no catalogue of wrong submissions ({CATALOGUE}.{a.id} "
                         "is absent): validated the reference and the template only")
        return checks
    if ref is None:
        out.notes.append(f"{a.id}: catalogue not run: it edits the reference, which is absent")
        return checks
    if quick and slow & set(names):
        out.notes.append(f"{a.id}: --quick: catalogue not graded on the slow questions "
                         f"{', '.join(sorted(slow & set(names)))} (budget_cpu_s >= "
                         f"{slow_budget_s:g}); the full validate grades them")
    skipped = []
    for wrong in module.WRONG:
        unknown = [q for q in wrong.loses if q not in budget]
        if unknown:
            out.problems.append(f"{a.id}: catalogue entry {wrong.name} names questions that "
                                f"assignment.toml does not have: {', '.join(unknown)}")
            continue
        graded = [q for q in wrong.loses if q in names and not (quick and q in slow)]
        if not graded:
            skipped.append(wrong.name)
            continue
        try:
            d = wrong.write(a.id, work / a.id / "catalogue" / wrong.name, a.submission_files)
        except (AssertionError, OSError) as e:
            out.problems.append(f"{a.id}: catalogue entry {wrong.name} no longer applies to the "
                                f"reference: {e}")
            continue
        checks.append(Check(a.id, "catalogue", wrong.name, d, graded, tuple(graded),
                            cost=sum(budget[q] for q in graded)))
    if skipped:
        why = (f"--quick: lose only on slow questions (budget_cpu_s >= {slow_budget_s:g}), "
               if quick else "") + "or only on questions not selected"
        out.notes.append(f"{a.id}: {len(skipped)} catalogue entries skipped ({why}): "
                         + ", ".join(skipped))
    return checks


# ----------------------------------------------------------------------------- judging
def judge(check: Check, data: Optional[dict], error: str, a: config.Assignment,
          out: Outcome) -> None:
    tag = f"{check.assignment}: {check.kind} {check.label}" if check.kind == "catalogue" \
        else f"{check.assignment}: {check.kind}"
    if error or not data or (data.get("extra_data") or {}).get("placeholder"):
        out.problems.append(f"{tag}: grading did not complete: {error or 'no results.json'}")
        return
    outcomes = question_outcomes(data)
    for name, q in outcomes.items():
        if q["status"] == Status.AUTOGRADER_FAULT:
            out.problems.append(f"{tag}: autograder fault on {name}: {q['output'][:300]}")
    for name in check.questions:
        if name not in outcomes:
            out.problems.append(f"{tag}: {name} missing from results.json")
            continue
        q = outcomes[name]
        score, maximum, output = q["score"], q["max_score"], q["output"]
        if check.kind == "reference":
            if score < maximum - 1e-9:
                out.problems.append(f"{tag} scores {score:g}/{maximum:g} on {name}:\n"
                                    + _indent(output))
            bars = bar_report(q["measurements"])
            if bars:
                out.notes.append(f"{check.assignment}: reference on {name}, measured vs bar:\n"
                                 + _indent("\n".join(bars)))
        elif check.kind == "template":
            if score > 0:
                out.problems.append(f"{tag} scores {score:g}/{maximum:g} on {name} "
                                    "(the blank template must get zero)")
        elif score >= maximum - 1e-9:
            out.problems.append(f"{tag} keeps full marks ({score:g}/{maximum:g}) on {name}, "
                                "where this mistake must lose points")
    if check.kind == "template":
        for name, line in crashes(data).items():
            out.problems.append(f"{tag} crashes on {name} (the blank template must grade "
                                f"without crashing): {line}")


def _indent(text: str, prefix: str = "      ") -> str:
    return "\n".join(prefix + l for l in text.splitlines())


def validate(assignment_ids: Optional[list[str]] = None, *, quick: bool = False,
             jobs: Optional[int] = None, assignments_dir: Optional[Path] = None,
             questions: Optional[list[str]] = None, catalogue: bool = True,
             keep: Optional[Path] = None, show_progress: bool = True,
             slow_budget_s: float = SLOW_BUDGET_S) -> int:
    directory = Path(assignments_dir).resolve() if assignments_dir else None
    ids = assignment_ids or config.available(directory)
    if not ids:
        print(f"validate: no assignment.toml under {directory or 'assignments/'}",
              file=sys.stderr)
        return 2
    out = Outcome()
    loaded: dict[str, config.Assignment] = {}
    if keep:
        work = Path(keep).resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="rlcap-validate-"))
    checks: list[Check] = []
    try:
        for aid in ids:
            try:
                a = config.load(aid, directory=directory)
            except config.ConfigError as e:
                out.problems.append(f"{aid}: {e}")
                continue
            try:
                from ..grading.expected import judge_module
                judged = set(judge_module(a.id).QUESTIONS)
            except ImportError as e:
                out.problems.append(f"{aid}: no judge: {e}")
                continue
            missing = [q.name for q in a.questions if q.name not in judged]
            if missing:
                out.problems.append(f"{aid}: assignment.toml has questions the judge does not "
                                    f"grade: {', '.join(missing)}")
                continue
            unread = config.missing_params(a)
            if unread:
                out.problems.append(f"{aid}: the judge reads [params] keys assignment.toml "
                                    f"lacks: {'; '.join(unread)}")
                continue
            try:
                checks += plan(a, work, quick=quick, questions=questions, catalogue=catalogue,
                               out=out, slow_budget_s=slow_budget_s)
            except KeyError as e:
                print(f"validate: {e.args[0]}", file=sys.stderr)
                return 2
            loaded[a.id] = a
        jobs_by_key: dict[str, tuple[Check, Job]] = {}
        for i, c in enumerate(checks):
            key = f"{i:03d}"
            res = work / "results" / f"{key}-{c.assignment}-{c.label.replace('/', '-')}"
            jobs_by_key[key] = (c, Job(key, c.assignment, c.files, res / "results.json",
                                       res / "grade.log", timeout_for(loaded[c.assignment]),
                                       questions=c.questions, assignments_dir=directory,
                                       cost=c.cost))
        n = jobs or default_jobs()
        if loaded:
            print(f"validating {', '.join(loaded)}: {len(checks)} gradings, {n} at a time"
                  + (" (quick)" if quick else ""), file=sys.stderr, flush=True)
        t0 = time.monotonic()
        finished = run_jobs([j for _, j in jobs_by_key.values()], n)
        if show_progress and checks:
            from rlkit.progress import progress
            finished = progress(finished, desc="validate", total=len(checks))
        for done in finished:
            c, job = jobs_by_key[done.job.key]
            judge(c, read_results(job.results), done.error, loaded[c.assignment], out)
            out.counts[c.kind] = out.counts.get(c.kind, 0) + 1
        elapsed = time.monotonic() - t0
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)

    for note in sorted(out.notes, key=lambda n: n.split(":")[0]):
        print(f"note: {note}")
    if not loaded and out.problems:          # nothing to validate: say why, and only that
        print(f"BROKEN: {len(out.problems)} problem(s)")
        for p in out.problems:
            print(f"  - {p}")
        return 1
    done_text = ", ".join(f"{v} {k}" for k, v in sorted(out.counts.items()))
    print(f"\nvalidated {', '.join(loaded) or 'nothing'} ({done_text or 'no gradings'}) "
          f"in {elapsed:.1f} s")
    if out.problems:
        print(f"\nBROKEN: {len(out.problems)} problem(s)")
        kinds = ("reference", "template")
        for p in sorted(out.problems, key=lambda t: (t.split(":")[0], next(
                (i for i, k in enumerate(kinds) if t.split(":", 1)[-1].strip().startswith(k)),
                len(kinds)))):
            print(f"  - {p}")
        return 1
    if not checks:
        print("nothing was graded")
        return 2
    print("OK: reference full marks, template zero, every catalogued mistake loses points")
    return 0
