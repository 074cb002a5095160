"""The tiny autoregressive model of exercise 1: a proper, causal, autoregressive
distribution over responses, and nothing that computes a gradient."""
from __future__ import annotations

import numpy as np
import pytest

from rlkit import autoregressive as ar


@pytest.fixture
def theta():
    return ar.init_params(np.random.default_rng(3), 1.5)


def test_sizes_and_pack_round_trip(theta):
    assert ar.NUM_PARAMS == 48 == theta.shape[0]
    blocks = ar.unpack(theta)
    assert [(k, v.shape) for k, v in blocks.items()] == [(n, s) for n, s in ar.BLOCKS]
    assert np.array_equal(ar.pack(blocks), theta)
    batch = np.stack([theta, 2 * theta])                      # leading axes pass through
    assert np.array_equal(ar.pack(ar.unpack(batch)), batch)
    with pytest.raises(ValueError):
        ar.unpack(np.zeros(47))


def test_logits_are_the_documented_sum_of_rows(theta):
    W = ar.unpack(theta)
    x, y = np.array([2]), np.array([[3, 1, 3]])
    z = ar.token_logits(theta, x, y)[0]
    assert np.allclose(z[0], W["prompt"][2] + W["previous"][ar.BOS])
    assert np.allclose(z[1], W["prompt"][2] + W["previous"][3] + W["prefix"][3])
    assert np.allclose(z[2], W["prompt"][2] + W["previous"][1] + W["prefix"][3] + W["prefix"][1])
    assert np.array_equal(ar.previous_tokens(y), [[ar.BOS, 3, 1]])
    assert np.array_equal(ar.prefix_counts(y)[0], [[0, 0, 0, 0], [0, 0, 0, 1], [0, 1, 0, 1]])


def test_causal_each_step_reads_only_its_prefix(theta):
    rng = np.random.default_rng(0)
    x = rng.integers(0, ar.NUM_PROMPTS, 50)
    y = rng.integers(0, ar.VOCAB, (50, ar.LENGTH))
    z = ar.token_logits(theta, x, y)
    for t in range(ar.LENGTH):
        y2 = y.copy()
        y2[:, t:] = rng.integers(0, ar.VOCAB, y2[:, t:].shape)
        assert np.array_equal(ar.token_logits(theta, x, y2)[:, :t + 1], z[:, :t + 1])


def test_distributions_normalised_and_consistent(theta):
    every = ar.all_responses()
    assert every.shape == (ar.VOCAB ** ar.LENGTH, ar.LENGTH)
    assert len({tuple(r) for r in every}) == every.shape[0]
    P = ar.response_distribution(theta, np.arange(ar.NUM_PROMPTS))
    assert P.shape == (ar.NUM_PROMPTS, 64) and np.allclose(P.sum(axis=1), 1.0, atol=1e-14)
    x, y = np.array([0, 1, 2]), np.array([[0, 1, 2], [3, 3, 3], [1, 0, 1]])
    lp = ar.token_log_probs(theta, x, y)
    assert np.allclose(ar.log_prob(theta, x, y), lp.sum(axis=1))
    for t in range(ar.LENGTH):                                  # next_token_probs agrees
        p = ar.next_token_probs(theta, x, y[:, :t])
        assert np.allclose(p.sum(axis=1), 1.0)
        assert np.allclose(np.log(p[np.arange(3), y[:, t]]), lp[:, t])
    with pytest.raises(ValueError):
        ar.next_token_probs(theta, x, y)                         # a full response has no next token
    with pytest.raises(ValueError):
        ar.token_log_probs(theta, np.array([3]), np.array([[0, 0, 0]]))


def test_sampling_matches_the_distribution(theta):
    rng = np.random.default_rng(1)
    n = 60000
    x = np.full(n, 1)
    y = ar.sample(theta, x, rng)
    assert y.shape == (n, ar.LENGTH) and y.dtype == np.int64
    index = (y * ar.VOCAB ** np.arange(ar.LENGTH)[::-1]).sum(axis=1)
    freq = np.bincount(index, minlength=64) / n
    p = ar.response_distribution(theta, np.array([1]))[0]
    assert np.abs(freq - p).max() < 4 * np.sqrt(p.max() / n)
    again = ar.sample(theta, x, np.random.default_rng(1))     # same seed, same batch: same
    assert np.array_equal(again, y)


def test_large_logits_stay_finite():
    theta = ar.init_params(np.random.default_rng(0), 300.0)
    x, y = np.array([0, 1]), np.array([[0, 1, 2], [3, 2, 1]])
    assert np.all(np.isfinite(ar.token_log_probs(theta, x, y)))
    assert np.all(np.isfinite(ar.next_token_probs(theta, x, y[:, :1])))


def test_runtime_holds_no_gradient():
    src = open(ar.__file__).read()
    assert "grad" not in src.split('"""', 2)[2].replace("gradients", "")
