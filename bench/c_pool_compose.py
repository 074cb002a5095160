"""Compose capstone C's hidden pool from screened configurations, in one run.

    .venv/bin/python bench/c_pool_compose.py [--seeds 20,21,22,23] [--size 26-28] [--z 2]

Reads the logs bench/c_pool_screen.py cached (every configuration of its
``CANDIDATES`` that has logs at all the selection seeds) and searches integer
counts per configuration (0, 1 or 2 logs each) that minimise the worst
expected share right of the rules held to the bar (instructor/c_pool.py's
``BAR``), the expectation plus ``--z`` standard deviations of one draw of the
pool, under constraints:

* every one of the five public agents at least once (other seeds of every agent);
* each fault in two configurations or more and in three logs or more; healthy
  decoys of both algorithms, two configurations each;
* the reference names every screened log of a configuration right, each deciding
  statistic ``--margin`` or more from its threshold;
* one answer per family (the commonest fault of each) at most ``--constant``.

Local search from random starts (``--restarts``, seeded), so the result is
repeatable. It prints the composition, its expected shares and their spread.
The pool of assignment.toml was composed this way on seeds 20-23, the earlier
pool's configurations counted with their logs at seeds 60, 61 and 80-83
(consumed by that selection), and checked on seeds 90-93 (bench/c_pool_heldout.py):
re-run on 20-23 alone, the search may pick another composition as good.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from autograder.grading import config  # noqa: E402
from autograder.grading.reference import load_reference  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from instructor import c_pool  # noqa: E402
import c_pool_screen as screen  # noqa: E402  (bench/ is on the path)

PUBLIC_AGENTS = ("healthy_ppo", "saturated_policy", "untrained_critic", "healthy_dqn",
                 "small_buffer_32")
FAULTS = ("saturated_policy", "untrained_critic", "undersized_buffer")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="20,21,22,23")
    ap.add_argument("--cache", type=Path, default=Path("/var/lib/rlcap-bench/c_screen"))
    ap.add_argument("--size", default="26-28", help="pool size range, e.g. 26-28")
    ap.add_argument("--z", type=float, default=2.0)
    ap.add_argument("--margin", type=float, default=1.5)
    ap.add_argument("--constant", type=float, default=0.45)
    ap.add_argument("--restarts", type=int, default=40)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    lo, hi = (int(x) for x in args.size.split("-"))
    a = config.load("c_diagnose")
    ref = load_reference("c_diagnose", "diagnose.py")
    known = [c_pool.point(f, log) for f, log in c_pool.public(a)]
    mu, var, fault, fam = {}, {}, {}, {}
    for name, (_, _, f) in screen.CANDIDATES.items():
        paths = [args.cache / f"{name}_s{s}.npz" for s in seeds]
        if not all(p.exists() for p in paths):
            continue
        logs = [judge._load(p) for p in paths]
        ok = all(ref.diagnose(log)[0] == f and c_pool.rule_margin(
            ref.summary(log), judge.family(log), ref.THRESHOLDS) >= args.margin for log in logs)
        if not ok:
            print(f"  left out (the reference's margin): {name}")
            continue
        s = screen.credits([c_pool.point(f, log) for log in logs], known)
        mu[name], var[name], fault[name] = s.mean(0), s.var(0), f
        fam[name] = judge.family(logs[0])
    names = sorted(mu)
    need = {("ppo", "saturated_policy"): 2, ("ppo", "untrained_critic"): 2,
            ("dqn", "undersized_buffer"): 2, ("ppo", "healthy"): 2, ("dqn", "healthy"): 2}

    def score(cnt):
        n = sum(cnt.values())
        if not lo <= n <= hi:
            return 9 + abs(n - (lo + hi) / 2), None
        m = sum(cnt[k] * mu[k] for k in names) / n
        sd = np.sqrt(sum(cnt[k] * var[k] for k in names)) / n
        per = defaultdict(lambda: defaultdict(int))
        forms, logs = defaultdict(int), defaultdict(int)
        for k in names:
            per[fam[k]][fault[k]] += cnt[k]
            forms[(fam[k], fault[k])] += cnt[k] > 0
            logs[fault[k]] += cnt[k]
        const = sum(max(d.values()) for d in per.values()) / n
        pen = sum(max(0, want - forms[key]) for key, want in need.items())
        pen += sum(cnt.get(k, 0) < 1 for k in PUBLIC_AGENTS)
        pen += sum(max(0, 3 - logs[f]) for f in FAULTS)
        return (m + args.z * sd).max() + 10 * max(0.0, const - args.constant) + pen, (m, sd, const)

    rng = np.random.default_rng(args.seed)
    best = None
    for _ in range(args.restarts):
        cnt = {k: int(rng.integers(0, 3)) for k in names}
        cur, _ = score(cnt)
        improved = True
        while improved:
            improved = False
            moves = [(k, d, None) for k in names for d in (-1, 1)]
            moves += [(k, -1, j) for k in names for j in names if k != j]
            for i in rng.permutation(len(moves)):
                k, d, j = moves[i]
                new = dict(cnt)
                new[k] += d
                if j is not None:
                    new[j] += 1
                if min(new.values()) < 0 or max(new.values()) > 2:
                    continue
                s, _ = score(new)
                if s < cur - 1e-9:
                    cnt, cur, improved = new, s, True
                    break
        if best is None or cur < best[0]:
            best = (cur, cnt)
    cur, cnt = best
    _, detail = score(cnt)
    if detail is None:
        sys.exit("no composition meets the constraints")
    m, sd, const = detail
    heads = [r.replace("nearest public log ", "")[:10] for r in c_pool.STUDENT_RULES]
    print(f"\n{sum(cnt.values())} logs from seeds {seeds}; objective {cur:.3f}")
    print("expected share right: " + ", ".join(f"{h} {x:.2f} (sd {s:.2f})"
                                               for h, x, s in zip(heads, m, sd))
          + f"; one answer per family {const:.2f}")
    for k in names:
        if cnt[k]:
            print(f"  {cnt[k]} x {k} [{fault[k]}]")


if __name__ == "__main__":
    main()
