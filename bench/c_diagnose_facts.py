"""Capstone C: the facts the diagnosis rests on, measured on every agent over
several seeds, and the shipped logs' margins to each threshold.

    .venv/bin/python bench/c_diagnose_facts.py [--seeds 1,2,3]

For each agent and seed it trains the agent (instructor/c_agents.py), prints
its summary statistics (what the reference's diagnose() reads), the
issue's prototype facts (early entropy < 0.3 only for the saturated policy;
early explained variance < 0.2 with late value loss > 10 only for the
untrained critic; max Q > 1.5 / (1 - gamma) and < 2 distinct episodes per
batch only for the 32-slot buffer), whether the reference's rule
separates the agents, the final return (return alone must not name the
faults) and the training CPU time. Seed 1 is the shipped run: its log must
equal the stored one bit for bit.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from autograder.grading import config
from autograder.grading.reference import load_reference
from autograder.judges import c_diagnose as judge
from instructor import c_agents, c_logs
from instructor.numerics import cpu_name


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    a = config.load("c_diagnose")
    p = a.params
    ref = load_reference("c_diagnose", "diagnose.py")
    th = ref.THRESHOLDS                    # the reference's own (none is handed out)
    fault_of = a.hidden["agent_faults"]
    shipped = {(agent, int(s)): i for i, (agent, s) in
               enumerate(zip(a.hidden["runs"], a.hidden["run_seeds"]))}
    q_bar = 1.5 / (1.0 - p["gamma"])
    print(f"CPU: {cpu_name()}; thresholds {th}; max-Q bar 1.5/(1-gamma) = {q_bar:g}")
    rows = []
    for seed in seeds:
        for agent in c_agents.AGENTS:
            t0 = time.process_time()
            log = c_logs.compact(c_agents.train(agent, seed))
            cpu = time.process_time() - t0
            same = ""
            if (agent, seed) in shipped:
                i = shipped[(agent, seed)]
                stored = (judge.logs_dir(p) / f"run_{i}.npz").read_bytes()
                same = "bit-identical to run_%d.npz" % i if stored == c_logs.npz_bytes(log) \
                    else "DIFFERS from run_%d.npz" % i
            log = {k: v.astype(np.int64 if k in judge.INT_KEYS else np.float64)
                   for k, v in log.items()}
            fam = judge.family(log)
            stats = judge.summary(log, ref, p)
            if fam == "ppo":
                r, u = log["episode_returns"], log["episode_update"]
                final = float(np.median(r[u >= u.max() - 4]))
            else:
                final = float(np.mean(log["episode_returns"][-20:]))
            named = ref.diagnose(log)[0]
            holds = {f: f == named for f in p["cite"][fam]}
            rows.append((agent, seed, fam, stats, holds, final))
            print(f"{agent:17s} seed {seed}: {judge.format_evidence(stats)}; final return "
                  f"{final:.0f}; the reference names {named} "
                  f"(key: {fault_of[agent]}); train {cpu:.1f} s CPU {same}", flush=True)
    print("\nThe issue's prototype facts, per agent and seed (True = the fact's condition holds):")
    for agent, seed, fam, s, holds, final in rows:
        if fam == "ppo":
            facts = {"entropy<0.3": s["early_entropy"] < 0.3,
                     "EV<0.2&VL>10": s["early_explained_variance"] < 0.2
                     and s["late_value_loss"] > 10}
        else:
            facts = {f"maxQ>{q_bar:g}": s["max_q"] > q_bar, "diversity<2": s["batch_diversity"] < 2}
        print(f"  {agent:17s} seed {seed}: {facts}")
    print("\nDoes the reference's diagnose() name the key's fault on every run?")
    bad = [(agent, seed, [f for f, ok in holds.items() if ok]) for agent, seed, fam, s, holds, _
           in rows if [f for f, ok in holds.items() if ok] != [fault_of[agent]]]
    print("  yes" if not bad else f"  NO: {bad}")
    print("\nMargins to each threshold (stat / threshold, per agent, min and max over seeds):")
    for agent in c_agents.AGENTS:
        mine = [s for ag, _, _, s, _, _ in rows if ag == agent]
        parts = [f"{k} {min(m[k] for m in mine) / th[k]:.3g}..{max(m[k] for m in mine) / th[k]:.3g}"
                 for k in mine[0] if k in th]
        print(f"  {agent:17s} " + ", ".join(parts))
    print("\nFinal return per agent and seed (guessing by return):")
    for seed in seeds:
        print(f"  seed {seed}: " + ", ".join(f"{ag} {fin:.0f}" for ag, sd, _, _, _, fin in rows
                                            if sd == seed))


if __name__ == "__main__":
    main()
