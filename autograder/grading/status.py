"""The one vocabulary of outcomes: what became of a question (:class:`Status`)
and why a part failed (:class:`Kind`).

Every writer and reader of results (results.json, grades.csv, summary.txt,
the class report, tables, ``validate``, PrairieLearn's adapter) uses these
members; the words shown to people are their ``words``, written here once.
Both are ``str`` enums: a member is its value (``Status.PASSED ==
"passed"``), so results.json stays plain JSON and older files read back.

Blame, stated once (DESIGN.md "Blame"): a fault is the autograder's only if
it happens before any submission code ran or in the grader's own data
(:attr:`Status.AUTOGRADER_FAULT`). A module that does not import, a process
that ends, a protocol breach, a time-out and any exception while handling
what the submission sent are the submission's, each with its own status. A
whole grading that runs out of its own time says so (:attr:`Status.DEADLINE`)
with how far it got: neither the student's fault nor a bug of the grader.
"""
from __future__ import annotations

from enum import Enum
from typing import Optional


class Status(str, Enum):
    """What became of one question (or, for :attr:`NOTHING_IMPLEMENTED`, of
    a whole submission)."""
    PASSED = "passed"
    FAILED = "failed"                     # graded: some part's answer is wrong
    RAISED = "raised"                     # graded: some part's function raised
    NOT_IMPLEMENTED = "not_implemented"   # graded: every failing part is not written yet
    NOTHING_IMPLEMENTED = "nothing_implemented"   # a blank or empty submission (every question)
    IMPORT_ERROR = "import_error"         # the module did not import (syntax or import error)
    CRASHED = "crashed"                   # the submission ended the worker process
    TIMED_OUT = "timed_out"               # CPU, memory or file quota of the question's tree
    PROTOCOL_ERROR = "protocol_error"     # the worker broke the wire protocol
    DEADLINE = "deadline"                 # the whole grading's time limit came first
    MISSING_FILES = "missing_files"       # declared submission files not in the upload
    AUTOGRADER_FAULT = "autograder_fault"  # before any submission code ran, or grader data
    NOT_GRADED = "not_graded"             # left to the platform (graded on submission only)
    HAND_GRADED = "hand_graded"           # a written answer carried to the results (0 points)

    def __str__(self) -> str:
        return self.value

    @property
    def words(self) -> str:
        """The status as people read it (tables, the class report)."""
        return _WORDS[self]

    @property
    def ends_question(self) -> bool:
        """The question did not finish grading (its parts were not all judged)."""
        return self in _ENDS

    @property
    def submission_fault(self) -> bool:
        """The submission's code failed to run (not merely a wrong answer)."""
        return self in _SUBMISSION_FAULTS

    @property
    def graded(self) -> bool:
        """The question's points count here (not left to the platform)."""
        return self is not Status.NOT_GRADED

    @classmethod
    def of(cls, value: object) -> Optional["Status"]:
        """The member named by ``value`` (a results.json string), else None."""
        try:
            return cls(str(value))
        except ValueError:
            return None


_WORDS = {
    Status.PASSED: "passed",
    Status.FAILED: "wrong answer",
    Status.RAISED: "raised an exception",
    Status.NOT_IMPLEMENTED: "not implemented yet",
    Status.NOTHING_IMPLEMENTED: "nothing implemented",
    Status.IMPORT_ERROR: "does not import",
    Status.CRASHED: "ended the process",
    Status.TIMED_OUT: "ran out of time, memory or file quota",
    Status.PROTOCOL_ERROR: "broke the protocol",
    Status.DEADLINE: "not reached before the grading's time limit",
    Status.MISSING_FILES: "files missing",
    Status.AUTOGRADER_FAULT: "autograder fault",
    Status.NOT_GRADED: "not graded here",
    Status.HAND_GRADED: "graded by hand",
}
_ENDS = frozenset({Status.IMPORT_ERROR, Status.CRASHED, Status.TIMED_OUT,
                   Status.PROTOCOL_ERROR, Status.DEADLINE, Status.MISSING_FILES,
                   Status.AUTOGRADER_FAULT, Status.NOT_GRADED})
_SUBMISSION_FAULTS = frozenset({Status.RAISED, Status.IMPORT_ERROR, Status.CRASHED,
                                Status.TIMED_OUT, Status.PROTOCOL_ERROR})


class Kind(str, Enum):
    """Why one part failed: the only thing a hidden case may say about it."""
    VALUE = "value"                       # a wrong number
    SHAPE = "shape"                       # wrong type, shape, dtype, keys or length
    NONFINITE = "nonfinite"               # NaN or inf
    RAISED = "raised"                     # the function raised an exception
    NOT_IMPLEMENTED = "not_implemented"   # NotImplementedError, or no such function
    MODIFIED_INPUT = "modified_input"     # changed an argument in place
    TIMED_OUT = "timed_out"
    CRASHED = "crashed"
    PROTOCOL_ERROR = "protocol_error"
    NOT_JUDGED = "not_judged"             # a part the question never reached (see message)

    def __str__(self) -> str:
        return self.value

    @property
    def words(self) -> str:
        return _KIND_WORDS[self]

    @classmethod
    def of(cls, value: object) -> "Kind":
        """The member named by ``value``; an unknown value reads as VALUE."""
        try:
            return cls(str(value))
        except ValueError:
            return cls.VALUE


_KIND_WORDS = {
    Kind.VALUE: "wrong value",
    Kind.SHAPE: "wrong type, shape or dtype",
    Kind.NONFINITE: "not finite (NaN or inf)",
    Kind.RAISED: "raised an exception",
    Kind.NOT_IMPLEMENTED: "not implemented (NotImplementedError)",
    Kind.MODIFIED_INPUT: "changed its input in place",
    Kind.TIMED_OUT: "ran out of time, memory or file quota",
    Kind.CRASHED: "ended the process",
    Kind.PROTOCOL_ERROR: "broke the protocol",
    Kind.NOT_JUDGED: "not judged",
}


def question_status(failed_kinds: list) -> Status:
    """The status of a graded question from the kinds of its failed parts
    (none: passed). Not implemented only when every failure is that."""
    kinds = [Kind.of(k) for k in failed_kinds]
    if not kinds:
        return Status.PASSED
    real = [k for k in kinds if k is not Kind.NOT_JUDGED]
    if real and all(k is Kind.NOT_IMPLEMENTED for k in real):
        return Status.NOT_IMPLEMENTED
    if Kind.RAISED in kinds:
        return Status.RAISED
    return Status.FAILED


def submission_status(statuses: list) -> Optional[Status]:
    """:attr:`Status.NOTHING_IMPLEMENTED` when every graded question of a
    submission is not implemented yet (a blank or an empty module), else None."""
    graded = [Status.of(s) for s in statuses
              if Status.of(s) not in (Status.NOT_GRADED, Status.HAND_GRADED)]
    if graded and all(s is Status.NOT_IMPLEMENTED for s in graded):
        return Status.NOTHING_IMPLEMENTED
    return None
