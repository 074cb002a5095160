"""Section 15.7 exercises 1-5 -- reference solution.

Everything the student writes lives in this one module: functions (graded by
calling them on the grader's own inputs), choice keys (module-level strings
holding one letter) and two written answers (module-level strings, graded by
hand with the rubric). The lettered choice lists are printed in the student's
version of this docstring and in the notebook.
"""
import numpy as np

from rlkit import autoregressive as ar

STUDENT_ID = ""   # local grading only; Gradescope uses your account's student id


# ============================================================================ Exercise 1
EX1_PROOF = """\
Claim. For the token MDP, grad_theta log pi_theta(y | x) = sum_t grad_theta log pi_theta(y_t | x, y_<t).

Proof. The state after t - 1 tokens is the whole prefix s_t = (x, y_<t); the action is y_t and the
transition appends it, s_{t+1} = (x, y_<t, y_t), with probability one. The probability of the
response is the probability of the trajectory s_1 = x, y_1, s_2, ..., y_T, which by the chain rule
of probability is

    pi(y | x) = prod_t [ pi_theta(y_t | s_t) * P(s_{t+1} | s_t, y_t) ] = prod_t pi_theta(y_t | x, y_<t),

because every transition factor P(s_{t+1} | s_t, y_t) equals 1 (and the prompt distribution mu_0
does not depend on theta). Every factor is positive (softmax), so we may take logarithms:
log pi(y | x) = sum_t log pi_theta(y_t | x, y_<t). The gradient is linear, so differentiating both
sides term by term gives the identity. Parameters shared between positions simply collect one
contribution from each position in which they are used.

Why the two views are one algorithm. REINFORCE's estimate for one sampled response is
(r(x, y) - b(x)) * grad log pi(y | x) in the response view (one structured action, a contextual
bandit) and sum_t (G_t - b) * grad log pi(y_t | x, y_<t) in the token view. With a terminal-only
reward and gamma = 1 the reward-to-go G_t equals r(x, y) at every t, so the token-view estimate is
(r(x, y) - b(x)) * sum_t grad log pi(y_t | ...) = (r(x, y) - b(x)) * grad log pi(y | x): the same
number for every sample, hence the same expected update and the same variance. A prompt-only
baseline stays unbiased in both views since E_y[grad log pi(y | x)] = 0.
"""


def token_scores(theta, x, y):
    """Per-token scores ``grad_theta log pi(y_t | x, y_<t)``.

    Args:
        theta: ``(D,) float64`` parameters of ``rlkit.autoregressive``.
        x: ``(B,) int`` prompts.
        y: ``(B, T) int`` responses.

    Returns:
        ``(B, T, D) float64``; summing over axis 1 gives the token-level
        score sum.
    """
    x = np.asarray(x, dtype=np.int64)
    y = np.asarray(y, dtype=np.int64)
    B, T = y.shape
    # d log softmax(z)[y_t] / d z = onehot(y_t) - pi(. | x, y_<t)
    g = np.eye(ar.VOCAB)[y] - ar.token_distributions(theta, x, y)            # (B, T, V)
    onehot_prompt = np.broadcast_to(np.eye(ar.NUM_PROMPTS)[x][:, None, :], (B, T, ar.NUM_PROMPTS))
    onehot_prev = np.eye(ar.VOCAB + 1)[ar.previous_tokens(y)]                # (B, T, V + 1)
    counts = ar.prefix_counts(y)                                             # (B, T, V)
    # each block's logit contribution is (row selector) @ block, so its gradient
    # is the outer product of the selector with g
    blocks = {"prompt": onehot_prompt[..., :, None] * g[..., None, :],
              "previous": onehot_prev[..., :, None] * g[..., None, :],
              "prefix": counts[..., :, None] * g[..., None, :]}
    return ar.pack(blocks)


FD_STEP = 1e-3


def response_score(theta, x, y):
    """Response-level score ``grad_theta log pi(y | x)``, treating each whole
    response as one action: fourth-order central differences of
    ``ar.log_prob`` along every parameter direction, all directions at once
    (``ar.log_prob`` accepts a stack of parameter vectors).

    Args:
        theta: ``(D,) float64``; x: ``(B,) int``; y: ``(B, T) int``.

    Returns:
        ``(B, D) float64``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    h, D = FD_STEP, theta.size
    steps = np.eye(D) * h                                                  # (D, D)
    f = {k: ar.log_prob(theta + k * steps, x, y) for k in (2, 1, -1, -2)}  # each (D, B)
    grad = (-f[2] + 8 * f[1] - 8 * f[-1] + f[-2]) / (12 * h)              # (D, B)
    return grad.T


# ============================================================================ Exercise 2
EX2_DISCOUNTING_PROPERTY = "E"
EX2_DISCOUNTING_SETTING = "F"
EX2_BOOTSTRAPPING_PROPERTY = "G"
EX2_BOOTSTRAPPING_SETTING = "A"
EX2_TD_ERROR_PROPERTY = "B"
EX2_TD_ERROR_SETTING = "D"
EX2_REPLAY_PROPERTY = "C"
EX2_REPLAY_SETTING = "H"


# ============================================================================ Exercise 3
def group_mean_centred_weight(r):
    """Rewards ``(G, K) float64`` -> weights ``(G, K) float64``: each reward minus
    the mean of its own group (row)."""
    r = np.asarray(r, dtype=np.float64)
    return r - r.mean(axis=-1, keepdims=True)


def shrinkage_factor(K):
    """Group sizes ``(N,) int`` -> ``(N,) float64``: the factor (K - 1) / K by
    which same-group centring scales the expected update."""
    K = np.asarray(K, dtype=np.float64)
    return (K - 1.0) / K


EX3_LOO_K1 = "B"


# ============================================================================ Exercise 4
def tilted_policy(ref_logits, rewards, beta):
    """The KL-regularised optimum pi*(y|x) proportional to
    pi_ref(y|x) exp(r(x, y) / beta), row by row.

    Args:
        ref_logits: ``(P, V) float64``; pi_ref is their row-wise softmax.
        rewards: ``(P, V) float64``.
        beta: float > 0.

    Returns:
        ``(P, V) float64``, rows summing to one.
    """
    z = np.asarray(ref_logits, dtype=np.float64) + np.asarray(rewards, dtype=np.float64) / beta
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def exploit_threshold(d, r_h):
    """The beta from which the hedge's optimal log-odds against an ordinary
    candidate are <= 0.

    Under pi*, log pi*(h) - log pi*(c) = [log pi_ref(h) - log pi_ref(c)] + (r_h - 0) / beta
    = -d + r_h / beta, which is zero at beta = r_h / d.

    Args:
        d: ``(N,) float64`` reference log-odds gap of the hedge (> 0).
        r_h: ``(N,) float64`` the hedge's reward advantage (> 0).

    Returns:
        ``(N,) float64``.
    """
    return np.asarray(r_h, dtype=np.float64) / np.asarray(d, dtype=np.float64)


# ============================================================================ Exercise 5
EX5_Q_AND_O = "I"
EX5_P_Q = "A"
EX5_G = "D"
EX5_PI_THETA = "C"
EX5_RATIO = "F"
EX5_EPSILON = "F"
EX5_BETA = "G"
EX5_PI_REF = "G"

EX5_MISSING_COMPONENT = """\
The per-token KL estimator. GRPO does not add the penalty to the reward; it subtracts
beta * D_KL from the objective at every token and estimates D_KL[pi_theta || pi_ref] with
pi_ref/pi_theta - log(pi_ref/pi_theta) - 1 evaluated at the sampled token. These chapters only
used the exact KL of Section 15.3 or folded beta * log(pi/pi_ref) into the reward; this estimator
is non-negative for every sample and unbiased for the KL under samples from pi_theta, which is
why it was chosen, and it never appears in Sections 14.1-15.7. (The 1/|o_i| length
normalisation is the other piece the section only mentions in passing.)
"""
