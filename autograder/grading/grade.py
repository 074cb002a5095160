"""Grade one submission: intake, then each question in its own worker,
judged against the expected values; results.json and a table out."""
from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Iterable, Optional

from . import config, expected
from .judging import (AUTOGRADER_FAULT, CRASHED, HIDDEN_PHASE, KIND_TEXT, NOT_GRADED,
                      PROTOCOL_ERROR, PUBLIC_PHASE, TIMED_OUT, Context, Fail, HiddenFatal, Outcome,
                      ReferenceFailed, hidden_phase_outcome, merge_phases)
from .results import (MAX_ID, QuestionResult, Report, failed_run, write_atomically,
                      write_placeholder)
from .safe import one_line, terminal
from ..harness.intake import take
from ..harness.probe import ProbeError, ProbeFatal, ProbeRaised, ProbeSession
from ..harness.sandbox import Limits, Sandbox, open_sandbox


def read_student_id(metadata: Optional[Path]) -> Optional[str]:
    """Gradescope's submission_metadata.json: the first user's ``sid``, else
    their ``email`` (a group is graded as its first member)."""
    if not metadata or not Path(metadata).is_file():
        return None
    try:
        users = json.loads(Path(metadata).read_text()).get("users") or []
        first = users[0]
        sid = first.get("sid") or first.get("email")
        return str(sid).strip()[:MAX_ID] or None if sid else None
    except (ValueError, AttributeError, IndexError, OSError):
        return None


def _declared_student_id(directory: Path, module: str, sb: Sandbox) -> Optional[str]:
    """``STUDENT_ID`` set in the submitted module (local grading)."""
    try:
        with ProbeSession(directory, module, Limits(5), 20, sb) as session:
            value = session.constant("STUDENT_ID")
    except ProbeError:
        return None
    return str(value).strip()[:MAX_ID] or None if value not in (None, "") else None


def _import_problem(directory: Path, module: str, sb: Sandbox,
                    assignment: config.Assignment) -> Optional[tuple[str, str]]:
    """Import the submission once in a worker of its own: a module that does
    not import (error, hang, crash) zeroes every question at once, instead of
    spending every question's budget on the same failure. Returns (feedback,
    status) or None."""
    try:
        limits = Limits(assignment.import_budget_s, memory_mb=assignment.memory_mb)
        with ProbeSession(directory, module, limits,
                          assignment.import_budget_s * 2 + assignment.wall_slack_s, sb) as session:
            try:
                session.import_module()
            except ProbeFatal as e:
                if e.kind == AUTOGRADER_FAULT:
                    return f"autograder fault, please tell the course staff: {e}", e.kind
                tail = session.output_tail()
                return (f"{module}.py did not finish importing: {e}" + _quoted(tail),
                        e.kind if e.kind in (TIMED_OUT, CRASHED, PROTOCOL_ERROR) else CRASHED)
    except ProbeRaised as e:
        return (one_line(f"importing {module}.py failed: {e.type}: {e.message}"
                         + (f" (at {e.where})" if e.where else "")), CRASHED)
    return None


def _quoted(tail: str) -> str:
    """The submission's last printed output under its heading, every line
    marked as a quote (``  | ``), so that none reads as a line of the grader's."""
    if not tail:
        return ""
    return "\nlast output of your code:\n" + "\n".join("  | " + line
                                                       for line in tail.splitlines())


def _safe_record(record: dict) -> dict:
    """A part record with its texts escaped (a message may quote the submission)."""
    return {k: terminal(v) if isinstance(v, str) else v for k, v in record.items()}


def _select(assignment: config.Assignment, names: Optional[Iterable[str]]):
    if not names:
        return list(assignment.questions)
    return [assignment.question(n) for n in names]


def _run_question(assignment: config.Assignment, q: config.Question, directory: Path,
                  exp: dict, public_keys: frozenset, full: bool, module: str, sb: Sandbox,
                  student_id: Optional[str], deadline: float,
                  reveal: Optional[list] = None, told: Optional[list] = None,
                  progress=None) -> Outcome:
    """Grade ``q``: its public cases in one worker, then (full grading, a
    question with hidden cases) its hidden cases in a fresh worker. The hidden
    phase's outcome is reduced to parts, kinds and the judge's case labels
    before it is merged, so nothing the worker produced there is shown."""
    public = _run_phase(assignment, q, PUBLIC_PHASE, directory, exp, public_keys, full, module,
                        sb, student_id, deadline, reveal, told, progress)
    if not (full and q.has_hidden_cases) or public.status in _ENDS_QUESTION:
        return public
    hidden = _run_phase(assignment, q, HIDDEN_PHASE, directory, exp, public_keys, full, module,
                        sb, student_id, deadline, reveal, None, progress)
    if hidden.status in _ENDS_QUESTION:
        return Outcome(0.0, public.lines + hidden.lines, hidden.status,
                       dict(public.measurements), public.parts, public.notes)
    return merge_phases(public, hidden)


_ENDS_QUESTION = (TIMED_OUT, CRASHED, PROTOCOL_ERROR, AUTOGRADER_FAULT)


def _run_phase(assignment: config.Assignment, q: config.Question, phase: str, directory: Path,
               exp: dict, public_keys: frozenset, full: bool, module: str, sb: Sandbox,
               student_id: Optional[str], deadline: float,
               reveal: Optional[list], told: Optional[list] = None, progress=None) -> Outcome:
    judge = expected.judge_module(assignment.id)
    hidden = phase == HIDDEN_PHASE
    wall = q.budget_cpu_s * assignment.wall_factor + assignment.wall_slack_s
    wall = max(1.0, min(wall, deadline - time.monotonic()))
    limits = Limits(q.budget_cpu_s, memory_mb=assignment.memory_mb)
    ctx = None
    with ProbeSession(directory, module, limits, wall, sb) as session:
        try:
            session.import_module()
            ctx = Context(session.call, assignment.params, public_only=not full, expected=exp,
                          public_keys=set(public_keys), student_id=student_id,
                          constant=session.constant, hidden=assignment.hidden, question=q,
                          phase=phase, shown_exceptions=assignment.shown_exceptions,
                          call_many=session.call_many)
            if progress is not None:
                ctx.on_case = lambda case, i, n: progress(q, phase, case, i, n)
            outcome = judge.QUESTIONS[q.name](ctx)
            return hidden_phase_outcome(outcome) if hidden else outcome
        except ProbeRaised as e:
            if hidden:
                return Outcome(0.0, ["importing your module failed in the hidden phase"],
                               CRASHED)
            return Outcome(0.0, [one_line(f"importing {module}.py failed: {e.type}: {e.message}"
                                          + (f" (at {e.where})" if e.where else ""))], CRASHED)
        except ReferenceFailed as e:
            if hidden:
                print(f"{q.name}, hidden phase: {e}", file=sys.stderr)
            return Outcome(0.0, ["autograder fault, please tell the course staff"
                                 + ("" if hidden else f": {e}")], AUTOGRADER_FAULT)
        except ProbeFatal as e:
            if e.kind == AUTOGRADER_FAULT:
                return Outcome(0.0, [f"autograder fault, please tell the course staff: {e}"],
                               AUTOGRADER_FAULT)
            status = e.kind if e.kind in (TIMED_OUT, CRASHED, PROTOCOL_ERROR) else CRASHED
            if hidden:
                where = e.case_label if isinstance(e, HiddenFatal) and e.case_label else \
                    "the hidden phase"
                return Outcome(0.0, [f"{where}: {KIND_TEXT[status]} (nothing of what your "
                                     "code printed or said there is shown)"], status)
            tail = "" if e.kind == PROTOCOL_ERROR else session.output_tail()
            return Outcome(0.0, [str(e) + _quoted(tail)], status)
        except Fail as e:
            return Outcome(0.0, ["a hidden case failed" if hidden else str(e)])
        except Exception as e:  # noqa: BLE001 - the judge stopped: this question only
            print(traceback.format_exc(), file=sys.stderr)
            return Outcome(0.0, [f"autograder fault on this question ({type(e).__name__}); "
                                 "please tell the course staff"], AUTOGRADER_FAULT)
        finally:
            if reveal is not None and ctx is not None:
                reveal.extend(ctx.reveal)
            if told is not None and ctx is not None and not hidden:
                told.extend(line for line in ctx.told if line not in told)


def grade(assignment_id: str, submission: Path, *, results: Optional[Path] = None,
          questions: Optional[Iterable[str]] = None, metadata: Optional[Path] = None,
          echo: bool = True, sandbox: bool = True,
          assignments_dir: Optional[Path] = None,
          student_id: Optional[str] = None) -> Report:
    """Grade ``submission`` (a folder or zip) and return the report; writes
    ``results`` (placeholder first) when given. ``assignments_dir``: where
    assignment.toml files live (default: the checkout's ``assignments/``).
    ``student_id``: the platform's id of the student for per-student
    instances (PrairieLearn's, see ``grading.prairielearn``); without it,
    Gradescope's ``metadata``, else ``STUDENT_ID`` in the module.
    ``sandbox=False`` runs the worker as this user even when root (debugging
    only). A fault of the autograder itself still writes a complete
    results.json (every question 0, status ``autograder_fault``)."""
    start = time.monotonic()
    if results:
        write_placeholder(results, assignment_id)
    assignment = config.load(assignment_id, assignments_dir)
    selected = _select(assignment, questions)
    report = Report(assignment.id)
    try:
        with open_sandbox(force_off=not sandbox) as sb:
            report.notes.append(sb.note)
            _grade_in(assignment, selected, Path(submission), report, sb, metadata, echo, start,
                      student_id)
    except Exception as e:  # noqa: BLE001 - an autograder fault must still leave results
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        print(traceback.format_exc(), file=sys.stderr)
        data = failed_run(assignment.id, "autograder fault, please tell the course staff: "
                          + detail, selected)
        if results:
            write_atomically(results, data)
        raise
    report.seconds = time.monotonic() - start
    if results:
        write_atomically(results, report.to_gradescope())
    return report


def _grade_in(assignment: config.Assignment, selected: list, submission: Path, report: Report,
              sb: Sandbox, metadata, echo: bool, start: float,
              platform_id: Optional[str] = None) -> None:
    intake = take(submission, assignment.submission_files, sb.new_dir())
    report.messages.extend(one_line(m) for m in intake.messages)   # names: no forged lines
    report.missing = list(intake.missing)
    try:
        exp, full, public_keys = expected.load(assignment, [q.name for q in selected])
    except ReferenceFailed as e:
        exp, full, public_keys = {}, False, frozenset()
        report.messages.append(f"autograder fault: {e}")
    report.expected_source = "reference" if expected.has_reference(assignment) else "stored"
    if not full:
        report.messages.append("this run grades the public checks; the other checks are "
                               "graded where you submit (Gradescope or PrairieLearn)")
    module = assignment.submission_files[0][:-3]
    deadline = start + assignment.deadline_s
    problem = None if intake.missing else _import_problem(intake.sandbox, module, sb, assignment)
    if problem:
        report.messages.append(terminal(problem[0]))
    student_id = None
    if assignment.per_student and not intake.missing and not problem:
        student_id = platform_id or read_student_id(metadata)
        report.student_id_source = "metadata" if student_id else ""
        if student_id is None:
            student_id = _declared_student_id(intake.sandbox, module, sb)
            report.student_id_source = "declared" if student_id else ""
        if student_id:
            report.notes.append(f"graded the instance of student id {student_id!r} "
                                f"({report.student_id_source})")
        elif full:                      # the student must act on this: top-level, visible
            report.messages.append(f"no student id (the platform's, or STUDENT_ID in "
                                   f"{module}.py): graded the default instance, not yours")
        report.student_id = student_id or ""
    progress = _Progress(echo)
    for q in selected:
        t0 = time.monotonic()
        if not full and not q.public:
            outcome = Outcome(0.0, ["not graded here: graded where you submit"], NOT_GRADED)
        elif intake.missing:
            outcome = Outcome(0.0, [f"not graded: {', '.join(intake.missing)} missing"])
        elif problem:
            outcome = Outcome(0.0, [problem[0]], problem[1])
        elif time.monotonic() > deadline:
            outcome = Outcome(0.0, ["not graded: the overall time limit was reached"],
                              TIMED_OUT)
        else:
            progress.start(q)
            outcome = _run_question(assignment, q, intake.sandbox, exp, public_keys, full,
                                    module, sb, student_id, deadline, report.reveal,
                                    report.messages, progress)
        report.questions.append(QuestionResult(
            q.name, q.title, round(q.points * outcome.fraction, 6), q.points, q.visibility,
            terminal("\n".join(outcome.lines)), time.monotonic() - t0, outcome.status,
            outcome.measurements, [_safe_record(p.record()) for p in outcome.parts]))
        if echo:
            done = (f"-/{q.points:g} not graded here" if outcome.status == NOT_GRADED
                    else f"{q.points * outcome.fraction:.2f}/{q.points:g}")
            print(f"  {q.name}: {done} ({time.monotonic() - t0:.1f} s)", file=sys.stderr,
                  flush=True)


class _Progress:
    """Progress of a grading on stderr, one line per step and in the order the
    steps run (a log keeps every line): a line when a question starts, and in
    a long question (a budget of LONG_BUDGET_S or more: training runs, sweeps)
    a line when each of its cases starts (in a group of more than ten cases,
    one per 10 % of them), so that nothing long is silent. A judge may go
    through its cases more than once (to list them, then to run them): a case
    is shown the first time only."""
    LONG_BUDGET_S = 15.0

    def __init__(self, echo: bool):
        self.echo = echo
        self.t0 = time.monotonic()
        self.met: set = set()
        self.shown: dict = {}

    def start(self, q: config.Question) -> None:
        self.t0, self.met, self.shown = time.monotonic(), set(), {}
        if self.echo:
            print(f"  {q.name} ...", file=sys.stderr, flush=True)

    def __call__(self, q: config.Question, phase: str, case, i: int, n: int) -> None:
        if not self.echo or q.budget_cpu_s < self.LONG_BUDGET_S or \
                (phase, case.group, case.name) in self.met:
            return
        self.met.add((phase, case.group, case.name))
        step = (i - 1) * 10 // n if n > 10 else i
        if self.shown.get((phase, case.group)) == step:
            return
        self.shown[(phase, case.group)] = step
        what = case.label if case.hidden else f"case {case.name!r} ({i} of {n})"
        print(f"  {q.name}: {phase} phase, {what} "
              f"({time.monotonic() - self.t0:.0f} s so far)", file=sys.stderr, flush=True)
