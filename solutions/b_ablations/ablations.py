"""Capstone B: which PPO implementation details matter -- reference solution.

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
    obs = np.asarray(obs, dtype=np.float64)
    n = obs.shape[0]
    batch_mean, batch_var = obs.mean(axis=0), obs.var(axis=0)
    delta = batch_mean - mean
    total = count + n
    new_mean = mean + delta * n / total
    m2 = var * count + batch_var * n + delta * delta * count * n / total
    return new_mean, m2 / total, float(total)


def normalise_obs(obs, mean, var):
    """``clip((obs - mean) / sqrt(var + OBS_EPS), -OBS_CLIP, OBS_CLIP)``.

    Args:
        obs: ``(N, D) float64``; mean, var: ``(D,) float64``.

    Returns:
        ``(N, D) float64``.
    """
    z = (np.asarray(obs, dtype=np.float64) - mean) / np.sqrt(var + OBS_EPS)
    return np.clip(z, -OBS_CLIP, OBS_CLIP)


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
    terminated, truncated = rollout["terminated"], rollout["truncated"]
    if not hp["bootstrap_truncation"]:
        terminated, truncated = terminated | truncated, np.zeros_like(truncated)
    return compute_gae(rollout["rewards"], rollout["values"], rollout["final_values"],
                       terminated, truncated, hp["gamma"], hp["gae_lambda"])


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
    trunk = [{k: pg[k] + vg[k] for k in ("W", "b")}
             for pg, vg in zip(policy_grads[:num_shared], value_grads[:num_shared])]
    return trunk + [policy_grads[num_shared], value_grads[num_shared]]


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
    advantages = batch["advantages"]
    if hp["norm_adv"]:
        advantages = ppo.normalise_advantages(advantages)
    logits, policy_cache = forward(policy_params, batch["obs"])
    value_out, value_cache = forward(value_params, batch["obs"])
    values = value_out[:, 0]
    clip_eps = hp["clip_eps"]
    pg_loss, dlogits = ppo.clipped_policy_loss(logits, batch["actions"], batch["logp_old"],
                                               advantages, clip_eps)
    if hp["clip_vloss"]:
        v_loss, dvalues = ppo.clipped_value_loss(values, batch["values_old"], batch["returns"],
                                                 clip_eps)
    else:
        v_loss, dvalues = ppo.value_loss(values, batch["returns"])
    ent_loss, dent = ppo.entropy_loss(logits)
    if hp["ent_coef"] != 0.0:
        dlogits = dlogits + hp["ent_coef"] * dent
    policy_grads = backward(policy_params, policy_cache, dlogits)
    value_grads = backward(value_params, value_cache, (hp["vf_coef"] * dvalues)[:, None])
    grads = shared_gradients(policy_grads, value_grads, len(policy_params) - 1)
    if hp["max_grad_norm"] is not None:
        grad_norm = clip_grad_norm(grads, hp["max_grad_norm"])
    else:
        grad_norm = global_norm(grads)
    opt.step(shared_layers(policy_params, value_params), grads)
    logratio = ppo.categorical_log_prob(logits, batch["actions"]) - batch["logp_old"]
    ratio = np.exp(logratio)
    return {"pg_loss": pg_loss, "v_loss": v_loss, "ent_loss": ent_loss, "entropy": -ent_loss,
            "approx_kl": float(np.mean(ratio - 1.0 - logratio)),
            "old_approx_kl": float(-np.mean(logratio)),
            "clipfrac": float(np.mean(np.abs(ratio - 1.0) > clip_eps)),
            "grad_norm": float(grad_norm)}


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
    hp = {**BASELINE, **(hp or {})}
    rng = np.random.default_rng(seed)
    shared = hp["shared_network"]
    if shared:
        policy_params, value_params = init_shared_networks(hp, rng)
        opt = Adam(shared_layers(policy_params, value_params), lr=hp["lr"], eps=hp["adam_eps"])
        opts = [opt]
    else:
        policy_params, value_params = init_networks(hp, rng)
        opts = [Adam(policy_params, lr=hp["lr"], eps=hp["adam_eps"]),
                Adam(value_params, lr=hp["lr"], eps=hp["adam_eps"])]
    env = VecCartPole(hp["num_envs"], seed=seed + ENV_SEED_OFFSET,
                      max_episode_steps=hp["time_limit"])
    if hp["norm_obs"]:
        env = NormalisedObs(env, update_obs_stats, normalise_obs)
    obs = env.reset()

    T, N = hp["num_steps"], hp["num_envs"]
    batch_size = T * N
    mb_size = batch_size // hp["num_minibatches"]
    stat_keys = ("pg_loss", "v_loss", "ent_loss", "entropy", "approx_kl",
                 "old_approx_kl", "clipfrac", "grad_norm")
    log = {"episode_returns": []}
    for key in stat_keys + ("explained_variance", "lr", "rollout_seconds", "update_seconds"):
        log[key] = np.full(updates, np.nan)

    for u in progress_bar(range(updates), enable=progress, desc=f"PPO seed {seed}"):
        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]
        for o in opts:
            o.lr = lr

        t0 = time.perf_counter()
        ro = collect_rollout(env, obs, policy_params, value_params, T, rng)
        obs = ro["next_obs"]
        advantages, returns = advantages_and_returns(ro, hp)
        flat = {
            "obs": ro["obs"].reshape(batch_size, OBS_DIM),
            "actions": ro["actions"].reshape(batch_size),
            "logp_old": ppo.categorical_log_prob(ro["logits"].reshape(batch_size, NUM_ACTIONS),
                                                 ro["actions"].reshape(batch_size)),
            "advantages": advantages.reshape(batch_size),
            "returns": returns.reshape(batch_size),
            "values_old": ro["values"][:T].reshape(batch_size),
        }
        t1 = time.perf_counter()

        sums = dict.fromkeys(stat_keys, 0.0)
        steps = 0
        for _ in range(hp["update_epochs"]):
            perm = rng.permutation(batch_size)
            shuffled = {k: v[perm] for k, v in flat.items()}
            for start in range(0, batch_size, mb_size):
                batch = {k: v[start:start + mb_size] for k, v in shuffled.items()}
                if shared:
                    stats = shared_minibatch_update(policy_params, value_params, opts[0], batch,
                                                    hp)
                else:
                    stats = ppo.minibatch_update(policy_params, value_params, opts[0], opts[1],
                                                 batch, hp)
                for k in stat_keys:
                    sums[k] += stats[k]
                steps += 1
            if hp["target_kl"] is not None and stats["approx_kl"] > hp["target_kl"]:
                break
        t2 = time.perf_counter()

        log["episode_returns"].append(ro["episode_returns"])
        for k in stat_keys:
            log[k][u] = sums[k] / steps
        log["explained_variance"][u] = explained_variance(flat["values_old"], flat["returns"])
        log["lr"][u] = lr
        log["rollout_seconds"][u] = t1 - t0
        log["update_seconds"][u] = t2 - t1

    obs_stats = {"mean": env.mean.copy(), "var": env.var.copy(), "count": env.count} \
        if hp["norm_obs"] else None
    return {"policy_params": policy_params, "value_params": value_params, "hp": hp, "log": log,
            "obs_stats": obs_stats}


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

CHOSEN = "; ".join([            # five names of MENU, separated by ";"
    "no advantage normalisation",
    "no gradient clipping",
    "one minibatch (full batch)",
    "shared network",
    "observation normalisation",
])
FACTORS = "; ".join([           # the chosen factors that matter by the criterion; "none" if none
    "one minibatch (full batch)",
    "shared network",
])
WHY = """one minibatch (full batch): one gradient step per epoch instead of eight takes ten steps
per rollout where the baseline takes eighty, so the policy improves far less per update and the
learning curve rises much later.
shared network: the value loss, weighted 0.5 and far larger than the policy loss, moves the
shared trunk, so the features the policy relies on keep changing under it and it learns slower.
"""
LITERATURE = """Of my five, two matter on CartPole and both agree with Andrychowicz et al.'s
recommendations: a shared network slowed learning badly, as their advice to keep the value
network apart from the policy predicts, and one full-batch step per epoch slowed it because it
cuts the gradient steps per batch of experience eightfold, a setting they found worth tuning.
Gradient clipping did not matter here, as it was of secondary importance there. Two differ in
strength: advantage normalisation mattered little in both, but observation normalisation, one
of the choices that mattered most in their MuJoCo tasks, is borderline on CartPole, whose four
observations are already of order one, while MuJoCo's span orders of magnitude; and their
measure is the return after long training, mine the speed of learning within 60 updates.
"""
