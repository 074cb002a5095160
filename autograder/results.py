"""Gradescope's results.json: a placeholder first, the real file atomically."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__


@dataclass
class QuestionResult:
    name: str
    title: str
    score: float
    max_score: float
    visibility: str
    output: str
    seconds: float = 0.0
    passed: bool = False        # every part passed (also for 0-point, hand-graded entries)


@dataclass
class Report:
    assignment: str
    questions: list[QuestionResult] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)     # intake and overall notes
    seconds: float = 0.0
    expected_source: str = ""          # "reference" (recorded from solutions/) or "stored"
    student_id: str = ""               # per-student assignments: whose instance was graded

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions), 6)

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions)

    def to_gradescope(self) -> dict:
        return {
            "score": self.score,
            "execution_time": round(self.seconds, 1),
            "output": "\n".join(self.messages),
            "output_format": "text",
            "stdout_visibility": "hidden",
            "tests": [{"name": f"{q.name}: {q.title}", "number": str(i + 1),
                       "score": round(q.score, 6), "max_score": q.max_score,
                       "status": "passed" if q.passed else "failed",
                       "output": q.output, "output_format": "text",
                       "visibility": q.visibility}
                      for i, q in enumerate(self.questions)],
            "extra_data": {"autograder_version": __version__, "assignment": self.assignment,
                           "expected_source": self.expected_source,
                           "student_id": self.student_id},
        }

    def table(self) -> str:
        width = max([len(q.name) for q in self.questions] + [8])
        rows = [f"{'question':<{width}}  {'score':>11}  {'time':>6}  first message"]
        for q in self.questions:
            first = next((l for l in q.output.splitlines() if l.startswith(("FAIL", "not "))),
                         q.output.splitlines()[0] if q.output else "")
            rows.append(f"{q.name:<{width}}  {q.score:5.2f}/{q.max_score:<5g}  {q.seconds:5.1f}s"
                        f"  {first[:90]}")
        rows.append(f"{'total':<{width}}  {self.score:5.2f}/{self.max_score:<5g}  "
                    f"{self.seconds:5.1f}s")
        return "\n".join(rows)


def write_atomically(path: Path, data: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_placeholder(path: Path, assignment: str) -> None:
    write_atomically(path, {
        "score": 0.0, "output": "grading did not finish; please contact the course staff",
        "tests": [], "extra_data": {"autograder_version": __version__,
                                    "assignment": assignment, "placeholder": True}})
