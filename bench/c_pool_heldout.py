"""Capstone C's hidden pool checked on logs it was not taken from, in one run.

    .venv/bin/python -m instructor.numerics -- .venv/bin/python bench/c_pool_heldout.py \
        [--seeds 90-109] [--per-kind 2] [--jobs 2]

q7's pool is a set of kinds of log (instructor/c_pool.py's ``KINDS``): each
student meets ``[hidden] pool_draw[kind]`` logs of each, taken from the clear
logs with the kind's property at the pool's seeds (bench/c_pool_compose.py).
This script does the same from held-out seeds (never the pool's, fixed in
advance), keeping ``--per-kind`` times a student's count of each kind, and
prints on them what bench/c_diagnose_pool.py prints on the pool: how often
the kinds' configurations give a clear log of the kind, the reference's and
the catalogue's answers, and each rule's expected share of q7 over students
whose pools are drawn from these logs (the return rules calibrated on the
public logs, "healthy" everywhere, the best answer per family, two guesses).
It writes every examined log (its kind, whether it is clear, its return
features, every rule's answer) to ``bench/data/c_pool_heldout.json``, which
tests/test_c_diagnose.py reads. Logs are cached under --cache (the compose
script's cache; one npz per run).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograder.grading import config  # noqa: E402
from instructor import c_logs, c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)
from c_pool_compose import classify, seeds_arg  # noqa: E402

OUT = Path(__file__).resolve().parent / "data" / "c_pool_heldout.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="90-109", help="held-out seeds, lo-hi (the pool's: 60 on)")
    ap.add_argument("--per-kind", type=int, default=2,
                    help="keep this many times a student's count of each kind")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("/var/lib/rlcap-bench/c_pool3"))
    args = ap.parse_args()
    a = config.load("c_diagnose")
    seeds = seeds_arg(args.seeds)
    assert not set(seeds) & {c.seed for c in c_logs.pool_cases(a)}, "seed overlap with the pool"
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"CPU: {cpu_name()}", flush=True)
    draw = a.hidden["pool_draw"]
    kept, rows = classify(seeds, args.cache, args.jobs,
                          {k: args.per_kind * draw[k] for k in c_pool.KINDS})
    examined = [r for r in rows]
    print("\nheld-out logs examined, by kind: clear logs with its property / all its logs")
    for kind, (fault, confs, _, _) in c_pool.KINDS.items():
        mine = [r for r in examined if (r["agent"], r["severity"]) in confs and r["fault"] == fault]
        ok = [r for r in mine if r["kind"] == kind and r["clear"]]
        print(f"  {kind:20s} kept {len(kept[kind])} (a student meets {draw[kind]}); "
              f"{len(ok)} clear of the kind among {len(mine)} logs of its configurations")
    points = {k: [(r["fault"], r["family"], r["features"]) for r in rows
                  if (r["agent"], r["severity"], r["seed"]) in set(map(tuple, v))]
              for k, v in kept.items()}
    known = [c_pool.point(f, log) for f, log in c_pool.public(a)]
    got = c_pool.expected_fractions(points, draw, known, students=1000)
    print("\nexpected share of q7 over 1000 students drawn from the held-out logs (the bar: "
          "return rules under 0.5; healthy everywhere at most a guess)")
    for name, v in got.items():
        print(f"  {name:60s} {v:.3f}")
    careless = sorted({n for r in rows for n in r["named"]} - set(c_pool.catalogue_rules("honest")))
    print("\nthe careless rules' share of the kept logs named wrong, by kind")
    for n in careless:
        per = {k: sum(r["named"][n] != r["fault"] for r in rows
                      if (r["agent"], r["severity"], r["seed"]) in set(map(tuple, kept[k])))
               for k in kept}
        print(f"  {n:45s} " + ", ".join(f"{k} {v}/{len(kept[k])}" for k, v in per.items() if v))
    data = {"cpu": cpu_name(), "seeds": seeds,
            "kinds": {k: [list(c) for c in v[1]] for k, v in c_pool.KINDS.items()},
            "kept": {k: [list(x) for x in v] for k, v in kept.items()},
            "logs": [r for r in rows if (r["agent"], r["severity"], r["seed"]) in
                     {tuple(x) for v in kept.values() for x in v}]}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"\nwrote {OUT}")


if __name__ == "__main__":
    main()
