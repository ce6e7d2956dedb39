"""Exposure simulation on fully exposed data ([URE24] E5): samplers against their targets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.exposure import (
    attribute_weights,
    inverse_attribute_weights,
    item_popularity,
    popularity_weights,
    simulate_exposure,
)
from debiaseval.debiasing.sampling import exact_inclusion_probabilities


def _full(n_users: int, n_items: int, rng: np.random.Generator) -> pd.DataFrame:
    users, items = np.indices((n_users, n_items)).reshape(2, -1)
    return pd.DataFrame(
        {"user": users, "item": items, "rating": rng.integers(1, 6, users.size).astype(float)}
    )


def _inclusion(labels: pd.DataFrame, part: str, n_items: int) -> np.ndarray:
    chosen = labels["part"].to_numpy() == part
    n_users = labels["user"].nunique()
    return np.bincount(labels["item"].to_numpy()[chosen], minlength=n_items) / n_users


def test_strength_zero_is_uniform_exposure():
    """Every item's inclusion rate is train_fraction (within 4 binomial SE), whatever its
    popularity, and the random set is uniform over the other items too."""
    rng = np.random.default_rng(0)
    n_users, n_items = 4000, 12
    full = _full(n_users, n_items, rng)
    pop = np.arange(1.0, n_items + 1) ** 3  # very unequal popularity
    w = popularity_weights(pop, 0.0)
    np.testing.assert_array_equal(w, 1.0)
    labels = simulate_exposure(full, w, train_fraction=0.25, n_exposed=3, rng=rng)
    for part, rate in (("train", 3 / 12), ("exposed", 3 / 12)):
        freq = _inclusion(labels, part, n_items)
        se = np.sqrt(rate * (1 - rate) / n_users)
        assert np.abs(freq - rate).max() < 4 * se, (part, freq)
    np.testing.assert_array_equal(attribute_weights(pop, 0.0), 1.0)


def test_weighted_exposure_matches_successive_sampling():
    """Per-user training sets follow successive weighted sampling: item inclusion rates
    equal the exact inclusion probabilities (within 4 SE)."""
    rng = np.random.default_rng(1)
    n_users, n_items = 20000, 6
    full = _full(n_users, n_items, rng)
    w = popularity_weights(np.array([1, 2, 4, 8, 16, 0.0]), 1.5)  # pop 0 floors to 1
    labels = simulate_exposure(full, w, train_fraction=2 / 6, n_exposed=1, rng=rng)
    exact = exact_inclusion_probabilities(w, 2)
    freq = _inclusion(labels, "train", n_items)
    se = np.sqrt(exact * (1 - exact) / n_users)
    assert np.abs(freq - exact).max() < 4 * se.max(), (freq, exact)
    # exposed: 1 of the 4 remaining items, uniformly: P(i exposed) = (1 - p_i) / 4
    expected = (1 - exact) / 4
    freq = _inclusion(labels, "exposed", n_items)
    assert np.abs(freq - expected).max() < 4 * np.sqrt(expected * (1 - expected) / n_users).max()


def test_parts_sizes_and_determinism():
    rng = np.random.default_rng(2)
    full = _full(50, 20, rng).sample(frac=0.9, random_state=3)  # users with 15..20 items
    w = attribute_weights(np.linspace(0, 1, 20), 2.0)
    a = simulate_exposure(full, w, train_fraction=0.3, n_exposed=12, rng=np.random.default_rng(5))
    b = simulate_exposure(full, w, train_fraction=0.3, n_exposed=12, rng=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)
    assert a.index.equals(full.index)
    counts = a.groupby("user")["part"].value_counts().unstack(fill_value=0)
    n_avail = full.groupby("user").size()
    np.testing.assert_array_equal(counts["train"], np.rint(0.3 * n_avail))
    np.testing.assert_array_equal(
        counts["exposed"], np.minimum(12, n_avail - np.rint(0.3 * n_avail))
    )


def test_popularity_counts_positive_pairs():
    full = pd.DataFrame({"user": [0, 1, 2, 0], "item": [0, 0, 0, 2], "rating": [4, 5, 3, 5.0]})
    np.testing.assert_array_equal(item_popularity(full, 4, positive_threshold=3), [2, 0, 1, 0])


def test_bad_input():
    full = _full(3, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="strength"):
        popularity_weights(np.ones(4), -1.0)
    with pytest.raises(ValueError, match="train_fraction"):
        simulate_exposure(full, np.ones(4), train_fraction=1.0, n_exposed=1, rng=None)
    with pytest.raises(ValueError, match="item_weights has 3 entries"):
        simulate_exposure(
            full, np.ones(3), train_fraction=0.5, n_exposed=1, rng=np.random.default_rng(0)
        )
    with pytest.raises(ValueError, match="finite numbers"):
        attribute_weights(np.array([1.0, np.nan]), 1.0)


def test_inverse_attribute_exposure_matches_successive_sampling():
    """Exposure inverse to an attribute ([URE24]: to the video duration): w = a^-strength, and
    the training sets follow successive sampling with those weights (within 4 SE)."""
    durations = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 2.0])
    np.testing.assert_allclose(inverse_attribute_weights(durations, 1.0), 1 / durations)
    np.testing.assert_allclose(inverse_attribute_weights(durations, 0.5), durations**-0.5)
    np.testing.assert_array_equal(inverse_attribute_weights(durations, 0.0), 1.0)
    rng = np.random.default_rng(4)
    n_users, n_items = 20000, durations.size
    w = inverse_attribute_weights(durations, 1.0)
    labels = simulate_exposure(
        _full(n_users, n_items, rng), w, train_fraction=2 / 6, n_exposed=1, rng=rng
    )
    exact = exact_inclusion_probabilities(w, 2)
    freq = _inclusion(labels, "train", n_items)
    assert np.abs(freq - exact).max() < 4 * np.sqrt(exact * (1 - exact) / n_users).max()
    assert freq[0] > freq[1] > freq[2] > freq[3] > freq[4]  # shorter videos shown more
    for bad in ([1.0, 0.0], [1.0, -2.0], [1.0, np.nan]):
        with pytest.raises(ValueError, match="finite numbers > 0"):
            inverse_attribute_weights(np.array(bad), 1.0)
