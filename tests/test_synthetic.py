"""The synthetic generator: marginal, density, MCAR limit, determinism."""

import numpy as np
import pytest

from debiaseval.data.synthetic import generate_synthetic, observation_scale


def test_marginal_and_density():
    data = generate_synthetic(n_users=200, n_items=300, density=0.05, seed=1)
    freq = np.bincount(data.ratings.ravel(), minlength=6)[1:] / data.ratings.size
    np.testing.assert_allclose(freq, [0.526, 0.242, 0.144, 0.062, 0.026], atol=2e-3)
    # expected count is exactly density*U*I; the realised one within 5 sd
    assert data.propensities.sum() == pytest.approx(0.05 * 200 * 300, rel=1e-4)
    n = data.observed.sum()
    sd = np.sqrt((data.propensities * (1 - data.propensities)).sum())
    assert abs(n - 3000) < 5 * sd


def test_mnar_favours_high_ratings_and_alpha_one_is_mcar():
    biased = generate_synthetic(alpha=0.25, seed=2)
    observed = biased.ratings[biased.observed]
    assert observed.mean() > biased.ratings.mean() + 0.5
    mcar = generate_synthetic(alpha=1.0, seed=2)
    assert np.ptp(mcar.propensities) == 0


def test_mar_items_are_distinct_and_uniform():
    data = generate_synthetic(n_users=2000, n_items=50, n_mar=5, seed=3)
    assert all(len(set(row)) == 5 for row in data.mar_items[:100])
    counts = np.bincount(data.mar_items.ravel(), minlength=50)
    expected = 2000 * 5 / 50
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 100  # 49 dof: p < 1e-5 above 100


def test_deterministic_and_raw_form():
    a = generate_synthetic(seed=5).to_raw()
    b = generate_synthetic(seed=5).to_raw()
    assert a.mnar.equals(b.mnar) and a.mar.equals(b.mar)
    assert len(a.mar) == 300 * 20
    assert a.propensities["propensity"].between(0, 1).all()


def test_observation_scale_respects_clipping():
    base = np.array([1.0, 0.1])
    counts = np.array([10, 10])
    k = observation_scale(base, counts, 15.0)
    assert np.dot(counts, np.minimum(1, k * base)) == pytest.approx(15.0)
    with pytest.raises(ValueError):
        observation_scale(base, counts, 20.0)


def test_bad_parameters():
    with pytest.raises(ValueError, match="alpha"):
        generate_synthetic(alpha=0.0)
    with pytest.raises(ValueError, match="n_mar"):
        generate_synthetic(n_items=10, n_mar=11)
