"""Wall and CPU time of one hidden grading run of an assignment (the
reference, through the Gradescope zip's run_autograder, pinned to one core
when possible), and optionally of the whole test suite.

    .venv/bin/python bench/bench_grading.py d_grpo [--with-tests]
    .venv/bin/python bench/bench_grading.py --vs-in-process

Prints seconds measured in this run and the ratio to the issue's goals.

``--vs-in-process`` (the probe's cost, issue 29): capstone A's bar (q7: the
judge's loop with the reference's pieces, 3 seeds x 60 updates, and the
evaluation) and capstone D's whole grading (every question, both phases),
each graded sandboxed through ``grade()`` (CPU of the judge and of the
worker trees it reaped) and then run in-process: the same judge functions
on the same cases and expected values, the submission behind an
:class:`InProcessCaller` (arguments deep-copied, inputs watched, as the
worker does). Goals: A's bar at most 1.15x, D's grading at most 2x.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOALS_S = {"d_grpo": 60.0, "a_ppo": 90.0, "exercises": 30.0, "c_diagnose": 90.0, "b_ablations": 240.0}
IN_PROCESS_GOALS = [("a_ppo", ["q7_bar"], 1.15), ("d_grpo", None, 2.0)]


def _timed(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _cpu_s() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def grade_in_process(assignment_id: str, questions, seconds: dict) -> float:
    """The questions' phases as ``grade()`` runs them (public, then hidden),
    the reference behind an InProcessCaller; returns the score fraction of
    the worst question (1.0: full marks). ``seconds``: wall s per question."""
    from autograder.grading import config, expected
    from autograder.grading.judging import HIDDEN_PHASE, PUBLIC_PHASE, Context
    from autograder.grading.parts import merge_phases
    from autograder.grading.reference import load_reference
    from autograder.harness.probe import InProcessCaller
    a = config.load(assignment_id)
    exp, full, public_keys = expected.load(a, questions)
    judge = expected.judge_module(a.id)
    reference = load_reference(a.id, a.submission_files[0])
    worst = 1.0
    for q in a.questions:
        if questions and q.name not in questions:
            continue
        outcomes, t0 = [], time.perf_counter()
        for phase in [PUBLIC_PHASE] + ([HIDDEN_PHASE] if q.has_hidden_cases else []):
            caller = InProcessCaller(reference)
            ctx = Context(caller.call, a.params, public_only=not full, expected=exp,
                          public_keys=set(public_keys), constant=caller.constant,
                          hidden=a.hidden, question=q, phase=phase,
                          shown_exceptions=a.shown_exceptions, call_many=caller.call_many)
            outcomes.append(judge.QUESTIONS[q.name](ctx))
        outcome = merge_phases(*outcomes, q.points) if len(outcomes) == 2 else outcomes[0]
        seconds[q.name] = time.perf_counter() - t0
        worst = min(worst, outcome.fraction)
    return worst


def vs_in_process() -> None:
    from autograder.grading import config, expected
    from autograder.grading.grade import grade
    from bench_ppo import cpu_kind
    print(f"CPU: {cpu_kind()}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    for assignment_id, questions, goal in IN_PROCESS_GOALS:
        a = config.load(assignment_id)
        expected.load(a, questions)                  # the reference's recording: not timed
        sub = Path(tempfile.mkdtemp(prefix="rlcap-bench-grading-"))
        for f in a.submission_files:
            shutil.copy(ROOT / "solutions" / a.id / f, sub / f)
        try:
            c0, t0 = _cpu_s(), time.perf_counter()
            report = grade(a.id, sub, questions=questions, echo=False)
            probe_cpu, probe_wall = _cpu_s() - c0, time.perf_counter() - t0
            c0, t0, local_s = _cpu_s(), time.perf_counter(), {}
            fraction = grade_in_process(a.id, questions, local_s)
            local_cpu, local_wall = _cpu_s() - c0, time.perf_counter() - t0
        finally:
            shutil.rmtree(sub, ignore_errors=True)
        assert report.score == report.graded_max_score, report.table()
        assert fraction == 1.0, fraction
        what = ", ".join(questions) if questions else "every question"
        print(f"{a.id} ({what}), the reference: sandboxed CPU {probe_cpu:.1f} s (wall "
              f"{probe_wall:.1f} s); in-process CPU {local_cpu:.1f} s (wall {local_wall:.1f} s); "
              f"sandboxed / in-process CPU = {probe_cpu / local_cpu:.2f} (goal <= {goal})\n"
              "  wall s per question, sandboxed / in-process: " + ", ".join(
                  f"{r.name} {r.seconds:.1f} / {local_s[r.name]:.1f}" for r in report.questions),
              flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("assignment", nargs="?", default="d_grpo")
    parser.add_argument("--with-tests", action="store_true", help="also time `make test`")
    parser.add_argument("--vs-in-process", action="store_true",
                        help="A's bar and D's grading: sandboxed against in-process (issue 29)")
    args = parser.parse_args()
    if args.vs_in_process:
        vs_in_process()
        return
    one_core = ["taskset", "-c", "0"] if sys.platform.startswith("linux") else []
    build_wall, _ = _timed([sys.executable, "-c", "from autograder.commands.dist import build; "
                            f"build('{args.assignment}')"])
    code = ("from pathlib import Path; from autograder.commands.demo import run_gradescope_zip; "
            "from autograder.grading import config; from autograder.paths import DIST_DIR; "
            f"a = config.load('{args.assignment}'); "
            "r = run_gradescope_zip(DIST_DIR / 'gradescope' / f'{a.id}.zip', "
            "[Path('solutions') / a.id / f for f in a.submission_files]); "
            "assert r['score'] == sum(t['max_score'] for t in r['tests']), r['score']")
    wall, cpu = _timed(one_core + [sys.executable, "-c", code])
    goal = GOALS_S.get(args.assignment)
    print(f"{args.assignment}: build {build_wall:.1f} s; hidden grading of the reference (full "
          f"marks) through the Gradescope zip on one core: wall {wall:.1f} s, CPU {cpu:.1f} s"
          + (f"; wall / goal {goal:.0f} s = {wall / goal:.2f}" if goal else ""))
    if args.with_tests:
        wall, cpu = _timed(["make", "test"])
        print(f"make test: wall {wall:.1f} s, CPU {cpu:.1f} s; wall / 900 s CI budget = "
              f"{wall / 900:.2f}")


if __name__ == "__main__":
    main()
