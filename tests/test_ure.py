"""Tests of URE@K, traditional and true Recall@K ([URE24], docs/experiments/e5.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from debiaseval.evaluation.ure import (
    in_top_k,
    kth_largest,
    mean_recall,
    recall_estimates,
    traditional_recall_at_k,
    true_recall_at_k,
    ure_at_k,
)
from debiaseval.recommenders import make_recommender
from debiaseval.recommenders.ranking import top_k_indices

NINF = -np.inf
# user 0: items 1, 2, 3 tie at 0.5; item 5 is a training item (-inf).
# user 1: no exposed positive -> NaN.
SCORES = np.array(
    [
        [0.9, 0.5, 0.5, 0.5, 0.1, NINF],
        [0.3, 0.2, 0.1, 0.0, -0.1, -0.2],
    ]
)
KS = [1, 2, 3, 4, 5, 6]


def test_threshold_is_the_k_plus_first_score():
    np.testing.assert_array_equal(kth_largest(SCORES, KS)[0], [0.5, 0.5, 0.5, 0.1, NINF, NINF])
    np.testing.assert_array_equal(kth_largest(SCORES, [1, 5])[1], [0.2, -0.2])


def test_ure_hand_computed_with_ties():
    # R_0+ = {2, 4, 5}. rank ties: top1 {0}, top2 {0,1}, top3 {0,1,2}, top4 {0..3},
    # top5/top6 {0..4}; item 5 (-inf) never counts.
    rows, cols = np.array([0, 0, 0]), np.array([2, 4, 5])
    got = ure_at_k(SCORES, rows, cols, KS)
    np.testing.assert_allclose(got[0], [0, 0, 1 / 3, 1 / 3, 2 / 3, 2 / 3])
    assert np.isnan(got[1]).all()
    # strict: items equal to s_K = 0.5 do not count for K = 1, 2, 3
    strict = ure_at_k(SCORES, rows, cols, KS, ties="strict")
    np.testing.assert_allclose(strict[0], [0, 0, 0, 1 / 3, 2 / 3, 2 / 3])


def test_traditional_ranks_only_the_exposed_set():
    # R_0 = {1, 2, 4, 5}, positives {2, 4, 5}: order 1, 2 (tie by id), 4, 5 (-inf)
    rows, cols = np.array([0, 0, 0, 0, 1, 1]), np.array([1, 2, 4, 5, 0, 3])
    positive = np.array([False, True, True, True, False, False])
    got = traditional_recall_at_k(SCORES, rows, cols, positive, [1, 2, 3, 4])
    np.testing.assert_allclose(got[0], [0, 1 / 3, 2 / 3, 2 / 3])
    assert np.isnan(got[1]).all()


def test_true_recall_matches_the_project_ranking_with_ties():
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, size=(40, 25)).astype(np.float64)  # many ties
    scores[rng.random(scores.shape) < 0.1] = NINF
    rows, cols = np.nonzero(np.isfinite(scores))
    for k in (1, 3, 7, 24):
        member = in_top_k(scores, rows, cols, [k])[:, 0]
        top = top_k_indices(scores, k)
        expected = np.zeros(scores.shape, dtype=bool)
        np.put_along_axis(expected, top, True, axis=1)
        expected &= np.isfinite(scores)
        np.testing.assert_array_equal(member, expected[rows, cols])
        assert (np.bincount(rows[member], minlength=40) == np.minimum(k, expected.sum(1))).all()


def test_bad_input():
    with pytest.raises(ValueError, match="ties must be one of"):
        in_top_k(SCORES, [0], [0], [1], ties="average")
    with pytest.raises(ValueError, match="ks must be"):
        ure_at_k(SCORES, [0], [0], [0])
    with pytest.raises(ValueError, match="NaN"):
        ure_at_k(np.full((1, 2), np.nan), [0], [0], [1])
    with pytest.raises(ValueError, match="within the scores' shape"):
        ure_at_k(SCORES, [0], [6], [1])


def _synthetic_truth(rng, n_users=150, n_items=200):
    """Positives and a model whose scores are informative but noisy."""
    affinity = rng.standard_normal((n_users, n_items))
    positive = affinity + 0.3 * rng.standard_normal(affinity.shape) > 1.0
    scores = affinity + rng.standard_normal(affinity.shape)
    return positive, scores


def test_ure_is_unbiased_for_true_recall_and_traditional_is_not():
    """Over many uniform draws of R_u (n = 20 per user), the mean per-draw error of URE
    (mean over users with R_u+ != {} of URE@K(u) - true Recall@K(u)) is within 3
    standard errors of 0; the traditional estimate is off by far more."""
    rng = np.random.default_rng(0)
    positive, scores = _synthetic_truth(rng)
    n_users, n_items = positive.shape
    ks = [5, 10, 20]
    t_rows, t_cols = np.nonzero(positive)
    truth = true_recall_at_k(scores, t_rows, t_cols, ks)
    n_exposed, n_draws = 20, 400
    err_ure, err_trad = [], []
    for _ in range(n_draws):
        keys = rng.random((n_users, n_items))
        items = np.argpartition(keys, n_exposed, axis=1)[:, :n_exposed]
        rows = np.repeat(np.arange(n_users), n_exposed)
        cols = items.ravel()
        lab = positive[rows, cols]
        ure = ure_at_k(scores, rows[lab], cols[lab], ks)
        trad = traditional_recall_at_k(scores, rows, cols, lab, ks)
        defined = ~np.isnan(ure[:, 0])
        err_ure.append(np.mean(ure[defined] - truth[defined], axis=0))
        err_trad.append(np.mean(trad[defined] - truth[defined], axis=0))
    for errs, unbiased in ((np.array(err_ure), True), (np.array(err_trad), False)):
        mean = errs.mean(axis=0)
        se = errs.std(axis=0, ddof=1) / np.sqrt(n_draws)
        if unbiased:
            assert (np.abs(mean) < 3 * se).all(), (mean, se)
        else:
            assert (np.abs(mean) > 10 * se).all() and (mean > 0.1).all(), (mean, se)


def _frame(users, items, ratings):
    return pd.DataFrame({"user": users, "item": items, "rating": np.asarray(ratings, float)})


def test_recall_estimates_drives_the_kernels_in_batches():
    rng = np.random.default_rng(1)
    n_users, n_items = 30, 40
    full = rng.integers(1, 6, size=(n_users, n_items)).astype(float)
    train_mask = rng.random(full.shape) < 0.2
    tu, ti = np.nonzero(train_mask)
    train = sp.csr_matrix((full[tu, ti], (tu, ti)), shape=full.shape)
    model = make_recommender("pospop").fit(train, seed=0)
    keys = np.where(train_mask, 2.0, rng.random(full.shape))
    exp_items = np.argsort(keys, axis=1)[:, :8]
    eu = np.repeat(np.arange(n_users), 8)
    exposed = _frame(eu, exp_items.ravel(), full[eu, exp_items.ravel()])
    fu, fi = np.indices(full.shape).reshape(2, -1)
    truth = _frame(fu, fi, full.ravel())
    one = recall_estimates(model, train, exposed, [3, 10], truth=truth, positive_threshold=3)
    many = recall_estimates(
        model, train, exposed, [3, 10], truth=truth, positive_threshold=3, batch_size=7
    )
    pd.testing.assert_frame_equal(one, many)
    # recompute by hand for all users at once
    scores = model.score(np.arange(n_users))
    scores[train_mask] = NINF
    pos = (full > 3) & ~train_mask
    expected = true_recall_at_k(scores, *np.nonzero(pos), [3, 10])
    np.testing.assert_allclose(one["true_recall"].to_numpy(), expected.ravel())
    lab = exposed["rating"].to_numpy() > 3
    expected = ure_at_k(scores, eu[lab], exp_items.ravel()[lab], [3, 10])
    np.testing.assert_allclose(one["ure"].to_numpy(), expected.ravel())
    means = mean_recall(one)
    assert list(means.columns) == [
        "k",
        "true_recall",
        "traditional_recall",
        "ure",
        "n_users_true",
        "n_users_exposed",
    ]
    no_truth = recall_estimates(model, train, exposed, [3], positive_threshold=3)
    assert no_truth["true_recall"].isna().all()


def test_ure_pass_on_a_kuairec_shaped_case_is_fast():
    """All 1,411 users x 3,327 items in one vectorised pass (timing printed, not asserted)."""
    import time

    rng = np.random.default_rng(2)
    scores = rng.standard_normal((1411, 3327))
    rows = np.repeat(np.arange(1411), 10)
    cols = rng.integers(0, 3327, rows.size)
    t0 = time.perf_counter()
    out = ure_at_k(scores, rows, cols, [5, 10, 20, 50, 100])
    elapsed = time.perf_counter() - t0
    assert out.shape == (1411, 5)
    print(f"URE@5..100 for 1,411 x 3,327 scores: {elapsed:.3f} s")
