"""WARP's max_sampled and popularity-IPS LightFM ([URE24] E5's models)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from debiaseval.recommenders import IPSMF, LightFMRanker, make_recommender
from debiaseval.recommenders.mf_ips import popularity_propensities

FAST = {"epochs": 3, "factors": 8}


@pytest.fixture(scope="module")
def train() -> sp.csr_matrix:
    rng = np.random.default_rng(4)
    mask = rng.random((60, 30)) < 0.3 * np.linspace(0.2, 1.8, 30)  # popular items to the right
    rows, cols = np.nonzero(mask)
    vals = rng.integers(1, 6, rows.size).astype(np.float64)
    return sp.csr_matrix((vals, (rows, cols)), shape=mask.shape)


def test_max_sampled_reaches_warp(train):
    users = np.arange(train.shape[0])
    default = LightFMRanker(**FAST).fit(train, seed=1).score(users)
    explicit = LightFMRanker(**FAST, max_sampled=10).fit(train, seed=1).score(users)
    np.testing.assert_array_equal(default, explicit)
    other = LightFMRanker(**FAST, max_sampled=1).fit(train, seed=1).score(users)
    assert not np.array_equal(other, default)


def test_popularity_propensities_hand_computed():
    got = popularity_propensities(np.array([0, 1, 4, 16]), 0.5, min_propensity=0.1)
    np.testing.assert_allclose(got, [0.1, 0.25, 0.5, 1.0])
    np.testing.assert_array_equal(popularity_propensities(np.zeros(3), 0.5, min_propensity=0.1), 1)


def test_ips_weights_are_inverse_propensities_with_mean_one(train):
    model = IPSMF(**FAST).fit(train, seed=0)
    pos = (train > 3).astype(np.float32).tocoo()
    weights = model._sample_weight(train, pos)
    np.testing.assert_array_equal(weights.row, pos.row)
    np.testing.assert_array_equal(weights.col, pos.col)
    assert weights.data.mean() == pytest.approx(1.0, rel=1e-5)
    inv = 1 / model.propensities_[pos.col]
    np.testing.assert_allclose(weights.data, inv / inv.mean(), rtol=1e-5)
    counts = np.bincount(pos.col, minlength=train.shape[1])
    assert np.corrcoef(counts[pos.col], weights.data)[0, 1] < 0  # popular items weigh less


def test_ips_with_exponent_zero_is_unweighted(train):
    users = np.arange(train.shape[0])
    flat = IPSMF(**FAST, propensity_exponent=0.0).fit(train, seed=2).score(users)
    np.testing.assert_allclose(
        flat, LightFMRanker(**FAST).fit(train, seed=2).score(users), atol=1e-6
    )
    ips = IPSMF(**FAST).fit(train, seed=2).score(users)
    assert not np.allclose(ips, flat)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_sampled": 0}, "max_sampled"),
        ({"propensity_exponent": -1}, "propensity_exponent"),
        ({"min_propensity": 0}, "min_propensity"),
        ({"min_propensity": 2.0}, "min_propensity must be <= 1"),
    ],
)
def test_invalid_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        make_recommender("mf_ips", **params)
