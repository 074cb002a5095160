"""Capstone A: PPO from the pieces on CartPole.

Proximal Policy Optimisation (clipped surrogate, GAE, minibatch epochs) in
one file, numpy float64, in the spirit of CleanRL's ``ppo.py``. You write
the pieces marked ``raise NotImplementedError`` (1-10); everything else is
given and complete. The grader calls each piece on its own, so keep every
name and signature. Use numpy on whole arrays: no Python loops over samples
(a loop over time steps in ``compute_gae`` is fine). Read it top to bottom:

1. ``DEFAULT_HP``: every hyper-parameter and implementation detail, each one
   a switch that later assignments flip to ablate it.
2. The pieces you write (graded one by one):
   ``categorical_log_prob``, ``categorical_entropy``  -- the policy's distribution,
   ``compute_gae``                                     -- advantages and returns,
   ``policy_ratio``, ``normalise_advantages``,
   ``clipped_policy_loss``, ``entropy_loss``, ``value_loss`` -- losses with
                                                          exact gradients,
   ``minibatch_update``                                -- one optimiser step.
3. Scaffolding (given): ``clipped_value_loss`` (for the ``clip_vloss``
   switch) here; ``init_networks``, ``sample_actions``, ``collect_rollout``,
   ``evaluate``, ``explained_variance`` from ``rlkit.agent`` (read them).
4. ``train``: the PPO loop that puts it all together (you write it too).

Check every gradient you derive against central finite differences before
you train: ``(f(z + h e_i) - f(z - h e_i)) / (2 h)`` with ``h ~ 1e-6``.

Shapes: B = minibatch size, A = 2 actions, T = steps per rollout, N = envs.
Arrays are float64 unless said otherwise. Rewards are 1.0 per CartPole step,
so returns and values are in "steps" (discounted).

Randomness: ``train(seed)`` creates ONE ``np.random.default_rng(seed)``
(called "the run's Generator") and uses it, in this order, for the policy
initialisation, the value initialisation, and then in every update for the
rollout's action noise followed by one permutation per epoch. The
environment has its own stream: ``VecCartPole(..., seed=seed +
ENV_SEED_OFFSET)``. So a run is a deterministic function of ``seed``.

Networks: two separate tanh MLPs from ``rlkit.mlp`` (no shared trunk),
4 -> 64 -> 64 -> 2 logits for the policy and 4 -> 64 -> 64 -> 1 for the
value, orthogonal init with gains sqrt(2), sqrt(2), then 0.01 (policy head,
so the initial policy is nearly uniform) or 1.0 (value head).

The grader checks that your functions leave their input arrays unchanged (work
on a copy: ``x = x - m``, not ``x -= m`` on an argument), except that ``minibatch_update``
updates the parameters and optimisers in place, as documented.
"""
import math
import time  # noqa: F401 - you will need it in train

import numpy as np

from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, clip_grad_norm, forward, global_norm, init_mlp  # noqa: F401
from rlkit.optim import Adam  # noqa: F401
from rlkit.progress import progress as progress_bar  # noqa: F401

# Every hyper-parameter and implementation detail of the run lives here;
# ``train(seed, hp={...})`` overrides any subset of them.
DEFAULT_HP = {
    # data collection
    "num_envs": 8,                 # N parallel CartPoles
    "num_steps": 256,              # T steps per env per update -> batch of N*T = 2048
    # optimisation
    "lr": 1e-3,                    # Adam learning rate at the first update
    "anneal_lr": True,             # linear decay of lr towards 0 over the updates
    "adam_eps": 1e-5,              # Adam epsilon (PyTorch default would be 1e-8)
    "update_epochs": 10,           # passes over each rollout
    "num_minibatches": 8,          # minibatches per pass -> B = 2048 / 8 = 256
    "max_grad_norm": 0.5,          # joint global-norm clip over BOTH nets; None = off
    "target_kl": None,             # stop the epochs early once approx_kl > this; None = off
    # returns and advantages
    "gamma": 0.99,                 # discount
    "gae_lambda": 0.95,            # GAE lambda (1.0 = discounted reward-to-go - V)
    "bootstrap_truncation": True,  # bootstrap time-limit ends from V(final_obs);
                                   # False treats them like terminations
    "norm_adv": True,              # standardise advantages per minibatch
    # losses
    "clip_eps": 0.2,               # PPO ratio clip
    "clip_vloss": False,           # CleanRL-style clipped value loss (off here)
    "vf_coef": 0.5,                # weight of the value loss
    "ent_coef": 0.0,               # weight of the entropy bonus
    # networks
    "hidden": (64, 64),            # tanh hidden layers of both nets
    "hidden_gain": math.sqrt(2),   # orthogonal-init gain of the hidden layers
    "policy_head_gain": 0.01,      # ... of the policy's output layer
    "value_head_gain": 1.0,        # ... of the value's output layer
}

ADV_EPS = 1e-8            # added to the std in `normalise_advantages`


# --------------------------------------------------------------------------
# 1-2. The categorical policy
# --------------------------------------------------------------------------

def categorical_log_prob(logits, actions):
    """Log-probability of the chosen actions under softmax(logits).

    Args:
        logits: ``(B, A) float64`` unnormalised action preferences.
        actions: ``(B,)`` integers in ``[0, A)``.

    Returns:
        ``(B,) float64``, ``log softmax(logits)[b, actions[b]]``, computed with
        the log-sum-exp trick (no overflow for large logits).
    """
    raise NotImplementedError(
        "(1) categorical_log_prob: log-softmax of each row via "
        "log-sum-exp (subtract the row max first), then pick the entry of "
        "the taken action")


def categorical_entropy(logits):
    """Entropy of softmax(logits), per row, in nats.

    Args:
        logits: ``(B, A) float64``.

    Returns:
        ``(B,) float64``, ``H = -sum_a p_a log p_a`` with ``log p`` from the
        stable log-softmax (so a probability that underflows to 0 contributes
        ``0 * finite = 0``, never NaN).
    """
    raise NotImplementedError(
        "(2) categorical_entropy: -sum_a p_a log p_a with log p from a "
        "stable log-softmax (never log of a probability that may be 0)")


# --------------------------------------------------------------------------
# 3. Generalised advantage estimation
# --------------------------------------------------------------------------

def compute_gae(rewards, values, final_values, terminated, truncated, gamma, lam):
    """Advantages and value targets of one rollout with GAE(gamma, lambda).

    Args:
        rewards: ``(T, N) float64``, reward of step t.
        values: ``(T+1, N) float64``; ``values[t] = V(obs_t)`` for t < T and
            ``values[T]`` = V of the observation after the last step (the
            bootstrap for episodes still running when the rollout ends).
        final_values: ``(T, N) float64``, ``V(final_obs_t)``: the value of
            the true next state of step t (equal to ``values[t+1]`` where no
            episode ended at t).
        terminated: ``(T, N) bool``, the episode ended for real at step t.
        truncated: ``(T, N) bool``, the episode hit the time limit at step t.
        gamma: discount, float.
        lam: GAE lambda, float.

    Returns:
        advantages: ``(T, N) float64``.
        returns: ``(T, N) float64``, ``advantages + values[:T]`` (the value
            targets).

    The next-state value of step t is 0 if it terminated, ``final_values[t]``
    if it was truncated (``values[t+1]`` is the observation after the reset,
    which belongs to the next episode), else ``values[t+1]``. Then::

        delta_t = r_t + gamma * next_value_t - values[t]
        A_t     = delta_t + gamma * lam * (1 - done_t) * A_{t+1},  A_T = 0

    with ``done = terminated | truncated``. At ``lam = 1`` the advantage is
    the discounted reward-to-go (bootstrapped where the data stops) minus V.
    """
    raise NotImplementedError(
        "(3) compute_gae: next-state values (0 / final_values / "
        "values[t+1]), deltas, then one backward loop over t (vectorised "
        "over the N envs)")


# --------------------------------------------------------------------------
# 4-8. Ratio, advantage normalisation and the three losses
# --------------------------------------------------------------------------

def policy_ratio(logp_new, logp_old):
    """Importance ratio ``pi_new(a|s) / pi_old(a|s) = exp(logp_new - logp_old)``.

    Args:
        logp_new, logp_old: ``(B,) float64`` log-probabilities of the same
            actions under the current and the data-collecting policy.

    Returns:
        ``(B,) float64`` ratios rho (1.0 before the first gradient step).
    """
    raise NotImplementedError(
        "(4) policy_ratio: exp(logp_new - logp_old)")


def normalise_advantages(adv):
    """Standardise advantages: ``(adv - mean) / (std + 1e-8)``.

    Args:
        adv: float64 array of any shape.

    Returns:
        same shape, float64; mean and population std (ddof=0) are taken over
        ALL elements. (CleanRL uses torch's unbiased std; at B = 256 the
        difference is a factor sqrt(255/256).)
    """
    raise NotImplementedError(
        "(5) normalise_advantages: (adv - mean) / (std + ADV_EPS) over "
        "all elements, population std")


def clipped_policy_loss(logits, actions, logp_old, advantages, clip_eps):
    """PPO's clipped surrogate loss and its exact gradient w.r.t. the logits.

    Args:
        logits: ``(B, A) float64`` current policy logits.
        actions: ``(B,)`` ints, the actions taken.
        logp_old: ``(B,) float64`` their log-probabilities when collected.
        advantages: ``(B,) float64`` (already normalised if desired).
        clip_eps: float, e.g. 0.2.

    Returns:
        loss: float, ``-mean(min(rho * A, clip(rho, 1-eps, 1+eps) * A))``.
        dloss_dlogits: ``(B, A) float64``.

    Gradient: ``d rho / d logits = rho * (onehot(a) - softmax(logits))``. The
    clipped term is constant in the logits, so a sample contributes
    ``-(1/B) * A * rho * (onehot - p)`` only where the unclipped term is the
    (active) minimum, i.e. ``rho <= 1 + eps`` if A >= 0 and ``rho >= 1 - eps``
    if A < 0; elsewhere its gradient is 0. At rho = 1 this is the plain
    policy-gradient gradient ``-mean(A * grad log pi)``.
    """
    raise NotImplementedError(
        "(6) clipped_policy_loss: loss = -mean(min(rho A, clip(rho) A)); "
        "gradient -(1/B) A rho (onehot - p) where the unclipped term is "
        "active")


def entropy_loss(logits):
    """Negative mean entropy (minimising it raises entropy) and its gradient.

    Args:
        logits: ``(B, A) float64``.

    Returns:
        loss: float, ``-mean(H(softmax(logits)))``.
        dloss_dlogits: ``(B, A) float64``, exact. Hint: with ``p =
            softmax(z)``, ``d log p_i / d z_j = [i == j] - p_j``.
    """
    raise NotImplementedError(
        "(7) entropy_loss: -mean(entropy) and its gradient w.r.t. the "
        "logits (check it against central finite differences)")


def value_loss(values, returns):
    """Squared-error value loss ``0.5 * mean((values - returns)^2)`` (no clipping).

    Args:
        values: ``(B,) float64`` predictions V(obs).
        returns: ``(B,) float64`` targets from ``compute_gae``.

    Returns:
        loss: float.
        dloss_dvalues: ``(B,) float64``, ``(values - returns) / B``.
    """
    raise NotImplementedError(
        "(8) value_loss: 0.5 * mean((values - returns)^2) and (values - "
        "returns) / B")


def clipped_value_loss(values, values_old, returns, clip_eps):
    """CleanRL's clipped value loss (``hp["clip_vloss"]``), given, not graded.

    ``v_clip = values_old + clip(values - values_old, -eps, eps)`` and
    ``loss = 0.5 * mean(max((values - R)^2, (v_clip - R)^2))``.

    Args:
        values, values_old, returns: ``(B,) float64``; ``values_old`` are the
            predictions made when the rollout was collected.
        clip_eps: float.

    Returns:
        loss: float; dloss_dvalues: ``(B,) float64``. A sample whose clipped
        term is strictly larger gets gradient 0 (its v_clip is constant).
        Inside the band ``v_clip`` is ``values`` itself (not
        ``values_old + (values - values_old)``, which rounding can move).
    """
    diff = values - returns
    step = values - values_old
    v_clip = np.where(np.abs(step) <= clip_eps, values,
                      values_old + np.clip(step, -clip_eps, clip_eps))
    clipped_diff = v_clip - returns
    sq, sq_clipped = diff * diff, clipped_diff * clipped_diff
    loss = 0.5 * np.maximum(sq, sq_clipped).mean()
    return float(loss), np.where(sq >= sq_clipped, diff, 0.0) / diff.shape[0]


# --------------------------------------------------------------------------
# 9. One minibatch step on both networks
# --------------------------------------------------------------------------

def minibatch_update(policy_params, value_params, policy_opt, value_opt, batch, hp):
    """One gradient step of PPO on a minibatch; parameters change in place.

    Args:
        policy_params, value_params: ``rlkit.mlp`` parameter lists
            (4 -> ... -> 2 logits and 4 -> ... -> 1 value).
        policy_opt, value_opt: their ``rlkit.optim.Adam`` optimisers.
        batch: dict of arrays for B samples:
            ``"obs"`` ``(B, 4) float64``, ``"actions"`` ``(B,) int``,
            ``"logp_old"`` ``(B,) float64``, ``"advantages"`` ``(B,) float64``,
            ``"returns"`` ``(B,) float64``; plus ``"values_old"`` ``(B,)`` if
            ``hp["clip_vloss"]``.
        hp: dict with ``"clip_eps"``, ``"vf_coef"``, ``"ent_coef"``,
            ``"max_grad_norm"`` (None = no clipping), ``"norm_adv"``;
            optional ``"clip_vloss"`` (default False).

    Total loss = ``pg_loss + vf_coef * v_loss + ent_coef * ent_loss``
    (``ent_loss`` = -mean entropy). The gradient of both nets is clipped to a
    global L2 norm of ``max_grad_norm`` JOINTLY (one norm over all policy and
    value gradients, as CleanRL's single ``clip_grad_norm_`` over
    ``agent.parameters()``), then each Adam takes one step.

    Returns:
        dict of Python floats, measured on the minibatch BEFORE the step:
        ``pg_loss``, ``v_loss``, ``ent_loss``, ``entropy`` (mean, nats),
        ``approx_kl`` (``mean((rho - 1) - log rho)``, the k3 estimator of
        KL(old || new)), ``old_approx_kl`` (``mean(-log rho)``), ``clipfrac``
        (fraction with ``|rho - 1| > clip_eps``), ``grad_norm`` (joint norm
        before clipping; measured also when ``max_grad_norm`` is None).

    The inputs are not modified (the parameters and optimisers are: in place).
    """
    raise NotImplementedError(
        "(9) minibatch_update: normalise advantages, forward both nets, "
        "losses 6/7/8, rlkit.mlp.backward, joint clip_grad_norm, two Adam "
        "steps")


def minibatch_update_arrays(policy_params, value_params, policy_adam, value_adam, batch, hp):
    """Given (the grader calls it): ``minibatch_update`` on plain data.

    The two optimisers travel as ``Adam.state_dict()`` dicts; returns
    ``{"policy_params", "value_params", "policy_adam", "value_adam", "stats"}``
    after the step (``stats``: what ``minibatch_update`` returned). Do not
    change it: it only adapts your ``minibatch_update``.
    """
    policy_opt = Adam.from_state(policy_params, policy_adam)
    value_opt = Adam.from_state(value_params, value_adam)
    stats = minibatch_update(policy_params, value_params, policy_opt, value_opt, batch, hp)
    return {"policy_params": policy_params, "value_params": value_params,
            "policy_adam": policy_opt.state_dict(), "value_adam": value_opt.state_dict(),
            "stats": stats}


# --------------------------------------------------------------------------
# 10. The PPO loop
# --------------------------------------------------------------------------

def train(seed, updates=60, hp=None, progress=False):
    """Train PPO on CartPole from scratch.

    Args:
        seed: int; the run's Generator is ``np.random.default_rng(seed)``
            and the environment is seeded with ``seed + ENV_SEED_OFFSET``.
        updates: number of (rollout, optimisation) iterations.
        hp: dict overriding entries of ``DEFAULT_HP``.
        progress: show a progress bar.

    Recipe (keep this order of draws from the run's Generator ``rng``):

    1. ``hp = {**DEFAULT_HP, **(hp or {})}``, ``rng = default_rng(seed)``,
       ``init_networks(hp, rng)``, one ``Adam(params, lr=hp["lr"],
       eps=hp["adam_eps"])`` per network, ``env = VecCartPole(num_envs,
       seed=seed + ENV_SEED_OFFSET)``, ``obs = env.reset()``.
    2. For ``u = 0 .. updates-1``:

       a. learning rate ``lr * (1 - u / updates)`` (``anneal_lr``) or ``lr``,
          set on both optimisers (``opt.lr = ...``);
       b. ``collect_rollout`` with ``num_steps`` steps; continue from its
          ``next_obs`` next time;
       c. ``compute_gae`` (with ``bootstrap_truncation`` off, treat truncated
          steps as terminated);
       d. flatten every ``(T, N)`` array to ``(T*N,)`` (``(T*N, 4)`` for the
          observations) and get ``logp_old`` from the rollout's logits with
          ``categorical_log_prob``;
       e. ``update_epochs`` times: ``perm = rng.permutation(T*N)``, cut it
          into ``num_minibatches`` consecutive slices, and call
          ``minibatch_update`` on each slice (index the flat arrays once per
          epoch with ``perm``, then slice views: no per-sample loops); stop
          early after an epoch whose last ``approx_kl`` exceeds
          ``target_kl`` (if set);
       f. append this update's entries to the log.

    Returns:
        dict with ``"policy_params"``, ``"value_params"`` (final networks),
        ``"hp"`` (the full dict used) and ``"log"``, a dict of per-update
        entries: ``"episode_returns"`` (list of ``(k_u,) float64`` returns of
        the episodes that finished in update u), and ``(updates,) float64``
        arrays ``"pg_loss"``, ``"v_loss"``, ``"ent_loss"``, ``"entropy"``,
        ``"approx_kl"``, ``"old_approx_kl"``, ``"clipfrac"``, ``"grad_norm"``
        (means over the update's minibatches), ``"explained_variance"``
        (rollout values vs returns), ``"lr"``, ``"rollout_seconds"``,
        ``"update_seconds"``.
    """
    raise NotImplementedError(
        "(10) train: follow the recipe in the docstring; collect_rollout, "
        "categorical_log_prob, compute_gae and minibatch_update do the "
        "work")
