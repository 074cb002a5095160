"""Capstone A's oracles (Gradescope side only): the answers a student writes,
computed independently of the reference, plus the judge's first-minibatch data.
Each returns arrays; the judge reaches them through ``Context.oracle`` and the
``oracle=`` of ``Context.expect``, which compares with one array: a piece that
answers two (a loss and its gradient, advantages and returns) has an oracle
per answer (``value_loss_value`` and ``value_loss_grad``, ...)."""
from __future__ import annotations

import numpy as np

from rlkit.agent import ENV_SEED_OFFSET, collect_rollout, init_networks
from rlkit.cartpole import NUM_ACTIONS, OBS_DIM, VecCartPole
from rlkit.mlp import backward, flatten, forward, global_norm
from rlkit.optim import Adam

from ..judges.ppo_pieces import FINGERPRINT_STRIDE
from . import clip_slips


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """``(B, A)`` log-probabilities of softmax(logits), by log-sum-exp."""
    top = logits.max(axis=1, keepdims=True)
    shifted = logits - top
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def log_prob(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``(B,)`` log pi(a | s) of the chosen actions."""
    return log_softmax(logits)[np.arange(len(actions)), actions]


def entropy(logits: np.ndarray) -> np.ndarray:
    """``(B,)`` entropy of softmax(logits) in nats; an underflowed probability
    contributes 0."""
    logp = log_softmax(logits)
    return -(np.exp(logp) * logp).sum(axis=1)


OWN_CLIP_SLIPS = ("sign_flipped", "ratio_inverted", "ratio_one", "sum_not_mean")


def clipped_loss(logits: np.ndarray, actions: np.ndarray, logp_old: np.ndarray,
                 adv: np.ndarray, eps: float, slip: str = "") -> tuple[np.ndarray, np.ndarray]:
    """PPO's clipped surrogate loss ``-mean(min(rho A, clip(rho, 1 - eps, 1 + eps) A))``
    and its gradient ``(B, A)`` w.r.t. the logits: a sample counts where the
    unclipped term is the minimum (rho <= 1 + eps for A >= 0, rho >= 1 - eps
    for A < 0), with d rho / d logits = rho (onehot - p). ``slip`` (one of the
    judge's ``CLIP_LOSS_SLIPS``, for its diagnosis): a half-right loss and its
    gradient instead (``clip_slips``'s objectives, the sign flipped, the ratio
    inverted or taken as 1, the loss summed over the batch)."""
    if slip not in ("", *clip_slips.SLIPS, *OWN_CLIP_SLIPS):
        raise ValueError(f"unknown slip {slip!r}")
    B = len(actions)
    logp_all = log_softmax(logits)
    logratio = logp_all[np.arange(B), actions] - logp_old
    if slip == "ratio_inverted":           # pi_old / pi_new, in the same gradient formula
        logratio = -logratio
    rho = np.ones(B) if slip == "ratio_one" else np.exp(logratio)
    value, dvalue = clip_slips.surrogate(rho, adv, eps, slip if slip in clip_slips.SLIPS else "")
    sign = -1.0 if slip == "sign_flipped" else 1.0
    scale = B if slip == "sum_not_mean" else 1.0
    loss = -sign * scale * value.mean()
    onehot = np.eye(logits.shape[1])[actions]
    dlogp = -sign * scale * dvalue / B
    return np.asarray(loss), dlogp[:, None] * (onehot - np.exp(logp_all))


def clipped_loss_value(logits, actions, logp_old, adv, eps) -> np.ndarray:
    """The clipped surrogate loss alone (a number): :func:`clipped_loss`'s first answer."""
    return clipped_loss(logits, actions, logp_old, adv, eps)[0]


def clipped_loss_dlogits(logits, actions, logp_old, adv, eps) -> np.ndarray:
    """``(B, A)`` the clipped loss's gradient w.r.t. the logits."""
    return clipped_loss(logits, actions, logp_old, adv, eps)[1]


def clipped_loss_param_grad(params: list, obs: np.ndarray, actions, logp_old, adv,
                            eps) -> np.ndarray:
    """The clipped loss's gradient w.r.t. the parameters of the policy network
    ``params`` at observations ``obs`` ``(B, 4)``, flattened (``rlkit.mlp.flatten``
    order): the logits' gradient taken back through the network."""
    logits, cache = forward(params, obs)
    return flatten(backward(params, cache, clipped_loss_dlogits(logits, actions, logp_old, adv,
                                                                eps)))


def policy_ratio(logp_new: np.ndarray, logp_old: np.ndarray) -> np.ndarray:
    """``(B,)`` importance ratios ``exp(logp_new - logp_old)``."""
    return np.exp(logp_new - logp_old)


def value_loss(values: np.ndarray, returns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``0.5 mean((v - R)^2)`` and its gradient ``(v - R) / B``."""
    err = values - returns
    return np.asarray(0.5 * np.mean(err ** 2)), err / len(err)


def entropy_loss(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``-mean(H)`` and its gradient w.r.t. the logits, ``p (log p + H) / B``."""
    logp = log_softmax(logits)
    p = np.exp(logp)
    H = -(p * logp).sum(axis=1)
    return np.asarray(-H.mean()), p * (logp + H[:, None]) / len(H)


def value_loss_value(values: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """The value loss alone (a number)."""
    return value_loss(values, returns)[0]


def value_loss_grad(values: np.ndarray, returns: np.ndarray) -> np.ndarray:
    """``(B,)`` the value loss's gradient w.r.t. the values."""
    return value_loss(values, returns)[1]


def entropy_loss_value(logits: np.ndarray) -> np.ndarray:
    """The entropy loss alone (a number)."""
    return entropy_loss(logits)[0]


def entropy_loss_grad(logits: np.ndarray) -> np.ndarray:
    """``(B, A)`` the entropy loss's gradient w.r.t. the logits."""
    return entropy_loss(logits)[1]


def normalise(adv: np.ndarray) -> np.ndarray:
    """Advantages standardised over all elements: ``(adv - mean) / (std + 1e-8)``,
    population std (the handout's ``ADV_EPS``)."""
    return (adv - adv.mean()) / (adv.std() + 1e-8)


def normalise_slipped(adv: np.ndarray, slip: str) -> np.ndarray:
    """:func:`normalise` with the judge's ``NORMALISE_KNOBS`` slips ``slip``
    turned (one, or several joined by "+"): per environment (axis 0), the
    sample std, another epsilon (``eps_0``: none)."""
    turned = set(slip.split("+"))
    unknown = turned - {"per_env", "ddof1", "eps_0", "eps_1e-5", "eps_1e-4"}
    if unknown:
        raise ValueError(f"unknown slips {sorted(unknown)} of normalise_advantages")
    axis = 0 if "per_env" in turned else None
    eps = next((float(t[4:]) for t in turned if t.startswith("eps_")), 1e-8)
    mean = adv.mean(axis=axis, keepdims=axis is not None)
    std = adv.std(axis=axis, ddof=1 if "ddof1" in turned else 0, keepdims=axis is not None)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (adv - mean) / (std + eps)


def reward_to_go_minus_v(ro: dict, gamma: float) -> np.ndarray:
    """``(T, N)`` brute force, one environment and step at a time: discounted
    reward-to-go, bootstrapped with V(final obs) at truncations and with
    values[T] where the data stops, minus V-hat."""
    rewards, values, final_values = ro["rewards"], ro["values"], ro["final_values"]
    T, N = rewards.shape
    out = np.zeros((T, N))
    for n in range(N):
        G = values[T, n]
        for t in range(T - 1, -1, -1):
            if ro["terminated"][t, n]:
                G = 0.0
            elif ro["truncated"][t, n]:
                G = final_values[t, n]
            G = rewards[t, n] + gamma * G
            out[t, n] = G - values[t, n]
    return out


def gae(ro: dict, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """GAE(gamma, lambda) of a rollout, by the truncated-sum definition:
    A_t = sum_k (gamma lam)^k delta_{t+k} within the episode; returns
    ``(advantages (T, N), returns (T, N))``."""
    T, N = ro["rewards"].shape
    ended = ro["terminated"] | ro["truncated"]
    bootstrap = np.where(ro["terminated"], 0.0,
                         np.where(ro["truncated"], ro["final_values"], ro["values"][1:]))
    delta = ro["rewards"] + gamma * bootstrap - ro["values"][:T]
    adv = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            total, factor = 0.0, 1.0
            for k in range(t, T):
                total += factor * delta[k, n]
                if ended[k, n]:
                    break
                factor *= gamma * lam
            adv[t, n] = total
    return adv, adv + ro["values"][:T]


def gae_advantages(ro: dict, gamma: float, lam: float) -> np.ndarray:
    """``(T, N)`` the advantages of :func:`gae`."""
    return gae(ro, gamma, lam)[0]


def gae_returns(ro: dict, gamma: float, lam: float) -> np.ndarray:
    """``(T, N)`` the returns (value targets) of :func:`gae`: advantages + values[:T]."""
    return gae(ro, gamma, lam)[1]


def policy_gradient_dlogits(logits: np.ndarray, actions: np.ndarray,
                            adv: np.ndarray) -> np.ndarray:
    """``(B, A)`` gradient w.r.t. the logits of the plain policy-gradient loss
    ``-mean(A log pi(a | s))``."""
    probs = np.exp(log_softmax(logits))
    onehot = np.eye(logits.shape[1])[actions]
    return -(adv / len(adv))[:, None] * (onehot - probs)


def first_minibatch(seed: int, hp: dict) -> tuple[np.ndarray, ...]:
    """What the judge's PPO loop (``ppo_loop.train``) sees before its first
    optimiser step, none of which depends on the submission: the rollout's
    logits ``(B, A)`` and actions ``(B,)``, the first permutation's minibatch
    indices ``(mb,)`` and that minibatch's logits recomputed by a forward
    pass ``(mb, A)``."""
    rng = np.random.default_rng(seed)
    nets = init_networks(hp, rng)
    env = VecCartPole(hp["num_envs"], seed=seed + ENV_SEED_OFFSET)
    ro = collect_rollout(env, env.reset(), *nets, hp["num_steps"], rng)
    batch = hp["num_envs"] * hp["num_steps"]
    idx = rng.permutation(batch)[:batch // hp["num_minibatches"]]
    obs = ro["obs"].reshape(batch, OBS_DIM)[idx]
    mb_logits, _ = forward(nets[0], obs)
    return (ro["logits"].reshape(batch, NUM_ACTIONS), ro["actions"].reshape(batch),
            idx, mb_logits)


# ---------------------------------------------------------------- one minibatch step, and slips
def _stats(policy: list, value: list, batch: dict, adv: np.ndarray, hp: dict,
           ent_sign: float = 1.0, vf_coef=None, clip_vloss=None, clip_eps=None) -> tuple:
    """Losses, gradients and the 8 statistics of one minibatch at the given
    parameters: ``(policy_grads, value_grads, stats (8,))`` with stats in the
    judge's order pg_loss, v_loss, ent_loss, entropy, approx_kl,
    old_approx_kl, clipfrac, grad_norm (joint, before clipping)."""
    eps = hp["clip_eps"] if clip_eps is None else clip_eps
    vf = hp["vf_coef"] if vf_coef is None else vf_coef
    actions = batch["actions"]
    obs = batch["obs"]
    B = len(actions)
    logits, pcache = forward(policy, obs)
    vout, vcache = forward(value, obs)
    v = vout[:, 0]
    logp_all = log_softmax(logits)
    probs = np.exp(logp_all)
    logratio = logp_all[np.arange(B), actions] - batch["logp_old"]
    ratio = np.exp(logratio)        # pi_new / pi_old of the taken actions
    surrogate = np.minimum(ratio * adv, np.clip(ratio, 1 - eps, 1 + eps) * adv)
    pg_loss = -surrogate.mean()
    # d surrogate / d log pi(a): ratio * A where the unclipped term is the minimum
    keeps = (adv >= 0) & (ratio <= 1 + eps) | (adv < 0) & (ratio >= 1 - eps)
    dlogp = -np.where(keeps, ratio * adv, 0.0) / B
    onehot = np.eye(logits.shape[1])[actions]
    dlogits = dlogp[:, None] * (onehot - probs)
    H = -(probs * logp_all).sum(axis=1)
    ent_coef = ent_sign * hp["ent_coef"]
    # d(-mean H)/d z_j = p_j (log p_j + H) / B
    dlogits = dlogits + ent_coef * probs * (logp_all + H[:, None]) / B
    err = v - batch["returns"]
    use_vclip = hp.get("clip_vloss", False) if clip_vloss is None else clip_vloss
    if use_vclip:
        step = v - batch["values_old"]          # inside the band v_clip is v itself
        err_c = np.where(np.abs(step) <= eps, v,
                         batch["values_old"] + np.clip(step, -eps, eps)) - batch["returns"]
        v_loss = 0.5 * np.maximum(err ** 2, err_c ** 2).mean()
        dv = np.where(err ** 2 >= err_c ** 2, err, 0.0) / B
    else:
        v_loss = 0.5 * (err ** 2).mean()
        dv = err / B
    pg = backward(policy, pcache, dlogits)
    vg = backward(value, vcache, vf * dv[:, None])
    norm = global_norm(pg + vg)
    stats = np.array([pg_loss, v_loss, -H.mean(), H.mean(), np.mean(ratio - 1 - logratio),
                      -np.mean(logratio), np.mean(np.abs(ratio - 1) > eps), norm])
    return pg, vg, stats


def _scale(grads: list, max_norm: float) -> None:
    """Clip ``grads`` in place to a joint L2 norm of ``max_norm`` (torch's rule)."""
    factor = min(1.0, max_norm / (global_norm(grads) + 1e-6))
    for layer in grads:
        for g in layer.values():
            g *= factor


def minibatch_step(policy: list, value: list, policy_adam: dict, value_adam: dict,
                   batch: dict, hp: dict, slip: str = "") -> tuple[np.ndarray, ...]:
    """One PPO minibatch step done independently of the reference, either
    right (``slip = ""``) or with one slip (a key of the judge's ``STEP_SLIPS``).

    Returns ``(fingerprint (P // 16 + 1,), stats_before (8,), stats_after (8,))``:
    the updated policy and value parameters flattened and concatenated, every
    16th entry; the statistics at the given parameters; the same statistics
    recomputed at the updated parameters. Nothing given is modified."""
    policy, value, before, after = _step(policy, value, policy_adam, value_adam, batch, hp, slip)
    fingerprint = np.concatenate([flatten(policy), flatten(value)])[::FINGERPRINT_STRIDE]
    return fingerprint, before, after


def minibatch_params(policy: list, value: list, policy_adam: dict, value_adam: dict,
                     batch: dict, hp: dict, net: str) -> np.ndarray:
    """The network ``net`` ("policy" or "value") after one right minibatch
    step (:func:`minibatch_step`), flattened (``rlkit.mlp.flatten`` order)."""
    policy, value, _, _ = _step(policy, value, policy_adam, value_adam, batch, hp, "")
    return flatten({"policy": policy, "value": value}[net])


def minibatch_stats(policy: list, value: list, policy_adam: dict, value_adam: dict,
                    batch: dict, hp: dict) -> np.ndarray:
    """``(8,)`` the statistics one right minibatch step reports (at the given
    parameters; the judge's ``STATS`` order)."""
    return _step(policy, value, policy_adam, value_adam, batch, hp, "")[2]


def _step(policy: list, value: list, policy_adam: dict, value_adam: dict, batch: dict,
          hp: dict, slip: str) -> tuple:
    """:func:`minibatch_step`'s work: ``(updated policy, updated value,
    stats_before (8,), stats_after (8,))`` on copies of the networks."""
    policy = [{k: a.copy() for k, a in layer.items()} for layer in policy]
    value = [{k: a.copy() for k, a in layer.items()} for layer in value]
    adv = batch["advantages"]
    norm_adv = hp["norm_adv"] != (slip == 'norm_adv_flipped')
    if norm_adv:
        ddof = 1 if slip == 'ddof1' else 0
        adv = (adv - adv.mean()) / (adv.std(ddof=ddof) + 1e-8)
    changes = {}
    if slip == 'no_vf_coef':
        changes["vf_coef"] = 1.0
    if slip == 'no_half':                # mean((v - R)^2): twice the loss, twice its gradient
        changes["vf_coef"] = 2.0 * hp["vf_coef"]
    if slip == 'no_entropy':
        changes["ent_sign"] = 0.0
    if slip == 'entropy_sign':
        changes["ent_sign"] = -1.0
    if slip == 'eps_fixed':
        changes["clip_eps"] = 0.2
    if slip == 'clip_vloss_flipped':
        changes["clip_vloss"] = not hp.get("clip_vloss", False)
    pg, vg, before = _stats(policy, value, batch, adv, hp, **changes)
    max_norm = hp["max_grad_norm"]
    if slip == 'no_clip':
        max_norm = None
    elif slip == 'clip_when_off' and max_norm is None:
        max_norm = 0.5
    if max_norm is not None:
        if slip == 'per_network_clip':
            _scale(pg, max_norm)
            _scale(vg, max_norm)
        else:
            _scale(pg + vg, max_norm)
    for params, grads, state in ((policy, pg, policy_adam), (value, vg, value_adam)):
        if slip == 'fresh_adam':
            state = {**state, "t": 0, "m": [np.zeros_like(a) for a in state["m"]],
                     "v": [np.zeros_like(a) for a in state["v"]]}
        Adam.from_state(params, state).step(params, grads)
    _, _, after = _stats(policy, value, batch, adv, hp)
    if slip == 'no_half':
        before[1], after[1] = 2.0 * before[1], 2.0 * after[1]
    return policy, value, before, after
