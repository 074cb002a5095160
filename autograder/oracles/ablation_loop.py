"""The judge's own PPO loop with capstone B's switches (an oracle: Gradescope
side only).

Capstone A's judge loop (``ppo_loop``) extended by every switch of B's menu:
``anneal_lr``, ``adam_eps``, ``update_epochs``, ``num_minibatches``,
``max_grad_norm``, ``gae_lambda``, ``bootstrap_truncation``, ``norm_adv``,
``clip_vloss``, ``ent_coef``, ``shared_network`` and ``norm_obs``. It owns the
environment, the networks, the optimisers and the permutations, and asks the
submission only for its pieces, through ``pieces`` (probes when grading).
With the reference's pieces it reproduces the reference's ``train`` bit for
bit, switch by switch (a test checks).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from rlkit.agent import ENV_SEED_OFFSET, collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, clip_grad_norm, forward
from rlkit.optim import Adam
from rlkit.progress import progress
from rlkit.variants import NormalisedObs, init_shared_networks, shared_layers

from ..judges.ablation_pieces import AblationPieces


@dataclass
class Run:
    policy_params: list
    value_params: list
    episode_returns: list              # per update: (k,) returns of finished episodes
    obs_stats: Optional[dict] = None   # {"mean", "var", "count"} with norm_obs
    ends: dict = field(default_factory=lambda: {"terminated": 0, "truncated": 0})  # steps


def _step(pieces: AblationPieces, hp: dict, nets: tuple, opts: list, batch: dict) -> None:
    """One minibatch step, in the reference's order of operations."""
    policy_params, value_params = nets
    adv = pieces.normalise(batch["advantages"]) if hp["norm_adv"] else batch["advantages"]
    logits, policy_cache = forward(policy_params, batch["obs"])
    value_out, value_cache = forward(value_params, batch["obs"])
    v_pred = value_out[:, 0]
    _, dlogits = pieces.clipped_loss(logits, batch["actions"], batch["logp_old"], adv,
                                     hp["clip_eps"])
    if hp["clip_vloss"]:
        _, dv = pieces.clipped_value_loss(v_pred, batch["values_old"], batch["returns"],
                                          hp["clip_eps"])
    else:
        _, dv = pieces.value_loss(v_pred, batch["returns"])
    if hp["ent_coef"] != 0.0:
        dlogits = dlogits + hp["ent_coef"] * pieces.entropy_loss(logits)[1]
    policy_grads = backward(policy_params, policy_cache, dlogits)
    value_grads = backward(value_params, value_cache, (hp["vf_coef"] * dv)[:, None])
    if hp["shared_network"]:
        grads = pieces.shared_gradients(policy_grads, value_grads, len(policy_params) - 1)
        if hp["max_grad_norm"] is not None:
            clip_grad_norm(grads, hp["max_grad_norm"])
        opts[0].step(shared_layers(policy_params, value_params), grads)
        return
    if hp["max_grad_norm"] is not None:
        clip_grad_norm(policy_grads + value_grads, hp["max_grad_norm"])
    opts[0].step(policy_params, policy_grads)
    opts[1].step(value_params, value_grads)


def train(pieces: AblationPieces, seed: int, hp: dict, updates: int, *,
          show_progress: bool = False) -> Run:
    """PPO with the judge's loop, ``hp``'s switches and the submission's pieces."""
    rng = np.random.default_rng(seed)
    if hp["shared_network"]:
        nets = init_shared_networks(hp, rng)
        opts = [Adam(shared_layers(*nets), lr=hp["lr"], eps=hp["adam_eps"])]
    else:
        nets = init_networks(hp, rng)
        opts = [Adam(p, lr=hp["lr"], eps=hp["adam_eps"]) for p in nets]
    env = VecCartPole(hp["num_envs"], seed=seed + ENV_SEED_OFFSET,
                      max_episode_steps=hp["time_limit"])
    if hp["norm_obs"]:
        env = NormalisedObs(env, pieces.obs_stats, pieces.normalise_obs)
    obs = env.reset()
    T, N = hp["num_steps"], hp["num_envs"]
    batch_size = T * N
    mb_size = batch_size // hp["num_minibatches"]
    run = Run(nets[0], nets[1], [])
    for u in progress(range(updates), enable=show_progress, desc=f"PPO seed {seed}"):
        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]
        for o in opts:
            o.lr = lr
        ro = collect_rollout(env, obs, nets[0], nets[1], T, rng)
        obs = ro["next_obs"]
        term, trunc = ro["terminated"], ro["truncated"]
        run.ends["terminated"] += int(term.sum())
        run.ends["truncated"] += int(trunc.sum())
        bootstrap = hp["bootstrap_truncation"]
        if not bootstrap:                       # a time-limit end counts as a termination
            term, trunc = term | trunc, np.zeros_like(trunc)
        advantages, rets = pieces.gae(ro["rewards"], ro["values"], ro["final_values"], term,
                                      trunc, hp["gamma"], hp["gae_lambda"])
        actions = ro["actions"].reshape(batch_size)
        flat = {"obs": ro["obs"].reshape(batch_size, OBS_DIM), "actions": actions,
                "logp_old": pieces.log_prob(ro["logits"].reshape(batch_size, NUM_ACTIONS),
                                            actions),
                "advantages": advantages.reshape(batch_size),
                "returns": rets.reshape(batch_size),
                "values_old": ro["values"][:T].reshape(batch_size)}
        run.episode_returns.append(ro["episode_returns"])
        for _ in range(hp["update_epochs"]):
            perm = rng.permutation(batch_size)
            shuffled = {k: v[perm] for k, v in flat.items()}
            for start in range(0, batch_size, mb_size):
                _step(pieces, hp, nets, opts, {k: v[start:start + mb_size]
                                               for k, v in shuffled.items()})
    if hp["norm_obs"]:
        run.obs_stats = {"mean": env.mean, "var": env.var, "count": env.count}
    return run
