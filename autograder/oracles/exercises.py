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


# ----------------------------------------------------------------------------- diagnoses
# What a half-right answer of exercises 3 and 4 gives, for the judge's diagnosis (computed
# only when a case fails): each slip changes one thing of the formula.
def factor(K: np.ndarray) -> np.ndarray:
    """Exercise 3's factor: E[update with the centred weight] / gradient = (K - 1) / K."""
    K = np.asarray(K, dtype=np.float64)
    return (K - 1.0) / K


def slipped_factor(slip: str, K: np.ndarray) -> np.ndarray:
    """The factor with one slip ("one_over_k", "inverted", "integer_division"); the judge
    compares it on ``K`` >= 2 only (the inverse is infinite at K = 1)."""
    K = np.asarray(K, dtype=np.float64)
    if slip == "one_over_k":
        return 1.0 / K
    if slip == "inverted":
        with np.errstate(divide="ignore"):
            return K / (K - 1.0)
    if slip == "integer_division":
        return np.floor((K - 1.0) / K)
    raise ValueError(f"unknown slip {slip!r}")


def slipped_tilted(slip: str, ref_logits: np.ndarray, rewards: np.ndarray,
                   beta: np.ndarray) -> np.ndarray:
    """The tilted policy with one slip: the reward's sign flipped ("sign"), beta
    multiplying ("times_beta"), the reference left out ("no_reference"), or
    pi_ref * exp(r / beta) not normalised again ("unnormalised")."""
    beta = np.asarray(beta)
    if slip == "sign":
        return tilted(ref_logits, -rewards, beta)
    if slip == "times_beta":
        return tilted(ref_logits, rewards, 1.0 / beta)
    if slip == "no_reference":
        return tilted(np.zeros_like(ref_logits), rewards, beta)
    if slip == "unnormalised":
        return tilted(ref_logits, np.zeros_like(rewards), beta) * np.exp(
            rewards / beta[..., None])
    raise ValueError(f"unknown slip {slip!r}")


threshold = threshold_by_bisection      # the right answer beside its slips


def slipped_threshold(slip: str, d: np.ndarray, r_h: np.ndarray) -> np.ndarray:
    """The exploit threshold with one slip of the criterion or the algebra: the
    hedge at half of the mass among the 8 ordinary candidates and itself
    ("half_mass"), d / r_h ("inverted"), d read as a probability ratio
    ("probability_gap")."""
    d, r_h = np.asarray(d, dtype=np.float64), np.asarray(r_h, dtype=np.float64)
    if slip == "half_mass":
        return r_h / (d + np.log(NUM_RESPONSES - 1.0))
    if slip == "inverted":
        return d / r_h
    if slip == "probability_gap":
        return r_h / np.expm1(d)
    raise ValueError(f"unknown slip {slip!r}")


def slipped_fd_token_log_probs(slip: str, theta: np.ndarray, x: np.ndarray, y: np.ndarray,
                               h: float) -> np.ndarray:
    """Token scores ``(B, T, D)`` with one slip: the sign flipped ("sign")."""
    if slip == "sign":
        return -fd_token_log_probs(theta, x, y, h)
    raise ValueError(f"unknown slip {slip!r}")


def slipped_fd_log_prob(slip: str, theta: np.ndarray, x: np.ndarray, y: np.ndarray,
                        h: float) -> np.ndarray:
    """The response score ``(B, D)`` with one slip: the sign flipped ("sign"), the
    gradient of pi(y | x) instead of its log ("of_probability"), the last token's
    score alone ("last_token")."""
    if slip == "sign":
        return -fd_log_prob(theta, x, y, h)
    if slip == "of_probability":
        return np.exp(ar.log_prob(theta, x, y))[:, None] * fd_log_prob(theta, x, y, h)
    if slip == "last_token":
        return fd_token_log_probs(theta, x, y, h)[:, -1, :]
    raise ValueError(f"unknown slip {slip!r}")
