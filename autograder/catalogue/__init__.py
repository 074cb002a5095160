"""Catalogues of submissions, one module per assignment: ``WRONG`` (realistic
mistakes, each must lose points on the questions it names) and ``RIGHT``
(correct work written in another style: other formulas, loop and float
orders, exception subclasses; each must keep full marks on the questions it
names). ``hostile.py`` holds attacks on the sandbox.

Each entry is written as an edit of the reference solution: (name, file, old
text, new text, questions). The edit must apply exactly once, so a refactor
of the reference cannot silently turn an entry into a copy of the reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..grading import config

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Wrong:
    name: str
    file: str
    old: str
    new: str
    loses: tuple[str, ...]
    why: str = ""
    diagnosis: str = ""       # text the feedback must contain (where the judge can tell)
    not_said: str = ""        # text it must not contain (a cause the submission does not have)
    # The part ids it must lose (not credited) in the questions it is graded on, each cause its
    # own part: every other part there it must keep (empty: not declared).
    lost_parts: tuple[str, ...] = ()
    # ... and the parts it may lose besides, where that depends on the machine's float order
    # (a table within its band of the judge's run on one CPU's kernels and beyond it on another)
    may_lose: tuple[str, ...] = ()

    def write(self, assignment: str, directory: Path, files: tuple[str, ...]) -> Path:
        """Write the reference's submission files into ``directory`` with this
        mistake applied."""
        directory.mkdir(parents=True, exist_ok=True)
        a = config.load(assignment)
        for f in files:
            text = a.source(ROOT / "solutions", f).read_text()
            if f == self.file:
                count = text.count(self.old)
                assert count == 1, f"{self.name}: edit matches {count} times in {f}"
                text = text.replace(self.old, self.new)
            (directory / f).write_text(text)
        return directory


@dataclass(frozen=True)
class Right(Wrong):
    """Correct work in another style: ``loses`` names the questions on which it
    must keep full marks (the field keeps its name so both kinds write alike)."""

    @property
    def keeps(self) -> tuple[str, ...]:
        return self.loses


@dataclass(frozen=True)
class Filled:
    """Correct work written from the handout rather than from the reference:
    the stub of ``file`` with each of its ``raise NotImplementedError(...)``
    lines replaced by a body of another hand (``bodies``: (the start of that
    stub line, the body)); the other submission files are the reference's.
    ``keeps``: the questions on which it must keep full marks. The class
    report's similarity check uses it as a submission independent of the
    reference."""
    name: str
    file: str
    bodies: tuple[tuple[str, str], ...]
    keeps: tuple[str, ...]
    why: str = ""

    def write(self, assignment: str, directory: Path, files: tuple[str, ...]) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        a = config.load(assignment)
        for f in files:
            if f != self.file:
                (directory / f).write_text(a.source(ROOT / "solutions", f).read_text())
        lines = a.source(ROOT / "student_template", self.file).read_text().split("\n")
        for start, body in self.bodies:
            hits = [i for i, l in enumerate(lines) if l.strip().startswith(start)]
            assert len(hits) == 1, f"{self.name}: {start!r} matches {len(hits)} stub lines"
            lines[hits[0]] = body.rstrip("\n")
        (directory / self.file).write_text("\n".join(lines))
        return directory
