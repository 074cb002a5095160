"""CartPole actor-critic scaffolding shared by the PPO handout and its grader:
networks, acting, rollouts and evaluation. No PPO here: no losses, no
advantages, no update.

Randomness: every function that samples takes the run's Generator
explicitly; environments are seeded with ``seed + ENV_SEED_OFFSET``.
"""
import numpy as np

from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import forward, init_mlp

ENV_SEED_OFFSET = 10_000  # the environment of run `seed` uses seed + ENV_SEED_OFFSET
EVAL_SEED = 12_345        # default seed of `evaluate`


def init_networks(hp, rng):
    """Create ``(policy_params, value_params)`` from ``hp``, policy first.

    Policy: ``OBS_DIM -> *hp["hidden"] -> NUM_ACTIONS`` logits; value:
    ``OBS_DIM -> *hp["hidden"] -> 1``. Orthogonal init, gain
    ``hp["hidden_gain"]`` per hidden layer and the head gains from ``hp``.
    Draws from ``rng`` (policy before value).
    """
    hidden = list(hp["hidden"])
    hidden_gains = [hp["hidden_gain"]] * len(hidden)
    policy_params = init_mlp([OBS_DIM, *hidden, NUM_ACTIONS],
                             hidden_gains + [hp["policy_head_gain"]], rng)
    value_params = init_mlp([OBS_DIM, *hidden, 1], hidden_gains + [hp["value_head_gain"]], rng)
    return policy_params, value_params


def sample_actions(logits, gumbel_noise):
    """Sample one action per row from softmax(logits) by the Gumbel-max trick.

    Args:
        logits: ``(N, A) float64``.
        gumbel_noise: ``(N, A) float64`` standard Gumbel draws
            (``rng.gumbel(size=(N, A))``).

    Returns:
        ``(N,) int64``, ``argmax(logits + noise)``, which is distributed
        exactly as softmax(logits) (no need to normalise the logits).
    """
    return np.argmax(logits + gumbel_noise, axis=1)


def collect_rollout(env, obs, policy_params, value_params, num_steps, rng):
    """Run the current policy for ``num_steps`` steps in every environment.

    Args:
        env: a reset ``VecCartPole`` with N environments.
        obs: ``(N, 4) float64``, the observation to act on first.
        policy_params, value_params: the current networks (unchanged).
        num_steps: T.
        rng: the run's Generator; one ``rng.gumbel(size=(T, N, A))`` draw
            supplies the action noise of the whole rollout.

    Returns:
        dict with
        ``obs`` ``(T, N, 4)``: observation acted on at step t;
        ``actions`` ``(T, N) int64``; ``logits`` ``(T, N, A)``: the policy's
        logits at ``obs`` (so ``logp_old`` = their log-softmax at ``actions``);
        ``rewards`` ``(T, N)``; ``terminated``, ``truncated`` ``(T, N) bool``;
        ``values`` ``(T+1, N)``: V(obs_t), and in row T the V of ``next_obs``;
        ``final_values`` ``(T, N)``: V(final_obs_t), equal to ``values[t+1]``
        wherever no episode ended at t;
        ``episode_returns`` ``(k,) float64``: returns of the k episodes that
        finished during the rollout (time-major order);
        ``next_obs`` ``(N, 4)``: where the next rollout continues.

    Only the policy runs inside the time loop (it picks the actions); the
    value network is evaluated afterwards in one batched forward pass.
    """
    N = obs.shape[0]
    obs_buf = np.empty((num_steps + 1, N, OBS_DIM))
    final_obs = np.empty((num_steps, N, OBS_DIM))
    logits_buf = np.empty((num_steps, N, NUM_ACTIONS))
    actions = np.empty((num_steps, N), dtype=np.int64)
    rewards = np.empty((num_steps, N))
    terminated = np.empty((num_steps, N), dtype=bool)
    truncated = np.empty((num_steps, N), dtype=bool)
    episode_returns = np.empty((num_steps, N))
    noise = rng.gumbel(size=(num_steps, N, NUM_ACTIONS))

    for t in range(num_steps):
        obs_buf[t] = obs
        logits, _ = forward(policy_params, obs)
        logits_buf[t] = logits
        actions[t] = sample_actions(logits, noise[t])
        # The actions are argmax indices in {0, 1}: no need for step()'s checks.
        obs, rewards[t], terminated[t], truncated[t], final_obs[t] = \
            env.step_unchecked(actions[t])
        episode_returns[t] = env.episode_return                         # NaN where none ended
    obs_buf[num_steps] = obs

    values = forward(value_params, obs_buf.reshape(-1, OBS_DIM))[0].reshape(num_steps + 1, N)
    final_values = values[1:].copy()
    done = terminated | truncated
    if done.any():
        final_values[done] = forward(value_params, final_obs[done])[0][:, 0]
    return {
        "obs": obs_buf[:num_steps], "actions": actions, "logits": logits_buf,
        "rewards": rewards, "terminated": terminated, "truncated": truncated,
        "values": values, "final_values": final_values,
        "episode_returns": episode_returns[~np.isnan(episode_returns)],
        "next_obs": obs,
    }


def evaluate(policy_params, episodes=20, seed=EVAL_SEED, normalise=None):
    """Returns of ``episodes`` fresh CartPole episodes with SAMPLED actions.

    Runs ``VecCartPole(episodes, seed=seed + ENV_SEED_OFFSET)`` with one
    episode per environment; actions are sampled from the policy (not the
    argmax) with Gumbel noise from ``np.random.default_rng(seed)``.
    ``normalise``: optional function ``(N, 4) -> (N, 4)`` applied to every
    observation before the policy sees it (frozen observation statistics of
    a run trained on normalised observations).

    Returns:
        ``(episodes,) float64`` undiscounted returns (at most 500).
    """
    rng = np.random.default_rng(seed)
    env = VecCartPole(episodes, seed=seed + ENV_SEED_OFFSET)
    obs = env.reset()
    returns = np.full(episodes, np.nan)
    while np.isnan(returns).any():
        logits, _ = forward(policy_params, obs if normalise is None else normalise(obs))
        obs, *_ = env.step_unchecked(sample_actions(logits, rng.gumbel(size=logits.shape)))
        first = np.isnan(returns) & ~np.isnan(env.episode_return)      # first episode only
        returns[first] = env.episode_return[first]
    return returns


def explained_variance(predictions, targets):
    """``1 - Var(targets - predictions) / Var(targets)`` (NaN if Var(targets) = 0).

    Args:
        predictions, targets: float64 arrays of the same shape (e.g. the
            rollout's values and returns, flattened to ``(T*N,)``).

    Returns:
        float: 1 = perfect value predictions, 0 = no better than a constant,
        < 0 = worse than a constant.
    """
    var = np.var(targets)
    return float("nan") if var == 0 else float(1.0 - np.var(targets - predictions) / var)
