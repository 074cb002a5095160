"""Capstone B's oracles (Gradescope side only)."""
from __future__ import annotations

import numpy as np

from . import a_ppo
from .a_ppo import gae


def switched_ends(ro: dict, bootstrap: bool) -> dict:
    """``ro`` with its episode ends as the bootstrap switch sets them: off, a
    time-limit end is a termination."""
    if bootstrap:
        return ro
    return dict(ro, terminated=ro["terminated"] | ro["truncated"],
                truncated=np.zeros_like(ro["truncated"]))


def advantages_and_returns(ro: dict, gamma: float, lam: float, bootstrap: bool) -> np.ndarray:
    """``(2, T, N)``: GAE advantages and returns of a rollout by the truncated-sum
    definition (capstone A's oracle), a time-limit end treated as a termination
    when ``bootstrap`` is False."""
    return np.stack(gae(switched_ends(ro, bootstrap), gamma, lam))


# ----------------------------------------------------------------------------- the pieces
# Capstone B's pieces, and those of capstone A's that only B's switches reach, computed
# independently of the reference: what the judge's runs compare every answer with.
OBS_EPS, OBS_CLIP = 1e-8, 10.0          # the handout's normalise_obs constants


def gae_recursive(rewards: np.ndarray, values: np.ndarray, final_values: np.ndarray,
                  terminated: np.ndarray, truncated: np.ndarray, gamma: float,
                  lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``(advantages (T, N), returns (T, N))`` of GAE(gamma, lambda) by the
    backward recursion A_t = delta_t + gamma lambda A_{t+1} within an episode
    (``values`` (T + 1, N); a termination bootstraps with 0, a truncation with
    ``final_values``, the end of the data with ``values[T]``): the truncated sum
    of ``a_ppo.gae`` in O(T N), for checking a whole run's calls."""
    T = rewards.shape[0]
    adv = np.zeros(rewards.shape)
    following = np.zeros(rewards.shape[1])
    for t in range(T - 1, -1, -1):
        nxt = np.where(terminated[t], 0.0, np.where(truncated[t], final_values[t],
                                                     values[t + 1]))
        delta = rewards[t] + gamma * nxt - values[t]
        following = delta + gamma * lam * np.where(terminated[t] | truncated[t], 0.0,
                                                   following)
        adv[t] = following
    return adv, adv + values[:T]


def clipped_value_loss(values: np.ndarray, values_old: np.ndarray, returns: np.ndarray,
                       eps: float) -> tuple[float, np.ndarray]:
    """CleanRL's clipped value loss ``0.5 mean(max((v - R)^2, (v_clip - R)^2))``,
    ``v_clip = v_old + clip(v - v_old, -eps, eps)`` (``v`` itself inside the band),
    and its gradient ``(B,)`` w.r.t. the values: ``(v - R) / B`` where the
    unclipped term is the larger (or equal), 0 where the clipped one is."""
    inside = np.abs(values - values_old) <= eps
    v_clip = np.where(inside, values, values_old + np.clip(values - values_old, -eps, eps))
    unclipped, clipped = (values - returns) ** 2, (v_clip - returns) ** 2
    grad = np.where(unclipped >= clipped, values - returns, 0.0) / len(values)
    return float(0.5 * np.mean(np.maximum(unclipped, clipped))), grad


def obs_stats(mean: np.ndarray, var: np.ndarray, count: float, obs: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """Running mean (D,), population variance (D,) and count merged with a
    batch ``obs`` (B, D), by the sums of squared deviations of both parts."""
    n = obs.shape[0]
    total = count + n
    batch_mean = obs.mean(axis=0)
    m2 = var * count + ((obs - batch_mean) ** 2).sum(axis=0) \
        + (batch_mean - mean) ** 2 * (count * n / total)
    return mean + (batch_mean - mean) * (n / total), m2 / total, float(total)


def normalise_obs(obs: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    """``(..., D)`` observations standardised by the running statistics and
    clipped to [-OBS_CLIP, OBS_CLIP]."""
    return np.clip((obs - mean) / np.sqrt(var + OBS_EPS), -OBS_CLIP, OBS_CLIP)


def shared_gradients(policy_grads: list, value_grads: list, num_shared: int) -> list:
    """A shared network's distinct layers' gradients (trunk, policy head, value
    head): the trunk's the sum of both halves', the heads' their own half's."""
    out = [{k: policy_grads[i][k] + value_grads[i][k] for k in ("W", "b")}
           for i in range(num_shared)]
    return out + [dict(policy_grads[num_shared]), dict(value_grads[num_shared])]


def obs_stats_flat(mean: np.ndarray, var: np.ndarray, count: float, obs: np.ndarray
                   ) -> np.ndarray:
    """:func:`obs_stats` as q1 compares it: mean (D,), variance (D,) and count
    in one ``(2D + 1,)`` array."""
    m, v, c = obs_stats(mean, var, count, obs)
    return np.concatenate([m, v, [c]])


def shared_gradients_flat(policy_grads: list, value_grads: list, num_shared: int
                          ) -> np.ndarray:
    """:func:`shared_gradients` as q2 compares it: every layer's W then b, in
    order (trunk, policy head, value head), one ``(P,)`` array
    (``rlkit.mlp.flatten``'s order)."""
    from rlkit.mlp import flatten
    return flatten(shared_gradients(policy_grads, value_grads, num_shared))


def piece(fn: str, *args) -> np.ndarray:
    """The reference's answer of capstone A's piece ``fn`` to ``args``, flattened
    as q4 compares it: a loss and its gradient as [loss, *gradient], GAE's
    advantages and returns one after the other (by the truncated-sum
    definition), an array as it is."""
    if fn == "categorical_log_prob":
        return a_ppo.log_prob(*args)
    if fn == "normalise_advantages":
        return a_ppo.normalise(*args)
    if fn == "compute_gae":
        rewards, values, final_values, terminated, truncated, gamma, lam = args
        ro = {"rewards": rewards, "values": values, "final_values": final_values,
              "terminated": terminated, "truncated": truncated}
        return np.concatenate([np.ravel(a) for a in a_ppo.gae(ro, gamma, lam)])
    losses = {"clipped_policy_loss": a_ppo.clipped_loss, "value_loss": a_ppo.value_loss,
              "entropy_loss": a_ppo.entropy_loss, "clipped_value_loss": clipped_value_loss}
    loss, grad = losses[fn](*args)
    return np.concatenate([[float(loss)], np.ravel(grad)])
