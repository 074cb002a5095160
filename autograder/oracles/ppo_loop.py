"""The judge's own PPO loop on CartPole (an oracle: Gradescope side only).

It owns the environment, the networks, the optimiser, the permutations and
the evaluation, and asks the submission only for the pieces: log-probs,
GAE, advantage normalisation, the clipped policy loss and the value loss,
each through ``pieces`` (``judges.ppo_pieces.Pieces(ctx)``: every answer
through the gate, so that a piece that fails here fails the case naming its
function). With the reference's pieces it reproduces the reference's
``train`` bit for bit (a test checks).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from rlkit.agent import ENV_SEED_OFFSET, collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, clip_grad_norm, forward
from rlkit.optim import Adam
from rlkit.progress import progress

from ..judges.ppo_pieces import Pieces


@dataclass
class Run:
    policy_params: list
    value_params: list
    episode_returns: list          # per update: (k,) returns of finished episodes
    first_minibatch: Optional[dict] = None


RECIPE_SLIPS = ("no_anneal", "lr_ahead", "lr_behind", "value_lr_fixed", "one_perm_per_update",
                "no_shuffle", "norm_whole_batch", "reset_each_update")


def _slipped_lr(hp: dict, u: int, updates: int, slip: str, lr: float) -> float:
    """Update ``u``'s learning rate under a recipe slip (not annealed, one
    update ahead, one update behind); ``lr``, the recipe's, under any other."""
    if not hp["anneal_lr"] or slip not in ("no_anneal", "lr_ahead", "lr_behind"):
        return lr
    if slip == "no_anneal":
        return hp["lr"]
    return hp["lr"] * (1.0 - (u + 1 if slip == "lr_ahead" else max(u - 1, 0)) / updates)


ORDER_SLIPS = ("one_perm_per_update", "no_shuffle")


def _slipped_permutation(rng: np.random.Generator, n: int, slip: str, last) -> np.ndarray:
    """An epoch's order of the ``n`` samples under a slip of :data:`ORDER_SLIPS`:
    the update's first permutation every epoch, or no shuffling at all (no draw)."""
    if slip == "no_shuffle":
        return np.arange(n)
    return last if last is not None else rng.permutation(n)


def train(pieces: Pieces, seed: int, hp: dict, updates: int, *, first_minibatch_only: bool = False,
          show_progress: bool = False, slip: str = "") -> Run:
    """PPO with the judge's loop and the submission's pieces (see module doc).

    ``first_minibatch_only`` stops before the first optimiser step and
    returns what the first minibatch of the first epoch saw. ``slip`` (one of
    :data:`RECIPE_SLIPS`, for q8's diagnosis): the loop off the recipe in that
    one way."""
    if slip and slip not in RECIPE_SLIPS:
        raise ValueError(f"unknown slip {slip!r}")
    rng = np.random.default_rng(seed)
    policy_params, value_params = init_networks(hp, rng)
    policy_opt = Adam(policy_params, lr=hp["lr"], eps=hp["adam_eps"])
    value_opt = Adam(value_params, lr=hp["lr"], eps=hp["adam_eps"])
    env = VecCartPole(hp["num_envs"], seed=seed + ENV_SEED_OFFSET)
    obs = env.reset()
    T, N = hp["num_steps"], hp["num_envs"]
    batch_size = T * N
    mb_size = batch_size // hp["num_minibatches"]
    run = Run(policy_params, value_params, [])
    for u in progress(range(updates), enable=show_progress, desc=f"PPO seed {seed}"):
        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]
        if slip:
            lr = _slipped_lr(hp, u, updates, slip, lr)
        policy_opt.lr = value_opt.lr = lr
        if slip == "value_lr_fixed":
            value_opt.lr = hp["lr"]
        if slip == "reset_each_update" and u > 0:
            obs = env.reset()
        ro = collect_rollout(env, obs, policy_params, value_params, T, rng)
        obs = ro["next_obs"]
        advantages, returns = pieces.gae(ro["rewards"], ro["values"], ro["final_values"],
                                         ro["terminated"], ro["truncated"], hp["gamma"],
                                         hp["gae_lambda"])
        actions = ro["actions"].reshape(batch_size)
        flat = {"obs": ro["obs"].reshape(batch_size, OBS_DIM), "actions": actions,
                "logp_old": pieces.log_prob(ro["logits"].reshape(batch_size, NUM_ACTIONS),
                                            actions),
                "advantages": advantages.reshape(batch_size),
                "returns": returns.reshape(batch_size)}
        run.episode_returns.append(ro["episode_returns"])
        norm_adv = hp["norm_adv"]
        if norm_adv and slip == "norm_whole_batch":
            flat["advantages"], norm_adv = pieces.normalise(flat["advantages"]), False
        perm = None
        for _ in range(hp["update_epochs"]):
            if slip in ORDER_SLIPS:
                perm = _slipped_permutation(rng, batch_size, slip, perm)
            else:
                perm = rng.permutation(batch_size)
            shuffled = {k: v[perm] for k, v in flat.items()}
            for start in range(0, batch_size, mb_size):
                batch = {k: v[start:start + mb_size] for k, v in shuffled.items()}
                logits, policy_cache = forward(policy_params, batch["obs"])
                value_out, value_cache = forward(value_params, batch["obs"])
                # the minibatch's pieces in one batch (one round trip through a probe)
                adv, dlogits, dvalues, dentropy = pieces.minibatch(
                    batch, logits, value_out[:, 0], hp, norm_adv,
                    losses=not first_minibatch_only)
                if first_minibatch_only:
                    run.first_minibatch = {"logits": logits, "actions": batch["actions"],
                                           "logp_old": batch["logp_old"], "advantages": adv,
                                           "obs": batch["obs"]}
                    return run
                if dentropy is not None:
                    dlogits = dlogits + hp["ent_coef"] * dentropy
                policy_grads = backward(policy_params, policy_cache, dlogits)
                value_grads = backward(value_params, value_cache,
                                       (hp["vf_coef"] * dvalues)[:, None])
                if hp["max_grad_norm"] is not None:
                    clip_grad_norm(policy_grads + value_grads, hp["max_grad_norm"])
                policy_opt.step(policy_params, policy_grads)
                value_opt.step(value_params, value_grads)
    return run
