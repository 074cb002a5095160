"""results.json, Gradescope's and PrairieLearn's: the one module that writes it.

Every results.json of this project comes from here: the placeholder written
before grading starts (also shipped as a file that ``run_autograder`` copies
when no Python can run), a normal report, and a grading run that did not
complete (``failed_run``). Each test entry carries its outcome as data in
``extra_data``: ``status`` (a ``grading.status.Status``), ``measurements``
and the part records (``grading.parts``); the run's own ``extra_data`` has
the submission's status (``nothing_implemented`` for a blank or empty
submission, else the worst that ended a question, else ``graded``). Batch
tables, the class report and ``validate`` read those fields, never the
feedback text.

PrairieLearn's format (``Report.to_prairielearn``, ``pl_placeholder``,
``pl_failed_run``; its external-grading docs, "Grading results"): ``score`` a
fraction in [0, 1], ``tests[]`` with ``name``, ``points``, ``max_points``,
``message`` (one line, ``QuestionResult.verdict``), ``output`` (the
feedback); ``gradable: false`` with ``format_errors`` for a submission that
could not be graded (:meth:`Report.not_gradable`): files missing from the
upload, a module that does not compile or import (PrairieLearn's docs give a
syntax error as the example), and the grader's own failures (an autograder
fault, the grading's time limit); such a submission uses no attempt. A wrong
answer, a crash or a time-out of the submission never is. The same
``extra_data`` records as Gradescope's ride along (PrairieLearn keeps any
extra field); the whole file stays under ``PL_MAX_BYTES``.

    python -m autograder.grading.results placeholder FILE [ASSIGNMENT]
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .. import __version__
from .safe import capped, one_line, terminal
from .status import Status

# Caps on every field of results.json (stated in docs/sandbox.md): nothing a submission controls
# (its messages, output, ids, names) can make the file large.
MAX_TEST_OUTPUT = 30_000      # characters of one question's feedback in results.json (a 20,000-character written answer fits)
MAX_TOTAL_OUTPUT = 200_000    # characters of all feedback together
PL_MAX_BYTES = 1_000_000      # PrairieLearn refuses a results.json above 1 MiB (1,048,576 bytes)
MAX_FIELD = 1_000             # characters of any other string (extra_data: parts, notes, ...)
MAX_ITEMS = 64                # entries of any list or dict (parts of a question, notes, ...)
MAX_ID = 256                  # characters of a student id (the longest email address is 254)
PLACEHOLDER_TEXT = "grading did not finish; please contact the course staff"


@dataclass
class QuestionResult:
    name: str
    title: str
    score: float
    max_score: float
    visibility: str
    output: str
    seconds: float = 0.0
    status: str = ""                 # a grading.status.Status
    measurements: dict = field(default_factory=dict)
    parts: list = field(default_factory=list)     # grading.parts.PartResult records

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @property
    def graded(self) -> bool:
        return self.status not in (Status.NOT_GRADED, Status.HAND_GRADED)

    def score_text(self) -> str:
        """``1.5/2``, or ``-/2 not graded here`` (a question left to the platform)."""
        if not self.graded:
            return f"-/{self.max_score:g} {Status(self.status).words}"
        return f"{self.score:g}/{self.max_score:g}"

    def extra(self) -> dict:
        """The outcome as data (results.json's per-question ``extra_data``)."""
        return capped({"question": self.name, "status": str(self.status),
                       "measurements": self.measurements, "parts": self.parts,
                       "seconds": round(self.seconds, 2)}, MAX_FIELD, MAX_ITEMS)

    def verdict(self) -> str:
        """One line from the outcome's data, what PrairieLearn shows as a test's
        ``message`` above its ``output`` (the feedback, which it does not
        repeat): "passed (2 of 2 parts)", "1 of 2 parts failed", the status's
        words."""
        n, failed = len(self.parts), sum(1 for p in self.parts if not p.get("passed"))
        status = Status.of(self.status)
        if status is Status.PASSED:
            return f"passed ({n} of {n} parts)" if n else "passed"
        if status in (Status.FAILED, Status.RAISED, Status.NOT_IMPLEMENTED) and n:
            return f"{failed} of {n} parts failed" + (
                "" if status is Status.FAILED else f" ({status.words})")
        if status is Status.AUTOGRADER_FAULT:
            return "autograder fault (not your code): please tell the course staff"
        return status.words if status is not None else (self.status or "not graded")

    def first_message(self) -> str:
        """The most useful failed part (:func:`lead_failure`: its diagnosis
        first), else the question's first line of feedback."""
        lead = lead_failure(self.parts)
        if lead is not None:
            return failure_text(lead)
        if self.parts and self.passed:
            return f"ok   {self.parts[0]['label']}"
        lines = self.output.splitlines()
        return lines[0] if lines else ""


@dataclass
class Report:
    assignment: str
    questions: list[QuestionResult] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)     # intake and overall notes (students)
    notes: list[str] = field(default_factory=list)        # about the run (staff: sandbox, ...)
    seconds: float = 0.0
    expected_source: str = ""          # "reference" (recorded from solutions/) or "stored"
    student_id: str = ""               # per-student assignments: whose instance was graded
    student_id_source: str = ""        # "metadata" (the platform's), "declared" (STUDENT_ID) or ""
    submission_digest: str = ""        # the submission's files (sha256): with the salt and the
                                       # id, the key of every hidden draw (a regrade redraws it)
    missing: list = field(default_factory=list)   # declared files the intake did not find
    import_error: str = ""             # why the module did not import (syntax, import error)
    status: str = ""                   # the submission's own status (grading.status), if any
    reveal: list = field(default_factory=list)    # hidden cases for staff (grade --reveal);
                                                  # never written to results.json

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions), 6)

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions)

    @property
    def graded_max_score(self) -> float:
        return sum(q.max_score for q in self.questions if q.graded)

    def _outputs(self) -> list[str]:
        """Each question's feedback, capped (one question, and all together)."""
        budget, texts = MAX_TOTAL_OUTPUT, []
        for q in self.questions:
            texts.append(_cap(q.output, min(MAX_TEST_OUTPUT, max(budget, 200))))
            budget -= len(texts[-1])
        return texts

    def _extra(self) -> dict:
        return capped({"autograder_version": __version__, "assignment": self.assignment,
                       "status": str(self.status or self.overall()),
                       "expected_source": self.expected_source,
                       "student_id": self.student_id[:MAX_ID],
                       "student_id_source": self.student_id_source,
                       "submission_digest": self.submission_digest, "notes": self.notes},
                      MAX_FIELD, MAX_ITEMS)

    def to_gradescope(self) -> dict:
        tests = []
        for i, (q, text) in enumerate(zip(self.questions, self._outputs())):
            tests.append({"name": f"{q.name}: {q.title}", "number": str(i + 1),
                          "score": round(q.score, 6), "max_score": q.max_score,
                          "status": "passed" if q.passed else "failed",
                          "output": text, "output_format": "text", "visibility": q.visibility,
                          "extra_data": q.extra()})
        return {
            "score": self.score,
            "execution_time": round(self.seconds, 1),
            "output": _cap("\n".join(self.messages), MAX_TEST_OUTPUT),
            "output_format": "text",
            "stdout_visibility": "hidden",
            "tests": tests,
            "extra_data": self._extra(),
        }

    def overall(self) -> str:
        """The submission's status: its own (``status``), else the first status
        that ended a question (missing files, an import error, ...), else
        "graded"."""
        ended = [Status(q.status) for q in self.questions
                 if Status.of(q.status) is not None and Status(q.status).ends_question
                 and Status(q.status) is not Status.NOT_GRADED]
        return str(ended[0]) if ended else "graded"

    def not_gradable(self) -> list[str]:
        """Why PrairieLearn should call this submission not gradable (no
        attempt used): files the upload lacks, a module that does not compile
        or import (it raised while importing; one that hangs or crashes there
        is graded, 0), the grader's own failures. [] if none: a wrong answer, a
        crash or a time-out of the submission is graded (and uses an attempt)."""
        why = [f"not found in the upload: {', '.join(self.missing)} (nothing was graded; "
               "this submission used no attempt)"] if self.missing else []
        if self.import_error:
            why.append(f"{self.import_error} (your module does not compile or import, so "
                       "nothing was graded; this submission used no attempt)")
        faults = [q.name for q in self.questions if q.status == Status.AUTOGRADER_FAULT]
        if faults:
            why.append(f"the autograder failed on {', '.join(faults)} (a fault of the grader, "
                       "not of your code; this submission used no attempt): please tell the "
                       "course staff")
        late = [q.name for q in self.questions if q.status == Status.DEADLINE]
        if late:
            why.append(f"the grading ran out of its own time before {', '.join(late)} (the "
                       "grader's limit, not a fault of your code; this submission used no "
                       "attempt): please submit again")
        return why

    def to_prairielearn(self) -> dict:
        """PrairieLearn's results.json: ``score`` is the fraction of the graded
        questions' points; one ``tests[]`` entry per question."""
        graded = self.graded_max_score
        tests = [{"name": f"{q.name}: {q.title}", "points": round(q.score, 6),
                  "max_points": q.max_score, "message": q.verdict(),
                  "output": text, "extra_data": q.extra()}
                 for q, text in zip(self.questions, self._outputs())]
        why = self.not_gradable()
        data = {"gradable": not why, "score": 0.0 if why or not graded else
                round(min(1.0, max(0.0, self.score / graded)), 6),
                "message": _cap("\n".join(self.messages), MAX_TEST_OUTPUT),
                "tests": tests,
                "extra_data": dict(self._extra(), execution_time=round(self.seconds, 1))}
        if why:
            data["format_errors"] = why
        return fit_prairielearn(data)

    def table(self, width: int = 100) -> str:
        """A per-question table for a terminal; the whole first failure, wrapped."""
        name_w = max([len(q.name) for q in self.questions] + [8])
        head = f"{'question':<{name_w}}  {'score':>11}  {'time':>6}  "
        rows = [head + "first message"]
        indent = " " * len(head)
        for q in self.questions:
            first = one_line(q.first_message())
            score = f"{'-':>5}/{q.max_score:<5g}" if not q.graded else \
                f"{q.score:5.2f}/{q.max_score:<5g}"
            wrapped = textwrap.wrap(first, max(30, width - len(head)),
                                    break_on_hyphens=False) or [""]
            rows.append(f"{q.name:<{name_w}}  {score}  {q.seconds:5.1f}s  {wrapped[0]}")
            rows += [indent + w for w in wrapped[1:]]
        total = f"{self.score:5.2f}/{self.graded_max_score:<5g}"
        rows.append(f"{'total':<{name_w}}  {total}  {self.seconds:5.1f}s")
        ungraded = self.max_score - self.graded_max_score
        if ungraded:
            rows.append(f"{'':<{name_w}}  ({self.score:g}/{self.graded_max_score:g} on the "
                        f"checks graded here; {ungraded:g} more points are graded where "
                        "you submit)")
        return "\n".join(rows)


def lead_failure(parts: list) -> Optional[dict]:
    """The failed part a student should read first (part records): the first
    that carries the judge's diagnosis, else the first failed; None if none."""
    failed = [p for p in parts if not p.get("passed")]
    return next((p for p in failed if p.get("diagnosis")), failed[0] if failed else None)


def failure_text(part: dict) -> str:
    """A failed part as one text, the most useful first: its root in another
    question (``cause``), then its diagnosis (the slip the answer matches),
    then the check's numbers: ``FAIL label: cause; diagnosis; message``."""
    lead = [str(part.get(k) or "") for k in ("cause", "diagnosis")]
    return f"FAIL {part['label']}: " + "".join(f"{x}; " for x in lead if x) + \
        f"{part['message']}"


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters cut)"


def placeholder(assignment: str = "") -> dict:
    """What Gradescope finds if grading never finishes."""
    return {"score": 0.0, "output": PLACEHOLDER_TEXT, "tests": [],
            "extra_data": {"autograder_version": __version__, "assignment": assignment,
                           "placeholder": True}}


def failed_run(assignment: str, error: str, questions: list) -> dict:
    """results.json for a grading run that did not complete: every question 0,
    status ``autograder_fault`` unless the caller knows better (``error``
    says what happened)."""
    error = terminal(error)
    report = Report(assignment, messages=[error])
    report.questions = [QuestionResult(q.name, q.title, 0.0, q.points, q.visibility, error,
                                       status=Status.AUTOGRADER_FAULT) for q in questions]
    data = report.to_gradescope()
    data["extra_data"]["run_error"] = _cap(error, MAX_FIELD)
    return data


def pl_placeholder(assignment: str = "") -> dict:
    """What PrairieLearn finds if grading never finishes: not gradable (a fault
    of the grader, so no attempt is used)."""
    return {"gradable": False, "score": 0.0, "format_errors": [PLACEHOLDER_TEXT],
            "message": PLACEHOLDER_TEXT, "tests": [],
            "extra_data": dict(Report(assignment)._extra(), placeholder=True)}


def pl_failed_run(assignment: str, error: str, questions: list) -> dict:
    """PrairieLearn's results.json for a grading run that did not complete
    (``failed_run``'s questions, not gradable with ``error`` as the reason)."""
    data = Report(assignment, messages=[error], questions=[
        QuestionResult(q.name, q.title, 0.0, q.points, q.visibility, error,
                       status=Status.AUTOGRADER_FAULT) for q in questions]).to_prairielearn()
    data["gradable"], data["format_errors"] = False, [error]
    data["extra_data"]["run_error"] = error
    return data


def fit_prairielearn(data: dict, limit: int = PL_MAX_BYTES) -> dict:
    """``data`` as written (``json.dumps``, UTF-8) in at most ``limit`` bytes:
    the tests' outputs, then the part records' messages, are shortened until
    it fits (the caps above keep a real report far below; this is the last
    guard, since PrairieLearn refuses a larger file outright)."""
    def size() -> int:
        return len(json.dumps(data, indent=2).encode())
    cap = MAX_TEST_OUTPUT
    while size() > limit and cap >= 100:
        cap //= 2
        for t in data.get("tests", []):
            t["output"] = _cap(t.get("output", ""), cap)
            t["message"] = _cap(t.get("message", ""), cap)
            for part in t.get("extra_data", {}).get("parts", []):
                part["message"] = _cap(str(part.get("message", "")), cap // 10)
        data["message"] = _cap(data.get("message", ""), cap)
    if size() > limit:              # nothing left to shorten: drop the records
        for t in data.get("tests", []):
            if "parts" in t.get("extra_data", {}):
                t["extra_data"]["parts"] = []
        data.setdefault("extra_data", {}).setdefault("notes", []).append(
            "part records dropped: results.json would exceed PrairieLearn's 1 MB")
    return data


def refused_run(assignment: str, reason: str, questions: list) -> dict:
    """results.json for an entry that was not graded (its files never read):
    every question 0 and ``not_graded``, ``reason`` as the feedback."""
    report = Report(assignment, messages=[terminal(reason)])
    report.questions = [QuestionResult(q.name, q.title, 0.0, q.points, q.visibility,
                                       terminal(reason), status=Status.NOT_GRADED)
                          for q in questions]
    return report.to_gradescope()


def is_placeholder(data: Optional[dict]) -> bool:
    return not data or bool((data.get("extra_data") or {}).get("placeholder"))


def write_atomically(path: Path, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_placeholder(path: Path, assignment: str) -> None:
    write_atomically(path, placeholder(assignment))


if __name__ == "__main__":      # run_autograder's first step
    if len(sys.argv) < 3 or sys.argv[1] != "placeholder":
        sys.exit("usage: python -m autograder.grading.results placeholder FILE [ASSIGNMENT]")
    write_placeholder(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
