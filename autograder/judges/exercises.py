"""Judge of the section's exercises 1-5.

Public cases are one fixed instance, the same for everyone (the handout checks
them with values recorded at ``make dist``); on Gradescope each student also
gets a hidden instance of their own (``ctx.instance_rng``, salted in
``[hidden]``), checked against the oracles (``autograder.oracles.exercises``).

* Exercise 1: the judge draws parameters, prompts and responses of the tiny
  autoregressive model and checks the student's token scores and response
  score against finite differences of the model's log-probabilities, plus
  the zero mean of the score under pi.
* Exercise 3: the centred weight and the predicted factor (K - 1) / K are
  checked against the reference's answers and (Gradescope) against exact
  enumeration of the expected update; the judge runs REINFORCE itself at
  K = 1 (must stay bit-identical) beside K >= 2 (must learn), with the
  student's weight.
* Exercise 4: the tilted optimum and the threshold beta for (d, r_h) pairs;
  the expected threshold is found by bisection on the tilted optimum, from
  the stated criterion.
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
from ..grading.judging import Context, Fail, Outcome, Scorecard, as_float_array

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
def _ex1_instances(ctx: Context) -> list[tuple[str, str, np.ndarray, np.ndarray, np.ndarray]]:
    """(key, label, theta (D,), x (B,), y (B, T)): the public instance, then
    (grading) the student's own hidden instance."""
    p = ctx.params
    scale, peaked = p["ex1_scales"]
    every = ar.all_responses()
    prompts = np.repeat(np.arange(ar.NUM_PROMPTS), every.shape[0])
    responses = np.tile(every, (ar.NUM_PROMPTS, 1))
    out = []
    rng = ctx.public_rng("ex1")
    theta = ar.init_params(rng, scale)
    x = rng.integers(0, ar.NUM_PROMPTS, p["ex1_batch"])
    out.append(("ex1/sampled", "sampled responses", theta, x, ar.sample(theta, x, rng)))
    out.append(("ex1/every", "every response of every prompt", theta, prompts, responses))
    if not ctx.public_only:
        rng = ctx.instance_rng("ex1")
        theta2 = ar.init_params(rng, peaked)
        x3 = rng.integers(0, ar.NUM_PROMPTS, p["ex1_batch"])
        y3 = rng.integers(0, ar.VOCAB, (p["ex1_batch"], ar.LENGTH))
        out.append((ctx.instance_key("ex1/every"), "every response, your instance (hidden)",
                    theta2, prompts, responses))
        out.append((ctx.instance_key("ex1/arbitrary"),
                    "arbitrary responses, your instance (hidden)", theta2, x3, y3))
        out.append((ctx.instance_key("ex1/single"), "a single response (B = 1), your instance "
                    "(hidden)", theta2, x3[:1], y3[:1]))
    return out


def _ask(ctx: Context, fn: str, label: str, theta, x, y, shape: tuple) -> np.ndarray:
    """The submission's ``fn(theta, x, y)``, a finite float array of ``shape``."""
    return as_float_array(f"{fn}() on {label}", ctx.call(fn, theta, x, y), shape)


def ex1_token_scores(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    per_token = "token_scores(): every token's score matches finite differences of " \
                "log pi(y_t | x, y_<t)"
    summed = "the token-level sum over t of token_scores() matches finite differences of " \
             "log pi(y | x)"
    scores = {}
    with card.part(per_token, 2):
        for key, label, theta, x, y in _ex1_instances(ctx):
            B, T = y.shape
            name = f"token_scores() on {label} [response, token, parameter]"
            with ctx.case(f"{key}/token", name):
                scores[key] = got = _ask(ctx, "token_scores", label, theta, x, y,
                                         (B, T, ar.NUM_PARAMS))
            ctx.expect(f"{key}/token", got, rtol=p["ex1_rtol"], atol=p["ex1_atol"], label=name,
                       oracle=("exercises.fd_token_log_probs", theta, x, y, p["ex1_fd_step"]))
    with card.part(summed, 1):
        for key, label, theta, x, y in _ex1_instances(ctx):
            B, T = y.shape
            name = f"token_scores().sum(axis=1) on {label} [response, parameter]"
            with ctx.case(f"{key}/response", name):
                got = scores[key] if key in scores else \
                    _ask(ctx, "token_scores", label, theta, x, y, (B, T, ar.NUM_PARAMS))
            ctx.expect(f"{key}/response", got.sum(axis=1), rtol=p["ex1_rtol"],
                       atol=p["ex1_atol"], label=name,
                       oracle=("exercises.fd_log_prob", theta, x, y, p["ex1_fd_step"]))
    return card.outcome()


def ex1_response_score(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    nonzero = "response_score() matches finite differences of log pi(y | x)"
    scores = {}
    with card.part(nonzero, 2):
        for key, label, theta, x, y in _ex1_instances(ctx):
            name = f"response_score() on {label} [response, parameter]"
            with ctx.case(f"{key}/response", name):
                scores[key] = got = _ask(ctx, "response_score", label, theta, x, y,
                                         (y.shape[0], ar.NUM_PARAMS))
            ctx.expect(f"{key}/response", got, rtol=p["ex1_rtol"], atol=p["ex1_atol"],
                       label=name,
                       oracle=("exercises.fd_log_prob", theta, x, y, p["ex1_fd_step"]))
    with card.part("the score has mean zero under pi: sum_y pi(y | x) response_score(y) = 0 "
                   "for every prompt", 1, requires=nonzero):
        for key, label, theta, x, y in _ex1_instances(ctx):
            if not key.startswith("ex1/every"):
                continue
            name = f"E_y[response_score()] per prompt on {label} [prompt, parameter]"
            with ctx.case(f"{key}/zero_mean", name):
                got = scores[key] if key in scores else \
                    _ask(ctx, "response_score", label, theta, x, y, (y.shape[0], ar.NUM_PARAMS))
                pi = ar.response_distribution(theta, np.arange(ar.NUM_PROMPTS)).reshape(-1)
                mean = (pi[:, None] * got).reshape(ar.NUM_PROMPTS, -1, ar.NUM_PARAMS).sum(axis=1)
            ctx.check(f"{key}/zero_mean", name, mean, np.zeros_like(mean), rtol=0.0,
                      atol=p["ex1_zero_atol"])
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
        rng = np.random.default_rng(ctx.hidden["ex3_case_seed"])
        binary = (rng.random((6, 3)) < 0.5).astype(np.float64)
        binary[:, 0] = 1.0
        hidden = [rng.normal(0.0, 2.0, (2, 2)), rng.normal(-1.0, 2.0, (4, 16)), binary]
        cases.update({f"hidden {i + 1}": r for i, r in enumerate(hidden)})
    return cases


def _ex3_zero_groups(ctx: Context) -> dict[str, np.ndarray]:
    """K = 1 and all-equal groups, dyadic so that the mean is exact."""
    cases = {"K = 1": np.array([[1.], [0.], [0.75]]),
             "all equal": np.array([[1., 1., 1.], [0.25, 0.25, 0.25]])}
    if not ctx.public_only:
        rng = np.random.default_rng(ctx.hidden["ex3_case_seed"] + 1)
        cases["hidden K = 1"] = rng.integers(-8, 9, size=(4, 1)) / 4.0
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
            ctx.expect(f"ex3/{name}", lambda r=r: ctx.call(fn, r), rtol=p["ex3_weight_rtol"],
                       atol=p["ex3_weight_atol"], label=f"{fn}() on the {name} rewards")
    with card.part(f"{fn}() gives zeros for K = 1 and for all-equal groups", 0.5,
                   requires=weights_ok):
        for name, r in _ex3_zero_groups(ctx).items():
            ctx.check(f"ex3/zero/{name}", f"{fn}() on the {name} rewards",
                      lambda r=r: ctx.call(fn, r), np.zeros_like(r), rtol=0.0,
                      atol=p["ex3_weight_atol"])
    factor_ok = "shrinkage_factor(K) for K = 1 .. 8" + ("" if ctx.public_only else
                                                        " and larger K (hidden)")
    with card.part(factor_ok, 1):
        ks = np.array(p["ex3_factor_ks"], dtype=np.int64)
        ctx.expect("ex3/factor", lambda: as_float_array(
            "shrinkage_factor(K)", ctx.call("shrinkage_factor", ks), ks.shape),
            rtol=1e-12, atol=1e-15, label="shrinkage_factor(K)")
        if not ctx.public_only:
            big = np.array(ctx.hidden["ex3_factor_ks"], dtype=np.int64)
            ctx.expect("ex3/hidden_factor", lambda: ctx.call("shrinkage_factor", big),
                       rtol=1e-12, atol=1e-15, label="shrinkage_factor(K) for larger K")
    if not ctx.public_only:   # exact enumeration is an oracle: Gradescope only
        with card.part("your factor is what exact enumeration of every group gives for your "
                       f"centred weight: E[update] = factor(K) x gradient, K = "
                       f"{', '.join(map(str, p['ex3_enum_ks']))}", 1, requires=factor_ok):
            ks = np.array(p["ex3_enum_ks"], dtype=np.int64)
            factor = as_float_array("shrinkage_factor(K)", ctx.call("shrinkage_factor", ks),
                                    ks.shape)
            thetas = {"the reference policy": reference_logits(),
                      "a random policy": np.random.default_rng(11).normal(
                          0.0, 1.0, (NUM_PROMPTS, NUM_RESPONSES))}
            enumerate_update = ctx.oracle_fn("grpo_math.expected_group_update")
            for tname, theta in thetas.items():
                pi = softmax_policy(theta)
                g = ctx.oracle(f"ex3/gradient/{tname}", "grpo_math.exact_gradient", pi,
                               EXACT_REWARD)
                for K, f in zip(ks, factor):
                    label = (f"exact E[update] with your weight at K = {K} on {tname}, vs "
                             f"shrinkage_factor({K}) = {f:.6g} x the exact gradient")
                    ctx.check(f"ex3/enumeration/{tname}/K{K}", label,
                              lambda: enumerate_update(pi, EXACT_REWARD, int(K), _weight_fn(ctx)),
                              f * g, rtol=p["ex3_enum_rtol"], atol=p["ex3_enum_atol"])
    return card.outcome()


def ex3_k1_run(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    draw = lambda rng, n: [int(s) for s in rng.integers(0, 2**31 - 1, n)]   # noqa: E731
    seeds = [(f"public run {i + 1}", s)
             for i, s in enumerate(draw(ctx.public_rng("ex3_run"), p["ex3_public_seeds"]))]
    if not ctx.public_only:
        seeds += [(f"your hidden run {i + 1}", s) for i, s in
                  enumerate(draw(ctx.instance_rng("ex3_run"), p["ex3_hidden_seeds"]))]
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
def _ex4_pairs(ctx: Context) -> list[tuple[str, str, np.ndarray, np.ndarray]]:
    """(key, label, d, r_h): the section's (4, 1) with the public pairs, then
    (grading) the student's hidden pairs and the corners of the range."""
    p = ctx.params
    rng = ctx.public_rng("ex4")
    n = p["ex4_public_pairs"]
    d = np.concatenate([[4.0], rng.uniform(*p["ex4_d_range"], n)])
    r_h = np.concatenate([[1.0], rng.uniform(*p["ex4_rh_range"], n)])
    cases = [("ex4/threshold", f"the section's numbers (d = 4, r_h = 1) and {n} public pairs",
              d, r_h)]
    if not ctx.public_only:
        rng = ctx.instance_rng("ex4")
        m = p["ex4_hidden_pairs"]
        (d0, d1), (r0, r1) = p["ex4_d_range"], p["ex4_rh_range"]
        d = np.concatenate([rng.uniform(d0, d1, m), [d0, d0, d1, d1]])
        r_h = np.concatenate([rng.uniform(r0, r1, m), [r0, r1, r0, r1]])
        cases.append((ctx.instance_key("ex4/threshold"),
                      f"{m + 4} pairs of your own instance (hidden)", d, r_h))
    return cases


def ex4_tilted(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()

    def random_case(rng, shape=(NUM_PROMPTS, NUM_RESPONSES)):
        beta = float(np.exp(rng.uniform(*np.log(p["ex4_beta_range"]))))
        return beta, rng.normal(0.0, 2.0, shape), rng.uniform(0.0, 3.0, shape)

    beta, ref, rew = random_case(ctx.public_rng("ex4_tilted"))
    cases = [("ex4/tilted/section", "the section's loophole at beta = 0.25", reference_logits(),
              SLOPPY_REWARD.copy(), 0.25),
             ("ex4/tilted/random", f"random logits and rewards, beta = {beta:.4g}", ref, rew,
              beta)]
    if not ctx.public_only:
        rng = ctx.instance_rng("ex4_tilted")
        for i, shape in enumerate(ctx.hidden["ex4_tilt_shapes"]):
            beta, ref, rew = random_case(rng, tuple(shape))
            cases.append((ctx.instance_key(f"ex4/tilted/{i}"),
                          f"your instance, case {i + 1}, shape {tuple(shape)} (hidden)", ref,
                          rew, beta))
    with card.part("tilted_policy() is pi_ref * exp(r / beta), normalised per prompt", 1):
        for key, label, ref, rew, beta in cases:
            ctx.expect(key, lambda: ctx.call("tilted_policy", ref, rew, beta),
                       rtol=p["ex4_tilt_rtol"], atol=p["ex4_tilt_atol"],
                       label=f"tilted_policy() on {label} [prompt, response]",
                       oracle=("exercises.tilted", ref, rew, np.full(ref.shape[0], beta)))
    return card.outcome()


def ex4_threshold(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    cases = _ex4_pairs(ctx)
    with card.part("exploit_threshold(d, r_h): " + "; ".join(c[1] for c in cases), 1):
        for key, label, d, r_h in cases:
            ctx.expect(key, lambda: ctx.call("exploit_threshold", d, r_h), rtol=p["ex4_rtol"],
                       atol=0.0, label=f"exploit_threshold() on {label}",
                       oracle=("exercises.threshold_by_bisection", d, r_h))
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
