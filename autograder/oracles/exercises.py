"""Exercises' oracles (Gradescope side only): finite-difference Jacobians of
the tiny autoregressive model, the tilted optimum and the exploit threshold."""
from __future__ import annotations

from typing import Callable

import numpy as np

from rlkit import autoregressive as ar
from rlkit.verifier import NUM_RESPONSES


def fd_jacobian(f: Callable[[np.ndarray], np.ndarray], theta: np.ndarray,
                 h: float) -> np.ndarray:
    """Fourth-order central differences of ``f``, which maps a stack of parameter
    vectors ``(S, D)`` to ``(S, ...)``: the Jacobian at ``theta``, ``(..., D)``.
    Error about h**4 / 30 times the fifth derivative plus 1e-16 |f| / h: near 1e-12 here."""
    D = theta.size
    steps = np.array([2.0, 1.0, -1.0, -2.0])
    thetas = theta[None, None, :] + h * steps[:, None, None] * np.eye(D)[None, :, :]  # (4, D, D)
    vals = f(thetas.reshape(4 * D, D))
    vals = vals.reshape((4, D) + vals.shape[1:])
    jac = (-vals[0] + 8 * vals[1] - 8 * vals[2] + vals[3]) / (12 * h)      # (D, ...)
    return np.moveaxis(jac, 0, -1)


def fd_token_log_probs(theta: np.ndarray, x: np.ndarray, y: np.ndarray, h: float) -> np.ndarray:
    """``(B, T, D)``: d log pi(y_t | x, y_<t) / d theta by finite differences."""
    return fd_jacobian(lambda th: ar.token_log_probs(th, x, y), theta, h)


def fd_log_prob(theta: np.ndarray, x: np.ndarray, y: np.ndarray, h: float) -> np.ndarray:
    """``(B, D)``: d log pi(y | x) / d theta by finite differences."""
    return fd_jacobian(lambda th: ar.log_prob(th, x, y), theta, h)


def log_tilted(ref_logits: np.ndarray, rewards: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """log pi*, pi* proportional to softmax(ref_logits) * exp(rewards / beta) along the
    last axis; ``beta`` broadcasts against the leading axes."""
    tilted = ref_logits + rewards / np.asarray(beta)[..., None]
    peak = tilted.max(axis=-1, keepdims=True)
    return tilted - peak - np.log(np.sum(np.exp(tilted - peak), axis=-1, keepdims=True))


def tilted(ref_logits: np.ndarray, rewards: np.ndarray, beta: np.ndarray) -> np.ndarray:
    return np.exp(log_tilted(ref_logits, rewards, beta))


def threshold_by_bisection(d: np.ndarray, r_h: np.ndarray) -> np.ndarray:
    """The beta at which the hedge's log-odds against an ordinary candidate
    under the tilted optimum reach zero, found by bisection (in log beta) on
    one prompt row: 8 ordinary candidates at reference logit 0 and reward 0,
    the hedge at reference logit -d and reward r_h. Log-odds decrease with beta."""
    n_ordinary = NUM_RESPONSES - 1
    ref = np.concatenate([np.zeros((d.size, n_ordinary)), -d[:, None]], axis=1)
    rew = np.concatenate([np.zeros((d.size, n_ordinary)), r_h[:, None]], axis=1)
    lo, hi = np.log(np.full(d.shape, 1e-6)), np.log(np.full(d.shape, 1e6))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        log_pi = log_tilted(ref, rew, np.exp(mid))
        above = log_pi[:, -1] - log_pi[:, 0] > 0          # hedge still ahead: beta too small
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.exp(0.5 * (lo + hi))
