"""The class report of ``grade-all``: ``<out>/report.json`` (the numbers) and
``<out>/report.html`` (the same numbers on one self-contained page, drawn by
:mod:`.report_html`), written after every batch.

It reads each submission's results.json as data only (statuses, part
records, measurements, ``execution_time`` and ``extra_data.seconds``), never
its feedback wording; a group of failures quotes one member's feedback as it
is, as an example. Counts are per submission, as in ``summary.txt``. Nothing
here writes to a submission's results.json.

* **Roster**: one entry per submission (``students``: its label, total,
  state, the questions it lost points on, its similarity flag) and their
  order (``roster``): by total, the submissions that attempted nothing
  (nothing implemented, files missing, refused) first among the zeros;
  ``zeros`` and ``non_attempts`` name them for the page's header. The page
  (not report.json) also carries each student's feedback as the student
  sees it once published (:func:`feedback`), so that it reads alone.
* **Scores**: the totals' histogram; per question its mean, pass rate (full
  marks), zeros, *difficulty* (the share of its points the class lost: 0 when
  everyone has full marks) and *discrimination* (the Pearson correlation of
  the question's score with the rest of the total, over the submissions;
  ``None`` when either does not vary).
* **Causes**: per question, the failed parts grouped by (part id, kind,
  diagnosis) where the judge gave a diagnosis, else by (part id, kind, the
  case that failed first); a part that failed because a piece it uses fails
  in another question (``cause``, ``grading.cascade``) is grouped under that
  root instead; a part that passed but earns nothing because a part it
  requires failed adds its points to that part's group. Each group has its
  count, points lost, one member's feedback and its members; groups are
  ordered by points lost. A question that ended before any part is one group
  of its status. Submissions that are graded as a whole (nothing
  implemented, a module that does not import, files missing) are counted
  once each under ``submissions`` and kept out of every question's causes.
* **Faults and time-outs**: questions that did not finish (an autograder
  fault, a time-out, a crash, a protocol error, the grading's time limit)
  and gradings that did not finish, apart from wrong answers.
* **Times**: each grading's ``execution_time`` (histogram), the slowest ones
  with their slowest question.
* **Similarity**: :mod:`.similarity` (for review, never a verdict).
* ``anonymous``: students are "student 001", ... in an order drawn from
  their submissions' names (not alphabetical); no names, ids, links, code,
  and no text a submission chose (its feedback, exception messages, output):
  each student's page shows scores, statuses and failed parts' ids and kinds.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Callable, Optional

from ..grading import config
from ..grading.status import Status
from .tables import (AUTOGRADER_FAULT, REFUSED, TIMED_OUT, Row, first_failure,
                     question_outcomes, submission_status)

# The question did not finish (the "faults and time-outs" section); and the submission-level
# statuses, counted once per submission and kept out of the causes.
ENDED = tuple(str(s) for s in (Status.AUTOGRADER_FAULT, Status.TIMED_OUT, Status.CRASHED,
                               Status.PROTOCOL_ERROR, Status.DEADLINE))
WHOLE = tuple(str(s) for s in (Status.NOTHING_IMPLEMENTED, Status.IMPORT_ERROR,
                               Status.MISSING_FILES))
NOT_ATTEMPTED = (str(Status.NOTHING_IMPLEMENTED), str(Status.MISSING_FILES), REFUSED)
STATUS_WORDS = {str(s): s.words for s in Status}
STATE_WORDS = {**STATUS_WORDS, "graded": "graded", REFUSED: "refused (not graded)",
               "unfinished": "grading did not finish"}
SLOWEST = 10            # gradings listed by time
EXAMPLE_CHARS = 2000    # of a group's example feedback
FEEDBACK_CHARS = 8000   # of one question's feedback on the page (the rest: its results.json)
PARTNERS = 5            # flagged partners named per student (beyond a cluster)
# Part kinds whose message quotes what the submission chose (an exception's text, its
# output): an anonymous report names the kind only.
STUDENT_TEXT = ("raised", "not_implemented", "crashed", "protocol_error", "timed_out")
JSON_NAME, HTML_NAME = "report.json", "report.html"


# ============================================================================ students
def _people(row: Row) -> str:
    names = [p.get("name") or p.get("sid") or p.get("email") or "" for p in
             row.submission.submitters]
    return ", ".join(n for n in names if n) or row.submission.name


def _students(rows: list[Row], dirs: dict[str, Path], out: Path, anonymous: bool) -> list[dict]:
    """One entry per row: its label, and (named reports) its submission,
    people, ids and the relative link to its results.json (an extra: the
    page itself carries the feedback)."""
    if anonymous:
        order = sorted(range(len(rows)), key=lambda i: hashlib.sha256(
            rows[i].submission.name.encode()).hexdigest())
        number = {i: n + 1 for n, i in enumerate(order)}
        width = max(3, len(str(len(rows))))
        return [{"label": f"student {number[i]:0{width}d}"} for i in range(len(rows))]
    entries = []
    for row in rows:
        path = dirs.get(row.submission.name)
        entries.append({
            "label": _people(row), "submission": row.submission.name,
            "ids": [p.get("sid") for p in row.submission.submitters if p.get("sid")],
            "results": (os.path.relpath(path / "results.json", out).replace(os.sep, "/")
                        if path else None)})
    return entries


def _state(row: Row, unfinished: bool) -> str:
    """What became of a submission as a whole: refused, a grading that did not
    finish, a whole-submission status (nothing implemented, ...), else graded."""
    if row.status == REFUSED:
        return REFUSED
    if unfinished or row.status in (TIMED_OUT, AUTOGRADER_FAULT):
        return row.status if row.status in (TIMED_OUT, AUTOGRADER_FAULT) else "unfinished"
    return submission_status(row.data or {})


def _roster(students: list[dict], outcomes: list[dict], questions: list[config.Question]
            ) -> list[int]:
    """Each student's questions with points lost (``lost``: [question, points]);
    the order of the roster: by total, those that attempted nothing first
    among equal totals, then by label."""
    for st, o in zip(students, outcomes):
        st["lost"] = [[q.name, round(q.points - o.get(q.name, {}).get("score", 0.0), 6)]
                      for q in questions
                      if q.points and q.points - o.get(q.name, {}).get("score", 0.0) > 1e-9]
        st["attempted"] = st["state"] not in NOT_ATTEMPTED
    return sorted(range(len(students)), key=lambda i: (
        students[i]["total"], students[i]["attempted"], students[i]["label"]))


def feedback(rows: list[Row], anonymous: bool = False) -> list[dict]:
    """Per row, the feedback its student sees once the grades are published:
    the submission's messages (``output``) and each question's name, score
    and feedback, in results.json's order, each capped at ``FEEDBACK_CHARS``;
    a question Gradescope never shows (``visibility: hidden``) is marked so.
    Anonymous: no text, only each question's score, status and failed parts
    (ids and kinds)."""
    out = []
    for row in rows:
        data = row.data or {}
        tests = []
        for t in data.get("tests") or []:
            extra = t.get("extra_data") or {}
            entry = {"name": str(t.get("name") or ""), "score": float(t.get("score") or 0.0),
                     "max": float(t.get("max_score") or 0.0),
                     "status": str(extra.get("status") or ""),
                     "hidden": str(t.get("visibility") or "") == "hidden"}
            if anonymous:
                entry["name"] = str(extra.get("question") or entry["name"].split(":")[0])
                entry["failed"] = [[str(p.get("id") or ""), str(p.get("kind") or "")]
                                   for p in extra.get("parts") or []
                                   if isinstance(p, dict) and not p.get("passed")]
            else:
                entry["output"], entry["cut"] = _capped(str(t.get("output") or ""))
            tests.append(entry)
        item = {"tests": tests}
        if not anonymous:
            item["output"], item["cut"] = _capped(str(data.get("output") or ""))
            item["error"] = str((data.get("extra_data") or {}).get("run_error") or "")
        out.append(item)
    return out


def _capped(text: str) -> tuple[str, int]:
    """(text up to FEEDBACK_CHARS, how many characters were left out)."""
    return text[:FEEDBACK_CHARS], max(0, len(text) - FEEDBACK_CHARS)


# ============================================================================ statistics
def _histogram(values: list[float], top: float, bins: int) -> dict:
    """Equal bins over [0, top] (the last one closed): edges and counts."""
    top = top if top > 0 else max(values + [1.0])
    width = top / bins
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int(v / width)))] += 1
    return {"edges": [round(i * width, 6) for i in range(bins + 1)], "counts": counts}


def _pearson(x: list[float], y: list[float]) -> Optional[float]:
    if len(x) < 3 or statistics.pstdev(x) == 0 or statistics.pstdev(y) == 0:
        return None
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return round(sxy / math.sqrt(sxx * syy), 6)


def _scores(rows: list[Row], questions: list[config.Question]) -> list[dict[str, dict]]:
    """Per row, {question: its outcome} (missing questions: not in the dict)."""
    return [question_outcomes(r.data or {}) for r in rows]


def _statistics(outcomes: list[dict], questions: list[config.Question]) -> tuple[dict, list]:
    totals = [sum(o[q.name]["score"] for q in questions if q.name in o) for o in outcomes]
    maximum = sum(q.points for q in questions)
    bins = int(min(20, max(5, math.ceil(maximum)))) if maximum else 5
    total = {"max": maximum, "values": [round(t, 6) for t in totals],
             "mean": round(statistics.fmean(totals), 6) if totals else 0.0,
             "median": round(statistics.median(totals), 6) if totals else 0.0,
             "zeros": sum(t <= 0 for t in totals),
             "full": sum(t >= maximum for t in totals) if maximum else 0,
             "histogram": _histogram(totals, maximum, bins)}
    per_question = []
    for q in questions:
        vals = [o[q.name]["score"] if q.name in o else 0.0 for o in outcomes]
        rest = [t - v for t, v in zip(totals, vals)]
        mean = statistics.fmean(vals) if vals else 0.0
        per_question.append({
            "name": q.name, "title": q.title, "points": q.points, "mean": round(mean, 6),
            "pass_rate": (round(sum(v >= q.points for v in vals) / len(vals), 6)
                          if vals and q.points else None),
            "zeros": sum(v <= 0 for v in vals) if q.points else 0,
            "difficulty": round(1.0 - mean / q.points, 6) if q.points and vals else None,
            "discrimination": _pearson(vals, rest) if q.points else None,
            "lost": round(sum(q.points - v for v in vals), 6)})
    return total, per_question


# ============================================================================ causes
def _share(part: dict) -> float:
    return float(part.get("points") or 0.0)


def _cause_key(part: dict) -> tuple:
    """What makes two failures of a part the same cause: its root elsewhere
    (``cause``: the question where a piece it uses fails), else its id, its
    kind and the judge's diagnosis, else its id, kind and the case that
    failed. Ids, never titles: a title may carry numbers."""
    cause = str(part.get("cause") or "")
    if cause:
        return ("", "", "", "", False, cause)
    diagnosis = str(part.get("diagnosis") or "")
    return (str(part.get("id") or ""), str(part.get("kind") or ""), diagnosis,
            "" if diagnosis else str(part.get("case") or ""), bool(part.get("hidden")), "")


def _example(q: dict, part: Optional[dict], anonymous: bool = False) -> str:
    """One failure as feedback shows it; anonymous: without any text the
    submission chose (an exception's message, a first line of output)."""
    if part is None:
        if anonymous:
            return STATUS_WORDS.get(q["status"], q["status"])
        return first_failure(q)[:EXAMPLE_CHARS]
    if anonymous and str(part.get("kind") or "") in STUDENT_TEXT:
        return f"FAIL {part.get('label', '')}: {str(part.get('kind')).replace('_', ' ')}"
    text = f"FAIL {part.get('label', '')}: {part.get('message', '')}"
    if part.get("diagnosis"):
        text += f"\n     diagnosis: {part['diagnosis']}"
    return text[:EXAMPLE_CHARS]


def _causes(rows: list[Row], outcomes: list[dict], questions: list[config.Question],
            unfinished: set[int], anonymous: bool = False) -> dict[str, list[dict]]:
    groups: dict[str, dict[tuple, dict]] = {q.name: {} for q in questions}

    titles = {(q.name, p.id): p.title for q in questions for p in q.parts}

    def group(qname: str, key: tuple, example: str, status: str) -> dict:
        g = groups[qname].get(key)
        if g is None:
            part, kind, diagnosis, case, hidden, cause = key
            g = groups[qname][key] = {"part": part, "title": titles.get((qname, part), part),
                                      "kind": kind, "diagnosis": diagnosis, "case": case,
                                      "hidden": hidden, "cause": cause, "status": status,
                                      "count": 0, "points_lost": 0.0, "example": example,
                                      "members": []}
        return g

    for i, o in enumerate(outcomes):
        if i in unfinished or submission_status(rows[i].data or {}) in WHOLE:
            continue
        for q in questions:
            out = o.get(q.name)
            if out is None or out["status"] in ENDED + (str(Status.NOT_GRADED),
                                                        str(Status.HAND_GRADED)) \
                    or not q.points:
                continue
            lost = out["max_score"] - out["score"]
            parts = out["parts"]
            failed = [p for p in parts if not p.get("passed")]
            if not parts and lost > 1e-9:                 # ended before any part
                g = group(q.name, ("", out["status"], "", "", False, ""),
                          _example(out, None, anonymous), out["status"])
                g["count"] += 1
                g["points_lost"] += lost
                g["members"].append(i)
                continue
            by_id = {p.get("id"): p for p in failed}
            mine: dict[tuple, dict] = {}
            for p in failed:
                key = _cause_key(p)
                g = group(q.name, key, _example(out, p, anonymous), out["status"])
                mine.setdefault(key, g)
                g["points_lost"] += _share(p)
            for p in parts:                   # passed, but what it requires failed
                req = by_id.get(p.get("requires"))
                if p.get("passed") and not p.get("credited") and req is not None:
                    groups[q.name][_cause_key(req)]["points_lost"] += _share(p)
            for g in mine.values():
                g["count"] += 1
                g["members"].append(i)
    result = {}
    for q in questions:
        ordered = sorted(groups[q.name].values(), key=lambda g: (-g["points_lost"], -g["count"],
                                                                  g["part"], g["diagnosis"]))
        for g in ordered:
            g["points_lost"] = round(g["points_lost"], 6)
        result[q.name] = ordered
    return result


def _faults(rows: list[Row], outcomes: list[dict], questions: list[config.Question],
            unfinished: set[int], anonymous: bool = False) -> tuple[list[dict], list[dict]]:
    """(questions that did not finish, grouped by question and status;
    gradings that did not finish, one entry each)."""
    runs = []
    for i in sorted(unfinished):
        extra = (rows[i].data or {}).get("extra_data") or {}
        runs.append({"member": i, "status": rows[i].status,
                     "error": ("" if anonymous else
                               str(extra.get("run_error") or "no results.json")[:EXAMPLE_CHARS])})
    found: dict[tuple, dict] = {}
    for i, o in enumerate(outcomes):
        if i in unfinished or submission_status(rows[i].data or {}) in WHOLE:
            continue
        for q in questions:
            out = o.get(q.name)
            if out is None or out["status"] not in ENDED:
                continue
            f = found.setdefault((q.name, out["status"]), {
                "question": q.name, "status": out["status"], "count": 0, "points_lost": 0.0,
                "example": _example(out, None, anonymous), "members": []})
            f["count"] += 1
            f["points_lost"] = round(f["points_lost"] + out["max_score"] - out["score"], 6)
            f["members"].append(i)
    order = {q.name: n for n, q in enumerate(questions)}
    return sorted(found.values(), key=lambda f: (order[f["question"]], f["status"])), runs


# ============================================================================ times
def _times(rows: list[Row], outcomes: list[dict], unfinished: set[int]) -> dict:
    timed = []
    for i, (row, o) in enumerate(zip(rows, outcomes)):
        if i in unfinished or not row.data or "execution_time" not in row.data:
            continue
        slowest = max(o.items(), key=lambda kv: kv[1].get("seconds", 0.0), default=None)
        timed.append({"member": i, "seconds": float(row.data.get("execution_time") or 0.0),
                      "question": slowest[0] if slowest else "",
                      "question_seconds": slowest[1].get("seconds", 0.0) if slowest else 0.0})
    seconds = [t["seconds"] for t in timed]
    top = max(seconds + [1.0])
    return {"graded": len(timed), "median": round(statistics.median(seconds), 3) if seconds
            else 0.0, "max": round(max(seconds), 3) if seconds else 0.0,
            "total": round(sum(seconds), 3),
            "histogram": _histogram(seconds, top, 12),
            "slowest": sorted(timed, key=lambda t: (-t["seconds"], t["member"]))[:SLOWEST]}


def _question_seconds(data: dict) -> dict[str, float]:
    return {str((t.get("extra_data") or {}).get("question") or ""):
            float((t.get("extra_data") or {}).get("seconds") or 0.0)
            for t in data.get("tests") or []}


# ============================================================================ similarity
def _similarity(sim, rows: list[Row], anonymous: bool) -> dict:
    from . import similarity as S
    index = {r.submission.name: i for i, r in enumerate(rows)}

    def ranges(doc, lines: list[int]) -> list[list]:
        """Matched lines as [file, first, last] runs in the original files."""
        runs: list[list] = []
        for i in lines:
            fname, n = doc.origin[i]
            if runs and runs[-1][0] == fname and runs[-1][2] in (n - 1, n):
                runs[-1][2] = n
            else:
                runs.append([fname, n, n])
        return runs

    pairs = []
    for p in sim.listed:
        entry = {"a": index[p.a], "b": index[p.b], "score": round(p.score, 4),
                 "shares": [round(s, 4) for s in p.shares], "overlap": p.overlap,
                 "flagged": p.flagged, "cluster": p.cluster}
        if not anonymous:
            entry["lines"] = [ranges(sim.documents[p.a], p.matched[0]),
                              ranges(sim.documents[p.b], p.matched[1])]
        pairs.append(entry)
    clusters = [{"members": [index[m] for m in c.members], "size": len(c.members),
                 "share": round(c.share, 4), "least": round(min(c.shares), 4),
                 "shares": [round(x, 4) for x in c.shares], "pairs": c.pairs}
                for c in sim.clusters]
    return {"method": "copydetect (winnowing, as MOSS), names and strings normalised; the "
                      "stubs' lines and every fingerprint of what the handout ships removed",
            "noise": S.NOISE, "flag_share": S.FLAG_SHARE, "min_overlap": S.MIN_OVERLAP,
            "cluster_min": S.CLUSTER_MIN, "compared": sim.compared, "possible": sim.possible,
            "flagged": len(sim.flagged), "too_short": sorted(index[n] for n in sim.too_short),
            "clusters": clusters, "pairs": pairs, "error": sim.error}


def _flags(students: list[dict], similarity: Optional[dict], sim, index: dict[str, int]) -> None:
    """Each student's similarity flag (``similar``): the cluster it is in
    (index into ``similarity["clusters"]``) and up to ``PARTNERS`` students
    it makes a flagged pair with outside that cluster ([index, score]);
    ``index``: the students' indices by submission name."""
    for st in students:
        st["similar"] = {"cluster": None, "pairs": []}
    if not similarity or sim is None:
        return
    for c, cluster in enumerate(similarity["clusters"]):
        for i in cluster["members"]:
            students[i]["similar"]["cluster"] = c
    for p in sim.flagged:
        if p.cluster is not None:
            continue
        a, b = index[p.a], index[p.b]
        for me, other in ((a, b), (b, a)):
            mine = students[me]["similar"]["pairs"]
            if len(mine) < PARTNERS:
                mine.append([other, round(p.score, 4)])


# ============================================================================ the report
def build(assignment: config.Assignment, questions: list[config.Question], rows: list[Row],
          dirs: dict[str, Path], out: Path, *, anonymous: bool = False, sim=None) -> dict:
    """The report's numbers (``report.json``); ``sim``: a :class:`.similarity.Similarity`
    of the rows' submissions (None: not computed)."""
    outcomes = _scores(rows, questions)
    for o, r in zip(outcomes, rows):
        seconds = _question_seconds(r.data or {})
        for name, q in o.items():
            q["seconds"] = seconds.get(name, 0.0)
    unfinished = {i for i, r in enumerate(rows)
                  if not r.data or ((r.data.get("extra_data") or {}).get("run_error"))}
    total, per_question = _statistics(outcomes, questions)
    faults, runs = _faults(rows, outcomes, questions, unfinished, anonymous)
    students = _students(rows, dirs, out, anonymous)
    for s, r, t, i in zip(students, rows, total["values"], range(len(rows))):
        s["total"], s["status"] = t, r.status
        s["state"] = _state(r, i in unfinished)
    roster = _roster(students, outcomes, questions)
    whole_members = [i for i, r in enumerate(rows)
                     if i not in unfinished and submission_status(r.data or {}) in WHOLE]
    for q in per_question:          # questions that did not finish, and gradings that did not
        q["lost_to_faults"] = round(sum(f["points_lost"] for f in faults
                                        if f["question"] == q["name"])
                                    + sum(q["points"] - outcomes[i].get(q["name"], {}).get(
                                        "score", 0.0) for i in unfinished), 6)
        q["lost_whole"] = round(sum(q["points"] - outcomes[i].get(q["name"], {}).get(
            "score", 0.0) for i in whole_members), 6)
    whole: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        status = submission_status(r.data or {})
        if i not in unfinished and status in WHOLE:
            whole.setdefault(status, []).append(i)
    similarity = _similarity(sim, rows, anonymous) if sim is not None else None
    _flags(students, similarity, sim, {r.submission.name: i for i, r in enumerate(rows)})
    return {"assignment": assignment.id, "title": assignment.title,
            "questions": per_question, "submissions": len(rows), "anonymous": anonymous,
            "whole": [{"status": st, "words": STATUS_WORDS[st], "count": len(m),
                       "members": m} for st, m in sorted(whole.items())],
            "students": students, "roster": roster,
            "zeros": [i for i in roster if students[i]["total"] <= 0],
            "non_attempts": [i for i in roster if not students[i]["attempted"]],
            "totals": total,
            "causes": _causes(rows, outcomes, questions, unfinished, anonymous),
            "faults": faults, "unfinished": runs,
            "times": _times(rows, outcomes, unfinished),
            "similarity": similarity}


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_report(out: Path, assignment: config.Assignment, questions: list[config.Question],
                 rows: list[Row], dirs: dict[str, Path], *, anonymous: bool = False,
                 similarity: bool = True, echo: Callable = print) -> dict:
    """Write ``report.json`` and ``report.html`` under ``out``; return the
    numbers, with the seconds each stage took under ``"seconds"``."""
    from . import report_html
    from .similarity import class_similarity
    t0 = time.perf_counter()
    sim = class_similarity(assignment.id, assignment.submission_files,
                           [(r.submission.name, r.submission.path) for r in rows]) \
        if similarity else None
    t1 = time.perf_counter()
    data = build(assignment, questions, rows, dirs, out, anonymous=anonymous, sim=sim)
    t2 = time.perf_counter()
    page = report_html.render(data, sim, feedback(rows, anonymous))
    _write(out / JSON_NAME, json.dumps(data, indent=1))
    _write(out / HTML_NAME, page)
    t3 = time.perf_counter()
    seconds = {"similarity": round(t1 - t0, 3), "numbers": round(t2 - t1, 4),
               "page": round(t3 - t2, 4)}
    flagged = (data["similarity"] or {}).get("flagged", 0)
    clusters = len((data["similarity"] or {}).get("clusters") or [])
    echo(f"class report: {out / HTML_NAME} (one file: open it in a browser; numbers in "
         f"{JSON_NAME}); {flagged} pair(s) flagged for review"
         + (f", {clusters} cluster(s) sharing one source" if clusters else "")
         + f"; {sum(seconds.values()):.1f} s"
         + (" (anonymous)" if anonymous else ""))
    return {**data, "seconds": seconds}
