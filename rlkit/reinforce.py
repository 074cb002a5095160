"""REINFORCE on the verifier problem, with the per-sample weight left open.

The loop is complete: it samples one group of K responses per prompt, scores
them, turns the scores into per-sample weights with ``weight_fn`` and takes an
ascent step on the preference table. Plugging in a different ``weight_fn``
(raw reward, a baseline, a standardised score ...) changes the algorithm;
plugging in ``surrogate_grad_fn`` re-uses each group for several epochs.
"""
from __future__ import annotations

from typing import Any, Callable, Generator, Optional, Sequence, Union

import numpy as np

from .verifier import (EXACT_REWARD, REFERENCE_POLICY, reference_logits, sample_groups,
                       softmax_policy, weighted_score_gradient)
from .progress import progress

WeightFn = Callable[[np.ndarray], np.ndarray]
"""Maps rewards ``(P, K) float64`` to per-sample weights ``(P, K) float64``."""

SurrogateGradFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float], np.ndarray]
"""``(theta (P, V), ys (P, K), weights (P, K), logp_old (P, K), eps) -> gradient (P, V)``."""


def raw_reward(r: np.ndarray) -> np.ndarray:
    """Plain REINFORCE: the weight of a sample is its own reward."""
    return r


def sampled_rewards(pi: np.ndarray, ys: np.ndarray, rewards: np.ndarray,
                    beta: float = 0.0) -> np.ndarray:
    """Rewards ``(P, K)`` of the sampled responses, with the fixed-reference KL
    penalty r - beta * log(pi(y|x) / pi_ref(y|x)) folded in when beta != 0."""
    rows = np.arange(ys.shape[0])[:, None]
    r = rewards[rows, ys]
    if beta != 0.0:
        r = r - beta * np.log(pi[rows, ys] / REFERENCE_POLICY[rows, ys])
    return r


WEIGHT, SURROGATE_GRAD = "weight", "surrogate_grad"
"""The questions :func:`training` asks: the per-sample weights of rewards ``(r,)``, or the
surrogate's gradient ``(theta, ys, weights, logp_old, eps)`` (see :data:`WeightFn`,
:data:`SurrogateGradFn`)."""


def train(weight_fn: WeightFn, K: int, updates: int,
          rng: Union[np.random.Generator, Sequence[np.random.Generator]], *,
          rewards: np.ndarray = EXACT_REWARD, beta: float = 0.0, lr: float = 2.0,
          theta: Optional[np.ndarray] = None, epochs: int = 1,
          surrogate_grad_fn: Optional[SurrogateGradFn] = None, eps: float = 0.2,
          show_progress: bool = False, desc: str = "") -> np.ndarray:
    """Run ``updates`` group updates from ``theta`` (default: the reference) and
    return the final preference table ``(P, V) float64``.

    Without ``surrogate_grad_fn`` each group is used once: the ascent direction
    is the weighted score gradient. With it, each group is re-used for
    ``epochs`` steps of ``theta += lr * surrogate_grad_fn(theta, ys, w,
    logp_old, eps)``, where ``logp_old`` are the sampling policy's
    log-probabilities of the group, ``(P, K)``.

    ``rng`` may also be a list of S generators: S independent runs advance in
    lockstep, each exactly as it would alone, and the result is ``(S, P, V)``.
    ``weight_fn`` and ``surrogate_grad_fn`` then see the S runs' prompts
    stacked as ``S * P`` rows (both act row by row).
    """
    rngs = [rng] if isinstance(rng, np.random.Generator) else list(rng)
    answer = {WEIGHT: weight_fn, SURROGATE_GRAD: surrogate_grad_fn}
    loop = training(K, updates, rngs, rewards=rewards, beta=beta, lr=lr, theta=theta,
                    epochs=epochs, clipped=surrogate_grad_fn is not None, eps=eps,
                    show_progress=show_progress, desc=desc)
    question = next(loop)
    try:
        while True:
            fn = answer[question[0]]
            question = loop.send(_finite(fn(*question[1]), fn, K))
    except StopIteration as done:
        thetas = done.value
    return thetas[0] if isinstance(rng, np.random.Generator) else thetas


def _finite(answer: Any, fn: Callable, K: int) -> Any:
    """``answer`` of ``fn``, or a ValueError naming ``fn`` when it holds NaN or
    inf (the next sampling step would fail on the NaN policy, far from the cause)."""
    try:
        bad = not np.all(np.isfinite(np.asarray(answer, dtype=np.float64)))
    except (TypeError, ValueError):
        return answer                  # not numbers: the loop says what is wrong with it
    if bad:
        name = getattr(fn, "__name__", repr(fn))
        raise ValueError(f"{name}() returned NaN or inf at K = {K}; a policy updated with it "
                         "cannot be sampled from")
    return answer


def training(K: int, updates: int, rngs: Sequence[np.random.Generator], *,
             rewards: np.ndarray = EXACT_REWARD, beta: float = 0.0, lr: float = 2.0,
             theta: Optional[np.ndarray] = None, epochs: int = 1, clipped: bool = False,
             eps: float = 0.2, show_progress: bool = False, desc: str = ""
             ) -> Generator[tuple[str, tuple], Any, np.ndarray]:
    """The loop of :func:`train` for the S runs of ``rngs`` (``clipped``: with a
    surrogate gradient), as a generator: it yields each question it needs
    answered, ``(WEIGHT, (r,))`` or ``(SURROGATE_GRAD, (theta, ys, w,
    logp_old, eps))``, takes the answer by ``send`` and returns the final
    tables ``(S, P, V)``. So several loops can advance in lockstep, their
    questions asked together (the judge's K-sweep)."""
    start = reference_logits() if theta is None else np.array(theta, dtype=np.float64)
    P = start.shape[0]
    thetas = np.stack([start] * len(rngs))                      # (S, P, V)
    rows = np.arange(P)[:, None]
    for _ in progress(range(updates), enable=show_progress, desc=desc or f"K={K}"):
        pis = [softmax_policy(t) for t in thetas]
        ys = [sample_groups(pi, K, g) for pi, g in zip(pis, rngs)]
        r = np.concatenate([sampled_rewards(pi, y, rewards, beta) for pi, y in zip(pis, ys)])
        w = np.asarray((yield WEIGHT, (r,))).reshape(len(rngs), P, K)
        if not clipped:
            thetas = np.stack([t + lr * weighted_score_gradient(pi, y, ws)
                               for t, pi, y, ws in zip(thetas, pis, ys, w)])
            continue
        y_all, w_all = np.concatenate(ys), w.reshape(-1, K)
        logp_old = np.concatenate([np.log(pi[rows, y]) for pi, y in zip(pis, ys)])
        for _ in range(epochs):
            g = yield SURROGATE_GRAD, (thetas.reshape(-1, thetas.shape[2]), y_all, w_all,
                                       logp_old, eps)
            thetas = thetas + lr * np.asarray(g).reshape(thetas.shape)
    return thetas
