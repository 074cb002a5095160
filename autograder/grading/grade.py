"""Grade one submission: intake, then each question in its own worker,
judged against the expected values; results.json and a table out."""
from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path
from typing import Iterable, Optional

from . import cascade, config, expected
from .judging import (HIDDEN_PHASE, PUBLIC_PHASE, Context, Fail, HiddenFatal, ReferenceFailed)
from .parts import Outcome, ended, hidden_phase_outcome, merge_phases
from .results import (MAX_ID, QuestionResult, Report, failed_run, write_atomically,
                      write_placeholder)
from .safe import one_line, terminal
from .status import Kind, Status, submission_status
from ..harness.intake import take
from ..harness.probe import WORKER_FAULT, ProbeError, ProbeFatal, ProbeRaised, ProbeSession
from ..harness.sandbox import Limits, Sandbox, WorkerUnavailable, open_sandbox


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
            session.import_module()
            value = session.constant("STUDENT_ID")
    except ProbeError:
        return None
    return str(value).strip()[:MAX_ID] or None if isinstance(value, str) and value else None


def _import_problem(directory: Path, module: str, sb: Sandbox, assignment: config.Assignment,
                    session_type) -> Optional[tuple[str, Status]]:
    """Import the submission once in a worker of its own: a module that does
    not import (error, hang, crash) ends every question at once, instead of
    spending every question's budget on the same failure. Returns (feedback,
    status) or None; (feedback, status, True) when the import raised (a
    SyntaxError, an ImportError, any exception of the module's own code), not
    when it hung or crashed."""
    try:
        limits = Limits(assignment.import_budget_s, memory_mb=assignment.memory_mb)
        with session_type(directory, module, limits,
                          assignment.import_budget_s * 2 + assignment.wall_slack_s, sb) as session:
            try:
                session.import_module()
            except ProbeFatal as e:
                if e.kind == WORKER_FAULT:
                    return (f"autograder fault, please tell the course staff: {e}",
                            Status.AUTOGRADER_FAULT)
                tail = session.output_tail()
                return (f"{module}.py did not finish importing: {e}" + _quoted(tail),
                        Status.of(e.kind) if e.kind in (Status.TIMED_OUT, Status.CRASHED,
                                                        Status.PROTOCOL_ERROR)
                        else Status.CRASHED)
    except ProbeRaised as e:
        return (one_line(f"importing {module}.py failed: {e.type}: {e.message}"
                         + (f" (at {e.where})" if e.where else "")), Status.IMPORT_ERROR)
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


class _Run:
    """What every question of one grading shares: the assignment, the
    submission's folder and module, expected values, the sandbox, the
    student and the submission's draw key, the overall deadline, the session
    type (the sandboxed worker, or ``inprocess.LocalSession`` for the fast
    tier) and where to report.

    A grading runs in two blocks (:func:`_grade_in`): every question's
    visible phase (its public cases), then every question's hidden phase.
    No hidden phase runs before a visible one, so nothing a hidden phase's
    worker does, through any channel known or not (a file, a shared cache's
    timing, the page cache), can reach a line a student reads: what a hidden
    phase shows is chosen by the judge (``parts.hidden_phase_outcome``)."""

    def __init__(self, assignment: config.Assignment, directory: Path, module: str, exp: dict,
                 public_keys: frozenset, full: bool, sb: Sandbox, student_id: Optional[str],
                 deadline: float, report: Report, session_type, progress=None,
                 draw_key: str = ""):
        self.assignment, self.directory, self.module = assignment, directory, module
        self.exp, self.public_keys, self.full, self.sb = exp, public_keys, full, sb
        self.student_id, self.deadline, self.report = student_id, deadline, report
        self.session_type, self.progress = session_type, progress
        self.draw_key = draw_key
        self.done: list[str] = []      # questions graded in full (``finished``), in that order
        self.cut = False               # a fresh worker's wall was cut by the deadline

    def finished(self, q: config.Question, outcome: Outcome) -> None:
        """``q``'s every phase ended: graded before any later deadline, unless
        the deadline itself ended it."""
        if outcome.status is not Status.DEADLINE:
            self.done.append(q.name)

    def needs_hidden(self, q: config.Question, public: Outcome) -> bool:
        """Whether ``q`` has a hidden phase to run after ``public``, its visible one."""
        return self.full and q.has_hidden_cases and not public.ended

    def hidden(self, q: config.Question, public: Outcome) -> Outcome:
        """``q``'s hidden phase in a fresh worker, merged with ``public``. Its
        outcome is reduced to parts, kinds and the judge's case labels before
        it is merged, so nothing the worker produced there is shown."""
        start, limit = time.monotonic(), self._limit(q)
        hidden = self.phase(q, HIDDEN_PHASE)
        if q.pad_hidden and self.session_type is ProbeSession:
            # the phase lasts its whole limit, whatever it did: no time shown (a question's
            # seconds, execution_time) tells how long a hidden case took
            time.sleep(max(0.0, start + limit - time.monotonic()))
        if hidden.ended:
            return Outcome(0.0, public.lines + hidden.lines, hidden.status,
                           dict(public.measurements), public.parts, public.notes)
        return merge_phases(public, hidden, q.points)

    def _wall(self, q: config.Question) -> float:
        """The wall-clock backstop of one worker of ``q`` (s)."""
        return q.budget_cpu_s * self.assignment.wall_factor + self.assignment.wall_slack_s

    def _limit(self, q: config.Question) -> float:
        """The wall-clock limit of a worker of ``q`` starting now (its backstop, or
        what is left of the grading's deadline)."""
        return max(1.0, min(self._wall(q), self.deadline - time.monotonic()))

    def phase(self, q: config.Question, phase: str) -> Outcome:
        a = self.assignment
        judge = expected.judge_module(a.id)
        hidden = phase == HIDDEN_PHASE
        by_deadline = self.deadline - time.monotonic() < self._wall(q)
        limits = Limits(q.budget_cpu_s, memory_mb=a.memory_mb)
        ctx = None
        with self.session_type(self.directory, self.module, limits, self._limit(q),
                               self.sb) as session:
            try:
                session.import_module()
                ctx = Context(session.call, a.params, public_only=not self.full,
                              expected=self.exp, public_keys=set(self.public_keys),
                              student_id=self.student_id, constant=session.constant,
                              hidden=a.hidden, question=q, phase=phase,
                              shown_exceptions=a.shown_exceptions, call_many=session.call_many,
                              draw_key=self.draw_key)
                if self.progress is not None:
                    ctx.on_case = lambda case, i, n: self.progress(q, phase, case, i, n)
                ctx.new_session = lambda: self._fresh(q, limits)
                if self.session_type is not ProbeSession:      # the fast tier (tests only)
                    ctx.run_memo = session.memo
                outcome = judge.QUESTIONS[q.name](ctx)
                return hidden_phase_outcome(outcome, q.points) if hidden else outcome
            except ProbeRaised as e:
                if hidden:
                    return ended(Status.IMPORT_ERROR,
                                 ["importing your module failed in the hidden phase"])
                return ended(Status.IMPORT_ERROR, [one_line(
                    f"importing {self.module}.py failed: {e.type}: {e.message}"
                    + (f" (at {e.where})" if e.where else ""))])
            except ReferenceFailed as e:
                print(f"{q.name}, {phase} phase: {e}", file=sys.stderr)
                return ended(Status.AUTOGRADER_FAULT, ["autograder fault, please tell the course "
                                                       "staff" + ("" if hidden else f": {e}")])
            except ProbeFatal as e:       # a fresh worker's wall may be cut by the deadline too
                out = self._fatal(q, e, hidden, by_deadline or self.cut, session)
                if out.status is Status.DEADLINE and ctx is not None and ctx.progress_line:
                    out.lines.append(ctx.progress_line)
                return out
            except Fail as e:               # outside any part: the question's first check
                return ended(Status.FAILED, ["a hidden case failed" if hidden else str(e)])
            except Exception as e:  # noqa: BLE001 - the blame rule (grading.judging)
                print(traceback.format_exc(), file=sys.stderr)
                if ctx is not None and ctx.answered:
                    self.report.notes.append(f"{q.name}: the judge could not use an answer "
                                             f"({type(e).__name__}: {str(e)[:200]})")
                    return ended(Status.FAILED, [
                        "the grader could not use your code's answers in this question "
                        f"({type(e).__name__}); check their types and shapes against the "
                        "handout"])
                return ended(Status.AUTOGRADER_FAULT, [
                    f"autograder fault on this question ({type(e).__name__}); please tell the "
                    "course staff"])
            finally:
                if ctx is not None:
                    self.report.reveal.extend(ctx.reveal)
                    self.report.notes.extend(ctx.staff)
                    if not hidden:
                        self.report.messages.extend(line for line in ctx.told
                                                    if line not in self.report.messages)

    def _fresh(self, q: config.Question, limits: Limits):
        """A fresh worker of ``q`` (``Context.fresh_worker``), its wall clock cut
        by the grading's deadline (noted in ``cut``)."""
        self.cut = self.cut or self.deadline - time.monotonic() < self._wall(q)
        return self.session_type(self.directory, self.module, limits, self._limit(q), self.sb)

    def _fatal(self, q: config.Question, e: ProbeFatal, hidden: bool, by_deadline: bool,
               session) -> Outcome:
        if e.kind == WORKER_FAULT:
            return ended(Status.AUTOGRADER_FAULT,
                         [f"autograder fault, please tell the course staff: {e}"])
        status = Status.of(e.kind) if e.kind in (Status.TIMED_OUT, Status.CRASHED,
                                                 Status.PROTOCOL_ERROR) else Status.CRASHED
        if by_deadline and status in (Status.TIMED_OUT, Status.PROTOCOL_ERROR) and \
                time.monotonic() >= self.deadline - 1.0:
            return ended(Status.DEADLINE, [self._deadline_words(q)])
        if hidden:
            where = e.case_label if isinstance(e, HiddenFatal) and e.case_label else \
                "the hidden phase"
            return ended(status, [f"{where}: {status.words} (nothing of what your code printed "
                                  "or said there is shown)"])
        tail = "" if e.kind == Status.PROTOCOL_ERROR else session.output_tail()
        return ended(status, [str(e) + _quoted(tail)])

    def _deadline_words(self, q: Optional[config.Question] = None) -> str:
        done = list(self.done)
        where = f"{q.name} was stopped" if q is not None else "not graded"
        return (f"{where}: the grading's overall time limit of "
                f"{self.assignment.deadline_s:g} s was reached (the grader's limit, not a fault "
                "of your code: it often means the machine was busy); graded before it: "
                f"{', '.join(done) or 'nothing'}. Resubmit, or tell the course staff.")


def grade(assignment_id: str, submission: Path, *, results: Optional[Path] = None,
          questions: Optional[Iterable[str]] = None, metadata: Optional[Path] = None,
          echo: bool = True, sandbox: bool = True,
          assignments_dir: Optional[Path] = None,
          student_id: Optional[str] = None, in_process: bool = False) -> Report:
    """Grade ``submission`` (a folder or zip) and return the report; writes
    ``results`` (placeholder first) when given. ``assignments_dir``: where
    assignment.toml files live (default: the checkout's ``assignments/``).
    ``student_id``: the platform's id of the student for per-student
    instances (PrairieLearn's, see ``grading.prairielearn``); without it,
    Gradescope's ``metadata``, else ``STUDENT_ID`` in the module.
    ``sandbox=False`` runs the worker as this user even when root (debugging
    only). ``in_process``: the fast tier (``grading.inprocess``: trusted
    submissions only, no isolation). A fault of the autograder itself still
    writes a complete results.json (every question 0, status
    ``autograder_fault``)."""
    start = time.monotonic()
    if results:
        write_placeholder(results, assignment_id)
    assignment = config.load(assignment_id, assignments_dir)
    selected = _select(assignment, questions)
    report = Report(assignment.id)
    try:
        with open_sandbox(force_off=not sandbox or in_process) as sb:
            report.notes.append("in-process (the fast tier: no isolation)" if in_process
                                else sb.note)
            if assignment.stated_numerics:
                from .. import numerics
                report.notes.append(f"numerics: {numerics.described()}")
            _grade_in(assignment, selected, Path(submission), report, sb, metadata, echo, start,
                      student_id, in_process)
            report.notes.extend(sb.staff_notes)       # what a sweep could not remove (quarantined)
    except Exception as e:  # noqa: BLE001 - an autograder fault must still leave results
        detail = str(e) if isinstance(e, WorkerUnavailable) else \
            "".join(traceback.format_exception_only(type(e), e)).strip()
        if not isinstance(e, WorkerUnavailable):      # its caller logs its detail (staff's)
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
              platform_id: Optional[str] = None, in_process: bool = False) -> None:
    if in_process:
        from .inprocess import LocalSession as session_type
    else:
        session_type = ProbeSession
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
    problem = None if intake.missing else _import_problem(intake.sandbox, module, sb, assignment,
                                                          session_type)
    if problem:
        report.messages.append(terminal(problem[0]))
        report.import_error = terminal(problem[0]) if problem[1] is Status.IMPORT_ERROR else ""
    student_id = None
    # Every hidden instance is drawn per submission (the salt, the student's id and the files'
    # digest): an id is needed wherever hidden cases run.
    report.submission_digest = intake.digest
    if full and assignment.needs_student_id and not intake.missing and not problem:
        student_id = platform_id or read_student_id(metadata)
        report.student_id_source = "metadata" if student_id else ""
        if student_id is None:
            student_id = _declared_student_id(intake.sandbox, module, sb) if not in_process \
                else None
            report.student_id_source = "declared" if student_id else ""
        if student_id:
            report.notes.append(f"graded the instance of student id {student_id!r} "
                                f"({report.student_id_source})")
        else:       # a platform always gives one: a batch of plain folders, for the staff
            report.notes.append(f"no student id (the platform's, or STUDENT_ID in {module}.py): "
                                "graded the default instance")
        report.student_id = student_id or ""
    run = _Run(assignment, intake.sandbox, module, exp, public_keys, full, sb, student_id,
               deadline, report, session_type, _Progress(echo), draw_key=intake.digest)
    # Block 1: every question's visible phase (its public cases; a written answer).
    graded = []                         # [question, outcome, seconds], in the toml's order
    for q in selected:
        t0 = time.monotonic()
        if q.hand and not intake.missing and not problem:
            outcome = run.phase(q, PUBLIC_PHASE)
        elif not full and not q.public:
            outcome = ended(Status.NOT_GRADED, ["not graded here: graded where you submit "
                                                "(its cases are hidden)"])
        elif intake.missing:
            outcome = ended(Status.MISSING_FILES,
                            [f"not graded: {', '.join(intake.missing)} missing"])
        elif problem:
            outcome = ended(problem[1], [problem[0]])
        elif time.monotonic() > deadline:
            outcome = ended(Status.DEADLINE, [run._deadline_words()])
        else:
            run.progress.start(q, PUBLIC_PHASE)
            outcome = run.phase(q, PUBLIC_PHASE)
        graded.append([q, outcome, time.monotonic() - t0])
        if not run.needs_hidden(q, outcome):
            run.finished(q, outcome)
            _echo(echo, q, outcome, time.monotonic() - t0)
    # Block 2: every hidden phase, after every visible one (the order is the guarantee).
    for entry in graded:
        q, public, seconds = entry
        if not run.needs_hidden(q, public):
            continue
        t0 = time.monotonic()
        if time.monotonic() > deadline:
            entry[1] = ended(Status.DEADLINE, [run._deadline_words(q)])
        else:
            run.progress.start(q, HIDDEN_PHASE)
            entry[1] = run.hidden(q, public)
        entry[2] = seconds + time.monotonic() - t0
        run.finished(q, entry[1])
        _echo(echo, q, entry[1], entry[2])
    cascade.annotate([(q, o) for q, o, _ in graded], assignment)
    report.questions = [_result(q, o, seconds) for q, o, seconds in graded]
    report.status = submission_status([r.status for r in report.questions]) or ""


def _echo(echo: bool, q: config.Question, outcome: Outcome, seconds: float) -> None:
    """The grader's log line of a graded question (stderr: for the staff)."""
    if echo:
        done = (f"-/{q.points:g} {outcome.status.words}"
                if outcome.status in (Status.NOT_GRADED, Status.HAND_GRADED)
                else f"{q.points * outcome.fraction:.2f}/{q.points:g}")
        print(f"  {q.name}: {done} ({seconds:.1f} s)", file=sys.stderr, flush=True)


def _result(q: config.Question, outcome: Outcome, seconds: float) -> QuestionResult:
    return QuestionResult(
        q.name, q.title, round(q.points * outcome.fraction, 6), q.points, q.visibility,
        terminal("\n".join(outcome.lines)), seconds, outcome.status, outcome.measurements,
        [_safe_record(p.record()) for p in outcome.parts])


class _Progress:
    """Progress of a grading on stderr, one line per step and in the order the
    steps run (a log keeps every line): a line when a question's phase starts, and in
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

    def start(self, q: config.Question, phase: str = PUBLIC_PHASE) -> None:
        """A line as ``q``'s ``phase`` starts (the hidden phases come after
        every question's visible one)."""
        self.t0, self.met, self.shown = time.monotonic(), set(), {}
        if self.echo:
            print(f"  {q.name}" + (": hidden phase" if phase == HIDDEN_PHASE else "") + " ...",
                  file=sys.stderr, flush=True)

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
