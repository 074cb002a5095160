"""Capstone C's hidden pool (q7), measured in one run.

    .venv/bin/python bench/c_diagnose_pool.py [--pairs 200]

Prints, for every hidden log, its return features and the reference's
diagnosis with its smallest margin to a threshold; the share of the pool that
classifiers on return features name right (below half, for rules calibrated on
the public logs, is the bar; bench/c_pool_heldout.py checks it on held-out seeds); what a
diagnosis shared through the public logs earns against a guess over id pairs;
the sizes of the pool and the shipped logs; and the CPU.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograder.grading import config  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from instructor import c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200)
    args = ap.parse_args()
    a = config.load("c_diagnose")
    print(f"CPU: {cpu_name()}")
    print("\nhidden log: fault (severity), return features; the reference names ... (margin)")
    margins = {name: (named, m) for name, _, named, m in c_pool.reference_margins(a)}
    for case, log in c_pool.pool(a):
        f = c_pool.return_features(log)
        named, m = margins[case.name]
        sev = f" {case.severity:g}" if case.severity is not None else ""
        print(f"  {case.name} {case.agent}{sev} seed {case.seed} [{case.fault}]: "
              + ", ".join(f"{k} {v:.0f}" for k, v in f.items())
              + f"; reference: {named} ({'right' if named == case.fault else 'WRONG'}, "
              + (f"margin {m:.2f}x)" if m < 1e3 else "margin > 1000x)"))
    print("\nreturn classifiers (share of the pool named right, ties broken at random; the "
          "bar, for rules calibrated on the public logs: below 0.5; the others read hidden "
          "answers: bounds):")
    for name, share in c_pool.return_classifiers(a).items():
        tag = "  (bar)" if name in c_pool.BAR else ""
        print(f"  {name:50s} {share:.2f}{tag}")
    t0 = time.process_time()
    s = c_pool.sharing(args.pairs, a, family=True)
    print(f"\nsharing over {args.pairs} id pairs (mean points of q5-q7, out of {s['max']:g}): "
          f"copied mapping {s['copied']:.2f}, translated {s['translated']:.2f}, "
          f"guess {s['guess']:.2f}, guess within the log's family {s['family_guess']:.2f}, "
          f"translated and the rest guessed within the family "
          f"{s['translated_then_family_guess']:.2f}, reference {s['reference']:.2f} "
          f"({time.process_time() - t0:.0f} s CPU)")
    pool_dir = judge.ROOT / a.hidden["pool_dir"]
    pool_mb = sum(p.stat().st_size for p in pool_dir.glob("*.npz")) / 1e6
    public_mb = sum(p.stat().st_size for p in judge.logs_dir(a.params).glob("*.npz")) / 1e6
    print(f"\nsizes: the pool {pool_mb:.2f} MB (Gradescope zip only), the public logs "
          f"{public_mb:.2f} MB")


if __name__ == "__main__":
    main()
