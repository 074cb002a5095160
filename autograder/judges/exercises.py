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

import numpy as np

from rlkit import autoregressive as ar
from rlkit.verifier import (NUM_PROMPTS, NUM_RESPONSES, SLOPPY_REWARD, reference_logits,
                            softmax_policy)

from . import ksweep, reward_groups, slips
from ..grading.gate import Floats
from ..grading.judging import Context, Judge, Kind, Outcome, ReferenceFailed, hand_graded

judge = Judge()
MAX_WRITTEN = 20000     # characters of a written answer that reach the results
MAX_WEIGHT = 1e6        # far above any centred weight of these rewards (|w| <= max |r| * 2)
WEIGHT_FN = "group_mean_centred_weight"


# ----------------------------------------------------------------------------- helpers
def _letters(n: int) -> str:
    return string.ascii_uppercase[:n]


def _choice_key(ctx: Context, const: str, letters: str) -> None:
    """One choice key: the module-level string ``const`` holding one letter,
    compared with the reference's letter (case-insensitive, surrounding
    blanks ignored). A wrong key's failure names the constant and the
    student's letter, never the right one (``conceal``)."""
    got = ctx.constant(const)
    span = f"{letters[0]}-{letters[-1]}"
    if got is None or (isinstance(got, str) and not got.strip()):
        raise ctx.fail(f"no answer yet: set {const} to one of the letters {span}",
                       Kind.NOT_IMPLEMENTED)
    if not isinstance(got, str):
        raise ctx.fail(f"{const} must be a string holding one letter ({span}), "
                       f"got {type(got).__name__} {got!r}", Kind.SHAPE)
    key = got.strip().upper()
    if len(key) != 1 or key not in letters:
        raise ctx.fail(f"{const} = {got[:40]!r} is not one of the letters {span}")
    ctx.expect(np.array([float(ord(key))]), rtol=0.0, atol=0.0, label=f"{const} = {key!r}",
               conceal=True)


def _choice_keys(question: str, prefix: str, choices: str) -> None:
    """Register ``question`` as one choice key per declared part: part ``id``
    reads the constant ``<prefix>_<ID>`` (letters A .. as many as
    ``params[choices]``)."""
    def keys(ctx: Context) -> None:
        letters = _letters(ctx.params[choices])
        for spec in ctx.question.parts:
            with ctx.part(spec.id):
                _choice_key(ctx, f"{prefix}_{spec.id.upper()}", letters)
    judge.question(question)(keys)


def _written(ctx: Context, const: str, what: str) -> Outcome:
    """A written answer carried into results.json (0 points here, by hand later)."""
    text = ctx.constant(const)
    if not isinstance(text, str) or not text.strip():
        return hand_graded([f"no written answer found: {const} is empty or not a string. "
                            f"{what} is graded by hand with the rubric, from {const}."], answered=False)
    lines = [f"{what}: 0 points here, graded by hand with the rubric. Your {const} "
             f"({len(text)} characters):", text.strip()]
    if len(text) >= MAX_WRITTEN:
        lines.append(f"(cut at {MAX_WRITTEN} characters)")
    return hand_graded(lines)


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
    """The ``diagnose=`` of a check: a function of a wrong answer (through the
    gate: the right shape) naming the slips (``words``) whose answers
    ``exercises.slipped_<oracle>(slip, *args)`` it matches where the right one,
    ``exercises.<oracle>(*args)``, differs: on the entries ``where`` (a boolean
    mask; all if None), within ``tol`` (rtol, atol; default: float
    reordering); ``""`` in a handout (no oracles) or if it matches none."""
    def diagnose(got: np.ndarray) -> str:
        try:
            right = ctx.oracle_fn(f"exercises.{oracle}")(*args)
            slipped_fn = ctx.oracle_fn(f"exercises.slipped_{oracle}")
        except ReferenceFailed:           # a handout: its public cases say the numbers
            return ""
        slipped = {s: slipped_fn(s, *args) for s in words}
        if where is not None:
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


def _token_scores(ctx: Context, theta, x, y) -> np.ndarray:
    """The submission's ``token_scores(theta, x, y)``: finite, (B, T, D)."""
    return ctx.ask("token_scores", theta, x, y, answer=Floats(y.shape + (ar.NUM_PARAMS,)))


def _response_score(ctx: Context, theta, x, y) -> np.ndarray:
    """The submission's ``response_score(theta, x, y)``: finite, (B, D)."""
    return ctx.ask("response_score", theta, x, y, answer=Floats((y.shape[0], ar.NUM_PARAMS)))


@judge.part("ex1_token_scores", "token")
def token(ctx: Context, case) -> None:
    """Every token's score against finite differences of its log-probability."""
    p = ctx.params
    theta, x, y = _ex1_inputs(ctx, case)
    args = (theta, x, y, p["ex1_fd_step"])
    ctx.expect(_token_scores(ctx, theta, x, y), rtol=p["ex1_rtol"], atol=p["ex1_atol"],
               oracle=("exercises.fd_token_log_probs", *args),
               label=f"token_scores() on {_ex1_what(case)} [response, token, parameter]",
               diagnose=_diagnosis(ctx, "fd_token_log_probs", TOKEN_SCORE_SLIPS, args,
                                   "token_scores()", rtol=p["ex1_rtol"], atol=p["ex1_atol"]))


@judge.part("ex1_token_scores", "token_sum")
def token_sum(ctx: Context, case) -> None:
    """The scores summed over tokens against finite differences of log pi(y | x)."""
    p = ctx.params
    theta, x, y = _ex1_inputs(ctx, case)
    ctx.expect(_token_scores(ctx, theta, x, y).sum(axis=1), rtol=p["ex1_rtol"],
               atol=p["ex1_atol"], oracle=("exercises.fd_log_prob", theta, x, y,
                                           p["ex1_fd_step"]),
               label=f"token_scores().sum(axis=1) on {_ex1_what(case)} [response, parameter]")


@judge.part("ex1_response_score", "score")
def response_score(ctx: Context, case) -> None:
    p = ctx.params
    theta, x, y = _ex1_inputs(ctx, case)
    args = (theta, x, y, p["ex1_fd_step"])
    ctx.expect(_response_score(ctx, theta, x, y), rtol=p["ex1_rtol"], atol=p["ex1_atol"],
               oracle=("exercises.fd_log_prob", *args),
               label=f"response_score() on {_ex1_what(case)} [response, parameter]",
               diagnose=_diagnosis(ctx, "fd_log_prob", RESPONSE_SCORE_SLIPS, args,
                                   "response_score()", rtol=p["ex1_rtol"], atol=p["ex1_atol"]))


@judge.part("ex1_response_score", "zero_mean")
def zero_mean(ctx: Context, case) -> None:
    """sum_y pi(y | x) score(y) = 0 per prompt, on the cases of every response."""
    if case.kind != "every":
        return
    theta, x, y = _ex1_inputs(ctx, case)
    got = _response_score(ctx, theta, x, y)
    pi = ar.response_distribution(theta, np.arange(ar.NUM_PROMPTS)).reshape(-1)
    mean = (pi[:, None] * got).reshape(ar.NUM_PROMPTS, -1, ar.NUM_PARAMS).sum(axis=1)
    ctx.check(mean, np.zeros_like(mean), rtol=0.0, atol=ctx.params["ex1_zero_atol"],
              label=f"E_y[response_score()] per prompt on {_ex1_what(case)} [prompt, parameter]")


@judge.question("ex1_proof")
def ex1_proof(ctx: Context) -> Outcome:
    return _written(ctx, "EX1_PROOF", "Exercise 1, the proof")


# ----------------------------------------------------------------------------- exercise 2
_choice_keys("ex2_terms", "EX2", "ex2_choices")


# ----------------------------------------------------------------------------- exercise 3
def _ex3_enumeration_inputs(ctx: Context, case) -> tuple[np.ndarray, np.ndarray]:
    """(policy logits, rewards), each ``(prompts, responses)``, of an
    enumeration case: the section's reference policy (kind "reference") or
    normal logits ("normal"), and a reward table drawn with them, normal(0, 1)
    per prompt and response (the identity holds for any reward; drawn per
    submission, the groups the weight is asked about are new each time)."""
    rng, shape = ctx.case_rng(case), (NUM_PROMPTS, NUM_RESPONSES)
    if case.kind == "reference":
        logits = reference_logits()
    elif case.kind == "normal":
        logits = rng.normal(case.loc, case.scale, shape)
    else:
        raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind "
                              f"{case.kind!r}")
    return logits, rng.normal(0.0, 1.0, shape)


def _rewards_what(case) -> str:
    return case.label if case.hidden else f"the {case.name} rewards"


@judge.part("ex3_prediction", "weights")
def weights(ctx: Context, case) -> None:
    p = ctx.params
    r = reward_groups.rewards(ctx, case)
    reward_groups.expect_weights(ctx, WEIGHT_FN, r, rtol=p["ex3_weight_rtol"],
                                 atol=p["ex3_weight_atol"], oracle=("grpo_math.centred_weight", r),
                                 slips_of="centred_weight", max_abs=MAX_WEIGHT,
                                 label=f"{WEIGHT_FN}() on {_rewards_what(case)}")


@judge.part("ex3_prediction", "zeros")
def zeros(ctx: Context, case) -> None:
    r = reward_groups.rewards(ctx, case)
    reward_groups.expect_weights(ctx, WEIGHT_FN, r, rtol=0.0, atol=ctx.params["ex3_weight_atol"],
                                 zero=True, slips_of="centred_weight", max_abs=MAX_WEIGHT,
                                 label=f"{WEIGHT_FN}() on {_rewards_what(case)}")


@judge.part("ex3_prediction", "factor")
def factor(ctx: Context, case) -> None:
    if case.kind == "drawn":          # B distinct group sizes, drawn
        ks = np.sort(ctx.case_rng(case).choice(np.arange(9, 100_001), case.B, replace=False))
    else:
        ks = np.array(case.values, dtype=np.int64)
    got = ctx.ask("shrinkage_factor", ks, answer=Floats(ks.shape))
    ctx.expect(got, rtol=1e-12, atol=1e-15, oracle=("exercises.factor", ks),
               label="shrinkage_factor(K)" + (" for larger K" if case.hidden else ""),
               diagnose=_diagnosis(ctx, "factor", FACTOR_SLIPS, (ks,), "shrinkage_factor()",
                                   where=ks >= 2))


@judge.part("ex3_prediction", "enumeration")
def enumeration(ctx: Context, case) -> None:
    """Exact expectation over every group of each K of ``ex3_enum_ks``, with the
    submission's weight, against its factor times the exact gradient (hidden
    cases only: the enumeration is an oracle, on Gradescope)."""
    p = ctx.params
    ks = np.array(p["ex3_enum_ks"], dtype=np.int64)
    got = ctx.ask("shrinkage_factor", ks, answer=Floats(ks.shape))
    logits, rewards = _ex3_enumeration_inputs(ctx, case)
    pi = softmax_policy(logits)
    g = ctx.oracle("gradient", "grpo_math.exact_gradient", pi, rewards)
    enumerate_update = ctx.oracle_fn("grpo_math.expected_group_update")

    def weight(r: np.ndarray) -> np.ndarray:
        return ctx.ask(WEIGHT_FN, r, answer=Floats(r.shape, max_abs=MAX_WEIGHT))

    for K, f in zip(ks, got):
        ctx.check(enumerate_update(pi, rewards, int(K), weight), f * g,
                  rtol=p["ex3_enum_rtol"], atol=p["ex3_enum_atol"], name=f"K{K}",
                  label=f"exact E[update] with your weight at K = {K} on {case.label}, vs "
                        f"shrinkage_factor({K}) = {f:.6g} x the exact gradient",
                  diagnose=_enumeration_diagnosis(ctx, pi, rewards, int(K), g))


def _enumeration_diagnosis(ctx: Context, pi: np.ndarray, rewards: np.ndarray, K: int,
                           g: np.ndarray):
    """The ``diagnose=`` of an enumeration at K: which side is off. The
    expected update with the submission's weight (``got``, (P, V)) is the
    section's (K - 1) / K x gradient (then the factor differs), zero, the
    whole gradient at K = 1 (a group of one weighted by its reward, up to a
    constant), or that of a slipped centred weight
    (``reward_groups.WEIGHT_SLIPS``)."""
    def diagnose(got: np.ndarray) -> str:
        enumerate_update = ctx.oracle_fn("grpo_math.expected_group_update")
        right = ctx.oracle_fn("exercises.factor")(np.array([K]))[0] * g
        if slips.close(got, right):
            return (f"E[update] with your {WEIGHT_FN}() is (K - 1) / K x the gradient, as "
                    "the section predicts: your shrinkage_factor(K) is what differs")
        if not np.any(got):
            return f"E[update] with your {WEIGHT_FN}() is 0 at K = {K}: nothing would learn"
        if K == 1:
            return (f"E[update] with your {WEIGHT_FN}() at K = 1 is not 0: a group of one "
                    "must get weight 0 (its reward minus its own mean)" +
                    (", but yours gets its reward up to a constant (the whole gradient)"
                     if slips.close(got, g) else ""))
        slipped = ctx.oracle_fn("grpo_math.slipped_weight")
        words = reward_groups.WEIGHT_SLIPS["centred_weight"]
        updates = {s: enumerate_update(pi, rewards, K,
                                       lambda r, s=s: slipped("centred_weight", s, r))
                   for s in words}
        return slips.name(got, right, updates, words,
                          f"E[update] with your {WEIGHT_FN}() is that of")
    return diagnose


WEIGHT = ksweep.Probe(WEIGHT_FN, ksweep.weights_answer(MAX_WEIGHT))


@judge.question("ex3_k1_run")
def ex3_k1_run(ctx: Context) -> None:
    """REINFORCE with the submission's weight at K = 1 and the learning K, the
    runs of the question's cases in lockstep (``judges/ksweep``)."""
    p = ctx.params
    runs_of, learn_ks = ctx.cases_in(), p["ex3_learn_ks"]
    sweep = ksweep.run(ctx, WEIGHT, runs_of, sorted({1, *learn_ks}),
                       lambda K: p["ex3_budget"] // K)
    ksweep.judge(ctx, sweep, runs_of, learn_ks, p["ex3_bar"],
                 why_zero="the centred weight of a group of one is exactly zero")


_choice_keys("ex3_loo_key", "EX3", "ex3_loo_choices")


# ----------------------------------------------------------------------------- exercise 4
def _ex4_pairs(ctx: Context, case) -> tuple[np.ndarray, np.ndarray]:
    """(d, r_h) of a declared case: its literal pairs (``values``) or the
    ranges' corners (kind "corners", drawn a little inwards), then ``B`` pairs
    drawn uniformly in the ranges of ``[params]`` (all d, then all r_h)."""
    p = ctx.params
    pairs = np.array(case.get("values", []), dtype=np.float64).reshape(-1, 2)
    d, r_h = pairs[:, 0], pairs[:, 1]
    if case.kind == "corners":       # the ranges' corners, each moved inwards by up to 2 %
        rng = ctx.case_rng(case)
        (d_lo, d_hi), (r_lo, r_hi) = p["ex4_d_range"], p["ex4_rh_range"]
        d_in, r_in = rng.uniform(0.0, 0.02, 4) * (d_hi - d_lo), rng.uniform(0.0, 0.02, 4) \
            * (r_hi - r_lo)
        d = np.array([d_lo, d_lo, d_hi, d_hi]) + d_in * np.array([1, 1, -1, -1])
        r_h = np.array([r_lo, r_hi, r_lo, r_hi]) + r_in * np.array([1, -1, 1, -1])
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


def _tilt_inputs(ctx: Context, case) -> tuple[str, np.ndarray, np.ndarray, float]:
    """(what feedback calls them, reference logits (P, V), rewards (P, V), beta)."""
    if case.kind == "section":
        return (case.label if case.hidden else
                f"the section's loophole at beta = {case.beta:g}",
                reference_logits(), SLOPPY_REWARD.copy(), case.beta)
    if case.kind != "random":
        raise ReferenceFailed(f"{case.question}: case {case.name!r} has an unknown kind "
                              f"{case.kind!r}")
    rng, shape = ctx.case_rng(case), (case.P, case.V)
    beta = float(np.exp(rng.uniform(*np.log(ctx.params["ex4_beta_range"]))))
    ref, rew = rng.normal(0.0, 2.0, shape), rng.uniform(0.0, 3.0, shape)
    what = case.label if case.hidden else f"random logits and rewards, beta = {beta:.4g}"
    return what, ref, rew, beta


@judge.part("ex4_tilted", "tilted")
def tilted(ctx: Context, case) -> None:
    p = ctx.params
    what, ref, rew, beta = _tilt_inputs(ctx, case)
    betas = np.full(ref.shape[0], beta)
    got = ctx.ask("tilted_policy", ref, rew, beta, answer=Floats(ref.shape))
    ctx.expect(got, rtol=p["ex4_tilt_rtol"], atol=p["ex4_tilt_atol"],
               oracle=("exercises.tilted", ref, rew, betas),
               label=f"tilted_policy() on {what} [prompt, response]",
               diagnose=_diagnosis(ctx, "tilted", TILT_SLIPS, (ref, rew, betas),
                                   "tilted_policy()"))


@judge.part("ex4_threshold", "threshold")
def threshold(ctx: Context, case) -> None:
    d, r_h = _ex4_pairs(ctx, case)
    got = ctx.ask("exploit_threshold", d, r_h, answer=Floats(d.shape))
    ctx.expect(got, rtol=ctx.params["ex4_rtol"], atol=0.0,
               oracle=("exercises.threshold_by_bisection", d, r_h),
               label=f"exploit_threshold() on {_ex4_what(case)}",
               diagnose=_diagnosis(ctx, "threshold", THRESHOLD_SLIPS, (d, r_h),
                                   "exploit_threshold()"))


# ----------------------------------------------------------------------------- exercise 5
_choice_keys("ex5_symbols", "EX5", "ex5_choices")


@judge.question("ex5_missing_component")
def ex5_missing_component(ctx: Context) -> Outcome:
    return _written(ctx, "EX5_MISSING_COMPONENT",
                    "Exercise 5, the component not built in these chapters")


QUESTIONS = judge.questions
