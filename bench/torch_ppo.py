"""PPO on CartPole-v1 in PyTorch at capstone A's hyper-parameters, for ``bench_ppo.py``.

Two contenders, each one run per call, timed from construction to the end of
training (evaluation is not timed)::

    python bench/torch_ppo.py sb3 --seed 1 [--updates 60]
    python bench/torch_ppo.py cleanrl --seed 1 [--updates 60]

``sb3`` is Stable-Baselines3's ``PPO("MlpPolicy")``; ``cleanrl`` follows
CleanRL's single-file ``ppo.py`` (separate 64-64 tanh actor and critic,
orthogonal init, ``SyncVectorEnv``). Both: 8 envs x 256 steps, 10 epochs of
8 minibatches of 256, Adam lr 1e-3 annealed linearly to 0, eps 1e-5, gamma
0.99, GAE lambda 0.95, clip 0.2, normalised advantages, vf_coef 0.5,
ent_coef 0, global grad-norm clip 0.5, torch at one thread. Prints one JSON
line: wall and CPU seconds, env steps, the median return of 20 sampled-action episodes.

Needs the optional ``bench`` extra (torch, stable-baselines3); the tests never
import this file.
"""
import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(1)

HP = {"num_envs": 8, "num_steps": 256, "lr": 1e-3, "adam_eps": 1e-5, "update_epochs": 10,
      "num_minibatches": 8, "gamma": 0.99, "gae_lambda": 0.95, "clip_eps": 0.2,
      "vf_coef": 0.5, "ent_coef": 0.0, "max_grad_norm": 0.5}
EVAL_EPISODES = 20


def run_sb3(seed, updates):
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    start, cpu_start = time.perf_counter(), time.process_time()
    env = make_vec_env("CartPole-v1", n_envs=HP["num_envs"], seed=seed)
    batch = HP["num_envs"] * HP["num_steps"]
    model = PPO("MlpPolicy", env, learning_rate=lambda remaining: HP["lr"] * remaining,
                n_steps=HP["num_steps"], batch_size=batch // HP["num_minibatches"],
                n_epochs=HP["update_epochs"], gamma=HP["gamma"], gae_lambda=HP["gae_lambda"],
                clip_range=HP["clip_eps"], normalize_advantage=True, ent_coef=HP["ent_coef"],
                vf_coef=HP["vf_coef"], max_grad_norm=HP["max_grad_norm"],
                policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]},
                               "activation_fn": nn.Tanh, "optimizer_kwargs": {"eps": HP["adam_eps"]}},
                seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=updates * batch)
    seconds = time.perf_counter() - start, time.process_time() - cpu_start

    def act(obs):
        return model.predict(obs, deterministic=False)[0]
    return seconds, updates * batch, act


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, num_actions):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0))
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, num_actions), std=0.01))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def run_cleanrl(seed, updates):
    """CleanRL's ppo.py loop (without logging), at capstone A's settings."""
    start, cpu_start = time.perf_counter(), time.process_time()
    torch.manual_seed(seed)
    N, T = HP["num_envs"], HP["num_steps"]
    batch_size = N * T
    mb_size = batch_size // HP["num_minibatches"]
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(N)])
    agent = Agent(4, 2)
    optimizer = torch.optim.Adam(agent.parameters(), lr=HP["lr"], eps=HP["adam_eps"])
    obs = torch.zeros((T, N, 4))
    actions = torch.zeros((T, N))
    logprobs = torch.zeros((T, N))
    rewards = torch.zeros((T, N))
    dones = torch.zeros((T, N))
    values = torch.zeros((T, N))
    next_obs, _ = envs.reset(seed=seed)
    next_obs = torch.Tensor(next_obs)
    next_done = torch.zeros(N)
    for update in range(updates):
        optimizer.param_groups[0]["lr"] = (1.0 - update / updates) * HP["lr"]
        for step in range(T):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, terminations, truncations, _ = envs.step(action.cpu().numpy())
            next_done = np.logical_or(terminations, truncations)
            rewards[step] = torch.tensor(reward).view(-1)
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(next_done)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(T)):
                if t == T - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + HP["gamma"] * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = (delta + HP["gamma"] * HP["gae_lambda"]
                                              * nextnonterminal * lastgaelam)
            returns = advantages + values
        b_obs, b_logprobs = obs.reshape((-1, 4)), logprobs.reshape(-1)
        b_actions, b_advantages = actions.reshape(-1), advantages.reshape(-1)
        b_returns, b_inds = returns.reshape(-1), np.arange(batch_size)
        for _ in range(HP["update_epochs"]):
            np.random.shuffle(b_inds)
            for start_ in range(0, batch_size, mb_size):
                mb = b_inds[start_:start_ + mb_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(
                    b_obs[mb], b_actions.long()[mb])
                ratio = (newlogprob - b_logprobs[mb]).exp()
                mb_adv = b_advantages[mb]
                mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(
                    ratio, 1 - HP["clip_eps"], 1 + HP["clip_eps"])).mean()
                v_loss = 0.5 * ((newvalue.view(-1) - b_returns[mb]) ** 2).mean()
                loss = pg_loss - HP["ent_coef"] * entropy.mean() + v_loss * HP["vf_coef"]
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), HP["max_grad_norm"])
                optimizer.step()
    envs.close()
    seconds = time.perf_counter() - start, time.process_time() - cpu_start

    def act(o):
        with torch.no_grad():
            return agent.get_action_and_value(torch.Tensor(o))[0].numpy()
    return seconds, updates * batch_size, act


def median_return(act, seed):
    """Median undiscounted return of EVAL_EPISODES sampled-action episodes."""
    env = gym.make("CartPole-v1")
    returns = []
    for k in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=seed + 777 + k)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(act(obs[None])[0]))
            total += reward
            done = terminated or truncated
        returns.append(total)
    return float(np.median(returns))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("impl", choices=["sb3", "cleanrl"])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--updates", type=int, default=60)
    args = parser.parse_args()
    np.random.seed(args.seed)
    (seconds, cpu_seconds), steps, act = (run_sb3 if args.impl == "sb3" else run_cleanrl)(
        args.seed, args.updates)
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "steps": steps,
                      "median_return": median_return(act, args.seed)}))


if __name__ == "__main__":
    main()
