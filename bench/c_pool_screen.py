"""Screen configurations for capstone C's hidden pool, in one run.

    .venv/bin/python bench/c_pool_screen.py [--seeds 20,21,22,23] [--jobs 2] [NAME ...]

A *configuration* is an agent of instructor/c_agents.py, its hyper-parameters
changed by overrides (``CANDIDATES`` below: every configuration screened for
the pool, kept so that the screen can be re-run; the ones the pool uses are
agents of c_agents). Each is trained from the selection seeds (never the
pool's 60 and 61, never the held-out seeds of bench/c_pool_heldout.py), and
printed per configuration: the fault it shows, the share of its logs each
return classifier calibrated on the public logs names right
(instructor/c_pool.py's ``STUDENT_RULES``, ties broken at random), and the
reference's diagnosis with its smallest margin to a threshold. A pool is then
composed from configurations by these shares (the pool's composition is in
assignment.toml, its check on held-out seeds in bench/c_pool_heldout.py).
Logs are cached under --cache, one npz per run (6-11 s CPU each on a Xeon with
AVX-512), so a second call only measures.
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from autograder.grading import config  # noqa: E402
from autograder.grading.reference import load_reference  # noqa: E402
from autograder.judges import c_diagnose as judge  # noqa: E402
from instructor import c_agents, c_logs, c_pool  # noqa: E402
from c_diagnose_facts import cpu_name  # noqa: E402  (bench/ is on the path)

# name: (one of the five public agents, its overrides, the fault its logs show). The
# pool's agents (instructor/c_agents.py) are the configurations it uses, under their names
# there; the others were screened and left out.
_SAT, _UC, _SB = "saturated_policy", "untrained_critic", "undersized_buffer"
CANDIDATES = {
    # the five public agents at other seeds, and at other severities
    "healthy_ppo": ("healthy_ppo", {}, "healthy"),
    "saturated_policy": ("saturated_policy", {}, _SAT),
    "saturated_policy_gain300": ("saturated_policy", {"policy_head_gain": 300.0}, _SAT),
    "untrained_critic": ("untrained_critic", {}, _UC),
    "healthy_dqn": ("healthy_dqn", {}, "healthy"),
    **{f"small_buffer_{n}": ("small_buffer", {"buffer_size": n}, _SB) for n in (32, 64, 128)},
    # faults under other hyper-parameters
    "saturated_lr3e-3_gain300": ("saturated_policy", {"policy_head_gain": 300.0, "lr": 3e-3},
                                 _SAT),
    "saturated_lr1e-2_gain100": ("saturated_policy", {"lr": 1e-2}, _SAT),
    "slow_untrained_critic": ("untrained_critic", {"clip_eps": 0.05}, _UC),
    "untrained_critic_lr2e-3": ("untrained_critic", {"lr": 2e-3}, _UC),
    "untrained_critic_lr3e-3": ("untrained_critic", {"lr": 3e-3}, _UC),
    "untrained_critic_lr5e-3": ("untrained_critic", {"lr": 5e-3}, _UC),
    "untrained_critic_lr3e-3_clip0.1": ("untrained_critic", {"lr": 3e-3, "clip_eps": 0.1}, _UC),
    **{f"small_buffer_fast_target_{n}": ("small_buffer", {"buffer_size": n, "target_every": 100},
                                         _SB) for n in (32, 64, 128)},
    "small_buffer_faster_target_128": ("small_buffer", {"buffer_size": 128, "target_every": 50},
                                       _SB),
    "small_buffer_short_exploration_32": ("small_buffer", {"eps_decay_steps": 3000}, _SB),
    **{f"small_buffer_fast_target_fast_lr_{n}": (
        "small_buffer", {"buffer_size": n, "target_every": 100, "lr": 1e-3}, _SB)
       for n in (32, 64, 128)},
    "small_buffer_fast_target_slow_lr_128": (
        "small_buffer", {"buffer_size": 128, "target_every": 100, "lr": 1e-4}, _SB),
    "small_buffer_fast_lr_64": ("small_buffer", {"buffer_size": 64, "lr": 1e-3}, _SB),
    "small_buffer_fast_lr_128": ("small_buffer", {"buffer_size": 128, "lr": 1e-3}, _SB),
    # healthy decoys: PPO
    "fast_lr_ppo": ("healthy_ppo", {"lr": 3e-3}, "healthy"),
    "faster_lr_ppo": ("healthy_ppo", {"lr": 5e-3}, "healthy"),
    "tight_clip_strong_critic_ppo": ("healthy_ppo", {"clip_eps": 0.02, "vf_coef": 2.0},
                                     "healthy"),
    "clip0.01_vf2_ppo": ("healthy_ppo", {"clip_eps": 0.01, "vf_coef": 2.0}, "healthy"),
    "clip0.015_vf4_ppo": ("healthy_ppo", {"clip_eps": 0.015, "vf_coef": 4.0}, "healthy"),
    "lr3e-4_vf4_ppo": ("healthy_ppo", {"lr": 3e-4, "vf_coef": 4.0}, "healthy"),
    "epochs2_vf4_ppo": ("healthy_ppo", {"update_epochs": 2, "vf_coef": 4.0}, "healthy"),
    **{f"gamma{g}_ppo": ("healthy_ppo", {"gamma": g}, "healthy") for g in (0.85, 0.9, 0.92, 0.95)},
    "gamma0.95_lr3e-4_ppo": ("healthy_ppo", {"gamma": 0.95, "lr": 3e-4}, "healthy"),
    "ent0.02_ppo": ("healthy_ppo", {"ent_coef": 0.02}, "healthy"),
    "ent0.05_ppo": ("healthy_ppo", {"ent_coef": 0.05}, "healthy"),
    # healthy decoys: DQN
    "long_exploration_dqn": ("healthy_dqn", {"eps_decay_steps": 25_000}, "healthy"),
    "slow_long_exploration_dqn": ("healthy_dqn", {"lr": 1e-4, "eps_decay_steps": 25_000},
                                  "healthy"),
    "fast_lr_dqn": ("healthy_dqn", {"lr": 1e-3}, "healthy"),
    "long_exploration_fast_lr_dqn": ("healthy_dqn", {"eps_decay_steps": 25_000, "lr": 1e-3},
                                     "healthy"),
    "mid_exploration_fast_lr_dqn": ("healthy_dqn", {"eps_decay_steps": 20_000, "lr": 1e-3},
                                    "healthy"),
    "late_start_dqn": ("healthy_dqn", {"learning_starts": 10_000}, "healthy"),
    # (a start later than c_agents.LOG_BATCHES_FROM, 15,000, is no longer screened: its
    # first logged batches would come before it learns)
    "late_start_long_exploration_dqn": ("healthy_dqn", {"learning_starts": 10_000,
                                                        "eps_decay_steps": 15_000}, "healthy"),
    # round 3 (issue 39): healthy PPO that converges, so that its critic's explained variance
    # read late (the targets no longer vary) looks untrained ...
    "lr1.5e-3_ppo": ("healthy_ppo", {"lr": 1.5e-3}, "healthy"),
    "lr2e-3_ppo": ("healthy_ppo", {"lr": 2e-3}, "healthy"),
    "epochs15_ppo": ("healthy_ppo", {"update_epochs": 15}, "healthy"),
    # ... milder saturation (an early entropy above twice the public saturated log's) ...
    **{f"saturated_gain{g}": ("saturated_policy", {"policy_head_gain": float(g)}, _SAT)
       for g in (20, 30, 50, 70)},
    # ... saturated policies that escape (a large KL, read first, suggests the distractor) ...
    "saturated_lr3e-3_gain100": ("saturated_policy", {"lr": 3e-3}, _SAT),
    "saturated_lr3e-3_gain30": ("saturated_policy", {"lr": 3e-3, "policy_head_gain": 30.0},
                                _SAT),
    "saturated_lr1e-2_gain30": ("saturated_policy", {"lr": 1e-2, "policy_head_gain": 30.0},
                                _SAT),
    # ... and buffers of a few hundred slots
    "small_buffer_256": ("small_buffer", {"buffer_size": 256}, _SB),
    "small_buffer_fast_target_256": ("small_buffer", {"buffer_size": 256, "target_every": 100},
                                     _SB),
    # round 4 (issue 47): return levels that overlap between faults within a family: healthy
    # PPO that learns slowly (an entropy bonus, a small step), faults that learn well ...
    "ent0.1_ppo": ("healthy_ppo", {"ent_coef": 0.1}, "healthy"),
    "lr1e-4_ppo": ("healthy_ppo", {"lr": 1e-4}, "healthy"),
    "lr5e-5_ppo": ("healthy_ppo", {"lr": 5e-5}, "healthy"),
    # (a policy 10-30x slower than its critic: at 0.03 and 0.05 its critic lags the rising
    # returns, a late value loss of 20-40, and the reference names it untrained_critic; at 0.1
    # it learns to 170 steps, the short-horizon decoys' level: none is a low-return healthy log)
    **{f"slow_policy{k}_ppo": ("healthy_ppo", {"policy_lr_scale": k}, "healthy")
       for k in (0.03, 0.05, 0.1)},
    **{f"gamma{g}_ppo": ("healthy_ppo", {"gamma": g}, "healthy") for g in (0.7, 0.8)},
    "saturated_lr1e-2_gain300": ("saturated_policy", {"lr": 1e-2, "policy_head_gain": 300.0},
                                 _SAT),
    "saturated_lr3e-3_gain20": ("saturated_policy", {"lr": 3e-3, "policy_head_gain": 20.0},
                                _SAT),
    "untrained_critic_lr1e-4": ("untrained_critic", {"lr": 1e-4}, _UC),
    "untrained_critic_ent0.05": ("untrained_critic", {"ent_coef": 0.05}, _UC),
    # ... and small buffers that act at random long (low returns, as late_start_dqn's)
    **{f"small_buffer_late_start_{n}": ("small_buffer", {"buffer_size": n,
                                                         "learning_starts": 10_000}, _SB)
       for n in (32, 64)},
    "small_buffer_slow_lr_32": ("small_buffer", {"lr": 1e-4}, _SB),
    "small_buffer_long_exploration_64": ("small_buffer", {"buffer_size": 64,
                                                          "eps_decay_steps": 25_000}, _SB),
}


def _train(job: tuple[str, int, str]) -> str:
    name, seed, path = job
    agent, overrides, _ = CANDIDATES[name]
    log = c_logs.compact(c_agents.train(agent, seed, overrides=overrides))
    Path(path).write_bytes(c_logs.npz_bytes(log))
    return path


def credits(points: list, known: list) -> np.ndarray:
    """``(L, R)`` float64: each point's credit (0, 1, or a tie's share) under each of
    c_pool.STUDENT_RULES, in that order, calibrated on the public points ``known``."""
    feats = [(k,) for k in c_pool.FEATURES] + [c_pool.FEATURES]
    return np.array([[c_pool.nearest_public(f, [p], known) for f in feats] for p in points])


def train_missing(train, todo: list, jobs: int) -> None:
    """Run ``train`` (a job -> the path it wrote) on every job of ``todo`` in
    ``jobs`` processes, printing each path as it is written."""
    with ProcessPoolExecutor(jobs) as ex:
        for k, p in enumerate(ex.map(train, todo), 1):
            print(f"  [{k}/{len(todo)}] {Path(p).name}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", help="configurations (default: all of CANDIDATES)")
    ap.add_argument("--seeds", default="20,21,22,23", help="selection seeds")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path("/var/lib/rlcap-bench/c_screen3"))
    args = ap.parse_args()
    names = args.names or list(CANDIDATES)
    seeds = [int(s) for s in args.seeds.split(",")]
    a = config.load("c_diagnose")
    reserved = {c.seed for c in c_logs.pool_cases(a)}
    assert not reserved & set(seeds), f"seeds {sorted(reserved)} are the pool's"
    args.cache.mkdir(parents=True, exist_ok=True)
    runs = [(n, s, args.cache / f"{n}_s{s}.npz") for n in names for s in seeds]
    todo = [(n, s, str(p)) for n, s, p in runs if not p.exists()]
    print(f"CPU: {cpu_name()}\n{len(names)} configurations x seeds {seeds}: {len(runs)} runs, "
          f"{len(todo)} to train", flush=True)
    train_missing(_train, todo, args.jobs)

    ref = load_reference("c_diagnose", "diagnose.py")
    known = [c_pool.point(f, log) for f, log in c_pool.public(a)]
    rules = c_pool.catalogue_rules()
    heads = [r.replace("nearest public log ", "")[:10] for r in c_pool.STUDENT_RULES]
    print("\nper configuration: share right of each return rule calibrated on the public logs; "
          "the reference's answers (right/all) and smallest margin; the catalogue's rules "
          "that name a log wrong (honest ones: HONEST WRONG)")
    print(f"  {'configuration':40s} " + " ".join(f"{h:>10s}" for h in heads)
          + "  reference")
    honest_names = set(c_pool.catalogue_rules("honest"))
    for n in names:
        fault = CANDIDATES[n][2]
        logs = [judge._load(p) for m, _, p in runs if m == n]
        pts = [c_pool.point(fault, log) for log in logs]
        shares = credits(pts, known).mean(0)
        named = [ref.diagnose(log)[0] for log in logs]
        margin = min(c_pool.rule_margin(ref.summary(log), judge.family(log), ref.THRESHOLDS)
                     for log in logs)
        print(f"  {n:40s} " + " ".join(f"{s:10.2f}" for s in shares)
              + f"  {sum(x == fault for x in named)}/{len(logs)} {margin:.2f}x")
        for log, p, s in zip(logs, pts, seeds):
            stats = ref.summary(log)
            wrong = [r for r, m in rules.items() if c_pool.named(m, log) != fault]
            bad = [r.replace("diagnose_by_", "") for r in wrong if r in honest_names]
            print(f"      seed {s}: " + ", ".join(f"{k} {v:.4g}" for k, v in stats.items())
                  + "; " + ", ".join(f"{k} {v:.0f}" for k, v in p[2].items()))
            print("         wrong: " + (", ".join(r.replace("diagnose_by_", "") for r in wrong
                                                if r not in honest_names) or "-")
                  + (f"   HONEST WRONG: {', '.join(bad)}" if bad else ""))

if __name__ == "__main__":
    main()
