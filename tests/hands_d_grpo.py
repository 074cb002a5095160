"""Capstone D's functions written five more times, each by another hand,
from the handout alone (never from the reference): the class report's
"most write their own" class. Each is correct: graded q1-q5 with full marks
when written, and ``test_own_hands_compute_what_the_reference_computes``
(tests/test_report.py) compares them with the reference on random inputs.
They are kept here, not in the catalogue, because they are test data for
similarity, not graded styles the catalogue must keep."""
from autograder.catalogue import Filled

A, B, C, D1, D2 = ('raise NotImplementedError("(a)', 'raise NotImplementedError("(b)',
                   'raise NotImplementedError("(c)', 'raise NotImplementedError("(d) policy_ratio',
                   'raise NotImplementedError("(d) clipped_surrogate_grad')
KEEPS = ("q1_centred", "q2_standardised", "q3_leave_one_out", "q4_enumeration", "q5_ratio_clip")
HANDS = [
    Filled("hand_idiomatic", "grpo.py", (
        (A, "    r = np.asarray(r, dtype=np.float64)\n"
            "    return r - r.mean(axis=1, keepdims=True)"),
        (B, "    r = np.asarray(r, dtype=np.float64)\n"
            "    mu = r.mean(axis=1, keepdims=True)\n"
            "    sigma = r.std(axis=1, keepdims=True)\n"
            "    return (r - mu) / (sigma + STD_EPS)"),
        (C, "    r = np.asarray(r, dtype=np.float64)\n"
            "    G, K = r.shape\n"
            "    if K == 1:\n"
            "        raise ValueError('need at least two responses per group for leave-one-out')\n"
            "    baseline = (r.sum(axis=1, keepdims=True) - r) / (K - 1)\n"
            "    return r - baseline"),
        (D1, "    return np.exp(logp - logp_old)"),
        (D2, "    pi = softmax_policy(theta)\n"
             "    logp = np.log(pi[np.arange(len(ys))[:, None], ys])\n"
             "    rho = policy_ratio(logp, logp_old)\n"
             "    surr1 = rho * weights\n"
             "    surr2 = np.clip(rho, 1 - eps, 1 + eps) * weights\n"
             "    keep = surr1 <= surr2\n"
             "    return weighted_score_gradient(pi, ys, rho * weights * keep)"),
    ), KEEPS),
    Filled("hand_scaled_centring", "grpo.py", (
        (A, "    x = np.array(r, dtype=np.float64, copy=True)\n"
            "    x -= x.mean(axis=-1)[:, None]\n"
            "    return x"),
        (B, "    c = centred_weight(r)\n"
            "    s = np.sqrt((c ** 2).mean(axis=-1, keepdims=True))\n"
            "    return c / (s + STD_EPS)"),
        (C, "    k = np.shape(r)[-1]\n"
            "    if k <= 1:\n"
            "        raise ValueError(f'K = {k}: leave-one-out has nothing to average')\n"
            "    # r_j - mean(others) = K/(K-1) * (r_j - mean(all))\n"
            "    return centred_weight(r) * k / (k - 1)"),
        (D1, "    ratio = np.exp(np.subtract(logp, logp_old, dtype=np.float64))\n"
             "    return ratio"),
        (D2, "    P, K = ys.shape\n"
             "    probs = softmax_policy(theta)\n"
             "    new_logp = np.log(np.take_along_axis(probs, ys, axis=1))\n"
             "    ratio = np.exp(new_logp - logp_old)\n"
             "    pos = (weights > 0) & (ratio > 1 + eps)\n"
             "    neg = (weights < 0) & (ratio < 1 - eps)\n"
             "    coeff = np.where(pos | neg, 0.0, ratio * weights)\n"
             "    return weighted_score_gradient(probs, ys, coeff)"),
    ), KEEPS),
    Filled("hand_loops_over_groups", "grpo.py", (
        (A, "    rewards = np.asarray(r, dtype=np.float64)\n"
            "    out = np.empty_like(rewards)\n"
            "    for g, row in enumerate(rewards):\n"
            "        out[g] = row - row.mean()\n"
            "    return out"),
        (B, "    rewards = np.asarray(r, dtype=np.float64)\n"
            "    out = np.empty_like(rewards)\n"
            "    for g, row in enumerate(rewards):\n"
            "        out[g] = (row - row.mean()) / (row.std() + STD_EPS)\n"
            "    return out"),
        (C, "    rewards = np.asarray(r, dtype=np.float64)\n"
            "    if rewards.shape[-1] < 2:\n"
            "        raise ValueError('leave_one_out_weight: a group of one has no others')\n"
            "    out = np.empty_like(rewards)\n"
            "    for g, row in enumerate(rewards):\n"
            "        rest = (row.sum() - row) / (len(row) - 1)\n"
            "        out[g] = row - rest\n"
            "    return out"),
        (D1, "    logp = np.asarray(logp, dtype=np.float64)\n"
             "    return np.exp(logp - np.asarray(logp_old, dtype=np.float64))"),
        (D2, "    pi = softmax_policy(theta)\n"
             "    g = np.zeros_like(pi)\n"
             "    for p in range(ys.shape[0]):\n"
             "        chosen = pi[p, ys[p]]\n"
             "        ratio = chosen / np.exp(logp_old[p])\n"
             "        lo, hi = 1 - eps, 1 + eps\n"
             "        live = np.where(weights[p] >= 0, ratio <= hi, ratio >= lo)\n"
             "        g[p] = weighted_score_gradient(pi[p:p + 1], ys[p:p + 1],\n"
             "                                       (live * ratio * weights[p])[None, :])[0]\n"
             "    return g"),
    ), KEEPS),
    Filled("hand_einsum_and_masks", "grpo.py", (
        (A, "    arr = np.asarray(r, dtype=float)\n"
            "    K = arr.shape[-1]\n"
            "    return arr - np.einsum('gk->g', arr)[:, None] / K"),
        (B, "    arr = np.asarray(r, dtype=float)\n"
            "    dev = centred_weight(arr)\n"
            "    var = np.einsum('gk,gk->g', dev, dev) / arr.shape[-1]\n"
            "    return dev / (np.sqrt(var)[:, None] + STD_EPS)"),
        (C, "    arr = np.asarray(r, dtype=float)\n"
            "    K = arr.shape[-1]\n"
            "    if K < 2:\n"
            "        raise ValueError('leave-one-out is undefined for K = 1 (no other rewards)')\n"
            "    mask = 1.0 - np.eye(K)\n"
            "    return arr - arr @ mask / (K - 1)"),
        (D1, "    return np.exp(np.asarray(logp, float)) / np.exp(np.asarray(logp_old, float))"),
        (D2, "    pi = softmax_policy(theta)\n"
             "    idx = np.arange(theta.shape[0])\n"
             "    p_new = pi[idx[:, None], ys]\n"
             "    rho = p_new / np.exp(logp_old)\n"
             "    inside = np.abs(rho - 1.0) <= eps\n"
             "    helps = np.sign(weights) * (rho - 1.0) < 0\n"
             "    use = inside | helps\n"
             "    return weighted_score_gradient(pi, ys, np.where(use, rho * weights, 0.0))"),
    ), KEEPS),
    Filled("hand_helpers", "grpo.py", (
        (A, "    r = np.asarray(r, dtype=np.float64)\n"
            "    group_mean = np.mean(r, axis=-1, keepdims=True)\n"
            "    return r - group_mean"),
        (B, "    r = np.asarray(r, dtype=np.float64)\n"
            "    std = np.std(r, axis=-1, keepdims=True, ddof=0)\n"
            "    return centred_weight(r) / (std + STD_EPS)"),
        (C, "    r = np.asarray(r, dtype=np.float64)\n"
            "    n = r.shape[-1]\n"
            "    if n == 1:\n"
            "        raise ValueError('leave-one-out undefined: K = 1, no other responses')\n"
            "    loo_mean = (np.sum(r, axis=-1, keepdims=True) - r) / (n - 1)\n"
            "    return r - loo_mean"),
        (D1, "    return np.exp(np.asarray(logp) - np.asarray(logp_old)).astype(np.float64)"),
        (D2, "    pi = softmax_policy(theta)\n"
             "    lp = np.log(np.take_along_axis(pi, ys, axis=-1))\n"
             "    rho = policy_ratio(lp, logp_old)\n"
             "    clipped_rho = np.clip(rho, 1.0 - eps, 1.0 + eps)\n"
             "    unclipped_smaller = rho * weights <= clipped_rho * weights\n"
             "    eff = np.where(unclipped_smaller, rho * weights, 0.0)\n"
             "    return weighted_score_gradient(pi, ys, eff)"),
    ), KEEPS),
]
