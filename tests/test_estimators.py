"""Naive / IPS / SNIPS: agreement of the scalar and batched forms, unbiasedness, bad input."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.synthetic import generate_synthetic
from debiaseval.evaluation.loss_estimators import estimate, evaluate, ips, naive, snips
from debiaseval.evaluation.losses import loss_matrix


def test_batched_estimates_match_the_scalar_ones():
    rng = np.random.default_rng(1)
    delta = rng.random((3, 40))
    p = rng.uniform(0.05, 1.0, 40)
    out = estimate(delta, p, 1000)
    for row in range(3):
        assert out["naive"][row] == pytest.approx(naive(delta[row]))
        assert out["ips"][row] == pytest.approx(ips(delta[row], p, 1000))
        assert out["snips"][row] == pytest.approx(snips(delta[row], p))
    assert list(estimate(delta[0], p, 1000, estimators=["snips"])) == ["snips"]


@pytest.mark.parametrize("value", [0.01, 0.3, 1.0])
def test_snips_equals_naive_with_uniform_propensities(value):
    delta = np.random.default_rng(2).exponential(size=(4, 25))
    out = estimate(delta, np.full(25, value), 10_000)
    np.testing.assert_allclose(out["snips"], out["naive"], rtol=1e-12)
    assert snips(delta[0], np.full(25, value)) == pytest.approx(naive(delta[0]), rel=1e-12)


@pytest.mark.parametrize("metric", ["mae", "dcg@10"])
def test_ips_is_unbiased_with_known_propensities_and_naive_is_not(metric):
    # 400 draws of O ~ Bernoulli(P) on a synthetic truth; the COARSENED predictions.
    # IPS: mean over draws within 3 standard errors of the true value; Naive: far outside.
    data = generate_synthetic(n_users=120, n_items=100, density=0.1, alpha=0.25, seed=4)
    y = data.ratings.astype(float)
    delta = loss_matrix(metric, y, np.where(y <= 3, 3.0, 4.0)).ravel()
    truth = delta.mean()
    p = data.propensities.astype(np.float64).ravel()
    rng = np.random.default_rng(5)
    draws = np.array(
        [
            list(estimate(delta[idx], p[idx], delta.size).values())
            for idx in (np.flatnonzero(rng.random(p.size) < p) for _ in range(400))
        ]
    )
    mean, se = draws.mean(axis=0), draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    naive_z, ips_z = (mean[:2] - truth) / se[:2]
    assert abs(ips_z) < 3, (mean, truth, se)
    assert abs(naive_z) > 10, (mean, truth, se)


def test_evaluate_from_pairs_table_and_model():
    pred = np.array([[4.0, 2.0, 3.0], [2.0, 3.0, 5.0]])
    pairs = pd.DataFrame({"user": [0, 1, 1], "item": [0, 1, 2], "rating": [5.0, 4.0, 1.0]})
    table = pd.DataFrame({"rating": [1.0, 4.0, 5.0], "propensity": [0.1, 0.5, 0.8]})
    out = evaluate("mae", pairs, table, pred, n_users=2, n_items=3)
    delta, p = np.array([1.0, 1.0, 4.0]), np.array([0.8, 0.5, 0.1])
    assert out == pytest.approx(
        {"naive": delta.mean(), "ips": (delta / p).sum() / 6, "snips": snips(delta, p)}
    )

    class Model:
        def score(self, users):
            return pred[users]

    by_model = evaluate("mae", pairs, p, Model(), n_users=2, n_items=3)
    assert by_model == out
    # DCG@1 of user 0's top item 0 (gain 5) and user 1's top item 2 (gain 1)
    dcg = evaluate("dcg@1", pairs, p, pred, n_users=2, n_items=3, estimators=["naive"])
    assert dcg["naive"] == pytest.approx((3 * 5 + 0 + 3 * 1) / 3)


def test_bad_input():
    pairs = pd.DataFrame({"user": [0, 1], "item": [0, 1], "rating": [5.0, 4.0]})
    pred = np.ones((2, 2))
    for bad in ([0.5, 0.0], [0.5, -0.1], [1.2, 0.5], [np.nan, 0.5]):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            evaluate("mae", pairs, np.array(bad), pred, n_users=2, n_items=2)
    with pytest.raises(ValueError, match="no propensity for 1 of 2 pairs"):
        table = pd.DataFrame({"user": [0], "item": [0], "propensity": [0.5]})
        evaluate("mae", pairs, table, pred, n_users=2, n_items=2)
    with pytest.raises(ValueError, match="NaN"):
        evaluate("mae", pairs.assign(rating=[5.0, np.nan]), np.ones(2), pred, n_users=2, n_items=2)
    with pytest.raises(ValueError, match="more than once"):
        evaluate("mae", pd.concat([pairs, pairs]), np.ones(4), pred, n_users=2, n_items=2)
    with pytest.raises(ValueError, match="shape"):
        evaluate("mae", pairs, np.ones(2), np.ones((2, 3)), n_users=2, n_items=2)
    with pytest.raises(ValueError, match="shape"):
        ips(np.ones(3), np.ones(2), 10)
    with pytest.raises(ValueError, match="unknown estimator"):
        estimate(np.ones(3), np.ones(3), 10, estimators=["dr"])
    with pytest.raises(ValueError, match="at least one observed pair"):
        estimate(np.ones((2, 0)), np.ones(0), 10)
