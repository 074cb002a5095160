"""Scaffolding for capstone B's switches that change the agent's structure: a
shared-trunk actor-critic and an environment wrapper that normalises
observations. No PPO and no normalisation formula here: the wrapper calls
the two functions it is given (the student's pieces).
"""
import numpy as np

from rlkit.cartpole import NUM_ACTIONS, OBS_DIM
from rlkit.mlp import init_mlp

OBS_COUNT0 = 1e-4         # initial count of running observation statistics (mean 0, var 1)


def init_shared_networks(hp, rng):
    """``(policy_params, value_params)`` of a shared network.

    ONE tanh trunk ``OBS_DIM -> *hp["hidden"]`` whose layer dicts are the
    same objects at the start of both lists, then a linear policy head
    ``-> NUM_ACTIONS`` (``policy_params = trunk + [policy_head]``) and a
    linear value head ``-> 1`` (``value_params = trunk + [value_head]``), so
    ``rlkit.mlp.forward`` runs either half. Orthogonal init with the gains of
    ``hp``; draws from ``rng`` in the order trunk, policy head, value head.
    """
    hidden = list(hp["hidden"])
    trunk = init_mlp([OBS_DIM, *hidden], [hp["hidden_gain"]] * len(hidden), rng)
    policy_head = init_mlp([hidden[-1], NUM_ACTIONS], [hp["policy_head_gain"]], rng)
    value_head = init_mlp([hidden[-1], 1], [hp["value_head_gain"]], rng)
    return trunk + policy_head, trunk + value_head


def shared_layers(policy_params, value_params):
    """The distinct layers of a shared network: ``trunk + [policy_head, value_head]``
    (what one optimiser steps)."""
    return policy_params + value_params[-1:]


class NormalisedObs:
    """A ``VecCartPole`` wrapper whose observations are normalised.

    As gymnasium's ``NormalizeObservation``: every batch of observations
    the environment returns (after ``reset`` and after each step) first
    updates the running statistics with ``update(mean, var, count, obs) ->
    (mean, var, count)`` and is then transformed by ``normalise(obs, mean,
    var)``; a step's ``final_obs`` is transformed with the same statistics.
    The statistics start at mean 0, variance 1, count ``OBS_COUNT0``.
    Provides what ``rlkit.agent.collect_rollout`` uses: ``reset``,
    ``step_unchecked``, ``episode_return``, ``num_envs``.
    """

    def __init__(self, env, update, normalise):
        self.env, self.update, self.normalise = env, update, normalise
        self.num_envs = env.num_envs
        self.mean, self.var, self.count = np.zeros(OBS_DIM), np.ones(OBS_DIM), OBS_COUNT0

    @property
    def episode_return(self):
        return self.env.episode_return

    def _observe(self, obs):
        self.mean, self.var, self.count = self.update(self.mean, self.var, self.count, obs)
        return self.normalise(obs, self.mean, self.var)

    def reset(self):
        return self._observe(self.env.reset())

    def step_unchecked(self, actions):
        obs, rewards, terminated, truncated, final_obs = self.env.step_unchecked(actions)
        obs = self._observe(obs)
        return obs, rewards, terminated, truncated, self.normalise(final_obs, self.mean,
                                                                   self.var)
