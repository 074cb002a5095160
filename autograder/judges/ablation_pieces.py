"""Capstone B's pieces as the judge calls them (capstone A's, re-exported by
the submission's ``ablations.py``, plus B's new ones): every answer through
the gate before any loop uses it. Used by the judge and by the judge's own
loop (``autograder.oracles.ablation_loop``).

:class:`CheckedPieces` is what the judge's runs of a student's experiment
use: every answer (or a share of them, drawn per grading) is also compared
with the reference's answer to the same inputs (the oracles), so that pieces
that answer one way where they are checked on their own and another inside
a run are caught as the wrong pieces they are.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from rlkit.mlp import flatten

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
        if hp["clip_vloss"]:
            calls.append(Call("clipped_value_loss", (values, batch["values_old"],
                                                     batch["returns"], hp["clip_eps"]),
                              answer=loss_answer(values.shape)))
        else:
            calls.append(Call("value_loss", (values, batch["returns"]),
                              answer=loss_answer(values.shape)))
        if hp["ent_coef"] != 0.0:
            calls.append(Call("entropy_loss", (logits,), answer=loss_answer(logits.shape)))
        return calls

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


# ----------------------------------------------------------------------------- in-run checks
class CheckedPieces(AblationPieces):
    """The pieces as the judge's runs ask them: each answer that the run uses
    (advantages, log-probabilities, gradients, statistics) is also compared
    with the oracle's answer to the same inputs, within ``rtol``/``atol`` (the
    float order of a correct piece differs by far less), on every call
    (``share`` 1) or on a share of the calls drawn from ``rng``, which the
    worker cannot see. A mismatch is recorded (the first of each function,
    with where: :attr:`where`, set by the run) and the run goes on with the
    submission's answer, so that the table is still judged on what the
    submission's code gives."""

    def __init__(self, ctx: Any, oracle: Callable[[str], Callable], *, share: float = 1.0,
                 rng: Optional[np.random.Generator] = None, rtol: float = 1e-7,
                 atol: float = 1e-10):
        super().__init__(ctx)
        self.oracle, self.share, self.rng = oracle, share, rng
        self.rtol, self.atol = rtol, atol
        self.where = ""
        self.mismatches: dict[str, str] = {}      # fn -> the first mismatch, in words
        self.calls = self.checked = 0

    def _picked(self) -> bool:
        self.calls += 1
        if self.share >= 1.0 or self.rng is None:
            return True
        return bool(self.rng.random() < self.share)

    def _compare(self, fn: str, what: str, got: Any, want: Any) -> None:
        self.checked += 1
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        err = np.abs(got - want)
        tol = self.atol + self.rtol * np.abs(want)
        if got.shape == want.shape and np.all(err <= tol):
            return
        if fn not in self.mismatches:
            worst = float(np.max(err / np.maximum(tol, 1e-300))) if got.shape == want.shape \
                else float("inf")
            off = int(np.sum(err > tol)) if got.shape == want.shape else got.size
            self.mismatches[fn] = (f"{fn}() {what}in the judge's run of {self.where}: "
                                   f"{off} of {want.size} entries differ from the reference's "
                                   f"answer to the same inputs (the worst by {worst:.3g} times "
                                   "the tolerance)")

    def gae(self, rewards, values, final_values, terminated, truncated, gamma, lam):
        adv, ret = super().gae(rewards, values, final_values, terminated, truncated, gamma, lam)
        if self._picked():
            want = self.oracle("b_ablations.gae_recursive")(
                rewards, values, final_values, terminated, truncated, gamma, lam)
            self._compare("compute_gae", "(advantages and returns) ",
                          np.stack([adv, ret]), np.stack(want))
        return adv, ret

    def log_prob(self, logits, actions):
        got = super().log_prob(logits, actions)
        if self._picked():
            self._compare("categorical_log_prob", "", got,
                          self.oracle("a_ppo.log_prob")(logits, actions))
        return got

    def normalise(self, adv):
        got = super().normalise(adv)
        if self._picked():
            self._compare("normalise_advantages", "", got, self.oracle("a_ppo.normalise")(adv))
        return got

    def _answered_step(self, batch, logits, values, hp, norm_adv, got) -> None:
        if not self._picked():
            return
        k = 0
        adv = batch["advantages"]
        if norm_adv:
            self._compare("normalise_advantages", "", got[0],
                          self.oracle("a_ppo.normalise")(adv))
            adv, k = got[0], 1
        eps = hp["clip_eps"]
        _, want = self.oracle("a_ppo.clipped_loss")(logits, batch["actions"], batch["logp_old"],
                                                    adv, eps)
        self._compare("clipped_policy_loss", "(its gradient) ", got[k][1], want)
        if hp["clip_vloss"]:
            _, want = self.oracle("b_ablations.clipped_value_loss")(
                values, batch["values_old"], batch["returns"], eps)
            self._compare("clipped_value_loss", "(its gradient) ", got[k + 1][1], want)
        else:
            _, want = self.oracle("a_ppo.value_loss")(values, batch["returns"])
            self._compare("value_loss", "(its gradient) ", got[k + 1][1], want)
        if hp["ent_coef"] != 0.0:
            _, want = self.oracle("a_ppo.entropy_loss")(logits)
            self._compare("entropy_loss", "(its gradient) ", got[k + 2][1], want)

    def obs_stats(self, mean, var, count, obs):
        got = super().obs_stats(mean, var, count, obs)
        if self._picked():
            want = self.oracle("b_ablations.obs_stats")(mean, var, count, obs)
            self._compare("update_obs_stats", "(mean, variance and count) ",
                          np.concatenate([got[0], got[1], [got[2]]]),
                          np.concatenate([want[0], want[1], [want[2]]]))
        return got

    def normalise_obs(self, obs, mean, var):
        got = super().normalise_obs(obs, mean, var)
        if self._picked():
            self._compare("normalise_obs", "", got,
                          self.oracle("b_ablations.normalise_obs")(obs, mean, var))
        return got

    def shared_gradients(self, policy_grads, value_grads, num_shared):
        got = super().shared_gradients(policy_grads, value_grads, num_shared)
        if self._picked():
            want = self.oracle("b_ablations.shared_gradients")(policy_grads, value_grads,
                                                               num_shared)
            self._compare("shared_gradients", "", flatten(got), flatten(want))
        return got
