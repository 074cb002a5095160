"""The course figures, computed from the reference solutions (instructor side).

``make_figures()`` writes, under ``dist/figures/``, each PNG with the numbers
behind it in a JSON file of the same stem (see ``rlkit.plotting``):

* ``learning_curves``  capstone A: the reference PPO ``train`` on seeds 1, 2, 3 for
                       60 updates (3 with ``quick``), return per update;
* ``success_vs_k``     capstone D: the section's K-sweep (K = 1, 2, 4, 8, 32, 6400
                       scored responses per prompt, ``default_rng(1)``, the reference
                       group-standardised weight): 0.062 at K = 1, 0.500 from K = 2;
* ``beta_crossing``    exercise 4: the section's loophole verifier with the KL
                       penalty, K = 32, 400 updates, a grid of beta around the
                       threshold r_h / d = 1/4, seeds 1-5 (seed 2 gives the
                       section's table), the hedge's probability (with the tilted
                       optimum) and the loophole and exact success.

Needs ``solutions/`` (loaded with ``load_reference``) and matplotlib.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from rlkit import plotting, reinforce
from rlkit.verifier import (EXACT_REWARD, HEDGE, REFERENCE_POLICY, SLOPPY_REWARD,
                            expected_success, reference_logits, softmax_policy)

from autograder.grading import config
from autograder.grading.reference import load_reference
from autograder.paths import DIST_DIR, ROOT

from .reproduce import BETA_K, BETA_UPDATES, K_SWEEP, k_sweep_success

# Capstone A's seeds, updates, bar and evaluation are the graded ones (assignment.toml);
# the K-sweep and the crossing's K and updates are the section's (reproduce.py).
A_CONFIG = config.load("a_ppo")
A_PARAMS = A_CONFIG.params

LEARNING_SEEDS = (1, 2, 3)      # the figure's runs; the grading's q7 seeds are drawn per submission
CROSSING_BETAS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
CROSSING_SEEDS = (1, 2, 3, 4, 5)
CROSSING_K, CROSSING_UPDATES = BETA_K, BETA_UPDATES
HEDGE_LOG_ODDS_GAP = -reference_logits()[0, HEDGE]   # d = 4: the reference's distrust of the hedge
HEDGE_REWARD_GAP = 1.0                               # r_h = 1: what the loophole pays the hedge


def learning_curve_data(quick: bool = False) -> tuple[dict, dict]:
    """Capstone A: ``({seed: per-update episode returns}, {seed: final median
    return over 20 sampled-action episodes})`` of the reference PPO."""
    ppo = load_reference("a_ppo", "ppo.py")
    updates = 3 if quick else A_PARAMS["updates"]
    returns, medians = {}, {}
    for seed in LEARNING_SEEDS:
        run = ppo.train(seed, updates=updates, progress=True)
        returns[seed] = run["log"]["episode_returns"]
        medians[seed] = float(np.median(ppo.evaluate(run["policy_params"],
                                                     episodes=A_PARAMS["eval_episodes"],
                                                     seed=seed + A_PARAMS["eval_seed_offset"])))
    return returns, medians


def k_sweep_data() -> list[float]:
    """Capstone D: success of a sampled response after the section's K-sweep, per K."""
    return k_sweep_success(load_reference("d_grpo", "grpo.py").group_standardised_weight)


def crossing_data() -> dict:
    """Exercise 4: per beta and seed, the hedge's probability and the sloppy and
    exact success after training on the loophole verifier with the KL penalty;
    the tilted optimum's hedge probability on a fine grid; the threshold."""
    grpo = load_reference("d_grpo", "grpo.py")
    ex = load_reference("exercises", "exercises.py")
    shape = (len(CROSSING_BETAS), len(CROSSING_SEEDS))
    hedge, sloppy, exact = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for i, beta in enumerate(CROSSING_BETAS):
        thetas = reinforce.train(grpo.group_standardised_weight, CROSSING_K, CROSSING_UPDATES,
                                 [np.random.default_rng(s) for s in CROSSING_SEEDS],
                                 rewards=SLOPPY_REWARD, beta=beta)
        for j, theta in enumerate(thetas):
            pi = softmax_policy(theta)
            hedge[i, j] = pi[:, HEDGE].mean()
            sloppy[i, j] = expected_success(pi, SLOPPY_REWARD)
            exact[i, j] = expected_success(pi, EXACT_REWARD)
    grid = np.linspace(0.08, max(CROSSING_BETAS), 120)
    optimum = np.array([ex.tilted_policy(reference_logits(), SLOPPY_REWARD, b)[:, HEDGE].mean()
                        for b in grid])
    threshold = float(ex.exploit_threshold(np.array([HEDGE_LOG_ODDS_GAP]),
                                           np.array([HEDGE_REWARD_GAP]))[0])
    return {"betas": np.array(CROSSING_BETAS), "hedge": hedge, "sloppy": sloppy, "exact": exact,
            "optimum": (grid, optimum), "threshold": threshold}


def make_figures(out_dir: Path | str = DIST_DIR / "figures", quick: bool = False) -> list[Path]:
    """Compute the three figures' data from the reference solutions and write
    each PNG with its JSON beside it into ``out_dir``; return the paths written.
    ``quick`` trains PPO for 3 updates instead of 60 (the other two figures are
    cheap and always use the section's full budgets)."""
    out = Path(out_dir)
    written: list[Path] = []

    def step(name: str, make) -> None:
        start = time.monotonic()
        print(f"figure {name} ...", file=sys.stderr, flush=True)
        paths = make()
        written.extend(paths)
        shown = [p.relative_to(ROOT) if p.resolve().is_relative_to(ROOT) else p for p in paths]
        print(f"wrote {', '.join(map(str, shown))} ({time.monotonic() - start:.1f} s)")

    def learning() -> tuple[Path, Path]:
        returns, medians = learning_curve_data(quick)
        return plotting.learning_curves(returns, out / "learning_curves.png", bar=A_PARAMS["bar"],
                                        evaluation=medians)

    def k_sweep() -> tuple[Path, Path]:
        return plotting.success_vs_k(K_SWEEP, k_sweep_data(), out / "success_vs_k.png",
                                     ceiling=0.5, reference=expected_success(REFERENCE_POLICY))

    def crossing() -> tuple[Path, Path]:
        d = crossing_data()
        return plotting.beta_crossing(d["betas"], d["hedge"], out / "beta_crossing.png",
                                      threshold=d["threshold"], sloppy=d["sloppy"],
                                      exact=d["exact"], optimum=d["optimum"],
                                      quantity="hedge probability", seeds=CROSSING_SEEDS)

    step("success_vs_k (capstone D)", k_sweep)
    step("beta_crossing (exercise 4)", crossing)
    step("learning_curves (capstone A)", learning)
    return written


if __name__ == "__main__":   # python -m autograder.figures [--quick]
    make_figures(quick="--quick" in sys.argv[1:])
