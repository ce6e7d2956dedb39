"""Tests of successive weighted sampling without replacement (docs/experiments/e1.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from debiaseval.debiasing.sampling import (
    exact_inclusion_probabilities,
    weighted_sample_without_replacement,
)


def _brute_force_inclusion(weights: np.ndarray, size: int) -> np.ndarray:
    """Inclusion probabilities by enumerating every ordered draw sequence (positive weights)."""
    w = np.asarray(weights, dtype=float)
    out = np.zeros(w.size)
    for seq in itertools.permutations(range(w.size), size):
        p, left = 1.0, w.sum()
        for j in seq:
            p *= w[j] / left
            left -= w[j]
        out[list(seq)] += p
    return out


def _frequencies(weights: np.ndarray, size: int, n_draws: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = np.zeros(len(weights))
    for _ in range(n_draws):
        counts[weighted_sample_without_replacement(weights, size, rng)] += 1
    return counts / n_draws


def test_exact_inclusion_matches_brute_force_enumeration():
    w = np.array([1.0, 2.0, 3.0, 0.5, 4.0])
    for size in range(6):
        np.testing.assert_allclose(
            exact_inclusion_probabilities(w, size), _brute_force_inclusion(w, size), atol=1e-12
        )


def test_exact_inclusion_hand_computed_two_items():
    # draw 1 of (1, 3): P = weight share
    np.testing.assert_allclose(exact_inclusion_probabilities(np.array([1.0, 3.0]), 1), [0.25, 0.75])
    # zero weights: taken only after positives, uniformly among themselves
    np.testing.assert_allclose(
        exact_inclusion_probabilities(np.array([0.0, 1.0, 0.0, 2.0]), 3), [0.5, 1.0, 0.5, 1.0]
    )


def test_exact_inclusion_refuses_large_n():
    with pytest.raises(ValueError, match="n <= 12"):
        exact_inclusion_probabilities(np.ones(13), 2)


def test_inclusion_frequencies_match_exact_probabilities():
    w = np.array([1.0, 2.0, 3.0, 0.5, 4.0, 0.1])
    size, n_draws = 3, 40_000
    target = exact_inclusion_probabilities(w, size)
    # successive sampling is NOT inclusion ∝ weight: make sure the target tells them apart
    assert np.max(np.abs(target - np.minimum(1, size * w / w.sum()))) > 0.05
    freq = _frequencies(w, size, n_draws, seed=12345)
    se = np.sqrt(target * (1 - target) / n_draws)
    assert np.all(np.abs(freq - target) < 5 * se), (freq, target, se)


def test_zero_weights_taken_last_and_uniformly():
    w = np.array([0.0, 1.0, 0.0, 3.0, 0.0, 2.0])
    # fewer draws than positives: zero-weight items never appear
    rng = np.random.default_rng(0)
    for _ in range(2000):
        assert np.all(w[weighted_sample_without_replacement(w, 3, rng)] > 0)
    # more draws than positives: every positive, then a uniform subset of the zeros
    n_draws = 6000
    freq = _frequencies(w, 4, n_draws, seed=1)
    target = exact_inclusion_probabilities(w, 4)
    np.testing.assert_allclose(target, [1 / 3, 1, 1 / 3, 1, 1 / 3, 1])
    np.testing.assert_array_equal(freq[w > 0], 1.0)
    se = np.sqrt(1 / 3 * 2 / 3 / n_draws)
    assert np.all(np.abs(freq[w == 0] - 1 / 3) < 5 * se)
    # all weights zero: a uniform sample
    idx = weighted_sample_without_replacement(np.zeros(5), 2, np.random.default_rng(2))
    assert idx.size == 2 and np.unique(idx).size == 2


def test_output_sorted_unique_and_deterministic():
    w = np.random.default_rng(3).random(1000)
    a = weighted_sample_without_replacement(w, 300, np.random.default_rng(7))
    b = weighted_sample_without_replacement(w, 300, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert a.size == 300 and np.all(np.diff(a) > 0)
    assert a.min() >= 0 and a.max() < 1000


def test_tiny_weights_do_not_overflow():
    w = np.array([1e-320, 1e-320, 1.0, 5e-324])
    idx = weighted_sample_without_replacement(w, 3, np.random.default_rng(0))
    assert 2 in idx and idx.size == 3


@pytest.mark.parametrize("size", [0, 5])
def test_size_zero_and_n(size):
    w = np.array([1.0, 0.0, 2.0, 3.0, 0.5])
    idx = weighted_sample_without_replacement(w, size, np.random.default_rng(0))
    np.testing.assert_array_equal(idx, np.arange(size))
    assert idx.dtype == np.intp


@pytest.mark.parametrize(
    ("weights", "size", "match"),
    [
        (np.array([1.0, -0.1, 2.0]), 1, "non-negative"),
        (np.array([1.0, np.nan, 2.0]), 1, "finite"),
        (np.array([1.0, np.inf, 2.0]), 1, "finite"),
        (np.array([1.0, 2.0]), 3, "size"),
        (np.array([1.0, 2.0]), -1, "size"),
        (np.array([1.0, 2.0]), 1.5, "size"),
        (np.ones((2, 2)), 1, "1-D"),
    ],
)
def test_bad_input_raises(weights, size, match):
    with pytest.raises(ValueError, match=match):
        weighted_sample_without_replacement(weights, size, np.random.default_rng(0))
    with pytest.raises(ValueError, match=match):
        exact_inclusion_probabilities(weights, size)
