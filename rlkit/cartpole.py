"""Vectorised CartPole with the dynamics of gymnasium's ``CartPole-v1``.

All ``N`` environments are stepped together with numpy array operations.
The physics repeats gymnasium's float64 computation operation for operation,
so the internal state matches ``gymnasium.make("CartPole-v1")`` bit for bit
when both start from the same state and receive the same actions.

Differences from gymnasium, on purpose:

* observations are the float64 state itself (gymnasium casts them to float32);
* finished environments are reset inside ``step`` ("same-step autoreset"),
  and the last observation of the finished episode is returned separately
  as ``final_obs``;
* if an episode terminates on its 500th step, ``terminated`` is True and
  ``truncated`` is False (gymnasium's ``TimeLimit`` reports both as True).

State layout, one row per environment, SI units::

    column 0  x          cart position        (m)
    column 1  x_dot      cart velocity        (m/s)
    column 2  theta      pole angle           (rad, 0 = upright)
    column 3  theta_dot  pole angular velocity (rad/s)

Actions: 0 pushes the cart left, 1 pushes it right.
"""

import math

import numpy as np

# Physical constants, identical to gymnasium's CartPoleEnv.
GRAVITY = 9.8
MASS_CART = 1.0
MASS_POLE = 0.1
TOTAL_MASS = MASS_POLE + MASS_CART
HALF_POLE_LENGTH = 0.5  # gymnasium calls this `length`
POLEMASS_LENGTH = MASS_POLE * HALF_POLE_LENGTH
FORCE_MAG = 10.0
TAU = 0.02  # seconds per step (explicit Euler)

# An episode terminates once the cart or the pole leaves these bounds.
X_THRESHOLD = 2.4  # m
THETA_THRESHOLD = 12 * 2 * math.pi / 360  # rad (12 degrees)

# CartPole-v1 is wrapped in a TimeLimit of 500 steps.
MAX_EPISODE_STEPS = 500

# Every state variable is reset uniformly in [RESET_LOW, RESET_HIGH).
RESET_LOW = -0.05
RESET_HIGH = 0.05

OBS_DIM = 4
NUM_ACTIONS = 2

# Force on the cart (N) for action 0 (push left) and action 1 (push right).
FORCE_BY_ACTION = np.array([-FORCE_MAG, FORCE_MAG])


def cartpole_dynamics(state, actions):
    """Advance CartPole states by one Euler step of ``TAU`` seconds.

    Args:
        state: ``(N, 4) float64`` rows of ``(x, x_dot, theta, theta_dot)``.
        actions: ``(N,)`` integers in {0, 1}; assumed already validated.

    Returns:
        ``(N, 4) float64`` next states (a new array; ``state`` is untouched).

    The expressions below keep gymnasium's exact operation order; changing
    it (e.g. precomputing ``force / TOTAL_MASS``) would change the rounding
    and break the bit-for-bit match.
    """
    x_dot, theta, theta_dot = state[:, 1], state[:, 2], state[:, 3]  # column views, (N,)
    force = FORCE_BY_ACTION.take(actions)
    costheta = np.cos(theta)
    sintheta = np.sin(theta)

    temp = (force + POLEMASS_LENGTH * np.square(theta_dot) * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        HALF_POLE_LENGTH * (4.0 / 3.0 - MASS_POLE * np.square(costheta) / TOTAL_MASS)
    )
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS

    # Explicit Euler: every variable moves along the *old* derivative.
    # Doing the four updates as one (N, 4) operation gives the same bits as
    # gymnasium's four scalar updates, because each element is `s + TAU * d`
    # (computed here as `d * TAU + s`: the same two roundings).
    derivative = np.empty_like(state)
    derivative[:, 0::2] = state[:, 1::2]  # x_dot, theta_dot
    derivative[:, 1] = xacc
    derivative[:, 3] = thetaacc
    derivative *= TAU
    derivative += state
    return derivative


def is_terminal(state):
    """``(N,) bool``: True where the cart or the pole is out of bounds.

    Strict inequalities like gymnasium: ``x == 2.4`` is still alive.
    ``abs(x) > 2.4`` is exactly gymnasium's ``x < -2.4 or x > 2.4``.
    """
    return (np.abs(state[:, 0]) > X_THRESHOLD) | (np.abs(state[:, 2]) > THETA_THRESHOLD)


class VecCartPole:
    """``num_envs`` CartPole-v1 environments stepped together, float64.

    Example::

        env = VecCartPole(num_envs=8, seed=0)
        obs = env.reset()                                  # (8, 4) float64
        obs, reward, terminated, truncated, final_obs = env.step(actions)
        finished = ~np.isnan(env.episode_return)           # (8,) bool

    Attributes:
        num_envs: number of environments ``N``.
        max_episode_steps: time limit (500 for CartPole-v1).
        rng: ``numpy.random.Generator`` used for resets.
        state: ``(N, 4) float64`` current internal state (do not edit in
            place; use ``set_state``).
        running_return: ``(N,) float64`` return of the episode in progress.
        running_length: ``(N,) int64`` steps taken in the episode in progress.
        episode_return: ``(N,) float64`` set by ``step``: the return of the
            episode that finished on this step, NaN where none finished.
        episode_length: ``(N,) int64`` set by ``step``: the length of the
            episode that finished on this step, 0 where none finished.

    With ``num_envs=1`` and the same seed, the reset states (including the
    automatic ones) are the same as ``gymnasium.make("CartPole-v1")`` after
    ``env.reset(seed=seed)``, because both draw from
    ``np.random.default_rng(seed)`` in the same order.
    """

    def __init__(self, num_envs, seed=None, max_episode_steps=MAX_EPISODE_STEPS):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = int(num_envs)
        self.max_episode_steps = int(max_episode_steps)
        self.rng = np.random.default_rng(seed)
        self.state = None
        self.running_return = np.zeros(self.num_envs, dtype=np.float64)
        self.running_length = np.zeros(self.num_envs, dtype=np.int64)
        self.episode_return = np.full(self.num_envs, np.nan)
        self.episode_length = np.zeros(self.num_envs, dtype=np.int64)

    def _sample_initial_states(self, count):
        """``(count, 4) float64`` fresh start states, uniform in [-0.05, 0.05)."""
        return self.rng.uniform(RESET_LOW, RESET_HIGH, size=(count, OBS_DIM))

    def reset(self):
        """Reset every environment.

        Returns:
            obs: ``(N, 4) float64`` initial observations (= the state).
        """
        self.state = self._sample_initial_states(self.num_envs)
        self.running_return[:] = 0.0
        self.running_length[:] = 0
        self.episode_return[:] = np.nan
        self.episode_length[:] = 0
        return self.state.copy()

    def set_state(self, states, elapsed_steps=0):
        """Overwrite the internal state (for tests and debugging).

        Args:
            states: ``(N, 4)`` array-like, converted to float64.
            elapsed_steps: int or ``(N,)`` ints, steps already taken in the
                current episodes (lets tests reach the time limit quickly).
                The running return is set to match (reward is 1 per step).
        """
        states = np.array(states, dtype=np.float64)  # always a copy
        if states.shape != (self.num_envs, OBS_DIM):
            raise ValueError(
                f"states must have shape ({self.num_envs}, {OBS_DIM}), got {states.shape}"
            )
        self.state = states
        self.running_length[:] = elapsed_steps
        self.running_return[:] = self.running_length

    def _check_actions(self, actions):
        """Return ``actions`` as an ``(N,)`` int64 array or raise ValueError."""
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(
                f"actions must have shape ({self.num_envs},), got {actions.shape}"
            )
        if not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be integers, got dtype {actions.dtype}")
        if np.count_nonzero((actions != 0) & (actions != 1)):
            raise ValueError(f"actions must be 0 or 1, got {actions}")
        return actions.astype(np.int64, copy=False)

    def step(self, actions):
        """Step every environment once, resetting those whose episode ended.

        Args:
            actions: ``(N,)`` integers in {0, 1}.

        Returns:
            obs: ``(N, 4) float64`` observation to act on next. For an
                environment whose episode just ended this is already the
                first observation of its new episode.
            reward: ``(N,) float64``, 1.0 for every step, including the
                terminating one.
            terminated: ``(N,) bool``, the pole fell or the cart left the
                track (no bootstrapping from ``final_obs``).
            truncated: ``(N,) bool``, the time limit was hit while the pole
                was still up (bootstrap from ``final_obs``). Never True
                together with ``terminated``.
            final_obs: ``(N, 4) float64``, the observation reached by this
                step *before* any reset: the last observation of the
                finished episode where ``terminated | truncated``, and equal
                to ``obs`` everywhere else.

        Also sets ``self.episode_return`` and ``self.episode_length``.
        """
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        return self.step_unchecked(self._check_actions(actions))

    def step_unchecked(self, actions):
        """``step`` without validating ``actions`` (the hot path of rollouts).

        Args:
            actions: ``(N,) int64`` array of 0s and 1s, e.g. from
                ``rlkit.agent.sample_actions``. Anything else gives wrong
                results or an obscure error: call ``step`` instead.

        Returns and sets the same as ``step``.
        """
        next_state = cartpole_dynamics(self.state, actions)
        self.running_return += 1.0      # reward 1.0 per step, as `reward` below
        self.running_length += 1

        terminated = is_terminal(next_state)
        done = self.running_length >= self.max_episode_steps
        truncated = done & ~terminated
        done |= terminated

        obs = next_state.copy()
        if done.any():
            self.episode_return = np.where(done, self.running_return, np.nan)
            self.episode_length = np.where(done, self.running_length, 0)
            obs[done] = self._sample_initial_states(np.count_nonzero(done))
            self.running_return[done] = 0.0
            self.running_length[done] = 0
        else:
            self.episode_return = np.full(self.num_envs, np.nan)
            self.episode_length = np.zeros(self.num_envs, dtype=np.int64)
        self.state = obs
        return obs.copy(), np.ones(self.num_envs), terminated, truncated, next_state
