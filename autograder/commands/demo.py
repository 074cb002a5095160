"""``make demo``: build every handout and Gradescope zip, grade the reference
and the blank template of every assignment through the Gradescope zip's own
run_autograder (as Gradescope would, with solutions/ out of sight), print
one table; draw the course figures; grade a synthetic class of two
assignments with ``grade-all`` (:mod:`.synthetic`: the catalogue's mistakes
and correct styles, blanks, near-copies); then say what was built where
(stdout's last lines) and how long it took. Progress goes to stderr, one line
per step (in a log, a progress bar is a line per 10 %)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from ..grading import config
from .dist import build
from ..paths import DIST_DIR, ROOT, SOLUTIONS_DIR, TEMPLATE_DIR

# Assignments whose synthetic class the demo grades, on their quick questions (budget_cpu_s below
# validate's SLOW_BUDGET_S: A's bar and D's sweeps train for tens of seconds per submission).
CLASS_DEMOS = ("a_ppo", "d_grpo")
DEMO_MINUTES = "9 minutes"      # quiet: 8.6 measured (docs/measured.md)


def run_gradescope_zip(zip_path: Path, submission_files: list[Path],
                       python: str = sys.executable, metadata: dict | None = None,
                       questions: tuple[str, ...] | list[str] = (),
                       show_progress: bool = False) -> dict:
    """Unpack ``zip_path`` into a fresh AUTOGRADER_ROOT, put the files in
    submission/ (and ``metadata`` as submission_metadata.json), run
    ``run_autograder`` with ``python`` and return results.json. ``questions``:
    grade only these (tests); ``show_progress``: let the grader's progress lines
    (a line per question, and per case in long ones) through to stderr."""
    root = Path(tempfile.mkdtemp(prefix="rlcap-gs-"))
    try:
        (root / "submission").mkdir()
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall(root / "source")
        for script in ("run_autograder", "setup.sh"):
            (root / "source" / script).chmod(0o755)
        for f in submission_files:
            shutil.copy(f, root / "submission" / f.name)
        if metadata is not None:
            (root / "submission_metadata.json").write_text(json.dumps(metadata))
        env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=python)
        env.pop("RLCAP_QUESTIONS", None)
        if questions:
            env["RLCAP_QUESTIONS"] = ",".join(questions)
        subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, check=True,
                       stdout=subprocess.DEVNULL,
                       stderr=None if show_progress else subprocess.DEVNULL)
        return json.loads((root / "results" / "results.json").read_text())
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_prairielearn_job(pl_dir: Path, question: str, submission_files: list[Path],
                         python: str = sys.executable, data: dict | None = None,
                         questions: tuple[str, ...] | list[str] = (),
                         env: dict | None = None, keep: Path | None = None,
                         log: Path | None = None) -> dict:
    """Lay out a job as PrairieLearn does (its docs, "The Grading Process"): a
    fresh root (mode 0755, like /grade) holding ``serverFilesCourse/`` (and
    its deprecated copy ``shared/``) with the paths the question's info.json
    lists, the question's ``tests/``, ``student/`` and ``data/data.json``
    (``data``, default a variant seed); run info.json's entrypoint with
    ``RLCAP_PL_ROOT`` pointing there and return results.json. ``question``:
    the folder name under ``pl_dir/questions/rlcap/``; ``keep``: lay the job
    out there (tests that look at it afterwards) instead of a temporary folder;
    ``log``: write the entry point's output there (PrairieLearn's job log)."""
    qdir = Path(pl_dir) / "questions" / "rlcap" / question
    options = json.loads((qdir / "info.json").read_text())["externalGradingOptions"]
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="rlcap-pl-"))
    try:
        root.mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        for top in ("serverFilesCourse", "shared"):
            for listed in options["serverFilesCourse"]:
                shutil.copytree(Path(pl_dir) / "serverFilesCourse" / listed, root / top / listed)
        shutil.copytree(qdir / "tests", root / "tests")
        (root / "student").mkdir()
        for f in submission_files:
            shutil.copy(f, root / "student" / Path(f).name)
        (root / "data").mkdir()
        (root / "data" / "data.json").write_text(json.dumps(
            data if data is not None else {"params": {}, "variant_seed": 1815}))
        entry = options["entrypoint"].replace("/grade/", f"{root}/", 1)
        run_env = dict(os.environ, RLCAP_PL_ROOT=str(root), AUTOGRADER_PYTHON=python,
                       **(env or {}))
        run_env.pop("RLCAP_QUESTIONS", None)
        if questions:
            run_env["RLCAP_QUESTIONS"] = ",".join(questions)
        with open(log or os.devnull, "wb") as out:
            subprocess.run(["bash", entry], env=run_env, check=True, stdout=out,
                           stderr=subprocess.STDOUT)
        return json.loads((root / "results" / "results.json").read_text())
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _shown(path: Path) -> str:
    """``path`` relative to the checkout where it lies inside it."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.resolve().is_relative_to(ROOT) else str(path)


def _say(line: str) -> None:
    """A progress line (stderr): one per step, in order, fit for a log."""
    print(line, file=sys.stderr, flush=True)


def demo() -> int:
    """Build, grade as Gradescope does, draw the figures, grade two synthetic
    classes; then say what was built where (stdout), and how long it took."""
    t_start = time.monotonic()
    ids = config.available()
    _say(f"make demo: builds the handout, Gradescope zip and PrairieLearn questions of "
         f"{len(ids)} assignments ({', '.join(ids)}), grades each reference and blank "
         f"template through its Gradescope zip, draws the course figures and grades two "
         f"synthetic classes ({', '.join(CLASS_DEMOS)}); about {DEMO_MINUTES} on a quiet "
         "2-core machine")
    rows, built = [], []
    for n, a in enumerate(ids, 1):
        assignment = config.load(a)
        t0 = time.monotonic()
        student_zip, gs_zip = build(a)
        built.append((a, student_zip, gs_zip, DIST_DIR / "prairielearn" / a))
        _say(f"[{n}/{len(ids)}] {a}: built {_shown(student_zip)}, {_shown(gs_zip)} and "
             f"{_shown(DIST_DIR / 'prairielearn' / a)}/ ({time.monotonic() - t0:.0f} s)")
        for label, base in (("reference", SOLUTIONS_DIR), ("blank template", TEMPLATE_DIR)):
            files = assignment.sources(base)
            _say(f"[{n}/{len(ids)}] {a}: grading the {label} with {_shown(gs_zip)}'s "
                 "run_autograder (solutions/ out of sight) ...")
            t0 = time.monotonic()
            res = run_gradescope_zip(gs_zip, files, show_progress=True)
            _say(f"[{n}/{len(ids)}] {a}: the {label} scores {res['score']:g}/"
                 f"{assignment.total_points:g} ({time.monotonic() - t0:.0f} s)")
            rows.append((a, label, res["score"], assignment.total_points,
                         res.get("execution_time", 0.0)))
    print(f"\n{'assignment':<12} {'submission':<15} {'score':>13} {'time':>7}")
    for a, label, score, total, secs in rows:
        print(f"{a:<12} {label:<15} {score:6.2f}/{total:<6g} {secs:6.1f}s")
    ok = all((score == total) if label == "reference" else (score == 0)
             for _, label, score, total, _ in rows)
    print("\nreference full marks and blank template zero:", "yes" if ok else "NO")
    _say("figures: the course's figures from the reference solutions ...")
    from instructor.figures import make_figures
    figures = make_figures()            # dist/figures/*.png, each with its data beside it
    reports = demo_classes()
    print(built_summary(built, figures, reports, time.monotonic() - t_start))
    return 0 if ok else 1


def built_summary(built: list, figures: list, reports: dict, seconds: float) -> str:
    """What ``make demo`` built and where, for an instructor (stdout's last lines)."""
    lines = ["", f"built and checked in {seconds / 60:.1f} min:"]
    lines.append("  handouts (give one to your students; each has its own README.md):")
    lines += [f"    {_shown(s)}" for _, s, _, _ in built]
    lines.append("  Gradescope autograders (a Programming Assignment: upload as its autograder, "
                 "Ubuntu 22.04 image):")
    lines += [f"    {_shown(g)}" for _, _, g, _ in built]
    lines.append("  PrairieLearn questions (copy questions/ and serverFilesCourse/ into your "
                 "course: docs/prairielearn.md):")
    lines += [f"    {_shown(p)}/" for _, _, _, p in built]
    if figures:
        lines.append(f"  course figures (PNG, each with its numbers in a JSON beside it): "
                     f"{_shown(Path(figures[0]).parent)}/")
    lines.append("  class reports of the synthetic classes (open in a browser; one "
                 "self-contained file each):")
    lines += [f"    {a}: {_shown(path)}" for a, path in reports.items()]
    lines.append("next: docs/instructors.md (grade one submission, a folder, a Gradescope "
                 "export; edit an assignment)")
    return "\n".join(lines)


def demo_classes(assignments=CLASS_DEMOS, root: Path = DIST_DIR / "demo") -> dict[str, Path]:
    """Grade each assignment's synthetic class (under ``root/<id>``) on its
    quick questions with grade-all; {id: its report.html}."""
    from .batch import grade_all
    from .synthetic import write_class
    from .validate import SLOW_BUDGET_S
    reports = {}
    for a in assignments:
        made = write_class(a, root / a)
        quick = [q.name for q in config.load(a).questions if q.budget_cpu_s < SLOW_BUDGET_S]
        slow = [q.name for q in config.load(a).questions if q.name not in quick]
        _say(f"class {a}: a synthetic class of {len(made)} submissions in "
             f"{_shown(root / a)}/ (the catalogue's mistakes and correct styles, blanks, "
             "near-copies), graded with grade-all on " + ", ".join(quick)
             + (f" (not {', '.join(slow)}, which train)" if slow else "") + " ...")
        t0 = time.monotonic()
        grade_all(a, root / a, questions=quick, show_progress=True,
                  echo=lambda *args: print(*args, file=sys.stderr))
        _say(f"class {a}: graded and reported in {time.monotonic() - t0:.0f} s")
        reports[a] = root / a / "_grades" / "report.html"
    return reports
