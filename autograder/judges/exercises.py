"""Judge of the section's exercises 1-5.

* Exercise 1 (per student): the judge draws its own parameters, prompts and
  responses of the tiny autoregressive model and checks the student's token
  scores and response score against its own finite differences of the
  model's log-probabilities, plus the zero mean of the score under pi.
* Exercise 3: the centred weight and the predicted factor (K - 1) / K are
  checked against the reference's answers and against the judge's exact
  enumeration of the expected update; the judge runs REINFORCE itself at
  K = 1 (must stay bit-identical) beside K >= 2 (must learn), with the
  student's weight, on seeds drawn from the student id.
* Exercise 4 (per student): the tilted optimum and the threshold beta for the
  judge's own (d, r_h); the expected threshold is found by bisection on the
  judge's tilted optimum, from the stated criterion.
* Exercises 2, 3 (leave-one-out), 5: choice keys, compared with the
  reference's keys stored at build time (never shown in feedback).
* Written answers (exercise 1's proof, exercise 5's missing component) are
  copied into the results as text under zero-point entries.
"""
from __future__ import annotations

import string
from typing import Callable

import numpy as np

from rlkit import autoregressive as ar
from rlkit.verifier import (EXACT_REWARD, NUM_PROMPTS, NUM_RESPONSES, SLOPPY_REWARD,
                            reference_logits, softmax_policy)

from . import ksweep
from ..judging import Context, Fail, Outcome, Scorecard, as_float_array, compare
from .grpo_math import exact_gradient, expected_group_update

RECORDED = ("ex2_terms", "ex3_prediction", "ex3_loo_key", "ex5_symbols")
"""Questions whose expected values are the reference's answers, recorded at build time.
The others are per-student: their judges compute the expected values themselves."""

MAX_WRITTEN = 20000     # characters of a written answer that reach the results


# ----------------------------------------------------------------------------- helpers
def _letters(n: int) -> str:
    return string.ascii_uppercase[:n]


def _key_part(ctx: Context, card: Scorecard, const: str, label: str, letters: str,
              weight: float = 1.0) -> None:
    """One choice key: a module-level string holding one letter, compared with
    the reference's letter (case-insensitive, surrounding blanks ignored).
    A wrong key's message names the part, never the right letter."""
    with card.part(label, weight):
        got = ctx.constant(const)
        span = f"{letters[0]}-{letters[-1]}"
        if got is None or (isinstance(got, str) and not got.strip()):
            raise Fail(f"no answer yet: set {const} to one of the letters {span}")
        if not isinstance(got, str):
            raise Fail(f"{const} must be a string holding one letter ({span}), "
                       f"got {type(got).__name__} {got!r}")
        key = got.strip().upper()
        if len(key) != 1 or key not in letters:
            raise Fail(f"{const} = {got[:40]!r} is not one of the letters {span}")
        try:
            ctx.expect(f"keys/{const}", np.array([float(ord(key))]), rtol=0.0, atol=0.0)
        except Fail:
            raise Fail(f"{label}: {const} = {key!r} is not the right choice") from None


def _written(ctx: Context, const: str, what: str) -> Outcome:
    """A zero-point entry that carries a written answer into results.json."""
    text = ctx.constant(const)
    if not isinstance(text, str) or not text.strip():
        return Outcome(0.0, [f"no written answer found: {const} is empty or not a string. "
                             f"{what} is graded by hand with the rubric, from {const}."])
    lines = [f"{what}: 0 points here, graded by hand with the rubric. Your {const} "
             f"({len(text)} characters):", text.strip()]
    if len(text) >= MAX_WRITTEN:
        lines.append(f"(cut at {MAX_WRITTEN} characters)")
    return Outcome(1.0, lines)


# ----------------------------------------------------------------------------- exercise 1
def _fd_jacobian(f: Callable[[np.ndarray], np.ndarray], theta: np.ndarray,
                 h: float) -> np.ndarray:
    """Fourth-order central differences of ``f``, which maps a stack of parameter
    vectors ``(S, D)`` to ``(S, ...)``: the Jacobian at ``theta``, ``(..., D)``.
    Error about h**4 / 30 times the fifth derivative plus 1e-16 |f| / h: near 1e-12 here."""
    D = theta.size
    steps = np.array([2.0, 1.0, -1.0, -2.0])
    thetas = theta[None, None, :] + h * steps[:, None, None] * np.eye(D)[None, :, :]  # (4, D, D)
    vals = f(thetas.reshape(4 * D, D))
    vals = vals.reshape((4, D) + vals.shape[1:])
    jac = (-vals[0] + 8 * vals[1] - 8 * vals[2] + vals[3]) / (12 * h)      # (D, ...)
    return np.moveaxis(jac, 0, -1)


def _ex1_instances(ctx: Context) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(label, theta (D,), x (B,), y (B, T)) drawn from the student's generator."""
    p = ctx.params
    rng = ctx.instance_rng("ex1")
    scale, peaked = p["ex1_scales"]
    theta = ar.init_params(rng, scale)
    x = rng.integers(0, ar.NUM_PROMPTS, p["ex1_batch"])
    out = [("sampled responses", theta, x, ar.sample(theta, x, rng))]
    every = ar.all_responses()
    n = every.shape[0]
    prompts = np.repeat(np.arange(ar.NUM_PROMPTS), n)
    out.append(("every response of every prompt", theta, prompts,
                np.tile(every, (ar.NUM_PROMPTS, 1))))
    if not ctx.public_only:
        theta2 = ar.init_params(rng, peaked)
        out.append(("hidden: every response, a peaked policy", theta2, prompts,
                    np.tile(every, (ar.NUM_PROMPTS, 1))))
        x3 = rng.integers(0, ar.NUM_PROMPTS, p["ex1_batch"])
        y3 = rng.integers(0, ar.VOCAB, (p["ex1_batch"], ar.LENGTH))
        out.append(("hidden: arbitrary responses, a peaked policy", theta2, x3, y3))
    return out


def ex1_token_scores(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    per_token = "token_scores(): every token's score matches finite differences of " \
                "log pi(y_t | x, y_<t)"
    summed = "the token-level sum over t of token_scores() matches finite differences of " \
             "log pi(y | x)"
    with card.part(per_token, 2):
        for label, theta, x, y in _ex1_instances(ctx):
            B, T = y.shape
            got = as_float_array(f"token_scores() on {label}", ctx.call("token_scores", theta,
                                 x, y), (B, T, ar.NUM_PARAMS))
            exp = _fd_jacobian(lambda th: ar.token_log_probs(th, x, y), theta, p["ex1_fd_step"])
            compare(f"token_scores() on {label} [response, token, parameter]", got, exp,
                    p["ex1_rtol"], p["ex1_atol"])
    with card.part(summed, 1):
        for label, theta, x, y in _ex1_instances(ctx):
            B, T = y.shape
            got = as_float_array(f"token_scores() on {label}", ctx.call("token_scores", theta,
                                 x, y), (B, T, ar.NUM_PARAMS)).sum(axis=1)
            exp = _fd_jacobian(lambda th: ar.log_prob(th, x, y), theta, p["ex1_fd_step"])
            compare(f"token_scores().sum(axis=1) on {label} [response, parameter]", got, exp,
                    p["ex1_rtol"], p["ex1_atol"])
    return card.outcome()


def ex1_response_score(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    nonzero = "response_score() matches finite differences of log pi(y | x)"
    scores = {}
    with card.part(nonzero, 2):
        for label, theta, x, y in _ex1_instances(ctx):
            got = as_float_array(f"response_score() on {label}",
                                 ctx.call("response_score", theta, x, y),
                                 (y.shape[0], ar.NUM_PARAMS))
            exp = _fd_jacobian(lambda th: ar.log_prob(th, x, y), theta, p["ex1_fd_step"])
            compare(f"response_score() on {label} [response, parameter]", got, exp,
                    p["ex1_rtol"], p["ex1_atol"])
            scores[label] = got
    with card.part("the score has mean zero under pi: sum_y pi(y | x) response_score(y) = 0 "
                   "for every prompt", 1, requires=nonzero):
        for label, theta, x, y in _ex1_instances(ctx):
            if not label.startswith(("every", "hidden: every")):
                continue
            got = scores.get(label)
            if got is None:
                got = as_float_array(f"response_score() on {label}",
                                     ctx.call("response_score", theta, x, y),
                                     (y.shape[0], ar.NUM_PARAMS))
            pi = ar.response_distribution(theta, np.arange(ar.NUM_PROMPTS)).reshape(-1)
            mean = (pi[:, None] * got).reshape(ar.NUM_PROMPTS, -1, ar.NUM_PARAMS).sum(axis=1)
            compare(f"E_y[response_score()] per prompt on {label} [prompt, parameter]", mean,
                    np.zeros_like(mean), 0.0, p["ex1_zero_atol"])
    return card.outcome()


def ex1_proof(ctx: Context) -> Outcome:
    return _written(ctx, "EX1_PROOF", "Exercise 1, the proof")


# ----------------------------------------------------------------------------- exercise 2
EX2_TERMS = (("DISCOUNTING", "discounting"), ("BOOTSTRAPPING", "bootstrapping"),
             ("TD_ERROR", "the TD error"), ("REPLAY", "replay"))


def ex2_terms(ctx: Context) -> Outcome:
    card = Scorecard()
    letters = _letters(ctx.params["ex2_choices"])
    for const, term in EX2_TERMS:
        _key_part(ctx, card, f"EX2_{const}_PROPERTY",
                  f"Exercise 2, {term}: the property that removes it", letters)
        _key_part(ctx, card, f"EX2_{const}_SETTING",
                  f"Exercise 2, {term}: the setting that brings it back", letters)
    return card.outcome()


# ----------------------------------------------------------------------------- exercise 3
def _ex3_reward_groups(ctx: Context) -> dict[str, np.ndarray]:
    cases = {"binary": np.array([[1., 0., 0., 1.], [0., 0., 0., 1.], [1., 1., 0., 1.]]),
             "real": np.random.default_rng(5).normal(0.3, 1.0, (3, 5))}
    if not ctx.public_only:
        rng = np.random.default_rng(20260315)
        cases["hidden_k2"] = np.array([[0.5, -1.5], [2.0, 1.0]])
        cases["hidden_wide"] = rng.normal(-1.0, 2.0, (4, 16))
        cases["hidden_binary"] = (rng.random((6, 3)) < 0.5).astype(np.float64)
        cases["hidden_binary"][:, 0] = 1.0
    return cases


def _ex3_zero_groups(ctx: Context) -> dict[str, np.ndarray]:
    """K = 1 and all-equal groups, dyadic so that the mean is exact."""
    cases = {"K = 1": np.array([[1.], [0.], [0.75]]),
             "all equal": np.array([[1., 1., 1.], [0.25, 0.25, 0.25]])}
    if not ctx.public_only:
        cases["K = 1 (hidden)"] = np.array([[-2.0], [0.5], [3.0], [1.0]])
    return cases


def _weight_fn(ctx: Context) -> Callable[[np.ndarray], np.ndarray]:
    def weight(r: np.ndarray) -> np.ndarray:
        return as_float_array(f"group_mean_centred_weight() on rewards of shape {r.shape}",
                              ctx.call("group_mean_centred_weight", r), r.shape)
    return weight


def ex3_prediction(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    fn = "group_mean_centred_weight"
    weights_ok = f"{fn}() on groups with different rewards"
    with card.part(weights_ok, 1):
        for name, r in _ex3_reward_groups(ctx).items():
            ctx.expect(f"ex3/{name}", ctx.call(fn, r), rtol=p["ex3_weight_rtol"],
                       atol=p["ex3_weight_atol"])
    with card.part(f"{fn}() gives zeros for K = 1 and for all-equal groups", 0.5,
                   requires=weights_ok):
        for name, r in _ex3_zero_groups(ctx).items():
            compare(f"{fn}() on {name} rewards {r.tolist()}", ctx.call(fn, r),
                    np.zeros_like(r), 0.0, p["ex3_weight_atol"])
    factor_ok = "shrinkage_factor(K) for K = 1 .. 8" + ("" if ctx.public_only else
                                                        " and larger K (hidden)")
    with card.part(factor_ok, 1):
        ks = np.array(p["ex3_factor_ks"], dtype=np.int64)
        got = as_float_array("shrinkage_factor(K)", ctx.call("shrinkage_factor", ks), ks.shape)
        ctx.expect("ex3/factor", got, rtol=1e-12, atol=1e-15)
        if not ctx.public_only:
            big = np.array(p["ex3_hidden_factor_ks"], dtype=np.int64)
            ctx.expect("ex3/hidden_factor", ctx.call("shrinkage_factor", big),
                       rtol=1e-12, atol=1e-15)
    with card.part("your factor is what exact enumeration of every group gives for your "
                   f"centred weight: E[update] = factor(K) x gradient, K = "
                   f"{', '.join(map(str, p['ex3_enum_ks']))}", 1, requires=factor_ok):
        ks = np.array(p["ex3_enum_ks"], dtype=np.int64)
        factor = as_float_array("shrinkage_factor(K)", ctx.call("shrinkage_factor", ks),
                                ks.shape)
        thetas = {"the reference policy": reference_logits(),
                  "a random policy": np.random.default_rng(11).normal(
                      0.0, 1.0, (NUM_PROMPTS, NUM_RESPONSES))}
        for tname, theta in thetas.items():
            pi = softmax_policy(theta)
            g = exact_gradient(pi, EXACT_REWARD)
            for K, f in zip(ks, factor):
                u = expected_group_update(pi, EXACT_REWARD, int(K), _weight_fn(ctx))
                compare(f"exact E[update] with your weight at K = {K} on {tname}, vs "
                        f"shrinkage_factor({K}) = {f:.6g} x the exact gradient", u, f * g,
                        p["ex3_enum_rtol"], p["ex3_enum_atol"])
    return card.outcome()


def ex3_k1_run(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    n = p["ex3_public_seeds"] if ctx.public_only else p["ex3_hidden_seeds"]
    seeds = [int(s) for s in ctx.instance_rng("ex3_run").integers(0, 2**31 - 1, n)]
    learn_ks, budget = p["ex3_learn_ks"], p["ex3_budget"]
    runs = ksweep.run(ctx, card, _weight_fn(ctx), seeds, sorted(set([1] + list(learn_ks))),
                      lambda K: budget // K)
    ksweep.judge(card, runs, seeds, learn_ks, p["ex3_bar"], learn_points=2, k1_points=1,
                 why_zero="the centred weight of a group of one is exactly zero")
    return card.outcome()


def ex3_loo_key(ctx: Context) -> Outcome:
    card = Scorecard()
    _key_part(ctx, card, "EX3_LOO_K1", "Exercise 3, why leave-one-out is undefined at K = 1",
              _letters(ctx.params["ex3_loo_choices"]))
    return card.outcome()


# ----------------------------------------------------------------------------- exercise 4
def _log_tilted(ref_logits: np.ndarray, rewards: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """log pi*, pi* proportional to softmax(ref_logits) * exp(rewards / beta) along the
    last axis; ``beta`` broadcasts against the leading axes."""
    z = ref_logits + rewards / np.asarray(beta)[..., None]
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _tilted(ref_logits: np.ndarray, rewards: np.ndarray, beta: np.ndarray) -> np.ndarray:
    return np.exp(_log_tilted(ref_logits, rewards, beta))


def _threshold_by_bisection(d: np.ndarray, r_h: np.ndarray) -> np.ndarray:
    """The beta at which the hedge's log-odds against an ordinary candidate
    under the tilted optimum reach zero, found by bisection (in log beta) on
    one prompt row: 8 ordinary candidates at reference logit 0 and reward 0,
    the hedge at reference logit -d and reward r_h. Log-odds decrease with beta."""
    n_ordinary = NUM_RESPONSES - 1
    ref = np.concatenate([np.zeros((d.size, n_ordinary)), -d[:, None]], axis=1)
    rew = np.concatenate([np.zeros((d.size, n_ordinary)), r_h[:, None]], axis=1)
    lo, hi = np.log(np.full(d.shape, 1e-6)), np.log(np.full(d.shape, 1e6))
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        log_pi = _log_tilted(ref, rew, np.exp(mid))
        above = log_pi[:, -1] - log_pi[:, 0] > 0          # hedge still ahead: beta too small
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.exp(0.5 * (lo + hi))


def _ex4_pairs(ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    p = ctx.params
    rng = ctx.instance_rng("ex4")
    n = p["ex4_public_pairs"] + (0 if ctx.public_only else p["ex4_hidden_pairs"])
    d = rng.uniform(*p["ex4_d_range"], n)
    r_h = rng.uniform(*p["ex4_rh_range"], n)
    if not ctx.public_only:   # the corners of the range too
        (d0, d1), (r0, r1) = p["ex4_d_range"], p["ex4_rh_range"]
        d = np.concatenate([d, [d0, d0, d1, d1]])
        r_h = np.concatenate([r_h, [r0, r1, r0, r1]])
    return np.concatenate([[4.0], d]), np.concatenate([[1.0], r_h])


def ex4_tilted(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    cases = [("the section's loophole at beta = 0.25", reference_logits(), SLOPPY_REWARD.copy(),
              0.25)]
    rng = ctx.instance_rng("ex4_tilted")
    for i in range(1 if ctx.public_only else 4):
        beta = float(np.exp(rng.uniform(*np.log(p["ex4_beta_range"]))))
        cases.append((f"random logits and rewards, beta = {beta:.4g}",
                      rng.normal(0.0, 2.0, (NUM_PROMPTS, NUM_RESPONSES)),
                      rng.uniform(0.0, 3.0, (NUM_PROMPTS, NUM_RESPONSES)),
                      beta))
    with card.part("tilted_policy() is pi_ref * exp(r / beta), normalised per prompt", 1):
        for label, ref, rew, beta in cases:
            got = ctx.call("tilted_policy", ref, rew, beta)
            compare(f"tilted_policy() on {label} [prompt, response]", got,
                    _tilted(ref, rew, np.full(ref.shape[0], beta)), p["ex4_tilt_rtol"],
                    p["ex4_tilt_atol"])
    return card.outcome()


def ex4_threshold(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    d, r_h = _ex4_pairs(ctx)
    with card.part("exploit_threshold(d, r_h): the section's numbers (d = 4, r_h = 1) and "
                   f"{d.size - 1} (d, r_h) pairs of your instance", 1):
        got = ctx.call("exploit_threshold", d, r_h)
        exp = _threshold_by_bisection(d, r_h)
        got = as_float_array("exploit_threshold(d, r_h)", got, d.shape)
        bad = np.abs(got - exp) > p["ex4_rtol"] * np.abs(exp)
        if bad.any():
            i = int(np.argmax(bad))
            raise Fail(f"exploit_threshold(): {int(bad.sum())} of {d.size} pairs off; e.g. "
                       f"d = {d[i]:.6g}, r_h = {r_h[i]:.6g}: expected {exp[i]:.10g}, got "
                       f"{got[i]:.10g} (relative tolerance {p['ex4_rtol']:g})")
    return card.outcome()


# ----------------------------------------------------------------------------- exercise 5
EX5_SYMBOLS = (("Q_AND_O", "q and o_i (a prompt and its sampled outputs)"),
               ("P_Q", "P(Q), the distribution the questions are drawn from"),
               ("G", "G, the number of outputs sampled per question"),
               ("PI_THETA", "pi_theta, the policy being trained"),
               ("RATIO", "the ratio pi_theta / pi_theta_old"),
               ("EPSILON", "epsilon inside clip(., 1 - epsilon, 1 + epsilon)"),
               ("BETA", "beta, the coefficient of the KL term"),
               ("PI_REF", "pi_ref inside the KL term"))


def ex5_symbols(ctx: Context) -> Outcome:
    card = Scorecard()
    letters = _letters(ctx.params["ex5_choices"])
    for const, symbol in EX5_SYMBOLS:
        _key_part(ctx, card, f"EX5_{const}", f"Exercise 5, {symbol}", letters)
    return card.outcome()


def ex5_missing_component(ctx: Context) -> Outcome:
    return _written(ctx, "EX5_MISSING_COMPONENT",
                    "Exercise 5, the component not built in these chapters")


QUESTIONS = {f.__name__: f for f in (ex1_token_scores, ex1_response_score, ex1_proof,
                                     ex2_terms, ex3_prediction, ex3_k1_run, ex3_loo_key,
                                     ex4_tilted, ex4_threshold, ex5_symbols,
                                     ex5_missing_component)}
