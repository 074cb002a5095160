"""Capstone C's oracle (Gradescope side only): the diagnostics written
independently of the reference, and each shipped log's summary statistics
(the evidence a student must quote)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Mapping

import numpy as np

from ..judges import c_diagnose as judge


def _log_probs(z: np.ndarray) -> np.ndarray:
    m = np.max(z, axis=-1, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True))


def _chosen(z: np.ndarray, a: np.ndarray) -> np.ndarray:
    onehot = np.arange(z.shape[-1]) == np.asarray(a)[..., None]
    return np.where(onehot, _log_probs(z), 0.0).sum(axis=-1)


DIAGNOSTICS = SimpleNamespace(
    entropy=lambda z: -np.einsum("...a,...a->...", np.exp(_log_probs(z)), _log_probs(z)),
    explained_variance=lambda v, y: 1.0 - (((y - v) - (y - v).mean(-1, keepdims=True)) ** 2
                                           ).mean(-1) / ((y - y.mean(-1, keepdims=True)) ** 2
                                                         ).mean(-1),
    value_loss=lambda v, y: ((v - y) ** 2).mean(-1) / 2.0,
    approx_kl=lambda old, new, a: (np.exp(_chosen(new, a) - _chosen(old, a)) - 1.0
                                   - (_chosen(new, a) - _chosen(old, a))).mean(-1),
    clip_fraction=lambda old, new, a, eps: (np.abs(np.exp(_chosen(new, a) - _chosen(old, a))
                                                   - 1.0) > eps).mean(-1),
    batch_diversity=lambda ids: np.array([[len(np.unique(row)) for row in rows] for rows in
                                          np.asarray(ids).reshape(-1, 1, ids.shape[-1])],
                                         dtype=np.float64).reshape(ids.shape[:-1]),
    replay_sample_age=lambda step, ins: (np.asarray(step)[..., None] - ins).mean(-1),
    q_overestimation=lambda q, g: np.mean(q) - np.mean(g) if np.ndim(q) == 1
    else (q - g).mean(-1),
)

# By name, for the cases the judge draws per student (oracle=("c_diagnose.<fn>", ...)).
entropy = DIAGNOSTICS.entropy
explained_variance = DIAGNOSTICS.explained_variance
value_loss = DIAGNOSTICS.value_loss
approx_kl = DIAGNOSTICS.approx_kl
clip_fraction = DIAGNOSTICS.clip_fraction
batch_diversity = DIAGNOSTICS.batch_diversity
replay_sample_age = DIAGNOSTICS.replay_sample_age
q_overestimation = DIAGNOSTICS.q_overestimation


def summary_of_run(run: int, params: Mapping[str, Any]) -> np.ndarray:
    """Run ``run``'s summary statistics, in the order of ``PPO_STATS`` or ``DQN_STATS``."""
    log = judge.load_run(run, params)
    stats = judge.summary(log, DIAGNOSTICS, params)
    names = judge.PPO_STATS if judge.family(log) == "ppo" else judge.DQN_STATS
    return np.array([stats[n] for n in names], dtype=np.float64)


def summary_of_log(log: Mapping[str, np.ndarray], params: Mapping[str, Any]) -> np.ndarray:
    """The summary statistics of ``log`` (a hidden log as a submission meets it)."""
    stats = judge.summary(log, DIAGNOSTICS, params)
    names = judge.PPO_STATS if judge.family(log) == "ppo" else judge.DQN_STATS
    return np.array([stats[n] for n in names], dtype=np.float64)
