"""Capstone C: diagnose three faulty agents -- reference solution.

Five CartPole agents were trained for you; you get their raw training logs,
not their code, under letters of your own (``STUDENT_ID`` picks them). Three
have a fault -- a saturated policy, an untrained critic, an undersized replay
buffer -- and two are healthy (one PPO, one DQN). Implement the diagnostics
below, plot them per agent in the notebook, and name each letter's fault
with the numbers that show it.

Conventions: numpy, vectorised, float64 results. Every diagnostic reduces
over the LAST axis of its inputs (the actions of one distribution, or the
samples of one update or one batch) and keeps every leading axis, so the
same function gives one number for one batch and a curve for a log of
shape ``(U, S, ...)``.
"""
import numpy as np

STUDENT_ID = ""     # your Student ID on Gradescope (else your Gradescope email): your letters


# --------------------------------------------------------------------------
# PPO diagnostics
# --------------------------------------------------------------------------

def _log_softmax(logits):
    """log softmax over the last axis, with the row maximum subtracted first."""
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def entropy(logits):
    """Entropy of softmax(logits) in nats.

    Args:
        logits: ``(..., A) float64``.

    Returns:
        ``(...) float64``: ``-sum_a p_a log p_a`` (``ln A`` for equal logits,
        ``0`` for a one-hot policy; never NaN, also for logits like 1e4).
    """
    logp = _log_softmax(np.asarray(logits, dtype=np.float64))
    return -(np.exp(logp) * logp).sum(axis=-1)


def approx_kl(logits_old, logits_new, actions):
    """The sampled estimate of KL(pi_old || pi_new) that PPO logs.

    Args:
        logits_old: ``(..., S, A) float64``, the policy that collected the data.
        logits_new: ``(..., S, A) float64``, the policy after the update.
        actions: ``(..., S)`` ints, the actions taken (sampled from pi_old).

    Returns:
        ``(...) float64``: the mean over the S samples of
        ``(rho - 1) - log rho`` with ``rho = pi_new(a|s) / pi_old(a|s)``
        (non-negative sample by sample; its expectation under pi_old is
        KL(pi_old || pi_new)).
    """
    log_rho = _taken(_log_softmax(np.asarray(logits_new, dtype=np.float64)), actions) \
        - _taken(_log_softmax(np.asarray(logits_old, dtype=np.float64)), actions)
    return np.mean(np.expm1(log_rho) - log_rho, axis=-1)


def _taken(logp, actions):
    """``logp[..., s, actions[..., s]]``: ``(..., S)``."""
    return np.take_along_axis(logp, np.asarray(actions, dtype=np.int64)[..., None],
                              axis=-1)[..., 0]


def clip_fraction(logits_old, logits_new, actions, clip_eps):
    """The fraction of samples whose ratio left the clip band.

    Args:
        logits_old, logits_new: ``(..., S, A) float64``; actions ``(..., S)`` ints.
        clip_eps: float, the clip half-width epsilon.

    Returns:
        ``(...) float64``: the mean over S of ``|rho - 1| > clip_eps``
        (strictly: a ratio exactly on the band's edge is not clipped).
    """
    log_rho = _taken(_log_softmax(np.asarray(logits_new, dtype=np.float64)), actions) \
        - _taken(_log_softmax(np.asarray(logits_old, dtype=np.float64)), actions)
    return np.mean(np.abs(np.exp(log_rho) - 1.0) > clip_eps, axis=-1).astype(np.float64)


def explained_variance(values, targets):
    """How much of the targets' variance the critic explains.

    Args:
        values: ``(..., S) float64``, the critic's predictions V(s).
        targets: ``(..., S) float64``, what it regresses on (the GAE returns).

    Returns:
        ``(...) float64``: ``1 - Var(targets - values) / Var(targets)``
        (population variances over S): 1 for perfect predictions, 0 for a
        constant, negative for worse than a constant. Targets without
        variance have no defined answer (not asked).
    """
    values = np.asarray(values, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.float64)
    return 1.0 - np.var(targets - values, axis=-1) / np.var(targets, axis=-1)


def value_loss(values, targets):
    """The critic's loss: ``0.5 * mean((values - targets)^2)`` over the last axis.

    Args:
        values, targets: ``(..., S) float64``.

    Returns:
        ``(...) float64``.
    """
    diff = np.asarray(values, dtype=np.float64) - np.asarray(targets, dtype=np.float64)
    return 0.5 * np.mean(diff * diff, axis=-1)


# --------------------------------------------------------------------------
# DQN diagnostics
# --------------------------------------------------------------------------

def q_overestimation(q_pred, realised_returns):
    """How far Q's predictions lie above the returns that actually followed.

    Args:
        q_pred: ``(..., M) float64``, Q(s, a) of the actions taken.
        realised_returns: ``(..., M) float64``, the discounted returns
            realised from those steps to the episode's end.

    Returns:
        ``(...) float64``: ``mean(q_pred - realised_returns)`` (positive:
        Q overestimates).
    """
    return np.mean(np.asarray(q_pred, dtype=np.float64)
                   - np.asarray(realised_returns, dtype=np.float64), axis=-1)


def replay_sample_age(sample_step, inserted_step):
    """The mean age of a sampled batch's transitions, in environment steps.

    Args:
        sample_step: ``(...)`` ints, the step the batch was drawn at.
        inserted_step: ``(..., B)`` ints, the step each sampled transition
            entered the buffer.

    Returns:
        ``(...) float64``: ``mean(sample_step - inserted_step)`` over B.
    """
    age = np.asarray(sample_step, dtype=np.float64)[..., None] \
        - np.asarray(inserted_step, dtype=np.float64)
    return age.mean(axis=-1)


def batch_diversity(episode_ids):
    """The number of distinct episodes in each sampled batch.

    Args:
        episode_ids: ``(..., B)`` ints, the episode of each sampled transition.

    Returns:
        ``(...) float64``: how many different ids each batch holds (1 to B).
    """
    ids = np.sort(np.asarray(episode_ids), axis=-1)
    return 1.0 + np.count_nonzero(np.diff(ids, axis=-1), axis=-1).astype(np.float64)


# --------------------------------------------------------------------------
# Your diagnosis: one fault per letter, and the numbers that show it
# --------------------------------------------------------------------------
# Faults to choose from: "healthy", "saturated_policy", "untrained_critic",
# "undersized_buffer", "learning_rate_too_high".
# Evidence: the summary statistics the notebook prints for that letter
# ("name = value" pairs, as printed).
# BEGIN ANSWERS (the reference's, for STUDENT_ID = ''; written by `make c-logs`)
FAULT_A = 'saturated_policy'
EVIDENCE_A = 'early_entropy = 0.0099594, early_explained_variance = 0.91991, late_value_loss = 0.0286347, early_approx_kl = 0.0157301, early_clip_fraction = 0.0136719'
FAULT_B = 'untrained_critic'
EVIDENCE_B = 'early_entropy = 0.599269, early_explained_variance = -0.00303275, late_value_loss = 121.055, early_approx_kl = 0.00586209, early_clip_fraction = 0.0601563'
FAULT_C = 'healthy'
EVIDENCE_C = 'early_entropy = 0.612446, early_explained_variance = 0.459211, late_value_loss = 1.67736e-05, early_approx_kl = 0.00790914, early_clip_fraction = 0.110547'
FAULT_D = 'healthy'
EVIDENCE_D = 'batch_diversity = 38.7966, sample_age = 4298.06, max_q = 45.9081, q_overestimation = -28.3707'
FAULT_E = 'undersized_buffer'
EVIDENCE_E = 'batch_diversity = 1.33966, sample_age = 15.5797, max_q = 50.2805, q_overestimation = -30.9264'
# END ANSWERS
