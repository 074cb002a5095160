"""Capstone B: which PPO implementation details matter -- your module.

Your capstone-A module ``ppo.py`` sits next to this file and provides the
pieces (``compute_gae``, ``categorical_log_prob``, the losses,
``minibatch_update``). This module adds what the ablations need:

1. ``BASELINE`` and ``MENU``: capstone A's configuration and the menu of
   implementation details, each an ablation that changes ONE entry of the
   hyper-parameters (given).
2. New pieces (write them; the ones your five switches need are graded):
   ``update_obs_stats``, ``normalise_obs``  -- running observation normalisation,
   ``advantages_and_returns``              -- GAE or Monte Carlo returns, with or
                                               without bootstrapping at truncation,
   ``shared_gradients``                     -- the trunk of a shared network
                                               collects both losses' gradients,
   ``shared_minibatch_update``              -- one step of a shared network.
3. Given scaffolding: ``rlkit.variants`` (``NormalisedObs``, an environment
   wrapper that calls your two observation pieces; ``init_shared_networks``,
   ``shared_layers``); here ``evaluate_run``, ``save_results``,
   ``results_table`` and ``train_arrays``.
4. ``train``: your capstone-A loop with every switch of ``MENU``.
5. Your claim: ``CHOSEN`` (five menu names), ``FACTORS`` (the ones that
   matter by the criterion), ``WHY`` (one sentence per factor) and
   ``LITERATURE`` (one paragraph: your five beside the large-scale study of
   on-policy choices, the notebook's last section).

Shapes: B = minibatch size, A = 2 actions, T = steps per rollout, N = envs,
D = 4 observation dimensions. Arrays are float64 unless said otherwise.
"""
import json
import math
import time
from pathlib import Path

import numpy as np

import ppo  # your capstone-A module, in this folder
# Re-exported: the grader reaches your capstone-A pieces through this module.
from ppo import (DEFAULT_HP, categorical_log_prob, clipped_policy_loss,  # noqa: F401
                 clipped_value_loss, compute_gae, entropy_loss, minibatch_update,
                 normalise_advantages, value_loss)
from rlkit.agent import ENV_SEED_OFFSET, collect_rollout, evaluate, explained_variance, \
    init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, clip_grad_norm, forward, global_norm
from rlkit.optim import Adam
from rlkit.progress import progress as progress_bar
from rlkit.variants import NormalisedObs, init_shared_networks, shared_layers

# Capstone A's configuration plus the two switches this capstone adds.
BASELINE = {
    **ppo.DEFAULT_HP,
    "shared_network": False,      # one tanh trunk for policy and value, two linear heads
    "norm_obs": False,            # running mean/std normalisation of observations
    "time_limit": 500,            # CartPole-v1's episode limit (the grader's switch checks
                                  # use a short one, so their runs meet truncations)
}

# The menu: name -> the ONE hyper-parameter change that ablates the detail.
MENU = {
    "no advantage normalisation": dict(norm_adv=False),
    "no learning-rate annealing": dict(anneal_lr=False),
    "no gradient clipping": dict(max_grad_norm=None),
    "clipped value loss": dict(clip_vloss=True),
    "entropy bonus 0.01": dict(ent_coef=0.01),
    "value-loss coefficient 1": dict(vf_coef=1.0),
    "no bootstrap at truncation": dict(bootstrap_truncation=False),
    "Monte Carlo returns (lambda = 1)": dict(gae_lambda=1.0),
    "TD(0) advantages (lambda = 0)": dict(gae_lambda=0.0),
    "one minibatch (full batch)": dict(num_minibatches=1),
    "4 epochs instead of 10": dict(update_epochs=4),
    "shared network": dict(shared_network=True),
    "observation normalisation": dict(norm_obs=True),
    "surrogate clip 0.05": dict(clip_eps=0.05),
    "hidden-layer gain 1 (orthogonal init)": dict(hidden_gain=1.0),
}

OBS_EPS = 1e-8            # added to the variance in `normalise_obs`
OBS_CLIP = 10.0           # normalised observations are clipped to [-10, 10]


# --------------------------------------------------------------------------
# 2. New pieces
# --------------------------------------------------------------------------

def update_obs_stats(mean, var, count, obs):
    """Merge a batch of observations into running statistics.

    Args:
        mean: ``(D,) float64`` running mean; var: ``(D,) float64`` running
            (population) variance; count: float, observations seen so far
            (starts at ``rlkit.variants.OBS_COUNT0``).
        obs: ``(N, D) float64``, a batch of observations.

    Returns:
        ``(mean (D,), var (D,), count float)`` of all observations seen, by
        the parallel-variance formula (Chan et al.), as gymnasium's
        ``RunningMeanStd``: with ``delta = mean(obs) - mean``, ``n = N``,
        ``total = count + n``::

            mean' = mean + delta * n / total
            var'  = (var * count + var(obs) * n + delta**2 * count * n / total) / total

    The inputs are not modified.
    """
    raise NotImplementedError("update_obs_stats: not implemented yet (piece 2a)")


def normalise_obs(obs, mean, var):
    """``clip((obs - mean) / sqrt(var + OBS_EPS), -OBS_CLIP, OBS_CLIP)``.

    Args:
        obs: ``(N, D) float64``; mean, var: ``(D,) float64``.

    Returns:
        ``(N, D) float64``.
    """
    raise NotImplementedError("normalise_obs: not implemented yet (piece 2b)")


def advantages_and_returns(rollout, hp):
    """Advantages and value targets of a rollout under ``hp``'s switches.

    Args:
        rollout: ``collect_rollout``'s dict (``rewards``, ``values``,
            ``final_values``, ``terminated``, ``truncated``, shapes as there).
        hp: dict with ``gamma``, ``gae_lambda`` (1.0: Monte Carlo returns,
            bootstrapped only where the data stops) and
            ``bootstrap_truncation`` (False: a time-limit end is treated as a
            termination, i.e. its next value is 0).

    Returns:
        ``(advantages (T, N), returns (T, N))`` from your ``compute_gae``.
    """
    raise NotImplementedError("advantages_and_returns: not implemented yet (piece 2c)")


def shared_gradients(policy_grads, value_grads, num_shared):
    """Gradients of a shared network's parameters from its two halves.

    A shared network is ``policy_params = trunk + [policy_head]`` and
    ``value_params = trunk + [value_head]``: the same ``num_shared`` layer
    dicts start both lists. ``backward`` of each half gives gradients for its
    own list.

    Args:
        policy_grads, value_grads: lists of ``{"W", "b"}`` gradient dicts,
            as returned by ``rlkit.mlp.backward`` for the two halves (the
            value half's already scaled by ``vf_coef``).
        num_shared: int, the number of trunk layers.

    Returns:
        list of ``num_shared + 2`` gradient dicts for the network's distinct
        layers, in the order ``trunk + [policy_head, value_head]``: each
        trunk layer's gradient is the SUM of the two halves' gradients (both
        losses flow into the trunk); the heads' are their own half's.
    """
    raise NotImplementedError("shared_gradients: not implemented yet (piece 2d)")


def shared_minibatch_update(policy_params, value_params, opt, batch, hp):
    """One PPO step of a shared network (``init_shared_networks``), in place.

    Your ``ppo.minibatch_update`` with two changes: the two halves' gradients
    are merged by ``shared_gradients``, and the merged list is clipped to one
    global norm (``max_grad_norm``) and stepped by ONE Adam ``opt`` over
    ``shared_layers(policy_params, value_params)``.

    Order of operations (the grader's loop uses it; another order changes
    the last digits, which the switch check tolerates up to ``switch_rtol``):
    normalise the advantages (``norm_adv``); forward the policy half, then the
    value half; ``clipped_policy_loss``; ``clipped_value_loss`` (``clip_vloss``)
    or ``value_loss``; add ``ent_coef *`` the ``entropy_loss`` gradient to the
    logits' gradient when ``ent_coef != 0``; ``backward`` through the policy
    half with the logits' gradient and through the value half with
    ``vf_coef *`` the values' gradient; merge; clip; step.

    Returns:
        the statistics ``ppo.minibatch_update`` returns, on the minibatch
        before the step.
    """
    raise NotImplementedError("shared_minibatch_update: not implemented yet (piece 2e)")


# --------------------------------------------------------------------------
# 3. Given scaffolding (read it; do not change it)
# --------------------------------------------------------------------------

def evaluate_run(run, episodes=20, seed=0):
    """``(episodes,)`` returns of a ``train`` result's policy with sampled
    actions (``rlkit.agent.evaluate``), on observations normalised with the
    run's final statistics (frozen) when it trained with ``norm_obs``."""
    stats = run.get("obs_stats")
    normalise = None if stats is None else (
        lambda obs: normalise_obs(obs, np.asarray(stats["mean"]), np.asarray(stats["var"])))
    return evaluate(run["policy_params"], episodes=episodes, seed=seed, normalise=normalise)


# --------------------------------------------------------------------------
# 4. The loop with every switch
# --------------------------------------------------------------------------

def train(seed, updates=60, hp=None, progress=False):
    """Your capstone-A ``train`` with the switches of ``MENU``.

    ``hp = {**BASELINE, **(hp or {})}``; the recipe, the draws from the run's
    Generator and the log are capstone A's (copy your ``ppo.train`` here),
    with:

    * advantages and returns from ``advantages_and_returns(rollout, hp)``
      (it applies ``gae_lambda`` and ``bootstrap_truncation``);
    * every other switch of ``MENU`` read from ``hp`` where capstone A's
      recipe reads it (``anneal_lr``, ``adam_eps``, ``update_epochs``,
      ``num_minibatches``, ``num_envs``, ``num_steps``, the init gains,
      ``max_grad_norm``, ``norm_adv``, ``clip_vloss``, ``ent_coef``,
      ``clip_eps``: your ``ppo.minibatch_update`` takes the last five);
    * the environment is ``VecCartPole(num_envs, seed=seed +
      ENV_SEED_OFFSET, max_episode_steps=hp["time_limit"])``;

    * ``shared_network``: the networks come from ``init_shared_networks``
      (in place of ``init_networks``), ONE ``Adam(shared_layers(...),
      lr, eps)`` replaces the two, and each minibatch step is
      ``shared_minibatch_update``;
    * ``norm_obs``: the environment is ``NormalisedObs(VecCartPole(...),
      update_obs_stats, normalise_obs)``, created before ``reset``.

    Returns:
        capstone A's dict (``policy_params``, ``value_params``, ``hp``,
        ``log``) plus ``"obs_stats"``: ``{"mean": (D,), "var": (D,),
        "count": float}`` at the end of training with ``norm_obs``, else
        None.
    """
    raise NotImplementedError("train: not implemented yet (section 4)")


RESULTS_FILE = "ablation_results.json"     # the notebook writes your table here


def save_results(rows):
    """Given: write the table ``rows`` next to this module, as JSON: a list of
    ``[config, seed, mean training return, final evaluation median, curve]``,
    the numbers of ``rlkit.study.per_seed_numbers`` and the run's learning
    curve as ``rlkit.study.curve_row`` gives it (one number per update)."""
    rows = [[str(c), int(s), float(m), float(e), [float(x) for x in curve]]
            for c, s, m, e, curve in rows]
    text = ",\n".join(json.dumps(row) for row in rows)       # one row per line
    Path(__file__).with_name(RESULTS_FILE).write_text(f"[\n{text}\n]\n")


def results_table():
    """Given (the grader calls it): the table the notebook saved, as
    ``{config: [[seed, mean training return, final evaluation median, *curve],
    ...]}`` (numbers cross to the grader, names only as keys), or {}."""
    path = Path(__file__).with_name(RESULTS_FILE)
    table = {}
    for row in (json.loads(path.read_text()) if path.is_file() else []):
        config, seed, *numbers = row
        curve = numbers.pop() if numbers and isinstance(numbers[-1], list) else []
        table.setdefault(str(config), []).append(
            [float(seed), *map(float, numbers), *map(float, curve)])
    return table


def experiment_config():
    """Given (the grader calls it): the configuration your table was run
    with, ``{"baseline": BASELINE, "menu": MENU}``. Do not change it (nor
    BASELINE and MENU: the grader compares them with assignment.toml)."""
    return {"baseline": BASELINE, "menu": MENU}


def train_arrays(seed, updates, hp):
    """Given (the grader calls it): ``train`` returning plain data only:
    ``{"policy_params", "value_params", "obs_stats"}``. Do not change it."""
    run = train(seed, updates, hp)
    return {"policy_params": run["policy_params"], "value_params": run["value_params"],
            "obs_stats": run["obs_stats"]}


# --------------------------------------------------------------------------
# 5. Your claim (the notebook helps you fill these in)
# --------------------------------------------------------------------------

CHOSEN = ""        # five names of MENU, separated by ";"
FACTORS = ""       # the chosen factors that matter by the criterion, separated by ";"; or "none"
WHY = """
"""                # one sentence of why per factor: "<factor>: <why>", one per line
LITERATURE = """
"""                # one paragraph: your five beside the study of on-policy choices
