"""Wrong submissions for capstone B, each losing points where it should, and
correct work in other styles that keeps full marks."""
from . import Right, Wrong

F = "ablations.py"
J = "ablation_results.json"
STATS = """    m2 = var * count + batch_var * n + delta * delta * count * n / total
    return new_mean, m2 / total, float(total)"""
NORM = """    z = (np.asarray(obs, dtype=np.float64) - mean) / np.sqrt(var + OBS_EPS)
    return np.clip(z, -OBS_CLIP, OBS_CLIP)"""
TRUNK = """    trunk = [{k: pg[k] + vg[k] for k in ("W", "b")}
             for pg, vg in zip(policy_grads[:num_shared], value_grads[:num_shared])]
    return trunk + [policy_grads[num_shared], value_grads[num_shared]]"""
HP = "    hp = {**BASELINE, **(hp or {})}\n    rng = np.random.default_rng(seed)\n"
ADV = "        advantages, returns = advantages_and_returns(ro, hp)\n"
CHOSEN_OLD = '''    "no advantage normalisation",
    "no gradient clipping",'''
FACTORS_OLD = '''FACTORS = "; ".join([           # the chosen factors that matter by the criterion; "none" if none
    "shared network",
])'''

WRONG = [
    # ------------------------------------------------------------------ new pieces
    Wrong("obs_stats_unbiased_batch_variance", F,
          "batch_mean, batch_var = obs.mean(axis=0), obs.var(axis=0)",
          "batch_mean, batch_var = obs.mean(axis=0), obs.var(axis=0, ddof=1)",
          ("q1_obs_normalisation",), "ddof=1 where the running statistics are population ones"),
    Wrong("obs_stats_without_cross_term", F, STATS,
          "    m2 = var * count + batch_var * n\n    return new_mean, m2 / total, float(total)",
          ("q1_obs_normalisation",), "drops delta**2 * count * n / total: variance too small"),
    Wrong("obs_stats_count_not_advanced", F, STATS,
          STATS.replace("float(total)", "float(count)"), ("q1_obs_normalisation",),
          "the running count never grows, so new batches keep their full weight"),
    Wrong("normalise_obs_by_std_without_eps_or_clip", F, NORM,
          "    return (np.asarray(obs, dtype=np.float64) - mean) / np.sqrt(var)",
          ("q1_obs_normalisation",), "no clip at +-10: extreme observations pass unclipped"),
    Wrong("normalise_obs_divides_by_variance", F, NORM,
          NORM.replace("np.sqrt(var + OBS_EPS)", "(var + OBS_EPS)"), ("q1_obs_normalisation",)),
    Wrong("shared_trunk_gets_policy_gradient_only", F, TRUNK,
          TRUNK.replace("pg[k] + vg[k]", "pg[k] + 0.0 * vg[k]"),
          ("q2_shared_gradients",), "the value loss never reaches the trunk (q3's loop calls "
          "this piece too, so there only q2 can see it)"),
    Wrong("shared_trunk_gradient_averaged", F, TRUNK,
          TRUNK.replace("pg[k] + vg[k]", "0.5 * (pg[k] + vg[k])"), ("q2_shared_gradients",)),
    Wrong("shared_heads_swapped", F, TRUNK,
          TRUNK.replace("[policy_grads[num_shared], value_grads[num_shared]]",
                        "[value_grads[num_shared], policy_grads[num_shared]]"),
          ("q2_shared_gradients",), "the heads' gradients in the wrong order (and shapes)"),
    # ------------------------------------------------------------------ switches
    Wrong("norm_obs_switch_does_nothing", F,
          "        env = NormalisedObs(env, update_obs_stats, normalise_obs)",
          "        env = NormalisedObs(env, update_obs_stats, lambda obs, mean, var: obs)",
          ("q3_switches",), "statistics kept, observations never normalised"),
    Wrong("norm_obs_switch_crashes", F, '    if hp["norm_obs"]:\n        env = ',
          '    if False:  # TODO\n        env = ', ("q3_switches",),
          "never wrapped: train() then crashes reading the statistics"),
    Wrong("shared_network_switch_does_nothing", F, '    shared = hp["shared_network"]\n',
          "    shared = False\n", ("q3_switches",)),
    Wrong("no_adv_norm_also_stops_gradient_clipping", F, HP,
          HP + '    if not hp["norm_adv"]:\n        hp["max_grad_norm"] = None\n',
          ("q3_switches",), "the 'no advantage normalisation' switch changes two things"),
    Wrong("norm_obs_also_scales_rewards", F, ADV,
          '        if hp["norm_obs"]:\n            ro["rewards"] = ro["rewards"] / 10.0\n' + ADV,
          ("q3_switches",), "observation normalisation that also scales rewards"),
    Wrong("full_batch_also_changes_epochs", F, HP,
          HP + '    if hp["num_minibatches"] == 1:\n        hp["update_epochs"] = 4\n',
          ("q3_switches",), "switch 'one minibatch' also shortens training"),
    Wrong("no_grad_clip_switch_ignored", F, HP,
          HP + '    hp["max_grad_norm"] = BASELINE["max_grad_norm"]\n', ("q3_switches",),
          "max_grad_norm=None is overwritten: the switch does nothing"),
    Wrong("train_arrays_ignores_the_switches", F,
          "    run = train(seed, updates, hp)\n",
          "    run = train(seed, updates, {\"num_envs\": 2, \"num_steps\": 32, \"update_epochs\": 2,"
          " \"num_minibatches\": 2})  # tuned for the checker\n",
          ("q3_switches",), "the checker's sizes hard-coded: every switch does nothing"),
    # ------------------------------------------------------------------ the claim
    Wrong("chosen_names_four", F, CHOSEN_OLD, '    "no advantage normalisation",',
          ("q3_switches", "q4_claim", "q5_table"), "four entries where five are asked"),
    Wrong("chosen_names_unknown_entry", F, CHOSEN_OLD,
          '    "advantage normalization",\n    "no gradient clipping",',
          ("q3_switches", "q4_claim", "q5_table")),
    Wrong("factors_none_when_one_qualifies", F, FACTORS_OLD, 'FACTORS = "none"',
          ("q4_claim", "q5_table"), "'none qualifies' beside a robustly qualifying factor"),
    Wrong("factors_names_a_harmless_one", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n'
                              '    "no gradient clipping",'),
          ("q4_claim", "q5_table"), "a claim the criterion rejects: a robustly harmless factor"),
    Wrong("factors_not_among_chosen", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n    "4 epochs instead of 10",'),
          ("q4_claim", "q5_table"), "a factor that was not ablated"),
    Wrong("table_contradicts_the_claim", J, '"shared network",\n  2,\n  163.0',
          '"shared network",\n  2,\n  500.0', ("q5_table",),
          "one run of the table moved: by the criterion the shared network no longer qualifies"),
]

RIGHT = [
    Right("obs_stats_by_sums_of_squares", F, STATS,
          "    second = (count * (var + mean * mean) + n * (batch_var + batch_mean * batch_mean))"
          " / total\n    return new_mean, second - new_mean * new_mean, float(total)",
          ("q1_obs_normalisation",), "E[x^2] - E[x]^2: another formula, other roundings"),
    Right("normalise_obs_by_reciprocal", F, NORM,
          "    scale = 1.0 / np.sqrt(var + OBS_EPS)\n"
          "    z = (np.asarray(obs, dtype=np.float64) - mean) * scale\n"
          "    return np.minimum(np.maximum(z, -OBS_CLIP), OBS_CLIP)", ("q1_obs_normalisation",)),
    Right("shared_gradients_by_loop", F, TRUNK,
          "    out = []\n    for i in range(num_shared):\n"
          "        out.append({\"W\": policy_grads[i][\"W\"] + value_grads[i][\"W\"],\n"
          "                    \"b\": value_grads[i][\"b\"] + policy_grads[i][\"b\"]})\n"
          "    out.append(policy_grads[-1])\n    out.append(value_grads[-1])\n    return out",
          ("q2_shared_gradients", "q3_switches"), "a loop, the sum in the other order"),
    Right("claim_names_a_borderline_factor", F, FACTORS_OLD,
          FACTORS_OLD.replace('    "shared network",', '    "shared network",\n'
                              '    "one minibatch (full batch)",'),
          ("q4_claim",), "one minibatch qualifies on some seed triples and not on others "
          "(borderline in bench/ablations_table.py): accepted either way"),
    Right("claim_in_other_spelling", F, FACTORS_OLD,
          'FACTORS = """\n  Shared   NETWORK ;\n"""',
          ("q4_claim", "q5_table"), "case, spacing and newlines as separators"),
]
