"""Time one 60-update run of the Capstone A reference PPO, rollout vs update.

Run from the repository root (one core; rlkit already pins BLAS to one thread):

    taskset -c 0 python bench/bench_ppo.py [--seed 0] [--updates 60]

Without ``taskset`` the script pins itself to the first CPU it may use.
``train`` records, per update, the seconds spent collecting the rollout
(policy forward + env step per time step, batched values, GAE, flattening)
and the seconds spent in the optimisation epochs (80 ``minibatch_update``
calls per update at the default 10 epochs x 8 minibatches). The second
table splits one ``minibatch_update`` (B = 256) into its parts, best of
several repeats, to show where the update time goes.
"""

import argparse
import importlib.util
import os
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from rlkit.mlp import backward, clip_grad_norm, forward  # noqa: E402
from rlkit.optim import Adam  # noqa: E402


def load_reference():
    """Import ``solutions/a_ppo/ppo.py`` (not a package) under a private name."""
    path = os.path.join(ROOT, "solutions", "a_ppo", "ppo.py")
    spec = importlib.util.spec_from_file_location("_bench_a_ppo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def best_of(fn, repeats=5, number=50):
    """Best mean seconds per call of ``fn()`` over ``repeats`` rounds."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def minibatch_breakdown(ppo):
    """Microseconds per call of ``minibatch_update`` and of its heavy parts."""
    rng = np.random.default_rng(0)
    hp = dict(ppo.DEFAULT_HP)
    policy, value = ppo.init_networks(hp, rng)
    policy_opt = Adam(policy, lr=hp["lr"], eps=hp["adam_eps"])
    value_opt = Adam(value, lr=hp["lr"], eps=hp["adam_eps"])
    B = hp["num_envs"] * hp["num_steps"] // hp["num_minibatches"]
    batch = {"obs": rng.normal(0.0, 0.1, (B, 4)), "actions": rng.integers(0, 2, B),
             "logp_old": np.full(B, np.log(0.5)), "advantages": rng.standard_normal(B),
             "returns": rng.standard_normal(B)}
    obs = batch["obs"]
    logits, pcache = forward(policy, obs)
    vout, vcache = forward(value, obs)
    pgrads, vgrads = backward(policy, pcache, logits), backward(value, vcache, vout)
    hidden = np.tanh(rng.standard_normal((B, hp["hidden"][0])))
    parts = {
        "minibatch_update (whole)": lambda: ppo.minibatch_update(
            policy, value, policy_opt, value_opt, batch, hp),
        "  rlkit forward, both nets": lambda: (forward(policy, obs), forward(value, obs)),
        "    of which np.tanh, 4 x (B, 64)": lambda: [np.tanh(hidden) for _ in range(4)],
        "  rlkit backward, both nets": lambda: (backward(policy, pcache, logits),
                                                backward(value, vcache, vout)),
        "  Adam step, both nets": lambda: (policy_opt.step(policy, pgrads),
                                           value_opt.step(value, vgrads)),
        "  clip_grad_norm (joint)": lambda: clip_grad_norm(pgrads + vgrads, 1e30),
        "  the three losses": lambda: (
            ppo.clipped_policy_loss(logits, batch["actions"], batch["logp_old"],
                                    batch["advantages"], 0.2),
            ppo.entropy_loss(logits), ppo.value_loss(vout[:, 0], batch["returns"])),
    }
    return B, {name: 1e6 * best_of(fn) for name, fn in parts.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--updates", type=int, default=60)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    ppo = load_reference()

    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = ppo.train(args.seed, updates=args.updates)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    log = out["log"]
    rollout, update = log["rollout_seconds"].sum(), log["update_seconds"].sum()
    hp = out["hp"]
    steps = args.updates * hp["num_envs"] * hp["num_steps"]
    minibatches = args.updates * hp["update_epochs"] * hp["num_minibatches"]
    returns = ppo.evaluate(out["policy_params"])

    print(f"one {args.updates}-update PPO run, seed {args.seed}, "
          f"CPU(s) {sorted(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")
    print(f"  total   {wall:6.2f} s wall, {cpu:6.2f} s CPU")
    print(f"  rollout {rollout:6.2f} s ({rollout / (rollout + update):5.1%})  "
          f"{1e6 * rollout / (steps / hp['num_envs']):6.1f} us per vector step")
    print(f"  update  {update:6.2f} s ({update / (rollout + update):5.1%})  "
          f"{1e6 * update / minibatches:6.1f} us per minibatch ({minibatches} minibatches)")
    print(f"  final evaluation: median return {np.median(returns):.1f} over {len(returns)} "
          "sampled episodes")

    B, parts = minibatch_breakdown(ppo)
    print(f"\none minibatch_update, B = {B}, best of 5 x 50 calls:")
    for name, us in parts.items():
        print(f"  {name:36s} {us:8.1f} us")


if __name__ == "__main__":
    main()
