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

# Classmates who pool what their q7 records told them (issue 47): each met a pool of their own,
# drawn per submission. What they tabulate is granted here at its most: the fault of every
# hidden log each met, beside the bookkeeping value their diagnose() saw (their feedback says
# only how many logs of each kind their answers got right, never which log was which).
CLASSMATES = ("classmate-0001", "classmate-0002", "classmate-0003")


def _by_bookkeeping(feature: str, table: dict) -> str:
    """diagnose() naming a log by one bookkeeping value (instructor/c_pool.py's
    ``bookkeeping``: the episodes listed, their return total) through
    ``table`` ({family: [[upper edge, fault], ...]}), citing the log's own numbers."""
    read = {"episodes": "len(log['episode_returns'])",
            "return total": "float(np.sum(log['episode_returns']))",
            "mean return": "float(np.mean(log['episode_returns']))"}[feature]
    table = {fam: [[min(edge, 1e300), fault] for edge, fault in rows]
             for fam, rows in table.items()}
    return (DIAGNOSE_BODY + f"    table = {table!r}\n"
            "    fam = 'ppo' if 'logits_before' in log else 'dqn'\n"
            f"    x = {read}\n"
            "    fault = next(f for edge, f in table[fam] if x <= edge)\n"
            "    cited = [k for k in stats if k in th] if fault == 'healthy' else CITE[fault]\n"
            "    return fault, {k: stats[k] for k in cited}\n")


def _colluders_lookup() -> str:
    """Three classmates' episode-count lookup: each hidden log they met named
    by its episode count's nearest neighbour among theirs (the buckets the
    issue's colluders fitted on their three submissions' feedback, with more
    than the feedback told them)."""
    from instructor import c_pool
    return _by_bookkeeping("episodes", c_pool.fit_lookup(
        c_pool.met_points("episodes", list(CLASSMATES), draw_key="their submission")))


def _colluders_mean_return_lookup() -> str:
    """The same three classmates' lookup by the mean return of the episodes a
    log lists: the returns' level, which the pool's kinds share across faults
    (a saturated policy that learned, a small buffer that starts late, a
    healthy DQN that learns fast)."""
    from instructor import c_pool
    return _by_bookkeeping("mean return", c_pool.fit_lookup(
        c_pool.met_points("mean return", list(CLASSMATES), draw_key="their submission")))


def _buckets_of_return_totals() -> str:
    """A bucket rule on the return total: per family, ten buckets of as many
    of the fitted logs (the five public logs and three pools drawn for others),
    each bucket the commonest fault of its logs."""
    import numpy as np
    from autograder.grading import config
    from autograder.judges import c_diagnose as judge
    from instructor import c_pool
    a = config.load("c_diagnose")
    points = [(judge.family(log), c_pool.bookkeeping(log)["return total"], fault)
              for fault, log in c_pool.public(a)]
    points += c_pool.met_points("return total", ["pool-draw-1", "pool-draw-2", "pool-draw-3"],
                                draw_key="a few draws", a=a)
    table = {}
    for fam in ("ppo", "dqn"):
        mine = sorted((v, f) for pf, v, f in points if pf == fam)
        edges = np.array_split(np.arange(len(mine)), 10)
        rows = []
        for idx in edges:
            faults = [mine[i][1] for i in idx]
            rows.append([mine[idx[-1]][0], max(sorted(set(faults)), key=faults.count)])
        rows[-1][0] = float("inf")
        table[fam] = rows
    return _by_bookkeeping("return total", table)


def _faults_by_call_order() -> str:
    """diagnose() as a classmate's q7 answer key, by call order: round 2's attack,
    when q7 was one list in one order for everyone and its feedback named hidden
    case k (a call counter over the logs that are not public answers the k-th
    fault of the classmate's pool). The classmate is id "classmate-0001"."""
    from autograder.grading import config, expected
    from autograder.grading.judging import HIDDEN_PHASE, Context
    from autograder.grading.reference import load_reference
    from autograder.harness.probe import InProcessCaller
    from autograder.judges import c_diagnose as judge
    a = config.load("c_diagnose")
    exp, _, _ = expected.load(a, ["q7_unseen"])
    caller = InProcessCaller(load_reference("c_diagnose", "diagnose.py"))
    ctx = Context(caller.call, a.params, public_only=False, expected=exp,
                  student_id="classmate-0001", constant=caller.constant, hidden=a.hidden,
                  question=a.question("q7_unseen"), phase=HIDDEN_PHASE)
    key = [c.fault for c in judge.students_logs(ctx)]
    public = sorted({int(judge.load_run(i, a.params)["episode_returns"].size)
                     for i in range(len(a.hidden["runs"]))})
    return (DIAGNOSE_BODY
            + f"    if len(log['episode_returns']) not in {public!r}:\n"
            + "        calls = getattr(diagnose, 'calls', 0)\n"
            + "        diagnose.calls = calls + 1\n"
            + f"        fault = {key!r}[calls % {len(key)}]\n"
            + "        if fault == 'healthy':\n"
            + "            cited = [k for k in stats if k in th]\n"
            + "        else:\n"
            + "            cited = CITE[fault]\n"
            + "        return fault, {k: stats[k] for k in cited}\n")


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
          ("q5_faults", "q7_unseen"),
          "the saturated policy reaches 500 and the small buffer outscores the healthy DQN: "
          "return does not name the faults (its evidence is the logs' own: q6 keeps it)"),
    Wrong("lookup_by_episode_count", F, DIAGNOSE_BODY, _lookup_by_episode_count(),
          ("q7_unseen",), "the public diagnosis shared as 'the 4250-episode log is the "
          "saturated one': right on the public logs, healthy for every other"),
    Wrong("lookup_by_episode_count_of_three_classmates", F, DIAGNOSE_BODY, _colluders_lookup(),
          ("q7_unseen",), "three classmates' q7 pools tabulated by episode count (each hidden "
          "log's fault beside the count their diagnose() saw): a log lists a drawn number of "
          "its episodes, the same way whatever its kind, so the count names nothing"),
    Wrong("lookup_by_mean_return_of_three_classmates", F, DIAGNOSE_BODY,
          _colluders_mean_return_lookup(), ("q7_unseen",),
          "three classmates' q7 pools tabulated by mean return (each hidden log's fault beside "
          "the mean their diagnose() saw): every fault's logs sit at return levels another "
          "kind's logs share, so the level names no fault"),
    Wrong("buckets_of_return_totals", F, DIAGNOSE_BODY, _buckets_of_return_totals(),
          ("q7_unseen",), "ten buckets of the return total fitted on the public logs and three "
          "pools' draws: the total is the mean return times a drawn count, so it says less "
          "than the returns, which do not name the faults"),
    Wrong("faults_by_call_order", F, DIAGNOSE_BODY, _faults_by_call_order(), ("q7_unseen",),
          "a classmate's hidden answers in the classmate's call order (a call counter): each "
          "student meets other logs in another order, so it earns about a guess"),
    Wrong("buffer_size_read_off_batch_slots", F,
          "    elif stats[\"batch_diversity\"] < th[\"batch_diversity\"] and \\\n"
          "            stats[\"sample_age\"] < th[\"sample_age\"]:\n",
          "    elif int(np.max(log[\"batch_slots\"])) + 1 < 1000:\n",
          ("q5_faults", "q6_evidence", "q7_unseen"),
          "round 2's reading of a setting: the largest buffer slot + 1 was the buffer's size; "
          "no log holds buffer slots now (no field names a setting), so it meets no such field"),
    Wrong("saturation_called_a_learning_rate_fault", F, RULE_PPO,
          RULE_PPO.replace('fault = "saturated_policy"', 'fault = "learning_rate_too_high"'),
          ("q5_faults", "q7_unseen"),
          "low entropy is not a too-large step (its KL and clip fraction are low)"),
    Wrong("everything_healthy", F, DIAGNOSE_BODY,
          DIAGNOSE_BODY + "    return 'healthy', {k: stats[k] for k in stats if k in th}\n",
          ("q5_faults", "q7_unseen"), "names no fault: earns nothing on q7 (a healthy log counts "
          "only beside a faulty one of its family found), q5's healthy part alone"),
    Wrong("evidence_made_up", F, CITED, "    return fault, {k: 0.1 for k in cited}\n",
          ("q6_evidence", "q7_unseen"), "right faults, numbers invented: the evidence's points "
          "only"),
    Wrong("evidence_missing", F, HEALTHY_CITE, HEALTHY_CITE.replace("CITE[fault]",
                                                                    "CITE[fault][:1]"),
          ("q6_evidence", "q7_unseen"),
          "the untrained critic's explained variance without its value loss",
          diagnosis="late_value_loss missing"),
    Wrong("evidence_as_a_string", F, CITED,
          "    return fault, ', '.join(f'{k} = {stats[k]:.6g}' for k in cited)\n",
          ("q6_evidence",), "the old printed line, not a dict: said so",
          diagnosis="the evidence is a string; return a dict"),
    Wrong("evidence_rounded_to_2_digits", F, CITED,
          "    return fault, {k: float(f'{stats[k]:.2g}') for k in cited}\n",
          ("q6_evidence",), "2 significant digits: up to 5% off"),
    Wrong("evidence_with_statistics_of_its_own", F, CITED,
          "    evidence = {k: stats[k] for k in cited}\n"
          "    evidence['late_entropy'] = 0.5\n"
          "    evidence['final_return'] = float(log['episode_returns'][-1])\n"
          "    return fault, evidence\n",
          ("q6_evidence", "q7_unseen"),
          "a right rule that also cites two numbers of its own: the public check names the "
          "unknown statistic; on the hidden logs it costs the evidence only, never the fault",
          diagnosis="cites 'late_entropy'"),
    Wrong("evidence_entropy_in_bits", F, CITED,
          "    return fault, {k: stats[k] / np.log(2.0) if k == 'early_entropy' else stats[k]\n"
          "                   for k in cited}\n",
          ("q6_evidence", "q7_unseen"),
          "right faults (decided in nats), the entropy cited in bits: named as bits before "
          "upload, the evidence's points only", diagnosis="in bits"),
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


# ------------------------------------------------------------------ diagnose(): other hands' rules
# Each rule below replaces the reference's diagnose() whole: it decides the fault its own way,
# from thresholds a student reads off the five public logs (their numbers as summary() prints
# them in the notebook), and cites what [params.cite] asks. RIGHT holds the honest readings:
# they must keep full marks on every student's hidden logs (tests/test_c_diagnose.py runs
# them on the whole pool); WRONG holds the careless readings the pool is built to catch.
DIAGNOSE_FN = _span("def diagnose(log):\n", CITED)
CITE_TAIL = """    if fault == "healthy":
        cited = [k for k in stats if k in THRESHOLDS]
    else:
        cited = CITE[fault]
    return fault, {k: stats[k] for k in cited}
"""
# The public logs' summaries (nats; steps), as the notebook prints them.
PUBLIC = """
# The five public logs' summaries, as the notebook printed them.
PUB_SAT_ENTROPY, PUB_HEALTHY_ENTROPY, PUB_CRITIC_ENTROPY = 0.00996, 0.6124, 0.5993
PUB_CRITIC_EV, PUB_HEALTHY_EV = -0.00303, 0.4592
PUB_CRITIC_LOSS, PUB_SAT_LOSS, PUB_HEALTHY_LOSS = 121.06, 0.02863, 1.677e-05
PUB_SMALL_DIVERSITY, PUB_HEALTHY_DIVERSITY = 1.18, 35.88
PUB_SMALL_AGE, PUB_HEALTHY_AGE = 15.62, 4994.6
"""


def _rule(body: str, helpers: str = "") -> str:
    """A whole diagnose() deciding ``fault`` by ``body`` (``stats = summary(log)``
    at hand, ``ppo``: the log is a PPO log), citing as the reference does."""
    return (PUBLIC + helpers + "\n\ndef diagnose(log):\n    stats = summary(log)\n"
            "    ppo = \"logits_before\" in log\n" + body + CITE_TAIL)


HONEST = {
    "midpoint_cuts": ("each cut halfway between the public faulty log and the nearest other "
                      "public log: entropy 0.305, explained variance 0.228, diversity 18.5", """
    if ppo and stats["early_entropy"] < (PUB_SAT_ENTROPY + PUB_CRITIC_ENTROPY) / 2:
        fault = "saturated_policy"
    elif ppo and stats["early_explained_variance"] < (PUB_CRITIC_EV + PUB_HEALTHY_EV) / 2:
        fault = "untrained_critic"
    elif not ppo and stats["batch_diversity"] < (PUB_SMALL_DIVERSITY + PUB_HEALTHY_DIVERSITY) / 2:
        fault = "undersized_buffer"
    else:
        fault = "healthy"
""", ""),
    "small_fractions_of_ln2": ("a saturated policy keeps under a ninth of ln 2 (0.077); a "
                               "critic that explains under a tenth of the variance; batches of "
                               "under a tenth of the batch's 64 samples' episodes", """
    if ppo:
        if stats["early_entropy"] < np.log(2.0) / 9:
            fault = "saturated_policy"
        elif stats["early_explained_variance"] < 0.1:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        fault = "undersized_buffer" if stats["batch_diversity"] < 6.4 else "healthy"
""", ""),
    "large_fractions_of_ln2": ("entropy under 0.7 ln 2 (0.485), explained variance under 0.8 "
                               "of the healthy log's (0.367), samples younger than a tenth of "
                               "the healthy log's age", """
    if ppo:
        if stats["early_entropy"] < 0.7 * np.log(2.0):
            fault = "saturated_policy"
        elif stats["early_explained_variance"] < 0.8 * PUB_HEALTHY_EV:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        fault = "undersized_buffer" if stats["sample_age"] < PUB_HEALTHY_AGE / 10 else "healthy"
""", ""),
    "geometric_means": ("cuts at the geometric mean of the faulty and the healthy public "
                        "values: entropy 0.077, late value loss 1.86, diversity 6.5 and age "
                        "279", """
    if ppo:
        if stats["early_entropy"] < np.sqrt(PUB_SAT_ENTROPY * PUB_CRITIC_ENTROPY):
            fault = "saturated_policy"
        elif stats["late_value_loss"] > np.sqrt(PUB_CRITIC_LOSS * PUB_SAT_LOSS):
            fault = "untrained_critic"
        else:
            fault = "healthy"
    elif stats["batch_diversity"] < np.sqrt(PUB_SMALL_DIVERSITY * PUB_HEALTHY_DIVERSITY) and \\
            stats["sample_age"] < np.sqrt(PUB_SMALL_AGE * PUB_HEALTHY_AGE):
        fault = "undersized_buffer"
    else:
        fault = "healthy"
""", ""),
    "whole_run_medians": ("the median over all 60 updates (or every logged batch) of each "
                          "curve, not the windows, cut halfway between the public logs' "
                          "medians", """
    if ppo:
        ent = float(np.median(entropy(log["logits_before"]).mean(axis=-1)))
        loss = float(np.median(value_loss(log["values"], log["value_targets"])))
        if ent < (0.1402 + 0.5027) / 2:         # the public medians: saturated, healthy
            fault = "saturated_policy"
        elif loss > (0.4517 + 118.8) / 2:       # saturated (the larger other), untrained
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        diversity = float(np.median(batch_diversity(log["batch_episode"])))
        fault = "undersized_buffer" if diversity < (1.0 + 36.0) / 2 else "healthy"
""", ""),
    "trends_and_ratios": ("ratios instead of levels: entropy under a quarter of its maximum "
                          "ln 2, a critic whose loss falls by less than half from the early to "
                          "the late window, samples younger than 1% of the step they are drawn "
                          "at", """
    if ppo:
        (e0, e1), (l0, l1) = EARLY, LATE
        early_loss = float(np.mean(value_loss(log["values"][e0:e1], log["value_targets"][e0:e1])))
        if stats["early_entropy"] / np.log(2.0) < 0.25:
            fault = "saturated_policy"
        elif stats["late_value_loss"] > 0.5 * early_loss:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        ratio = stats["sample_age"] / float(np.mean(log["batch_step"]))
        fault = "undersized_buffer" if ratio < 0.01 else "healthy"
""", ""),
    "nearest_public_exemplar": ("the fault of the nearest public log of the family, in "
                                "log-entropy and log-value-loss (PPO), log-diversity and "
                                "log-age (DQN)", """
    if ppo:
        x = (np.log(stats["early_entropy"] + 1e-6), np.log(stats["late_value_loss"] + 1e-2))
        exemplars = {"saturated_policy": (PUB_SAT_ENTROPY, PUB_SAT_LOSS),
                     "untrained_critic": (PUB_CRITIC_ENTROPY, PUB_CRITIC_LOSS),
                     "healthy": (PUB_HEALTHY_ENTROPY, PUB_HEALTHY_LOSS)}
        fault = min(exemplars, key=lambda f: _distance(x, (np.log(exemplars[f][0] + 1e-6),
                                                           np.log(exemplars[f][1] + 1e-2))))
    else:
        x = (np.log(stats["batch_diversity"]), np.log(stats["sample_age"] + 1.0))
        exemplars = {"undersized_buffer": (PUB_SMALL_DIVERSITY, PUB_SMALL_AGE),
                     "healthy": (PUB_HEALTHY_DIVERSITY, PUB_HEALTHY_AGE)}
        fault = min(exemplars, key=lambda f: _distance(x, (np.log(exemplars[f][0]),
                                                           np.log(exemplars[f][1] + 1.0))))
""", """

def _distance(a, b):
    return float(np.hypot(a[0] - b[0], a[1] - b[1]))
"""),
    "per_update_votes": ("each early update (or logged batch) votes; a fault named by more "
                         "than half the votes", """
    if ppo:
        e0, e1 = EARLY
        ent = entropy(log["logits_before"][e0:e1]).mean(axis=-1)
        ev = explained_variance(log["values"][e0:e1], log["value_targets"][e0:e1])
        votes = np.where(ent < 0.3, 1, np.where(ev < 0.2, 2, 0))
        counts = np.bincount(votes, minlength=3)
        fault = ("healthy", "saturated_policy", "untrained_critic")[
            int(np.argmax(counts)) if counts.max() > len(votes) / 2 else 0]
    else:
        votes = batch_diversity(log["batch_episode"]) < 8
        fault = "undersized_buffer" if votes.mean() > 0.5 else "healthy"
""", ""),
    "critic_first": ("reads the critic first: a late value loss above 10 is an untrained "
                     "critic, then an entropy under 0.2 a saturated policy; samples under 300 "
                     "steps old an undersized buffer", """
    if ppo:
        if stats["late_value_loss"] > 10.0:
            fault = "untrained_critic"
        elif stats["early_entropy"] < 0.2:
            fault = "saturated_policy"
        else:
            fault = "healthy"
    else:
        fault = "undersized_buffer" if stats["sample_age"] < 300.0 else "healthy"
""", ""),
    "both_critic_statistics": ("an untrained critic only when both its statistics say so "
                               "(explained variance under 0.25 and late loss above 20); "
                               "entropy under 0.1; diversity under 6 and age under 500", """
    if ppo:
        if stats["early_entropy"] < 0.1:
            fault = "saturated_policy"
        elif stats["early_explained_variance"] < 0.25 and stats["late_value_loss"] > 20.0:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    elif stats["batch_diversity"] < 6.0 and stats["sample_age"] < 500.0:
        fault = "undersized_buffer"
    else:
        fault = "healthy"
""", ""),
    "percentiles": ("percentiles instead of means: the 90th percentile of the early states' "
                    "entropies under 0.3, the median early update's explained variance under "
                    "0.2, the 90th percentile of the batches' diversity under 10", """
    if ppo:
        e0, e1 = EARLY
        if np.percentile(entropy(log["logits_before"][e0:e1]), 90) < 0.3:
            fault = "saturated_policy"
        elif np.median(explained_variance(log["values"][e0:e1],
                                          log["value_targets"][e0:e1])) < 0.2:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        p90 = np.percentile(batch_diversity(log["batch_episode"]), 90)
        fault = "undersized_buffer" if p90 < 10.0 else "healthy"
""", ""),
    "ratios_to_the_healthy_log": ("each statistic against the healthy public log's: a "
                                  "quarter of its entropy (0.153), a third of its explained "
                                  "variance (0.153); a fifth of its diversity and a twentieth "
                                  "of its age", """
    if ppo:
        if stats["early_entropy"] < PUB_HEALTHY_ENTROPY / 4:
            fault = "saturated_policy"
        elif stats["early_explained_variance"] < PUB_HEALTHY_EV / 3:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    elif stats["batch_diversity"] < PUB_HEALTHY_DIVERSITY / 5 and \\
            stats["sample_age"] < PUB_HEALTHY_AGE / 20:
        fault = "undersized_buffer"
    else:
        fault = "healthy"
""", ""),
}

CARELESS = {
    "late_window_explained_variance": (
        "reads the critic's explained variance in the last updates (50-59): a healthy agent "
        "that has converged has targets that barely vary there, so it looks untrained (the "
        "public healthy PPO, and hidden ones that converge)", """
    if ppo:
        l0, l1 = LATE
        late_ev = float(np.mean(explained_variance(log["values"][l0:l1],
                                                   log["value_targets"][l0:l1])))
        if stats["early_entropy"] < 0.3:
            fault = "saturated_policy"
        elif late_ev < 0.2:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        fault = "undersized_buffer" if stats["batch_diversity"] < 6.0 else "healthy"
""", ("q5_faults", "q7_unseen")),
    "cuts_at_twice_the_public_faults": (
        "thresholds at twice the public faulty log's value (half, for the value loss): they "
        "recognise the public faults' severity, not the faults (milder saturation and buffers "
        "of 64 slots or more pass as healthy)", """
    if ppo:
        if stats["early_entropy"] < 2 * PUB_SAT_ENTROPY:
            fault = "saturated_policy"
        elif stats["late_value_loss"] > PUB_CRITIC_LOSS / 2:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    elif stats["batch_diversity"] < 2 * PUB_SMALL_DIVERSITY and \\
            stats["sample_age"] < 2 * PUB_SMALL_AGE:
        fault = "undersized_buffer"
    else:
        fault = "healthy"
""", ("q7_unseen",)),
    "kl_read_first_at_a_target_kl": (
        "a KL above 0.01 (a usual target KL of PPO) read first as a too-large step: it names "
        "the public saturated log learning_rate_too_high, a fault no log of the handout has, "
        "which q6 says before upload (without charging it); q5 and q7 charge it", """
    if ppo:
        if stats["early_approx_kl"] > 0.01:
            fault = "learning_rate_too_high"
        elif stats["early_entropy"] < 0.3:
            fault = "saturated_policy"
        elif stats["late_value_loss"] > 10.0:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        fault = "undersized_buffer" if stats["batch_diversity"] < 6.0 else "healthy"
""", ("q5_faults", "q7_unseen")),
    "kl_read_first": (
        "reads a large KL as the learning-rate fault before anything else: a saturated policy "
        "that escapes takes huge steps, so it is named learning_rate_too_high", """
    if ppo:
        if stats["early_approx_kl"] > 2 * 0.0157:       # twice the largest public KL
            fault = "learning_rate_too_high"
        elif stats["early_entropy"] < 0.3:
            fault = "saturated_policy"
        elif stats["late_value_loss"] > 10.0:
            fault = "untrained_critic"
        else:
            fault = "healthy"
    else:
        fault = "undersized_buffer" if stats["batch_diversity"] < 6.0 else "healthy"
""", ("q7_unseen",)),
}

RIGHT += [Right(f"diagnose_by_{name}", F, DIAGNOSE_FN, _rule(body, helpers),
                ("q5_faults", "q6_evidence", "q7_unseen"), why)
          for name, (why, body, helpers) in HONEST.items()]
WRONG += [Wrong(f"diagnose_by_{name}", F, DIAGNOSE_FN, _rule(body), loses, why)
          for name, (why, body, loses) in CARELESS.items()]
