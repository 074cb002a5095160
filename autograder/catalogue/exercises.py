"""Wrong submissions for the section's exercises, each losing points where it should."""
from . import Right, Wrong

F = "exercises.py"
SCORE_G = "g = np.eye(ar.VOCAB)[y] - ar.token_distributions(theta, x, y)"
PREV = "onehot_prev = np.eye(ar.VOCAB + 1)[ar.previous_tokens(y)]"
COUNTS = "counts = ar.prefix_counts(y)"
FD_LINE = "grad = (-f[2] + 8 * f[1] - 8 * f[-1] + f[-2]) / (12 * h)"
RS_START = "    theta = np.asarray(theta, dtype=np.float64)\n    h, D = FD_STEP, theta.size\n"
CENTRE = "    return r - r.mean(axis=-1, keepdims=True)\n"
FACTOR = "    return (K - 1.0) / K\n"
TILT = "z = np.asarray(ref_logits, dtype=np.float64) + np.asarray(rewards, dtype=np.float64) / beta"
THRESH = "    return np.asarray(r_h, dtype=np.float64) / np.asarray(d, dtype=np.float64)\n"

WRONG = [
    # ------------------------------------------------------------------ exercise 1
    Wrong("score_without_minus_pi", F, SCORE_G, "g = np.eye(ar.VOCAB)[y] + 0.0",
          ("ex1_token_scores",), "onehot(y_t) alone: forgets the softmax's normaliser"),
    Wrong("score_sign_flipped", F, SCORE_G,
          "g = ar.token_distributions(theta, x, y) - np.eye(ar.VOCAB)[y]", ("ex1_token_scores",),
          diagnosis="token_scores() matches the sign flipped"),
    Wrong("previous_token_is_current", F, PREV, "onehot_prev = np.eye(ar.VOCAB + 1)[y]",
          ("ex1_token_scores",), "reads y_t instead of y_{t-1} (and no start symbol)"),
    Wrong("counts_include_current_token", F, COUNTS,
          "counts = np.cumsum(np.eye(ar.VOCAB)[y], axis=1)", ("ex1_token_scores",),
          "the prefix y_<t wrongly includes y_t"),
    Wrong("prompt_block_forgotten", F,
          '    blocks = {"prompt": onehot_prompt[..., :, None] * g[..., None, :],',
          '    blocks = {"prompt": 0.0 * onehot_prompt[..., :, None] * g[..., None, :],',
          ("ex1_token_scores",), "the shared prompt row collects score from every token"),
    Wrong("response_score_last_token_only", F,
          RS_START,
          "    return token_scores(theta, x, y)[:, -1, :]\n" + RS_START,
          ("ex1_response_score",), "the response-level score as the last token's score",
          diagnosis="matches the last token's score alone"),
    Wrong("response_score_of_probability", F,
          RS_START,
          "    p = np.exp(ar.log_prob(theta, x, y))[:, None]\n"
          "    return p * token_scores(theta, x, y).sum(axis=1)\n" + RS_START,
          ("ex1_response_score",), "grad pi(y|x) instead of grad log pi(y|x)",
          diagnosis="matches the gradient of pi(y | x), not of log pi(y | x)"),
    Wrong("response_score_coarse_forward_difference", F, FD_LINE,
          "grad = (f[1] - ar.log_prob(theta, x, y)[None, :]) / h", ("ex1_response_score",),
          "one-sided difference with h = 1e-3: error ~1e-3, above the 1e-6 tolerance"),
    Wrong("response_score_zero", F,
          RS_START,
          "    return np.zeros((np.asarray(y).shape[0], ar.NUM_PARAMS))\n" + RS_START,
          ("ex1_response_score",), "passes the zero-mean check alone, which earns nothing alone"),
    Wrong("token_scores_squeezed", F, "    return ar.pack(blocks)",
          "    return np.squeeze(ar.pack(blocks))", ("ex1_token_scores",),
          "np.squeeze drops the batch axis of a single response"),
    Wrong("scores_hardcoded_for_one_theta", F,
          "    x = np.asarray(x, dtype=np.int64)\n    y = np.asarray(y, dtype=np.int64)\n    B, T",
          "    theta = ar.init_params(np.random.default_rng(0))  # pretrained: ignores the input\n"
          "    x = np.asarray(x, dtype=np.int64)\n    y = np.asarray(y, dtype=np.int64)\n    B, T",
          ("ex1_token_scores",), "answers for parameters of its own choosing"),
    # ------------------------------------------------------------------ exercise 2
    Wrong("ex2_bootstrapping_and_td_swapped", F,
          'EX2_BOOTSTRAPPING_PROPERTY = "G"', 'EX2_BOOTSTRAPPING_PROPERTY = "B"', ("ex2_terms",)),
    Wrong("ex2_replay_setting_distractor", F,
          'EX2_REPLAY_SETTING = "H"', 'EX2_REPLAY_SETTING = "E"', ("ex2_terms",)),
    Wrong("ex2_key_not_a_letter", F, 'EX2_DISCOUNTING_PROPERTY = "E"',
          'EX2_DISCOUNTING_PROPERTY = "E, finite horizon"', ("ex2_terms",)),
    # ------------------------------------------------------------------ exercise 3
    Wrong("centre_by_global_mean", F, CENTRE, "    return r - r.mean()\n",
          ("ex3_prediction",), "mixes groups; at K = 1 the weight is not zero (ex3_k1_run "
          "loses too: not graded here, to save test time)",
          diagnosis="matches the mean over the whole batch instead of each group's own mean"),
    Wrong("k1_falls_back_to_reinforce", F, CENTRE,
          "    if r.shape[-1] == 1:\n        return r\n" + CENTRE,
          ("ex3_prediction", "ex3_k1_run"), "verl's group of one: mean 0, std 1",
          diagnosis="matches a group of one given mean 0 and std 1"),
    Wrong("zero_weight", F, CENTRE, "    return np.zeros_like(r)\n",
          ("ex3_prediction", "ex3_k1_run"), "K = 1 is exactly zero, but nothing learns"),
    Wrong("factor_inverted", F, FACTOR, "    return K / np.maximum(K - 1.0, 1e-12)\n",
          ("ex3_prediction",), diagnosis="matches the inverse of the factor"),
    Wrong("factor_one_over_k", F, FACTOR, "    return 1.0 / K\n", ("ex3_prediction",),
          diagnosis="shrinkage_factor() matches 1 / K"),
    Wrong("factor_integer_division", F, FACTOR,
          "    return ((K.astype(np.int64) - 1) // K.astype(np.int64)).astype(np.float64)\n",
          ("ex3_prediction",), "zero for every K", diagnosis="matches an integer division"),
    Wrong("factor_hardcoded_1_to_8", F, FACTOR,
          "    table = {1: 0.0, 2: 0.5, 3: 2 / 3, 4: 0.75, 5: 0.8, 6: 5 / 6, 7: 6 / 7, 8: 0.875}\n"
          "    return np.array([table.get(int(k), 1.0) for k in K])\n",
          ("ex3_prediction",), "right on the public K = 1 .. 8 only"),
    Wrong("ex3_loo_says_zero", F, 'EX3_LOO_K1 = "B"', 'EX3_LOO_K1 = "A"', ("ex3_loo_key",)),
    # ------------------------------------------------------------------ exercise 4
    Wrong("tilt_for_the_section_table_only", F, "    return p / p.sum(axis=1, keepdims=True)",
          "    return p / p.sum(axis=1).reshape(4, 1)   # the section's four prompts",
          ("ex4_tilted",), "works on the section's (4, 9) table, not on other shapes"),
    Wrong("tilt_sign_flipped", F, TILT, TILT.replace("/ beta", "/ -beta"), ("ex4_tilted",),
          diagnosis="matches pi_ref exp(-r / beta): the reward's sign flipped"),
    Wrong("tilt_times_beta", F, TILT, TILT.replace("/ beta", "* beta"), ("ex4_tilted",),
          diagnosis="beta multiplies the reward instead of dividing it"),
    Wrong("tilt_ignores_reference", F, TILT,
          "z = 0.0 * np.asarray(ref_logits) + np.asarray(rewards, dtype=np.float64) / beta",
          ("ex4_tilted",), diagnosis="the reference policy left out"),
    Wrong("tilt_not_normalised_again", F, "    return p / p.sum(axis=1, keepdims=True)",
          "    ref = np.exp(ref_logits - np.logaddexp.reduce(ref_logits, axis=1, keepdims=True))\n"
          "    return ref * np.exp(np.asarray(rewards, dtype=np.float64) / beta)",
          ("ex4_tilted",), "pi_ref exp(r / beta), the unnormalised optimum",
          diagnosis="not normalised again over each prompt's responses"),
    Wrong("threshold_half_the_mass", F, THRESH,
          "    return np.asarray(r_h, dtype=np.float64) / (np.asarray(d, dtype=np.float64)"
          " + np.log(8.0))\n", ("ex4_threshold",),
          "criterion 'hedge below half the mass' among 8 candidates: 1 / (4 + ln 8)",
          diagnosis="matches the beta at which the hedge holds half of the mass"),
    Wrong("threshold_inverted", F, THRESH,
          "    return np.asarray(d, dtype=np.float64) / np.asarray(r_h, dtype=np.float64)\n",
          ("ex4_threshold",), diagnosis="matches d / r_h: the ratio inverted"),
    Wrong("threshold_hardcoded_quarter", F, THRESH,
          "    return np.full(np.shape(d), 0.25)\n", ("ex4_threshold",),
          "the section's number for every instance"),
    Wrong("threshold_probability_gap", F, THRESH,
          "    return np.asarray(r_h, dtype=np.float64) / np.expm1(np.asarray(d, dtype=np.float64))\n",
          ("ex4_threshold",), "reads d as a probability ratio instead of a log-odds gap",
          diagnosis="d read as a ratio of probabilities"),
    # ------------------------------------------------------------------ exercise 5
    Wrong("ex5_epsilon_as_exploration_rate", F, 'EX5_EPSILON = "F"', 'EX5_EPSILON = "B"',
          ("ex5_symbols",), "the clip's half-width is not the epsilon-greedy rate"),
    Wrong("ex5_pi_ref_as_old_policy", F, 'EX5_PI_REF = "G"', 'EX5_PI_REF = "F"',
          ("ex5_symbols",), "the frozen reference is not the sampling policy of the ratio"),
]

RIGHT = [
    Right("factor_as_one_minus_one_over_k", F, FACTOR, "    return 1.0 - 1.0 / K\n",
          ("ex3_prediction",), "another formula, another last bit"),
    Right("centred_by_sum", F, CENTRE,
          "    return r - np.sum(r, axis=-1, keepdims=True) / r.shape[-1]\n",
          ("ex3_prediction", "ex3_k1_run")),
    Right("tilted_in_log_space", F,
          "    z = z - z.max(axis=1, keepdims=True)\n    p = np.exp(z)\n"
          "    return p / p.sum(axis=1, keepdims=True)",
          "    return np.exp(z - np.logaddexp.reduce(z, axis=1, keepdims=True))",
          ("ex4_tilted",), "normalised by log-sum-exp"),
    Right("threshold_by_log_odds_root", F, THRESH,
          "    d = np.asarray(d, dtype=np.float64)\n    r_h = np.asarray(r_h, dtype=np.float64)\n"
          "    return np.exp(np.log(r_h) - np.log(d))\n",
          ("ex4_threshold",), "the same root through logarithms"),
]
