"""Capstone B's pieces as the judge calls them (capstone A's, re-exported by
the submission's ``ablations.py``, plus B's new ones): every answer through
the gate before any loop uses it. Used by the judge and by the judge's own
loop (``autograder.oracles.ablation_loop``)."""
from __future__ import annotations

import numpy as np

from ..grading.gate import Floats, Network, Number, Seq
from .ppo_pieces import Pieces


class AblationPieces(Pieces):
    """Capstone A's pieces (:class:`Pieces`) and B's: a piece whose answer
    fails the gate (or raises) fails the current case naming its function."""

    def obs_stats(self, mean: np.ndarray, var: np.ndarray, count: float,
                  obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``update_obs_stats``: running mean (D,), variance (D,) and count
        merged with a batch ``obs`` (B, D)."""
        m, v, c = self.ctx.ask("update_obs_stats", mean, var, count, obs,
                               answer=Seq(Floats(mean.shape), Floats(var.shape), Number()))
        return m, v, c

    def normalise_obs(self, obs: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
        """``normalise_obs``: observations (..., D) standardised by (D,) statistics."""
        return self.ctx.ask("normalise_obs", obs, mean, var, answer=Floats(obs.shape))

    def shared_gradients(self, policy_grads: list, value_grads: list, num_shared: int) -> list:
        """``shared_gradients``: the two halves' per-layer ``{"W", "b"}``
        gradients merged into the shared network's (trunk layers, policy head,
        value head), shaped as those layers."""
        like = policy_grads + value_grads[-1:]
        return self.ctx.ask("shared_gradients", policy_grads, value_grads, num_shared,
                            answer=Network(tuple({k: np.shape(g[k]) for k in ("W", "b")}
                                                 for g in like)))

    def clipped_value_loss(self, values, values_old, returns, clip_eps):
        """Capstone A's ``clipped_value_loss``: (loss, gradient (B,)) of values (B,)."""
        return self._loss("clipped_value_loss", values.shape, values, values_old, returns,
                          clip_eps)
