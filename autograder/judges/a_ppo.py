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

from ..judging import Context, Fail, Outcome, Scorecard, as_float_array, compare
from . import ppo_loop

RECORDED = ("q1_distribution", "q2_gae", "q3_ratio", "q4_clipped_gradient", "q5_losses",
            "q6_minibatch_update")


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


def _logit_batch(seed: int, B: int = 64, scale: float = 1.5):
    """Logits (B, A), actions (B,), advantages (B,) of both signs."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, scale, (B, NUM_ACTIONS))
    actions = rng.integers(0, NUM_ACTIONS, B)
    adv = rng.normal(0.0, 1.0, B)
    return logits, actions, adv


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    m = logits.max(axis=1, keepdims=True)
    return logits - m - np.log(np.exp(logits - m).sum(axis=1, keepdims=True))


def _pieces(ctx: Context) -> ppo_loop.Pieces:
    return ppo_loop.Pieces(ctx.call)


# ----------------------------------------------------------------------------- questions
def q1_distribution(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    seeds = [1] if ctx.public_only else [1, 2, 3]
    with card.part("categorical_log_prob()", 1):
        for s in seeds:
            logits, actions, _ = _logit_batch(100 + s)
            ctx.expect(f"q1/{'' if s == 1 else 'hidden_'}logp_{s}",
                       _pieces(ctx).log_prob(logits, actions), rtol=p["unit_rtol"],
                       atol=p["unit_atol"])
        extreme = np.array([[1000.0, -1000.0], [-1000.0, 1000.0], [0.0, 0.0], [30.0, -30.0]])
        acts = np.array([1, 1, 0, 1])
        compare("categorical_log_prob() on logits of +-1000 (use log-sum-exp)",
                _pieces(ctx).log_prob(extreme, acts), _log_softmax(extreme)[np.arange(4), acts],
                1e-12, 1e-12)
    with card.part("categorical_entropy()", 1):
        for s in seeds:
            logits, _, _ = _logit_batch(200 + s)
            got = as_float_array("categorical_entropy()", ctx.call("categorical_entropy", logits),
                                 (logits.shape[0],))
            ctx.expect(f"q1/{'' if s == 1 else 'hidden_'}entropy_{s}", got,
                       rtol=p["unit_rtol"], atol=p["unit_atol"])
        extreme = np.array([[1000.0, -1000.0], [0.0, 0.0]])
        compare("categorical_entropy() on logits (1000, -1000) and (0, 0)",
                ctx.call("categorical_entropy", extreme), np.array([0.0, np.log(2.0)]),
                1e-12, 1e-12)
    return card.outcome()


def reward_to_go_minus_v(ro: dict, gamma: float) -> np.ndarray:
    """Brute force: discounted reward-to-go, bootstrapped with V(final obs) at
    truncations and with values[T] where the data stops, minus V-hat."""
    rewards, values, final_values = ro["rewards"], ro["values"], ro["final_values"]
    T, N = rewards.shape
    out = np.zeros((T, N))
    for n in range(N):
        G = values[T, n]
        for t in range(T - 1, -1, -1):
            if ro["terminated"][t, n]:
                G = 0.0
            elif ro["truncated"][t, n]:
                G = final_values[t, n]
            G = rewards[t, n] + gamma * G
            out[t, n] = G - values[t, n]
    return out


def q2_gae(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    seeds = [5] if ctx.public_only else [5, 6]
    self_check = "self-check: GAE at lambda = 1 equals bootstrapped reward-to-go minus V-hat"
    with card.part(self_check, 1):
        for s in seeds:
            ro = _rollout(ctx, s)
            adv, ret = _pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                        ro["terminated"], ro["truncated"], 0.99, 1.0)
            compare(f"advantages at lambda = 1 (rollout {s}: {int(ro['terminated'].sum())} "
                    f"terminations, {int(ro['truncated'].sum())} truncations)", adv,
                    reward_to_go_minus_v(ro, 0.99), p["gae_rtol"], 1e-10)
            compare("returns = advantages + values[:T]", ret, adv + ro["values"][:-1],
                    p["gae_rtol"], 1e-10)
    with card.part("GAE for lambda in (0, 1)", 2, requires=self_check):
        for s in seeds:
            ro = _rollout(ctx, s)
            for gamma, lam in ((0.99, 0.95), (0.9, 0.5)):
                adv, _ = _pieces(ctx).gae(ro["rewards"], ro["values"], ro["final_values"],
                                          ro["terminated"], ro["truncated"], gamma, lam)
                tag = "" if s == 5 else "hidden_"
                ctx.expect(f"q2/{tag}gae_{s}_{gamma}_{lam}", adv, rtol=p["gae_rtol"], atol=1e-10)
    return card.outcome()


def q3_ratio(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    off_policy = "policy_ratio() away from the old policy"
    with card.part(off_policy, 1):
        logits, actions, _ = _logit_batch(300)
        old = _log_softmax(logits)[np.arange(len(actions)), actions]
        new = _log_softmax(logits + np.random.default_rng(301).normal(0, 0.5, logits.shape))[
            np.arange(len(actions)), actions]
        got = as_float_array("policy_ratio()", ctx.call("policy_ratio", new, old), old.shape)
        ctx.expect("q3/ratio", got, rtol=1e-12, atol=0.0)
    with card.part("self-check: ratio is 1 on the first minibatch of the first epoch", 1,
                   requires=off_policy):
        for seed in ctx.params["preview_seeds" if ctx.public_only else "grading_seeds"]:
            run = ppo_loop.train(_pieces(ctx), seed, _hp(ctx), ctx.params["updates"],
                                 first_minibatch_only=True)
            mb = run.first_minibatch
            new = _pieces(ctx).log_prob(mb["logits"], mb["actions"])
            ratio = as_float_array("policy_ratio()", ctx.call("policy_ratio", new, mb["logp_old"]),
                                   new.shape)
            worst = float(np.abs(ratio - 1.0).max())
            if worst > p["ratio_tol"]:
                raise Fail(f"seed {seed}: max |ratio - 1| = {worst:.3g} on the first minibatch "
                           f"(tolerance {p['ratio_tol']}); old and new log-probs come from the "
                           "same network there")
    return card.outcome()


def _param_grad(params: list, cache, dlogits: np.ndarray) -> np.ndarray:
    return flatten(backward(params, cache, dlogits))


def q4_clipped_gradient(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    eps = _hp(ctx)["clip_eps"]
    rng = np.random.default_rng(400)
    policy, _ = init_networks(dict(_hp(ctx), policy_head_gain=1.0), rng)
    obs = rng.normal(0.0, 0.5, (128, OBS_DIM))
    logits_old, cache = forward(policy, obs)
    actions = rng.integers(0, NUM_ACTIONS, 128)
    adv = rng.normal(0.0, 1.0, 128)
    logp_old = _log_softmax(logits_old)[np.arange(128), actions]
    self_check = "self-check: at theta = theta_old the clipped gradient is the policy gradient"
    with card.part(self_check, 1):
        _, dlogits = _pieces(ctx).clipped_loss(logits_old, actions, logp_old, adv, eps)
        onehot = np.eye(NUM_ACTIONS)[actions]
        plain = -(adv / len(adv))[:, None] * (onehot - np.exp(_log_softmax(logits_old)))
        got, want = _param_grad(policy, cache, dlogits), _param_grad(policy, cache, plain)
        rel = np.linalg.norm(got - want) / np.linalg.norm(want)
        if not rel <= p["self_check_rtol"]:
            raise Fail(f"relative difference {rel:.3g} between the gradient (w.r.t. the network's "
                       f"{got.size} parameters) of your clipped loss and of the plain policy-"
                       f"gradient loss -mean(A log pi) at theta_old (tolerance "
                       f"{p['self_check_rtol']})")
    with card.part("away from theta_old: clipping for both advantage signs", 2,
                   requires=self_check):
        seeds = [0] if ctx.public_only else [0, 1, 2]
        for s in seeds:
            moved = [{k: v + np.random.default_rng(410 + s).normal(0, 0.3, v.shape)
                      for k, v in layer.items()} for layer in policy]
            logits, moved_cache = forward(moved, obs)
            rho = np.exp(_log_softmax(logits)[np.arange(128), actions] - logp_old)
            regions = [(adv > 0) & (rho > 1 + eps), (adv > 0) & (rho < 1 + eps),
                       (adv < 0) & (rho < 1 - eps), (adv < 0) & (rho > 1 - eps)]
            assert all(r.any() for r in regions), "judge batch does not cover every clip region"
            loss, dlogits = _pieces(ctx).clipped_loss(logits, actions, logp_old, adv, eps)
            tag = "" if s == 0 else "hidden_"
            ctx.expect(f"q4/{tag}loss_{s}", np.array(loss), rtol=p["unit_rtol"],
                       atol=p["unit_atol"])
            ctx.expect(f"q4/{tag}grad_{s}", _param_grad(moved, moved_cache, dlogits),
                       rtol=1e-8, atol=1e-12)
    return card.outcome()


def q5_losses(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    cases = [(""), ("hidden_")][:1 if ctx.public_only else 2]
    with card.part("value_loss(): loss and gradient", 1):
        for k, tag in enumerate(cases):
            rng = np.random.default_rng(500 + k)
            values, returns = rng.normal(0, 5, 96), rng.normal(0, 5, 96)
            loss, grad = _pieces(ctx).value_loss(values, returns)
            ctx.expect(f"q5/{tag}vloss", np.array(loss), rtol=p["unit_rtol"], atol=p["unit_atol"])
            ctx.expect(f"q5/{tag}vgrad", grad, rtol=p["unit_rtol"], atol=p["unit_atol"])
    with card.part("entropy_loss(): loss and gradient", 0.5):
        for k, tag in enumerate(cases):
            logits, _, _ = _logit_batch(510 + k, B=80)
            loss, grad = _pieces(ctx).entropy_loss(logits)
            ctx.expect(f"q5/{tag}eloss", np.array(loss), rtol=p["unit_rtol"], atol=p["unit_atol"])
            ctx.expect(f"q5/{tag}egrad", grad, rtol=p["unit_rtol"], atol=p["unit_atol"])
    with card.part("normalise_advantages() over all elements of a (T, N) array", 0.5):
        rng = np.random.default_rng(520)
        adv = rng.normal(3.0, 2.0, (32, 4)) * np.array([1.0, 2.0, 0.5, 4.0])
        ctx.expect("q5/normalise", _pieces(ctx).normalise(adv), rtol=p["unit_rtol"],
                   atol=p["unit_atol"])
    return card.outcome()


def q6_minibatch_update(ctx: Context) -> Outcome:
    card = Scorecard()
    hp = _hp(ctx)
    mb_hp = {k: hp[k] for k in ("clip_eps", "vf_coef", "ent_coef", "max_grad_norm", "norm_adv")}
    with card.part("minibatch_update() from given parameters and Adam state", 1):
        for s in (0, 1):
            rng = np.random.default_rng(600 + s)
            policy, value = init_networks(hp, rng)
            ro = _rollout(ctx, 610 + s, T=64, N=8, time_limit=15)
            perm = rng.permutation(64 * 8)[:256]
            adv, ret = _reference_gae(ro, hp)
            batch = {"obs": ro["obs"].reshape(-1, OBS_DIM)[perm],
                     "actions": ro["actions"].reshape(-1)[perm],
                     "logp_old": _log_softmax(ro["logits"].reshape(-1, NUM_ACTIONS))[
                         np.arange(512), ro["actions"].reshape(-1)][perm],
                     "advantages": adv.reshape(-1)[perm], "returns": ret.reshape(-1)[perm]}
            opts = [Adam(policy, lr=hp["lr"], eps=hp["adam_eps"]),
                    Adam(value, lr=hp["lr"], eps=hp["adam_eps"])]
            if s == 1:             # a later step: non-zero moments, t > 0
                for o in opts:
                    o.t = 7
                    o.m = [np.full_like(a, 1e-3) for a in o.m]
                    o.v = [np.full_like(a, 1e-5) for a in o.v]
            hp_s = dict(mb_hp, ent_coef=0.01 if s == 1 else mb_hp["ent_coef"])
            out = ctx.call("minibatch_update_arrays", policy, value, opts[0].state_dict(),
                           opts[1].state_dict(), batch, hp_s)
            if not isinstance(out, dict) or not {"policy_params", "value_params"} <= set(out):
                raise Fail("minibatch_update_arrays() must return the dict it builds; do not "
                           "change that given function")
            try:
                new_policy = flatten(out["policy_params"])
                new_value = flatten(out["value_params"])
            except (KeyError, TypeError, IndexError) as e:
                raise Fail(f"updated parameters have the wrong structure ({e})") from None
            for name, got, like in (("policy", new_policy, policy), ("value", new_value, value)):
                got = as_float_array(f"updated {name} parameters", got, flatten(like).shape)
                if np.array_equal(got, flatten(like)):
                    raise Fail(f"the {name} parameters did not change")
                tag = "" if s == 0 else "hidden_"
                ctx.expect(f"q6/{tag}{name}_{s}", got, rtol=1e-9, atol=1e-12)
    return card.outcome()


def _reference_gae(ro: dict, hp: dict):
    """Judge-side GAE for building q6's batch (inputs only, never an answer)."""
    T = ro["rewards"].shape[0]
    next_v = np.where(ro["terminated"], 0.0,
                      np.where(ro["truncated"], ro["final_values"], ro["values"][1:]))
    delta = ro["rewards"] + hp["gamma"] * next_v - ro["values"][:-1]
    carry = hp["gamma"] * hp["gae_lambda"] * ~(ro["terminated"] | ro["truncated"])
    adv, running = np.zeros_like(delta), np.zeros(delta.shape[1])
    for t in range(T - 1, -1, -1):
        running = delta[t] + carry[t] * running
        adv[t] = running
    return adv, adv + ro["values"][:-1]


def q7_bar(ctx: Context) -> Outcome:
    card, p = Scorecard(), ctx.params
    seeds = p["preview_seeds"] if ctx.public_only else p["grading_seeds"]
    medians = {}
    with card.part("the judge's training runs complete with your pieces", 0):
        for seed in seeds:
            run = ppo_loop.train(_pieces(ctx), seed, _hp(ctx), p["updates"],
                                 show_progress=ctx.show_progress)
            returns = evaluate(run.policy_params, episodes=p["eval_episodes"],
                               seed=seed + p["eval_seed_offset"])
            medians[seed] = float(np.median(returns))
            last = np.concatenate(run.episode_returns[-5:]) if run.episode_returns else []
            card.note(f"     seed {seed}: median {medians[seed]:.1f} over {p['eval_episodes']} "
                      f"sampled-action episodes (min {returns.min():.0f}, max {returns.max():.0f});"
                      f" training episodes in the last 5 updates: mean "
                      f"{np.mean(last) if len(last) else float('nan'):.1f}")
    fractions = []
    for seed in seeds:
        if seed not in medians:
            fractions.append(0.0)
            continue
        frac = next((f for above, f in p["tiers"] if medians[seed] > above), 0.0)
        fractions.append(frac)
    with card.part(f"median return > {p['bar']} on every seed", 7):
        if not medians:
            raise Fail("no training run finished")
        if min(fractions) < 1.0:
            earned = sum(fractions) / len(seeds)
            raise Fail(f"medians {[round(medians.get(s, 0.0), 1) for s in seeds]}; "
                       f"partial credit {earned:.2f} of the bar by the tiers {p['tiers']}")
    outcome = card.outcome()
    if outcome.fraction < 1.0 and medians:
        outcome.fraction = sum(fractions) / len(seeds)
    return outcome


QUESTIONS = {f.__name__: f for f in (q1_distribution, q2_gae, q3_ratio, q4_clipped_gradient,
                                     q5_losses, q6_minibatch_update, q7_bar)}
