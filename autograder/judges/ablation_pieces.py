"""Capstone B's pieces as the judge calls them (capstone A's, re-exported by
the submission's ``ablations.py``, plus B's new ones): every answer through
the gate before any loop uses it. Used by the judge and by the judge's own
loop (``autograder.oracles.ablation_loop``); the judge's runs of a student's
experiment check each answer too (``autograder.oracles.checked_pieces``)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..grading.gate import Floats, Network, Number, Seq
from ..harness.probe import Call, Result
from .ppo_pieces import Pieces, loss_answer


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

    @staticmethod
    def step_calls(batch: dict, logits: np.ndarray, values: np.ndarray, hp: dict,
                   norm_adv: bool) -> list:
        """The calls of one minibatch step of the judge's loop, in the
        reference's order: the normalised advantages (``norm_adv``; the policy
        loss gets them), the clipped policy loss, the value loss (clipped with
        ``clip_vloss``) and, with ``ent_coef`` != 0, the entropy loss."""
        given = batch["advantages"]
        calls = [Call("normalise_advantages", (given,), answer=Floats(given.shape))] \
            if norm_adv else []
        calls.append(Call("clipped_policy_loss",
                          (logits, batch["actions"], batch["logp_old"],
                           Result(0) if norm_adv else given, hp["clip_eps"]),
                          answer=loss_answer(logits.shape)))
        value_call = Call("clipped_value_loss", (values, batch["values_old"], batch["returns"],
                                                 hp["clip_eps"]),
                          answer=loss_answer(values.shape)) if hp["clip_vloss"] else \
            Call("value_loss", (values, batch["returns"]), answer=loss_answer(values.shape))
        with_entropy = hp["ent_coef"] != 0.0
        return calls + [value_call] + ([Call("entropy_loss", (logits,),
                                             answer=loss_answer(logits.shape))]
                                       if with_entropy else [])

    def step(self, batch: dict, logits: np.ndarray, values: np.ndarray, hp: dict,
             norm_adv: bool) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
        """One minibatch's pieces in one round trip (:meth:`step_calls`), each
        answer read through the gate in order: ``(dlogits (B, A), dvalues (B,),
        the entropy loss's dlogits or None)``."""
        answers = self.ctx.ask_many(self.step_calls(batch, logits, values, hp, norm_adv))
        got = [answers[i] for i in range(len(answers))]
        self._answered_step(batch, logits, values, hp, norm_adv, got)
        k = 1 if norm_adv else 0
        dent = got[k + 2][1] if hp["ent_coef"] != 0.0 else None
        return got[k][1], got[k + 1][1], dent

    def _answered_step(self, batch, logits, values, hp, norm_adv, got) -> None:
        """A hook: a minibatch's answers, read (:class:`CheckedPieces`)."""
