"""VecCartPole against gymnasium's CartPole-v1, bit for bit on the float64 state."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import TimeLimit

from rlkit.cartpole import (
    MAX_EPISODE_STEPS,
    RESET_HIGH,
    RESET_LOW,
    THETA_THRESHOLD,
    X_THRESHOLD,
    VecCartPole,
)


def make_gym_env(seed):
    env = gym.make("CartPole-v1")
    assert isinstance(env, TimeLimit)  # we poke its _elapsed_steps below
    env.reset(seed=seed)
    return env


def put_gym_in_state(env, state, elapsed_steps=0):
    """Make a freshly reset gymnasium env continue from `state` (4,) float64."""
    env.unwrapped.state = np.array(state, dtype=np.float64)
    env._elapsed_steps = elapsed_steps


def balancing_actions(obs, epsilon, rng):
    """(N,) int64: a linear balancing controller, flipped with prob. epsilon (N,).

    epsilon near 0 gives long episodes (many hit the 500-step limit),
    epsilon = 1/2 makes the actions uniformly random.
    """
    push_right = obs @ np.array([0.5, 1.0, 10.0, 2.0]) > 0
    flip = rng.random(len(obs)) < epsilon
    return (push_right ^ flip).astype(np.int64)


def test_matches_gymnasium_step_by_step():
    num_envs, num_steps = 12, 2500
    ours = VecCartPole(num_envs, seed=123)
    obs = ours.reset()
    gym_envs = [make_gym_env(seed=1000 + i) for i in range(num_envs)]
    for env, start in zip(gym_envs, obs):
        put_gym_in_state(env, start)

    # A third of the envs act at random, the rest balance with some noise.
    epsilon = np.array([0.5, 0.1, 0.03] * (num_envs // 3))
    rng = np.random.default_rng(7)
    gym_lengths = np.zeros(num_envs, dtype=np.int64)
    num_terminated = num_truncated = 0

    for _ in range(num_steps):
        actions = balancing_actions(obs, epsilon, rng)
        obs, reward, terminated, truncated, final_obs = ours.step(actions)
        assert obs.dtype == final_obs.dtype == reward.dtype == np.float64
        assert terminated.dtype == truncated.dtype == np.bool_
        assert not np.any(terminated & truncated)

        for i, env in enumerate(gym_envs):
            g_obs, g_reward, g_terminated, g_truncated, _ = env.step(int(actions[i]))
            gym_lengths[i] += 1
            # The float64 internal state is identical, bit for bit.
            assert np.array_equal(env.unwrapped.state, final_obs[i])
            assert env.unwrapped.state.dtype == np.float64
            # gymnasium's observation is that state cast to float32.
            assert np.array_equal(g_obs, final_obs[i].astype(np.float32))
            assert reward[i] == g_reward == 1.0
            assert terminated[i] == g_terminated
            # gymnasium reports truncated=True even when terminated on step 500.
            assert truncated[i] == (g_truncated and not g_terminated)

            if g_terminated or g_truncated:
                assert ours.episode_length[i] == gym_lengths[i]
                assert ours.episode_return[i] == float(gym_lengths[i])
                # Same-step autoreset: obs is a fresh start, final_obs the end.
                assert np.all((obs[i] >= RESET_LOW) & (obs[i] < RESET_HIGH))
                assert not np.array_equal(obs[i], final_obs[i])
                env.reset()
                put_gym_in_state(env, obs[i])
                gym_lengths[i] = 0
            else:
                assert np.isnan(ours.episode_return[i])
                assert ours.episode_length[i] == 0
                assert np.array_equal(obs[i], final_obs[i])

        num_terminated += terminated.sum()
        num_truncated += truncated.sum()

    # Make sure both kinds of episode end were exercised.
    assert num_terminated > 50
    assert num_truncated > 10


def test_single_env_reproduces_gymnasium_including_its_resets():
    """With N=1 and the same seed, even the random reset states agree."""
    seed = 42
    ours = VecCartPole(1, seed=seed)
    obs = ours.reset()
    env = gym.make("CartPole-v1")
    g_obs, _ = env.reset(seed=seed)
    assert np.array_equal(env.unwrapped.state, obs[0])

    rng = np.random.default_rng(0)
    num_resets = 0
    for _ in range(1500):
        action = int(rng.integers(2))
        obs, _, terminated, truncated, final_obs = ours.step(np.array([action]))
        _, _, g_terminated, g_truncated, _ = env.step(action)
        assert np.array_equal(env.unwrapped.state, final_obs[0])
        assert terminated[0] == g_terminated
        if g_terminated or g_truncated:
            env.reset()  # no seed: continues gymnasium's generator
            num_resets += 1
        assert np.array_equal(env.unwrapped.state, obs[0])
    assert num_resets > 20


def edge_states():
    """(8, 4) states exactly on, and one ulp beyond, each termination bound.

    Velocities are zero, so Euler leaves x and theta unchanged for one step.
    Returns the states and the expected `terminated` flags.
    """
    x_out = np.nextafter(X_THRESHOLD, np.inf)
    theta_out = np.nextafter(THETA_THRESHOLD, np.inf)
    positions = [
        (X_THRESHOLD, 0.0, False),
        (-X_THRESHOLD, 0.0, False),
        (x_out, 0.0, True),
        (-x_out, 0.0, True),
        (0.0, THETA_THRESHOLD, False),
        (0.0, -THETA_THRESHOLD, False),
        (0.0, theta_out, True),
        (0.0, -theta_out, True),
    ]
    states = np.array([[x, 0.0, theta, 0.0] for x, theta, _ in positions])
    expected = np.array([end for _, _, end in positions])
    return states, expected


@pytest.mark.parametrize("action", [0, 1])
def test_termination_bounds_are_strict_like_gymnasium(action):
    states, expected = edge_states()
    ours = VecCartPole(len(states), seed=0)
    ours.reset()
    ours.set_state(states)
    actions = np.full(len(states), action)
    obs, reward, terminated, truncated, final_obs = ours.step(actions)

    assert np.array_equal(terminated, expected)
    assert not truncated.any()
    assert np.array_equal(final_obs[:, [0, 2]], states[:, [0, 2]])
    assert np.array_equal(obs[~expected], final_obs[~expected])
    assert np.all(np.abs(obs[expected]) <= RESET_HIGH)
    assert np.array_equal(ours.episode_length, np.where(expected, 1, 0))

    for i, state in enumerate(states):
        env = make_gym_env(seed=i)
        put_gym_in_state(env, state)
        _, g_reward, g_terminated, g_truncated, _ = env.step(action)
        assert np.array_equal(env.unwrapped.state, final_obs[i])
        assert g_terminated == terminated[i]
        assert g_reward == reward[i] == 1.0
        assert not g_truncated


def test_time_limit_truncates_and_termination_wins():
    upright = [0.0, 0.0, 0.0, 0.0]
    falling = [0.0, 0.0, 0.2, 5.0]  # crosses 12 degrees during this step
    ours = VecCartPole(3, seed=0)
    ours.reset()
    ours.set_state([upright, falling, upright], elapsed_steps=[499, 499, 498])
    obs, _, terminated, truncated, final_obs = ours.step(np.array([1, 1, 1]))

    assert terminated.tolist() == [False, True, False]
    assert truncated.tolist() == [True, False, False]
    assert ours.episode_length.tolist() == [500, 500, 0]
    assert ours.episode_return[:2].tolist() == [500.0, 500.0]
    assert np.isnan(ours.episode_return[2])
    assert ours.running_length.tolist() == [0, 0, 499]
    assert np.array_equal(obs[2], final_obs[2])

    # gymnasium agrees on the state; its TimeLimit flags both on env 1.
    for i, start in enumerate([upright, falling]):
        env = make_gym_env(seed=i)
        put_gym_in_state(env, start, elapsed_steps=499)
        _, _, g_terminated, g_truncated, _ = env.step(1)
        assert np.array_equal(env.unwrapped.state, final_obs[i])
        assert g_terminated == terminated[i]
        assert g_truncated  # both True for the falling pole

    # The next step of env 2 reaches the limit too.
    _, _, terminated, truncated, _ = ours.step(np.array([1, 1, 1]))
    assert truncated[2] and not terminated[2]
    assert MAX_EPISODE_STEPS == 500


def test_reset_distribution():
    ours = VecCartPole(20_000, seed=3)
    obs = ours.reset()
    assert obs.shape == (20_000, 4) and obs.dtype == np.float64
    assert np.all(obs >= RESET_LOW) and np.all(obs < RESET_HIGH)
    assert np.all(obs.min(axis=0) < -0.049) and np.all(obs.max(axis=0) > 0.049)
    assert np.allclose(obs.mean(axis=0), 0.0, atol=2e-3)
    assert np.array_equal(ours.state, obs)
    assert np.all(np.isnan(ours.episode_return))
    assert not np.any(ours.running_length)


def test_same_seed_same_rollout_and_returned_arrays_are_copies():
    a, b = VecCartPole(4, seed=9), VecCartPole(4, seed=9)
    obs_a, obs_b = a.reset(), b.reset()
    obs_a[:] = 99.0  # must not leak into the environment
    actions = np.array([0, 1, 1, 0])
    for _ in range(50):
        obs_a, *_ = a.step(actions)
        obs_b, *_ = b.step(actions)
        assert np.array_equal(obs_a, obs_b)


@pytest.mark.parametrize(
    "actions",
    [
        np.array([0, 1, 2]),  # value out of range
        np.array([0, -1, 1]),  # negative
        np.array([0, 1]),  # too few
        np.array([[0, 1, 1]]),  # wrong rank
        np.array([0.0, 1.0, 1.0]),  # floats
        1,  # scalar
    ],
)
def test_bad_actions_raise(actions):
    env = VecCartPole(3, seed=0)
    env.reset()
    with pytest.raises(ValueError):
        env.step(actions)


def test_step_before_reset_and_bad_state_raise():
    env = VecCartPole(2, seed=0)
    with pytest.raises(RuntimeError):
        env.step(np.array([0, 1]))
    with pytest.raises(ValueError):
        env.set_state(np.zeros((3, 4)))
    with pytest.raises(ValueError):
        VecCartPole(0)
