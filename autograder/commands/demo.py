"""``make demo``: build every handout and Gradescope zip, grade the reference
and the blank template of every assignment through the Gradescope zip's own
run_autograder (as Gradescope would, with solutions/ out of sight), print
one table; then grade a synthetic class of two assignments with
``grade-all`` (:mod:`.synthetic`: the catalogue's mistakes and correct styles,
blanks, near-copies) and print where their class reports are."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..grading import config
from .dist import build
from ..paths import DIST_DIR, SOLUTIONS_DIR, TEMPLATE_DIR

# Assignments whose synthetic class the demo grades, on their quick questions (budget_cpu_s below
# validate's SLOW_BUDGET_S: A's bar and D's sweeps train for tens of seconds per submission).
CLASS_DEMOS = ("a_ppo", "d_grpo")


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


def demo() -> int:
    rows = []
    for a in config.available():
        assignment = config.load(a)
        _, gs_zip = build(a)
        for label, base in (("reference", SOLUTIONS_DIR), ("blank template", TEMPLATE_DIR)):
            files = assignment.sources(base)
            print(f"grading {a} {label} ...", file=sys.stderr, flush=True)
            res = run_gradescope_zip(gs_zip, files, show_progress=True)
            rows.append((a, label, res["score"], assignment.total_points,
                         res.get("execution_time", 0.0)))
    print(f"\n{'assignment':<12} {'submission':<15} {'score':>13} {'time':>7}")
    for a, label, score, total, secs in rows:
        print(f"{a:<12} {label:<15} {score:6.2f}/{total:<6g} {secs:6.1f}s")
    ok = all((score == total) if label == "reference" else (score == 0)
             for _, label, score, total, _ in rows)
    from instructor.figures import make_figures
    make_figures()                      # dist/figures/*.png, each with its data beside it
    print("\nreference full marks and blank template zero:", "yes" if ok else "NO")
    reports = demo_classes()
    print("\nclass reports (open in a browser: a self-contained file):")
    for a, path in reports.items():
        print(f"  {a}: {path}")
    return 0 if ok else 1


def demo_classes(assignments=CLASS_DEMOS, root: Path = DIST_DIR / "demo") -> dict[str, Path]:
    """Grade each assignment's synthetic class (under ``root/<id>``) on its
    quick questions with grade-all; {id: its report.html}."""
    import time
    from .batch import grade_all
    from .synthetic import write_class
    from .validate import SLOW_BUDGET_S
    reports = {}
    for a in assignments:
        made = write_class(a, root / a)
        quick = [q.name for q in config.load(a).questions if q.budget_cpu_s < SLOW_BUDGET_S]
        slow = [q.name for q in config.load(a).questions if q.name not in quick]
        print(f"\n{a}: a synthetic class of {len(made)} submissions (graded on "
              + ", ".join(quick) + (f"; not {', '.join(slow)}, which train" if slow else "")
              + ")", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        grade_all(a, root / a, questions=quick, show_progress=False,
                  echo=lambda *args: print(*args, file=sys.stderr))
        print(f"{a}: class graded and reported in {time.monotonic() - t0:.0f} s",
              file=sys.stderr)
        reports[a] = root / a / "_grades" / "report.html"
    return reports
