"""How often the capstone A reference reaches 500: one 60-update run per seed.

Run from the repository root (one core; takes about 30 x 10 s):

    taskset -c 1 .venv/bin/python bench/seeds_ppo.py [--seeds 0-29]

Each seed trains ``solutions/a_ppo/ppo.py`` from scratch and is evaluated as
capstone A's bar does (``assignments/a_ppo/assignment.toml``): the median
return of ``eval_episodes`` sampled-action episodes of
``evaluate(policy, seed=seed + eval_seed_offset)``. Prints one line per seed
and the count of seeds at median 500.
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
from bench_ppo import load_reference  # noqa: E402

from autograder.grading import config  # noqa: E402


def seed_list(text):
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seed_list, default=seed_list("0-29"),
                        help="a range such as 0-29")
    args = parser.parse_args()
    params = config.load("a_ppo").params
    ppo = load_reference()
    medians = {}
    for seed in args.seeds:
        start = time.perf_counter()
        out = ppo.train(seed, updates=params["updates"])
        returns = ppo.evaluate(out["policy_params"], episodes=params["eval_episodes"],
                               seed=seed + params["eval_seed_offset"])
        medians[seed] = float(np.median(returns))
        print(f"seed {seed:3d}: median {medians[seed]:6.1f} (min {returns.min():5.0f}) "
              f"in {time.perf_counter() - start:5.1f} s", flush=True)
    at_500 = sum(m == 500.0 for m in medians.values())
    print(f"{at_500} of {len(medians)} seeds reach median 500 "
          f"(bar: > {params['bar']}; below 500: "
          f"{ {s: m for s, m in medians.items() if m < 500} })")


if __name__ == "__main__":
    main()
