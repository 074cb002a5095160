"""Wrong submissions for capstone A, each losing points where it should."""
from . import Right, Wrong

NEXT_V = ("next_values = np.where(terminated, 0.0, np.where(truncated, final_values, "
          "values[1:]))")
CARRY = "carry = gamma * lam * (~(terminated | truncated))"
ACTIVE = ("active = np.where(advantages >= 0, rho <= 1.0 + clip_eps, rho >= 1.0 - clip_eps)")
LR = '        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]'  # train()'s
WEIGHT = "\n    weight = np.where(active, rho * advantages, 0.0) * (-1.0 / B)"   # the piece, not the fused copy

WRONG = [
    Wrong("gae_without_done_masking", "ppo.py", CARRY, "carry = gamma * lam * np.ones_like(rewards)",
          ("q2_gae",), "advantages leak across episode boundaries"),
    Wrong("gae_no_bootstrap_on_truncation", "ppo.py", NEXT_V,
          "next_values = np.where(terminated | truncated, 0.0, values[1:])", ("q2_gae",),
          "CleanRL's one done flag", diagnosis="your GAE does not bootstrap at truncations: at step"),
    Wrong("gae_float32_masks", "ppo.py", CARRY,
          "carry = gamma * lam * (1.0 - (terminated | truncated).astype(np.float32))",
          ("q2_gae",), "SB3's float32 flags: under numpy 2 the carry is float32",
          diagnosis="right to about single precision only"),
    Wrong("gae_bootstrap_through_termination", "ppo.py", NEXT_V,
          "next_values = np.where(terminated | truncated, final_values, values[1:])",
          ("q2_gae",), diagnosis="your GAE bootstraps at terminations"),
    Wrong("gae_bootstrap_from_reset_observation", "ppo.py", NEXT_V,
          "next_values = np.where(terminated, 0.0, values[1:])", ("q2_gae",),
          "values[t+1] after a time-limit end is the next episode's first state"),
    Wrong("gae_bootstraps_terminal_on_last_step", "ppo.py", NEXT_V,
          NEXT_V + "\n    next_values[-1] = final_values[-1]  # the rollout's end: bootstrap V(o)",
          ("q2_gae",), "Spinning Up's buffer: at the rollout's end V(last obs) even where the "
          "episode terminated there",
          diagnosis="bootstraps V(final obs) where an episode terminated on the rollout's last"),
    Wrong("returns_as_monte_carlo_targets", "ppo.py",
          "    return advantages, advantages + values[:-1]",
          "    mc = np.zeros_like(rewards)\n    running = values[-1].copy()\n"
          "    for t in range(rewards.shape[0] - 1, -1, -1):\n"
          "        running = np.where(terminated[t], 0.0, np.where(truncated[t], final_values[t],"
          " running))\n"
          "        running = rewards[t] + gamma * running\n        mc[t] = running\n"
          "    return advantages, mc", ("q2_gae",),
          "bootstrapped Monte Carlo targets: equal to A + V only at lambda = 1",
          diagnosis="your returns are the discounted rewards-to-go"),
    Wrong("norm_adv_switch_ignored", "ppo.py", '    if hp["norm_adv"]:\n',
          "    if True:  # always normalise\n", ("q6_minibatch_update",),
          diagnosis='match a step with the norm_adv switch ignored'),
    Wrong("clipping_when_switched_off", "ppo.py",
          '    else:\n        grad_norm = global_norm(policy_grads + value_grads)',
          '    else:\n        grad_norm = clip_grad_norm(policy_grads + value_grads, 0.5)',
          ("q6_minibatch_update",), "max_grad_norm = None still clips at 0.5",
          diagnosis='match a step with gradients clipped at 0.5 although max_grad_norm is None'),
    Wrong("clip_width_hard_coded_in_update", "ppo.py", '    clip_eps = hp["clip_eps"]\n',
          "    clip_eps = 0.2\n", ("q6_minibatch_update",),
          diagnosis='match a step with the clip width fixed at 0.2'),
    Wrong("clip_vloss_switch_ignored", "ppo.py", '    if hp.get("clip_vloss", False):\n',
          "    if False:\n", ("q6_minibatch_update",),
          diagnosis='match a step with the clip_vloss switch ignored'),
    Wrong("gradients_clipped_per_network", "ppo.py",
          '        grad_norm = clip_grad_norm(policy_grads + value_grads, hp["max_grad_norm"],\n'
          '                                   vector=grad_vector)',
          '        grad_norm = clip_grad_norm(policy_grads, hp["max_grad_norm"])\n'
          '        clip_grad_norm(value_grads, hp["max_grad_norm"])',
          ("q6_minibatch_update",), "two norms instead of one joint norm",
          diagnosis="match a step with each network's gradients clipped on their own"),
    Wrong("approx_kl_is_the_old_estimator", "ppo.py",
          '"approx_kl": float(np.add.reduce(ratio_minus_1 - logratio)) / B,',
          '"approx_kl": float(-np.mean(logratio)),', ("q6_minibatch_update",),
          "the k1 estimator where the handout asks for k3",
          diagnosis="approx_kl (matches the k1 estimator mean(-logratio) (old_approx_kl's)",
          not_said="the two KL estimators swapped"),
    Wrong("clipfrac_counts_inside_the_band", "ppo.py",
          '"clipfrac": np.count_nonzero(np.abs(ratio_minus_1) > clip_eps) / B,',
          '"clipfrac": float(np.mean(np.abs(ratio_minus_1) <= clip_eps)),',
          ("q6_minibatch_update",),
          diagnosis='the statistics that differ: clipfrac'),
    Wrong("value_loss_not_weighted", "ppo.py",
          '(hp["vf_coef"] * dvalues)[:, None],', "dvalues[:, None],", ("q6_minibatch_update",),
          "vf_coef left out of the value network's gradient",
          diagnosis="match a step with the value loss not weighted by vf_coef"),
    Wrong("value_loss_without_its_half", "ppo.py",
          "    return 0.5 * (float(np.add.reduce(diff * diff)) / B), diff / B",
          "    return float(np.add.reduce(diff * diff)) / B, 2.0 * diff / B",
          ("q6_minibatch_update",), "SB3's and Spinning Up's mse_loss (at vf_coef 0.5 the same "
          "step as a value loss not weighted by vf_coef)",
          diagnosis="match a step with the value loss without its 1/2 (mean",
          not_said="not weighted by vf_coef"),
    Wrong("advantages_normalised_with_sample_std", "ppo.py",
          "        advantages = _normalised(advantages)",
          "        advantages = (advantages - advantages.mean()) / (advantages.std(ddof=1) + 1e-8)",
          ("q6_minibatch_update",), "its own normalisation, with ddof=1, inside the update",
          diagnosis="match a step with advantages normalised with the sample std"),
    Wrong("entropy_bonus_lowers_entropy", "ppo.py",
          "        grad += ent_coef * (p * (logp_all + H[:, None]) / B)",
          "        grad -= ent_coef * (p * (logp_all + H[:, None]) / B)",
          ("q6_minibatch_update",), "the entropy term subtracted from the loss's gradient",
          diagnosis="match a step with the entropy term with the wrong sign"),
    Wrong("kl_measured_after_the_step", "ppo.py",
          "    ratio_minus_1 = ratio - 1.0\n",
          "    new_logits, _ = forward(policy_params, obs)          # after the step\n"
          "    logratio = categorical_log_prob(new_logits, actions) - batch[\"logp_old\"]\n"
          "    ratio_minus_1 = np.exp(logratio) - 1.0\n",
          ("q6_minibatch_update",), "KL and clip fraction of the updated policy",
          diagnosis="approx_kl (matches measured after the step)"),
    Wrong("grad_norm_after_clipping", "ppo.py",
          '        "grad_norm": float(grad_norm),',
          '        "grad_norm": global_norm(policy_grads + value_grads),  # the clipped gradients',
          ("q6_minibatch_update",), "the norm of the clipped gradients",
          diagnosis="grad_norm (matches the norm after clipping)"),
    Wrong("train_without_lr_annealing", "ppo.py",
          LR,
          '        lr = hp["lr"]', ("q8_train",), "ignores anneal_lr",
          diagnosis="matches the judge's loop with the learning rate not annealed"),
    Wrong("train_one_permutation_per_update", "ppo.py",
          "        for _ in range(hp[\"update_epochs\"]):\n            perm = rng.permutation(batch_size)\n",
          "        perm = rng.permutation(batch_size)\n        for _ in range(hp[\"update_epochs\"]):\n",
          ("q8_train",), "the same minibatches every epoch",
          diagnosis="matches the judge's loop with one permutation per update"),
    Wrong("train_lr_schedule_one_update_ahead", "ppo.py",
          LR, LR.replace("u / updates", "(u + 1) / updates"),
          ("q8_train",), "SB3's progress_remaining, counted after the update's rollout",
          diagnosis="the learning-rate schedule one update ahead"),
    Wrong("train_lr_schedule_one_update_late", "ppo.py",
          LR, LR.replace("u / updates", "max(u - 1, 0) / updates"),
          ("q8_train",), "the rate of the update before (a scheduler stepped before it is read)",
          diagnosis="the learning-rate schedule one update late"),
    Wrong("train_advantages_normalised_over_the_batch", "ppo.py",
          "        t1 = time.perf_counter()\n",
          "        t1 = time.perf_counter()\n"
          "        if \"batch_norm_adv\" not in hp:  # minibatch_update must not normalise again\n"
          "            hp = {**hp, \"batch_norm_adv\": hp[\"norm_adv\"], \"norm_adv\": False}\n"
          "        if hp[\"batch_norm_adv\"]:  # once over the whole batch, not per minibatch\n"
          "            flat[\"advantages\"] = normalise_advantages(flat[\"advantages\"])\n",
          ("q8_train",),
          "SB3 before its per-minibatch normalisation, and many ports: the batch's statistics",
          diagnosis="the advantages normalised once over the whole batch"),
    Wrong("train_anneals_the_policy_lr_only", "ppo.py", "        policy_opt.lr = value_opt.lr = lr",
          "        policy_opt.lr = lr", ("q8_train",), "the value optimiser keeps hp['lr']",
          diagnosis="only the policy optimiser's learning rate annealed"),
    Wrong("train_resets_every_update", "ppo.py", '        obs = ro["next_obs"]',
          "        obs = env.reset()  # a fresh start for every rollout", ("q8_train",),
          "episodes cut at every update (and never truncated by the time limit)",
          diagnosis="the environments reset at every update"),
    Wrong("train_minibatches_in_rollout_order", "ppo.py",
          "            perm = rng.permutation(batch_size)\n",
          "            perm = np.arange(batch_size)  # no shuffling\n", ("q8_train",),
          diagnosis="the minibatches taken in rollout order"),
    Wrong("value_loss_piece_without_its_half", "ppo.py",
          "    return float(0.5 * np.mean(diff * diff)), diff / diff.shape[0]",
          "    return float(np.mean(diff * diff)), 2.0 * diff / diff.shape[0]", ("q5_losses",),
          "SB3's and Spinning Up's mse_loss",
          diagnosis="your value loss is mean((v - R)^2), without its 1/2"),
    Wrong("advantages_normalised_without_epsilon", "ppo.py",
          "    return (adv - adv.mean()) / (adv.std() + ADV_EPS)",
          "    return (adv - adv.mean()) / adv.std()", ("q5_losses",),
          diagnosis="your advantages are normalised without the epsilon"),
    Wrong("advantages_normalised_in_place", "ppo.py",
          "    return (adv - adv.mean()) / (adv.std() + ADV_EPS)",
          "    adv -= adv.mean()\n    adv /= adv.std() + ADV_EPS\n    return adv", ("q5_losses",),
          "the right numbers, but the caller's array is overwritten"),
    Wrong("clip_width_hard_coded_in_loss", "ppo.py", ACTIVE + WEIGHT,
          "active = np.where(advantages >= 0, rho <= 1.2, rho >= 0.8)" + WEIGHT,
          ("q4_clipped_gradient",), "right at the default eps = 0.2 only",
          diagnosis="gradient matches the clip width fixed at 0.2"),
    Wrong("symmetric_clip_band_in_loss", "ppo.py", ACTIVE + WEIGHT,
          "active = np.abs(rho - 1.0) <= clip_eps" + WEIGHT, ("q4_clipped_gradient",),
          "drops the gradient outside the band for both advantage signs",
          diagnosis="gradient matches a gradient held wherever |rho - 1| > eps"),
    Wrong("ratio_inverted", "ppo.py",
          "np.exp(np.asarray(logp_new, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64))",
          "np.exp(np.asarray(logp_old, dtype=np.float64) - np.asarray(logp_new, dtype=np.float64))",
          ("q3_ratio", "q4_clipped_gradient"),
          diagnosis="loss matches the ratio inverted (pi_old / pi_new"),
    Wrong("ratio_always_one", "ppo.py",
          "    return np.exp(np.asarray(logp_new, dtype=np.float64) - np.asarray(logp_old, "
          "dtype=np.float64))",
          "    return np.ones_like(np.asarray(logp_new, dtype=np.float64))",
          ("q3_ratio",), "a do-nothing ratio passes 'ratio is 1' but not the off-policy case"),
    Wrong("min_max_swapped", "ppo.py", "    loss = -np.minimum(unclipped, clipped).mean()",
          "    loss = -np.maximum(unclipped, clipped).mean()", ("q4_clipped_gradient",),
          diagnosis="loss matches max instead of min"),
    Wrong("dual_clip", "ppo.py", "    loss = -np.minimum(unclipped, clipped).mean()\n\n    "
          + ACTIVE + WEIGHT,
          "    surrogate = np.minimum(unclipped, clipped)\n"
          "    surrogate = np.where(advantages < 0, np.maximum(surrogate, 3.0 * advantages),"
          " surrogate)\n    loss = -surrogate.mean()\n\n    " + ACTIVE
          + "\n    active &= ~((advantages < 0) & (rho > 3.0))  # dual clip, c = 3" + WEIGHT,
          ("q4_clipped_gradient",), "verl's dual-clip bound clip_ratio_c = 3 for A < 0 (Ye et "
          "al. 2020): not the section's objective",
          diagnosis="loss matches the dual-clip objective"),
    Wrong("clip_active_on_wrong_side", "ppo.py", ACTIVE + WEIGHT,
          "active = np.where(advantages >= 0, rho >= 1.0 - clip_eps, rho <= 1.0 + clip_eps)"
          + WEIGHT, ("q4_clipped_gradient",),
          diagnosis="gradient matches max instead of min"),
    Wrong("gradient_sign_flipped", "ppo.py",
          "weight = np.where(active, rho * advantages, 0.0) * (-1.0 / B)",
          "weight = np.where(active, rho * advantages, 0.0) * (1.0 / B)",
          ("q4_clipped_gradient", "q7_bar"), "gradient ascent on the loss: the policy unlearns",
          diagnosis="gradient matches the sign flipped"),
    Wrong("clipped_loss_summed_over_the_batch", "ppo.py",
          "    loss = -np.minimum(unclipped, clipped).mean()\n\n    " + ACTIVE + WEIGHT,
          "    loss = -np.minimum(unclipped, clipped).sum()\n\n    " + ACTIVE
          + WEIGHT.replace("(-1.0 / B)", "(-1.0)"), ("q4_clipped_gradient",),
          "a sum where the handout's loss is a mean",
          diagnosis="matches the loss summed over the batch instead of averaged"),
    Wrong("loss_gradient_ignores_clip", "ppo.py",
          "weight = np.where(active, rho * advantages, 0.0) * (-1.0 / B)",
          "weight = rho * advantages * (-1.0 / B)", ("q4_clipped_gradient",),
          diagnosis="gradient matches the clip ignored"),
    Wrong("old_logprobs_recomputed_after_update", "ppo.py",
          "rho = policy_ratio(logp_all[rows, actions], logp_old)",
          "logp_old = logp_all[rows, actions].copy()  # 'old' taken from the current policy\n"
          "    rho = policy_ratio(logp_all[rows, actions], logp_old)", ("q4_clipped_gradient",),
          diagnosis="matches the ratio taken as 1 everywhere"),
    Wrong("advantages_normalised_over_wrong_axis", "ppo.py",
          "return (adv - adv.mean()) / (adv.std() + ADV_EPS)",
          "return (adv - adv.mean(axis=0)) / (adv.std(axis=0) + ADV_EPS)", ("q5_losses",),
          diagnosis="your advantages are normalised per environment"),
    Wrong("advantages_normalised_like_torch_without_epsilon", "ppo.py",
          "    return (adv - adv.mean()) / (adv.std() + ADV_EPS)",
          "    return (adv - adv.mean()) / adv.std(ddof=1)", ("q5_losses",),
          "torch's std (ddof=1) and no epsilon: two slips at once",
          diagnosis="with the sample std (ddof=1), not the population std and without the "
                    "epsilon"),
    Wrong("log_prob_two_actions_only", "ppo.py",
          "    logp = _log_softmax(logits)\n    return logp[np.arange(logp.shape[0]), actions]",
          "    gap = logits[:, 1] - logits[:, 0]             # CartPole has two actions\n"
          "    return -np.logaddexp(0.0, np.where(actions == 1, -gap, gap))",
          ("q1_distribution",), "the two-action (sigmoid) shortcut: wrong for A > 2"),
    Wrong("entropy_sums_two_columns", "ppo.py",
          "    return (np.exp(logp) * -logp).sum(axis=1)",
          "    plogp = np.exp(logp) * -logp\n    return plogp[:, 0] + plogp[:, 1]",
          ("q1_distribution",), "written for CartPole's two actions"),
    Wrong("gae_squeezes_the_env_axis", "ppo.py",
          "    rewards = np.asarray(rewards, dtype=np.float64)\n",
          "    rewards = np.asarray(rewards, dtype=np.float64).squeeze()\n",
          ("q2_gae",), "np.squeeze breaks a rollout of one environment"),
    Wrong("entropy_of_probabilities_not_logits", "ppo.py",
          "    logp = _log_softmax(np.asarray(logits, dtype=np.float64))\n"
          "    return (np.exp(logp) * -logp).sum(axis=1)",
          "    probs = np.exp(_log_softmax(np.asarray(logits, dtype=np.float64)))\n"
          "    logp = _log_softmax(probs)  # probabilities fed where logits belong\n"
          "    return (np.exp(logp) * -logp).sum(axis=1)", ("q1_distribution",)),
    Wrong("log_prob_without_logsumexp", "ppo.py",
          "    logp = _log_softmax(logits)\n    return logp[np.arange(logp.shape[0]), actions]",
          "    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)\n"
          "    return np.log(p[np.arange(p.shape[0]), actions])", ("q1_distribution",)),
    Wrong("value_loss_gradient_missing_mean", "ppo.py", "diff / diff.shape[0]", "diff",
          ("q5_losses",)),
    Wrong("hardcoded_pretrained_weights", "ppo.py",
          "    policy_opt = Adam.from_state(policy_params, policy_adam)",
          "    rng = np.random.default_rng(0)  # 'pretrained' weights, whatever the input\n"
          "    for layer in policy_params + value_params:\n"
          "        for k in layer:\n"
          "            layer[k] = rng.normal(size=layer[k].shape)\n"
          "    return {\"policy_params\": policy_params, \"value_params\": value_params}\n"
          "    policy_opt = Adam.from_state(policy_params, policy_adam)",
          ("q6_minibatch_update",), "the judge owns the networks of the bar, so only the "
          "unit check can see pretrained weights",
          diagnosis='match none of the usual slips'),
]

RIGHT = [
    Right("gae_one_environment_at_a_time", "ppo.py", """    advantages = np.empty_like(deltas)
    running = np.zeros(deltas.shape[1])
    for t in range(deltas.shape[0] - 1, -1, -1):                        # backwards in time
        running = deltas[t] + carry[t] * running
        advantages[t] = running
    return advantages, advantages + values[:-1]""",
          """    T, N = deltas.shape
    advantages = np.zeros((T, N))
    for n in range(N):                         # environments outer, time inner
        acc = 0.0
        for t in reversed(range(T)):
            acc = deltas[t, n] + carry[t, n] * acc
            advantages[t, n] = acc
    returns = values[:T] + advantages
    return advantages, returns""", ("q2_gae", "q3_ratio", "q8_train"),
          "scalar loops, environments outer (its bar margin: bench/bar_margin_float_order.py)"),
    Right("log_softmax_by_logaddexp", "ppo.py", """    z = logits - logits.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))""",
          """    return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)""",
          ("q1_distribution", "q3_ratio", "q4_clipped_gradient", "q5_losses", "q8_train"),
          "numpy's log-sum-exp: another float order"),
    Right("entropy_and_gradient_by_onehot", "ppo.py", """    grad = np.exp(logp_all)                                             # softmax p, (B, A)
    grad *= -weight[:, None]                                            # weight * (-p)
    grad[rows, actions] += weight                                       # weight * (onehot - p)
    return float(loss), grad""",
          """    probs = np.exp(logp_all)
    onehot = np.eye(logits.shape[1])[actions]
    grad = weight[:, None] * (onehot - probs)
    return float(loss), grad""", ("q4_clipped_gradient", "q6_minibatch_update"),
          "the gradient as weight * (onehot - p) in one expression"),
]
