"""Capstone B's pieces as the judge calls them (capstone A's, re-exported by
the submission's ``ablations.py``, plus B's new ones): each answer checked
for type, shape and finiteness before any loop uses it. Used by the judge
and by the judge's own loop (``autograder.oracles.ablation_loop``)."""
from __future__ import annotations

import numpy as np

from ..grading.judging import Fail, as_float_array
from .ppo_pieces import Pieces


class AblationPieces(Pieces):

    def obs_stats(self, mean: np.ndarray, var: np.ndarray, count: float,
                  obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        out = self.call("update_obs_stats", mean, var, count, obs)
        if not isinstance(out, list) or len(out) != 3:
            raise Fail("update_obs_stats() must return (mean, var, count); got "
                       f"{type(out).__name__}", "shape")
        new_count = as_float_array("update_obs_stats() count", out[2], ())
        return (as_float_array("update_obs_stats() mean", out[0], mean.shape),
                as_float_array("update_obs_stats() var", out[1], var.shape), float(new_count))

    def normalise_obs(self, obs: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
        return as_float_array("normalise_obs()", self.call("normalise_obs", obs, mean, var),
                              obs.shape)

    def shared_gradients(self, policy_grads: list, value_grads: list, num_shared: int) -> list:
        """The merged gradients, checked against the shapes of the distinct layers."""
        like = policy_grads + value_grads[-1:]
        out = self.call("shared_gradients", policy_grads, value_grads, num_shared)
        if not isinstance(out, list) or len(out) != len(like) or not all(
                isinstance(g, dict) and {"W", "b"} <= set(g) for g in out):
            raise Fail(f"shared_gradients() must return a list of {len(like)} {{'W', 'b'}} "
                       f"dicts (trunk, policy head, value head); got {type(out).__name__}"
                       + (f" of length {len(out)}" if isinstance(out, list) else ""), "shape")
        return [{k: as_float_array(f"shared_gradients()[{i}]['{k}']", g[k], np.shape(l[k]))
                 for k in ("W", "b")} for i, (g, l) in enumerate(zip(out, like))]

    def clipped_value_loss(self, values, values_old, returns, clip_eps):
        return self._loss("clipped_value_loss", values.shape, values, values_old, returns,
                          clip_eps)
