"""Judge of the section's exercises 1-5.

Every case is declared in ``assignment.toml`` (``[[questions.cases]]``).
Public cases are the same for everyone (the handout checks them with values
recorded at ``make dist``); on Gradescope each student also gets hidden cases,
most of them drawn for the student (``draw``: fields and inputs from the
student's salted instance), checked against the oracles
(``autograder.oracles``).

* Exercise 1: the judge draws parameters, prompts and responses of the tiny
  autoregressive model and checks the student's token scores and response
  score against finite differences of the model's log-probabilities, plus
  the zero mean of the score under pi.
* Exercise 3: the centred weight and the predicted factor (K - 1) / K are
  checked against the reference's answers and (Gradescope: the hidden-only
  group "enum") against exact enumeration of the expected update; the judge
  runs REINFORCE itself at K = 1 (must stay bit-identical) beside K >= 2 (must
  learn), with the student's weight.
* Exercise 4: the tilted optimum and the threshold beta for (d, r_h) pairs;
  the expected threshold is found by bisection on the tilted optimum, from
  the stated criterion.
* Exercises 2, 3 (leave-one-out), 5: choice keys, compared with the
  reference's keys stored at build time (never shown in feedback).
* Written answers (exercise 1's proof, exercise 5's missing component) are
  copied into the results as text under zero-point entries.

Where a case fails, the feedback names the slip the answer matches (the
oracle re-run with each slip of the formula: the scores' sign, the centred
weight's batch mean, the factor, the tilt, the threshold's criterion).
"""
from __future__ import annotations

import string
from typing import Callable

import numpy as np

from rlkit import autoregressive as ar
from rlkit.verifier import (EXACT_REWARD, NUM_PROMPTS, NUM_RESPONSES, SLOPPY_REWARD,
                            reference_logits, softmax_policy)

from . import ksweep, reward_groups, slips
from ..grading.judging import (Context, Fail, Outcome, ReferenceFailed, Scorecard,
                               as_float_array)

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


# ----------------------------------------------------------------------------- diagnoses
# What a half-right answer gives, as the feedback names it (the oracle re-run with each slip,
# only when a case fails; exercise 3's centred weight: reward_groups.WEIGHT_SLIPS). A diagnosis
# names a slip, never an input: it is shown for hidden cases too.
FACTOR_SLIPS = {
    "one_over_k": "1 / K: that is the share of a response's own reward in its group's mean, "
                  "not the factor by which centring scales the expected update",
    "inverted": "the inverse of the factor (a factor above 1: centring does not enlarge the "
                "expected update)",
    "integer_division": "an integer division (0 for every K): compute in floating point",
}
TILT_SLIPS = {
    "sign": "pi_ref exp(-r / beta): the reward's sign flipped",
    "times_beta": "pi_ref exp(r * beta): beta multiplies the reward instead of dividing it",
    "no_reference": "softmax(r / beta): the reference policy left out",
    "unnormalised": "pi_ref exp(r / beta) not normalised again over each prompt's responses",
}
TOKEN_SCORE_SLIPS = {
    "sign": "the sign flipped (pi - onehot instead of onehot - pi)",
}
RESPONSE_SCORE_SLIPS = {
    "sign": "the sign flipped",
    "of_probability": "the gradient of pi(y | x), not of log pi(y | x) (it is pi(y | x) times "
                      "the score)",
    "last_token": "the last token's score alone (the response's score sums every token's)",
}
THRESHOLD_SLIPS = {
    "half_mass": "the beta at which the hedge holds half of the mass (as much as the 8 "
                 "ordinary candidates together); the criterion is its log-odds against one "
                 "ordinary candidate reaching 0",
    "inverted": "d / r_h: the ratio inverted",
    "probability_gap": "d read as a ratio of probabilities (exp(d) - 1) instead of a gap in "
                       "log-odds",
}


def _diagnosis(ctx: Context, oracle: str, words: dict, args: tuple, what: str, *,
               where=None, **tol):
    """A function of a wrong answer naming the slips (``words``) whose answers
    ``exercises.slipped_<oracle>(slip, *args)`` it matches where the right one,
    ``exercises.<oracle>(*args)``, differs: on the entries ``where`` (a boolean
    mask; all if None), within ``tol`` (rtol, atol; default: float
    reordering); ``""`` in a handout (no oracles) or if it matches none."""
    def diagnose(got) -> str:
        try:
            right = ctx.oracle_fn(f"exercises.{oracle}")(*args)
            slipped_fn = ctx.oracle_fn(f"exercises.slipped_{oracle}")
        except ReferenceFailed:
            return ""
        slipped = {s: slipped_fn(s, *args) for s in words}
        try:
            got = np.asarray(got, dtype=np.float64)
        except (TypeError, ValueError):
            return ""
        if where is not None:
            if got.shape != right.shape:
                return ""
            got, right = got[where], right[where]
            slipped = {s: out[where] for s, out in slipped.items()}
        return slips.name(got, right, slipped, words, f"your {what} matches", **tol)
    return diagnose


# ----------------------------------------------------------------------------- exercise 1
def _ex1_inputs(ctx: Context, case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """theta (D,), x (B,), y (B, T) of a declared case (its ``kind``: "sampled",
    "every" or "arbitrary"), from its generator; theta is drawn first."""
    rng = ctx.case_rng(case)
    theta = ar.init_params(rng, case.scale)
    if case.kind == "every":
        every = ar.all_responses()
        return (theta, np.repeat(np.arange(ar.NUM_PROMPTS), every.shape[0]),
                np.tile(every, (ar.NUM_PROMPTS, 1)))
    x = rng.integers(0, ar.NUM_PROMPTS, case.B)
    if case.kind == "sampled":
        return theta, x, ar.sample(theta, x, rng)
    if case.kind == "arbitrary":
        return theta, x, rng.integers(0, ar.VOCAB, (case.B, ar.LENGTH))
    raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind {case.kind!r}")


def _ex1_what(case) -> str:
    """What feedback calls a case's inputs (a hidden case: its label only)."""
    if case.hidden:
        return case.label
    return {"sampled": "sampled responses",
            "every": "every response of every prompt"}.get(case.kind, case.name)


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
        for case in ctx.cases():
            theta, x, y = _ex1_inputs(ctx, case)
            B, T = y.shape
            what = _ex1_what(case)
            key, name = f"ex1/{case.name}/token", f"token_scores() on {what} [response, token, " \
                                                   "parameter]"
            args = (theta, x, y, p["ex1_fd_step"])
            slips.expect_diagnosed(     # the answer kept for the next part
                ctx, key, name, lambda: scores.setdefault(case.name, _ask(
                    ctx, "token_scores", what, theta, x, y, (B, T, ar.NUM_PARAMS))),
                _diagnosis(ctx, "fd_token_log_probs", TOKEN_SCORE_SLIPS, args,
                           "token_scores()", rtol=p["ex1_rtol"], atol=p["ex1_atol"]),
                rtol=p["ex1_rtol"], atol=p["ex1_atol"],
                oracle=("exercises.fd_token_log_probs", *args))
    with card.part(summed, 1):
        for case in ctx.cases():
            theta, x, y = _ex1_inputs(ctx, case)
            B, T = y.shape
            what = _ex1_what(case)
            # a public case's key is shared with ex1_response_score (same inputs, same value);
            # a hidden case is drawn for each question, so its key is this question's own
            key = f"ex1/{case.name}/" + ("token_sum" if case.hidden else "response")
            name = f"token_scores().sum(axis=1) on {what} [response, parameter]"
            with ctx.case(key, name):
                got = scores[case.name] if case.name in scores else \
                    _ask(ctx, "token_scores", what, theta, x, y, (B, T, ar.NUM_PARAMS))
            ctx.expect(key, got.sum(axis=1), rtol=p["ex1_rtol"], atol=p["ex1_atol"],
                       label=name,
                       oracle=("exercises.fd_log_prob", theta, x, y, p["ex1_fd_step"]))
    return card.outcome()


def ex1_response_score(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    nonzero = "response_score() matches finite differences of log pi(y | x)"
    scores = {}
    with card.part(nonzero, 2):
        for case in ctx.cases():
            theta, x, y = _ex1_inputs(ctx, case)
            what = _ex1_what(case)
            key = f"ex1/{case.name}/response"
            name = f"response_score() on {what} [response, parameter]"
            args = (theta, x, y, p["ex1_fd_step"])
            slips.expect_diagnosed(     # the answer kept for the next part
                ctx, key, name, lambda: scores.setdefault(case.name, _ask(
                    ctx, "response_score", what, theta, x, y, (y.shape[0], ar.NUM_PARAMS))),
                _diagnosis(ctx, "fd_log_prob", RESPONSE_SCORE_SLIPS, args, "response_score()",
                           rtol=p["ex1_rtol"], atol=p["ex1_atol"]),
                rtol=p["ex1_rtol"], atol=p["ex1_atol"], oracle=("exercises.fd_log_prob", *args))
    with card.part("the score has mean zero under pi: sum_y pi(y | x) response_score(y) = 0 "
                   "for every prompt", 1, requires=nonzero):
        for case in ctx.cases():
            if case.kind != "every":
                continue
            theta, x, y = _ex1_inputs(ctx, case)
            what = _ex1_what(case)
            key = f"ex1/{case.name}/zero_mean"
            name = f"E_y[response_score()] per prompt on {what} [prompt, parameter]"
            with ctx.case(key, name):
                got = scores[case.name] if case.name in scores else \
                    _ask(ctx, "response_score", what, theta, x, y, (y.shape[0], ar.NUM_PARAMS))
                pi = ar.response_distribution(theta, np.arange(ar.NUM_PROMPTS)).reshape(-1)
                mean = (pi[:, None] * got).reshape(ar.NUM_PROMPTS, -1, ar.NUM_PARAMS).sum(axis=1)
            ctx.check(key, name, mean, np.zeros_like(mean), rtol=0.0, atol=p["ex1_zero_atol"])
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
def _ex3_policy(ctx: Context, case) -> np.ndarray:
    """The policy logits ``(prompts, responses)`` of an enumeration case."""
    if case.kind == "reference":
        return reference_logits()
    if case.kind == "normal":
        return ctx.case_rng(case).normal(case.loc, case.scale, (NUM_PROMPTS, NUM_RESPONSES))
    raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind {case.kind!r}")


WEIGHT = ksweep.Probe("group_mean_centred_weight", lambda got, r: as_float_array(
    f"group_mean_centred_weight() on rewards of shape {r.shape}", got, r.shape))


def _weight_fn(ctx: Context) -> Callable[[np.ndarray], np.ndarray]:
    def weight(r: np.ndarray) -> np.ndarray:
        return WEIGHT.check(ctx.call(WEIGHT.fn, r), r)
    return weight


def ex3_prediction(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    fn = "group_mean_centred_weight"
    weights_ok = f"{fn}() on groups with different rewards"
    with card.part(weights_ok, 1):
        for case in ctx.cases():
            r = reward_groups.rewards(ctx, case)
            what = case.label if case.hidden else f"the {case.name} rewards"
            reward_groups.expect_weights(
                ctx, fn, f"ex3/{case.name}", f"{fn}() on {what}", r, rtol=p["ex3_weight_rtol"],
                atol=p["ex3_weight_atol"], slips_of="centred_weight",
                oracle=("grpo_math.centred_weight", r) if case.per_student else None)
    with card.part(f"{fn}() gives zeros for K = 1 and for all-equal groups", 0.5,
                   requires=weights_ok):
        for case in ctx.cases("zero"):
            r = reward_groups.rewards(ctx, case)
            what = case.label if case.hidden else f"the {case.name} rewards"
            reward_groups.expect_weights(ctx, fn, f"ex3/zero/{case.name}", f"{fn}() on {what}", r,
                                         rtol=0.0, atol=p["ex3_weight_atol"], zero=True,
                                         slips_of="centred_weight")
    declared = ctx.declared("factor")
    public_ks = sorted(int(k) for c in declared if not c.hidden for k in c.get("values"))
    factor_ok = f"shrinkage_factor(K) for K = {public_ks[0]} .. {public_ks[-1]}" + (
        " and larger K (hidden)" if any(c.hidden for c in declared) else "")
    with card.part(factor_ok, 1):
        for case in ctx.cases("factor"):
            ks = np.array(case.get("values"), dtype=np.int64)
            what = "shrinkage_factor(K)" + (" for larger K" if case.hidden else "")
            slips.expect_diagnosed(
                ctx, f"ex3/{case.name}", what,
                lambda: as_float_array(what, ctx.call("shrinkage_factor", ks), ks.shape),
                _diagnosis(ctx, "factor", FACTOR_SLIPS, (ks,), "shrinkage_factor()",
                           where=ks >= 2), rtol=1e-12, atol=1e-15)
    if ctx.declared("enum"):   # hidden only: exact enumeration is an oracle (Gradescope only)
        ks = np.array(p["ex3_enum_ks"], dtype=np.int64)
        with card.part("your factor is what exact enumeration of every group gives for your "
                       f"centred weight: E[update] = factor(K) x gradient, K = "
                       f"{', '.join(map(str, p['ex3_enum_ks']))}", 1, requires=factor_ok):
            enumerate_update = ctx.oracle_fn("grpo_math.expected_group_update")
            for case in ctx.cases("enum"):
                tname = case.name
                with ctx.case(f"ex3/enumeration/{tname}/factor", "shrinkage_factor(K)"):
                    factor = as_float_array("shrinkage_factor(K)",
                                            ctx.call("shrinkage_factor", ks), ks.shape)
                pi = softmax_policy(_ex3_policy(ctx, case))
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
    runs_of = list(ctx.cases())
    if not runs_of:
        return card.outcome()
    learn_ks, budget = p["ex3_learn_ks"], p["ex3_budget"]
    runs = ksweep.run(ctx, card, WEIGHT, runs_of, sorted(set([1] + list(learn_ks))),
                      lambda K: budget // K)
    ksweep.judge(card, runs, runs_of, learn_ks, p["ex3_bar"], learn_points=2, k1_points=1,
                 why_zero="the centred weight of a group of one is exactly zero")
    return card.outcome()


def ex3_loo_key(ctx: Context) -> Outcome:
    card = Scorecard()
    _key_part(ctx, card, "EX3_LOO_K1", "Exercise 3, why leave-one-out is undefined at K = 1",
              _letters(ctx.params["ex3_loo_choices"]))
    return card.outcome()


# ----------------------------------------------------------------------------- exercise 4
def _ex4_pairs(ctx: Context, case) -> tuple[np.ndarray, np.ndarray]:
    """(d, r_h) of a declared case: its literal pairs (``values``), then ``B``
    pairs drawn uniformly in the ranges of ``[params]`` (all d, then all r_h)."""
    p = ctx.params
    pairs = np.array(case.get("values", []), dtype=np.float64).reshape(-1, 2)
    d, r_h = pairs[:, 0], pairs[:, 1]
    n = case.get("B", 0)
    if n:
        rng = ctx.case_rng(case)
        d = np.concatenate([d, rng.uniform(*p["ex4_d_range"], n)])
        r_h = np.concatenate([r_h, rng.uniform(*p["ex4_rh_range"], n)])
    return d, r_h


def _ex4_what(case) -> str:
    if case.hidden:
        return case.label
    pairs = ", ".join(f"(d = {d:g}, r_h = {r:g})" for d, r in case.get("values", []))
    return f"the section's numbers {pairs} and {case.get('B', 0)} public pairs"


def ex4_tilted(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()

    def inputs(case):
        if case.kind == "section":
            return (f"the section's loophole at beta = {case.beta:g}" if not case.hidden
                    else case.label,
                    reference_logits(), SLOPPY_REWARD.copy(), case.beta)
        if case.kind != "random":
            raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind "
                                  f"{case.kind!r}")
        rng, shape = ctx.case_rng(case), (case.P, case.V)
        beta = float(np.exp(rng.uniform(*np.log(p["ex4_beta_range"]))))
        ref, rew = rng.normal(0.0, 2.0, shape), rng.uniform(0.0, 3.0, shape)
        what = case.label if case.hidden else f"random logits and rewards, beta = {beta:.4g}"
        return what, ref, rew, beta

    with card.part("tilted_policy() is pi_ref * exp(r / beta), normalised per prompt", 1):
        for case in ctx.cases():
            what, ref, rew, beta = inputs(case)
            betas = np.full(ref.shape[0], beta)
            slips.expect_diagnosed(
                ctx, f"ex4/tilted/{case.name}", f"tilted_policy() on {what} [prompt, response]",
                lambda: ctx.call("tilted_policy", ref, rew, beta),
                _diagnosis(ctx, "tilted", TILT_SLIPS, (ref, rew, betas), "tilted_policy()"),
                rtol=p["ex4_tilt_rtol"], atol=p["ex4_tilt_atol"],
                oracle=("exercises.tilted", ref, rew, betas))
    return card.outcome()


def ex4_threshold(ctx: Context) -> Outcome:
    p = ctx.params
    card = Scorecard()
    declared = ctx.declared()
    label = "exploit_threshold(d, r_h): " + "; ".join(
        _ex4_what(c) for c in declared if not c.hidden) + (
        "; pairs of your own instance (hidden)" if any(c.hidden for c in declared) else "")
    with card.part(label, 1):
        for case in ctx.cases():
            d, r_h = _ex4_pairs(ctx, case)
            slips.expect_diagnosed(
                ctx, f"ex4/{case.name}", f"exploit_threshold() on {_ex4_what(case)}",
                lambda: ctx.call("exploit_threshold", d, r_h),
                _diagnosis(ctx, "threshold", THRESHOLD_SLIPS, (d, r_h), "exploit_threshold()"),
                rtol=p["ex4_rtol"], atol=0.0,
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
