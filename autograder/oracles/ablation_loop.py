"""The judge's own PPO loop with capstone B's switches (an oracle: Gradescope
side only).

Capstone A's judge loop (``ppo_loop``) extended by every switch of B's menu:
``anneal_lr``, ``adam_eps``, ``update_epochs``, ``num_minibatches``,
``max_grad_norm``, ``gae_lambda``, ``bootstrap_truncation``, ``norm_adv``,
``clip_vloss``, ``ent_coef``, ``shared_network`` and ``norm_obs``. It owns the
environment, the networks, the optimisers and the permutations, and asks the
submission only for its pieces, through ``pieces`` (probes when grading): per
update the log-probabilities and the advantages, per minibatch one batch (the
normalised advantages, the policy loss's, the value loss's and, with
``ent_coef``, the entropy loss's gradients; a shared network's merged
gradients after). With the reference's pieces it reproduces the reference's
``train`` bit for bit, switch by switch (a test checks).

``slip`` runs it off the recipe in one of capstone A's ways
(``ppo_loop.RECIPE_SLIPS``: the judge names a train() that matches one);
``stop_after`` ends a run of ``updates`` updates after its first
``stop_after`` (the learning rate annealed as in the whole run).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from rlkit.agent import ENV_SEED_OFFSET, collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, clip_grad_norm, forward
from rlkit.optim import Adam
from rlkit.progress import progress
from rlkit.variants import NormalisedObs, init_shared_networks, shared_layers

from ..judges.ablation_pieces import AblationPieces
from .ppo_loop import ORDER_SLIPS, RECIPE_SLIPS, _slipped_lr, _slipped_permutation


@dataclass
class Run:
    policy_params: list
    value_params: list
    episode_returns: list              # per update: (k,) returns of finished episodes
    obs_stats: Optional[dict] = None   # {"mean", "var", "count"} with norm_obs
    ends: dict = field(default_factory=lambda: {"terminated": 0, "truncated": 0})  # steps


def _step(pieces: AblationPieces, hp: dict, nets: tuple, opts: list, batch: dict,
          norm_adv: bool) -> None:
    """One minibatch step, in the reference's order of operations."""
    policy_params, value_params = nets
    logits, policy_cache = forward(policy_params, batch["obs"])
    value_out, value_cache = forward(value_params, batch["obs"])
    dlogits, dv, dent = pieces.step(batch, logits, value_out[:, 0], hp, norm_adv)
    if dent is not None:
        dlogits = dlogits + hp["ent_coef"] * dent
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
          stop_after: Optional[int] = None, slip: str = "",
          on_update: Optional[Callable[[int], None]] = None,
          show_progress: bool = False) -> Run:
    """PPO with the judge's loop, ``hp``'s switches and the submission's
    pieces; ``on_update(u)`` is called before update ``u`` (the in-run checks
    say where a piece answered)."""
    if slip and slip not in RECIPE_SLIPS:
        raise ValueError(f"unknown slip {slip!r}")
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
    if on_update is not None:
        on_update(0)
    obs = env.reset()
    T, N = hp["num_steps"], hp["num_envs"]
    batch_size = T * N
    mb_size = batch_size // hp["num_minibatches"]
    run = Run(nets[0], nets[1], [])
    last = updates if stop_after is None else min(updates, stop_after)
    for u in progress(range(last), enable=show_progress, desc=f"PPO seed {seed}"):
        if on_update is not None:
            on_update(u)
        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]
        if slip:
            lr = _slipped_lr(hp, u, updates, slip, lr)
        for o in opts:
            o.lr = lr
        if slip == "value_lr_fixed" and len(opts) == 2:
            opts[1].lr = hp["lr"]
        if slip == "reset_each_update" and u > 0:
            obs = env.reset()
        ro = collect_rollout(env, obs, nets[0], nets[1], T, rng)
        obs = ro["next_obs"]
        term, trunc = ro["terminated"], ro["truncated"]
        run.ends["terminated"] += int(term.sum())
        run.ends["truncated"] += int(trunc.sum())
        if not hp.get("bootstrap_truncation", True):   # a time-limit end counts as a termination
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
                _step(pieces, hp, nets, opts, {k: v[start:start + mb_size]
                                               for k, v in shuffled.items()}, norm_adv)
    if hp["norm_obs"]:
        run.obs_stats = {"mean": env.mean, "var": env.var, "count": env.count}
    return run
