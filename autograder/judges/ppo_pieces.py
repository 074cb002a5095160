"""Capstone A's pieces as the judge calls them: every answer through the gate
(type, shape, finiteness) before any loop uses it. Used by the judge and by
the judge's own PPO loop (``autograder.oracles.ppo_loop``)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..grading.gate import Floats, Number, Seq
from ..grading.judging import Context
from ..harness.probe import Call, InProcessCaller, Result

# A training step's parameters are compared on every 16th entry of both networks flattened
# (the judge's fingerprint of a step: capstone A's q8 and its oracle).
FINGERPRINT_STRIDE = 16


def loss_answer(shape: tuple) -> Seq:
    """A loss piece's answer: (loss, gradient of the given shape)."""
    return Seq(Number(), Floats(shape))


class Pieces:
    """The submission's PPO pieces, asked through ``ctx`` (a judging Context:
    ``ask`` and ``ask_many``, so every answer crosses the gate)."""

    def __init__(self, ctx: Any):
        self.ctx = ctx

    @classmethod
    def in_process(cls, module: Any, batched: bool = True) -> "Pieces":
        """The pieces of an imported ``module`` called in this process (tests and
        benches: trusted code only), through a bare Context, so that every
        answer still crosses the gate (a failure raises ``Fail``).
        ``batched`` False: a minibatch's pieces as single calls."""
        caller = InProcessCaller(module)
        return cls(Context(caller.call, {}, public_only=True,
                           call_many=caller.call_many if batched else None))

    def log_prob(self, logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
        return self.ctx.ask("categorical_log_prob", logits, actions,
                            answer=Floats(actions.shape))

    def gae(self, rewards, values, final_values, terminated, truncated, gamma, lam):
        adv, ret = self.ctx.ask("compute_gae", rewards, values, final_values, terminated,
                                truncated, gamma, lam,
                                answer=Seq(Floats(rewards.shape), Floats(rewards.shape)))
        return adv, ret

    def normalise(self, adv: np.ndarray) -> np.ndarray:
        return self.ctx.ask("normalise_advantages", adv, answer=Floats(adv.shape))

    def minibatch(self, batch: dict, logits: np.ndarray, values: np.ndarray, hp: dict,
                  norm_adv: bool, losses: bool = True
                  ) -> tuple[np.ndarray, Any, Any, Optional[np.ndarray]]:
        """One minibatch's pieces in one batch: the normalised advantages (with
        ``norm_adv``; the clipped loss gets them), then (``losses``) the
        clipped policy loss's, the value loss's and (``hp["ent_coef"]`` != 0)
        the entropy loss's gradients, each answer read through the gate in
        that order, as the single calls read it. ``batch``: the minibatch's
        ``actions``, ``logp_old``, ``advantages``, ``returns``; ``values`` (B,).
        Returns ``(advantages, dlogits, dvalues, dentropy)`` (None for what was
        not asked)."""
        with_entropy = losses and hp["ent_coef"] != 0.0
        given = batch["advantages"]
        calls = [Call("normalise_advantages", (given,), answer=Floats(given.shape))] \
            if norm_adv else []
        if losses:
            calls += [Call("clipped_policy_loss", (logits, batch["actions"], batch["logp_old"],
                                                   Result(0) if norm_adv else given,
                                                   hp["clip_eps"]),
                           answer=loss_answer(logits.shape)),
                      Call("value_loss", (values, batch["returns"]),
                           answer=loss_answer(values.shape))]
        calls += [Call("entropy_loss", (logits,), answer=loss_answer(logits.shape))] \
            if with_entropy else []
        answers = iter(self.ctx.ask_many(calls) if calls else ())
        adv = next(answers) if norm_adv else given
        if not losses:
            return adv, None, None, None
        dlogits = next(answers)[1]
        dvalues = next(answers)[1]
        dentropy = next(answers)[1] if with_entropy else None
        return adv, dlogits, dvalues, dentropy

    def _loss(self, fn: str, shape: tuple, *args) -> tuple[float, np.ndarray]:
        loss, grad = self.ctx.ask(fn, *args, answer=loss_answer(shape))
        return loss, grad

    def clipped_loss(self, logits, actions, logp_old, adv, clip_eps):
        return self._loss("clipped_policy_loss", logits.shape, logits, actions, logp_old, adv,
                          clip_eps)

    def value_loss(self, values, returns):
        return self._loss("value_loss", values.shape, values, returns)

    def entropy_loss(self, logits):
        return self._loss("entropy_loss", logits.shape, logits)
