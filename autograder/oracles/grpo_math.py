"""Exact (enumerated) expectations on the verifier problem, for judging and
for reproducing the section. Instructor code: never shipped to students."""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from rlkit.verifier import score_matrix


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
