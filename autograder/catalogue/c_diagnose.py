"""Capstone C: wrong submissions (each loses points where it should) and correct
ones in other styles (each keeps full marks).

The diagnosis entries edit the reference's ``diagnose()`` (a rule by return,
the saturated policy called a learning-rate fault, made-up or missing
evidence), so they follow the logs when ``make c-logs`` regenerates them.
"""
from __future__ import annotations

from . import ROOT, Right, Wrong

F = "diagnose.py"
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


RULE_PPO = """        if stats["early_entropy"] < th["early_entropy"]:
            fault = "saturated_policy"
"""
CITED = "    return fault, {k: stats[k] for k in cited}\n"
HEALTHY_CITE = """    if fault == "healthy":
        cited = [k for k in stats if k in th]
    else:
        cited = CITE[fault]
"""
DIAGNOSE_BODY = "    stats = summary(log)\n    th = THRESHOLDS\n"


def _span(first: str, last: str) -> str:
    """The reference's text from ``first`` to the end of ``last`` (an edit of two
    places at once)."""
    text = (ROOT / "solutions" / "c_diagnose" / F).read_text()
    start = text.index(first)
    return text[start:text.index(last, start) + len(last)]


LATE_VL = ('            "late_value_loss": float(np.mean(value_loss(log["values"][l0:l1],\n'
           + " " * 56 + 'log["value_targets"][l0:l1]))),\n')
VL_TO_SUMMARY = _span(VL, LATE_VL)


def _lookup_by_episode_count() -> str:
    """diagnose() as a table of the public logs' episode counts (the key's faults)."""
    from autograder.grading import config
    from autograder.judges import c_diagnose as judge
    a = config.load("c_diagnose")
    table = {int(judge.load_run(i, a.params)["episode_returns"].size):
             a.hidden["agent_faults"][agent] for i, agent in enumerate(a.hidden["runs"])}
    return (DIAGNOSE_BODY + f"    fault = {table!r}.get(len(log['episode_returns']), 'healthy')\n"
            "    cited = [k for k in stats if k in th] if fault == 'healthy' else CITE[fault]\n"
            "    return fault, {k: stats[k] for k in cited}\n")

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
    Wrong("entropy_log_guard_1e-12", F, ENTROPY,
          "    p = np.exp(logp)\n    return -(p * np.log(p + 1e-12)).sum(axis=-1)\n",
          ("q1_entropy",), "log(p + 1e-12): a one-hot policy's entropy is -1e-12, the stub "
          "says this guard fails", diagnosis="a guard inside the log"),
    Wrong("entropy_log_guard_1e-13", F, ENTROPY,
          "    p = np.exp(logp)\n    return -(p * np.log(p + 1e-13)).sum(axis=-1)\n",
          ("q1_entropy",), "log(p + 1e-13): a one-hot policy's entropy is -1e-13, ten times "
          "the tolerance the stub states", diagnosis="a guard inside the log"),
    Wrong("entropy_in_bits_charged_in_the_evidence", F, ENTROPY,
          "    return -(np.exp(logp) * logp).sum(axis=-1) / np.log(2)\n",
          ("q6_evidence", "q7_unseen"),
          "the evidence cites entropies in bits: the feedback names entropy()",
          diagnosis="your entropy() gives early_entropy"),
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
    Wrong("clip_fraction_counts_the_edge", F, CLIP, CLIP.replace("> clip_eps", ">= clip_eps"),
          ("q2_kl_clip",), "|rho - 1| >= eps: a ratio on the edge counted as clipped",
          diagnosis="not >="),
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
    Wrong("value_loss_returns_a_report_line", F, VL_TO_SUMMARY,
          VL_TO_SUMMARY.replace(VL, '    return f"value loss {0.5 * np.mean(diff * diff):.4g}"\n')
          .replace(LATE_VL, '            "late_value_loss": float(np.mean((log["values"][l0:l1]\n'
                            '                                              - log["value_targets"]'
                            '[l0:l1]) ** 2)),\n'),
          ("q3_critic", "q6_evidence", "q7_unseen"),
          "value_loss() returns the line the notebook prints ('value loss 12.3'), so summary() "
          "computes the loss inline, as the mean squared error (no half): q3 says value_loss() "
          "answers a string; the evidence's late_value_loss is traced to value_loss() (no "
          "autograder fault: the grader once converted that string outside any check)",
          diagnosis="your value_loss() gives no usable late_value_loss"),
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
    # ------------------------------------------------------------------ q5, q6: diagnose()
    Wrong("diagnosis_by_return", F, DIAGNOSE_BODY,
          DIAGNOSE_BODY + "    final = float(np.mean(log['episode_returns'][-20:]))\n"
          "    if 'logits_before' in log:\n"
          "        fault = ('saturated_policy' if final < 100 else 'untrained_critic' "
          "if final < 400 else 'healthy')\n"
          "        cited = [k for k in stats if k in th] if fault == 'healthy' else CITE[fault]\n"
          "        return fault, {k: stats[k] for k in cited}\n"
          "    fault = 'undersized_buffer' if final > 150 else 'healthy'\n"
          "    return fault, {k: stats[k] for k in ('batch_diversity', 'sample_age')}\n",
          ("q5_faults", "q6_evidence", "q7_unseen"),
          "the saturated policy reaches 500 and the small buffer outscores the healthy DQN: "
          "return does not name the faults"),
    Wrong("lookup_by_episode_count", F, DIAGNOSE_BODY, _lookup_by_episode_count(),
          ("q7_unseen",), "the public diagnosis shared as 'the 4250-episode log is the "
          "saturated one': right on the public logs, healthy for every other"),
    Wrong("saturation_called_a_learning_rate_fault", F, RULE_PPO,
          RULE_PPO.replace('fault = "saturated_policy"', 'fault = "learning_rate_too_high"'),
          ("q5_faults", "q6_evidence"),
          "low entropy is not a too-large step (its KL and clip fraction are low)"),
    Wrong("everything_healthy", F, DIAGNOSE_BODY,
          DIAGNOSE_BODY + "    return 'healthy', {k: stats[k] for k in stats if k in th}\n",
          ("q5_faults", "q6_evidence", "q7_unseen"), "names no fault: earns nothing"),
    Wrong("evidence_made_up", F, CITED, "    return fault, {k: 0.1 for k in cited}\n",
          ("q6_evidence",), "right faults, numbers invented"),
    Wrong("evidence_missing", F, HEALTHY_CITE, HEALTHY_CITE.replace("CITE[fault]",
                                                                    "CITE[fault][:1]"),
          ("q6_evidence",), "the untrained critic's explained variance without its value loss"),
    Wrong("evidence_as_a_string", F, CITED,
          "    return fault, ', '.join(f'{k} = {stats[k]:.6g}' for k in cited)\n",
          ("q6_evidence",), "the old printed line, not a dict: said so",
          diagnosis="the evidence is a string; return a dict"),
    Wrong("evidence_rounded_to_2_digits", F, CITED,
          "    return fault, {k: float(f'{stats[k]:.2g}') for k in cited}\n",
          ("q6_evidence",), "2 significant digits: up to 5% off"),
    Wrong("diagnose_left_unimplemented", F, DIAGNOSE_BODY,
          "    raise NotImplementedError('diagnose')\n", ("q5_faults", "q6_evidence", "q7_unseen"),
          "the stub's diagnose()"),
]


RIGHT = [
    Right("entropy_guard_by_maximum", F, ENTROPY,
          "    p = np.exp(logp)\n    return -(p * np.log(np.maximum(p, 1e-300))).sum(axis=-1)\n",
          ("q1_entropy", "q6_evidence"), "the guard the stub allows: log(max(p, tiny))"),
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
    Right("diagnosis_in_another_hand", F, CITED,
          "    return f'  {fault.upper()} ', {k.upper(): np.float64(f'{stats[k]:.4g}') "
          "for k in cited}\n",
          ("q5_faults", "q6_evidence", "q7_unseen"),
          "upper case with blanks, numpy floats, 4 significant digits (the stub's wording)"),
    Right("diagnosis_as_a_list_in_single_precision", F, CITED,
          "    return [fault, {k: np.float32(stats[k]) for k in cited}]\n",
          ("q5_faults", "q6_evidence", "q7_unseen"),
          "a list instead of a tuple, the statistics as float32 (7 significant digits: the "
          "evidence asks for 4, so its gate takes any float width)"),
]
