"""Capstone C's agents (instructor only: never in a handout, never in ``rlkit``).

Five CartPole agents whose training logs the students diagnose:

* ``healthy_ppo``      -- capstone A's reference PPO, A's hyper-parameters;
* ``saturated_policy`` -- the same PPO with the policy head initialised at
  gain 100 instead of 0.01: the first softmax is nearly one-hot, the entropy
  is near 0 from the first update and the policy hardly explores;
* ``untrained_critic`` -- the same PPO whose value network is never updated
  (``vf_coef = 0``): its predictions stay at the random initialisation;
* ``healthy_dqn``      -- DQN with a 10 000-slot replay buffer;
* ``small_buffer``     -- the same DQN with a 32-slot buffer: every batch
  holds the last 32 steps, of one or two episodes, so its samples are a few
  steps old and strongly correlated. (With these hyper-parameters its Q does
  not overestimate more than the healthy DQN's: bench/c_diagnose_facts.py.)

q7's hidden pool (Gradescope only) holds other seeds of these five agents, and
their faults at other severities (``SEVERITY``: the knob a case's ``severity``
sets) and under other hyper-parameters (the ``*_OVERRIDES`` entries below the
first five), and healthy decoys whose return curves suggest a fault: a short
horizon's early plateau, a long exploration's or a late start's many short
episodes; faulty agents whose returns look like a healthy run's. The
configurations were chosen by their share named right by return classifiers on
selection seeds (bench/c_pool_screen.py) and checked on held-out seeds
(instructor/c_pool.py, bench/c_pool_heldout.py).

The PPO agents import capstone A's reference (``solutions/a_ppo/ppo.py``):
this module ships nowhere, so it may. Each training run is a deterministic
function of its seed; what it logs is drawn from a separate Generator so
that logging never changes the run.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, clip_grad_norm, forward, init_mlp
from rlkit.optim import Adam
from rlkit.progress import progress as progress_bar

from autograder.grading.reference import load_reference

AGENTS = ("healthy_ppo", "saturated_policy", "untrained_critic", "healthy_dqn", "small_buffer")
PPO_AGENTS = AGENTS[:3]
LOG_SEED_OFFSET = 1_000_003      # logging's own Generator: default_rng(seed + this)
LOG_BATCHES_FROM = 10_000        # DQN: the first environment step whose batch is logged (no
                                 # agent starts learning later)

PPO_OVERRIDES = {
    "healthy_ppo": {},
    "saturated_policy": {"policy_head_gain": 100.0},
    "untrained_critic": {"vf_coef": 0.0},       # zero value gradients: Adam leaves V as it was
    # the hidden pool's further agents (Gradescope only)
    # saturated (severity: the policy head's gain) under a larger learning rate
    "saturated_lr3e-3": {"policy_head_gain": 100.0, "lr": 3e-3},
    "saturated_lr1e-2": {"policy_head_gain": 100.0, "lr": 1e-2},
    "fast_untrained_critic": {"vf_coef": 0.0, "lr": 3e-3},   # untrained, often ends near 500
    # healthy with a short horizon: learns fast to a plateau of 110-190 steps (at gamma 0.9 an
    # episode of 150 steps is worth nearly as much as one of 500), its critic fitting the
    # small discounted returns
    "gamma0.85_ppo": {"gamma": 0.85},
    "gamma0.9_ppo": {"gamma": 0.9},
    # healthy, learning faster: it reaches 500 steps well before update 50, after which every
    # episode lasts 500 steps, the critic's targets barely vary and its explained variance read
    # late is near 0 or below (so is the public healthy PPO's)
    "lr2e-3_ppo": {"lr": 2e-3},
    "fast_lr_ppo": {"lr": 3e-3},
    "epochs15_ppo": {"update_epochs": 15},
}
# The hyper-parameter a hidden case's ``severity`` sets (how strong the agent's fault is).
SEVERITY = {"saturated_policy": "policy_head_gain", "untrained_critic": "vf_coef",
            "saturated_lr3e-3": "policy_head_gain", "saturated_lr1e-2": "policy_head_gain",
            **{a: "buffer_size" for a in ("small_buffer", "small_buffer_fast_target",
                                          "small_buffer_fast_target_fast_lr",
                                          "small_buffer_fast_target_slow_lr",
                                          "late_start_small_buffer")}}

DQN_HP = {
    "total_steps": 30_000,        # environment steps (one CartPole)
    "learning_starts": 1_000,     # random actions and no update before this step
    "train_every": 1,             # one gradient step per environment step after that
    "batch_size": 64,
    "buffer_size": 10_000,        # small_buffer: 32
    "gamma": 0.99,
    "lr": 5e-4,
    "adam_eps": 1e-8,
    "target_every": 500,          # steps between copies of the online net into the target
    "eps_start": 1.0,             # epsilon-greedy, linear decay ...
    "eps_end": 0.05,
    "eps_decay_steps": 10_000,    # ... over this many steps
    "max_grad_norm": 10.0,
    "hidden": (64, 64),
}
DQN_OVERRIDES = {"healthy_dqn": {}, "small_buffer": {"buffer_size": 32},
                 # the hidden pool's further agents: healthy decoys that explore long ...
                 "long_exploration_dqn": {"eps_decay_steps": 25_000},
                 "slow_long_exploration_dqn": {"lr": 1e-4, "eps_decay_steps": 25_000},
                 # ... or act at random for a third of the run before they learn
                 "late_start_dqn": {"learning_starts": 10_000},
                 "late_start_long_exploration_dqn": {"learning_starts": 10_000,
                                                     "eps_decay_steps": 15_000},
                 # ... and small buffers (severity: its size) with a target copied often,
                 # learning fast or slowly
                 "small_buffer_fast_target": {"buffer_size": 32, "target_every": 100},
                 "small_buffer_fast_target_fast_lr": {"buffer_size": 32, "target_every": 100,
                                                      "lr": 1e-3},
                 "small_buffer_fast_target_slow_lr": {"buffer_size": 32, "target_every": 100,
                                                      "lr": 1e-4},
                 # round 4 (issue 47), so that return levels overlap between the faults: a
                 # healthy decoy that learns fast (episodes of 90-120 steps on average, as a
                 # buffer of a few hundred slots), and a small buffer that acts at random for a
                 # third of the run (30-40 steps, below the late-start healthy decoys' 40-45)
                 "fast_lr_dqn": {"lr": 1e-3},
                 "late_start_small_buffer": {"buffer_size": 32, "learning_starts": 10_000}}


def ppo_reference():
    return load_reference("a_ppo", "ppo.py")


# ----------------------------------------------------------------------------- PPO
def train_ppo(agent: str, seed: int, *, updates: int = 60, log_states: int = 256,
              progress: bool = False, overrides: Optional[dict] = None
              ) -> dict[str, np.ndarray]:
    """Train one PPO agent (capstone A's loop and pieces) and log, per update u,
    ``log_states`` states drawn from its rollout (without replacement):

    ``logits_before`` ``(U, S, A)``: the rollout policy's logits there;
    ``logits_after`` ``(U, S, A)``: the logits after the update's epochs;
    ``actions`` ``(U, S)``: the actions taken there; ``values`` ``(U, S)``:
    V(s) when collected; ``value_targets`` ``(U, S)``: the GAE returns the
    critic regresses on; ``episode_returns`` ``(E,)`` and
    ``episode_update`` ``(E,)``: returns of the finished episodes and the
    update whose rollout finished them.
    """
    ppo = ppo_reference()
    hp = {**ppo.DEFAULT_HP, **PPO_OVERRIDES[agent], **(overrides or {})}
    rng = np.random.default_rng(seed)
    log_rng = np.random.default_rng(seed + LOG_SEED_OFFSET)
    policy_params, value_params = ppo.init_networks(hp, rng)
    policy_opt = Adam(policy_params, lr=hp["lr"], eps=hp["adam_eps"])
    value_opt = Adam(value_params, lr=hp["lr"], eps=hp["adam_eps"])
    env = VecCartPole(hp["num_envs"], seed=seed + ppo.ENV_SEED_OFFSET)
    obs = env.reset()
    T, N = hp["num_steps"], hp["num_envs"]
    batch_size = T * N
    mb_size = batch_size // hp["num_minibatches"]
    S = log_states
    log = {"logits_before": np.empty((updates, S, NUM_ACTIONS)),
           "logits_after": np.empty((updates, S, NUM_ACTIONS)),
           "actions": np.empty((updates, S), dtype=np.int8),
           "values": np.empty((updates, S)), "value_targets": np.empty((updates, S))}
    returns_log, returns_update = [], []
    for u in progress_bar(range(updates), enable=progress, desc=f"{agent} seed {seed}"):
        lr = hp["lr"] * (1.0 - u / updates) if hp["anneal_lr"] else hp["lr"]
        value_opt.lr = lr
        policy_opt.lr = lr * hp.get("policy_lr_scale", 1.0)    # a slower policy (a decoy)
        ro = ppo.collect_rollout(env, obs, policy_params, value_params, T, rng)
        obs = ro["next_obs"]
        advantages, returns = ppo.compute_gae(ro["rewards"], ro["values"], ro["final_values"],
                                              ro["terminated"], ro["truncated"], hp["gamma"],
                                              hp["gae_lambda"])
        logits = ro["logits"].reshape(batch_size, NUM_ACTIONS)
        flat = {"obs": ro["obs"].reshape(batch_size, OBS_DIM),
                "actions": ro["actions"].reshape(batch_size),
                "logp_old": ppo.categorical_log_prob(logits, ro["actions"].reshape(batch_size)),
                "advantages": advantages.reshape(batch_size),
                "returns": returns.reshape(batch_size),
                "values_old": ro["values"][:T].reshape(batch_size)}
        for _ in range(hp["update_epochs"]):
            perm = rng.permutation(batch_size)
            shuffled = {k: v[perm] for k, v in flat.items()}
            for start in range(0, batch_size, mb_size):
                batch = {k: v[start:start + mb_size] for k, v in shuffled.items()}
                ppo.minibatch_update(policy_params, value_params, policy_opt, value_opt,
                                     batch, hp)
        idx = np.sort(log_rng.choice(batch_size, S, replace=False))
        log["logits_before"][u] = logits[idx]
        log["logits_after"][u] = forward(policy_params, flat["obs"][idx])[0]
        log["actions"][u] = flat["actions"][idx]
        log["values"][u] = flat["values_old"][idx]
        log["value_targets"][u] = flat["returns"][idx]
        returns_log.append(ro["episode_returns"])
        returns_update.append(np.full(ro["episode_returns"].size, u))
    log["episode_returns"] = np.concatenate(returns_log)
    log["episode_update"] = np.concatenate(returns_update).astype(np.int32)
    return log


# ----------------------------------------------------------------------------- DQN
def _q_targets(target_params, rewards, next_obs, terminated, gamma):
    next_q = forward(target_params, next_obs)[0].max(axis=1)
    return rewards + gamma * np.where(terminated, 0.0, next_q)


def train_dqn(agent: str, seed: int, *, log_every: int = 50, q_every: int = 5,
              progress: bool = False, overrides: Optional[dict] = None
              ) -> dict[str, np.ndarray]:
    """Train one DQN agent on one CartPole and log:

    the batch sampled at every ``log_every``-th environment step from
    ``LOG_BATCHES_FROM`` on (the same steps for every agent, so that neither
    when it started learning nor how big its buffer is can be read off the
    bookkeeping: K = (total_steps - LOG_BATCHES_FROM) / log_every batches):
    ``batch_step`` ``(K,)`` the environment step it was drawn at,
    ``batch_inserted`` ``(K, B)`` the step each sampled transition was
    inserted at, ``batch_episode`` ``(K, B)`` the episode it belongs to (no
    buffer slots: the largest slot + 1 is the buffer's size, a setting);
    every ``q_every``-th environment step of a finished episode:
    ``q_step`` ``(M,)``, ``q_pred`` ``(M,)`` the online net's Q(s, a) of the
    action taken, ``q_return`` ``(M,)`` the discounted return realised from
    there to the episode's end;
    ``episode_returns`` ``(E,)`` and ``episode_end_step`` ``(E,)``.
    """
    hp = {**DQN_HP, **DQN_OVERRIDES[agent], **(overrides or {})}
    if hp["learning_starts"] > LOG_BATCHES_FROM:
        raise ValueError(f"{agent}: learning starts at {hp['learning_starts']}, after the "
                         f"logged batches begin ({LOG_BATCHES_FROM})")
    rng = np.random.default_rng(seed)
    sizes = [OBS_DIM, *hp["hidden"], NUM_ACTIONS]
    gains = [np.sqrt(2.0)] * len(hp["hidden"]) + [1.0]
    online = init_mlp(sizes, gains, rng)
    target = [{k: v.copy() for k, v in layer.items()} for layer in online]
    opt = Adam(online, lr=hp["lr"], eps=hp["adam_eps"])
    env = VecCartPole(1, seed=seed + 10_000)
    obs = env.reset()[0]
    C, B, gamma = hp["buffer_size"], hp["batch_size"], hp["gamma"]
    buf = {"obs": np.zeros((C, OBS_DIM)), "action": np.zeros(C, dtype=np.int64),
           "reward": np.zeros(C), "next_obs": np.zeros((C, OBS_DIM)),
           "terminated": np.zeros(C, dtype=bool), "inserted": np.zeros(C, dtype=np.int64),
           "episode": np.zeros(C, dtype=np.int64)}
    filled, episode = 0, 0
    batches = {"batch_step": [], "batch_inserted": [], "batch_episode": []}
    ep_q, ep_steps = [], []
    q_log = {"q_step": [], "q_pred": [], "q_return": []}
    returns, end_steps = [], []
    total = hp["total_steps"]
    for step in progress_bar(range(total), enable=progress, desc=f"{agent} seed {seed}"):
        eps = max(hp["eps_end"], hp["eps_start"] - (hp["eps_start"] - hp["eps_end"])
                  * step / hp["eps_decay_steps"])
        q = forward(online, obs[None, :])[0][0]
        explore = step < hp["learning_starts"] or rng.random() < eps
        action = int(rng.integers(NUM_ACTIONS)) if explore else int(np.argmax(q))
        ep_q.append(q[action])
        ep_steps.append(step)
        next_obs, reward, terminated, truncated, final_obs = env.step_unchecked(
            np.array([action]))
        slot = step % C
        buf["obs"][slot], buf["action"][slot], buf["reward"][slot] = obs, action, reward[0]
        buf["next_obs"][slot], buf["terminated"][slot] = final_obs[0], terminated[0]
        buf["inserted"][slot], buf["episode"][slot] = step, episode
        filled = min(filled + 1, C)
        obs = next_obs[0]
        if terminated[0] or truncated[0]:
            n = len(ep_q)
            discounts = gamma ** np.arange(n)
            g = np.cumsum((discounts * 1.0)[::-1])[::-1] / discounts   # sum_k>=t gamma^(k-t)
            keep = np.arange(0, n, q_every)
            q_log["q_step"].append(np.asarray(ep_steps)[keep])
            q_log["q_pred"].append(np.asarray(ep_q)[keep])
            q_log["q_return"].append(g[keep])
            returns.append(env.episode_return[0])
            end_steps.append(step)
            ep_q, ep_steps = [], []
            episode += 1
        if step >= hp["learning_starts"] and step % hp["train_every"] == 0:
            idx = rng.integers(0, filled, B)
            y = _q_targets(target, buf["reward"][idx], buf["next_obs"][idx],
                           buf["terminated"][idx], gamma)
            out, cache = forward(online, buf["obs"][idx])
            rows = np.arange(B)
            dout = np.zeros_like(out)
            dout[rows, buf["action"][idx]] = (out[rows, buf["action"][idx]] - y) / B
            grads = backward(online, cache, dout)
            if hp["max_grad_norm"] is not None:
                clip_grad_norm(grads, hp["max_grad_norm"])
            opt.step(online, grads)
            if step >= LOG_BATCHES_FROM and (step - LOG_BATCHES_FROM) % log_every == 0:
                batches["batch_step"].append(step)
                batches["batch_inserted"].append(buf["inserted"][idx])
                batches["batch_episode"].append(buf["episode"][idx])
        if step % hp["target_every"] == 0:
            target = [{k: v.copy() for k, v in layer.items()} for layer in online]
    log = {k: np.asarray(v, dtype=np.int32) for k, v in batches.items()}
    log.update({k: np.concatenate(v) for k, v in q_log.items()})
    log["q_step"] = log["q_step"].astype(np.int32)
    log["episode_returns"] = np.asarray(returns, dtype=np.float64)
    log["episode_end_step"] = np.asarray(end_steps, dtype=np.int32)
    return log


def train(agent: str, seed: int, progress: bool = False, overrides: Optional[dict] = None
          ) -> dict[str, np.ndarray]:
    """The log of ``agent`` trained from ``seed`` (see train_ppo / train_dqn),
    its hyper-parameters changed by ``overrides`` (a severity of its fault)."""
    if agent in PPO_OVERRIDES:
        return train_ppo(agent, seed, progress=progress, overrides=overrides)
    if agent in DQN_OVERRIDES:
        return train_dqn(agent, seed, progress=progress, overrides=overrides)
    raise KeyError(f"no agent {agent!r}; the agents are "
                   f"{', '.join([*PPO_OVERRIDES, *DQN_OVERRIDES])}")
