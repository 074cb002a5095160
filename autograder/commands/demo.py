"""``make demo``: build every handout and Gradescope zip, grade the reference
and the blank template of every assignment through the Gradescope zip's own
run_autograder (as Gradescope would, with solutions/ out of sight), print
one table."""
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
from ..paths import SOLUTIONS_DIR, TEMPLATE_DIR


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


def demo() -> int:
    rows = []
    for a in config.available():
        assignment = config.load(a)
        _, gs_zip = build(a)
        for label, folder in (("reference", SOLUTIONS_DIR / a), ("blank template", TEMPLATE_DIR / a)):
            files = [folder / f for f in assignment.submission_files]
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
    return 0 if ok else 1
