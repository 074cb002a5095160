"""Capstone C's hidden pool (q7), measured in one run.

    .venv/bin/python bench/c_diagnose_pool.py [--pairs 200] [--ids 20]

Prints, for every hidden log, its kind, the reference's diagnosis with its
smallest margin to a threshold and the careless rules of the catalogue that
name it wrong; that every honest rule names every log right; each rule's
expected share of q7 over students' own pools (the return rules calibrated on
the public logs, over draws of the pool: the bar is 0.45; "healthy" everywhere:
at most a guess); each catalogued diagnose() graded on q7 under ``--ids`` student ids
(the judge in-process: min, mean, max points of 8); what a diagnosis shared
through the public logs earns against a guess over id pairs; what a
resubmission's q7 feedback can tell, in bits; how much two students' pools
overlap; the sizes of the pool and the shipped logs; and the CPU.
bench/c_pool_heldout.py checks the same kinds on held-out seeds.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from autograder.grading import config, expected  # noqa: E402
from autograder.grading.judging import HIDDEN_PHASE, Context  # noqa: E402
from autograder.grading.reference import load_reference  # noqa: E402
from autograder.harness.probe import InProcessCaller  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from instructor import c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)


def q7_points(module, sid: str, a: config.Assignment, exp: dict) -> float:
    """``module``'s q7 points under ``sid`` (the judge in-process, the hidden phase)."""
    caller = InProcessCaller(module)
    ctx = Context(caller.call, a.params, public_only=False, expected=exp, student_id=sid,
                  constant=caller.constant, hidden=a.hidden, question=a.question("q7_unseen"),
                  phase=HIDDEN_PHASE)
    return judge.QUESTIONS["q7_unseen"](ctx).fraction * a.question("q7_unseen").points


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--ids", type=int, default=20)
    args = ap.parse_args()
    a = config.load("c_diagnose")
    print(f"CPU: {cpu_name()}")
    ref = load_reference("c_diagnose", "diagnose.py")
    rules = c_pool.catalogue_rules()
    honest = set(c_pool.catalogue_rules("honest"))
    pool = c_pool.pool(a)
    draw = a.hidden["pool_draw"]
    print("\nhidden logs by kind (a student meets pool_draw of each): the reference's answer "
          "(margin); the careless rules that name it wrong")
    margins = {name: (named, m) for name, _, named, m in c_pool.reference_margins(a)}
    for kind in draw:
        print(f"  {kind} (each student meets {draw[kind]}):")
        for case, log in pool:
            if case.kind != kind:
                continue
            named, m = margins[case.name]
            wrong = [n.replace("diagnose_by_", "") for n, mod in rules.items()
                     if n not in honest and c_pool.named(mod, log) != case.fault]
            sev = f" {case.severity:g}" if case.severity is not None else ""
            print(f"    {case.name} {case.agent}{sev} seed {case.seed} [{case.fault}]: "
                  f"reference {named} ({'right' if named == case.fault else 'WRONG'}, "
                  + (f"{m:.2f}x" if m < 1e3 else "> 1000x") + f"); careless wrong: "
                  f"{', '.join(wrong) or '-'}")
    bad = {n: [c.name for c, log in pool if c_pool.named(rules[n], log) != c.fault]
           for n in honest}
    print(f"\nhonest rules ({len(honest)}): " + ("every one names every log right"
                                                if not any(bad.values()) else f"WRONG: {bad}"))
    got = c_pool.expected_fractions_drawn(a, draws=10, students=1000)
    print("\nexpected share of q7 over 1000 students' pools, each log as a draw shows it (the "
          "bar: return rules at most 0.45; healthy everywhere at most a guess)")
    for name, v in got.items():
        print(f"  {name:60s} {v:.3f}")
    exp, _, _ = expected.load(a, ["q7_unseen"])
    ids = [f"student-{i:04d}" for i in range(args.ids)]
    print(f"\nq7 points (of {a.question('q7_unseen').points:g}) under {len(ids)} student ids, the "
          "judge in-process: min / mean / max")
    t0 = time.process_time()
    for name, module in [("reference", ref), *rules.items()]:
        pts = [q7_points(module, sid, a, exp) for sid in ids]
        print(f"  {name:50s} {min(pts):5.2f} / {np.mean(pts):5.2f} / {max(pts):5.2f}")
    print(f"  ({time.process_time() - t0:.0f} s CPU)")
    t0 = time.process_time()
    s = c_pool.sharing(args.pairs, a, family=True)
    print(f"\nsharing over {args.pairs} id pairs (mean points of q5-q7, out of {s['max']:g}): "
          f"copied mapping {s['copied']:.2f}, translated {s['translated']:.2f}, "
          f"guess {s['guess']:.2f}, guess within the log's family {s['family_guess']:.2f}, "
          f"translated and the rest guessed within the family "
          f"{s['translated_then_family_guess']:.2f}, reference {s['reference']:.2f} "
          f"({time.process_time() - t0:.0f} s CPU)")
    bits = c_pool.feedback_bits(c_pool.feedback_kinds(draw))
    print(f"\nwhat one resubmission's q7 feedback can tell (bits): at most {bits['now']:.1f} "
          f"(records by kind and count; {bits['now, pass or fail']:.1f} in how many items of "
          f"each kind passed); the student's own pool's answers, its kinds' counts known: "
          f"{bits['key']:.1f}; before (one record per log, by a number fixed for the student "
          f"and equal to the call order): at most {bits['before']:.1f}, of which "
          f"{bits['before, pass or fail']:.0f} in which logs passed")
    ctx_ids = [f"student-{i:04d}" for i in range(200)]
    pools = []
    for sid in ctx_ids:
        ctx = Context(lambda *x, **k: None, a.params, public_only=False, student_id=sid,
                      hidden=a.hidden, question=a.question("q7_unseen"), phase=HIDDEN_PHASE)
        pools.append([c.name for c in judge.students_logs(ctx)])
    shared = [len(set(p) & set(q)) for p, q in zip(pools, pools[1:])]
    same_order = sum(p == q for p, q in zip(pools, pools[1:]))
    print(f"two students' pools (199 pairs of 200 ids): {np.mean(shared):.1f} of "
          f"{len(pools[0])} logs in common on average (min {min(shared)}, max {max(shared)}); "
          f"{same_order} pairs meet the same logs in the same order; the pool holds "
          f"{len(pool)} logs")
    pool_dir = judge.ROOT / a.hidden["pool_dir"]
    pool_mb = sum(p.stat().st_size for p in pool_dir.glob("*.npz")) / 1e6
    public_mb = sum(p.stat().st_size for p in judge.logs_dir(a.params).glob("*.npz")) / 1e6
    print(f"\nsizes: the pool {pool_mb:.2f} MB (Gradescope zip only), the public logs "
          f"{public_mb:.2f} MB")


if __name__ == "__main__":
    main()
