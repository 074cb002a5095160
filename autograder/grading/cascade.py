"""A slip charged where it is, and named where it bites.

After every question of a grading ran, a failed part that failed because a
piece it uses fails elsewhere is annotated with that piece and its question
(``PartResult.cause``), and its feedback names them first:

* by function: the part failed on an answer (or an exception) of a
  submission function that another question declares as its own
  (``[[questions]] functions`` in assignment.toml), and that question lost
  points: D's K-sweep through ``group_standardised_weight`` (q2), B's
  switches through capstone A's pieces;
* by declaration: a part declares the questions whose pieces it ``uses``
  (a bar that trains with them), and one of them lost points: A's bar.

The points are not moved: where a bar exists to combine the pieces it is
charged again on purpose (each assignment's toml says where). What changes
is that the student reads the root first, and the class report groups the
part under its root (``cause``) instead of as a cause of its own.
"""
from __future__ import annotations

from . import config
from .parts import Outcome, score


def _lost(outcome: Outcome) -> bool:
    return outcome.fraction < 1.0 - 1e-12 and outcome.status.graded


def annotate(graded: list, assignment: config.Assignment) -> None:
    """Annotate the failed parts of ``graded`` (``[(question, outcome), ...]``)
    whose root is another question, and re-render their feedback."""
    by_name = {q.name: (q, o) for q, o in graded}
    owner = {fn: q.name for q in assignment.questions for fn in q.functions}
    for q, outcome in graded:
        changed = False
        specs = {p.id: p for p in q.parts}
        for part in outcome.parts:
            if part.passed or part.cause:
                continue
            root = owner.get(part.fn) if part.fn else None
            if root and root != q.name and root in by_name and _lost(by_name[root][1]):
                part.cause = (f"{part.fn}() fails in {root} ({by_name[root][0].title}); fix it "
                              "there first")
                changed = True
                continue
            spec = specs.get(part.id)
            lost = [u for u in (spec.uses if spec else ()) if u in by_name
                    and _lost(by_name[u][1])]
            if lost:
                part.cause = (f"the pieces it trains with fail in {', '.join(lost)}; fix "
                              f"{'them' if len(lost) > 1 else 'it'} there first")
                changed = True
        if changed and outcome.parts:
            again = score(outcome.parts, q.points, outcome.notes, outcome.measurements)
            outcome.lines[:] = again.lines
