"""Environment steps per second: rlkit's VecCartPole vs gymnasium's CartPole-v1.

Run from the repository root:

    python bench/bench_cartpole.py

Every contender takes the same number of environment steps with uniformly
random actions (fixed seed); actions are drawn before the timer starts.
"Steps" counts single-environment transitions, so a vector env with N envs
does N steps per call. The contenders run in turn for ROUNDS rounds and the
best round of each is reported, which damps noise from other processes.
"""

import os
import sys
import time

import gymnasium as gym
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from rlkit.cartpole import VecCartPole  # noqa: E402

SEED = 0
TOTAL_ENV_STEPS = 16_000  # per contender and round
ROUNDS = 3


def random_actions(num_calls, num_envs):
    """(num_calls, num_envs) int64 uniform in {0, 1}."""
    return np.random.default_rng(SEED).integers(0, 2, size=(num_calls, num_envs))


def bench_ours(num_envs):
    env = VecCartPole(num_envs, seed=SEED)
    env.reset()
    actions = random_actions(TOTAL_ENV_STEPS // num_envs, num_envs)
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return actions.size / (time.perf_counter() - start)


def bench_gym_single():
    env = gym.make("CartPole-v1")
    env.reset(seed=SEED)
    actions = random_actions(TOTAL_ENV_STEPS, 1)[:, 0].tolist()
    start = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(a)
        if terminated or truncated:
            env.reset()
    return len(actions) / (time.perf_counter() - start)


def bench_gym_vector(num_envs, mode):
    env = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=SEED)
    actions = random_actions(TOTAL_ENV_STEPS // num_envs, num_envs)
    start = time.perf_counter()
    for a in actions:
        env.step(a)  # autoresets on its own
    elapsed = time.perf_counter() - start
    env.close()
    return actions.size / elapsed


CONTENDERS = {
    "rlkit VecCartPole N=8": lambda: bench_ours(8),
    "rlkit VecCartPole N=1": lambda: bench_ours(1),
    "gymnasium CartPole-v1 (single env)": bench_gym_single,
    "gymnasium make_vec sync N=8": lambda: bench_gym_vector(8, "sync"),
    "gymnasium make_vec vector_entry_point N=8": lambda: bench_gym_vector(8, "vector_entry_point"),
}


def main():
    results = {name: 0.0 for name in CONTENDERS}
    for _ in range(ROUNDS):
        for name, run in CONTENDERS.items():
            results[name] = max(results[name], run())
    baseline = results["gymnasium CartPole-v1 (single env)"]
    sync8 = results["gymnasium make_vec sync N=8"]
    print(f"{'contender':45s} {'env steps/s':>12s} {'vs single':>10s} {'vs sync8':>9s}")
    for name, rate in results.items():
        print(f"{name:45s} {rate:12,.0f} {rate / baseline:9.2f}x {rate / sync8:8.2f}x")


if __name__ == "__main__":
    main()
