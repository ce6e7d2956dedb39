"""Propensity models: Naive Bayes, logistic regression, popularity, known, clipping, lookup."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from debiaseval.data.synthetic import generate_synthetic
from debiaseval.debiasing import propensities as prop


def test_naive_bayes_hand_computed():
    # 2 users x 5 items = 10 pairs; 4 observed (two 5s, a 4, a 1); MAR marginal known
    p_obs = 4 / 10
    with pytest.raises(ValueError, match=r"2 value\(s\) do not"):  # levels 2, 3 unobserved
        prop.naive_bayes([5, 5, 4, 1], [1, 1, 2, 3, 5], n_users=2, n_items=5, smoothing=0)
    table = prop.naive_bayes([5, 5, 4, 1, 2, 3], [1, 1, 2, 3, 5], n_users=2, n_items=5, smoothing=0)
    # level 4 is absent from MAR: P(Y=4) = 0 makes the quotient infinite, capped at 1
    np.testing.assert_allclose(
        table["propensity"],
        [1 / 6 * 0.6 / 0.4, 1 / 6 * 0.6 / 0.2, 1 / 6 * 0.6 / 0.2, 1, 2 / 6 * 0.6 / 0.2],
    )
    smoothed = prop.naive_bayes([5, 5, 4, 1], [1, 1, 2, 3, 5], n_users=2, n_items=5, smoothing=1)
    np.testing.assert_allclose(
        smoothed["propensity"],
        np.minimum(1, (np.array([2, 1, 1, 2, 3]) / 9) * p_obs / (np.array([3, 2, 2, 1, 2]) / 10)),
    )
    assert list(table.columns) == ["rating", "propensity", "p_rating_observed", "p_rating"]
    assert table["rating"].dtype == np.float32


def test_naive_bayes_recovers_true_propensities_on_synthetic():
    # large MAR sample (half of every user's items): the estimate of P(O=1 | Y=r)
    # must be within 4 standard errors of the truth E[P_ui | Y_ui = r] per level
    data = generate_synthetic(n_users=600, n_items=200, n_mar=100, alpha=0.25, seed=11)
    mnar, mar = data.mnar_frame(), data.mar_frame()
    table = prop.naive_bayes(mnar["rating"], mar["rating"], n_users=600, n_items=200, smoothing=1.0)
    levels = np.arange(1, 6)
    truth = np.array([data.propensities[data.ratings == r].mean() for r in levels])
    n_obs = np.array([(mnar["rating"] == r).sum() for r in levels])
    n_mar = np.array([(mar["rating"] == r).sum() for r in levels])
    rel_se = np.sqrt(1 / n_obs + 1 / n_mar)  # Poisson counts in numerator and denominator
    rel_err = table["propensity"].to_numpy() / truth - 1
    assert np.all(np.abs(rel_err) < 4 * rel_se), (rel_err, rel_se)
    assert np.all(np.diff(table["propensity"].to_numpy()[:4]) > 0)  # alpha < 1: rising in Y


def test_naive_bayes_bad_input():
    with pytest.raises(ValueError, match="NaN ratings"):
        prop.naive_bayes([1, np.nan], [1], n_users=2, n_items=2)
    with pytest.raises(ValueError, match=r"rating 6, expected one of"):
        prop.naive_bayes([1, 2], [6], n_users=2, n_items=2)
    with pytest.raises(ValueError, match="strictly increasing"):
        prop.naive_bayes([1], [1], n_users=2, n_items=2, levels=[2, 1])


def test_popularity_hand_computed():
    pairs = pd.DataFrame({"user": [0, 1, 2, 0], "item": [0, 0, 0, 1]})
    table = prop.popularity(pairs, n_users=3, n_items=3, smoothing=1)
    np.testing.assert_allclose(table["propensity"], [4 / 5, 2 / 5, 1 / 5])
    with pytest.raises(ValueError, match="smoothing > 0"):
        prop.popularity(pairs, n_users=3, n_items=3, smoothing=0)


def _logistic_world(seed=0, n_users=150, n_items=120):
    rng = np.random.default_rng(seed)
    xu = rng.integers(0, 2, (n_users, 3)).astype(float)
    xi = rng.integers(0, 2, (n_items, 2)).astype(float)
    w_cross = np.array([[1.5, -1.0], [0.0, 1.0], [-1.0, 0.5]])
    z = -2.5 + 0.3 * rng.standard_normal(n_users)[:, None] + xu @ w_cross @ xi.T
    z = z + 0.3 * rng.standard_normal(n_items)[None, :]
    p = expit(z)
    users, items = np.nonzero(rng.random(p.shape) < p)
    return xu, xi, p, pd.DataFrame({"user": users, "item": items})


def test_logistic_recovers_propensities_and_matches_the_observed_count():
    xu, xi, p, pairs = _logistic_world()
    table = prop.logistic(pairs, xu, xi, l2=1.0)
    assert len(table) == p.size and list(table.columns) == ["user", "item", "propensity"]
    fitted = table["propensity"].to_numpy().reshape(p.shape)
    # unpenalised intercept: the score equation makes the fitted total equal the count
    assert fitted.sum() == pytest.approx(len(pairs), rel=1e-4)
    corr = np.corrcoef(logit(fitted).ravel(), logit(p).ravel())[0, 1]
    assert corr > 0.9
    # the cross features matter: without them the fit is clearly worse
    plain = prop.logistic(pairs, xu, xi, l2=1.0, cross=False)["propensity"].to_numpy()
    assert np.abs(fitted - p).mean() < 0.8 * np.abs(plain.reshape(p.shape) - p).mean()


def test_logistic_bad_input():
    xu, xi, _, pairs = _logistic_world(n_users=20, n_items=10)
    with pytest.raises(ValueError, match="NaN"):
        prop.logistic(pairs, np.full_like(xu, np.nan), xi)
    with pytest.raises(ValueError, match=r"item ids must lie in \[0, 5\)"):
        prop.logistic(pairs, xu, xi[:5])
    with pytest.raises(ValueError, match="more than once"):
        prop.logistic(pd.concat([pairs, pairs.iloc[:1]]), xu, xi)


def test_known_lookup_and_clip():
    pairs = pd.DataFrame(
        {
            "user": [1, 0, 0],
            "item": [0, 2, 1],
            "rating": [5.0, 1.0, 3.0],
            "propensity": [0.5, 0.1, 0.2],
        }
    )
    table = prop.known(pairs)
    assert table["user"].tolist() == [0, 0, 1] and table["item"].tolist() == [1, 2, 0]
    np.testing.assert_allclose(prop.lookup(table, pairs), [0.5, 0.1, 0.2])
    clipped = prop.clip(table, 0.15)
    np.testing.assert_allclose(clipped["propensity"], [0.2, 0.15, 0.5])
    np.testing.assert_allclose(prop.clip(np.array([0.01, 1.0]), 0.1), [0.1, 1.0])
    nb = pd.DataFrame({"rating": np.float32([1, 3, 5]), "propensity": [0.1, 0.2, 0.3]})
    np.testing.assert_allclose(prop.lookup(nb, pairs), [0.3, 0.1, 0.2])


def test_bad_propensities_and_missing_pairs():
    pairs = pd.DataFrame({"user": [0, 1], "item": [0, 0], "propensity": [0.5, 0.0]})
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\]"):
        prop.known(pairs)
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\]"):
        prop.known(pairs.assign(propensity=[0.5, 1.2]))
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\]"):
        prop.known(pairs.assign(propensity=[0.5, np.nan]))
    table = prop.known(pairs.assign(propensity=[0.5, 0.4]))
    with pytest.raises(ValueError, match="no propensity for 1 of 2 pairs"):
        prop.lookup(table, pd.DataFrame({"user": [0, 2], "item": [0, 0]}))
    nb = pd.DataFrame({"rating": [1.0, 5.0], "propensity": [0.1, 0.3]})
    with pytest.raises(ValueError, match="NaN ratings"):
        prop.lookup(nb, pd.DataFrame({"rating": [1.0, np.nan]}))
    with pytest.raises(ValueError, match="lack the column"):
        prop.lookup(nb, pd.DataFrame({"user": [0]}))
    with pytest.raises(ValueError, match=r"clipping floor"):
        prop.clip(np.array([0.5]), 0.0)


@pytest.mark.slow
def test_logistic_cv_chooses_l2_by_held_out_log_loss():
    """k-fold CV over every pair: a huge l2 flattens the cross weights and a tiny one
    overfits the per-user and per-item offsets; the held-out log-loss prefers neither."""
    xu, xi, p, pairs = _logistic_world()
    grid = [1e-4, 3.0, 1e5]
    best, table = prop.logistic_cv(pairs, xu, xi, l2=grid, n_folds=3, rng=np.random.default_rng(0))
    assert list(table.columns) == ["l2", "fold", "log_loss", "selected"]
    assert len(table) == 9 and table["selected"].sum() == 3
    means = table.groupby("l2", sort=False)["log_loss"].mean()
    assert best == grid[int(np.argmin(means.to_numpy()))] == 3.0, means
    # the held-out log-loss is about the true propensities' own (their entropy)
    truth = float(np.mean(-(p * np.log(p) + (1 - p) * np.log1p(-p))))
    assert means[3.0] == pytest.approx(truth, rel=0.05)
    again, _ = prop.logistic_cv(pairs, xu, xi, l2=grid, n_folds=3, rng=np.random.default_rng(0))
    assert again == best
    with pytest.raises(ValueError, match="n_folds"):
        prop.logistic_cv(pairs, xu, xi, l2=grid, n_folds=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="empty"):
        prop.logistic_cv(pairs, xu, xi, l2=[], n_folds=3, rng=np.random.default_rng(0))
