"""Judge of capstone A: PPO from the pieces on CartPole.

Every scored part is declared in ``assignments/a_ppo/assignment.toml``
(``[[questions.parts]]``); this module registers one function per part (q1-q5,
q8: ``@judge.part``, run once per case of the part's groups) or per question
whose parts share work (q6's one minibatch step per case, judged by two parts;
q7's training runs, judged by the tiers of each run).

Unit cases run on judge-made data made from the cases declared in
assignment.toml (hidden unit cases draw their shapes per student and are
checked against the oracles): e.g. a rollout of a random policy in a
CartPole with a short time limit, so both terminations and truncations
occur. The section's three self-checks are computed by the judge's own
math; the bar trains with the judge's loop (``oracles.ppo_loop``) fed the
submission's pieces (``ppo_pieces.Pieces``) and evaluates in the judge's own
CartPole with sampled actions. Every answer crosses the gate
(``grading.gate``) before judge code uses it.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from rlkit.agent import collect_rollout, evaluate, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward
from rlkit.optim import Adam

from ..grading.gate import Floats, Invalid, Lenient, Network, Number, Record
from ..grading.judging import Context, Fail, HiddenFail, Judge, JudgeBug, ReferenceFailed
from ..grading.safe import one_line
from ..grading.status import Kind
from . import slips
from .ppo_pieces import FINGERPRINT_STRIDE, Pieces

judge = Judge()


# ----------------------------------------------------------------------------- judge data
# Every input below is made from a declared case (assignment.toml): its fields, and its
# generator ``ctx.case_rng(case)`` (the case's seed, or the student's own instance).
ROLLOUT_TRIES = 400       # a per-student rollout: draws tried for one with the episode ends it needs


def _hp(ctx: Context) -> dict:
    hp = dict(ctx.params["hp"])
    hp["hidden"] = tuple(hp["hidden"])
    return hp


def _unit_tol(ctx: Context) -> dict:
    return {"rtol": ctx.params["unit_rtol"], "atol": ctx.params["unit_atol"]}


def _network(hp: dict, out_dim: int) -> Network:
    """The gate's spec of a network of ``hp``'s hidden sizes with ``out_dim`` outputs."""
    sizes = [OBS_DIM, *hp["hidden"], out_dim]
    return Network(tuple({"W": (n_in, n_out), "b": (n_out,)}
                         for n_in, n_out in zip(sizes[:-1], sizes[1:])))


def _trained(hp: dict, *which: str) -> Record:
    """The spec of ``train()``'s answer: a dict holding the trained networks
    ``which`` ("policy_params", "value_params") of ``hp``'s sizes (its other
    keys, the log and the hp, are not read)."""
    nets = {"policy_params": _network(hp, NUM_ACTIONS), "value_params": _network(hp, 1)}
    return Record(required={k: nets[k] for k in which})


EPISODE_ENDS = ("terminated", "truncated")


def _has_ends(ro: dict, last_step=()) -> bool:
    """Whether rollout ``ro`` has terminations and truncations, and on its
    last step (in some environment) each episode end ``last_step`` names."""
    return bool(ro["terminated"].any() and ro["truncated"].any()
                and all(ro[end][-1].any() for end in last_step))


def _last_step(case) -> tuple:
    """The episode ends ``case`` requires on its rollout's last step."""
    ends = tuple(case.get("last_step", ()))
    unknown = [e for e in ends if e not in EPISODE_ENDS]
    if unknown:
        raise ReferenceFailed(f"{case.question}: case {case.name!r}: unknown last_step {unknown}")
    return ends


def _rollout(ctx: Context, rng: np.random.Generator, env_seed: int, T: int, N: int,
             time_limit: int) -> dict:
    """A random-policy rollout (networks and actions from ``rng``) in the
    judge's CartPole of ``N`` environments seeded ``env_seed``."""
    hp = dict(_hp(ctx), policy_head_gain=1.0)
    policy, value = init_networks(hp, rng)
    env = VecCartPole(N, seed=env_seed, max_episode_steps=time_limit)
    return collect_rollout(env, env.reset(), policy, value, T, rng)


def _case_rollout(ctx: Context, case) -> dict:
    """The rollout of ``case`` (T, N, time limit), with terminations and
    truncations, and on its last step the episode ends its ``last_step``
    names: of its seed; drawn per student, of the first environment seed from
    the student's generator whose rollout has them."""
    last = _last_step(case)
    if not case.per_student:
        ro = _rollout(ctx, ctx.case_rng(case), case.seed, case.T, case.N, case.time_limit)
        if not _has_ends(ro, last):
            raise ReferenceFailed(f"{case.question}: the rollout of case {case.name!r} lacks "
                                  f"terminations or truncations (or {last} on its last step)")
        return ro
    rng = ctx.case_rng(case)
    for _ in range(ROLLOUT_TRIES):
        ro = _rollout(ctx, rng, int(rng.integers(2 ** 31)), case.T, case.N, case.time_limit)
        if _has_ends(ro, last):
            return ro
    raise ReferenceFailed(f"{case.question}: no rollout of case {case.name!r} in "
                          f"{ROLLOUT_TRIES} draws has both terminations and truncations "
                          f"(and {last} on its last step)")


def _logit_batch(rng: np.random.Generator, B: int, A: int, scale: float):
    """Logits (B, A) ~ normal(0, scale), actions (B,), advantages (B,) of both signs."""
    logits = rng.normal(0.0, scale, (B, A))
    actions = rng.integers(0, A, B)
    adv = rng.normal(0.0, 1.0, B)
    return logits, actions, adv


def _rows(case) -> tuple[np.ndarray, np.ndarray]:
    """A case spelled out as rows: (the rows but their last entry, the last entries)."""
    rows = np.array(case.get("values"), dtype=np.float64)
    return rows[:, :-1], rows[:, -1]


def _safely(diagnose: Callable[..., str]) -> Callable[..., str]:
    """``diagnose`` where the oracles are absent (a handout): no diagnosis."""
    def run(*args) -> str:
        try:
            return diagnose(*args)
        except ReferenceFailed:
            return ""
    return run


# ----------------------------------------------------------------------------- q1
@judge.part("q1_distribution", "log_prob")
def log_prob(ctx: Context, case) -> None:
    """categorical_log_prob() on random logits, and on huge ones spelled out."""
    if case.get("values") is not None:          # spelled out: huge logits
        logits, last = _rows(case)
        actions = last.astype(np.int64)
        label = (f"categorical_log_prob() on logits of +-{np.abs(logits).max():g} (use "
                 "log-sum-exp)")
        got = ctx.ask("categorical_log_prob", logits, actions,
                      answer=Lenient(Floats(actions.shape)))
        if isinstance(got, Invalid):            # e.g. -inf: say which logits did it
            raise ctx.fail(f"{label}: {got.message}", got.kind)
        ctx.expect(got, rtol=1e-12, atol=1e-12, oracle=("a_ppo.log_prob", logits, actions),
                   label=label)
        return
    logits, actions, _ = _logit_batch(ctx.case_rng(case), case.B, case.A, case.scale)
    got = Pieces(ctx).log_prob(logits, actions)
    ctx.expect(got, **_unit_tol(ctx), oracle=("a_ppo.log_prob", logits, actions))


@judge.part("q1_distribution", "entropy")
def entropy(ctx: Context, case) -> None:
    """categorical_entropy() on random logits, and on rows spelled out with their entropy."""
    if case.get("values") is not None:          # spelled out, with the entropy
        logits, want = _rows(case)
        got = ctx.ask("categorical_entropy", logits, answer=Floats((logits.shape[0],)))
        shown = " and ".join("(" + ", ".join(f"{v:g}" for v in row) + ")" for row in logits)
        ctx.check(got, want, rtol=1e-12, atol=1e-12,
                  label=f"categorical_entropy() on logits {shown}")
        return
    logits, _, _ = _logit_batch(ctx.case_rng(case), case.B, case.A, case.scale)
    got = ctx.ask("categorical_entropy", logits, answer=Floats((logits.shape[0],)))
    ctx.expect(got, **_unit_tol(ctx), oracle=("a_ppo.entropy", logits))


# ----------------------------------------------------------------------------- q2
GAE_SETTINGS = ((0.99, 0.95), (0.9, 0.5))   # (gamma, lambda) every rollout is checked at
SELF_CHECK_GAMMA = 0.99
GAE_MATCH_RTOL = 1e-9     # q2's diagnosis: a slip's answer matched within float reordering
SINGLE_PRECISION_RTOL = 1e-5   # ... and right to about single precision only


def _gae_diagnosis(ctx: Context, case, ro: dict, gamma: float, lam: float):
    """q2's diagnosis of a wrong answer on rollout ``ro``: a function of
    (suffix "" (advantages) or "returns", the submission's answer) naming the
    slip it matches (computed by the oracles only when a case fails; where they
    are absent, a handout, nothing). Names a step and an environment only for a
    public case."""
    def close(got, want, rtol):
        return bool(got.shape == want.shape
                    and np.all(np.abs(got - want) <= 1e-10 + rtol * np.abs(want)))

    def diagnose(suffix: str, got) -> str:
        try:
            got = np.asarray(got, dtype=np.float64)
            right_adv, _ = ctx.oracle_fn("a_ppo.gae")(ro, gamma, lam)
            right = right_adv if suffix == "" else right_adv + ro["values"][:-1]
            ends = ro["terminated"] | ro["truncated"]
            as_ends = dict(ro, terminated=ends, truncated=np.zeros_like(ends))
            slip_adv, _ = ctx.oracle_fn("a_ppo.gae")(as_ends, gamma, lam)
            mc = ctx.oracle_fn("a_ppo.reward_to_go_minus_v")(ro, gamma) + ro["values"][:-1]
            # a termination bootstrapped from V(final obs): on the rollout's last step only
            # (Spinning Up's buffer), or everywhere
            last = np.zeros_like(ends)
            last[-1] = ro["terminated"][-1]
            booted = {what: ctx.oracle_fn("a_ppo.gae")(
                dict(ro, terminated=ro["terminated"] & ~mask, truncated=ro["truncated"] | mask),
                gamma, lam)[0] for what, mask in (("last", last), ("all", ro["terminated"]))}
        except (ReferenceFailed, TypeError, ValueError):
            return ""
        slipped = slip_adv if suffix == "" else slip_adv + ro["values"][:-1]
        for what, adv in booted.items():
            if slips.matches(got, adv if suffix == "" else adv + ro["values"][:-1], right,
                             rtol=GAE_MATCH_RTOL, atol=1e-10):
                if what == "all":
                    return ("your GAE bootstraps at terminations (from final_values[t]): a "
                            "terminated episode's next-state value is 0")
                where = "" if case.hidden else \
                    f" (env {int(np.argmax(ro['terminated'][-1]))} here)"
                return ("your GAE bootstraps V(final obs) where an episode terminated on the "
                        f"rollout's last step{where}: a termination's next-state value is 0 "
                        "there too (Spinning Up's buffer bootstraps every rollout end)")
        if close(got, slipped, GAE_MATCH_RTOL):
            where = ""
            if not case.hidden:
                off = ro["truncated"] & (np.abs(got - right) > 1e-10)
                t, n = np.argwhere(off if off.any() else ro["truncated"])[0]
                where = (f": at step {t} of env {n} the episode was truncated, not "
                         "terminated")
            return (f"your GAE does not bootstrap at truncations{where} (a time-limit end "
                    "is not a termination: its next-state value is final_values[t], not 0)")
        if suffix == "returns" and lam != 1.0 and close(got, mc, GAE_MATCH_RTOL):
            return ("your returns are the discounted rewards-to-go (Monte Carlo targets), not "
                    "advantages + values[:T]: the two agree only at lambda = 1")
        if close(got, right, SINGLE_PRECISION_RTOL):
            return ("your answers are right to about single precision only: a float32 step "
                    "somewhere (e.g. masks or flags as float32: under numpy 2, gamma * "
                    "(1.0 - dones.astype(np.float32)) is float32); keep everything float64")
        return ""
    return diagnose


def _gae(ctx: Context, ro: dict, gamma: float, lam: float):
    """The submission's (advantages, returns) of rollout ``ro``, both (T, N)."""
    return Pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"], ro["terminated"],
                           ro["truncated"], gamma, lam)


@judge.part("q2_gae", "lambda1")
def gae_lambda1(ctx: Context, case) -> None:
    """Self-check 2: at lambda = 1 the advantages are the bootstrapped
    reward-to-go minus V-hat, and the returns advantages + values[:T]."""
    ro = _case_rollout(ctx, case)
    tol = {"rtol": ctx.params["gae_rtol"], "atol": 1e-10}
    adv, ret = _gae(ctx, ro, SELF_CHECK_GAMMA, 1.0)
    diagnose = _gae_diagnosis(ctx, case, ro, SELF_CHECK_GAMMA, 1.0)
    ctx.expect(adv, **tol, oracle=("a_ppo.reward_to_go_minus_v", ro, SELF_CHECK_GAMMA),
               label=f"advantages at lambda = 1 (rollout {case.label}: "
                     f"{int(ro['terminated'].sum())} terminations, "
                     f"{int(ro['truncated'].sum())} truncations)",
               diagnose=lambda got: diagnose("", got))
    ctx.check(ret, adv + ro["values"][:-1], **tol, name="returns",
              label="returns = advantages + values[:T]")


@judge.part("q2_gae", "lambdas")
def gae_lambdas(ctx: Context, case) -> None:
    """GAE at the judge's (gamma, lambda) pairs (and the case's own, if it has
    one): the advantages, and the value targets away from lambda = 1, where
    Monte Carlo returns differ."""
    ro = _case_rollout(ctx, case)
    tol = {"rtol": ctx.params["gae_rtol"], "atol": 1e-10}
    own = ((case.gamma, case.lam),) if case.gamma is not None else ()
    for i, (gamma, lam) in enumerate(GAE_SETTINGS + own):
        adv, ret = _gae(ctx, ro, gamma, lam)
        label = f"compute_gae() at gamma = {gamma}, lambda = {lam}"
        diagnose = _gae_diagnosis(ctx, case, ro, gamma, lam)
        ctx.expect(adv, **tol, name=f"setting {i + 1}", label=label,
                   oracle=("a_ppo.gae_advantages", ro, gamma, lam),
                   diagnose=lambda got, d=diagnose: d("", got))
        ctx.expect(ret, **tol, name=f"setting {i + 1} returns",
                   label=f"{label}: the returns (value targets)",
                   oracle=("a_ppo.gae_returns", ro, gamma, lam),
                   diagnose=lambda got, d=diagnose: d("returns", got))


# ----------------------------------------------------------------------------- q3
@judge.part("q3_ratio", "off_policy")
def ratio_off_policy(ctx: Context, case) -> None:
    """policy_ratio() of log-probs before and after a move of the logits."""
    rng = ctx.case_rng(case)
    logits, actions, _ = _logit_batch(rng, case.B, NUM_ACTIONS, case.scale)
    moved = logits + rng.normal(0, case.spread, logits.shape)
    old = ctx.oracle("logp_old", "a_ppo.log_prob", logits, actions)
    new = ctx.oracle("logp_new", "a_ppo.log_prob", moved, actions)
    got = ctx.ask("policy_ratio", new, old, answer=Floats(old.shape))
    ctx.expect(got, rtol=1e-12, atol=0.0, oracle=("a_ppo.policy_ratio", new, old))


@judge.part("q3_ratio", "first_minibatch")
def ratio_first_minibatch(ctx: Context, case) -> None:
    """Self-check 1: on the first minibatch of the first epoch of the judge's
    training run the ratio of the submission's own log-probs is exactly 1."""
    p = ctx.params
    logits, actions, idx, mb_logits = ctx.oracle("run", "a_ppo.first_minibatch", case.seed,
                                                 _hp(ctx))
    idx, actions = idx.astype(np.int64), actions.astype(np.int64)
    pieces = Pieces(ctx)
    logp_old = pieces.log_prob(logits, actions)[idx]
    new = pieces.log_prob(mb_logits, actions[idx])
    ratio = ctx.ask("policy_ratio", new, logp_old, answer=Floats(new.shape))
    ctx.check(ratio, np.ones_like(ratio), rtol=0.0, atol=p["ratio_tol"],
              label=f"the ratio on the first minibatch of the first epoch ({case.label}; old "
                    "and new log-probs come from the same network there: exactly 1)")


# ----------------------------------------------------------------------------- q4
def _param_grad(params: list, cache, dlogits: np.ndarray) -> np.ndarray:
    return flatten(backward(params, cache, dlogits))


def _unit_batch(ctx: Context, case):
    """q4's judge data of ``case``: a policy network, observations (B, 4),
    actions (B,), advantages (B,) of both signs, the logits at theta_old and
    their log-probs (an oracle's, named "logp_old" in the current case)."""
    rng = ctx.case_rng(case)
    policy, _ = init_networks(dict(_hp(ctx), policy_head_gain=1.0), rng)
    obs = rng.normal(0.0, 0.5, (case.B, OBS_DIM))
    logits_old, cache = forward(policy, obs)
    actions = rng.integers(0, NUM_ACTIONS, case.B)
    adv = rng.normal(0.0, 1.0, case.B)
    logp_old = ctx.oracle("logp_old", "a_ppo.log_prob", logits_old, actions)
    return policy, obs, actions, adv, logits_old, cache, logp_old


CLIP_LOSS_SLIPS = {     # q4's diagnosis: the clipped loss's slips (``oracles.a_ppo.clipped_loss``)
    **slips.CLIP_SLIPS,
    "sign_flipped": "the sign flipped (the surrogate itself, to be minimised, rather than "
                    "its negative)",
    "ratio_inverted": "the ratio inverted (pi_old / pi_new: logp_old - logp_new)",
    "ratio_one": "the ratio taken as 1 everywhere (the old log-probs taken from the current "
                 "policy instead of the given logp_old)",
    "sum_not_mean": "the loss summed over the batch instead of averaged",
}


def _clip_diagnosis(ctx: Context, args: tuple, to_params=None):
    """q4's diagnosis of a wrong clipped loss or gradient on ``args`` (logits,
    actions, logp_old, advantages, eps): a function of (suffix "loss", "grad"
    (w.r.t. the parameters: ``to_params`` of the logits' gradient) or
    "dlogits", the submission's answer) naming the slips it matches; nothing
    where the oracles are absent (a handout)."""
    @_safely
    def diagnose(suffix: str, got) -> str:
        oracle = ctx.oracle_fn("a_ppo.clipped_loss")
        answers = {s: oracle(*args, s) for s in ("", *CLIP_LOSS_SLIPS)}

        def pick(out):
            if suffix == "loss":
                return np.asarray(out[0])
            return to_params(out[1]) if to_params is not None else out[1]
        what = "loss" if suffix == "loss" else "gradient"
        right = pick(answers.pop(""))
        return slips.name(got, right, {s: pick(o) for s, o in answers.items()},
                          CLIP_LOSS_SLIPS, f"your clipped_policy_loss() {what} matches")
    return diagnose


@judge.part("q4_clipped_gradient", "at_old")
def clip_at_old(ctx: Context, case) -> None:
    """Self-check 3: at theta = theta_old the gradient (w.r.t. the network's
    parameters) of the clipped loss is the plain policy gradient's."""
    p = ctx.params
    eps = _hp(ctx)["clip_eps"]
    policy, obs, actions, adv, logits_old, cache, logp_old = _unit_batch(ctx, case)
    _, dlogits = Pieces(ctx).clipped_loss(logits_old, actions, logp_old, adv, eps)
    plain = ctx.oracle("plain", "a_ppo.policy_gradient_dlogits", logits_old, actions, adv)
    got, want = _param_grad(policy, cache, dlogits), _param_grad(policy, cache, plain)
    rel = np.linalg.norm(got - want) / np.linalg.norm(want)
    diagnose = _clip_diagnosis(ctx, (logits_old, actions, logp_old, adv, eps),
                               lambda d: _param_grad(policy, cache, d))
    ctx.check(rel, 0.0, rtol=0.0, atol=p["self_check_rtol"],
              label=f"the relative difference between the gradient (w.r.t. the network's "
                    f"{got.size} parameters) of your clipped loss and of the plain "
                    "policy-gradient loss -mean(A log pi) at theta_old",
              diagnose=lambda _: diagnose("grad", got))


@judge.part("q4_clipped_gradient", "clip")
def clip_away(ctx: Context, case) -> None:
    """Away from theta_old: the loss and its gradient w.r.t. the parameters,
    with clipping for both advantage signs. Every clip case moves the policy
    of the self-check's (first) public batch."""
    base = next(c for c in ctx.declared() if not c.hidden)
    policy, obs, actions, adv, _, _, logp_old = _unit_batch(ctx, base)
    moved = [{k: v + ctx.case_rng(case).normal(0, case.spread, v.shape)
              for k, v in layer.items()} for layer in policy]
    eps = case.get("eps", _hp(ctx)["clip_eps"])
    logits, moved_cache = forward(moved, obs)
    loss, dlogits = Pieces(ctx).clipped_loss(logits, actions, logp_old, adv, eps)
    args = (logits, actions, logp_old, adv, eps)
    diagnose = _clip_diagnosis(ctx, args, lambda d: _param_grad(moved, moved_cache, d))
    label = "clipped_policy_loss() away from theta_old"
    ctx.expect(loss, **_unit_tol(ctx), name="loss", label=f"{label}: the loss",
               oracle=("a_ppo.clipped_loss_value", *args),
               diagnose=lambda got: diagnose("loss", got))
    ctx.expect(_param_grad(moved, moved_cache, dlogits), rtol=1e-8, atol=1e-12, name="grad",
               label=f"{label}: the gradient w.r.t. the network's parameters",
               oracle=("a_ppo.clipped_loss_param_grad", moved, obs, actions, logp_old, adv,
                       eps),
               diagnose=lambda got: diagnose("grad", got))


KINK_STEP = 1e-6          # relative distance of a designed ratio from a clip bound


def _kink_batch(ctx: Context, case):
    """Logits (B, A), actions (B,), advantages (B,) and old log-probs (B,)
    designed so that the ratios sit just inside and just outside 1 - eps and
    1 + eps, at 1 and far out, each with a positive and a negative advantage."""
    rng, eps = ctx.case_rng(case), case.eps
    targets = np.array([(1 - eps) * (1 - KINK_STEP), (1 - eps) * (1 + KINK_STEP),
                        (1 + eps) * (1 - KINK_STEP), (1 + eps) * (1 + KINK_STEP),
                        1.0, 0.3 * (1 - eps), 3.0 * (1 + eps)])
    combos = np.array([(r, s) for r in targets for s in (1.0, -1.0)])
    ratios, signs = rng.permutation(np.resize(combos, (3 * len(combos), 2))).T
    B = ratios.size
    logits = rng.normal(0.0, 1.5, (B, NUM_ACTIONS))
    actions = rng.integers(0, NUM_ACTIONS, B)
    logp_now = ctx.oracle("logp", "a_ppo.log_prob", logits, actions)
    return logits, actions, signs * rng.uniform(0.2, 2.0, B), logp_now - np.log(ratios)


@judge.part("q4_clipped_gradient", "kinks")
def clip_kinks(ctx: Context, case) -> None:
    """Both sides of every clip bound, both advantage signs, other clip widths."""
    logits, actions, adv, logp_old = _kink_batch(ctx, case)
    args = (logits, actions, logp_old, adv, case.eps)
    loss, dlogits = Pieces(ctx).clipped_loss(*args)
    diagnose = _clip_diagnosis(ctx, args)
    label = "clipped_policy_loss() with ratios next to 1 - eps and 1 + eps" + (
        "" if case.hidden else f" (eps = {case.eps})")
    ctx.expect(loss, **_unit_tol(ctx), name="loss", label=f"{label}: the loss",
               oracle=("a_ppo.clipped_loss_value", *args),
               diagnose=lambda got: diagnose("loss", got))
    ctx.expect(dlogits, **_unit_tol(ctx), name="dlogits",
               label=f"{label}: the gradient w.r.t. the logits",
               oracle=("a_ppo.clipped_loss_dlogits", *args),
               diagnose=lambda got: diagnose("dlogits", got))


# ----------------------------------------------------------------------------- q5
def _matches(got, want: np.ndarray, right: np.ndarray) -> bool:
    """q5: ``got`` is ``want`` (within float reordering) where ``want`` is not ``right``."""
    return slips.matches(got, want, right, rtol=1e-11, atol=1e-14)


def _value_loss_diagnosis(ctx: Context, values: np.ndarray, returns: np.ndarray):
    """q5's diagnosis of a wrong value loss or gradient (suffix "loss" or "grad")."""
    @_safely
    def diagnose(suffix: str, got) -> str:
        right = ctx.oracle_fn("a_ppo.value_loss")(values, returns)[suffix == "grad"]
        if _matches(got, 2.0 * right, right):
            return ("your value loss is mean((v - R)^2), without its 1/2 (e.g. SB3's mse_loss): "
                    "the handout's is 0.5 mean((v - R)^2), with the gradient (v - R) / B")
        return ""
    return diagnose


# q5: the knobs of the advantages' normalisation (``slips.combined``: a library's code often
# turns two, e.g. torch's sample std without an epsilon); each slip's answer is the oracle's
# ``a_ppo.normalise_slipped``.
NORMALISE_KNOBS = {
    "axis": {"per_env": "per environment (each column's mean and std, axis=0) instead of over "
                        "all elements"},
    "ddof": {"ddof1": "with the sample std (ddof=1), not the population std"},
    "eps": {
        "eps_0": "without the epsilon: the handout divides by std + ADV_EPS (1e-8), which keeps "
                 "a batch of equal advantages finite",
        "eps_1e-5": "with 1e-5 added to the std instead of ADV_EPS (1e-8)",
        "eps_1e-4": "with 1e-4 added to the std instead of ADV_EPS (1e-8)",
    },
}
NORMALISE_SLIPS = {**{s: w for knob in NORMALISE_KNOBS.values() for s, w in knob.items()},
                   **slips.combined(NORMALISE_KNOBS)}


@_safely
def _normalise_diagnosis(ctx: Context, adv: np.ndarray, got) -> str:
    """q5's diagnosis of wrongly normalised advantages (each slip of
    :data:`NORMALISE_SLIPS`, and their combinations)."""
    right = ctx.oracle_fn("a_ppo.normalise")(adv)
    slipped = {s: ctx.oracle_fn("a_ppo.normalise_slipped")(adv, s) for s in NORMALISE_SLIPS}
    return slips.name_fewest(got, right, slipped, NORMALISE_SLIPS,
                             "your advantages are normalised", rtol=1e-11, atol=1e-14)


@judge.part("q5_losses", "value")
def value_loss(ctx: Context, case) -> None:
    rng = ctx.case_rng(case)
    values, returns = rng.normal(0, case.scale, case.B), rng.normal(0, case.scale, case.B)
    loss, grad = Pieces(ctx).value_loss(values, returns)
    diagnose = _value_loss_diagnosis(ctx, values, returns)
    ctx.expect(loss, **_unit_tol(ctx), name="loss", label="value_loss(): the loss",
               oracle=("a_ppo.value_loss_value", values, returns),
               diagnose=lambda got: diagnose("loss", got))
    ctx.expect(grad, **_unit_tol(ctx), name="grad", label="value_loss(): the gradient",
               oracle=("a_ppo.value_loss_grad", values, returns),
               diagnose=lambda got: diagnose("grad", got))


@judge.part("q5_losses", "entropy")
def entropy_loss(ctx: Context, case) -> None:
    logits, _, _ = _logit_batch(ctx.case_rng(case), case.B, case.A, case.scale)
    loss, grad = Pieces(ctx).entropy_loss(logits)
    ctx.expect(loss, **_unit_tol(ctx), name="loss", label="entropy_loss(): the loss",
               oracle=("a_ppo.entropy_loss_value", logits))
    ctx.expect(grad, **_unit_tol(ctx), name="grad", label="entropy_loss(): the gradient",
               oracle=("a_ppo.entropy_loss_grad", logits))


@judge.part("q5_losses", "normalise")
def normalise(ctx: Context, case) -> None:
    """normalise_advantages() over all elements of a (T, N) array whose
    columns have different scales."""
    rng = ctx.case_rng(case)
    adv = rng.normal(case.loc, case.scale, (case.T, case.N))
    adv = adv * (np.array(case.get("values")) if case.get("values") is not None
                 else rng.uniform(0.5, 4.0, case.N))
    got = Pieces(ctx).normalise(adv)
    ctx.expect(got, **_unit_tol(ctx), label="normalise_advantages()",
               oracle=("a_ppo.normalise", adv),
               diagnose=lambda g: _normalise_diagnosis(ctx, adv, g))


# ----------------------------------------------------------------------------- q6
STATS = ("pg_loss", "v_loss", "ent_loss", "entropy", "approx_kl", "old_approx_kl", "clipfrac",
         "grad_norm")
LATER_ADAM = "later Adam step"   # q6: a switch that starts from non-zero moments, t > 0
SWITCHES = {            # q6: what each other switch a case names changes in minibatch_update's hp
    "entropy bonus": {"ent_coef": 0.01},
    "no advantage normalisation": {"norm_adv": False},
    "no gradient clipping": {"max_grad_norm": None},
    "clip width 0.1": {"clip_eps": 0.1},
    "value weight 0.25": {"vf_coef": 0.25},
    "clipped value loss": {"clip_vloss": True},
}


STEP_SLIPS = {          # q6's diagnosis: what a half-right step does, as the feedback names it
    "no_clip": "no gradient clipping",
    "clip_when_off": "gradients clipped at 0.5 although max_grad_norm is None",
    "per_network_clip": "each network's gradients clipped on their own (one norm per network, "
                        "not one joint norm)",
    "no_vf_coef": "the value loss not weighted by vf_coef",
    "no_half": "the value loss without its 1/2 (mean((v - R)^2), e.g. SB3's mse_loss, where "
               "the handout's is 0.5 mean((v - R)^2))",
    "norm_adv_flipped": "the norm_adv switch ignored (advantages normalised the other way)",
    "ddof1": "advantages normalised with the sample std (ddof=1)",
    "no_entropy": "the entropy term left out",
    "entropy_sign": "the entropy term with the wrong sign (lowering entropy)",
    "eps_fixed": "the clip width fixed at 0.2 instead of hp['clip_eps']",
    "clip_vloss_flipped": "the clip_vloss switch ignored (value loss clipped the other way)",
    "fresh_adam": "the given Adam state ignored (a fresh optimiser)",
}
SLIP_RTOL = 1e-6


def _step_outcomes(ctx: Context, args: tuple) -> dict:
    """The oracle's step on ``args`` right (``""``) and with each of
    :data:`STEP_SLIPS`: ``{slip: (fingerprint, stats_before, stats_after)}``,
    computed only when a case failed; empty where the oracle is absent (a
    handout: q6 is not a public question, so in practice never)."""
    try:
        step = ctx.oracle_fn("a_ppo.minibatch_step")
    except ReferenceFailed:
        return {}
    return {slip: step(*args, slip) for slip in ("", *STEP_SLIPS)}


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.all(np.abs(got - want) <= 1e-10 + SLIP_RTOL * np.abs(want)))


def _diagnose_step(outcomes: dict, got: np.ndarray, stats=None) -> str:
    """Which one slip's parameters the submission's updated parameters
    (``got``: both networks flattened, every FINGERPRINT_STRIDE-th entry)
    match; where several slips give that step (at vf_coef = 0.5 a value loss
    not weighted by vf_coef and one without its 1/2), those whose value loss
    is the submission's reported ``stats`` (in the order of STATS), if any."""
    if not outcomes:
        return ""
    exact = outcomes[""][0]
    matched = [s for s, out in outcomes.items()
               if s and not _close(out[0], exact) and _close(got, out[0])]
    if len(matched) > 1 and stats is not None:
        same_loss = [s for s in matched if _close(stats[1:2], outcomes[s][1][1:2])]
        matched = same_loss or matched
    named = [STEP_SLIPS[s] for s in matched]
    if named:
        return ("your updated parameters match a step with " + " / ".join(named)
                + " (and are otherwise right)")
    return (f"your updated parameters match none of the usual slips the judge tries "
            f"({len(STEP_SLIPS)}: switches ignored, clipping, loss weights, the entropy sign, "
            "the optimiser state); check each loss term's gradient and the order of the steps")


def _diagnose_stats(outcomes: dict, got: np.ndarray, hp: dict) -> str:
    """Name the statistics that differ from the right step's (the oracle's)
    and what each matches instead."""
    if not outcomes:
        return ""
    want = outcomes[""][1]
    wrong = [i for i in range(len(STATS)) if not _close(got[i:i + 1], want[i:i + 1])]
    if not wrong:
        return ""
    alternatives = {
        "measured after the step": outcomes[""][2],
        "the norm after clipping": np.r_[want[:7], min(want[7], hp["max_grad_norm"])]
        if hp["max_grad_norm"] is not None else None,
        "the two KL estimators swapped": want[[0, 1, 2, 3, 5, 4, 6, 7]]
        if {4, 5} <= set(wrong) else None,
        "the k1 estimator mean(-logratio) (old_approx_kl's); approx_kl is the k3 estimator "
        "mean(ratio - 1 - logratio)": want[[0, 1, 2, 3, 5, 5, 6, 7]]
        if 5 not in wrong else None,
        "the entropy's sign flipped": want[[0, 1, 3, 2, 4, 5, 6, 7]],
        "the value loss without its 1/2": want * np.r_[1.0, 2.0, np.ones(6)],
    }
    parts = []
    for i in wrong:
        hits = [what for what, alt in alternatives.items()
                if alt is not None and not _close(alt[i:i + 1], want[i:i + 1])
                and _close(got[i:i + 1], alt[i:i + 1])]
        parts.append(STATS[i] + (f" (matches {' / '.join(hits)})" if hits else ""))
    return "the statistics that differ: " + ", ".join(parts)


ROLLOUT_STREAM = 10      # q6: a case's rollout comes from its seed + this


def _update_step(ctx: Context, case, hp: dict) -> tuple:
    """q6's step of ``case``: (networks, two Adam states, a minibatch of judge
    data, the step's hp), the arguments of ``minibatch_update_arrays``. A
    case drawn per submission takes the first seed from its generator whose
    rollout has terminations and truncations and whose step each slip the
    case ``shows`` (of :data:`STEP_SLIPS`) changes."""
    if not case.per_student:
        step = _step_of(ctx, case, hp, case.seed)
        if step is None:
            raise ReferenceFailed(f"{case.question}: the rollout of case {case.name!r} lacks "
                                  "terminations or truncations")
        return step
    shows = list(case.get("shows", []))
    unknown = [s for s in shows if s not in STEP_SLIPS]
    if unknown:
        raise ReferenceFailed(f"{case.question}: case {case.name!r} shows unknown slips {unknown}")
    oracle = ctx.oracle_fn("a_ppo.minibatch_step") if shows else None
    draws = ctx.case_rng(case)
    for _ in range(ROLLOUT_TRIES):
        step = _step_of(ctx, case, hp, int(draws.integers(2 ** 31)))
        if step is None:
            continue
        exact = oracle(*step)[0] if shows else None
        if all(not _close(oracle(*step, slip)[0], exact) for slip in shows):
            return step
    raise ReferenceFailed(f"{case.question}: no draw of case {case.name!r} in {ROLLOUT_TRIES} "
                          f"has both episode ends and shows {shows}")


def _step_of(ctx: Context, case, hp: dict, seed: int) -> Optional[tuple]:
    """:func:`_update_step` from ``seed`` (networks and minibatch from
    ``default_rng(seed)``, the rollout from ``seed + ROLLOUT_STREAM``), or
    None where the rollout lacks terminations or truncations."""
    rng = np.random.default_rng(seed)
    policy, value = init_networks(hp, rng)
    ro = _rollout(ctx, np.random.default_rng(seed + ROLLOUT_STREAM), seed + ROLLOUT_STREAM,
                  case.T, case.N, case.time_limit)
    if not _has_ends(ro):
        return None
    perm = rng.permutation(case.T * case.N)[:case.B]
    adv, ret = ctx.oracle("gae", "a_ppo.gae", ro, hp["gamma"], hp["gae_lambda"])
    logp = ctx.oracle("logp", "a_ppo.log_prob",
                      ro["logits"].reshape(-1, NUM_ACTIONS), ro["actions"].reshape(-1))
    batch = {"obs": ro["obs"].reshape(-1, OBS_DIM)[perm],
             "actions": ro["actions"].reshape(-1)[perm], "logp_old": logp[perm],
             "advantages": adv.reshape(-1)[perm], "returns": ret.reshape(-1)[perm],
             "values_old": ro["values"][:-1].reshape(-1)[perm]
             + rng.normal(0, case.spread, case.B)}
    opts = [Adam(policy, lr=hp["lr"], eps=hp["adam_eps"]),
            Adam(value, lr=hp["lr"], eps=hp["adam_eps"])]
    switches = list(case.switches or [])
    unknown = [s for s in switches if s != LATER_ADAM and s not in SWITCHES]
    if unknown:
        raise ReferenceFailed(f"{case.question}: case {case.name!r}: unknown switches {unknown}")
    if LATER_ADAM in switches:
        for o in opts:
            o.t = 7
            o.m = [np.full_like(a, 1e-3) for a in o.m]
            o.v = [np.full_like(a, 1e-5) for a in o.v]
    step_hp = {k: hp[k] for k in ("clip_eps", "vf_coef", "ent_coef", "max_grad_norm", "norm_adv")}
    step_hp["clip_vloss"] = False
    for s in switches:
        step_hp.update(SWITCHES.get(s, {}))
    return policy, value, opts[0].state_dict(), opts[1].state_dict(), batch, step_hp


def _step_answer(hp: dict) -> Record:
    """The spec of ``minibatch_update_arrays``'s answer: the two updated
    networks, and the statistics (checked by the second part only, so a
    malformed ``stats`` costs that part alone)."""
    return Record(required={"policy_params": _network(hp, NUM_ACTIONS),
                            "value_params": _network(hp, 1)},
                  optional={"stats": Lenient(Record(required={k: Number() for k in STATS}))})


def _reported_stats(out: dict):
    """The statistics a step reported, in the order of STATS (None if it did not)."""
    stats = out.get("stats")
    return None if stats is None or isinstance(stats, Invalid) else \
        np.array([stats[k] for k in STATS])


def _check_params(ctx: Context, case, step: tuple, out: dict, outcomes: Callable) -> None:
    """The updated networks of ``out`` against the expected ones (both must
    have changed); a wrong step is diagnosed by the slip it matches."""
    got = {"policy": flatten(out["policy_params"]), "value": flatten(out["value_params"])}
    for net, like in (("policy", step[0]), ("value", step[1])):
        if np.array_equal(got[net], flatten(like)):
            raise ctx.fail(f"minibatch_update() ({case.label}): the {net} parameters did not "
                           "change")
    fingerprint = np.concatenate([got["policy"], got["value"]])[::FINGERPRINT_STRIDE]
    # the diagnosis names a slip, never an input: shown for hidden cases too
    diagnose = lambda _: _diagnose_step(outcomes(), fingerprint, _reported_stats(out))  # noqa: E731
    for net in ("policy", "value"):
        ctx.expect(got[net], rtol=1e-9, atol=1e-12, name=net, diagnose=diagnose,
                   label=f"minibatch_update() ({case.label}): the updated {net} parameters",
                   oracle=("a_ppo.minibatch_params", *step, net))


@judge.question("q6_minibatch_update")
def q6_minibatch_update(ctx: Context) -> None:
    """One step of minibatch_update per case, judged by two parts: the updated
    parameters, and the statistics it returns. Every case is asked once, in
    the first part; a case whose answer is unusable fails both."""
    hp = _hp(ctx)
    asked: dict = {}              # case name -> (the step's inputs, the answer), or its failure
    memo: dict = {}               # case name -> the oracle's slipped steps (once, on a failure)

    def outcomes(case, step) -> Callable[[], dict]:
        def get() -> dict:
            if case.name not in memo:
                memo[case.name] = _step_outcomes(ctx, step)
            return memo[case.name]
        return get

    with ctx.part("params") as part:
        first = None
        for case in part.case_list():           # every case, so that the stats part has them
            with part.at(case):
                try:
                    step = _update_step(ctx, case, hp)
                    out = ctx.ask("minibatch_update_arrays", *step, answer=_step_answer(hp),
                                  may_modify=(0, 1))      # the parameters change in place
                    asked[case.name] = (step, out)
                    _check_params(ctx, case, step, out, outcomes(case, step))
                except Fail as e:
                    asked.setdefault(case.name, e)
                    first = first or e
        if first is not None:
            raise first
    with ctx.part("stats") as part:
        for case in part.cases():
            answer = asked.get(case.name)
            if isinstance(answer, Exception):       # no usable answer: the same cause
                raise answer
            if answer is None:
                raise ctx.fail("not judged: the first part stopped before this case",
                               Kind.NOT_JUDGED)
            step, out = answer
            stats = out.get("stats")
            if stats is None or isinstance(stats, Invalid):
                why = stats.message if stats is not None else "no 'stats' key"
                raise ctx.fail(f"minibatch_update_arrays(): {why}; minibatch_update() must "
                               f"return a dict with {', '.join(STATS)}",
                               stats.kind if stats is not None else Kind.SHAPE,
                               fn="minibatch_update_arrays")
            got = np.array([stats[k] for k in STATS])
            ctx.expect(got, rtol=1e-8, atol=1e-12, name="stats", fn="minibatch_update_arrays",
                       label=f"minibatch_update() statistics ({case.label}), in the order "
                             + ", ".join(STATS),
                       oracle=("a_ppo.minibatch_stats", *step),
                       diagnose=lambda g, get=outcomes(case, step), hp=step[5]:
                       _diagnose_stats(get(), g, hp))


# ----------------------------------------------------------------------------- q7
TIER_PARTS = ("bar", "half", "quarter")   # q7's tier parts, the bar first (assignment.toml)


def _tier_steps(tiers: list) -> list[tuple[float, float]]:
    """``(median above, share of a run's points)`` from the tiers, the bar
    first: passing a tier adds what it gives beyond the tier below it."""
    out, below = [], 0.0
    for above, fraction in sorted(tiers):
        out.append((above, fraction - below))
        below = fraction
    return out[::-1]


def _tiers(ctx: Context) -> list[tuple[str, float]]:
    """``(part id, median above)`` of q7's tier parts, from ``params.tiers``.
    The toml's tier parts must give each tier the share of the question's
    points the tiers give it, and name its threshold in their titles."""
    p, q = ctx.params, ctx.question
    steps = _tier_steps(p["tiers"])
    if len(steps) != len(TIER_PARTS) or steps[0][0] != p["bar"]:
        raise JudgeBug(f"judge bug: params.tiers {p['tiers']} must hold {len(TIER_PARTS)} tiers, "
                       f"the first at the bar {p['bar']} (parts {TIER_PARTS})")
    out = []
    for pid, (above, share) in zip(TIER_PARTS, steps):
        spec = next((s for s in q.parts if s.id == pid), None)
        if spec is None or spec.each != "case" or abs(spec.points - share * q.points) > 1e-9 \
                or f"> {above:g}" not in spec.title:
            raise JudgeBug(f"judge bug: {q.name}'s part {pid!r} must be declared each = \"case\", "
                           f"worth {share:g} of {q.points:g} points, its title saying "
                           f"'> {above:g}' (params.tiers {p['tiers']})")
        out.append((pid, above))
    return out


def _bar_run(ctx: Context, case) -> tuple[list, str]:
    """The trained policy of the bar's run ``case`` and a note on its
    training: the judge's own loop fed the submission's pieces where the loop
    ships (grading), else (the handout's preview) the student's own train()."""
    p, hp = ctx.params, _hp(ctx)
    if ctx.public_only:
        out = ctx.ask("train", case.seed, p["updates"], None, ctx.show_progress,
                      answer=_trained(hp, "policy_params"))
        return out["policy_params"], ""
    run = ctx.oracle_fn("ppo_loop.train")(Pieces(ctx), case.seed, hp, p["updates"],
                                          show_progress=ctx.show_progress)
    last = np.concatenate(run.episode_returns[-5:]) if run.episode_returns else np.zeros(0)
    return run.policy_params, ("; training episodes in the last 5 updates: mean "
                               f"{np.mean(last) if len(last) else float('nan'):.1f}")


def _stopped(e: Fail) -> Fail:
    """What stopped a training run (``e``), for each part that grades the run:
    the same kind, diagnosis and function (a hidden case's: as redacted)."""
    if isinstance(e, HiddenFail):
        return e
    return Fail(one_line(f"the training run stopped: {e}"), e.kind, e.diagnosis, e.fn)


@judge.question("q7_bar")
def q7_bar(ctx: Context) -> None:
    """The bar. Grading: the judge's own PPO loop trains with the submission's
    pieces. The handout's preview: the student's own ``train``. Each run is
    worth the same share; a run's share comes in tiers (parts declared per
    case, so that the hidden runs' phase scores them alike). Each run trains
    on its own: one that stops fails its own tiers only."""
    p = ctx.params
    tiers = _tiers(ctx)
    medians: dict = {}
    failed: dict = {}
    with ctx.part("runs") as part:
        for case in part.cases():
            try:
                policy_params, extra = _bar_run(ctx, case)
            except Fail as e:               # this run's piece failed: judged in its tiers
                failed[case.name] = e
                continue
            returns = evaluate(policy_params, episodes=p["eval_episodes"],
                               seed=case.seed + p["eval_seed_offset"])
            medians[case.name] = float(np.median(returns))
            ctx.note(f"     {case.label}: median {medians[case.name]:.1f} over "
                     f"{p['eval_episodes']} sampled-action episodes (min {returns.min():.0f}, "
                     f"max {returns.max():.0f}){extra}")
        if failed:
            raise next(iter(failed.values()))
    if part.met:
        ctx.note("     trained by " + ("your train()" if ctx.public_only
                                       else "the judge's training loop with your pieces"))
        ctx.measure("bar", p["bar"])
    if medians:
        ctx.measure("min_median", min(medians.values()))
    for pid, above in tiers:
        for case in ctx.each_case(pid):
            with ctx.part(pid, cases=[case]) as tier:
                for c in tier.cases():
                    if c.name in failed:
                        raise _stopped(failed[c.name])
                    median = medians.get(c.name)
                    if median is None:
                        raise ctx.fail("not judged: the training run did not finish",
                                       Kind.NOT_JUDGED)
                    if not median > above:
                        raise ctx.fail(f"{c.label}: median {median:.1f}, not above {above:g} "
                                       f"(the tiers: {p['tiers']})")


# ----------------------------------------------------------------------------- q8
RECIPE_SLIPS = {         # q8's diagnosis: train() off the recipe (``oracles.ppo_loop``'s slips)
    "no_anneal": "the learning rate not annealed (anneal_lr asks for lr * (1 - u / updates) "
                 "at update u = 0, 1, ...)",
    "lr_ahead": "the learning-rate schedule one update ahead (lr * (1 - (u + 1) / updates): "
                "the fraction counted after the update's rollout)",
    "lr_behind": "the learning-rate schedule one update late (the rate set after the update's "
                 "epochs instead of before its rollout)",
    "value_lr_fixed": "only the policy optimiser's learning rate annealed (set it on both)",
    "one_perm_per_update": "one permutation per update, reused by every epoch (draw a fresh "
                           "rng.permutation(T*N) each epoch)",
    "no_shuffle": "the minibatches taken in rollout order, without rng.permutation",
    "norm_whole_batch": "the advantages normalised once over the whole batch instead of in "
                        "each minibatch",
    "reset_each_update": "the environments reset at every update (continue from the rollout's "
                         "next_obs)",
}


def _recipe_diagnosis(ctx: Context, seed: int, hp: dict, updates: int, got) -> str:
    """q8's diagnosis of a train() whose final parameters ``got`` (both
    networks flattened) are wrong: which recipe slips' runs of the judge's
    loop (with the submission's pieces, on the same seed) give them. Names a
    slip, never the case's seed."""
    try:
        loop = ctx.oracle_fn("ppo_loop.train")
    except ReferenceFailed:              # a handout: no judge's loop
        return ""
    runs = {}
    try:
        for slip in ("", *RECIPE_SLIPS):
            run = loop(Pieces(ctx), seed, hp, updates, slip=slip)
            runs[slip] = flatten(run.policy_params + run.value_params)
    except Fail:                         # the pieces failed off the recipe: no diagnosis
        return ""
    tol = {"rtol": ctx.params["train_rtol"], "atol": 1e-10}
    right = runs.pop("")
    named = slips.name(got, right, runs, RECIPE_SLIPS, "your train() matches the judge's loop "
                       "with", **tol)
    return named or (f"your train() matches none of the recipe slips the judge tries "
                     f"({len(RECIPE_SLIPS)}: the lr schedule, the permutations, where advantages "
                     "are normalised, resets); if your pieces pass q1-q6, compare "
                     "your loop with the recipe in train()'s docstring, step by step")


@judge.part("q8_train", "recipe")
def train_recipe(ctx: Context, case) -> None:
    """train() follows the recipe: a few updates at small sizes give the
    networks the judge's own loop gives with the same pieces (the
    submission's), so any float order of the pieces matches; a loop that
    anneals, shuffles, bootstraps or steps differently does not. Where the
    judge's loop does not ship (the handout) the public case compares with
    the reference's run, recorded (and a wrong piece then costs here too)."""
    p = ctx.params
    hp = {**_hp(ctx), **p["train_check_hp"]}
    updates = p["train_check_updates"]
    with_loop = case.per_student or (ctx.has_oracles() and not ctx.recording)
    # a piece failing in the judge's loop is named as that piece's; a wrong answer below is
    # train()'s (fn=)
    run = ctx.oracle_fn("ppo_loop.train")(Pieces(ctx), case.seed, hp, updates) \
        if with_loop else None
    out = ctx.ask("train", case.seed, updates, hp, False,
                  answer=_trained(hp, "policy_params", "value_params"))
    got = flatten(out["policy_params"] + out["value_params"])
    what = "train()" + ("" if case.hidden else f" on seed {case.seed}") + \
        ": the final policy and value parameters"
    diagnose = lambda g: _recipe_diagnosis(ctx, case.seed, hp, updates, g)  # noqa: E731
    if run is not None:
        ctx.check(got, flatten(run.policy_params + run.value_params), rtol=p["train_rtol"],
                  atol=1e-10, label=f"{what}, against the judge's loop run with your pieces",
                  diagnose=diagnose, fn="train")
    else:                                 # the handout's check (and its recording)
        ctx.expect(got, rtol=p["train_rtol"], atol=1e-10, diagnose=diagnose, fn="train",
                   label=f"{what}, against the reference's run (on Gradescope: against the "
                         "judge's loop run with your own pieces)")


QUESTIONS = judge.questions
