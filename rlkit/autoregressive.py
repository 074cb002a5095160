"""A tiny autoregressive softmax language model, small enough to enumerate.

A prompt ``x`` is one of ``NUM_PROMPTS`` integers; a response
``y = (y_1, ..., y_T)`` is ``LENGTH`` tokens from a vocabulary of ``VOCAB``
tokens. Generation runs left to right: at step t the model reads the state,
the whole prefix ``(x, y_<t)``, turns it into ``VOCAB`` logits and samples the
next token from their softmax. Every response has exactly ``LENGTH`` tokens
(no EOS), so there are ``VOCAB ** LENGTH`` possible responses per prompt.

The logits of step t are a sum of three looked-up rows of the parameters:

    z_t = W_prompt[x] + W_previous[prev_t] + counts_t @ W_prefix

* ``W_prompt``   ``(NUM_PROMPTS, VOCAB)``: one row per prompt;
* ``W_previous`` ``(VOCAB + 1, VOCAB)``: one row per previous token, where
  ``prev_1 = BOS`` (index ``VOCAB``, the start symbol) and
  ``prev_t = y_{t-1}`` for t >= 2;
* ``W_prefix``   ``(VOCAB, VOCAB)``: ``counts_t[v]`` is how often token v occurs
  in ``y_<t``, so the model sees the whole prefix, not only its last token.

The three blocks share their rows across positions: the same ``W_prompt[x]``
enters every step of a response. All parameters live in one flat vector
``theta`` of ``NUM_PARAMS float64``; :func:`unpack` and :func:`pack` convert
between it and the named blocks (the blocks in the order above, each
flattened row-major).

This module is the model only: it computes probabilities, samples and
log-probabilities, never their gradients.
"""
from __future__ import annotations

import itertools

import numpy as np

VOCAB = 4                  # tokens 0 .. VOCAB - 1
LENGTH = 3                 # tokens per response, T
NUM_PROMPTS = 3            # prompts 0 .. NUM_PROMPTS - 1
BOS = VOCAB                # the start symbol, "previous token" of step 1

BLOCKS = (("prompt", (NUM_PROMPTS, VOCAB)),
          ("previous", (VOCAB + 1, VOCAB)),
          ("prefix", (VOCAB, VOCAB)))
"""Names and shapes of the parameter blocks, in their order inside ``theta``."""

_SIZES = tuple(int(np.prod(shape)) for _, shape in BLOCKS)
NUM_PARAMS = sum(_SIZES)   # D = 12 + 20 + 16 = 48


def unpack(theta: np.ndarray) -> dict[str, np.ndarray]:
    """Split ``theta (..., D)`` into its blocks ``{"prompt": (..., NUM_PROMPTS, VOCAB),
    "previous": (..., VOCAB + 1, VOCAB), "prefix": (..., VOCAB, VOCAB)}`` (views)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape[-1] != NUM_PARAMS:
        raise ValueError(f"theta must have {NUM_PARAMS} entries in its last axis, "
                         f"got shape {theta.shape}")
    out, start = {}, 0
    for (name, shape), size in zip(BLOCKS, _SIZES):
        out[name] = theta[..., start:start + size].reshape(theta.shape[:-1] + shape)
        start += size
    return out


def pack(blocks: dict[str, np.ndarray]) -> np.ndarray:
    """Inverse of :func:`unpack`: blocks with any common leading shape ``(...)``
    -> ``(..., D) float64``."""
    parts = []
    for name, shape in BLOCKS:
        b = np.asarray(blocks[name], dtype=np.float64)
        if b.shape[b.ndim - len(shape):] != shape:
            raise ValueError(f"block {name!r} must end in shape {shape}, got {b.shape}")
        parts.append(b.reshape(b.shape[:b.ndim - len(shape)] + (-1,)))
    return np.concatenate(parts, axis=-1)


def init_params(rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Random parameters ``(D,) float64``, entries normal with std ``scale``."""
    return rng.normal(0.0, scale, NUM_PARAMS)


def _check_inputs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim != 1 or y.ndim != 2 or y.shape[0] != x.shape[0]:
        raise ValueError(f"expected x (B,) and tokens (B, t), got shapes {x.shape} and {y.shape}")
    if x.size and (x.min() < 0 or x.max() >= NUM_PROMPTS):
        raise ValueError(f"prompts must be in 0 .. {NUM_PROMPTS - 1}")
    if y.size and (y.min() < 0 or y.max() >= VOCAB):
        raise ValueError(f"tokens must be in 0 .. {VOCAB - 1}")
    return x.astype(np.int64), y.astype(np.int64)


def previous_tokens(y: np.ndarray) -> np.ndarray:
    """The previous-token index each step reads: ``(B, t) int -> (B, t) int64``,
    ``BOS`` at step 1 and ``y_{s-1}`` at step s >= 2."""
    y = np.asarray(y, dtype=np.int64)
    return np.concatenate([np.full(y.shape[:1] + (1,), BOS, dtype=np.int64), y[:, :-1]], axis=1)


def prefix_counts(y: np.ndarray) -> np.ndarray:
    """Token counts of the prefix each step reads: ``(B, t) int -> (B, t, VOCAB)
    float64``, row s counting the tokens ``y_1 .. y_{s-1}`` (step 1: all zero)."""
    y = np.asarray(y, dtype=np.int64)
    onehot = np.eye(VOCAB)[y]                                   # (B, t, V)
    return np.cumsum(onehot, axis=1) - onehot


def token_logits(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Logits of every step of responses ``y``, each step reading its own prefix
    (teacher forcing): ``theta (D,)``, ``x (B,) int``, ``y (B, t) int`` ->
    ``(B, t, VOCAB) float64``. Row s depends on ``y`` only through ``y_<s``.

    ``theta`` may also be a stack ``(S, D)`` of parameter vectors; the result
    is then ``(S, B, t, VOCAB)`` (so are those of the functions built on it,
    except :func:`sample`)."""
    x, y = _check_inputs(x, y)
    W = unpack(theta)
    return (W["prompt"][..., x, None, :] + W["previous"][..., previous_tokens(y), :]
            + prefix_counts(y) @ W["prefix"][..., None, :, :])


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def token_distributions(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Next-token distributions ``pi(. | x, y_<s)`` at every step s of ``y``:
    ``(B, t, VOCAB) float64``, rows summing to one."""
    return np.exp(_log_softmax(token_logits(theta, x, y)))


def next_token_probs(theta: np.ndarray, x: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """``pi(. | x, prefix)`` for prefixes of equal length ``t < LENGTH``:
    ``x (B,) int``, ``prefix (B, t) int`` (t may be 0) -> ``(B, VOCAB) float64``."""
    x = np.asarray(x)
    prefix = np.asarray(prefix, dtype=np.int64).reshape(x.shape[0], -1)
    if prefix.shape[1] >= LENGTH:
        raise ValueError(f"a prefix has at most {LENGTH - 1} tokens, got {prefix.shape[1]}")
    padded = np.concatenate([prefix, np.zeros((x.shape[0], 1), dtype=np.int64)], axis=1)
    return token_distributions(theta, x, padded)[..., -1, :]


def token_log_probs(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log pi(y_s | x, y_<s)`` for every step: ``(B, t) float64``."""
    x, y = _check_inputs(x, y)
    logp = _log_softmax(token_logits(theta, x, y))              # (..., B, t, V)
    index = np.broadcast_to(y[..., None], logp.shape[:-1] + (1,))
    return np.take_along_axis(logp, index, axis=-1)[..., 0]


def log_prob(theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log pi(y | x)`` of whole responses: ``(B,) float64``. By the chain rule of
    probability it is the sum of the token log-probabilities."""
    return token_log_probs(theta, x, y).sum(axis=-1)


def sample(theta: np.ndarray, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Generate one response per prompt, token by token: ``x (B,) int`` ->
    ``(B, LENGTH) int64``. Uses ``rng.random((B,))`` once per step (inverse CDF).
    ``theta`` is one parameter vector ``(D,)``."""
    if np.ndim(theta) != 1:
        raise ValueError("sample() takes one parameter vector theta of shape (D,)")
    x = np.asarray(x, dtype=np.int64)
    y = np.zeros((x.shape[0], 0), dtype=np.int64)
    for _ in range(LENGTH):
        p = next_token_probs(theta, x, y)                           # (B, V)
        u = rng.random(x.shape[0])[:, None]
        nxt = np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), VOCAB - 1)
        y = np.concatenate([y, nxt[:, None]], axis=1)
    return y


def all_responses() -> np.ndarray:
    """Every possible response, in lexicographic order: ``(VOCAB ** LENGTH, LENGTH) int64``."""
    return np.array(list(itertools.product(range(VOCAB), repeat=LENGTH)), dtype=np.int64)


def response_distribution(theta: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``pi(y | x)`` of every response of :func:`all_responses`, for each prompt:
    ``x (B,) int`` -> ``(B, VOCAB ** LENGTH) float64``, rows summing to one."""
    x = np.asarray(x, dtype=np.int64)
    ys = all_responses()
    N = ys.shape[0]
    lp = log_prob(theta, np.repeat(x, N), np.tile(ys, (x.shape[0], 1)))
    return np.exp(lp).reshape(lp.shape[:-1] + (x.shape[0], N))


__all__ = ["VOCAB", "LENGTH", "NUM_PROMPTS", "BOS", "BLOCKS", "NUM_PARAMS", "unpack", "pack",
           "init_params", "previous_tokens", "prefix_counts", "token_logits",
           "token_distributions", "next_token_probs", "token_log_probs", "log_prob", "sample",
           "all_responses", "response_distribution"]
