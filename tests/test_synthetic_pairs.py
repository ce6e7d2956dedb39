"""The O(pairs) synthetic sampler: the dense generator's model, known truth, switch by size."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

import debiaseval.data.synthetic as synthetic
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.data.synthetic_dataset import synthetic_raw
from debiaseval.data.synthetic_pairs import (
    _bernoulli_users,
    _mar_items,
    _mixture_quantiles,
    pair_noise,
    sample_synthetic,
)

MARGINAL = [0.526, 0.242, 0.144, 0.062, 0.026]


def test_bernoulli_users_hits_every_user_with_its_probability():
    rng = np.random.default_rng(0)
    p = np.array([1.0, 0.5, 0.01, 1e-6])
    owner, users = _bernoulli_users(p, 20_000, rng)
    assert (users[owner == 0] == np.arange(20_000)).all()  # p = 1: every user once
    for j, pj in enumerate(p):
        mine = users[owner == j]
        assert (
            (np.diff(mine) > 0).all() and mine.min(initial=0) >= 0 and mine.max(initial=0) < 20_000
        )
        sd = np.sqrt(20_000 * pj * (1 - pj))
        assert abs(mine.size - 20_000 * pj) <= 5 * sd + 1


def test_mar_rows_are_distinct_sorted_and_uniform():
    rows = _mar_items(4000, 30, 6, np.random.default_rng(1))
    assert (np.diff(rows, axis=1) > 0).all()
    counts = np.bincount(rows.ravel(), minlength=30)
    expected = 4000 * 6 / 30
    assert ((counts - expected) ** 2 / expected).sum() < 80  # 29 dof: p < 1e-5 above 80


def test_mixture_quantiles_solve_the_mixture_cdf():
    mean, sd = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 0.5, 2.0])
    cuts = np.array([0.1, 0.5, 0.9])
    q = _mixture_quantiles(mean, sd, cuts)
    np.testing.assert_allclose(ndtr((q[:, None] - mean) / sd).mean(axis=1), cuts, atol=1e-12)


def test_pair_noise_is_a_standard_normal_function_of_the_pair():
    users = np.repeat(np.arange(300), 200)
    items = np.tile(np.arange(200), 300)
    z = pair_noise(users, items, 200, seed=4)
    np.testing.assert_array_equal(z[::7], pair_noise(users[::7], items[::7], 200, seed=4))
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    assert not np.array_equal(z, pair_noise(users, items, 200, seed=5))


def test_sample_matches_the_model():
    data = sample_synthetic(n_users=4000, n_items=500, density=0.02, n_mar=10, seed=3)
    mnar, mar = data.mnar_frame(), data.mar_frame()
    # expected MNAR count density·U·I (model's expectation; 5 sd of a Poisson-binomial)
    assert abs(len(mnar) - 40_000) < 5 * np.sqrt(40_000)
    for frame in (mnar, mar):
        keys = frame["user"].to_numpy() * 500 + frame["item"].to_numpy()
        assert (np.diff(keys) > 0).all()  # sorted by user, item; no duplicates
    assert len(mar) == 4000 * 10
    freq = mar["rating"].value_counts(normalize=True).sort_index().to_numpy()
    np.testing.assert_allclose(freq, MARGINAL, atol=0.012)  # MAR ratings follow the marginal
    assert mnar["rating"].mean() > mar["rating"].mean() + 0.5  # MNAR favours high ratings
    # propensity = min(1, k α^max(0, 4 − r) q_i^(1−α)): within an item it scales with α^(4 − r)
    one = mnar[mnar["item"] == mnar["item"].mode()[0]].groupby("rating")["propensity"].first()
    assert one.loc[3] < 1  # ratings 1..3 unclipped
    low = one[one.index < 3]
    np.testing.assert_allclose(
        low.to_numpy() / one.loc[3], 0.25 ** (3 - low.index.to_numpy()), rtol=1e-6
    )
    both = mnar.merge(mar, on=["user", "item"], suffixes=("_mnar", "_mar"))
    assert (both["rating_mnar"] == both["rating_mar"]).all()  # Y is one matrix


def test_sample_is_deterministic_and_raw_form_is_complete():
    kw = dict(n_users=500, n_items=300, density=0.05, n_mar=5, seed=9)
    a, b = sample_synthetic(**kw), sample_synthetic(**kw)
    pd.testing.assert_frame_equal(a.mnar, b.mnar)
    pd.testing.assert_frame_equal(a.mar, b.mar)
    raw = a.to_raw()
    pairs = pd.concat([a.mnar, a.mar])[["user", "item"]].drop_duplicates()
    assert len(raw.propensities) == len(pairs)
    assert raw.propensities["propensity"].between(0, 1).all()
    assert list(raw.mnar.columns) == ["user", "item", "rating"]
    with pytest.raises(ValueError, match="alpha"):
        sample_synthetic(alpha=0.0)


def test_synthetic_raw_switches_by_size(monkeypatch):
    kw = dict(n_users=60, n_items=40, density=0.1, n_mar=5, seed=2)
    small = synthetic_raw(**kw)
    dense = generate_synthetic(**kw).to_raw()
    pd.testing.assert_frame_equal(small.mnar, dense.mnar)  # existing configs: unchanged
    pd.testing.assert_frame_equal(small.propensities, dense.propensities)
    monkeypatch.setattr(synthetic, "DENSE_CELLS", 60 * 40 - 1)
    large = synthetic_raw(**kw)
    pd.testing.assert_frame_equal(large.mar, sample_synthetic(**kw).to_raw().mar)
