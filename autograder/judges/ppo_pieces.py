"""Capstone A's pieces as the judge calls them: each answer checked for type,
shape and finiteness before any loop uses it. Used by the judge and by the
judge's own PPO loop (``autograder.oracles.ppo_loop``)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..grading.judging import Fail, as_float_array


class Pieces:
    """The submission's PPO pieces behind ``call(fn, *args)``, with every
    answer checked for type, shape and finiteness before the loop uses it."""

    def __init__(self, call: Callable[..., Any]):
        self.call = call

    def log_prob(self, logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return as_float_array(f"categorical_log_prob() on logits {logits.shape}",
                              self.call("categorical_log_prob", logits, actions),
                              actions.shape)

    def gae(self, rewards, values, final_values, terminated, truncated, gamma, lam):
        out = self.call("compute_gae", rewards, values, final_values, terminated, truncated,
                        gamma, lam)
        if not isinstance(out, list) or len(out) != 2:
            raise Fail("compute_gae() must return two arrays (advantages, returns); "
                       f"got {type(out).__name__}")
        return (as_float_array("compute_gae() advantages", out[0], rewards.shape),
                as_float_array("compute_gae() returns", out[1], rewards.shape))

    def normalise(self, adv: np.ndarray) -> np.ndarray:
        return as_float_array("normalise_advantages()", self.call("normalise_advantages", adv),
                              adv.shape)

    def _loss(self, fn: str, shape: tuple, *args) -> tuple[float, np.ndarray]:
        out = self.call(fn, *args)
        if not isinstance(out, list) or len(out) != 2:
            raise Fail(f"{fn}() must return (loss, gradient); got {type(out).__name__}")
        loss = as_float_array(f"{fn}() loss", out[0], ())
        return float(loss), as_float_array(f"{fn}() gradient", out[1], shape)

    def clipped_loss(self, logits, actions, logp_old, adv, clip_eps):
        return self._loss("clipped_policy_loss", logits.shape, logits, actions, logp_old, adv,
                          clip_eps)

    def value_loss(self, values, returns):
        return self._loss("value_loss", values.shape, values, returns)

    def entropy_loss(self, logits):
        return self._loss("entropy_loss", logits.shape, logits)
