"""``python -m autograder grade-all <id> <folder>``: grade a whole class.

``<folder>`` is either

* a plain folder of submissions: one sub-folder or zip per submission
  (anything else in it, e.g. ``notes.txt``, still gets a row and a reason), or
* Gradescope's "Export Submissions" download (unzipped, or the zip itself):
  ``submission_metadata.yml`` next to one folder per submission, e.g.::

      submission_123456:
        :submitters:
        - :name: Ada Lovelace
          :sid: '1815'
          :email: ada@example.edu
        :created_at: 2025-03-01 12:00:00.000000000 -08:00
        :score: 16.0
        ...

  Each student's metadata is passed to grading as a Gradescope-format
  ``submission_metadata.json`` (``users: [{"sid", "email", "name"}]``), so
  per-student instances are graded as on Gradescope.

The layout, and which entries are submissions, come from the class folder
alone (``export.discover``): a submission's own files never change them,
every path the yml names stays inside the export folder, and every entry
gets a row (one the metadata refers to outside the export gets a row with
the reason, ``refused``). Each submission's output folder and re-run skip
are keyed by its stable key (``export.out_name``), so two names never share
results.

Each submission is first copied into ``<out>/<submission>/.submission`` (``<out>``
is 0700: a root-only area when grading as root), so that a concurrent
grading's worker cannot reach it; the copy is removed once graded.

Every submission is graded in a process of its own (``python -m
autograder.commands.batch``, at most ``--jobs`` at a time), guarded by a wall-clock
timeout a bit above the assignment's ``deadline_s``; a submission that
crashes the grading, hangs or is not a submission at all gets a row and a
reason, and the batch goes on. Under ``--out`` (default ``<folder>/_grades``):
``<submission>/results.json`` (Gradescope format), ``<submission>/grade.log``,
``grades.csv`` (one row per student) and ``summary.txt``. A re-run skips
submissions whose results.json is complete for the same assignment and
questions, unless ``--force``.

The job runner (:func:`run_jobs`) is shared with ``validate``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import stat
import sys
import time
import zipfile
from pathlib import Path
from typing import Optional

from ..grading import config
from ..grading.results import failed_run, refused_run, write_atomically
from ..grading.safe import terminal
from .export import _safe_extract, discover, gradescope_json, out_name
from .runner import JOB_ENV, Job, default_jobs, log_tail, run_jobs, timeout_for
from .tables import AUTOGRADER_FAULT, TIMED_OUT
from .tables import (GRADED, REFUSED, ROW_STATUSES, SKIPPED, Row, is_complete, read_results,
                     question_time_outs, summary_table, write_csv)

BATCH_FILE = "batch.json"          # what a results.json was graded with (for re-run skips)
STAGE_DIR = ".submission"          # the private copy a job grades
STAGE_MAX_BYTES = 64 * 1024 * 1024  # larger files are not copied (intake refuses > 5 MB anyway)


def _stage(src: Path, dest: Path) -> Path:
    """Copy a submission (a zip, a file, or a folder's regular files down to
    one sub-folder, which is all intake looks at) into the private ``dest``;
    returns the path to grade. Symlinks are not followed."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(mode=0o700, parents=True)
    target = dest / src.name
    try:
        st = os.lstat(src)
    except OSError:
        return target                      # intake reports it missing
    if stat.S_ISREG(st.st_mode):
        if st.st_size <= STAGE_MAX_BYTES:
            shutil.copyfile(src, target)
        return target
    if not stat.S_ISDIR(st.st_mode):
        return target
    target.mkdir(mode=0o700)
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        if len(rel.parts) >= 1:
            dirnames[:] = []
        for name in filenames:
            path = Path(dirpath) / name
            try:
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and info.st_size <= STAGE_MAX_BYTES:
                    (target / rel).mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target / rel / name)
            except OSError:
                continue
    return target


def _batch_record(assignment: config.Assignment, questions: list[str], key: str) -> dict:
    """What a results.json was graded with: the assignment, the questions and
    the submission's key (a re-run skips only the same submission)."""
    return {"assignment": assignment.id, "questions": questions, "submission": key}


def grade_all(assignment_id: str, folder: Path, *, jobs: Optional[int] = None,
              force: bool = False, questions: Optional[list[str]] = None,
              out: Optional[Path] = None, timeout_s: Optional[float] = None,
              show_progress: bool = True, echo=print, anonymous: bool = False) -> list[Row]:
    """Grade every submission in ``folder``; write results, grades.csv,
    summary.txt and the class report (``anonymous``: without names or ids)
    under ``out``; return the rows (one per submission)."""
    assignment = config.load(assignment_id)
    raw_echo, echo = echo, lambda text: raw_echo(terminal(text))   # names are the students'
    selected = [assignment.question(q) for q in questions] if questions \
        else list(assignment.questions)
    names = [q.name for q in selected]
    folder = Path(folder)
    if folder.is_file() and zipfile.is_zipfile(folder):        # the export zip itself
        unpacked = folder.with_suffix("")
        if not unpacked.exists():
            _safe_extract(folder, unpacked)
        folder = unpacked
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    out = Path(out) if out else folder / "_grades"
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)                      # feedback and student details: staff only
    subs, layout = discover(folder, out)
    exposed = _exposed_without_namespaces(folder)
    if exposed:
        echo(exposed)
    n = jobs or default_jobs()
    timeout_s = timeout_s or timeout_for(assignment)
    echo(f"{assignment.id}: {len(subs)} submissions ({layout} layout) in {folder}; "
         f"{n} at a time; results under {out}")

    rows: dict[str, Row] = {}
    todo: list[Job] = []
    dirs: dict[str, Path] = {}
    used: set[str] = set()
    for sub in subs:
        d = out_name(sub.name, used)
        used.add(d)
        dirs[sub.name] = out / d
        results = out / d / "results.json"
        if sub.refused:                        # never read: a row that says why
            (out / d).mkdir(parents=True, exist_ok=True)
            data = refused_run(assignment.id, sub.refused, selected)
            write_atomically(results, data)
            rows[sub.name] = Row(sub, data, REFUSED)
            continue
        record = _batch_record(assignment, names, sub.name)
        previous = read_results(results)
        try:
            same = json.loads((out / d / BATCH_FILE).read_text()) == record
        except (OSError, ValueError):
            same = False
        if not force and same and is_complete(previous):
            rows[sub.name] = Row(sub, previous, SKIPPED)
            continue
        (out / d).mkdir(parents=True, exist_ok=True)
        (out / d / BATCH_FILE).unlink(missing_ok=True)
        metadata = None
        if sub.submitters:
            metadata = out / d / "submission_metadata.json"
            metadata.write_text(json.dumps(gradescope_json(sub, assignment), indent=2))
        staged = _stage(sub.path, out / d / STAGE_DIR)
        todo.append(Job(sub.name, assignment.id, staged, results, out / d / "grade.log",
                        timeout_s, questions=names if questions else None, metadata=metadata))
    skipped = len(rows)
    if skipped:
        echo(f"skipping {skipped} already graded (--force regrades them)")

    by_key = {s.name: s for s in subs}
    t0 = time.monotonic()
    status = _StatusLine() if show_progress and todo else None
    finished = run_jobs(todo, n, on_tick=status)
    if show_progress and todo:
        from rlkit.progress import progress
        finished = progress(finished, desc=f"grading {assignment.id}", total=len(todo))
    for done in finished:
        sub = by_key[done.job.key]
        shutil.rmtree(dirs[sub.name] / STAGE_DIR, ignore_errors=True)
        data = read_results(done.job.results)
        if done.status != GRADED or not is_complete(data):
            error = done.error or "grading ended without writing results.json"
            data = failed_run(assignment.id, error, selected)
            write_atomically(done.job.results, data)
        rows[sub.name] = Row(sub, data, done.status)
        (dirs[sub.name] / BATCH_FILE).write_text(
            json.dumps(_batch_record(assignment, names, sub.name)))
    elapsed = time.monotonic() - t0
    if status is not None:
        status.close()

    ordered = [rows[s.name] for s in subs]
    write_csv(out / "grades.csv", ordered, selected)
    summary = summary_table(ordered, selected)
    counts = {k: sum(r.status == k for r in ordered) for k in ROW_STATUSES}
    summary += (f"\n\n{len(ordered)} submissions: {counts[GRADED]} graded, "
                f"{counts[SKIPPED]} skipped (already graded), "
                f"{counts[TIMED_OUT]} stopped at the batch's time limit, "
                f"{counts[AUTOGRADER_FAULT]} grading jobs failed (the grader crashed); "
                f"{question_time_outs(ordered)} question time-outs in all; "
                f"{elapsed:.1f} s with {n} jobs")
    if counts[REFUSED]:
        summary += f"; {counts[REFUSED]} refused (not graded: see their reason)"
    if exposed:
        summary += "\n" + exposed
    (out / "summary.txt").write_text(summary + "\n")
    echo(summary)
    echo(f"wrote {out / 'grades.csv'} and {out / 'summary.txt'}")
    from .report import write_report
    write_report(out, assignment, selected, ordered, {s.name: dirs[s.name] for s in subs},
                 anonymous=anonymous, echo=echo)
    return ordered


class _StatusLine:
    """A second progress line under grade-all's bar: what each running job is
    doing (the last progress line its grading wrote to its grade.log: the
    question, the phase and the case), refreshed every second, so that a
    question that runs for minutes is not silent. Shown on a terminal only
    (a log gets the bar's own lines)."""
    WIDTH = 150

    LOG_EVERY_S = 30.0                 # without a terminal: a line this often

    def __init__(self):
        self.bar, self.last = None, time.monotonic()
        if sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=0, position=1, bar_format="{desc}", leave=False)
            except ImportError:
                pass

    def __call__(self, running: list) -> None:
        shown = terminal(" | ".join(f"{job.key}: {log_tail(job.log, 1) or 'starting'} "
                                    f"[{seconds:.0f} s]" for job, seconds in running))
        if self.bar is not None:
            self.bar.set_description_str(shown[:self.WIDTH])
        elif time.monotonic() - self.last >= self.LOG_EVERY_S:
            self.last = time.monotonic()
            print(f"running: {shown[:self.WIDTH]}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _exposed_without_namespaces(folder: Path) -> str:
    """What to say when, as root on a machine without namespaces and without
    Landlock (a container on an older kernel), the class folder is readable
    by other users, so that a submission's worker could read its classmates'
    originals: the slot users are denied the folder by an ACL entry each
    (``user:rlcap-wN:---``, no one else's access changes), or, where the
    file system has no ACLs, a warning. With namespaces or Landlock the
    worker cannot see the folder at all: nothing to say."""
    if os.geteuid() != 0:
        return ""
    from ..harness import fspolicy, slots
    from ..harness.sandbox import _readable_by_others, open_sandbox
    with open_sandbox() as sb:
        if sb.namespaces or sb.landlock or not _readable_by_others(folder):
            return ""
    uids = [slots.ensure_user(f"{slots.USER_PREFIX}{n}")[0] for n in range(slots.SLOTS)]
    why = fspolicy.deny_uids(str(folder), uids)
    if not why:
        return (f"no namespaces and no Landlock here: the workers' uids are denied {folder} "
                f"(an ACL entry user:{slots.USER_PREFIX}N:--- each; no one else's access changes)")
    return (f"WARNING: no namespaces on this machine and {folder} is readable by other "
            f"users, so a submission can read its classmates' files there ({why}): "
            f"`chmod 700 {folder}` (or grade on a machine with namespaces or Landlock)")


# ============================================================================ one job (child)
def _child(argv: Optional[list[str]] = None) -> int:
    """Grade one submission (a job of :func:`run_jobs`): like ``python -m
    autograder grade``, plus a clean stop on SIGTERM (the sandbox is closed,
    the worker uid's processes killed) and ``--assignments-dir``."""
    p = argparse.ArgumentParser(prog="python -m autograder.commands.batch")
    p.add_argument("assignment")
    p.add_argument("submission", type=Path)
    p.add_argument("--results", type=Path, required=True)
    p.add_argument("--questions")
    p.add_argument("--metadata", type=Path)
    p.add_argument("--assignments-dir", type=Path)
    if argv is None and os.environ.get(JOB_ENV):
        job = json.loads(os.environ[JOB_ENV])
        known, _ = p.parse_known_args(job)
        from .. import numerics             # the job starts again under them, JOB_ENV kept
        numerics.ensure(known.assignment, "autograder.commands.batch", [],
                        known.assignments_dir)
        argv = json.loads(os.environ.pop(JOB_ENV))
    args = p.parse_args(argv)

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    from ..grading.grade import grade
    questions = [q for q in args.questions.split(",") if q] if args.questions else None
    report = grade(args.assignment, args.submission, results=args.results,
                   questions=questions, metadata=args.metadata, echo=True,
                   assignments_dir=args.assignments_dir)
    from ..cli import report_text
    print(report_text(report, verbose=True))
    return 0


if __name__ == "__main__":
    sys.exit(_child())
