"""Judge of capstone A: PPO from the pieces on CartPole.

Unit cases run on judge-made data: a rollout of a random policy in a
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

from ..grading.judging import (Context, Fail, Outcome, ReferenceFailed, Scorecard,
                               as_float_array)
from .ppo_pieces import Pieces


# ----------------------------------------------------------------------------- judge data
def _hp(ctx: Context) -> dict:
    hp = dict(ctx.params["hp"])
    hp["hidden"] = tuple(hp["hidden"])
    return hp


def _rollout(ctx: Context, seed: int, T: int = 64, N: int = 4, time_limit: int = 25) -> dict:
    """A random-policy rollout with terminations and (short) truncations."""
    rng = np.random.default_rng(seed)
    hp = dict(_hp(ctx), policy_head_gain=1.0)
    policy, value = init_networks(hp, rng)
    env = VecCartPole(N, seed=seed, max_episode_steps=time_limit)
    ro = collect_rollout(env, env.reset(), policy, value, T, rng)
    assert ro["terminated"].any() and ro["truncated"].any(), "judge rollout lacks episode ends"
    return ro


def _logit_batch(seed: int, B: int = 64, scale: float = 1.5, A: int = NUM_ACTIONS):
    """Logits (B, A), actions (B,), advantages (B,) of both signs."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, scale, (B, A))
    actions = rng.integers(0, A, B)
    adv = rng.normal(0.0, 1.0, B)
    return logits, actions, adv


def _cases(ctx: Context, public: list, hidden_key: str) -> list[tuple[str, int]]:
    """(name, seed) of a question's cases: the public seeds, then (grading) the
    seeds of ``[hidden] hidden_key``, named without their seed."""
    cases = [(f"seed {s}", s) for s in public]
    if not ctx.public_only:
        cases += [(f"hidden {i + 1}", s) for i, s in enumerate(ctx.hidden[hidden_key])]
    return cases


def _pieces(ctx: Context) -> Pieces:
    return Pieces(ctx.call)


# ----------------------------------------------------------------------------- questions
def q1_distribution(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    # (name, seed, number of actions): CartPole's 2, then (hidden) other action counts
    cases = [(name, s, NUM_ACTIONS) for name, s in _cases(ctx, [1], "unit_seeds")]
    if not ctx.public_only:
        cases += [(f"{A} actions", 300 + A, A) for A in ctx.hidden["unit_actions"]]
    with card.part("categorical_log_prob()", 1):
        for name, s, A in cases:
            logits, actions, _ = _logit_batch(100 + s, A=A)
            ctx.expect(f"q1/logp/{name}", lambda: _pieces(ctx).log_prob(logits, actions),
                       rtol=p["unit_rtol"], atol=p["unit_atol"], label="categorical_log_prob()")
        extreme = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [0.0, 0.0], [30.0, -30.0]])
        acts = np.array([1, 1, 0, 1])
        ctx.expect("q1/logp/extreme", lambda: _pieces(ctx).log_prob(extreme, acts), rtol=1e-12,
                   atol=1e-12, oracle=("a_ppo.log_prob", extreme, acts),
                   label="categorical_log_prob() on logits of +-1000 (use log-sum-exp)")
    with card.part("categorical_entropy()", 1):
        for name, s, A in cases:
            logits, _, _ = _logit_batch(200 + s, A=A)
            with ctx.case(f"q1/entropy/{name}", "categorical_entropy()"):
                got = as_float_array("categorical_entropy()",
                                     ctx.call("categorical_entropy", logits), (logits.shape[0],))
            ctx.expect(f"q1/entropy/{name}", got, rtol=p["unit_rtol"], atol=p["unit_atol"],
                       label="categorical_entropy()")
        extreme = np.array([[1000.0, -1000.0], [0.0, 0.0]])
        ctx.check("q1/entropy/extreme", "categorical_entropy() on logits (1000, -1000) and (0, 0)",
                  lambda: ctx.call("categorical_entropy", extreme), np.array([0.0, np.log(2.0)]),
                  rtol=1e-12, atol=1e-12)
    return card.outcome()


def q2_gae(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    # (name, seed, T, N, time limit): the public rollout, then (hidden) more rollouts and
    # one of another shape
    cases = [(name, s, 64, 4, 25) for name, s in _cases(ctx, [5], "gae_seeds")]
    if not ctx.public_only:
        cases += [(f"hidden, T = {T}, N = {N}", s, T, N, limit)
                  for s, T, N, limit in ctx.hidden["gae_shapes"]]
    self_check = "self-check: GAE at lambda = 1 equals bootstrapped reward-to-go minus V-hat"
    with card.part(self_check, 1):
        for name, s, T, N, limit in cases:
            ro = _rollout(ctx, s, T, N, limit)
            label = (f"advantages at lambda = 1 (rollout {name}: {int(ro['terminated'].sum())} "
                     f"terminations, {int(ro['truncated'].sum())} truncations)")
            with ctx.case(f"q2/lambda1/{name}", label):
                adv, ret = _pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                            ro["terminated"], ro["truncated"], 0.99, 1.0)
            ctx.expect(f"q2/lambda1/{name}", adv, rtol=p["gae_rtol"], atol=1e-10, label=label,
                       oracle=("a_ppo.reward_to_go_minus_v", ro, 0.99))
            ctx.check(f"q2/lambda1/{name}", "returns = advantages + values[:T]", ret,
                      adv + ro["values"][:-1], rtol=p["gae_rtol"], atol=1e-10)
    with card.part("GAE for lambda in (0, 1)", 2, requires=self_check):
        for name, s, T, N, limit in cases:
            ro = _rollout(ctx, s, T, N, limit)
            for gamma, lam in ((0.99, 0.95), (0.9, 0.5)):
                label = f"compute_gae() at gamma = {gamma}, lambda = {lam}"
                key = f"q2/gae/{name}/{gamma}/{lam}"
                with ctx.case(key, label):
                    adv, ret = _pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                                ro["terminated"], ro["truncated"], gamma, lam)
                ctx.expect(key, adv, rtol=p["gae_rtol"], atol=1e-10, label=label)
                # the value targets away from lambda = 1, where Monte Carlo returns differ
                ctx.expect(f"{key}/returns", ret, rtol=p["gae_rtol"], atol=1e-10,
                           label=f"{label}: the returns (value targets)")
    return card.outcome()


def q3_ratio(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    off_policy = "policy_ratio() away from the old policy"
    with card.part(off_policy, 1):
        logits, actions, _ = _logit_batch(300)
        moved = logits + np.random.default_rng(301).normal(0, 0.5, logits.shape)
        old = ctx.oracle("q3/old", "a_ppo.log_prob", logits, actions)
        new = ctx.oracle("q3/new", "a_ppo.log_prob", moved, actions)
        with ctx.case("q3/ratio", "policy_ratio()"):
            got = as_float_array("policy_ratio()", ctx.call("policy_ratio", new, old), old.shape)
        ctx.expect("q3/ratio", got, rtol=1e-12, atol=0.0, label="policy_ratio()")
    with card.part("self-check: ratio is 1 on the first minibatch of the first epoch", 1,
                   requires=off_policy):
        for name, seed in _cases(ctx, p["bar_seeds"], "bar_seeds"):
            key = f"q3/first_minibatch/{name}"
            with ctx.case(key, "the ratio on the first minibatch of the first epoch"):
                logits, actions, idx, mb_logits = ctx.oracle(key, "a_ppo.first_minibatch", seed,
                                                             _hp(ctx))
                idx = idx.astype(np.int64)
                logp_old = _pieces(ctx).log_prob(logits, actions)[idx]
                new = _pieces(ctx).log_prob(mb_logits, actions[idx])
                ratio = as_float_array("policy_ratio()",
                                       ctx.call("policy_ratio", new, logp_old), new.shape)
                worst = float(np.abs(ratio - 1.0).max())
                if not worst <= p["ratio_tol"]:
                    raise Fail(f"{name}: max |ratio - 1| = {worst:.3g} on the first minibatch "
                               f"(tolerance {p['ratio_tol']}); old and new log-probs come from "
                               "the same network there")
    return card.outcome()


def _param_grad(params: list, cache, dlogits: np.ndarray) -> np.ndarray:
    return flatten(backward(params, cache, dlogits))


def _unit_batch(ctx: Context):
    """q4's judge data: a policy network, observations (B, 4), actions (B,),
    advantages (B,) of both signs, the logits at theta_old and their log-probs."""
    rng = np.random.default_rng(400)
    policy, _ = init_networks(dict(_hp(ctx), policy_head_gain=1.0), rng)
    obs = rng.normal(0.0, 0.5, (128, OBS_DIM))
    logits_old, cache = forward(policy, obs)
    actions = rng.integers(0, NUM_ACTIONS, 128)
    adv = rng.normal(0.0, 1.0, 128)
    logp_old = ctx.oracle("q4/logp_old", "a_ppo.log_prob", logits_old, actions)
    return policy, obs, actions, adv, logits_old, cache, logp_old


def q4_clipped_gradient(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    eps = _hp(ctx)["clip_eps"]
    policy, obs, actions, adv, logits_old, cache, logp_old = _unit_batch(ctx)
    self_check = "self-check: at theta = theta_old the clipped gradient is the policy gradient"
    with card.part(self_check, 1):
        _, dlogits = _pieces(ctx).clipped_loss(logits_old, actions, logp_old, adv, eps)
        plain = ctx.oracle("q4/plain", "a_ppo.policy_gradient_dlogits", logits_old, actions, adv)
        got, want = _param_grad(policy, cache, dlogits), _param_grad(policy, cache, plain)
        rel = np.linalg.norm(got - want) / np.linalg.norm(want)
        if not rel <= p["self_check_rtol"]:
            raise Fail(f"relative difference {rel:.3g} between the gradient (w.r.t. the network's "
                       f"{got.size} parameters) of your clipped loss and of the plain policy-"
                       f"gradient loss -mean(A log pi) at theta_old (tolerance "
                       f"{p['self_check_rtol']})")
    with card.part("away from theta_old: clipping for both advantage signs", 2,
                   requires=self_check):
        for name, s in _cases(ctx, [0], "clip_seeds"):
            moved = [{k: v + np.random.default_rng(410 + s).normal(0, 0.3, v.shape)
                      for k, v in layer.items()} for layer in policy]
            logits, moved_cache = forward(moved, obs)
            key = f"q4/clip/{name}"
            label = "clipped_policy_loss() away from theta_old"
            with ctx.case(key, label):
                loss, dlogits = _pieces(ctx).clipped_loss(logits, actions, logp_old, adv, eps)
            ctx.expect(f"{key}/loss", np.array(loss), rtol=p["unit_rtol"], atol=p["unit_atol"],
                       label=f"{label}: the loss")
            ctx.expect(f"{key}/grad", _param_grad(moved, moved_cache, dlogits), rtol=1e-8,
                       atol=1e-12, label=f"{label}: the gradient w.r.t. the network's parameters")
    with card.part("clipped_policy_loss() on both sides of every clip bound, for both "
                   "advantage signs and other clip widths", 1, requires=self_check):
        kink_eps = [("public", e) for e in p["kink_eps"]]
        if not ctx.public_only:
            kink_eps += [(f"hidden {i + 1}", e) for i, e in enumerate(ctx.hidden["kink_eps"])]
        for name, kink in kink_eps:
            key = f"q4/kink/{name}/{kink}"
            label = "clipped_policy_loss() with ratios next to 1 - eps and 1 + eps" + (
                f" (eps = {kink})" if name == "public" else "")
            logits, actions_k, adv_k, logp_old_k = _kink_batch(ctx, key, kink)
            with ctx.case(key, label):
                loss, dlogits = _pieces(ctx).clipped_loss(logits, actions_k, logp_old_k, adv_k,
                                                          kink)
            ctx.expect(f"{key}/loss", np.array(loss), rtol=p["unit_rtol"], atol=p["unit_atol"],
                       label=f"{label}: the loss")
            ctx.expect(f"{key}/dlogits", dlogits, rtol=p["unit_rtol"], atol=p["unit_atol"],
                       label=f"{label}: the gradient w.r.t. the logits")
    return card.outcome()


KINK_STEP = 1e-6          # relative distance of a designed ratio from a clip bound


def _kink_batch(ctx: Context, key: str, eps: float):
    """Logits (B, A), actions (B,), advantages (B,) and old log-probs (B,)
    designed so that the ratios sit just inside and just outside 1 - eps and
    1 + eps, at 1 and far out, each with a positive and a negative advantage."""
    rng = np.random.default_rng(int(eps * 1000) + 700)
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


def q5_losses(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    cases = _cases(ctx, [0], "loss_seeds")
    with card.part("value_loss(): loss and gradient", 1):
        for name, s in cases:
            rng = np.random.default_rng(500 + s)
            values, returns = rng.normal(0, 5, 96), rng.normal(0, 5, 96)
            with ctx.case(f"q5/value/{name}", "value_loss()"):
                loss, grad = _pieces(ctx).value_loss(values, returns)
            ctx.expect(f"q5/value/{name}/loss", np.array(loss), rtol=p["unit_rtol"],
                       atol=p["unit_atol"], label="value_loss(): the loss")
            ctx.expect(f"q5/value/{name}/grad", grad, rtol=p["unit_rtol"], atol=p["unit_atol"],
                       label="value_loss(): the gradient")
    with card.part("entropy_loss(): loss and gradient", 0.5):
        for name, s in cases:
            logits, _, _ = _logit_batch(510 + s, B=80)
            with ctx.case(f"q5/entropy/{name}", "entropy_loss()"):
                loss, grad = _pieces(ctx).entropy_loss(logits)
            ctx.expect(f"q5/entropy/{name}/loss", np.array(loss), rtol=p["unit_rtol"],
                       atol=p["unit_atol"], label="entropy_loss(): the loss")
            ctx.expect(f"q5/entropy/{name}/grad", grad, rtol=p["unit_rtol"],
                       atol=p["unit_atol"], label="entropy_loss(): the gradient")
    with card.part("normalise_advantages() over all elements of a (T, N) array", 0.5):
        rng = np.random.default_rng(520)
        adv = rng.normal(3.0, 2.0, (32, 4)) * np.array([1.0, 2.0, 0.5, 4.0])
        ctx.expect("q5/normalise", lambda: _pieces(ctx).normalise(adv), rtol=p["unit_rtol"],
                   atol=p["unit_atol"], label="normalise_advantages()")
    return card.outcome()


STATS = ("pg_loss", "v_loss", "ent_loss", "entropy", "approx_kl", "old_approx_kl", "clipfrac",
         "grad_norm")
SWITCHES = {            # q6's cases: hp overrides, each switch of minibatch_update on its own
    "defaults": {},
    "a later Adam step, an entropy bonus": {"ent_coef": 0.01},
    "no advantage normalisation": {"norm_adv": False},
    "no gradient clipping": {"max_grad_norm": None},
    "another clip width and value weight": {"clip_eps": 0.1, "vf_coef": 0.25},
    "clipped value loss": {"clip_vloss": True},
}


STEP_SLIPS = {          # q6's diagnosis: what a half-right step does, as the feedback names it
    "no_clip": "no gradient clipping",
    "clip_when_off": "gradients clipped at 0.5 although max_grad_norm is None",
    "per_network_clip": "each network's gradients clipped on their own (one norm per network, "
                        "not one joint norm)",
    "no_vf_coef": "the value loss not weighted by vf_coef",
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


def _diagnose_step(outcomes: dict, got: np.ndarray) -> str:
    """Which one slip's parameters the submission's updated parameters
    (``got``: both networks flattened, every FINGERPRINT_STRIDE-th entry) match."""
    if not outcomes:
        return ""
    exact = outcomes[""][0]
    named = [STEP_SLIPS[s] for s, out in outcomes.items()
             if s and not _close(out[0], exact) and _close(got, out[0])]
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
        "the two KL estimators swapped": want[[0, 1, 2, 3, 5, 4, 6, 7]],
        "the entropy's sign flipped": want[[0, 1, 3, 2, 4, 5, 6, 7]],
    }
    parts = []
    for i in wrong:
        hits = [what for what, alt in alternatives.items()
                if alt is not None and not _close(alt[i:i + 1], want[i:i + 1])
                and _close(got[i:i + 1], alt[i:i + 1])]
        parts.append(STATS[i] + (f" (matches {' / '.join(hits)})" if hits else ""))
    return "the statistics that differ: " + ", ".join(parts)


def _update_batch(ctx: Context, key: str, s: int, hp: dict):
    """Networks, a minibatch of judge data and two Adam states for case seed ``s``."""
    rng = np.random.default_rng(600 + s)
    policy, value = init_networks(hp, rng)
    ro = _rollout(ctx, 610 + s, T=64, N=8, time_limit=15)
    perm = rng.permutation(64 * 8)[:256]
    adv, ret = ctx.oracle(f"{key}/gae", "a_ppo.gae", ro, hp["gamma"], hp["gae_lambda"])
    logp = ctx.oracle(f"{key}/logp", "a_ppo.log_prob",
                      ro["logits"].reshape(-1, NUM_ACTIONS), ro["actions"].reshape(-1))
    batch = {"obs": ro["obs"].reshape(-1, OBS_DIM)[perm],
             "actions": ro["actions"].reshape(-1)[perm], "logp_old": logp[perm],
             "advantages": adv.reshape(-1)[perm], "returns": ret.reshape(-1)[perm],
             "values_old": ro["values"][:-1].reshape(-1)[perm] + rng.normal(0, 0.3, 256)}
    opts = [Adam(policy, lr=hp["lr"], eps=hp["adam_eps"]),
            Adam(value, lr=hp["lr"], eps=hp["adam_eps"])]
    if s % 2:              # a later step: non-zero moments, t > 0
        for o in opts:
            o.t = 7
            o.m = [np.full_like(a, 1e-3) for a in o.m]
            o.v = [np.full_like(a, 1e-5) for a in o.v]
    return policy, value, batch, opts


def q6_minibatch_update(ctx: Context) -> Outcome:
    card = Scorecard()
    hp = _hp(ctx)
    base = {k: hp[k] for k in ("clip_eps", "vf_coef", "ent_coef", "max_grad_norm", "norm_adv")}
    base["clip_vloss"] = False
    cases = [("defaults", 0, {})]
    if not ctx.public_only:
        cases += [(name, int(s), SWITCHES[name]) for name, s in ctx.hidden["update_cases"]]
    runs = {}                     # case name -> (the judge's step inputs, the student's output)
    slips: dict = {}              # case key -> the judge's slipped steps (once, if a case fails)

    def outcomes(key: str, step: tuple) -> dict:
        if key not in slips:
            slips[key] = _step_outcomes(ctx, key, step)
        return slips[key]

    params_ok = "minibatch_update(): the parameters after one step, with each switch"
    with card.part(params_ok, 2):
        for name, s, overrides in cases:
            key = f"q6/{name}"
            policy, value, batch, opts = _update_batch(ctx, key, s, hp)
            step = (policy, value, opts[0].state_dict(), opts[1].state_dict(), batch,
                    {**base, **overrides})
            with ctx.case(key, f"minibatch_update() ({name})"):
                out = ctx.call("minibatch_update_arrays", *step,
                               may_modify=(0, 1))        # the parameters change in place
                runs[name] = (step, out)
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
                                   label=f"minibatch_update() ({name}): the updated {net} "
                                         "parameters")
                except Fail as e:
                    if e.kind == "value":
                        fingerprint = np.concatenate([got["policy"], got["value"]])
                        card.note(f"diagnosis, minibatch_update() ({name}): " + _diagnose_step(
                            outcomes(key, step), fingerprint[::FINGERPRINT_STRIDE]))
                    raise
    with card.part("minibatch_update(): the statistics it returns (losses, entropy, KL "
                   "estimates, clip fraction, gradient norm before clipping)", 1,
                   requires=params_ok):
        for name, _, _ in cases:
            if name not in runs:
                break
            key = f"q6/{name}"
            step, out = runs[name]
            with ctx.case(f"{key}/stats", f"minibatch_update() statistics ({name})"):
                stats = out.get("stats") if isinstance(out, dict) else None
                if not isinstance(stats, dict) or not set(STATS) <= set(stats):
                    raise Fail(f"minibatch_update() must return a dict with {', '.join(STATS)}; "
                               f"got {describe_keys(stats)}", "shape")
                got = np.array([as_float_array(f"stats['{k}']", stats[k], ()) for k in STATS])
            try:
                ctx.expect(f"{key}/stats", got, rtol=1e-8, atol=1e-12,
                           label=f"minibatch_update() statistics ({name}), in the order "
                                 + ", ".join(STATS))
            except Fail as e:
                if e.kind == "value" and f"{key}/stats" in ctx.expected:
                    card.note(f"diagnosis, minibatch_update() statistics ({name}): "
                              + _diagnose_stats(outcomes(key, step), got,
                                                ctx.expected[f"{key}/stats"], step[5]))
                raise
    return card.outcome()


def describe_keys(stats) -> str:
    return f"keys {sorted(stats)}" if isinstance(stats, dict) else type(stats).__name__


def _trained_params(out, hp: dict, which: str = "policy_params") -> list:
    """The trained network ``which`` ("policy_params" or "value_params") in a
    student's ``train`` result, checked against the network ``hp`` describes
    (structure, shapes, finite)."""
    nets = dict(zip(("policy_params", "value_params"),
                    init_networks(hp, np.random.default_rng(0))))
    like = nets[which]
    params = out.get(which) if isinstance(out, dict) else None
    if not isinstance(params, list) or len(params) != len(like) or not all(
            isinstance(layer, dict) and {"W", "b"} <= set(layer) for layer in params):
        raise Fail(f"train() must return a dict whose '{which}' is the network's list of "
                   "{'W', 'b'} layers", "shape")
    return [{k: as_float_array(f"{which}[{i}]['{k}']", layer[k], like[i][k].shape)
             for k in ("W", "b")} for i, layer in enumerate(params)]


def q7_bar(ctx: Context) -> Outcome:
    """The bar. Grading: the judge's own PPO loop trains with the submission's
    pieces. The handout's preview: the student's own ``train``."""
    card, p = Scorecard(), ctx.params
    cases = _cases(ctx, p["bar_seeds"], "bar_seeds")
    ctx.nothing_to_record(*(f"q7/{name}" for name, _ in cases))
    medians = {}
    who = "your train()" if ctx.public_only else "the judge's training loop with your pieces"
    with card.part(f"the training runs complete ({who})", 0):
        for name, seed in cases:
            with ctx.case(f"q7/{name}", f"training run {name}"):
                if ctx.public_only:
                    out = ctx.call("train", seed, p["updates"], None, ctx.show_progress)
                    policy_params = _trained_params(out, _hp(ctx))
                    extra = ""
                else:
                    run = ctx.oracle_fn("ppo_loop.train")(Pieces(ctx.call), seed, _hp(ctx),
                                                          p["updates"],
                                                          show_progress=ctx.show_progress)
                    policy_params = run.policy_params
                    last = np.concatenate(run.episode_returns[-5:]) if run.episode_returns \
                        else np.zeros(0)
                    extra = (f"; training episodes in the last 5 updates: mean "
                             f"{np.mean(last) if len(last) else float('nan'):.1f}")
            returns = evaluate(policy_params, episodes=p["eval_episodes"],
                               seed=seed + p["eval_seed_offset"])
            medians[name] = float(np.median(returns))
            card.note(f"     {name}: median {medians[name]:.1f} over {p['eval_episodes']} "
                      f"sampled-action episodes (min {returns.min():.0f}, max "
                      f"{returns.max():.0f}){extra}")
    fractions = [next((f for above, f in p["tiers"] if medians.get(name, 0.0) > above), 0.0)
                 for name, _ in cases]
    card.measure("bar", p["bar"])
    if medians:
        card.measure("min_median", min(medians.values()))
    with card.part(f"median return > {p['bar']} on every seed", 7):
        if not medians:
            raise Fail("no training run finished")
        if min(fractions) < 1.0:
            earned = sum(fractions) / len(cases)
            raise Fail(f"medians {[round(medians.get(n, 0.0), 1) for n, _ in cases]}; "
                       f"partial credit {earned:.2f} of the bar by the tiers {p['tiers']}")
    outcome = card.outcome()
    if outcome.fraction < 1.0 and medians:
        outcome.fraction = sum(fractions) / len(cases)
    return outcome


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
        for seed in p["train_check_seeds"]:
            key = f"q8/seed {seed}"
            with ctx.case(key, "train() with a few small updates"):
                out = ctx.call("train", seed, updates, hp, False)
                got = flatten(_trained_params(out, hp) + _trained_params(out, hp, "value_params"))
                run = ctx.oracle_fn("ppo_loop.train")(Pieces(ctx.call), seed, hp, updates)
            ctx.check(key, "train(): the final policy and value parameters", got,
                      flatten(run.policy_params + run.value_params), rtol=p["train_rtol"],
                      atol=1e-10)
    return card.outcome()


QUESTIONS = {f.__name__: f for f in (q1_distribution, q2_gae, q3_ratio, q4_clipped_gradient,
                                     q5_losses, q6_minibatch_update, q7_bar, q8_train)}
