"""Capstone D: GRPO from REINFORCE -- reference solution.

Every weight function maps rewards ``r`` of shape ``(..., K)`` (a group of K
scored responses along the last axis, any number of leading axes) to one
weight per response, same shape, float64.
"""
import numpy as np

from rlkit.verifier import softmax_policy, weighted_score_gradient

STD_EPS = 1e-8   # added to the group standard deviation before dividing


def centred_weight(r):
    """r_j minus the mean of its own group (the group-mean baseline)."""
    r = np.asarray(r, dtype=np.float64)
    return r - r.mean(axis=-1, keepdims=True)


def group_standardised_weight(r):
    """GRPO's weight (r_j - mean) / (std + 1e-8), population std (ddof=0)."""
    r = np.asarray(r, dtype=np.float64)
    return (r - r.mean(axis=-1, keepdims=True)) / (r.std(axis=-1, keepdims=True) + STD_EPS)


def leave_one_out_weight(r):
    """r_j minus the mean of the other K-1 rewards of its group (RLOO)."""
    r = np.asarray(r, dtype=np.float64)
    K = r.shape[-1]
    if K < 2:
        raise ValueError(f"leave-one-out needs K >= 2 responses per group, got K = {K}: "
                         "with one response there are no others to average")
    others = (r.sum(axis=-1, keepdims=True) - r) / (K - 1)
    return r - others


def policy_ratio(logp, logp_old):
    """Importance ratio pi_theta(y|x) / pi_old(y|x) from log-probabilities."""
    return np.exp(np.asarray(logp, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64))


def clipped_surrogate_grad(theta, ys, weights, logp_old, eps):
    """Gradient ``(P, V)`` with respect to ``theta`` of the clipped objective
    (1/K) sum_j min(rho_j A_j, clip(rho_j, 1 - eps, 1 + eps) A_j) per prompt.

    ``theta`` (P, V) preferences; ``ys`` (P, K) sampled responses; ``weights``
    (P, K) the advantages A; ``logp_old`` (P, K) log-probabilities of ``ys``
    under the policy that sampled them.
    """
    pi = softmax_policy(theta)
    rows = np.arange(ys.shape[0])[:, None]
    rho = policy_ratio(np.log(pi[rows, ys]), logp_old)
    # A sample's gradient survives only while its ratio term is the smaller one.
    active = np.where(weights >= 0, rho <= 1 + eps, rho >= 1 - eps)
    return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0))
