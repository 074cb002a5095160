"""Capstone C's hidden pool checked on runs it was not picked from, in one run.

    .venv/bin/python bench/c_pool_heldout.py [--seeds 90,91,92,93] [--jobs 2]

q7's hidden pool is a composition of configurations (agent and severity), each
chosen by the share of its logs that return classifiers name right on selection
seeds (bench/c_pool_screen.py at 20-23, bench/c_pool_compose.py; the earlier
pool's configurations also at 60, 61 and 80-83, which that choice consumed);
the stored logs are one draw of it (seeds 60 and 61). This script trains every configuration of the
pool again from held-out seeds, as many logs per configuration as the pool has,
and prints on those logs what bench/c_diagnose_pool.py prints on the pool: the
share each return classifier of instructor/c_pool.py names right and the
reference's diagnosis with its margin; then the same per replica (one pool's
worth of logs per held-out seed). It writes every held-out log's point (fault,
family, return features) and the reference's answer to
``bench/data/c_pool_heldout.json``, which tests/test_c_diagnose.py reads.
Logs are cached under --cache (one npz per run, 4-11 s CPU each on an AMD EPYC or a Xeon with
AVX-512), so a second call only measures.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from autograder.grading import config  # noqa: E402
from autograder.grading.reference import load_reference  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from instructor import c_logs, c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)
from c_pool_screen import train_missing  # noqa: E402

OUT = Path(__file__).resolve().parent / "data" / "c_pool_heldout.json"


def _case(agent: str, severity, seed: int) -> SimpleNamespace:
    case = SimpleNamespace(agent=agent, seed=seed, severity=severity)
    case.get = lambda k: getattr(case, k, None)
    return case


def _train(job: tuple[str, object, int, str]) -> str:
    agent, severity, seed, path = job
    Path(path).write_bytes(c_logs.npz_bytes(c_logs.pool_log(_case(agent, severity, seed))))
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="90,91,92,93",
                    help="held-out training seeds (the pool's logs use 60 and 61)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("/var/lib/rlcap-bench/c_pool_heldout"))
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    a = config.load("c_diagnose")
    cases = c_logs.pool_cases(a)
    comp = c_pool.composition(cases)
    used = {(c.agent, c.seed) for c in cases}
    assert not any((ag, s) in used for ag, _, _ in comp for s in seeds), "seed overlap"
    args.cache.mkdir(parents=True, exist_ok=True)
    runs = []                     # (agent, severity, seed, fault, path)
    for (agent, sev, fault) in sorted(comp, key=lambda t: (t[0], t[1] or 0)):
        for s in seeds:
            tag = f"{agent}_{'x' if sev is None else f'{sev:g}'}_s{s}"
            runs.append((agent, sev, s, fault, args.cache / f"{tag}.npz"))
    todo = [(ag, sev, s, str(p)) for ag, sev, s, _, p in runs if not p.exists()]
    print(f"CPU: {cpu_name()}\n{len(comp)} configurations x seeds {seeds}: "
          f"{len(runs)} runs, {len(todo)} to train", flush=True)
    train_missing(_train, todo, args.jobs)

    ref = load_reference("c_diagnose", "diagnose.py")
    rows = []
    print("\nheld-out log [fault]: return features; the reference names ... (margin)")
    for agent, sev, s, fault, p in runs:
        log = judge._load(p)
        named, _ = ref.diagnose(log)
        m = c_pool.rule_margin(ref.summary(log), judge.family(log), ref.THRESHOLDS)
        _, fam, f = c_pool.point(fault, log)
        rows.append({"agent": agent, "severity": sev, "seed": s, "fault": fault, "family": fam,
                     "features": f, "reference": named, "margin": m})
        print(f"  {p.stem:34s} [{fault}]: " + ", ".join(f"{k} {v:.0f}" for k, v in f.items())
              + f"; reference: {named} ({'right' if named == fault else 'WRONG'}, {m:.2f}x)")
    wrong = [r for r in rows if r["reference"] != r["fault"]]
    print(f"\nthe reference: {len(rows) - len(wrong)}/{len(rows)} right, smallest margin "
          f"{min(r['margin'] for r in rows):.2f}x")

    # the pool's mix: each configuration weighted by its count in the pool
    points = [(r["fault"], r["family"], r["features"]) for r in rows
              for _ in range(comp[(r["agent"], r["severity"], r["fault"])])]
    print(f"\nreturn classifiers on the held-out logs, each weighted by its configuration's "
          f"count in the pool ({len(points) // len(seeds)} per seed); the bar, for rules "
          f"calibrated on the public logs: below 0.5")
    shares = c_pool.return_classifiers(a, points)
    for name in c_pool.BAR:
        print(f"  {name:50s} {shares[name]:.2f}  (bar)")
    print("bounds that read the hidden answers, on the held-out logs once each:")
    bounds = c_pool.return_classifiers(a, [(r["fault"], r["family"], r["features"]) for r in rows])
    for name, share in bounds.items():
        if name not in c_pool.BAR:
            print(f"  {name:50s} {share:.2f}")
    print(f"\n{len(seeds)} replicas of the pool (its cases, the j-th of a configuration from "
          f"held-out seed index (r + j) mod {len(seeds)}): the worst rule calibrated on the "
          "public logs")
    by = {(r["agent"], r["severity"], r["seed"]): r for r in rows}
    worst = []
    for r in range(len(seeds)):
        seen: Counter = Counter()
        sub = []
        for c in cases:
            j = seen[(c.agent, c.severity)]
            seen[(c.agent, c.severity)] += 1
            x = by[(c.agent, c.severity, seeds[(r + j) % len(seeds)])]
            sub.append((x["fault"], x["family"], x["features"]))
        sh = c_pool.return_classifiers(a, sub)
        w = max(c_pool.BAR, key=sh.get)
        worst.append(sh[w])
        print(f"  replica {r}: {w} {sh[w]:.2f}")
    print(f"  worst over replicas {max(worst):.2f}, mean {np.mean(worst):.2f}")
    OUT.write_text(json.dumps({"cpu": cpu_name(), "seeds": seeds, "logs": rows}, indent=1) + "\n")
    print(f"\nwrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT}")


if __name__ == "__main__":
    main()
