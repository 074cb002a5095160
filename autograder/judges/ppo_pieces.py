"""Capstone A's pieces as the judge calls them: each answer checked for type,
shape and finiteness before any loop uses it. Used by the judge and by the
judge's own PPO loop (``autograder.oracles.ppo_loop``)."""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..grading.judging import Fail, as_float_array
from ..harness.probe import Call, Result, call_each


class Pieces:
    """The submission's PPO pieces behind ``call(fn, *args)``, with every
    answer checked for type, shape and finiteness before the loop uses it.
    ``call_many`` (a probe's batch: one round trip) serves :meth:`minibatch`;
    without it the batch is made of single calls."""

    def __init__(self, call: Callable[..., Any], call_many: Optional[Callable] = None):
        self.call = call
        self.call_many = call_many or (lambda calls: call_each(call, calls))

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

    def minibatch(self, batch: dict, logits: np.ndarray, values: np.ndarray, hp: dict,
                  norm_adv: bool, losses: bool = True
                  ) -> tuple[np.ndarray, Any, Any, Optional[np.ndarray]]:
        """One minibatch's pieces in one batch: the normalised advantages (with
        ``norm_adv``; the clipped loss gets them), then (``losses``) the
        clipped policy loss's, the value loss's and (``hp["ent_coef"]`` != 0)
        the entropy loss's gradients, each answer checked in that order as the
        single calls check it. ``batch``: the minibatch's ``actions``,
        ``logp_old``, ``advantages``, ``returns``; ``values`` (B,). Returns
        ``(advantages, dlogits, dvalues, dentropy)`` (None for what was not
        asked)."""
        with_entropy = losses and hp["ent_coef"] != 0.0
        given = batch["advantages"]
        calls = [Call("normalise_advantages", (given,))] if norm_adv else []
        if losses:
            calls += [Call("clipped_policy_loss", (logits, batch["actions"], batch["logp_old"],
                                                   Result(0) if norm_adv else given,
                                                   hp["clip_eps"])),
                      Call("value_loss", (values, batch["returns"]))]
        calls += [Call("entropy_loss", (logits,))] if with_entropy else []
        answers = iter(self.call_many(calls) if calls else ())
        adv = as_float_array("normalise_advantages()", next(answers), given.shape) \
            if norm_adv else given
        if not losses:
            return adv, None, None, None
        dlogits = self._checked_loss("clipped_policy_loss", logits.shape, next(answers))[1]
        dvalues = self._checked_loss("value_loss", values.shape, next(answers))[1]
        dentropy = self._checked_loss("entropy_loss", logits.shape, next(answers))[1] \
            if with_entropy else None
        return adv, dlogits, dvalues, dentropy

    def _loss(self, fn: str, shape: tuple, *args) -> tuple[float, np.ndarray]:
        return self._checked_loss(fn, shape, self.call(fn, *args))

    @staticmethod
    def _checked_loss(fn: str, shape: tuple, out: Any) -> tuple[float, np.ndarray]:
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
