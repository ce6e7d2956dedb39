"""Imputations of DR: what each estimates, and their recalibration on a MAR sample."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.estimation.imputation import (
    IMPUTATIONS,
    ItemRate,
    LogisticMF,
    calibrate,
    candidate_rate,
    item_rate,
    logistic_mf,
    platt,
)


def _world(seed=0, n_users=400, n_items=60):
    """Relevance P(y = 1) = σ(user + item + a low-rank term), observed with a probability that
    grows with relevance (MNAR): P(o) = 0.02 + 0.2·y."""
    rng = np.random.default_rng(seed)
    logits = (
        rng.normal(-1.5, 0.7, (n_users, 1))
        + rng.normal(0, 0.8, (1, n_items))
        + rng.normal(size=(n_users, 2)) @ rng.normal(size=(2, n_items)) * 0.6
    )
    q = 1 / (1 + np.exp(-logits))
    y = rng.random(q.shape) < q
    pi = 0.02 + 0.2 * y
    observed = rng.random(q.shape) < pi
    u, i = np.nonzero(observed)
    train = pd.DataFrame({"user": u, "item": i, "rating": np.where(y[u, i], 5.0, 1.0)})
    return q, y, pi[u, i], train


def test_the_item_level_imputations_estimate_different_things():
    """With the true inclusion probabilities (which depend on the label), candidate_rate
    estimates an item's relevance among its candidates; item_rate, self-normalised over the
    rated pairs, its rate over all pairs, the rated ones (mostly positive) included. With
    propensities of the item alone, both are the share of positives among the rated pairs,
    three times the candidates' rate: the weights cannot undo a selection they do not model."""
    q, y, pi, train = _world()
    n_users, n_items = q.shape
    seen = np.zeros(q.shape, dtype=bool)
    seen[train["user"], train["item"]] = True
    candidates = np.nanmean(np.where(seen, np.nan, y.astype(float)), axis=0)
    sizes = {"n_users": n_users, "n_items": n_items, "positive_threshold": 3.0}
    cand = candidate_rate(train, pi, **sizes).rates
    rated = item_rate(train, pi, **sizes).rates
    assert np.abs(cand - candidates).mean() < 0.05
    assert np.abs(rated - y.mean(axis=0)).mean() < np.abs(rated - candidates).mean()
    per_item = np.bincount(train["item"], minlength=n_items)[train["item"]] / n_users
    share = item_rate(train, per_item, **sizes, prior=0).rates
    np.testing.assert_allclose(candidate_rate(train, per_item, **sizes, prior=0).rates, share)
    positives = np.bincount(train["item"], weights=train["rating"] > 3, minlength=n_items)
    np.testing.assert_allclose(share, positives / np.bincount(train["item"], minlength=n_items))
    assert share.mean() > 3 * candidates.mean()


def test_logistic_mf_with_ips_weights_estimates_the_relevance_of_a_candidate():
    """Fitted on the MNAR pairs (76% positive) with weights 1/π, the logistic MF's imputed mass
    over the candidates is within 15% of their relevant count (about 4 rated pairs a user:
    the regularised fit keeps a little of the selection); unweighted, it is 3.5 times too
    large. Its probabilities lie strictly inside (0, 1) and follow P(y = 1)."""
    q, y, pi, train = _world(1)
    n_users, n_items = q.shape
    sizes = {"n_users": n_users, "n_items": n_items, "positive_threshold": 3.0}
    weighted = logistic_mf(train, pi, **sizes)
    plain = logistic_mf(train, np.full(len(train), 0.1), **sizes)
    mass = weighted.candidate_mass(train["user"], train["item"], n_users).sum()
    seen = np.zeros(q.shape, dtype=bool)
    seen[train["user"], train["item"]] = True
    relevant = y[~seen].sum()
    assert mass / relevant == pytest.approx(1.0, abs=0.15)
    assert plain.candidate_mass(train["user"], train["item"], n_users).sum() / relevant > 3
    every = weighted.pairs(
        np.repeat(np.arange(n_users), n_items), np.tile(np.arange(n_items), n_users)
    )
    assert 0 < every.min() and every.max() < 1
    assert np.corrcoef(every[~seen.ravel()], q.ravel()[~seen.ravel()])[0, 1] > 0.4
    # the per-user candidate mass is the dense sum
    dense = every.reshape(n_users, n_items)
    np.testing.assert_allclose(
        weighted.candidate_mass(train["user"], train["item"], n_users),
        np.where(seen, 0.0, dense).sum(axis=1),
    )
    assert set(IMPUTATIONS) == {"candidate_rate", "item_rate", "logistic_mf"}


def test_a_logistic_mf_survives_parquet(tmp_path):
    from debiaseval.io.files import read_parquet, write_parquet

    rng = np.random.default_rng(0)
    model = LogisticMF(
        0.3,
        rng.normal(size=4),
        rng.normal(size=3),
        rng.normal(size=(4, 2)),
        rng.normal(size=(3, 2)),
        intercept=-0.5,
        slope=0.7,
    )
    write_parquet(model.to_frame(), tmp_path / "m.parquet")
    back = LogisticMF.from_frame(read_parquet(tmp_path / "m.parquet"))
    users, items = np.array([0, 3, 2]), np.array([2, 0, 1])
    np.testing.assert_array_equal(back.pairs(users, items), model.pairs(users, items))


def test_platt_recalibrates_on_a_mar_sample():
    """A rate twice too high everywhere: Platt's link brings its mean on the MAR pairs to their
    positive rate; constant labels leave the identity."""
    rng = np.random.default_rng(0)
    truth = rng.uniform(0.05, 0.3, 50)
    items = rng.integers(0, 50, 5000)
    labels = (rng.random(5000) < truth[items]).astype(float)
    imputation = ItemRate(np.clip(2 * truth, 0, 1))
    intercept, _slope = platt(imputation.pairs(None, items), labels)
    assert intercept < 0
    fixed = calibrate(imputation, np.zeros_like(items), items, labels)
    assert isinstance(fixed, ItemRate)
    assert fixed.pairs(None, items).mean() == pytest.approx(labels.mean(), abs=0.005)
    assert np.abs(fixed.rates - truth).mean() < np.abs(imputation.rates - truth).mean() / 3
    assert platt(np.full(10, 0.3), np.ones(10)) == (0.0, 1.0)
    model = LogisticMF(0.0, np.zeros(2), np.zeros(3), np.zeros((2, 1)), np.zeros((3, 1)))
    moved = calibrate(model, np.array([0, 1]), np.array([0, 1]), np.array([0.0, 1.0]))
    assert isinstance(moved, LogisticMF)
