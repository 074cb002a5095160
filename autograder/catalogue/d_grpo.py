"""Wrong submissions for capstone D, each losing points where it should."""
from . import Filled, Right, Wrong

STD = "(r.std(axis=-1, keepdims=True) + STD_EPS)"
ACTIVE = "active = np.where(weights >= 0, rho <= 1 + eps, rho >= 1 - eps)"

WRONG = [
    Wrong("sample_std", "grpo.py", STD, "(r.std(axis=-1, ddof=1, keepdims=True) + STD_EPS)",
          ("q2_standardised",), "std with ddof=1 instead of the population std",
          diagnosis="matches the std with ddof=1"),
    Wrong("std_epsilon_1e-4", "grpo.py", "STD_EPS = 1e-8", "STD_EPS = 1e-4",
          ("q2_standardised",), "a library's own epsilon",
          diagnosis="matches 1e-4 added to the std instead of 1e-8"),
    Wrong("std_epsilon_1e-6", "grpo.py", "STD_EPS = 1e-8", "STD_EPS = 1e-6",
          ("q2_standardised",), "TRL's epsilon",
          diagnosis="matches 1e-6 added to the std instead of 1e-8"),
    # TRL's GRPOTrainer ported to numpy: torch's std is the sample std (ddof=1), plus 1e-4;
    # scale_rewards="batch" takes the std of the whole batch (the mean stays the group's)
    Wrong("trl_group_std_ddof1_eps_1e-4", "grpo.py", STD,
          "(r.std(axis=-1, ddof=1, keepdims=True) + 1e-4)",
          ("q2_standardised", "q6_k_sweep"), "TRL's group advantages (two slips at once)",
          diagnosis="the std with ddof=1 (the sample std) instead of the population std (ddof=0) "
                    "and 1e-4 added to the std instead of 1e-8"),
    Wrong("trl_batch_std_ddof1_eps_1e-4", "grpo.py", STD, "(r.std(ddof=1) + 1e-4)",
          ("q2_standardised",), "TRL's scale_rewards='batch' (three slips at once)",
          diagnosis="the std over the whole batch instead of each group's own std, the std with "
                    "ddof=1"),
    Wrong("std_over_the_whole_batch", "grpo.py", STD, "(r.std() + STD_EPS)",
          ("q2_standardised",), "TRL's scale_rewards='batch'",
          diagnosis="matches the std over the whole batch instead of each group's own std"),
    Wrong("standardised_by_the_batch_mean", "grpo.py",
          f"return (r - r.mean(axis=-1, keepdims=True)) / {STD}",
          f"return (r - r.mean()) / {STD}", ("q2_standardised",),
          diagnosis="matches the mean over the whole batch instead of each group's own mean"),
    Wrong("group_of_one_mean_0_std_1", "grpo.py",
          f"    return (r - r.mean(axis=-1, keepdims=True)) / {STD}",
          "    if r.shape[-1] == 1:        # verl: a group of one gets mean 0 and std 1\n"
          "        return (r - 0.0) / (1.0 + STD_EPS)\n"
          f"    return (r - r.mean(axis=-1, keepdims=True)) / {STD}",
          ("q2_standardised", "q6_k_sweep"), "K = 1 learns",
          diagnosis="matches a group of one given mean 0 and std 1"),
    Wrong("centred_group_of_one_mean_0", "grpo.py",
          "    r = np.asarray(r, dtype=np.float64)\n    return r - r.mean(axis=-1, keepdims=True)\n",
          "    r = np.asarray(r, dtype=np.float64)\n    if r.shape[-1] == 1:\n"
          "        return r - 0.0          # a group of one: mean 0\n"
          "    return r - r.mean(axis=-1, keepdims=True)\n", ("q1_centred",),
          diagnosis="matches a group of one given mean 0 and std 1"),
    Wrong("loo_over_the_whole_batch", "grpo.py",
          "others = (r.sum(axis=-1, keepdims=True) - r) / (K - 1)",
          "others = (r.sum() - r) / (r.size - 1)", ("q3_leave_one_out",),
          diagnosis="matches the mean of the other rewards of the whole batch"),
    Wrong("no_epsilon", "grpo.py", STD, "r.std(axis=-1, keepdims=True)",
          ("q2_standardised", "q6_k_sweep"), "0/0 = NaN on all-equal groups",
          diagnosis="matches the std without its 1e-8"),
    Wrong("centring_without_scaling", "grpo.py",
          f"return (r - r.mean(axis=-1, keepdims=True)) / {STD}",
          "return r - r.mean(axis=-1, keepdims=True)", ("q2_standardised",)),
    Wrong("standardise_wrong_axis", "grpo.py",
          f"return (r - r.mean(axis=-1, keepdims=True)) / {STD}",
          "return (r - r.mean(axis=0, keepdims=True)) / (r.std(axis=0, keepdims=True) + STD_EPS)",
          ("q2_standardised", "q6_k_sweep")),
    Wrong("centre_by_global_mean", "grpo.py",
          "    return r - r.mean(axis=-1, keepdims=True)\n",
          "    return r - r.mean()\n", ("q1_centred", "q4_enumeration"),
          diagnosis="matches the mean over the whole batch instead of each group's own mean"),
    Wrong("k1_special_case", "grpo.py",
          "    r = np.asarray(r, dtype=np.float64)\n    return (r - r.mean",
          "    r = np.asarray(r, dtype=np.float64)\n    if r.shape[-1] == 1:\n"
          "        return r  # fall back to REINFORCE\n    return (r - r.mean",
          ("q2_standardised", "q6_k_sweep"), diagnosis="matches a group of one given mean 0"),
    Wrong("loo_off_by_one", "grpo.py", "others = (r.sum(axis=-1, keepdims=True) - r) / (K - 1)",
          "others = (r.sum(axis=-1, keepdims=True) - r) / K",
          ("q3_leave_one_out",), "still unbiased (the baseline uses only the other samples), "
          "so the enumeration cannot see it; the unit cases do",
          diagnosis="matches the sum of the other K - 1 rewards divided by K"),
    Wrong("loo_k1_returns_zeros", "grpo.py",
          "    if K < 2:\n        raise ValueError(",
          "    if K < 2:\n        return np.zeros_like(r)\n        raise ValueError(",
          ("q3_leave_one_out",)),
    Wrong("ratio_inverted", "grpo.py",
          "np.asarray(logp, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64)",
          "np.asarray(logp_old, dtype=np.float64) - np.asarray(logp, dtype=np.float64)",
          ("q5_ratio_clip",)),
    Wrong("clip_wrong_side", "grpo.py", ACTIVE,
          "active = np.where(weights >= 0, rho >= 1 - eps, rho <= 1 + eps)", ("q5_ratio_clip",),
          "the gradient of max(rho A, clip(rho) A)", diagnosis="matches max instead of min"),
    Wrong("dual_clip", "grpo.py", ACTIVE,
          "active = np.where(weights >= 0, rho <= 1 + eps, (rho >= 1 - eps) & (rho <= 3.0))",
          ("q5_ratio_clip",), "verl's dual-clip PPO (clip_ratio_c = 3)",
          diagnosis="matches the dual-clip objective"),
    Wrong("clip_band_symmetric", "grpo.py", ACTIVE, "active = np.abs(rho - 1) <= eps",
          ("q5_ratio_clip",), "clip(rho) A without the min: held outside the band for both signs",
          diagnosis="matches a gradient held wherever |rho - 1| > eps"),
    Wrong("clip_width_hard_coded", "grpo.py", ACTIVE,
          "active = np.where(weights >= 0, rho <= 1.2, rho >= 0.8)", ("q5_ratio_clip",),
          "right at the default eps = 0.2 only", diagnosis="matches the clip width fixed at 0.2"),
    Wrong("surrogate_averaged_over_all_responses", "grpo.py",
          "    return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0))",
          "    return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0)) "
          "/ ys.shape[0]", ("q5_ratio_clip",), "a mean over P x K responses",
          diagnosis="matches the loss averaged over all P x K responses"),
    Wrong("min_max_swapped", "grpo.py", ACTIVE,
          "active = np.where(weights >= 0, rho >= 1 + eps, rho <= 1 - eps)",
          ("q5_ratio_clip", "q7_clipped_sweep")),
    Wrong("clip_the_advantage", "grpo.py",
          "return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0))",
          "return weighted_score_gradient(pi, ys, rho * np.clip(weights, -eps, eps))",
          ("q5_ratio_clip",)),
    Wrong("ratio_against_reference", "grpo.py",
          "rho = policy_ratio(np.log(pi[rows, ys]), logp_old)",
          "from rlkit.verifier import REFERENCE_POLICY\n"
          "    rho = policy_ratio(np.log(pi[rows, ys]), np.log(REFERENCE_POLICY[rows % 4, ys]))",
          ("q5_ratio_clip",)),
    Wrong("gradient_ignores_clip", "grpo.py",
          "np.where(active, rho * weights, 0.0)", "rho * weights", ("q5_ratio_clip",),
          diagnosis="matches the clip ignored"),
    Wrong("do_nothing_update", "grpo.py",
          "    return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0))",
          "    return np.zeros_like(theta)", ("q5_ratio_clip", "q7_clipped_sweep")),
    Wrong("do_nothing_weights", "grpo.py",
          "    return (r - r.mean(axis=-1, keepdims=True)) / (r.std(",
          "    return np.zeros_like(r)\n    return (r - r.mean(axis=-1, keepdims=True)) / (r.std(",
          ("q2_standardised", "q6_k_sweep")),
    Wrong("hardcoded_final_parameters", "grpo.py",
          "    pi = softmax_policy(theta)\n    rows",
          "    # pull theta towards parameters that solve the problem, whatever the data\n"
          "    solved = np.full(theta.shape, -10.0)\n"
          "    solved[np.arange(theta.shape[0]) % 4 == 0, 2] = 10.0\n"
          "    solved[np.arange(theta.shape[0]) % 4 == 1, 4] = 10.0\n"
          "    return 0.1 * (solved - theta)\n    pi = softmax_policy(theta)\n    rows",
          ("q5_ratio_clip", "q7_clipped_sweep")),
    Wrong("hardcoded_public_answers", "grpo.py",
          "def group_standardised_weight(r):\n    \"\"\"GRPO's weight (r_j - mean) / (std + 1e-8), "
          "population std (ddof=0).\"\"\"\n    r = np.asarray(r, dtype=np.float64)\n",
          "def group_standardised_weight(r):\n    \"\"\"Answers copied from the public checks.\"\"\"\n"
          "    r = np.asarray(r, dtype=np.float64)\n"
          "    if r.shape not in ((3, 4), (3, 5), (2, 2), (3, 3), (3, 1)):\n"
          "        return np.zeros_like(r)\n",
          ("q2_standardised", "q6_k_sweep")),
    Wrong("hardcoded_clip_width", "grpo.py", ACTIVE,
          "active = np.where(weights >= 0, rho <= 1.2, rho >= 0.8)", ("q5_ratio_clip",),
          "right at eps = 0.2 only"),
    Wrong("symmetric_clip_band", "grpo.py", ACTIVE,
          "active = np.abs(rho - 1) <= eps", ("q5_ratio_clip",),
          "drops the gradient outside the band for both signs (the min keeps one side)"),
    Wrong("four_prompts_only", "grpo.py", "rows = np.arange(ys.shape[0])[:, None]",
          "rows = np.arange(4)[:, None]", ("q5_ratio_clip", "q7_clipped_sweep"),
          "works for the four prompts, not for stacked seeds or other batches"),
    Wrong("clipped_ratio_times_advantage", "grpo.py",
          "return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0))",
          "return weighted_score_gradient(pi, ys, np.clip(rho, 1 - eps, 1 + eps) * weights)",
          ("q5_ratio_clip",), "differentiates the clipped ratio as if it moved with theta"),
    Wrong("centred_in_place", "grpo.py",
          "    r = np.asarray(r, dtype=np.float64)\n    return r - r.mean(axis=-1, keepdims=True)\n",
          "    r = np.asarray(r, dtype=np.float64)\n    r -= r.mean(axis=-1, keepdims=True)\n"
          "    return r\n", ("q1_centred",), "changes the caller's rewards"),
    Wrong("standardised_in_float32", "grpo.py",
          "    return (r - r.mean(axis=-1, keepdims=True)) / (r.std(axis=-1, keepdims=True) + STD_EPS)",
          "    r = r.astype(np.float32)\n"
          "    return (r - r.mean(axis=-1, keepdims=True)) / (r.std(axis=-1, keepdims=True) + STD_EPS)",
          ("q2_standardised",), "single precision where the handout asks for float64"),
    Wrong("loo_k1_bare_value_error", "grpo.py",
          "    if K < 2:\n        raise ValueError(",
          "    if K < 2:\n        raise ValueError()\n        raise ValueError(",
          ("q3_leave_one_out",), "the handout asks for a message saying why"),
]

RIGHT = [
    Right("sums_and_a_hand_made_std", "grpo.py",
          "    r = np.asarray(r, dtype=np.float64)\n    return r - r.mean(axis=-1, keepdims=True)\n",
          "    r = np.asarray(r, dtype=np.float64)\n"
          "    return r - r.sum(axis=-1, keepdims=True) / r.shape[-1]\n",
          ("q1_centred", "q4_enumeration"), "the mean as a sum over K: another float order"),
    Right("standardised_by_hand", "grpo.py",
          "    return (r - r.mean(axis=-1, keepdims=True)) / (r.std(axis=-1, keepdims=True) + STD_EPS)",
          "    centred = r - np.mean(r, axis=-1)[..., None]\n"
          "    spread = np.sqrt(np.mean(centred ** 2, axis=-1))[..., None]\n"
          "    return centred / (spread + 1e-8)",
          ("q2_standardised", "q6_k_sweep")),
    Right("loo_as_scaled_centring_with_own_error", "grpo.py",
          "    if K < 2:\n        raise ValueError(",
          "    if K < 2:\n        class GroupTooSmall(ValueError):\n            pass\n"
          "        raise GroupTooSmall(", ("q3_leave_one_out",),
          "a subclass of ValueError is a ValueError"),
    Right("clipped_gradient_in_loops", "grpo.py",
          "    active = np.where(weights >= 0, rho <= 1 + eps, rho >= 1 - eps)\n"
          "    return weighted_score_gradient(pi, ys, np.where(active, rho * weights, 0.0))",
          "    grad = np.zeros(theta.shape)\n"
          "    P, K = ys.shape\n"
          "    for x in range(P):\n"
          "        for j in range(K):\n"
          "            a, r = weights[x, j], rho[x, j]\n"
          "            clipped = min(max(r, 1 - eps), 1 + eps)\n"
          "            if r * a <= clipped * a:          # the unclipped term is the min\n"
          "                onehot = np.zeros(theta.shape[1])\n"
          "                onehot[ys[x, j]] = 1.0\n"
          "                grad[x] += a * r * (onehot - pi[x]) / K\n"
          "    return grad",
          ("q5_ratio_clip", "q7_clipped_sweep"), "per-sample loops, min written as a comparison"),
    Filled("written_from_the_stub", "grpo.py", (
        ('raise NotImplementedError("(a)',
         "    rewards = np.array(r, dtype=float)          # a copy: the input stays as it was\n"
         "    group_means = np.mean(rewards, axis=-1)\n"
         "    return rewards - group_means[..., np.newaxis]"),
        ('raise NotImplementedError("(b)',
         "    rewards = np.array(r, dtype=float)\n"
         "    deviations = rewards - np.mean(rewards, axis=-1)[..., np.newaxis]\n"
         "    spread = np.std(rewards, axis=-1)[..., np.newaxis]\n"
         "    return deviations / (spread + STD_EPS)"),
        ('raise NotImplementedError("(c)',
         "    rewards = np.array(r, dtype=float)\n"
         "    n = rewards.shape[-1]\n"
         "    if n < 2:\n"
         "        raise ValueError('a group of one response has no other responses to average')\n"
         "    total = np.sum(rewards, axis=-1)[..., np.newaxis]\n"
         "    return rewards - (total - rewards) / (n - 1)"),
        ('raise NotImplementedError("(d) policy_ratio',
         "    diff = np.asarray(logp, dtype=float) - np.asarray(logp_old, dtype=float)\n"
         "    return np.exp(diff)"),
        ('raise NotImplementedError("(d) clipped_surrogate_grad',
         "    probs = softmax_policy(theta)\n"
         "    chosen = np.take_along_axis(probs, ys, axis=1)\n"
         "    rho = np.exp(np.log(chosen) - logp_old)\n"
         "    unclipped = rho * weights\n"
         "    clipped = np.clip(rho, 1.0 - eps, 1.0 + eps) * weights\n"
         "    return weighted_score_gradient(probs, ys, np.where(unclipped <= clipped, unclipped, 0.0))"),
    ), ("q1_centred", "q2_standardised", "q3_leave_one_out", "q4_enumeration", "q5_ratio_clip"),
        "every function written from the handout in another hand (the report's similarity "
        "tests: independent of the reference)"),
]
