"""Exact (enumerated) expectations on the verifier problem, for judging and
for reproducing the section. Instructor code: never shipped to students."""
from __future__ import annotations

import itertools
import warnings
from typing import Callable

import numpy as np

from rlkit.verifier import score_matrix

from . import clip_slips


def exact_gradient(pi: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """grad_theta E_{y ~ pi(.|x)} r(x, y) per prompt, ``(P, V)``:
    sum_y pi(y|x) r(x, y) (onehot(y) - pi[x])."""
    V = pi.shape[1]
    S = np.eye(V)[None, :, :] - pi[:, None, :]             # (P, V, V): score of each y
    return np.einsum("xy,xy,xyv->xv", pi, rewards, S)


def all_groups(V: int, K: int) -> np.ndarray:
    """Every ordered group of K responses out of V: ``(V**K, K) int64``."""
    return np.array(list(itertools.product(range(V), repeat=K)), dtype=np.int64).reshape(-1, K)


def expected_group_update(pi: np.ndarray, rewards: np.ndarray, K: int,
                          weight_fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Exact expectation over every group of K of the update
    (1/K) sum_j w_j score(y_j), with w = weight_fn(group rewards): ``(P, V)``.

    ``weight_fn`` receives all groups of all prompts at once as a
    ``(P * V**K, K) float64`` array and must return the same shape.
    """
    P, V = pi.shape
    groups = all_groups(V, K)                               # (N, K)
    N = groups.shape[0]
    group_rewards = rewards[:, groups]                      # (P, N, K)
    w = np.asarray(weight_fn(group_rewards.reshape(P * N, K)), dtype=np.float64).reshape(P, N, K)
    prob = pi[:, groups].prod(axis=2)                       # (P, N)
    S = score_matrix(pi, np.broadcast_to(np.arange(V), (P, V)))   # (P, V, V)
    # sum over groups and members: prob * w_j * S[y_j] / K
    coeff = np.zeros((P, V))
    for j in range(K):
        np.add.at(coeff, (np.arange(P)[:, None], groups[None, :, j]), prob * w[:, :, j])
    return np.einsum("xy,xyv->xv", coeff, S) / K


# ----------------------------------------------------------------------------- q1-q3, q5 answers
# Written from the section's formulas (not from the reference): the answers of the cases each
# student draws for themselves, which no recording can hold.
def centred_weight(r: np.ndarray) -> np.ndarray:
    """``(G, K)``: each reward minus its group's mean."""
    r = np.asarray(r, dtype=np.float64)
    return r - np.mean(r, axis=1, keepdims=True)


def group_standardised_weight(r: np.ndarray, std_eps: float = 1e-8) -> np.ndarray:
    """``(G, K)``: GRPO's (r - mean) / (population std + 1e-8) per group."""
    r = np.asarray(r, dtype=np.float64)
    centred = r - np.mean(r, axis=1, keepdims=True)
    return centred / (np.sqrt(np.mean(centred ** 2, axis=1, keepdims=True)) + std_eps)


def leave_one_out_weight(r: np.ndarray) -> np.ndarray:
    """``(G, K)``, K >= 2: each reward minus the mean of the other K - 1."""
    r = np.asarray(r, dtype=np.float64)
    K = r.shape[1]
    return (K * r - np.sum(r, axis=1, keepdims=True)) / (K - 1)


def clipped_surrogate_grad(theta: np.ndarray, ys: np.ndarray, adv: np.ndarray,
                           logp_old: np.ndarray, eps: float, slip: str = "") -> np.ndarray:
    """``(P, V)``: gradient of (1/K) sum_j min(rho_j A_j, clip(rho_j, 1-eps, 1+eps) A_j).
    A sample's term has the gradient rho_j A_j score_j unless clipping holds it
    (A >= 0 and rho > 1 + eps, or A < 0 and rho < 1 - eps). ``slip`` (one of
    the judge's ``SURROGATE_SLIPS``, for its diagnosis): the gradient of a
    half-right objective instead (``clip_slips``, or the loss averaged over
    all P x K responses)."""
    from rlkit.verifier import softmax_policy, weighted_score_gradient
    pi = softmax_policy(theta)
    rho = np.exp(np.log(np.take_along_axis(pi, ys, axis=1)) - logp_old)
    _, weight = clip_slips.surrogate(rho, adv, eps, "" if slip == "mean_over_batch" else slip)
    grad = weighted_score_gradient(pi, ys, weight)
    return grad / ys.shape[0] if slip == "mean_over_batch" else grad


# ----------------------------------------------------------------------------- q1-q3 diagnoses
# What a half-right weight function gives on rewards (G, K), for the judge's diagnosis: each
# slip changes one thing of the section's formula.
def _std(r: np.ndarray, axis, ddof: int = 0) -> np.ndarray:
    return np.std(r, axis=axis, ddof=ddof, keepdims=axis is not None)


def slipped_weight(fn: str, slip: str, r: np.ndarray) -> np.ndarray:
    """``(G, K)``: weight function ``fn`` with the slip ``slip`` (one of the
    judge's ``WEIGHT_SLIPS[fn]``) on rewards ``r`` (G, K); NaN where the slip divides by 0."""
    r = np.asarray(r, dtype=np.float64)
    K = r.shape[1]
    group_mean = np.mean(r, axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # ddof=1 at K = 1
        if slip == "k1_unit":              # a group of one: mean 0, std 1 (verl)
            if K > 1:
                return {"centred_weight": centred_weight,
                        "group_standardised_weight": group_standardised_weight}[fn](r)
            return r.copy() if fn == "centred_weight" else r / (1.0 + 1e-8)
        if slip == "k1_reward":            # a group of one: its reward as its weight
            return r.copy() if K == 1 else slipped_weight(fn, "k1_unit", r)
        if slip == "batch_mean" and fn == "centred_weight":
            return r - np.mean(r)
        if fn == "group_standardised_weight":
            # a knob's slip, or a combination of knobs' slips ("ddof1+eps_1e-4")
            turned = set(slip.split("+"))
            known = {"ddof1", "eps_1e-4", "eps_1e-6", "eps_0", "batch_std", "batch_mean",
                     "batch_both"}
            if turned <= known:
                mean = np.mean(r) if turned & {"batch_mean", "batch_both"} else group_mean
                axis = None if turned & {"batch_std", "batch_both"} else 1
                eps = next((float(t[4:]) for t in turned if t.startswith("eps_")), 1e-8)
                return (r - mean) / (_std(r, axis, ddof=1 if "ddof1" in turned else 0) + eps)
        if fn == "leave_one_out_weight":
            if slip == "batch_mean":
                return r - (np.sum(r) - r) / (r.size - 1)
            if slip == "others_over_k":
                return r - (np.sum(r, axis=1, keepdims=True) - r) / K
            if slip == "includes_itself":
                return r - group_mean
    raise ValueError(f"unknown slip {slip!r} of {fn}")



def policy_ratio(logp: np.ndarray, logp_old: np.ndarray) -> np.ndarray:
    """rho = pi / pi_old of the sampled responses, from their log-probabilities."""
    return np.exp(np.asarray(logp, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64))
