"""Capstone A's oracles (Gradescope side only): the answers a student writes,
computed independently of the reference, plus the judge's first-minibatch data.
Each returns arrays; the judge reaches them through ``Context.oracle``."""
from __future__ import annotations

import numpy as np

from rlkit.agent import ENV_SEED_OFFSET, collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import forward


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """``(B, A)`` log-probabilities of softmax(logits), by log-sum-exp."""
    top = logits.max(axis=1, keepdims=True)
    shifted = logits - top
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def log_prob(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``(B,)`` log pi(a | s) of the chosen actions."""
    return log_softmax(logits)[np.arange(len(actions)), actions]


def reward_to_go_minus_v(ro: dict, gamma: float) -> np.ndarray:
    """``(T, N)`` brute force, one environment and step at a time: discounted
    reward-to-go, bootstrapped with V(final obs) at truncations and with
    values[T] where the data stops, minus V-hat."""
    rewards, values, final_values = ro["rewards"], ro["values"], ro["final_values"]
    T, N = rewards.shape
    out = np.zeros((T, N))
    for n in range(N):
        G = values[T, n]
        for t in range(T - 1, -1, -1):
            if ro["terminated"][t, n]:
                G = 0.0
            elif ro["truncated"][t, n]:
                G = final_values[t, n]
            G = rewards[t, n] + gamma * G
            out[t, n] = G - values[t, n]
    return out


def gae(ro: dict, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE(gamma, lambda) of a rollout, by the truncated-sum definition:
    A_t = sum_k (gamma lam)^k delta_{t+k} within the episode; returns
    ``(advantages (T, N), returns (T, N))``."""
    T, N = ro["rewards"].shape
    ended = ro["terminated"] | ro["truncated"]
    bootstrap = np.where(ro["terminated"], 0.0,
                         np.where(ro["truncated"], ro["final_values"], ro["values"][1:]))
    delta = ro["rewards"] + gamma * bootstrap - ro["values"][:T]
    adv = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            total, factor = 0.0, 1.0
            for k in range(t, T):
                total += factor * delta[k, n]
                if ended[k, n]:
                    break
                factor *= gamma * lam
            adv[t, n] = total
    return adv, adv + ro["values"][:T]


def policy_gradient_dlogits(logits: np.ndarray, actions: np.ndarray,
                            adv: np.ndarray) -> np.ndarray:
    """``(B, A)`` gradient w.r.t. the logits of the plain policy-gradient loss
    ``-mean(A log pi(a | s))``."""
    probs = np.exp(log_softmax(logits))
    onehot = np.eye(logits.shape[1])[actions]
    return -(adv / len(adv))[:, None] * (onehot - probs)


def first_minibatch(seed: int, hp: dict) -> tuple[np.ndarray, ...]:
    """What the judge's PPO loop (``ppo_loop.train``) sees before its first
    optimiser step, none of which depends on the submission: the rollout's
    logits ``(B, A)`` and actions ``(B,)``, the first permutation's minibatch
    indices ``(mb,)`` and that minibatch's logits recomputed by a forward
    pass ``(mb, A)``."""
    rng = np.random.default_rng(seed)
    nets = init_networks(hp, rng)
    env = VecCartPole(hp["num_envs"], seed=seed + ENV_SEED_OFFSET)
    ro = collect_rollout(env, env.reset(), *nets, hp["num_steps"], rng)
    batch = hp["num_envs"] * hp["num_steps"]
    idx = rng.permutation(batch)[:batch // hp["num_minibatches"]]
    obs = ro["obs"].reshape(batch, OBS_DIM)[idx]
    mb_logits, _ = forward(nets[0], obs)
    return (ro["logits"].reshape(batch, NUM_ACTIONS), ro["actions"].reshape(batch),
            idx, mb_logits)
