"""Capstone C's hidden logs as students' code meets them: draws of the stored pool.

    .venv/bin/python bench/c_pool_draws.py [--draws 200] [--ids 20]

Each hidden log a submission meets is a sample of its stored run drawn for that
submission (autograder/judges/c_diagnose.py, ``sample_log``; [params.unseen_sample]).
Prints, in one run:

* the best one-feature cut of each bookkeeping feature (instructor/c_pool.py's
  ``bookkeeping``) over the pool, stored and over 20 draws, beside a guess (the
  commonest answer) and a cut of random numbers;
* lookups a class could fit on three classmates' q7 pools (each hidden log's fault
  granted beside its bookkeeping value: more than their feedback says), on the
  episode count, the return total and the mean return, graded on q7 under
  ``--ids`` other ids, with the logs shown whole (as before) and as drawn;
* the catalogue's bookkeeping entries under the same ids;
* the return rules calibrated on the public logs, over students' drawn pools;
* the reference's smallest margin over every possible draw (bounds), and the
  honest rules of the catalogue on ``--draws`` draws of every log;
* how many draws of a log showed the same bytes, and the CPU.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from autograder.catalogue import c_diagnose as catalogue  # noqa: E402
from autograder.grading import config, expected  # noqa: E402
from autograder.grading.reference import load_reference  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from instructor import c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)

CLASSMATES = list(catalogue.CLASSMATES)


def lookup_module(feature: str, table: dict, ref, params):
    def diagnose(log):
        fault = c_pool.lookup_fault(table, judge.family(log), c_pool.bookkeeping(log)[feature])
        return fault, c_pool._cited(ref, log, fault, params)
    return c_pool._module(diagnose, ref)


def q7_mean(module, ids, a, exp) -> tuple[float, float, float]:
    got = [c_pool.points(module, sid, a, exp, ("q7_unseen",)) for sid in ids]
    return float(np.mean(got)), float(min(got)), float(max(got))


def digest(log) -> str:
    h = hashlib.sha256()
    for k in sorted(log):
        h.update(k.encode() + np.ascontiguousarray(log[k]).tobytes())
    return h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--ids", type=int, default=20)
    args = ap.parse_args()
    t0 = time.process_time()
    a = config.load("c_diagnose")
    exp, _, _ = expected.load(a, ["q7_unseen"])
    ref = load_reference("c_diagnose", "diagnose.py")
    print(f"CPU: {cpu_name()}")
    print(f"[params.unseen_sample]: {a.params['unseen_sample']}")

    print("\nbest one-feature cut over the pool (share right; fitted on the logs it names)")
    stored = c_pool.separability(c_pool.pool(a))
    drawn = c_pool.separability(c_pool.drawn_pool(a, range(20), seed=47))
    for fam in ("ppo", "dqn"):
        print(f"  {fam.upper()}: {'feature':28s} stored  20 draws")
        for k in drawn[fam]:
            group = ("count" if k in c_pool.COUNTS else "returns' level" if k in c_pool.LEVELS
                     else "measured" if k in c_pool.MEASURED else "")
            print(f"       {k:28s} {stored[fam].get(k, float('nan')):.3f}   {drawn[fam][k]:.3f}"
                  f"   {group}")

    ids = [f"other-{i:03d}" for i in range(args.ids)]
    print(f"\nlookups fitted on three classmates' q7 pools (each log's fault granted), q7 points "
          f"of 8 under {len(ids)} other ids: mean (min-max)")
    whole = judge.sample_log
    for label, shown in (("logs shown whole (before)", False), ("logs drawn (now)", True)):
        if not shown:
            judge.sample_log = lambda log, rng, sample, windows=(): dict(log)
        try:
            for feature in ("episodes", "return total", "mean return"):
                table = c_pool.fit_lookup(c_pool.met_points(feature, CLASSMATES,
                                                            draw_key="their submission", a=a))
                m, lo, hi = q7_mean(lookup_module(feature, table, ref, a.params), ids, a, exp)
                print(f"  {label}: by {feature:13s} {m:.2f} ({lo:.1f}-{hi:.1f})")
        finally:
            judge.sample_log = whole

    names = ("lookup_by_episode_count_of_three_classmates",
             "lookup_by_mean_return_of_three_classmates", "buckets_of_return_totals",
             "diagnose_by_kl_read_first_at_a_target_kl")
    modules = c_pool.entry_modules([w for w in catalogue.WRONG if w.name in names])
    print(f"\ncatalogue entries, q7 points of 8 under {len(ids)} other ids: mean (min-max)")
    for n, module in modules.items():
        m, lo, hi = q7_mean(module, ids, a, exp)
        print(f"  {n}: {m:.2f} ({lo:.1f}-{hi:.1f})")

    got = c_pool.expected_fractions_drawn(a, draws=10, students=1000)
    print("\nreturn rules calibrated on the public logs, expected share of q7 over 1000 students' "
          "drawn pools (bar: 0.45)")
    for k in (*c_pool.STUDENT_RULES, c_pool.GUESS, c_pool.FAMILY_GUESS, c_pool.HEALTHY,
              c_pool.ONE_ANSWER, c_pool.PER_FAMILY):
        print(f"  {k}: {got[k]:.3f}")

    worst = c_pool.reference_worst_case(a)
    low = min(worst, key=lambda r: r[3])
    print(f"\nthe reference over every possible draw: names every log right: "
          f"{all(n == {f} for _, f, n, _ in worst)}; smallest margin {low[3]:.3f}x ({low[0]}); "
          f"on the stored logs {min(m for *_, m in c_pool.reference_margins(a)):.3f}x")

    honest = c_pool.catalogue_rules("honest")
    wrong, seen, total = {}, set(), 0
    for case, log in c_pool.drawn_pool(a, range(args.draws), seed=2047):
        total += 1
        seen.add(digest(log))
        for n, m in honest.items():
            if c_pool.named(m, log) != case.fault:
                wrong.setdefault(n, []).append(case.name)
    print(f"honest rules ({len(honest)}) on {args.draws} draws of each of the "
          f"{len(c_pool.pool(a))} logs: "
          + (f"every one names every draw right" if not wrong else f"WRONG: "
             f"{ {n: len(v) for n, v in wrong.items()} }"))
    print(f"distinct draws: {len(seen)} of {total} (same bytes twice: {total - len(seen)})")
    print(f"\nCPU: {time.process_time() - t0:.0f} s")


if __name__ == "__main__":
    main()
