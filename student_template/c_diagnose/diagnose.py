"""Capstone C: diagnose three faulty agents -- your submission (upload diagnose.py).

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

def entropy(logits):
    """Entropy of softmax(logits) in nats.

    Args:
        logits: ``(..., A) float64``.

    Returns:
        ``(...) float64``: ``-sum_a p_a log p_a`` (``ln A`` for equal logits,
        ``0`` for a one-hot policy; never NaN, also for logits like 1e4).
    """
    raise NotImplementedError("entropy")


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
    raise NotImplementedError("approx_kl")


def clip_fraction(logits_old, logits_new, actions, clip_eps):
    """The fraction of samples whose ratio left the clip band.

    Args:
        logits_old, logits_new: ``(..., S, A) float64``; actions ``(..., S)`` ints.
        clip_eps: float, the clip half-width epsilon.

    Returns:
        ``(...) float64``: the mean over S of ``|rho - 1| > clip_eps``
        (strictly: a ratio exactly on the band's edge is not clipped).
    """
    raise NotImplementedError("clip_fraction")


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
    raise NotImplementedError("explained_variance")


def value_loss(values, targets):
    """The critic's loss: ``0.5 * mean((values - targets)^2)`` over the last axis.

    Args:
        values, targets: ``(..., S) float64``.

    Returns:
        ``(...) float64``.
    """
    raise NotImplementedError("value_loss")


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
    raise NotImplementedError("q_overestimation")


def replay_sample_age(sample_step, inserted_step):
    """The mean age of a sampled batch's transitions, in environment steps.

    Args:
        sample_step: ``(...)`` ints, the step the batch was drawn at.
        inserted_step: ``(..., B)`` ints, the step each sampled transition
            entered the buffer.

    Returns:
        ``(...) float64``: ``mean(sample_step - inserted_step)`` over B.
    """
    raise NotImplementedError("replay_sample_age")


def batch_diversity(episode_ids):
    """The number of distinct episodes in each sampled batch.

    Args:
        episode_ids: ``(..., B)`` ints, the episode of each sampled transition.

    Returns:
        ``(...) float64``: how many different ids each batch holds (1 to B).
    """
    raise NotImplementedError("batch_diversity")


# --------------------------------------------------------------------------
# Your diagnosis: one fault per letter, and the numbers that show it
# --------------------------------------------------------------------------
# Faults to choose from: "healthy", "saturated_policy", "untrained_critic",
# "undersized_buffer", "learning_rate_too_high".
# Evidence: the summary statistics the notebook prints for that letter
# ("name = value" pairs, as printed).
# Your answers (the notebook prints the evidence lines; copy them here).
FAULT_A = ""
EVIDENCE_A = ""
FAULT_B = ""
EVIDENCE_B = ""
FAULT_C = ""
EVIDENCE_C = ""
FAULT_D = ""
EVIDENCE_D = ""
FAULT_E = ""
EVIDENCE_E = ""
