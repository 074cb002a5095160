"""Capstone D: GRPO from REINFORCE.

REINFORCE on the section's verifier problem is given complete in
``rlkit.reinforce.train``: it samples a group of K responses for each of
the four prompts, scores them, asks a *weight function* for one weight per
response, and steps the preference table along the weighted score.
You write the pieces that turn it into GRPO:

(a) ``centred_weight``            r_j - mean(group)
(b) ``group_standardised_weight`` (r_j - mean) / (std + 1e-8)      <- line 1
(c) ``leave_one_out_weight``      r_j - mean(other K - 1 rewards)
(d) ``policy_ratio`` and ``clipped_surrogate_grad``                 <- line 2

Every weight function takes rewards ``r`` of shape ``(G, K)`` float64, one
group of K responses per row, and returns weights of the same shape,
computed row by row. Use numpy, no Python loops over samples.

The grader checks that your functions leave their input arrays unchanged (work
on a copy: ``x = x - m``, not ``x -= m`` on an argument).
"""
import numpy as np

from rlkit.verifier import softmax_policy, weighted_score_gradient  # noqa: F401 - you will need them

STD_EPS = 1e-8   # added to the group's standard deviation before dividing


def centred_weight(r):
    """Subtract each group's mean reward: ``(G, K) -> (G, K)``.

    A group whose rewards are all equal gets all-zero weights; so does a
    group of one (K = 1).
    """
    raise NotImplementedError("(a) centred_weight: subtract the mean of each row")


def group_standardised_weight(r):
    """GRPO's weight A_j = (r_j - mean) / (std + STD_EPS), per row:
    ``(G, K) -> (G, K)``.

    Use the population standard deviation (divide by K, numpy's default
    ``ddof=0``). With all-equal rewards the numerator is zero and STD_EPS
    keeps the division finite, so the weights are exactly zero.
    """
    raise NotImplementedError("(b) group_standardised_weight: centre, then divide by std + STD_EPS")


def leave_one_out_weight(r):
    """RLOO's weight: r_j minus the mean of the *other* K - 1 rewards of its
    row, ``(G, K) -> (G, K)``.

    For K = 1 there are no other rewards to average: raise ``ValueError``
    with a message saying so.
    """
    raise NotImplementedError("(c) leave_one_out_weight: compare each reward with the others' mean")


def policy_ratio(logp, logp_old):
    """Importance ratio pi_theta(y|x) / pi_old(y|x) from log-probabilities of
    the same sampled responses, any shape -> same shape."""
    raise NotImplementedError("(d) policy_ratio")


def clipped_surrogate_grad(theta, ys, weights, logp_old, eps):
    """Gradient with respect to ``theta`` of the clipped objective

        L(theta) = (1/K) sum_j min(rho_j A_j, clip(rho_j, 1 - eps, 1 + eps) A_j)

    for every prompt (row), where rho_j = pi_theta(y_j|x) / pi_old(y_j|x).

    Args:
        theta: ``(P, V)`` current preference table (the policy is its
            row-wise softmax, ``softmax_policy(theta)``).
        ys: ``(P, K)`` int, the sampled responses of each prompt's group.
        weights: ``(P, K)`` the advantages A_j of those responses.
        logp_old: ``(P, K)`` log-probabilities of ``ys`` under the policy
            that *sampled* them (not the frozen reference).
        eps: the clip half-width.

    Returns:
        ``(P, V)`` float64 ascent direction. Where the clipped term is the
        smaller one, the sample contributes no gradient. At theta = theta_old
        every ratio is 1 and this is the plain weighted score gradient
        ``weighted_score_gradient(pi, ys, weights)``.
    """
    raise NotImplementedError("(d) clipped_surrogate_grad")
