"""The class report at scale: a synthetic class of 300 submissions of one
assignment, its report (similarity included) timed on one core after grading.

    .venv/bin/python bench/bench_report.py [--assignment a_ppo] [--n 300] [--work DIR]

How the class is made (grading 300 submissions would take an hour and
measure grading, not the report):

1. every distinct submission of the assignment's synthetic class
   (:mod:`autograder.commands.synthetic`: the reference, each correct style,
   each catalogued mistake, a blank) is graded once by ``grade-all`` on its
   quick questions (budget_cpu_s below validate's SLOW_BUDGET_S), in
   ``<work>/distinct`` (a re-run reuses those gradings);
2. submission ``i`` of the class of ``n`` is distinct submission ``i mod m``
   with its code disguised by seed ``i`` (every function's local names
   renamed, its functions reordered: :mod:`autograder.catalogue.disguise`),
   and that distinct submission's results.json copied as its own, with its
   own batch record, so that ``grade-all`` finds every submission graded
   (the run says how many it skipped: all of them);
3. ``grade-all`` runs on the class, pinned to one core: it skips every
   submission (already graded) and writes grades.csv, summary.txt and the
   report; then the report alone is timed again, stage by stage.

Prints the wall and CPU seconds, and the ratio to the bar of 60 s.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.commands.batch import BATCH_FILE, _batch_record, grade_all  # noqa: E402
from autograder.commands.export import _safe_name  # noqa: E402
from autograder.commands.report import write_report  # noqa: E402
from autograder.commands.synthetic import disguised, write_class  # noqa: E402
from autograder.commands.validate import SLOW_BUDGET_S  # noqa: E402
from autograder.grading import config  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)

BAR_S = 60.0


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--assignment", default="a_ppo")
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--work", type=Path, default=Path("/tmp/rlcap-bench-report"))
    p.add_argument("--jobs", type=int, default=2, help="parallel gradings of step 1")
    args = p.parse_args()
    a = config.load(args.assignment)
    quick = [q.name for q in a.questions if q.budget_cpu_s < SLOW_BUDGET_S]
    distinct = args.work / "distinct"
    if not (distinct / "_grades").is_dir():
        write_class(a.id, distinct, copies=0, blanks=1)
    t0 = time.monotonic()
    grade_all(a.id, distinct, questions=quick, jobs=args.jobs, show_progress=False,
              echo=lambda *x: None)
    entries = sorted(d.name for d in distinct.iterdir() if d.is_dir() and d.name != "_grades")
    print(f"{a.id}: {len(entries)} distinct submissions graded on {len(quick)} quick questions "
          f"({time.monotonic() - t0:.0f} s; reused when already graded)")

    klass = args.work / f"class{args.n}"
    shutil.rmtree(klass, ignore_errors=True)
    for i in range(args.n):
        entry = entries[i % len(entries)]
        name = f"s{i:03d}-{entry}"
        disguised(distinct / entry, klass / name, a.submission_files, seed=i)
        graded = klass / "_grades" / _safe_name(name)
        graded.mkdir(parents=True)
        shutil.copyfile(distinct / "_grades" / _safe_name(entry) / "results.json",
                        graded / "results.json")
        (graded / BATCH_FILE).write_text(json.dumps(_batch_record(a, quick, name)))

    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})     # one core, children too
    wall, cpu = time.perf_counter(), cpu_seconds()
    rows = grade_all(a.id, klass, questions=quick, show_progress=False, echo=lambda *x: None)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    out = klass / "_grades"
    dirs = {r.submission.name: out / _safe_name(r.submission.name) for r in rows}
    t, c = time.perf_counter(), cpu_seconds()
    report = write_report(out, a, [a.question(q) for q in quick], rows, dirs,
                          echo=lambda *x: None)
    alone, alone_cpu = time.perf_counter() - t, cpu_seconds() - c
    sim = report["similarity"]
    print(f"CPU: {cpu_name()}; pinned to 1 core")
    print(f"class: {args.n} submissions, code from {len(entries)} catalogue submissions disguised "
          f"(names renamed, functions reordered), results copied from their gradings")
    skipped = sum(r.status == "skipped" for r in rows)
    print(f"grade-all after grading ({skipped} of {len(rows)} submissions skipped; CSV, "
          f"summary, report): "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU")
    print(f"the report alone: {alone:.1f} s wall, {alone_cpu:.1f} s CPU (similarity "
          f"{report['seconds']['similarity']:.1f} s, numbers {report['seconds']['numbers']:.2f} s, "
          f"page {report['seconds']['page']:.2f} s); "
          f"{sim['compared']} of {sim['possible']} pairs share code and were measured, "
          f"{sim['flagged']} flagged, clusters of sizes "
          f"{[c['size'] for c in sim['clusters']]}")
    page = out / "report.html"
    print(f"page: {page.stat().st_size / 1e6:.1f} MB (every student's feedback inside), "
          f"report.json {(out / 'report.json').stat().st_size / 1e6:.1f} MB")
    print(f"ratio to the {BAR_S:.0f} s bar (wall; CPU): grade-all {wall / BAR_S:.2f}; "
          f"{cpu / BAR_S:.2f}, the report alone {alone / BAR_S:.2f}; {alone_cpu / BAR_S:.2f}")
    print(f"report: {out / 'report.html'}")


if __name__ == "__main__":
    main()
