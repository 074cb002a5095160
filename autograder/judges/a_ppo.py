"""Judge of capstone A: PPO from the pieces on CartPole.

Unit cases run on judge-made data made from the cases declared in
assignment.toml (hidden unit cases draw their shapes per student and are
checked against the oracles): e.g. a rollout of a random policy in a
CartPole with a short time limit, so both terminations and truncations
occur. The section's three self-checks are computed by the judge's own
math; the bar trains with the judge's loop (``ppo_loop``) and evaluates in
the judge's own CartPole with sampled actions.
"""
from __future__ import annotations

import numpy as np

from rlkit.agent import collect_rollout, evaluate, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward
from rlkit.optim import Adam

from ..grading.judging import (Context, Fail, Outcome, ProbeRaised, ReferenceFailed,
                               Scorecard, as_float_array)
from . import slips
from .ppo_pieces import Pieces


# ----------------------------------------------------------------------------- judge data
# Every input below is made from a declared case (assignment.toml): its fields, and its
# generator ``ctx.case_rng(case)`` (the case's seed, or the student's own instance).
ROLLOUT_TRIES = 400       # a per-student rollout: draws tried for one with the episode ends it needs


def _hp(ctx: Context) -> dict:
    hp = dict(ctx.params["hp"])
    hp["hidden"] = tuple(hp["hidden"])
    return hp


def _seeded(case, offset: int) -> np.random.Generator:
    """A second generator of a case with a declared seed: ``default_rng(seed + offset)``
    (for inputs the case's first generator does not make)."""
    if case.get("seed") is None:
        raise ReferenceFailed(f"{case.question}: case {case.name!r} needs a seed")
    return np.random.default_rng(case.seed + offset)


def _tail(case) -> str:
    """The end of a key for ``case``: none for the case named "public" (the one
    case of its group when keys did not name cases), else "/<name>"."""
    return "" if case.name == "public" else f"/{case.name}"


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


def _expect_all(ctx: Context, case, key: str, answers: dict, oracle: tuple, *, rtol: float,
                atol: float, transform=None, diagnose=None) -> None:
    """A piece's answers ``{suffix: (value, label[, tolerances])}`` (key
    ``key/suffix``; ``""``: ``key``) against the reference's, recorded; for a
    case drawn per student against the oracle's answers in the same order
    (``transform``-ed), which nothing recorded could stand in for. A wrong
    value's diagnosis: ``diagnose(suffix, value)`` (a str), if given."""
    want = None
    if case.per_student:
        want = ctx.oracle(f"{key}/oracle", *oracle)
        want = transform(want) if transform else want
    for i, (suffix, (value, label, *own)) in enumerate(answers.items()):
        k = f"{key}/{suffix}" if suffix else key
        tol = {"rtol": rtol, "atol": atol, **(own[0] if own else {})}
        try:
            if want is None:
                ctx.expect(k, value, label=label, **tol)
            else:
                ctx.check(k, label, value, want[i], **tol)
        except Fail as e:
            if e.kind == "value" and diagnose is not None:
                e.diagnosis = diagnose(suffix, value)
            raise


def _pieces(ctx: Context) -> Pieces:
    return Pieces(ctx.call)


# ----------------------------------------------------------------------------- questions
def q1_distribution(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    tol = dict(rtol=p["unit_rtol"], atol=p["unit_atol"])
    with card.part("categorical_log_prob()", 1):
        for case in ctx.cases("log_prob"):
            key = f"q1/logp/{case.name}"
            if case.get("values") is not None:         # spelled out: huge logits
                logits, last = _rows(case)
                actions = last.astype(np.int64)
                ctx.expect(key, lambda: _pieces(ctx).log_prob(logits, actions), rtol=1e-12,
                           atol=1e-12, oracle=("a_ppo.log_prob", logits, actions),
                           label=f"categorical_log_prob() on logits of +-"
                                 f"{np.abs(logits).max():g} (use log-sum-exp)")
                continue
            logits, actions, _ = _logit_batch(ctx.case_rng(case), case.B, case.A, case.scale)
            ctx.expect(key, lambda: _pieces(ctx).log_prob(logits, actions), **tol,
                       label="categorical_log_prob()",
                       oracle=("a_ppo.log_prob", logits, actions) if case.per_student else None)
    with card.part("categorical_entropy()", 1):
        for case in ctx.cases("entropy"):
            key = f"q1/entropy/{case.name}"
            if case.get("values") is not None:         # spelled out, with the entropy
                logits, want = _rows(case)
                shown = " and ".join("(" + ", ".join(f"{v:g}" for v in row) + ")"
                                     for row in logits)
                ctx.check(key, f"categorical_entropy() on logits {shown}",
                          lambda: ctx.call("categorical_entropy", logits), want,
                          rtol=1e-12, atol=1e-12)
                continue
            logits, _, _ = _logit_batch(ctx.case_rng(case), case.B, case.A, case.scale)
            with ctx.case(key, "categorical_entropy()"):
                got = as_float_array("categorical_entropy()",
                                     ctx.call("categorical_entropy", logits), (logits.shape[0],))
            ctx.expect(key, got, **tol, label="categorical_entropy()",
                       oracle=("a_ppo.entropy", logits) if case.per_student else None)
    return card.outcome()


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


def q2_gae(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    tol = dict(rtol=p["gae_rtol"], atol=1e-10)
    self_check = "self-check: GAE at lambda = 1 equals bootstrapped reward-to-go minus V-hat"
    with card.part(self_check, 1):
        for case in ctx.cases():
            ro = _case_rollout(ctx, case)
            label = (f"advantages at lambda = 1 (rollout {case.label}: "
                     f"{int(ro['terminated'].sum())} terminations, "
                     f"{int(ro['truncated'].sum())} truncations)")
            key = f"q2/lambda1/{case.name}"
            with ctx.case(key, label):
                adv, ret = _pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                            ro["terminated"], ro["truncated"],
                                            SELF_CHECK_GAMMA, 1.0)
            try:
                ctx.expect(key, adv, **tol, label=label,
                           oracle=("a_ppo.reward_to_go_minus_v", ro, SELF_CHECK_GAMMA))
            except Fail as e:
                if e.kind == "value":
                    e.diagnosis = _gae_diagnosis(ctx, case, ro, SELF_CHECK_GAMMA, 1.0)("", adv)
                raise
            ctx.check(key, "returns = advantages + values[:T]", ret, adv + ro["values"][:-1],
                      **tol)
    with card.part("GAE for lambda in (0, 1)", 2, requires=self_check):
        for case in ctx.cases():
            ro = _case_rollout(ctx, case)
            own = ((case.gamma, case.lam),) if case.gamma is not None else ()
            for gamma, lam in GAE_SETTINGS + own:
                label = f"compute_gae() at gamma = {gamma}, lambda = {lam}"
                key = f"q2/gae/{case.name}/{gamma}/{lam}"
                with ctx.case(key, label):
                    adv, ret = _pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                                ro["terminated"], ro["truncated"], gamma, lam)
                # the value targets away from lambda = 1, where Monte Carlo returns differ
                _expect_all(ctx, case, key, {
                    "": (adv, label),
                    "returns": (ret, f"{label}: the returns (value targets)")},
                    ("a_ppo.gae", ro, gamma, lam), **tol,
                    diagnose=_gae_diagnosis(ctx, case, ro, gamma, lam))
    return card.outcome()


def q3_ratio(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    off_policy = "policy_ratio() away from the old policy"
    with card.part(off_policy, 1):
        for case in ctx.cases():
            tail = _tail(case)
            logits, actions, _ = _logit_batch(ctx.case_rng(case), case.B, NUM_ACTIONS,
                                              case.scale)
            moved = logits + _seeded(case, 1).normal(0, case.spread, logits.shape)
            old = ctx.oracle(f"q3/old{tail}", "a_ppo.log_prob", logits, actions)
            new = ctx.oracle(f"q3/new{tail}", "a_ppo.log_prob", moved, actions)
            with ctx.case(f"q3/ratio{tail}", "policy_ratio()"):
                got = as_float_array("policy_ratio()", ctx.call("policy_ratio", new, old),
                                     old.shape)
            ctx.expect(f"q3/ratio{tail}", got, rtol=1e-12, atol=0.0, label="policy_ratio()")
    with card.part("self-check: ratio is 1 on the first minibatch of the first epoch", 1,
                   requires=off_policy):
        for case in ctx.cases("first_minibatch"):
            key = f"q3/first_minibatch/{case.name}"
            with ctx.case(key, "the ratio on the first minibatch of the first epoch"):
                logits, actions, idx, mb_logits = ctx.oracle(key, "a_ppo.first_minibatch",
                                                             case.seed, _hp(ctx))
                idx = idx.astype(np.int64)
                logp_old = _pieces(ctx).log_prob(logits, actions)[idx]
                new = _pieces(ctx).log_prob(mb_logits, actions[idx])
                ratio = as_float_array("policy_ratio()",
                                       ctx.call("policy_ratio", new, logp_old), new.shape)
                worst = float(np.abs(ratio - 1.0).max())
                if not worst <= p["ratio_tol"]:
                    raise Fail(f"{case.label}: max |ratio - 1| = {worst:.3g} on the first "
                               f"minibatch (tolerance {p['ratio_tol']}); old and new log-probs "
                               "come from the same network there")
    return card.outcome()


def _param_grad(params: list, cache, dlogits: np.ndarray) -> np.ndarray:
    return flatten(backward(params, cache, dlogits))


def _unit_batch(ctx: Context, case):
    """q4's judge data of ``case``: a policy network, observations (B, 4),
    actions (B,), advantages (B,) of both signs, the logits at theta_old and
    their log-probs."""
    rng = ctx.case_rng(case)
    policy, _ = init_networks(dict(_hp(ctx), policy_head_gain=1.0), rng)
    obs = rng.normal(0.0, 0.5, (case.B, OBS_DIM))
    logits_old, cache = forward(policy, obs)
    actions = rng.integers(0, NUM_ACTIONS, case.B)
    adv = rng.normal(0.0, 1.0, case.B)
    logp_old = ctx.oracle(f"q4/logp_old{_tail(case)}", "a_ppo.log_prob", logits_old, actions)
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
    "dlogits", the submission's answer) naming the slips it matches."""
    def diagnose(suffix: str, got) -> str:
        try:
            oracle = ctx.oracle_fn("a_ppo.clipped_loss")
            answers = {s: oracle(*args, s) for s in ("", *CLIP_LOSS_SLIPS)}
        except ReferenceFailed:          # a handout: no oracles
            return ""
        def pick(out):
            if suffix == "loss":
                return np.asarray(out[0])
            return to_params(out[1]) if to_params is not None else out[1]
        what = "loss" if suffix == "loss" else "gradient"
        right = pick(answers.pop(""))
        return slips.name(got, right, {s: pick(o) for s, o in answers.items()},
                          CLIP_LOSS_SLIPS, f"your clipped_policy_loss() {what} matches")
    return diagnose


def q4_clipped_gradient(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    eps = _hp(ctx)["clip_eps"]
    tol = dict(rtol=p["unit_rtol"], atol=p["unit_atol"])
    self_check = "self-check: at theta = theta_old the clipped gradient is the policy gradient"
    with card.part(self_check, 1):
        for case in ctx.cases():
            policy, obs, actions, adv, logits_old, cache, logp_old = _unit_batch(ctx, case)
            key = f"q4/plain{_tail(case)}"
            with ctx.case(key, "clipped_policy_loss() at theta_old"):
                _, dlogits = _pieces(ctx).clipped_loss(logits_old, actions, logp_old, adv, eps)
                plain = ctx.oracle(key, "a_ppo.policy_gradient_dlogits", logits_old, actions,
                                   adv)
                got, want = _param_grad(policy, cache, dlogits), _param_grad(policy, cache, plain)
                rel = np.linalg.norm(got - want) / np.linalg.norm(want)
                if not rel <= p["self_check_rtol"]:
                    raise Fail(f"relative difference {rel:.3g} between the gradient (w.r.t. the "
                               f"network's {got.size} parameters) of your clipped loss and of "
                               f"the plain policy-gradient loss -mean(A log pi) at theta_old "
                               f"(tolerance {p['self_check_rtol']})",
                               diagnosis=_clip_diagnosis(
                                   ctx, (logits_old, actions, logp_old, adv, eps),
                                   lambda d: _param_grad(policy, cache, d))("grad", got))
    with card.part("away from theta_old: clipping for both advantage signs", 2,
                   requires=self_check):
        # every clip case moves the policy of the self-check's public batch
        base = next(c for c in ctx.declared() if not c.hidden)
        policy, obs, actions, adv, _, _, logp_old = _unit_batch(ctx, base)
        for case in ctx.cases("clip"):
            moved = [{k: v + ctx.case_rng(case).normal(0, case.spread, v.shape)
                      for k, v in layer.items()} for layer in policy]
            clip_eps = case.get("eps", eps)
            logits, moved_cache = forward(moved, obs)
            key = f"q4/clip/{case.name}"
            label = "clipped_policy_loss() away from theta_old"
            with ctx.case(key, label):
                loss, dlogits = _pieces(ctx).clipped_loss(logits, actions, logp_old, adv,
                                                          clip_eps)
            _expect_all(ctx, case, key, {
                "loss": (np.array(loss), f"{label}: the loss"),
                "grad": (_param_grad(moved, moved_cache, dlogits),
                         f"{label}: the gradient w.r.t. the network's parameters",
                         {"rtol": 1e-8, "atol": 1e-12})},
                ("a_ppo.clipped_loss", logits, actions, logp_old, adv, clip_eps), **tol,
                transform=lambda w: (w[0], _param_grad(moved, moved_cache, w[1])),
                diagnose=_clip_diagnosis(ctx, (logits, actions, logp_old, adv, clip_eps),
                                         lambda d: _param_grad(moved, moved_cache, d)))
    with card.part("clipped_policy_loss() on both sides of every clip bound, for both "
                   "advantage signs and other clip widths", 1, requires=self_check):
        for case in ctx.cases("kink"):
            key = f"q4/kink/{case.name}/{case.eps}"
            label = "clipped_policy_loss() with ratios next to 1 - eps and 1 + eps" + (
                "" if case.hidden else f" (eps = {case.eps})")
            logits, actions_k, adv_k, logp_old_k = _kink_batch(ctx, case, key)
            with ctx.case(key, label):
                loss, dlogits = _pieces(ctx).clipped_loss(logits, actions_k, logp_old_k, adv_k,
                                                          case.eps)
            _expect_all(ctx, case, key, {
                "loss": (np.array(loss), f"{label}: the loss"),
                "dlogits": (dlogits, f"{label}: the gradient w.r.t. the logits")},
                ("a_ppo.clipped_loss", logits, actions_k, logp_old_k, adv_k, case.eps), **tol,
                diagnose=_clip_diagnosis(ctx, (logits, actions_k, logp_old_k, adv_k, case.eps)))
    return card.outcome()


KINK_STEP = 1e-6          # relative distance of a designed ratio from a clip bound


def _kink_batch(ctx: Context, case, key: str):
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
    logp_now = ctx.oracle(f"{key}/logp", "a_ppo.log_prob", logits, actions)
    return logits, actions, signs * rng.uniform(0.2, 2.0, B), logp_now - np.log(ratios)


def _matches(got, want: np.ndarray, right: np.ndarray) -> bool:
    """q5: ``got`` is ``want`` (within float reordering) where ``want`` is not ``right``."""
    return slips.matches(got, want, right, rtol=1e-11, atol=1e-14)


def _value_loss_diagnosis(ctx: Context, values: np.ndarray, returns: np.ndarray):
    """q5's diagnosis of a wrong value loss or gradient (suffix "loss" or "grad")."""
    def diagnose(suffix: str, got) -> str:
        try:
            right = ctx.oracle_fn("a_ppo.value_loss")(values, returns)[suffix == "grad"]
        except ReferenceFailed:
            return ""
        if _matches(got, 2.0 * right, right):
            return ("your value loss is mean((v - R)^2), without its 1/2 (e.g. SB3's mse_loss): "
                    "the handout's is 0.5 mean((v - R)^2), with the gradient (v - R) / B")
        return ""
    return diagnose


def _normalise_diagnosis(ctx: Context, adv: np.ndarray, got) -> str:
    """q5's diagnosis of wrongly normalised advantages."""
    try:
        right = ctx.oracle_fn("a_ppo.normalise")(adv)
    except ReferenceFailed:
        return ""
    centred = adv - adv.mean()
    if _matches(got, centred / adv.std(), right):
        return ("your advantages are normalised without the epsilon: the handout divides by "
                "std + ADV_EPS (1e-8), which keeps a batch of equal advantages finite")
    if _matches(got, centred / (adv.std(ddof=1) + 1e-8), right):
        return "your advantages are normalised with the sample std (ddof=1), not the population std"
    return ""


def q5_losses(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    tol = dict(rtol=p["unit_rtol"], atol=p["unit_atol"])
    with card.part("value_loss(): loss and gradient", 1):
        for case in ctx.cases("value"):
            rng = ctx.case_rng(case)
            values, returns = rng.normal(0, case.scale, case.B), rng.normal(0, case.scale, case.B)
            key = f"q5/value/{case.name}"
            with ctx.case(key, "value_loss()"):
                loss, grad = _pieces(ctx).value_loss(values, returns)
            _expect_all(ctx, case, key, {"loss": (np.array(loss), "value_loss(): the loss"),
                                         "grad": (grad, "value_loss(): the gradient")},
                        ("a_ppo.value_loss", values, returns), **tol,
                        diagnose=_value_loss_diagnosis(ctx, values, returns))
    with card.part("entropy_loss(): loss and gradient", 0.5):
        for case in ctx.cases("entropy"):
            logits, _, _ = _logit_batch(ctx.case_rng(case), case.B, case.A, case.scale)
            key = f"q5/entropy/{case.name}"
            with ctx.case(key, "entropy_loss()"):
                loss, grad = _pieces(ctx).entropy_loss(logits)
            _expect_all(ctx, case, key, {"loss": (np.array(loss), "entropy_loss(): the loss"),
                                         "grad": (grad, "entropy_loss(): the gradient")},
                        ("a_ppo.entropy_loss", logits), **tol)
    with card.part("normalise_advantages() over all elements of a (T, N) array", 0.5):
        for case in ctx.cases("normalise"):
            rng = ctx.case_rng(case)
            adv = rng.normal(case.loc, case.scale, (case.T, case.N))
            adv = adv * (np.array(case.get("values")) if case.get("values") is not None
                         else rng.uniform(0.5, 4.0, case.N))
            key = f"q5/normalise{_tail(case)}"
            with ctx.case(key, "normalise_advantages()"):
                got = _pieces(ctx).normalise(adv)
            try:
                ctx.expect(key, got, **tol, label="normalise_advantages()",
                           oracle=("a_ppo.normalise", adv) if case.per_student else None)
            except Fail as e:
                if e.kind == "value":
                    e.diagnosis = _normalise_diagnosis(ctx, adv, got)
                raise
    return card.outcome()


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
FINGERPRINT_STRIDE = 16   # a step's parameters are compared on every 16th entry
SLIP_RTOL = 1e-6


def _step_outcomes(ctx: Context, key: str, args: tuple) -> dict:
    """The judge's own step for case ``key`` (``""``) and each of
    :data:`STEP_SLIPS`: ``{slip: (fingerprint, stats_before, stats_after)}``,
    computed by the oracle only when a case failed; empty where the oracle is
    absent (a handout: q6 is not a public question, so in practice never)."""
    try:
        return {slip: ctx.oracle(f"{key}/slip/{slip or 'none'}", "a_ppo.minibatch_step", *args,
                                 slip) for slip in ("", *STEP_SLIPS)}
    except ReferenceFailed:
        return {}


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


def _diagnose_stats(outcomes: dict, got: np.ndarray, want: np.ndarray, hp: dict) -> str:
    """Name the statistics that differ and what each matches instead."""
    wrong = [i for i in range(len(STATS)) if not _close(got[i:i + 1], want[i:i + 1])]
    if not wrong:
        return ""
    alternatives = {
        "measured after the step": outcomes[""][2] if outcomes else None,
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
    data, the step's hp), the arguments of ``minibatch_update_arrays``."""
    key = f"q6/{case.name}"
    rng = ctx.case_rng(case)
    policy, value = init_networks(hp, rng)
    ro = _rollout(ctx, _seeded(case, ROLLOUT_STREAM), case.seed + ROLLOUT_STREAM, case.T, case.N,
                  case.time_limit)
    if not _has_ends(ro):
        raise ReferenceFailed(f"{key}: the rollout lacks terminations or truncations")
    perm = rng.permutation(case.T * case.N)[:case.B]
    adv, ret = ctx.oracle(f"{key}/gae", "a_ppo.gae", ro, hp["gamma"], hp["gae_lambda"])
    logp = ctx.oracle(f"{key}/logp", "a_ppo.log_prob",
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
        raise ReferenceFailed(f"{key}: unknown switches {unknown}")
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


def q6_minibatch_update(ctx: Context) -> Outcome:
    card = Scorecard()
    hp = _hp(ctx)
    runs = {}                     # case name -> (the judge's step inputs, the student's output)
    slips: dict = {}              # case key -> the judge's slipped steps (once, if a case fails)

    def outcomes(key: str, step: tuple) -> dict:
        if key not in slips:
            slips[key] = _step_outcomes(ctx, key, step)
        return slips[key]

    params_ok = "minibatch_update(): the parameters after one step, with each switch"
    with card.part(params_ok, 2):
        for case in ctx.cases():
            key = f"q6/{case.name}"
            step = _update_step(ctx, case, hp)
            policy, value = step[0], step[1]
            with ctx.case(key, f"minibatch_update() ({case.label})"):
                out = ctx.call("minibatch_update_arrays", *step,
                               may_modify=(0, 1))        # the parameters change in place
                runs[case.name] = (step, out)
                if not isinstance(out, dict) or not {"policy_params", "value_params"} <= set(out):
                    raise Fail("minibatch_update_arrays() must return the dict it builds; do "
                               "not change that given function", "shape")
                try:
                    new_policy = flatten(out["policy_params"])
                    new_value = flatten(out["value_params"])
                except (KeyError, TypeError, IndexError, ValueError) as e:
                    raise Fail(f"updated parameters have the wrong structure ({e})",
                               "shape") from None
                got = {}
                for net, vec, like in (("policy", new_policy, policy),
                                       ("value", new_value, value)):
                    got[net] = as_float_array(f"updated {net} parameters", vec,
                                              flatten(like).shape)
                    if np.array_equal(got[net], flatten(like)):
                        raise Fail(f"the {net} parameters did not change")
                try:
                    for net in ("policy", "value"):
                        ctx.expect(f"{key}/{net}", got[net], rtol=1e-9, atol=1e-12,
                                   label=f"minibatch_update() ({case.label}): the updated "
                                         f"{net} parameters")
                except Fail as e:
                    if e.kind == "value":
                        # the diagnosis names a slip, never an input: shown for hidden cases too
                        fingerprint = np.concatenate([got["policy"], got["value"]])
                        e.diagnosis = _diagnose_step(outcomes(key, step),
                                                     fingerprint[::FINGERPRINT_STRIDE],
                                                     _reported_stats(out))
                    raise
    with card.part("minibatch_update(): the statistics it returns (losses, entropy, KL "
                   "estimates, clip fraction, gradient norm before clipping)", 1,
                   requires=params_ok):
        for case in ctx.cases():
            if case.name not in runs:
                break
            key = f"q6/{case.name}"
            step, out = runs[case.name]
            with ctx.case(f"{key}/stats", f"minibatch_update() statistics ({case.label})"):
                stats = out.get("stats") if isinstance(out, dict) else None
                if not isinstance(stats, dict) or not set(STATS) <= set(stats):
                    raise Fail(f"minibatch_update() must return a dict with {', '.join(STATS)}; "
                               f"got {describe_keys(stats)}", "shape")
                got = np.array([as_float_array(f"stats['{k}']", stats[k], ()) for k in STATS])
            try:
                ctx.expect(f"{key}/stats", got, rtol=1e-8, atol=1e-12,
                           label=f"minibatch_update() statistics ({case.label}), in the order "
                                 + ", ".join(STATS))
            except Fail as e:
                if e.kind == "value" and f"{key}/stats" in ctx.expected:
                    e.diagnosis = _diagnose_stats(outcomes(key, step), got,
                                                  ctx.expected[f"{key}/stats"], step[5])
                raise
    return card.outcome()


def _reported_stats(out) -> np.ndarray | None:
    """The statistics a step reported, in the order of STATS (None if it did not)."""
    stats = out.get("stats") if isinstance(out, dict) else None
    try:
        return np.array([float(stats[k]) for k in STATS])
    except (TypeError, KeyError, ValueError):
        return None


def describe_keys(stats) -> str:
    return f"keys {sorted(stats)}" if isinstance(stats, dict) else type(stats).__name__


def _trained_params(out, hp: dict, which: str = "policy_params") -> list:
    """The trained network ``which`` ("policy_params" or "value_params") in a
    student's ``train`` result, checked against the network ``hp`` describes
    (structure, shapes, finite)."""
    out_dim = NUM_ACTIONS if which == "policy_params" else 1
    sizes = [OBS_DIM, *hp["hidden"], out_dim]
    like = [{"W": (n_in, n_out), "b": (n_out,)} for n_in, n_out in zip(sizes[:-1], sizes[1:])]
    params = out.get(which) if isinstance(out, dict) else None
    if not isinstance(params, list) or len(params) != len(like) or not all(
            isinstance(layer, dict) and {"W", "b"} <= set(layer) for layer in params):
        raise Fail(f"train() must return a dict whose '{which}' is the network's list of "
                   "{'W', 'b'} layers", "shape")
    return [{k: as_float_array(f"{which}[{i}]['{k}']", layer[k], like[i][k])
             for k in ("W", "b")} for i, layer in enumerate(params)]


def _tier_steps(tiers: list) -> list[tuple[float, float]]:
    """``(median above, share of a run's points)`` from the tiers, the bar
    first: passing a tier adds what it gives beyond the tier below it."""
    out, below = [], 0.0
    for above, fraction in sorted(tiers):
        out.append((above, fraction - below))
        below = fraction
    return out[::-1]


def q7_bar(ctx: Context) -> Outcome:
    """The bar. Grading: the judge's own PPO loop trains with the submission's
    pieces. The handout's preview: the student's own ``train``. Each run is
    worth the same share; a run's share comes in tiers (parts, so that the
    hidden runs' phase scores them alike)."""
    card, p = Scorecard(), ctx.params
    ctx.nothing_to_record(*(f"q7/{case.name}" for case in ctx.cases()))
    if not list(ctx.cases()):
        return card.outcome()
    medians = {}
    who = "your train()" if ctx.public_only else "the judge's training loop with your pieces"
    with card.part(f"the training runs complete ({who})", 0):
        for case in ctx.cases():
            with ctx.case(f"q7/{case.name}", f"training run {case.label}"):
                if ctx.public_only:
                    out = ctx.call("train", case.seed, p["updates"], None, ctx.show_progress)
                    policy_params = _trained_params(out, _hp(ctx))
                    extra = ""
                else:
                    run = ctx.oracle_fn("ppo_loop.train")(Pieces(ctx.call, ctx.call_many),
                                                          case.seed, _hp(ctx), p["updates"],
                                                          show_progress=ctx.show_progress)
                    policy_params = run.policy_params
                    last = np.concatenate(run.episode_returns[-5:]) if run.episode_returns \
                        else np.zeros(0)
                    extra = (f"; training episodes in the last 5 updates: mean "
                             f"{np.mean(last) if len(last) else float('nan'):.1f}")
            returns = evaluate(policy_params, episodes=p["eval_episodes"],
                               seed=case.seed + p["eval_seed_offset"])
            medians[case.name] = float(np.median(returns))
            card.note(f"     {case.label}: median {medians[case.name]:.1f} over "
                      f"{p['eval_episodes']} sampled-action episodes (min {returns.min():.0f}, "
                      f"max {returns.max():.0f}){extra}")
    card.measure("bar", p["bar"])
    if medians:
        card.measure("min_median", min(medians.values()))
    for case in ctx.cases():
        median = medians.get(case.name)
        for above, share in _tier_steps(p["tiers"]):
            label = (f"the bar: median return > {above} on {case.label}" if above == p["bar"]
                     else f"partial credit: median return > {above} on {case.label}")
            with card.part(label, share), ctx.case(f"q7/{case.name}", label):
                if median is None:
                    raise Fail("the training run did not finish")
                if not median > above:
                    raise Fail(f"median {median:.1f} (the tiers: {p['tiers']})")
    return card.outcome()


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


def _recipe_diagnosis(ctx: Context, key: str, seed: int, hp: dict, updates: int,
                      got: np.ndarray) -> str:
    """q8's diagnosis of a train() whose final parameters ``got`` (both
    networks flattened) are wrong in case ``key``: which recipe slips' runs of
    the judge's loop (with the submission's pieces, on the same seed) give them."""
    try:
        loop = ctx.oracle_fn("ppo_loop.train")
    except ReferenceFailed:              # a handout: no judge's loop
        return ""
    runs = {}
    with ctx.case(key, "train(): the judge's loop off the recipe, for the diagnosis"):
        try:
            for slip in ("", *RECIPE_SLIPS):
                run = loop(Pieces(ctx.call), seed, hp, updates, slip=slip)
                runs[slip] = flatten(run.policy_params + run.value_params)
        except (Fail, ProbeRaised):      # the pieces failed off the recipe: no diagnosis
            return ""
    tol = dict(rtol=ctx.params["train_rtol"], atol=1e-10)
    right = runs.pop("")
    named = slips.name(got, right, runs, RECIPE_SLIPS, "your train() matches the judge's loop "
                       "with", **tol)
    return named or (f"your train() matches none of the recipe slips the judge tries "
                     f"({len(RECIPE_SLIPS)}: the lr schedule, the permutations, where advantages "
                     "are normalised, resets); if your pieces pass q1-q6, compare "
                     "your loop with the recipe in train()'s docstring, step by step")


def q8_train(ctx: Context) -> Outcome:
    """train() follows the recipe: a few updates at small sizes give the
    networks the judge's own loop gives with the same pieces (the student's),
    so any float order of the pieces matches; a loop that anneals, shuffles,
    bootstraps or steps differently does not."""
    card, p = Scorecard(), ctx.params
    hp = {**_hp(ctx), **p["train_check_hp"]}
    updates = p["train_check_updates"]
    with card.part(f"train(): {updates} updates at small sizes match the judge's loop "
                   "with your pieces", 1):
        try:
            loop = ctx.oracle_fn("ppo_loop.train")
        except ReferenceFailed:                 # a handout: the judge's loop does not ship
            loop = None
        for case in ctx.cases("recorded"):      # public: the reference's run, as numbers
            key = f"q8/recorded/{case.name}"
            with ctx.case(key, "train() with a few small updates"):
                out = ctx.call("train", case.seed, updates, hp, False)
                got = flatten(_trained_params(out, hp) + _trained_params(out, hp, "value_params"))
                run = loop(Pieces(ctx.call), case.seed, hp, updates) \
                    if loop and not ctx.recording else None
            try:
                if run is None:                 # the handout's check (and its recording)
                    ctx.expect(key, got, rtol=p["train_rtol"], atol=1e-10,
                               label=f"train() on seed {case.seed}: the final policy and value "
                                     "parameters, against the reference's run (on Gradescope: "
                                     "against the judge's loop run with your own pieces)")
                else:                           # where the judge's loop is: with your pieces
                    ctx.check(key, f"train() on seed {case.seed}: the final policy and value "
                                   "parameters, against the judge's loop run with your pieces",
                              got, flatten(run.policy_params + run.value_params),
                              rtol=p["train_rtol"], atol=1e-10)
            except Fail as e:
                if e.kind == "value":
                    e.diagnosis = _recipe_diagnosis(ctx, key, case.seed, hp, updates, got)
                raise
        for case in ctx.cases():
            key = f"q8/{case.name}"
            with ctx.case(key, "train() with a few small updates"):
                out = ctx.call("train", case.seed, updates, hp, False)
                got = flatten(_trained_params(out, hp) + _trained_params(out, hp, "value_params"))
                run = ctx.oracle_fn("ppo_loop.train")(Pieces(ctx.call), case.seed, hp, updates)
            try:
                ctx.check(key, "train(): the final policy and value parameters", got,
                          flatten(run.policy_params + run.value_params), rtol=p["train_rtol"],
                          atol=1e-10)
            except Fail as e:
                if e.kind == "value":    # names a slip, never the case's seed
                    e.diagnosis = _recipe_diagnosis(ctx, key, case.seed, hp, updates, got)
                raise
    return card.outcome()


QUESTIONS = {f.__name__: f for f in (q1_distribution, q2_gae, q3_ratio, q4_clipped_gradient,
                                     q5_losses, q6_minibatch_update, q7_bar, q8_train)}
