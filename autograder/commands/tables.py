"""Reading graded results.json files into rows: per-question outcomes (from
each test's ``extra_data``, never its text), crash and zero reasons,
``grades.csv`` and the summary table."""
from __future__ import annotations

import csv
import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..grading import config
from ..grading.status import Status

# A batch row: graded now, skipped (graded by an earlier run), or the job itself timed out or
# crashed (then every question is an autograder fault or a time-out in its results.json).
# REFUSED: not graded, never read (the export's metadata names a path outside the export).
GRADED, SKIPPED, REFUSED = "graded", "skipped", "refused"
TIMED_OUT, AUTOGRADER_FAULT = str(Status.TIMED_OUT), str(Status.AUTOGRADER_FAULT)
ROW_STATUSES = (GRADED, SKIPPED, TIMED_OUT, AUTOGRADER_FAULT, REFUSED)
from ..grading.results import is_placeholder
from ..grading.safe import csv_cell
from .export import Submission


def read_results(path: Path) -> Optional[dict]:
    try:
        data = json.loads(Path(path).read_text())
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def is_complete(data: Optional[dict]) -> bool:
    return not is_placeholder(data)


def question_outcomes(data: dict) -> dict[str, dict]:
    """{question name: {"score", "max_score", "output", "status", "measurements",
    "parts"}} of a results.json, from each test's data (``extra_data``), not its
    text."""
    out = {}
    for t in data.get("tests") or []:
        extra = t.get("extra_data") or {}
        name = str(extra.get("question") or str(t.get("name", "")).split(":")[0].strip())
        out[name] = {"score": float(t.get("score") or 0.0),
                     "max_score": float(t.get("max_score") or 0.0),
                     "output": str(t.get("output") or ""),
                     "status": str(extra.get("status") or ""),
                     "measurements": dict(extra.get("measurements") or {}),
                     "parts": [p for p in extra.get("parts") or [] if isinstance(p, dict)]}
    return out


def question_scores(data: dict) -> dict[str, tuple[float, float, str]]:
    """{question name: (score, max score, feedback)} of a results.json."""
    return {n: (q["score"], q["max_score"], q["output"])
            for n, q in question_outcomes(data).items()}


def submission_status(data: dict) -> str:
    """A results.json's submission status (``extra_data.status``: e.g.
    ``nothing_implemented``, ``import_error``), or "graded"."""
    return str(((data or {}).get("extra_data") or {}).get("status") or "graded")


def first_failure(question: dict) -> str:
    """The first failed part of a question (its label and message, from the part
    records), else the grader's own message for a question that ended before
    any part (import failure, time-out, not graded): its first line."""
    for part in question.get("parts") or []:
        if not part.get("passed"):
            return f"{part.get('label', '')}: {part.get('message', '')}".strip(": ")
    lines = [l.strip() for l in str(question.get("output") or "").splitlines() if l.strip()]
    return lines[0] if lines and not (question.get("parts")) else ""


def crashes(data: dict) -> dict[str, str]:
    """{question: its first failure line} for the questions whose status says
    the submission's code failed to run there (``Status.submission_fault``),
    the grader failed, or the grading ran out of time."""
    out = {}
    for name, q in question_outcomes(data).items():
        status = Status.of(q["status"])
        if status is not None and (status.submission_fault or status in (
                Status.AUTOGRADER_FAULT, Status.DEADLINE)):
            out[name] = first_failure(q) or status.words
    return out


def reason(data: Optional[dict]) -> str:
    """Why a row scored zero or crashed ("" when neither): the run's error,
    the submission-level messages, else each question's first failure; a
    question that crashed, raised or timed out says so."""
    if not data:
        return "no results.json"
    extra = data.get("extra_data") or {}
    if extra.get("run_error"):
        return str(extra["run_error"])
    outcomes = question_outcomes(data)

    def label(name: str) -> str:
        status = Status.of(outcomes[name]["status"])
        if status is None or status in (Status.PASSED, Status.FAILED, Status.NOT_IMPLEMENTED):
            return name
        return f"{name} ({status.words})"

    parts: list[str] = []
    crashed = crashes(data)
    if submission_status(data) == Status.NOTHING_IMPLEMENTED:
        # a blank or empty submission is one fact, as the class report says it (not every
        # stub's NotImplementedError message)
        parts.append(f"{Status.NOTHING_IMPLEMENTED.words} (every question: "
                     f"{Status.NOT_IMPLEMENTED.words})")
    elif float(data.get("score") or 0.0) <= 0.0:
        notes = [l.strip() for l in str(data.get("output") or "").splitlines()
                 if l.strip() and not l.startswith(" ") and not l.startswith("last output")]
        parts += notes[:3]
        if not notes:
            seen = set()
            for name, q in outcomes.items():
                why = first_failure(q)
                if why and why not in seen:
                    seen.add(why)
                    parts.append(f"{label(name)}: {why}")
        parts = parts or ["scored 0"]
    for name, line in crashed.items():
        if not any(line in p for p in parts):
            parts.append(f"{label(name)}: {line}")
    if extra.get("student_id_source") == "declared":
        parts.append(f"instance chosen by the self-declared STUDENT_ID "
                     f"{str(extra.get('student_id'))[:40]!r} (unverified)")
    return " | ".join(parts)


@dataclass
class Row:
    submission: Submission
    data: Optional[dict]
    status: str                         # ROW_STATUSES


CSV_STUDENT = ["sid", "name", "email", "submission"]


def write_csv(path: Path, rows: list[Row], questions: list[config.Question]) -> None:
    """One row per student (a group submission gives one row per member;
    a submission without known students gives one row). Every cell is a
    ``safe.csv_cell``: on one line, control characters escaped, and never a
    formula."""
    header = CSV_STUDENT + [q.name for q in questions] + ["total", "max_score", "reason",
                                                          "declared_id"]
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
            declared = _declared_id(row)
            people = row.submission.submitters or [{"sid": _sid_of(row), "name": "",
                                                    "email": ""}]
            for p in people:
                w.writerow([csv_cell(c) for c in
                            [p["sid"], p["name"], p["email"], row.submission.name] + cells
                            + [f"{round(total, 6):g}", f"{maximum:g}", why, declared]])
    os.replace(tmp, path)


def _sid_of(row: Row) -> str:
    """The graded student id when it came from metadata; a self-declared
    ``STUDENT_ID`` never files a row (see :func:`_declared_id`)."""
    extra = (row.data or {}).get("extra_data") or {}
    if extra.get("student_id_source") == "declared":
        return ""
    return str(extra.get("student_id") or "")


def _declared_id(row: Row) -> str:
    """A self-declared ``STUDENT_ID`` that chose the graded instance (no
    metadata): unverified, flagged in its own column and in the reason."""
    extra = (row.data or {}).get("extra_data") or {}
    if extra.get("student_id_source") == "declared":
        return str(extra.get("student_id") or "")
    return ""


# summary.txt's columns beyond the scores: each a set of question statuses, one word each
# (a submission graded as a whole, e.g. one that does not import, counts once below the
# table, not in every question's column).
SUMMARY_COLUMNS = (
    ("raised", (Status.RAISED,)),
    ("crashed", (Status.CRASHED, Status.PROTOCOL_ERROR)),
    ("timed out", (Status.TIMED_OUT,)),
    ("deadline", (Status.DEADLINE,)),
    ("faults", (Status.AUTOGRADER_FAULT,)),
)
WHOLE = (Status.NOTHING_IMPLEMENTED, Status.IMPORT_ERROR, Status.MISSING_FILES)


def summary_table(rows: list[Row], questions: list[config.Question]) -> str:
    """Mean, median, zeros and full marks per question, and per status column
    (:data:`SUMMARY_COLUMNS`) how many submissions' grading of it ended so
    (one count per submission; the total row: submissions with any). A
    submission graded as a whole (nothing implemented, not importing, files
    missing) is in no column: the line below the table counts it once."""
    width = max([len(q.name) for q in questions] + [8])
    heads = "".join(f"  {name:>9}" for name, _ in SUMMARY_COLUMNS)
    lines = [f"{'question':<{width}}  {'max':>5}  {'mean':>6}  {'median':>6}  {'zeros':>5}  "
             f"{'full':>5}{heads}"]
    all_scores = [question_scores(r.data or {}) for r in rows]
    whole = [submission_status(r.data or {}) in WHOLE for r in rows]
    ended = [{n: str(q["status"]) for n, q in question_outcomes(r.data or {}).items()}
             if not w else {} for r, w in zip(rows, whole)]
    for q in questions:
        vals = [s[q.name][0] if q.name in s else 0.0 for s in all_scores]
        counts = "".join(f"  {sum(e.get(q.name) in statuses for e in ended):9d}"
                         for _, statuses in SUMMARY_COLUMNS)
        lines.append(f"{q.name:<{width}}  {q.points:5g}  {_mean(vals):6.2f}  {_median(vals):6.2f}"
                     f"  {sum(v <= 0 for v in vals):5d}  {sum(v >= q.points for v in vals):5d}"
                     + counts)
    totals = [sum(s[q.name][0] for q in questions if q.name in s) for s in all_scores]
    maximum = sum(q.points for q in questions)
    counts = "".join(f"  {sum(any(v in statuses for v in e.values()) for e in ended):9d}"
                     for _, statuses in SUMMARY_COLUMNS)
    lines.append(f"{'total':<{width}}  {maximum:5g}  {_mean(totals):6.2f}  {_median(totals):6.2f}"
                 f"  {sum(t <= 0 for t in totals):5d}  {sum(t >= maximum for t in totals):5d}"
                 + counts)
    by_status = [(s, sum(submission_status(r.data or {}) == s for r in rows)) for s in WHOLE]
    if any(n for _, n in by_status):
        lines.append("graded as a whole (in no column above): " + ", ".join(
            f"{n} {s.words}" for s, n in by_status if n))
    return "\n".join(lines)


def question_time_outs(rows: list[Row]) -> int:
    """How many questions timed out, over all rows (one submission can have several)."""
    return sum(q["status"] == TIMED_OUT for r in rows
               for q in question_outcomes(r.data or {}).values())


def _mean(v: list[float]) -> float:
    return statistics.fmean(v) if v else 0.0


def _median(v: list[float]) -> float:
    return statistics.median(v) if v else 0.0
