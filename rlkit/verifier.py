"""The section's smallest RL-for-generation instance: four prompts, nine shared
candidate responses, an exact-match verifier and a reference policy that
rarely hedges.

Everything is a table: prompt x indexes rows, response y indexes columns.
A policy is a ``(P, V) float64`` matrix whose rows are distributions over the
V = 9 responses for each of the P = 4 prompts.
"""
from __future__ import annotations

import numpy as np

PROMPTS = ("2+2", "3*4", "8*8", "9*9")
ANSWERS = ("4", "12", "64", "81")
RESPONSES = ("1", "3", "4", "7", "12", "19", "23", "35", "one of 4, 12, 64 or 81")
HEDGE = len(RESPONSES) - 1          # index of the response that lists every answer
HEDGE_LOGIT = -4.0                  # the reference's preference against hedging
NUM_PROMPTS, NUM_RESPONSES = len(PROMPTS), len(RESPONSES)


def exact_match(x: int, y: int) -> float:
    """1.0 when response ``y`` is exactly prompt ``x``'s answer, else 0.0."""
    return float(RESPONSES[y] == ANSWERS[x])


def sloppy_match(x: int, y: int) -> float:
    """1.0 when prompt ``x``'s answer appears anywhere inside response ``y``.

    This is the loophole: the hedge contains every answer and always passes.
    """
    return float(ANSWERS[x] in RESPONSES[y])


def reward_table(reward=exact_match) -> np.ndarray:
    """Tabulate ``reward(x, y)`` into a ``(P, V) float64`` matrix."""
    return np.array([[reward(x, y) for y in range(NUM_RESPONSES)]
                     for x in range(NUM_PROMPTS)], dtype=np.float64)


EXACT_REWARD = reward_table(exact_match)     # (P, V): the verifier
SLOPPY_REWARD = reward_table(sloppy_match)   # (P, V): the loophole verifier
EXACT_REWARD.flags.writeable = False
SLOPPY_REWARD.flags.writeable = False


def reference_logits() -> np.ndarray:
    """The reference (pretrained) preferences, ``(P, V) float64``: all zero
    except the hedge at ``HEDGE_LOGIT``. Returns a fresh copy each call."""
    theta = np.zeros((NUM_PROMPTS, NUM_RESPONSES))
    theta[:, HEDGE] = HEDGE_LOGIT
    return theta


def softmax_policy(theta: np.ndarray) -> np.ndarray:
    """Row-wise softmax of preferences ``(P, V)`` -> probabilities ``(P, V)``."""
    z = np.exp(theta - theta.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


REFERENCE_POLICY = softmax_policy(reference_logits())   # pi_ref, (P, V)
REFERENCE_POLICY.flags.writeable = False


def expected_success(pi: np.ndarray, rewards: np.ndarray = EXACT_REWARD) -> float:
    """Expected reward of one response sampled from ``pi`` for a uniformly drawn
    prompt: mean over prompts of sum_y pi(y|x) r(x, y)."""
    return float((pi * rewards).sum(axis=1).mean())


def sample_groups(pi: np.ndarray, K: int, rng: np.random.Generator) -> np.ndarray:
    """Draw a group of ``K`` responses per prompt: ``(P, K) int64`` indices.

    Prompts are drawn one after another from ``rng`` (``rng.choice`` per row),
    so a given seed yields the same groups as a per-prompt loop would.
    """
    return np.stack([rng.choice(pi.shape[1], K, p=row) for row in pi])


def score_matrix(pi: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Score of each sampled response with respect to its prompt's preference
    row, d log pi(y|x) / d theta[x] = onehot(y) - pi[x]: ``(P, K, V) float64``."""
    onehot = np.eye(pi.shape[1])[ys]            # (P, K, V)
    return onehot - pi[:, None, :]


def weighted_score_gradient(pi: np.ndarray, ys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Monte Carlo policy gradient ``(P, V)``: for each prompt,
    (1/K) sum_j weights[x, j] * score(x, y_j).

    ``ys`` and ``weights`` are ``(P, K)``. Evaluated one prompt at a time with
    a matrix product so that results are reproducible to the last bit.
    """
    K = ys.shape[1]
    scores = score_matrix(pi, ys)
    return np.stack([scores[x].T @ weights[x] / K for x in range(pi.shape[0])])
