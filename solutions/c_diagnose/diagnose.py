"""Capstone C: diagnose three faulty agents -- reference solution.

Five CartPole agents were trained for you; you get their raw training logs,
not their code, under letters of your own (``STUDENT_ID`` picks them). Three
have a fault -- a saturated policy, an untrained critic, an undersized replay
buffer -- and two are healthy (one PPO, one DQN). Implement the diagnostics
below, plot them per agent in the notebook, and write ``diagnose(log)``: a
rule of your own that names a log's fault with the numbers that show it.
Gradescope calls it on your letters' logs and on logs you never see, a draw
of your own from a larger pool (other
seeds, other severities of each fault, healthy agents whose returns look
faulty: "healthy" means no fault shows in the diagnostics, not that CartPole is
solved), each a sample of its run drawn anew at each submission (most of its
states or batches, a drawn number of its episodes, as few as 3), so
a rule must read the diagnostics, not recognise the five logs. One of the
faults in ``FAULTS`` is in no log: a careless reading of one statistic
suggests it. ``MECHANISM``: one sentence per fault on why its statistic shows
it (graded by hand).

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

    The checks want 0 to 1e-14 absolute at a one-hot policy. Take ``log p``
    from a log-softmax (logits minus their maximum, minus the log of the sum of
    exp): it needs no guard. A guard inside the log, ``log(p + eps)``, shifts
    the entropy by about ``eps`` and fails there for ``eps >= 1e-14``; if you
    guard, use ``np.log(np.maximum(p, tiny))`` (exact wherever ``p >= tiny``).
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
# Summary statistics (given): window means of your diagnostics' curves
# --------------------------------------------------------------------------
EARLY = (1, 11)     # PPO updates 1..10 (update 0's critic was never trained: EV ~0 for all)
LATE = (50, 60)     # PPO updates 50..59
CLIP_EPS = 0.2      # the clip half-width of the logged PPO runs


def summary(log):
    """A log's summary statistics, computed with YOUR diagnostics above.

    Args:
        log: ``{name: array}`` as in ``logs/run_<i>.npz`` (floats float64, ints int64).

    Returns:
        ``{statistic: float}``. A PPO log (it has ``logits_before``):
        ``early_entropy``, ``early_explained_variance``, ``early_approx_kl``,
        ``early_clip_fraction`` (means over the EARLY updates), ``late_value_loss``
        (over the LATE ones). A DQN log: ``batch_diversity``, ``sample_age``
        (means over the logged batches), ``max_q`` and ``q_overestimation``.
    """
    if "logits_before" in log:
        (e0, e1), (l0, l1) = EARLY, LATE
        lb, la, act = log["logits_before"][e0:e1], log["logits_after"][e0:e1], \
            log["actions"][e0:e1]
        return {
            "early_entropy": float(np.mean(entropy(lb))),
            "early_explained_variance": float(np.mean(explained_variance(
                log["values"][e0:e1], log["value_targets"][e0:e1]))),
            "late_value_loss": float(np.mean(value_loss(log["values"][l0:l1],
                                                        log["value_targets"][l0:l1]))),
            "early_approx_kl": float(np.mean(approx_kl(lb, la, act))),
            "early_clip_fraction": float(np.mean(clip_fraction(lb, la, act, CLIP_EPS))),
        }
    return {
        "batch_diversity": float(np.mean(batch_diversity(log["batch_episode"]))),
        "sample_age": float(np.mean(replay_sample_age(log["batch_step"],
                                                      log["batch_inserted"]))),
        "max_q": float(np.max(log["q_pred"])),
        "q_overestimation": float(q_overestimation(log["q_pred"], log["q_return"])),
    }


# --------------------------------------------------------------------------
# Your diagnosis: a rule of your own, graded on your letters' logs (and, on
# Gradescope, on further logs you have not seen)
# --------------------------------------------------------------------------
FAULTS = ("healthy", "saturated_policy", "untrained_critic", "undersized_buffer",
          "learning_rate_too_high")

# The reference's thresholds: healthy CartPole PPO keeps an entropy near ln 2 = 0.69 early on
# and fits its critic to a loss near 0; a buffer of thousands of slots samples dozens of
# episodes per batch, thousands of steps old. Each threshold sits between the faulty and the
# healthy logs with a margin of 2x or more on every log, public and hidden
# (bench/c_diagnose_pool.py measures it). The untrained critic's explained variance is cited
# but not used: a healthy agent with small batches starts near 0.2 too.
THRESHOLDS = {"early_entropy": 0.3, "early_explained_variance": 0.2, "late_value_loss": 10.0,
              "early_approx_kl": 0.02, "early_clip_fraction": 0.2, "batch_diversity": 6.0,
              "sample_age": 300.0}
CITE = {"saturated_policy": ("early_entropy",),
        "untrained_critic": ("early_explained_variance", "late_value_loss"),
        "learning_rate_too_high": ("early_approx_kl", "early_clip_fraction"),
        "undersized_buffer": ("batch_diversity", "sample_age")}


def diagnose(log):
    """One agent's fault, from its log's diagnostics only.

    Args:
        log: ``{name: array}``, one training log (PPO or DQN), as ``summary`` takes it.

    Returns:
        ``(fault, evidence)``: ``fault`` one of ``FAULTS``; ``evidence`` a dict
        ``{statistic: value}`` of the summary statistics that name it (the
        values ``summary(log)`` gives; for "healthy", every statistic of the
        family's faults, each on the healthy side).
    """
    stats = summary(log)
    th = THRESHOLDS
    if "logits_before" in log:
        if stats["early_entropy"] < th["early_entropy"]:
            fault = "saturated_policy"
        elif stats["late_value_loss"] > th["late_value_loss"]:
            fault = "untrained_critic"
        elif stats["early_approx_kl"] > th["early_approx_kl"] \
                and stats["early_clip_fraction"] > th["early_clip_fraction"]:
            fault = "learning_rate_too_high"
        else:
            fault = "healthy"
    elif stats["batch_diversity"] < th["batch_diversity"] and \
            stats["sample_age"] < th["sample_age"]:
        fault = "undersized_buffer"
    else:
        fault = "healthy"
    if fault == "healthy":
        cited = [k for k in stats if k in th]
    else:
        cited = CITE[fault]
    return fault, {k: stats[k] for k in cited}


# One sentence per fault: why the statistic you use shows it (graded by hand).
MECHANISM = """
saturated_policy: a near one-hot softmax puts almost all probability on one action, so the
entropy (the expected surprise of the action) is near 0 from the first update and the agent
hardly explores; its approx KL is large only because the update multiplies the tiny
probability of the rare actions it does take, while the clip fraction stays moderate.
untrained_critic: V(s) is never fitted to the returns, so it explains none of their variance
(explained variance near 0) and its squared error stays as large as the returns' spread.
undersized_buffer: a buffer of a few dozen slots holds only the last steps of one or two
episodes, so each batch holds 1-2 distinct episodes of transitions a few steps old: correlated
samples instead of the roughly independent draws the Q regression assumes.
learning_rate_too_high: no log shows it: a too-large step would raise the KL and the clip
fraction together while the entropy stays high, and no log does both.
"""
