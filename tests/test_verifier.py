"""The section's verifier problem in the runtime."""
import numpy as np
import pytest

from rlkit import reinforce
from rlkit.verifier import (ANSWERS, EXACT_REWARD, HEDGE, RESPONSES, SLOPPY_REWARD,
                            exact_match, expected_success, reference_logits, sample_groups,
                            score_matrix, sloppy_match, softmax_policy, weighted_score_gradient)


def test_exact_match_is_exact():
    assert exact_match(0, RESPONSES.index("4")) == 1.0
    assert exact_match(1, RESPONSES.index("12")) == 1.0
    assert exact_match(0, RESPONSES.index("12")) == 0.0
    assert exact_match(0, HEDGE) == 0.0
    # Two prompts have no exactly-matching candidate: the ceiling is 0.5.
    assert EXACT_REWARD.sum(axis=1).tolist() == [1.0, 1.0, 0.0, 0.0]


def test_sloppy_match_accepts_the_hedge_everywhere():
    assert all(sloppy_match(x, HEDGE) == 1.0 for x in range(len(ANSWERS)))
    assert SLOPPY_REWARD[:, HEDGE].tolist() == [1.0] * 4
    # Substring pitfalls: "4" is not inside "12" but "12" contains "1" and "2".
    assert sloppy_match(0, RESPONSES.index("4")) == 1.0
    assert SLOPPY_REWARD.sum() == EXACT_REWARD.sum() + 4


def test_reference_policy_and_its_success():
    pi = softmax_policy(reference_logits())
    np.testing.assert_allclose(pi.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    hedge = np.exp(-4) / (8 + np.exp(-4))
    np.testing.assert_allclose(pi[:, HEDGE], hedge, rtol=1e-15)
    assert 0.002 < hedge < 0.0025                      # "about 0.2 percent"
    assert expected_success(pi) == pytest.approx(0.5 / (8 + np.exp(-4)), rel=1e-14)
    assert round(expected_success(pi), 10) == 0.0623572359


def test_softmax_is_shift_invariant_and_stable():
    theta = np.array([[1000.0, 0.0, -1000.0]])
    pi = softmax_policy(theta)
    assert np.all(np.isfinite(pi)) and pi[0, 0] == 1.0
    np.testing.assert_allclose(softmax_policy(theta + 3.0), pi)


def test_sample_groups_shape_and_determinism():
    pi = softmax_policy(reference_logits())
    a = sample_groups(pi, 5, np.random.default_rng(0))
    b = sample_groups(pi, 5, np.random.default_rng(0))
    assert a.shape == (4, 5) and np.array_equal(a, b)
    assert a.min() >= 0 and a.max() < len(RESPONSES)


def test_sample_groups_follows_the_policy():
    pi = softmax_policy(np.array([[0.0, np.log(3.0)]]))     # p = (1/4, 3/4)
    ys = sample_groups(pi, 40_000, np.random.default_rng(3))
    assert abs(ys.mean() - 0.75) < 0.01


def test_weighted_score_gradient_matches_a_per_sample_sum():
    rng = np.random.default_rng(4)
    theta = rng.normal(size=(4, 9))
    pi = softmax_policy(theta)
    ys = sample_groups(pi, 6, rng)
    w = rng.normal(size=(4, 6))
    expected = np.zeros((4, 9))
    for x in range(4):
        for j in range(6):
            expected[x] += w[x, j] * (np.eye(9)[ys[x, j]] - pi[x]) / 6
    np.testing.assert_allclose(weighted_score_gradient(pi, ys, w), expected, atol=1e-15)
    assert score_matrix(pi, ys).shape == (4, 6, 9)


def test_plain_reinforce_learns_at_k1():
    """Without a baseline, REINFORCE still learns from single samples."""
    theta = reinforce.train(reinforce.raw_reward, 1, 2000, np.random.default_rng(0))
    assert expected_success(softmax_policy(theta)) > 0.3


def test_train_is_deterministic_given_the_generator():
    a = reinforce.train(reinforce.raw_reward, 4, 50, np.random.default_rng(5))
    b = reinforce.train(reinforce.raw_reward, 4, 50, np.random.default_rng(5))
    assert np.array_equal(a, b)
