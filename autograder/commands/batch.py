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
import csv
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Iterator, Optional

from ..grading import config
from ..grading.judging import AUTOGRADER_FAULT, SUBMISSION_FAULTS
from ..grading.results import failed_run, is_placeholder, write_atomically
from ..harness.intake import unsafe_zip_entry

METADATA_YML = "submission_metadata.yml"
BATCH_FILE = "batch.json"          # what a results.json was graded with (for re-run skips)
KILL_GRACE_S = 10.0                # SIGTERM, then SIGKILL after this long

# ============================================================================ the job runner
@dataclass
class Job:
    """One grading run in a process of its own."""
    key: str
    assignment: str
    submission: Path
    results: Path
    log: Path
    timeout_s: float
    questions: Optional[list[str]] = None
    metadata: Optional[Path] = None
    assignments_dir: Optional[Path] = None
    cost: float = 1.0                  # rough relative cost: costly jobs start first

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "autograder.commands.batch", self.assignment,
               str(self.submission),
               "--results", str(self.results)]
        if self.questions:
            cmd += ["--questions", ",".join(self.questions)]
        if self.metadata:
            cmd += ["--metadata", str(self.metadata)]
        if self.assignments_dir:
            cmd += ["--assignments-dir", str(self.assignments_dir)]
        return cmd


@dataclass
class Done:
    job: Job
    status: str                        # "ok" | "timeout" | "error"
    seconds: float
    error: str = ""


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the job's process group (the child then closes its sandbox,
    killing the worker uid's processes), SIGKILL it after a grace period."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " / ".join(l.strip() for l in text[-lines:])


def run_jobs(jobs: Iterable[Job], n: int) -> Iterator[Done]:
    """Run ``jobs`` at most ``n`` at a time (costly first); yield each as it ends.
    A job past its timeout is stopped and reported as ``timeout``. Interrupting
    the iteration (Ctrl-C) stops every running job."""
    pending = sorted(jobs, key=lambda j: -j.cost)
    pending.reverse()                                    # pop() from the end: costly first
    running: dict[int, tuple[Job, subprocess.Popen, float, object]] = {}
    try:
        while pending or running:
            while pending and len(running) < max(1, n):
                job = pending.pop()
                job.results.parent.mkdir(parents=True, exist_ok=True)
                log = open(job.log, "wb")
                proc = subprocess.Popen(job.command(), stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
                running[proc.pid] = (job, proc, time.monotonic(), log)
            time.sleep(0.05)
            for pid in list(running):
                job, proc, t0, log = running[pid]
                code = proc.poll()
                elapsed = time.monotonic() - t0
                if code is None and elapsed <= job.timeout_s:
                    continue
                if code is None:
                    _stop(proc)
                    done = Done(job, "timeout", elapsed,
                                f"grading did not finish within {job.timeout_s:.0f} s "
                                "(wall-clock timeout of the batch); stopped")
                elif code != 0:
                    done = Done(job, "error", elapsed, f"grading crashed (exit code {code}): "
                                f"{_log_tail(job.log)}"[:500])
                else:
                    done = Done(job, "ok", elapsed)
                log.close()
                del running[pid]
                yield done
    finally:
        for job, proc, _, log in running.values():
            _stop(proc)
            log.close()


def default_jobs() -> int:
    n = os.cpu_count() or 1
    if os.geteuid() == 0:              # one worker uid per concurrent grading
        from ..harness.sandbox import SLOTS
        n = min(n, SLOTS)
    return n


def timeout_for(assignment: config.Assignment) -> float:
    """The batch's guard: a bit above grading's own overall deadline."""
    return assignment.deadline_s + max(30.0, 0.1 * assignment.deadline_s)


def read_results(path: Path) -> Optional[dict]:
    try:
        data = json.loads(Path(path).read_text())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def is_complete(data: Optional[dict]) -> bool:
    return not is_placeholder(data)


def question_outcomes(data: dict) -> dict[str, dict]:
    """{question name: {"score", "max_score", "output", "status", "measurements"}}
    of a results.json, from each test's data (``extra_data``), not its text."""
    out = {}
    for t in data.get("tests") or []:
        extra = t.get("extra_data") or {}
        name = str(extra.get("question") or str(t.get("name", "")).split(":")[0].strip())
        out[name] = {"score": float(t.get("score") or 0.0),
                     "max_score": float(t.get("max_score") or 0.0),
                     "output": str(t.get("output") or ""),
                     "status": str(extra.get("status") or ""),
                     "measurements": dict(extra.get("measurements") or {})}
    return out


def question_scores(data: dict) -> dict[str, tuple[float, float, str]]:
    """{question name: (score, max score, feedback)} of a results.json."""
    return {n: (q["score"], q["max_score"], q["output"])
            for n, q in question_outcomes(data).items()}


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith("FAIL"):
            return line[4:].strip()
    for line in output.splitlines():
        if line.strip() and not line.startswith("ok"):
            return line.strip()
    return ""


def crashes(data: dict) -> dict[str, str]:
    """{question: its first failure line} for the questions whose status says
    the submission crashed, raised or timed out, or the autograder failed."""
    return {name: _first_failure(q["output"]) or q["status"]
            for name, q in question_outcomes(data).items()
            if q["status"] in SUBMISSION_FAULTS + (AUTOGRADER_FAULT,)}


def reason(data: Optional[dict]) -> str:
    """Why a row scored zero or crashed ("" when neither): the run's error,
    the submission-level messages, else each question's first failure."""
    if not data:
        return "no results.json"
    extra = data.get("extra_data") or {}
    if extra.get("run_error"):
        return str(extra["run_error"])
    parts: list[str] = []
    crashed = crashes(data)
    if float(data.get("score") or 0.0) <= 0.0:
        notes = [l.strip() for l in str(data.get("output") or "").splitlines()
                 if l.strip() and not l.startswith(" ") and not l.startswith("last output")]
        parts += notes[:3]
        if not notes:
            seen = set()
            for name, (_, _, output) in question_scores(data).items():
                why = _first_failure(output)
                if why and why not in seen:
                    seen.add(why)
                    parts.append(f"{name}: {why}")
        parts = parts or ["scored 0"]
    for name, line in crashed.items():
        if not any(line in p for p in parts):
            parts.append(f"{name} crashed: {line}")
    return " | ".join(parts)


# ============================================================================ submissions
@dataclass
class Submission:
    name: str                               # folder or file name in the batch folder
    path: Path
    submitters: list[dict] = field(default_factory=list)   # [{"name", "sid", "email"}]
    gradescope: Optional[dict] = None       # the export's metadata of this submission


def _safe_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "submission"
    return safe[:120]


def _load_yaml(text: str) -> dict:
    try:
        import yaml
    except ImportError:                     # PyYAML comes with the grading extra
        return _parse_metadata_fallback(text)

    class Loader(yaml.SafeLoader):
        pass

    def unknown(loader, suffix, node):      # Ruby tags (!ruby/object:...) as plain data
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("!", unknown)
    Loader.add_multi_constructor("tag:", unknown)
    data = yaml.load(text, Loader=Loader)
    return data if isinstance(data, dict) else {}


def _parse_metadata_fallback(text: str) -> dict:
    """Enough of Gradescope's YAML without PyYAML: submission keys and submitters."""
    data: dict = {}
    current, person, block = None, None, None      # block: indent of ":submitters:"
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith(("#", "---")):
            continue
        indent = len(raw) - len(raw.lstrip())
        line = raw.strip()
        if indent == 0:
            current = data.setdefault(line.rstrip(":").strip("'\""), {":submitters": []}) \
                if line.endswith(":") else None
            block, person = None, None
            continue
        if current is None:
            continue
        if line.startswith(":submitters:"):
            block, person = (indent if line == ":submitters:" else None), None
            continue
        if block is None:
            continue
        if indent <= block and not line.startswith("- "):
            block, person = None, None                # the next key of this submission
            continue
        m = re.match(r"^(- )?(:\w+):\s*(.*)$", line)
        if not m:
            continue
        if m.group(1):
            person = {}
            current[":submitters"].append(person)
        if person is not None:
            person[m.group(2)] = m.group(3).strip().strip("'\"") or None
    return data


def _submitters(meta: dict) -> list[dict]:
    people = []
    for p in (meta.get(":submitters") or meta.get("submitters") or []):
        if not isinstance(p, dict):
            continue
        get = lambda k: p.get(f":{k}", p.get(k))          # noqa: E731
        people.append({k: ("" if get(k) is None else str(get(k)).strip())
                       for k in ("name", "sid", "email")})
    return people


def _safe_extract(zip_path: Path, dest: Path) -> None:
    """Unpack an export zip, refusing absolute, '..' and symlink entries."""
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            if unsafe_zip_entry(info):
                continue
            target = tmp.joinpath(*PurePosixPath(info.filename).parts)
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
    os.replace(tmp, dest)


def export_root(folder: Path) -> Optional[Path]:
    """The folder holding ``submission_metadata.yml`` (``folder`` or its only
    sub-folder, as when ``assignment_123_export.zip`` was unzipped), else None."""
    if (folder / METADATA_YML).is_file():
        return folder
    subs = [d for d in folder.iterdir() if d.is_dir() and (d / METADATA_YML).is_file()]
    return subs[0] if len(subs) == 1 else None


def _ignored(p: Path, out: Path) -> bool:
    return (p.name.startswith((".", "__MACOSX")) or p.name == METADATA_YML
            or p.resolve() == out.resolve())


def discover(folder: Path, out: Path) -> tuple[list[Submission], str]:
    """The submissions in ``folder`` and the layout ("gradescope" or "plain")."""
    root = export_root(folder)
    if root is None:
        subs = [Submission(p.name, p) for p in sorted(folder.iterdir(), key=lambda p: p.name)
                if not _ignored(p, out)]
        return subs, "plain"
    meta = _load_yaml((root / METADATA_YML).read_text(errors="replace"))
    subs, seen = [], set()
    for key in sorted(meta, key=str):
        entry = meta[key] if isinstance(meta[key], dict) else {}
        name = str(key)
        path = root / name
        if not path.exists() and (root / f"{name}.zip").exists():
            path = root / f"{name}.zip"
        subs.append(Submission(name, path, _submitters(entry), entry))
        seen.add(path.name)
    for p in sorted(root.iterdir(), key=lambda p: p.name):   # folders the yml does not list
        if p.name not in seen and not _ignored(p, out):
            subs.append(Submission(p.name, p))
    return subs, "gradescope"


def gradescope_json(sub: Submission, assignment: config.Assignment) -> dict:
    """This submission's metadata in the format of Gradescope's
    /autograder/submission_metadata.json (what grade() reads)."""
    meta = sub.gradescope or {}
    digits = re.sub(r"\D", "", sub.name)

    def plain(v):
        return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)

    return {"id": int(digits) if digits else None,
            "created_at": plain(meta.get(":created_at")),
            "assignment": {"title": assignment.title,
                           "total_points": str(assignment.total_points)},
            "submission_method": "upload",
            "users": [{"email": p["email"], "name": p["name"], "sid": p["sid"]}
                      for p in sub.submitters],
            "previous_submissions": []}


# ============================================================================ grade-all
@dataclass
class Row:
    submission: Submission
    data: Optional[dict]
    status: str                         # graded | skipped | timeout | error


def _batch_record(assignment: config.Assignment, questions: list[str]) -> dict:
    return {"assignment": assignment.id, "questions": questions}


def grade_all(assignment_id: str, folder: Path, *, jobs: Optional[int] = None,
              force: bool = False, questions: Optional[list[str]] = None,
              out: Optional[Path] = None, timeout_s: Optional[float] = None,
              show_progress: bool = True, echo=print) -> list[Row]:
    """Grade every submission in ``folder``; write results, grades.csv and
    summary.txt under ``out``; return the rows (one per submission)."""
    assignment = config.load(assignment_id)
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
    n = jobs or default_jobs()
    timeout_s = timeout_s or timeout_for(assignment)
    echo(f"{assignment.id}: {len(subs)} submissions ({layout} layout) in {folder}; "
         f"{n} at a time; results under {out}")

    rows: dict[str, Row] = {}
    todo: list[Job] = []
    dirs: dict[str, Path] = {}
    used: set[str] = set()
    for sub in subs:
        d = _safe_name(sub.name)
        while d in used:
            d += "_"
        used.add(d)
        dirs[sub.name] = out / d
        results = out / d / "results.json"
        record = _batch_record(assignment, names)
        previous = read_results(results)
        try:
            same = json.loads((out / d / BATCH_FILE).read_text()) == record
        except (OSError, ValueError):
            same = False
        if not force and same and is_complete(previous):
            rows[sub.name] = Row(sub, previous, "skipped")
            continue
        (out / d).mkdir(parents=True, exist_ok=True)
        (out / d / BATCH_FILE).unlink(missing_ok=True)
        metadata = None
        if sub.submitters:
            metadata = out / d / "submission_metadata.json"
            metadata.write_text(json.dumps(gradescope_json(sub, assignment), indent=2))
        todo.append(Job(sub.name, assignment.id, sub.path, results, out / d / "grade.log",
                        timeout_s, questions=names if questions else None, metadata=metadata))
    skipped = len(rows)
    if skipped:
        echo(f"skipping {skipped} already graded (--force regrades them)")

    by_key = {s.name: s for s in subs}
    t0 = time.monotonic()
    finished = run_jobs(todo, n)
    if show_progress and todo:
        from rlkit.progress import progress
        finished = progress(finished, desc=f"grading {assignment.id}", total=len(todo))
    for done in finished:
        sub = by_key[done.job.key]
        data = read_results(done.job.results)
        if done.status != "ok" or not is_complete(data):
            error = done.error or "grading ended without writing results.json"
            data = failed_run(assignment.id, error, selected)
            write_atomically(done.job.results, data)
        status = {"ok": "graded"}.get(done.status, done.status)
        rows[sub.name] = Row(sub, data, status)
        (dirs[sub.name] / BATCH_FILE).write_text(
            json.dumps(_batch_record(assignment, names)))
    elapsed = time.monotonic() - t0

    ordered = [rows[s.name] for s in subs]
    write_csv(out / "grades.csv", ordered, selected)
    summary = summary_table(ordered, selected)
    counts = {k: sum(r.status == k for r in ordered) for k in ("graded", "skipped", "timeout",
                                                              "error")}
    summary += (f"\n\n{len(ordered)} submissions: {counts['graded']} graded, "
                f"{counts['skipped']} skipped (already graded), {counts['timeout']} timed out, "
                f"{counts['error']} grading crashed; {elapsed:.1f} s with {n} jobs")
    (out / "summary.txt").write_text(summary + "\n")
    echo(summary)
    echo(f"wrote {out / 'grades.csv'} and {out / 'summary.txt'}")
    return ordered


CSV_STUDENT = ["sid", "name", "email", "submission"]


def write_csv(path: Path, rows: list[Row], questions: list[config.Question]) -> None:
    """One row per student (a group submission gives one row per member;
    a submission without known students gives one row)."""
    header = CSV_STUDENT + [q.name for q in questions] + ["total", "max_score", "reason"]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            scores = question_scores(row.data or {})
            cells = [(f"{scores[q.name][0]:g}" if q.name in scores else "") for q in questions]
            total = sum(scores[q.name][0] for q in questions if q.name in scores)
            maximum = sum(q.points for q in questions)
            why = reason(row.data)
            people = row.submission.submitters or [{"sid": _sid_of(row), "name": "",
                                                    "email": ""}]
            for p in people:
                w.writerow([p["sid"], p["name"], p["email"], row.submission.name] + cells
                           + [f"{round(total, 6):g}", f"{maximum:g}", why])
    os.replace(tmp, path)


def _sid_of(row: Row) -> str:
    return str(((row.data or {}).get("extra_data") or {}).get("student_id") or "")


def summary_table(rows: list[Row], questions: list[config.Question]) -> str:
    """Mean, median, zeros and full marks per question (one count per submission)."""
    width = max([len(q.name) for q in questions] + [8])
    lines = [f"{'question':<{width}}  {'max':>5}  {'mean':>6}  {'median':>6}  {'zeros':>5}  "
             f"{'full':>5}  {'crashed':>7}"]
    all_scores = [question_scores(r.data or {}) for r in rows]
    crashed = [crashes(r.data or {}) for r in rows]
    totals = []
    for q in questions:
        vals = [s[q.name][0] if q.name in s else 0.0 for s in all_scores]
        lines.append(f"{q.name:<{width}}  {q.points:5g}  {_mean(vals):6.2f}  {_median(vals):6.2f}"
                     f"  {sum(v <= 0 for v in vals):5d}  {sum(v >= q.points for v in vals):5d}"
                     f"  {sum(q.name in c for c in crashed):7d}")
    for s in all_scores:
        totals.append(sum(s[q.name][0] for q in questions if q.name in s))
    maximum = sum(q.points for q in questions)
    lines.append(f"{'total':<{width}}  {maximum:5g}  {_mean(totals):6.2f}  {_median(totals):6.2f}"
                 f"  {sum(t <= 0 for t in totals):5d}  {sum(t >= maximum for t in totals):5d}"
                 f"  {sum(bool(c) for c in crashed):7d}")
    return "\n".join(lines)


def _mean(v: list[float]) -> float:
    return statistics.fmean(v) if v else 0.0


def _median(v: list[float]) -> float:
    return statistics.median(v) if v else 0.0


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
    args = p.parse_args(argv)

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    from ..grading.grade import grade
    questions = [q for q in args.questions.split(",") if q] if args.questions else None
    report = grade(args.assignment, args.submission, results=args.results,
                   questions=questions, metadata=args.metadata, echo=False,
                   assignments_dir=args.assignments_dir)
    print(report.table())
    for m in report.messages:
        print(f"note: {m}")
    for q in report.questions:
        print(f"\n== {q.name} ({q.score:g}/{q.max_score:g})\n{q.output}")
    return 0


if __name__ == "__main__":
    sys.exit(_child())
