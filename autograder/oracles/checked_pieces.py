"""The judge's pieces for its runs of a student's experiment (an oracle
module: Gradescope side only, never in a handout).

:class:`CheckedPieces` asks the submission's pieces as
``judges.ablation_pieces.AblationPieces`` does and compares each answer that
the run uses with the reference's answer to the same inputs (the oracles of
``a_ppo`` and ``b_ablations``), so that pieces that answer one way where
they are checked on their own and another inside a run are caught as the
wrong pieces they are.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from rlkit.mlp import flatten

from ..judges.ablation_pieces import AblationPieces


class CheckedPieces(AblationPieces):
    """The pieces as the judge's runs ask them: each answer that the run uses
    (advantages, log-probabilities, gradients, statistics) is also compared
    with the oracle's answer to the same inputs, within ``rtol``/``atol`` (the
    float order of a correct piece differs by far less): every call of the
    run's first ``prefix`` updates (:attr:`update`, set by the run), and after
    them every call (``share`` 1) or a share of the calls drawn from ``rng``,
    which the worker cannot see. A mismatch is recorded (the first of each function,
    with where: :attr:`where`, set by the run) and the run goes on with the
    submission's answer, so that the table is still judged on what the
    submission's code gives."""

    def __init__(self, ctx: Any, oracle: Callable[[str], Callable], *, share: float = 1.0,
                 rng: Optional[np.random.Generator] = None, rtol: float = 1e-7,
                 atol: float = 1e-10, prefix: int = 0):
        super().__init__(ctx)
        self.oracle, self.share, self.rng = oracle, share, rng
        self.rtol, self.atol, self.prefix = rtol, atol, prefix
        self.where = ""
        self.update = 0                           # the run's current update (set by the run)
        self.mismatches: dict[str, str] = {}      # fn -> the first mismatch, in words
        self.calls = self.checked = 0

    def _picked(self) -> bool:
        self.calls += 1
        if self.share >= 1.0 or self.rng is None or self.update < self.prefix:
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
        k, given = 0, batch["advantages"]
        if norm_adv:
            self._compare("normalise_advantages", "", got[0],
                          self.oracle("a_ppo.normalise")(given))
            given, k = got[0], 1
        eps = hp["clip_eps"]
        _, want = self.oracle("a_ppo.clipped_loss")(logits, batch["actions"], batch["logp_old"],
                                                    given, eps)
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


def checked(ctx: Any, **settings: Any) -> CheckedPieces:
    """A :class:`CheckedPieces` of ``ctx`` (a judging Context) comparing with the
    oracles it reaches (``ctx.oracle_fn``); ``settings``: share, rng, rtol, atol, prefix."""
    return CheckedPieces(ctx, ctx.oracle_fn, **settings)
