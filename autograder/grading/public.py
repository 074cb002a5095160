"""The notebook's public checks: ``grader.check("q...")`` lands here.

It runs the very judge question that grades on Gradescope and PrairieLearn,
in-process, on the public cases only, and raises AssertionError with the
judge's feedback when a case fails: the failed parts first, the one carrying
the judge's diagnosis (the slip the answer matches) leading.
"""
from __future__ import annotations

import importlib
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Iterable

from . import config, expected
from .judging import WRITTEN, Context, Fail, ReferenceFailed
from .safe import one_line
from .status import Status
from .results import failure_text, lead_failure
from ..harness.probe import InProcessCaller, ProbeError
from ..harness.worker import describe_exception


def _student_module(name: str):
    """Import (or re-import, to pick up edits) the student's module from the cwd."""
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    if name in sys.modules:
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def import_failed(module: str, e: BaseException) -> str:
    """A module that does not import, in the local grade's words
    (``grade._import_problem``), with the line where it fails."""
    d = describe_exception(e, str(Path.cwd().resolve()))
    return one_line(f"importing {module}.py failed: {d['type']}: {d['message']}"
                    + (f" (at {d['where']})" if d["where"] else ""))


def check(assignment_id: str, question: str, *, show_progress: bool = True) -> float:
    """Run ``question``'s public cases against the student's module.

    Returns the fraction of the question's points the public cases earn
    (1.0), or raises AssertionError with the feedback lines."""
    assignment = config.load(assignment_id)
    q = assignment.question(question)
    if not q.public:
        raise AssertionError(f"{question} is graded only where you submit (Gradescope or "
                             "PrairieLearn): it has no public check")
    judge = expected.judge_module(assignment.id)
    name = assignment.submission_files[0][:-3]
    try:
        module = _student_module(name)
    except Exception as e:  # noqa: BLE001 - the submission's: the local grade's words
        raise AssertionError(import_failed(name, e)) from None
    exp, _, public_keys = expected.load(assignment, [q.name])
    caller = InProcessCaller(module)
    ctx = Context(caller.call, assignment.params, public_only=True, expected=exp,
                  public_keys=set(public_keys), show_progress=show_progress,
                  constant=caller.constant, question=q,
                  shown_exceptions=assignment.shown_exceptions)
    try:
        with warnings.catch_warnings():     # numpy's warnings about the student's arrays: the
            warnings.simplefilter("ignore", RuntimeWarning)   # feedback says what they mean
            outcome = judge.QUESTIONS[q.name](ctx)
    except (ProbeError, Fail, ReferenceFailed) as e:
        raise AssertionError(str(e)) from None
    if outcome.status is Status.HAND_GRADED:      # a written answer: graded by hand
        if not outcome.measurements.get(WRITTEN, 1.0):
            # missing or blank: the local grade's words (nothing reaches the grader to read)
            raise AssertionError(f"{q.title}:\n" + "\n".join(outcome.lines))
        return 1.0
    if outcome.fraction < 1.0:
        raise AssertionError(f"{q.title}: {outcome.fraction * q.points:g}/{q.points:g} "
                             "points on the public cases\n" + "\n".join(feedback(outcome)))
    return outcome.fraction


def feedback(outcome) -> list[str]:
    """The outcome's feedback lines, the most useful first: the failed parts
    (the one :func:`results.lead_failure` picks first, each with its diagnosis
    before its numbers), then the rest (passed parts, notes)."""
    records = [p.record() for p in outcome.parts]
    failed = [r for r in records if not r["passed"]]
    if not failed:
        return list(outcome.lines)
    lead = lead_failure(records)
    failed.remove(lead)
    return [failure_text(r) for r in [lead, *failed]] + \
        [line for line in outcome.lines if not line.startswith("FAIL ")]


# ----------------------------------------------------------------------------- experiment cells
class experiment:
    """A lab-book experiment cell that survives a wrong piece::

        with experiment("d_grpo", "the K-sweep", uses=["q2_standardised"]) as run:
            ...                     # the runs, calling the student's functions

    Where the block raises (an exception of the student's code, of the
    runtime that their answer broke, or :meth:`finite` on a NaN result), the
    cell prints what stopped it (the exception, and the line of the
    student's module where it happened) and the first failing public check of
    the questions in ``uses``, word for word what ``grader.check`` says, then
    what to do; no traceback, and Run All goes on to the next cell (the cells
    that need the block's results skip themselves: ``ready()`` in the
    notebooks). numpy's RuntimeWarnings in the block are counted and summed up
    in one line instead of printed in red, one per call. Ctrl-C still stops."""

    def __init__(self, assignment_id: str, what: str, uses: Iterable[str] = ()):
        self.assignment_id, self.what, self.uses = assignment_id, what, list(uses)
        self.stopped = self.finished = False

    def __enter__(self) -> "experiment":
        self._warnings = warnings.catch_warnings(record=True)
        self.caught = self._warnings.__enter__()
        warnings.simplefilter("always", RuntimeWarning)
        return self

    def finite(self, value: Any, what: str) -> Any:
        """``value`` (numbers, arrays, and lists and dicts of them, such as a
        network's layers), or a ValueError when some number of it is NaN or
        infinite: a run whose numbers stopped meaning anything is stopped
        where that shows."""
        if not _finite(value):
            raise ValueError(f"{what} holds NaN or inf")
        return value

    def __exit__(self, etype, exc, tb) -> bool:
        caught = list(self.caught)
        self._warnings.__exit__(None, None, None)
        for w in caught:                # warnings of other kinds are shown as usual
            if not issubclass(w.category, RuntimeWarning):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        numpy_said = _warned([w for w in caught if issubclass(w.category, RuntimeWarning)])
        if exc is None:
            self.finished = True
            if numpy_said:          # NaN or inf on the way: say which piece, if a check can
                failing = self._failing()
                print(f"note: {numpy_said}" + ("" if not failing else
                      "; the runs finished, but their numbers may mean little.\n"
                      + "\n".join(self._advice(failing, "run this cell again"))))
            return False
        if not isinstance(exc, Exception):         # KeyboardInterrupt, SystemExit
            return False
        self.stopped = True
        if "matplotlib.pyplot" in sys.modules:     # no half-drawn figure under the words
            sys.modules["matplotlib.pyplot"].close("all")
        print(self.report(exc, numpy_said))
        return True

    def report(self, exc: BaseException, numpy_said: str = "") -> str:
        """What the cell prints when its block raised ``exc``."""
        frames = traceback.extract_tb(exc.__traceback__)
        cwd = Path.cwd().resolve()
        mine = [f for f in frames if Path(f.filename).resolve().parent == cwd]   # the modules
        cell = [f for f in frames if "ipykernel" in f.filename or f.filename.startswith("<ipy")]
        where = f"{Path(mine[-1].filename).name}, line {mine[-1].lineno}: {mine[-1].line}" \
            if mine else f"this cell, line {cell[-1].lineno}: {cell[-1].line}" if cell else ""
        if isinstance(exc, NotImplementedError):   # the stubs: nothing to diagnose yet
            fn = f"{mine[-1].name}() in {Path(mine[-1].filename).name}" if mine else \
                "a function it calls"
            return one_line(f"{self.what} stopped: {fn} is not implemented yet "
                            f"({str(exc)[:200]})") + \
                "\nWrite it, then run this cell again; the cells below that need its " \
                "results skip themselves until then."
        lines = [one_line(f"{self.what} stopped: {type(exc).__name__}: {str(exc)[:300]}")
                 + (f"\n  at {one_line(where)}" if where else "")]
        if numpy_said:
            lines.append(f"  ({numpy_said})")
        failing = self._failing()
        module = self._module()
        if failing:
            lines += self._advice(failing, "run this cell again; the cells below that need its "
                                           "results skip themselves until then")
        elif self.uses:
            lines.append(f"The public checks of the pieces it uses pass ({', '.join(self.uses)}): "
                         f"the line above is where to look in {module}. Fix it, then run this "
                         "cell again; the cells below that need its results skip themselves "
                         "until then.")
        else:
            lines.append(f"Fix {module} where the line above says, then run this cell again.")
        return "\n".join(lines)

    def _failing(self) -> list[tuple[str, str]]:
        """``[(question, what its check says)]`` of the failing checks of ``uses``."""
        failing = []
        for q in self.uses:
            try:
                with _quiet(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    check(self.assignment_id, q, show_progress=False)
            except AssertionError as e:
                failing.append((q, str(e)))
            except Exception as e:  # noqa: BLE001 - a check that cannot run says why
                failing.append((q, f"{type(e).__name__}: {e}"))
        return failing

    def _advice(self, failing: list[tuple[str, str]], then: str) -> list[str]:
        """The first failing check's words, word for word, and what to do."""
        q, text = failing[0]
        others = [f for f, _ in failing[1:]]
        return [f"grader.check({q!r}) says:", *("  " + line for line in text.splitlines()),
                f"Fix {self._module()} until that check passes"
                + (f" (and {', '.join(others)})" if others else "") + f", then {then}."]

    def _module(self) -> str:
        try:
            return " / ".join(f for f in config.load(self.assignment_id).submission_files
                              if f.endswith(".py"))
        except Exception:  # noqa: BLE001 - words only
            return "your module"


def finished(run: "experiment | None", cell: str) -> bool:
    """Whether the experiment ``run`` (None: its cell has not run) finished;
    else says that the cell calling this is skipped, and why."""
    if run is not None and run.finished:
        return True
    print(f"skipped: {cell} has not finished (fix the error there, run it again, then this cell)")
    return False


def _finite(value: Any) -> bool:
    """No NaN or inf among the numbers of ``value`` (what is not numbers is left alone)."""
    import numpy as np
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    try:
        return bool(np.all(np.isfinite(np.asarray(value, dtype=np.float64))))
    except (TypeError, ValueError):
        return True


def _warned(caught: list) -> str:
    """numpy's RuntimeWarnings of a block in one line: each text once, counted."""
    counts: dict[str, int] = {}
    for w in caught:
        text = str(w.message).strip()
        counts[text] = counts.get(text, 0) + 1
    if not counts:
        return ""
    said = "; ".join(f"{t!r}" + (f" ({n} times)" if n > 1 else "")
                     for t, n in list(counts.items())[:3])
    return f"numpy warned: {said}" + (f" and {len(counts) - 3} more" if len(counts) > 3 else "")


class _quiet:
    """Output of the student's code while a check re-runs for a diagnosis: dropped."""

    def __enter__(self):
        import io
        from contextlib import redirect_stderr, redirect_stdout
        self._out, self._err = redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO())
        self._out.__enter__()
        self._err.__enter__()

    def __exit__(self, *exc):
        self._err.__exit__(*exc)
        self._out.__exit__(*exc)
        return False
