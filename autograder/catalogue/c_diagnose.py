"""Capstone C: wrong submissions (each loses points where it should) and correct
ones in other styles (each keeps full marks).

The answer entries (a mapping copied from a classmate, guessing by return,
made-up evidence) are built from the stored logs and the answer key, so they
follow the logs when ``make c-logs`` regenerates them.
"""
from __future__ import annotations

import numpy as np

from . import ROOT, Right, Wrong

F = "diagnose.py"
SOLUTION = ROOT / "solutions" / "c_diagnose" / F
BEGIN, END = "# BEGIN ANSWERS", "# END ANSWERS"

ENTROPY = "    return -(np.exp(logp) * logp).sum(axis=-1)\n"
KL_LOG_RHO = """    log_rho = _taken(_log_softmax(np.asarray(logits_new, dtype=np.float64)), actions) \\
        - _taken(_log_softmax(np.asarray(logits_old, dtype=np.float64)), actions)
    return np.mean(np.expm1(log_rho) - log_rho, axis=-1)
"""
CLIP = "    return np.mean(np.abs(np.exp(log_rho) - 1.0) > clip_eps, axis=-1).astype(np.float64)\n"
EV = "    return 1.0 - np.var(targets - values, axis=-1) / np.var(targets, axis=-1)\n"
VL = "    return 0.5 * np.mean(diff * diff, axis=-1)\n"
OVER = """    return np.mean(np.asarray(q_pred, dtype=np.float64)
                   - np.asarray(realised_returns, dtype=np.float64), axis=-1)
"""
AGE = """    age = np.asarray(sample_step, dtype=np.float64)[..., None] \\
        - np.asarray(inserted_step, dtype=np.float64)
"""
DIVERSITY = """    ids = np.sort(np.asarray(episode_ids), axis=-1)
    return 1.0 + np.count_nonzero(np.diff(ids, axis=-1), axis=-1).astype(np.float64)
"""


def _block() -> str:
    text = SOLUTION.read_text()
    return text[text.index(BEGIN):text.index(END) + len(END)]


def _answers(consts: dict[str, str]) -> str:
    return BEGIN + " (edited)\n" + "\n".join(f"{k} = {v!r}" for k, v in consts.items()) + \
        "\n" + END


def _reference_answers() -> dict[str, str]:
    namespace: dict = {}
    exec(_block(), namespace)          # the block is plain string assignments
    return {k: v for k, v in namespace.items() if k.startswith(("FAULT_", "EVIDENCE_"))}


def _copied_from_classmate() -> str:
    from instructor.c_logs import answers_for
    return _answers(answers_for("classmate-1815"))


def _guessed_by_return() -> str:
    """Faults named by the final return: among the PPO letters the worst is the
    saturated policy, the middle one the untrained critic, the best healthy;
    the DQN letter with the lower return has the small buffer. The evidence is
    each letter's true numbers."""
    from autograder.grading import config
    from autograder.judges import c_diagnose as judge
    params = config.load("c_diagnose").params
    answers = _reference_answers()
    finals = {}
    for letter, run in judge.letters_for(None, params).items():
        log = judge.load_run(run, params)
        r = log["episode_returns"]
        finals[letter] = (judge.family(log), float(np.mean(r[-20:])))
    ppo = sorted((v, k) for k, (fam, v) in finals.items() if fam == "ppo")
    dqn = sorted((v, k) for k, (fam, v) in finals.items() if fam == "dqn")
    for (_, letter), fault in zip(ppo, ("saturated_policy", "untrained_critic", "healthy")):
        answers[f"FAULT_{letter}"] = fault
    for (_, letter), fault in zip(dqn, ("undersized_buffer", "healthy")):
        answers[f"FAULT_{letter}"] = fault
    return _answers(answers)


def _with(**changes: str) -> str:
    answers = _reference_answers()
    answers.update(changes)
    return _answers(answers)


def _letter_of(fault: str) -> str:
    return next(k[-1] for k, v in _reference_answers().items()
                if k.startswith("FAULT_") and v == fault)


def _made_up_evidence() -> str:
    """Right faults, evidence invented to sit on the right side of every threshold."""
    answers = _reference_answers()
    invented = {"saturated_policy": "early_entropy = 0.1, early_explained_variance = 0.5, "
                                    "late_value_loss = 1, early_approx_kl = 0.01, "
                                    "early_clip_fraction = 0.05",
                "untrained_critic": "early_entropy = 0.6, early_explained_variance = 0.0, "
                                    "late_value_loss = 50, early_approx_kl = 0.01, "
                                    "early_clip_fraction = 0.05",
                "undersized_buffer": "batch_diversity = 1.2, sample_age = 20, max_q = 200, "
                                     "q_overestimation = 40"}
    for fault, text in invented.items():
        answers[f"EVIDENCE_{_letter_of(fault)}"] = text
    return _answers(answers)


def _wrong_answers(name: str, new, loses: tuple[str, ...], why: str) -> Wrong:
    return Wrong(name, F, _block(), new() if callable(new) else new, loses, why)


SAT = _letter_of("saturated_policy")
WRONG = [
    # ------------------------------------------------------------------ q1 entropy
    Wrong("entropy_in_bits", F, ENTROPY, "    return -(np.exp(logp) * logp).sum(axis=-1) / np.log(2)\n",
          ("q1_entropy",), "log base 2: entropy([0, 0]) = 1, not ln 2"),
    Wrong("entropy_over_the_wrong_axis", F, ENTROPY,
          "    return -(np.exp(logp) * logp).sum(axis=0)\n", ("q1_entropy",),
          "sums over the samples instead of the actions"),
    Wrong("entropy_naive_softmax", F, ENTROPY,
          "    z = np.asarray(logits, dtype=np.float64)\n"
          "    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)\n"
          "    return -(p * np.log(p)).sum(axis=-1)\n",
          ("q1_entropy",), "exp overflows at logits like 1e4: NaN for a one-hot policy"),
    Wrong("entropy_hardcoded_ln2", F, ENTROPY,
          "    return np.full(np.shape(logits)[:-1], np.log(2.0))\n", ("q1_entropy",),
          "right for equal logits only"),
    # ------------------------------------------------------------------ q2 KL, clip fraction
    Wrong("kl_wrong_direction", F, KL_LOG_RHO,
          KL_LOG_RHO.replace("logits_new, dtype", "logits_TMP, dtype")
          .replace("logits_old, dtype", "logits_new, dtype")
          .replace("logits_TMP, dtype", "logits_old, dtype"),
          ("q2_kl_clip",), "rho = pi_old / pi_new: estimates the other direction"),
    Wrong("kl_without_the_ratio_term", F, KL_LOG_RHO,
          KL_LOG_RHO.replace("np.expm1(log_rho) - log_rho", "-log_rho"),
          ("q2_kl_clip",), "mean(-log rho), the k1 estimator: not the logged approx_kl"),
    Wrong("clip_fraction_one_sided", F, CLIP,
          "    return np.mean(np.exp(log_rho) - 1.0 > clip_eps, axis=-1).astype(np.float64)\n",
          ("q2_kl_clip",), "counts only ratios above 1 + eps"),
    Wrong("clip_fraction_on_the_log_ratio", F, CLIP,
          "    return np.mean(np.abs(log_rho) > clip_eps, axis=-1).astype(np.float64)\n",
          ("q2_kl_clip",), "|log rho| > eps is another band (log 1.2 = 0.18)"),
    # ------------------------------------------------------------------ q3 critic
    Wrong("ev_terms_swapped", F, EV,
          "    return 1.0 - np.var(targets - values, axis=-1) / np.var(values, axis=-1)\n",
          ("q3_critic",), "divides by the predictions' variance"),
    Wrong("ev_unexplained_fraction", F, EV,
          "    return np.var(targets - values, axis=-1) / np.var(targets, axis=-1)\n",
          ("q3_critic",), "forgets the 1 -"),
    Wrong("value_loss_without_half", F, VL, "    return np.mean(diff * diff, axis=-1)\n",
          ("q3_critic",), "the mean squared error, not the loss PPO minimises"),
    # ------------------------------------------------------------------ q4 replay
    Wrong("overestimation_sign_flipped", F, OVER, OVER.replace(
        "np.asarray(q_pred, dtype=np.float64)\n                   - np.asarray(realised_returns",
        "np.asarray(realised_returns, dtype=np.float64)\n                   - np.asarray(q_pred"),
        ("q4_replay",), "returns minus Q"),
    Wrong("sample_age_reversed", F, AGE, AGE.replace("[..., None] \\\n        -",
                                                     "[..., None] * 0 \\\n        -"),
          ("q4_replay",), "the insertion step itself, not the age"),
    Wrong("diversity_over_the_whole_log", F, DIVERSITY,
          "    return np.float64(len(np.unique(episode_ids)))\n", ("q4_replay",),
          "distinct episodes over everything, not per batch"),
    Wrong("diversity_counts_changes_unsorted", F, DIVERSITY,
          "    ids = np.asarray(episode_ids)\n"
          "    return 1.0 + np.count_nonzero(np.diff(ids, axis=-1), axis=-1).astype(np.float64)\n",
          ("q4_replay",), "counts id changes without sorting: alternating ids count twice"),
    # ------------------------------------------------------------------ q5, q6 answers
    _wrong_answers("mapping_copied_from_another_student", _copied_from_classmate,
                   ("q5_faults", "q6_evidence"),
                   "a classmate's letters, faults and evidence: other letters, other agents"),
    _wrong_answers("guessing_by_return", _guessed_by_return, ("q5_faults", "q6_evidence"),
                   "the saturated policy reaches 500 and the small buffer outscores the "
                   "healthy DQN: return does not name the faults"),
    _wrong_answers("saturation_called_a_learning_rate_fault",
                   lambda: _with(**{f"FAULT_{SAT}": "learning_rate_too_high"}),
                   ("q5_faults", "q6_evidence"),
                   "low entropy is not a too-large step (its KL and clip fraction are low)"),
    _wrong_answers("evidence_made_up", _made_up_evidence, ("q6_evidence",),
                   "right faults, numbers invented to clear the thresholds"),
    _wrong_answers("evidence_missing", lambda: _with(**{f"EVIDENCE_{SAT}": "early_entropy = "
                   + _reference_answers()[f"EVIDENCE_{SAT}"].split(",")[0].split("=")[1]}),
                   ("q6_evidence",), "only the entropy: the other statistics are missing"),
    _wrong_answers("answers_left_blank", lambda: _answers({}), ("q5_faults", "q6_evidence"),
                   "the stub's empty answers"),
]


def _restyled_answers() -> str:
    """The reference's answers in another hand: upper-case faults with blanks,
    evidence with semicolons, new lines and 5 significant digits."""
    from autograder.judges import c_diagnose as judge
    answers = _reference_answers()
    for k, v in list(answers.items()):
        if k.startswith("FAULT_"):
            answers[k] = f"  {v.upper()} "
        else:
            stats = judge.parse_evidence(v)
            answers[k] = ";\n".join(f"{n}: {x:.5g}" for n, x in stats.items())
    return _answers(answers)


RIGHT = [
    Right("entropy_logsumexp_form", F, ENTROPY,
          "    z = np.asarray(logits, dtype=np.float64)\n"
          "    m = z.max(axis=-1, keepdims=True)\n"
          "    lse = m[..., 0] + np.log(np.exp(z - m).sum(axis=-1))\n"
          "    p = np.exp(z - lse[..., None])\n"
          "    return lse - (p * z).sum(axis=-1)\n",
          ("q1_entropy",), "H = logsumexp(z) - sum p z"),
    Right("kl_with_probabilities", F, KL_LOG_RHO,
          "    a = np.asarray(actions, dtype=np.int64)[..., None]\n"
          "    p_new = np.take_along_axis(np.exp(_log_softmax(np.asarray(logits_new, "
          "dtype=np.float64))), a, axis=-1)[..., 0]\n"
          "    p_old = np.take_along_axis(np.exp(_log_softmax(np.asarray(logits_old, "
          "dtype=np.float64))), a, axis=-1)[..., 0]\n"
          "    rho = p_new / p_old\n"
          "    return ((rho - 1.0) - np.log(rho)).mean(axis=-1)\n",
          ("q2_kl_clip",), "ratio of probabilities, then the k3 formula"),
    Right("ev_sample_variances", F, EV,
          "    resid = targets - values\n"
          "    return 1.0 - resid.var(axis=-1, ddof=1) / targets.var(axis=-1, ddof=1)\n",
          ("q3_critic",), "ddof = 1 on both sides: the same ratio"),
    Right("diversity_with_unique_per_row", F, DIVERSITY,
          "    ids = np.asarray(episode_ids)\n"
          "    rows = ids.reshape(-1, ids.shape[-1])\n"
          "    counts = [float(np.unique(row).size) for row in rows]\n"
          "    return np.array(counts).reshape(ids.shape[:-1])\n",
          ("q4_replay",), "a loop over batches with np.unique"),
    Right("answers_in_another_hand", F, _block(), _restyled_answers(),
          ("q5_faults", "q6_evidence"), "upper case, semicolons, new lines, 5 digits"),
]
