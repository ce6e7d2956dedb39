"""Exact leave-one-out of [MYT14]: hits against brute-force refits, weighted sums, intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from debiaseval.debiasing.kl_weights import item_marginal, pair_weights
from debiaseval.evaluation.leave_one_out import (
    constant_hits,
    cosine_cf_hits,
    cosine_cf_scores,
    loo_interval,
    naive_cf_hits,
    naive_cf_scores,
    sampled_hits,
    user_hit_rates,
)


def random_profiles(n_users: int, n_items: int, density: float, seed: int) -> sp.csr_matrix:
    mask = np.random.default_rng(seed).random((n_users, n_items)) < density
    return sp.csr_matrix(mask.astype(np.float64))


def brute_force_hits(x: sp.csr_matrix, scorer, k: int, *, cosine: bool) -> np.ndarray:
    """Remove each pair, recompute the recommender's scores from scratch, rank the held-out item."""
    hits = []
    for u in range(x.shape[0]):
        profile = x.indices[x.indptr[u] : x.indptr[u + 1]]
        for i in profile:
            left = x.tolil()
            left[u, i] = 0
            left = sp.csr_matrix(left)
            left.eliminate_zeros()
            scores = scorer(left, np.array([u]))[0]
            if cosine:  # the same rounding of the unnormalised score as the fast path
                scores = np.round(scores * math.sqrt(max(profile.size - 1, 1)), 9)
            candidates = np.setdiff1d(np.arange(x.shape[1]), np.setdiff1d(profile, [i]))
            s, own = scores[candidates], scores[i]
            ahead = (s > own) | ((s == own) & (candidates < i))
            hits.append(float(ahead.sum() < k))
    return np.array(hits)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("hits_fn", "scorer", "cosine"),
    [(naive_cf_hits, naive_cf_scores, False), (cosine_cf_hits, cosine_cf_scores, True)],
)
def test_cf_hits_match_brute_force_refits(hits_fn, scorer, cosine, seed: int) -> None:
    x = random_profiles(22, 16, 0.3, seed)
    fast = hits_fn(x, k=3)
    assert fast.shape == x.shape and np.array_equal(fast.indices, x.indices)
    expected = brute_force_hits(x, scorer, 3, cosine=cosine)
    np.testing.assert_array_equal(fast.data, expected)
    assert 0 < expected.mean() < 1  # the case is not trivial


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0])
def test_cosine_cf_neighbour_exponent_matches_brute_force_refits(exponent: float, seed: int):
    x = random_profiles(22, 16, 0.3, seed)
    fast = cosine_cf_hits(x, k=3, neighbour_exponent=exponent)

    def scorer(left, users):
        return cosine_cf_scores(left, users, neighbour_exponent=exponent)

    expected = brute_force_hits(x, scorer, 3, cosine=True)
    np.testing.assert_array_equal(fast.data, expected)
    assert 0 < expected.mean() < 1


def test_cosine_cf_neighbour_exponent_by_hand() -> None:
    # users 0 {0, 1}, 1 {0, 2}, 2 {0, 3, 4, 5}: user 0's votes from user 1 (|I| = 2) for item 2
    # and from user 2 (|I| = 4) for items 3-5, both sharing item 0 with user 0 (|I| = 2): the
    # co-counts tie items 2 and 3, the cosine and the division by the neighbour's size do not
    x = sp.csr_matrix(
        np.array([[1, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0], [1, 0, 0, 1, 1, 1]], dtype=float)
    )
    for exponent, (item2, item3) in {0.0: (1, 1), 0.5: (2**-0.5, 0.5), 1.0: (0.5, 0.25)}.items():
        scores = cosine_cf_scores(x, np.array([0]), neighbour_exponent=exponent)[0] * math.sqrt(2)
        np.testing.assert_allclose(scores[[2, 3]], [item2, item3])
    with pytest.raises(ValueError, match="neighbour_exponent must be a finite number >= 0"):
        cosine_cf_hits(x, neighbour_exponent=-1.0)


def test_naive_cf_by_hand() -> None:
    # users: 0 {0, 1}, 1 {0, 1}, 2 {0, 2}; leave (0, 1) out: I_0 = {0}
    x = sp.csr_matrix(np.array([[1, 1, 0], [1, 1, 0], [1, 0, 1]], dtype=float))
    # scores for user 0 after removal: item 1: #(U1'∩U0)/#U0 = |{1}|/3, item 2: |{2}|/3: a tie,
    # broken by the smaller id -> item 1 first; with k = 1 it is a hit
    hits = naive_cf_hits(x, k=1)
    assert hits[0, 1] == 1.0
    # leave (2, 2) out: I_2 = {0}; item 1 scores |{0,1}|/3, item 2 scores 0 -> miss at k = 1
    assert hits[2, 2] == 0.0
    # full data, user 2 ({0, 2}): item 1 scores max(#{0,1}/#U_0, 0/#U_2) = 2/3
    np.testing.assert_allclose(naive_cf_scores(x, np.array([2]))[0], [1.0, 2 / 3, 1.0])


def test_users_subset_and_rows() -> None:
    x = random_profiles(15, 10, 0.4, 5)
    full = naive_cf_hits(x)
    part = naive_cf_hits(x, users=np.array([7, 2]))
    np.testing.assert_array_equal(part.toarray(), full[[2, 7]].toarray())
    with pytest.raises(ValueError, match="user ids"):
        cosine_cf_hits(x, users=np.array([15]))
    with pytest.raises(ValueError, match="k must"):
        naive_cf_hits(x, k=0)


def test_constant_score_is_the_weighted_marginal_of_its_list() -> None:
    dense = random_profiles(40, 12, 0.3, 6).toarray()
    dense[0] = 0  # an empty profile is not in U
    x = sp.csr_matrix(dense)
    w = np.random.default_rng(0).uniform(0.5, 2.0, 12)
    listed = np.array([1, 4, 7])
    rates = user_hit_rates(constant_hits(x, listed), pair_weights(x, w))
    assert rates.size == 39
    assert rates.mean() == pytest.approx(item_marginal(x, w)[listed].sum(), rel=1e-12)


def test_weighted_rates_by_hand() -> None:
    x = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]], dtype=float))
    hits = sp.csr_matrix((np.array([1.0, 0.0, 0.0, 1.0]), x.indices, x.indptr), shape=x.shape)
    rates = user_hit_rates(hits, pair_weights(x, np.array([3.0, 1.0, 1.0])))
    np.testing.assert_allclose(rates, [0.75, 0.5])


def test_wilson_interval_by_hand() -> None:
    rates = np.array([1.0] * 3 + [0.0] * 7)
    score, low, high = loo_interval(rates)
    assert score == pytest.approx(0.3)
    # Wilson 95% for 3/10: (0.1078, 0.6032)
    assert low == pytest.approx(0.1078, abs=1e-4) and high == pytest.approx(0.6032, abs=1e-4)


def test_bootstrap_interval_covers_the_mean_and_is_deterministic() -> None:
    rates = np.random.default_rng(1).random(200)
    a = loo_interval(rates, interval="bootstrap", rng=np.random.default_rng(3), resamples=500)
    b = loo_interval(rates, interval="bootstrap", rng=np.random.default_rng(3), resamples=500)
    assert a == b and a[1] < a[0] < a[2]
    se = rates.std(ddof=1) / math.sqrt(rates.size)
    assert a[2] - a[1] == pytest.approx(2 * 1.96 * se, rel=0.2)
    with pytest.raises(ValueError, match="Generator"):
        loo_interval(rates, interval="bootstrap")
    with pytest.raises(ValueError, match="unknown interval"):
        loo_interval(rates, interval="agresti")
    with pytest.raises(ValueError, match="no user"):
        loo_interval(np.array([]))


@pytest.mark.parametrize("hits_fn", [naive_cf_hits, cosine_cf_hits])
def test_item_rows_by_groups_of_users_give_the_same_hits(hits_fn, monkeypatch) -> None:
    import debiaseval.evaluation.leave_one_out as loo

    x = random_profiles(40, 30, 0.3, 7)
    whole = hits_fn(x, k=3)
    monkeypatch.setattr(loo, "_HEAD_CELLS", 30 * 5)  # the 5 most popular items' rows once
    monkeypatch.setattr(loo, "_BLOCK_CELLS", 30 * 4)  # a few other items' rows at a time
    groups = list(loo._user_groups(x, np.arange(40), np.zeros(30, dtype=bool)))
    assert len(groups) > 5 and np.array_equal(np.concatenate([g for g, _ in groups]), np.arange(40))
    grouped = hits_fn(x, k=3)
    assert np.array_equal(grouped.indices, whole.indices)
    np.testing.assert_array_equal(grouped.data, whole.data)


def test_wald_interval_by_hand() -> None:
    outcomes = np.array([1.0] * 300 + [0.0] * 700)
    score, low, high = loo_interval(outcomes, interval="wald")
    half = 1.959964 * math.sqrt(0.3 * 0.7 / 1000)  # 0.028403
    assert score == pytest.approx(0.3)
    assert low == pytest.approx(0.3 - half, abs=1e-6)
    assert high == pytest.approx(0.3 + half, abs=1e-6)
    assert loo_interval(np.zeros(5), interval="wald") == (0.0, 0.0, 0.0)  # clipped, degenerate


def test_sampled_draws_follow_the_protocol() -> None:
    """[MYT14]'s sampled protocol: a user uniformly, then an item with P(i|u,w). By hand on two
    users, and the mean of many draws within 4 SE of the exact score."""
    x = sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1], [0, 0, 0]], dtype=float))
    hits = sp.csr_matrix((np.array([1.0, 0.0, 0.0, 1.0]), x.indices, x.indptr), shape=x.shape)
    probs = pair_weights(x, np.array([3.0, 1.0, 1.0]))  # user 0: 3/4 on item 0; user 1: 1/2, 1/2
    n = 200_000
    outcomes = sampled_hits(hits, probs, n, np.random.default_rng(0))
    exact = user_hit_rates(hits, probs).mean()  # (0.75 + 0.5) / 2
    assert exact == pytest.approx(0.625)
    assert set(np.unique(outcomes)) == {0.0, 1.0}
    assert abs(outcomes.mean() - exact) < 4 * math.sqrt(exact * (1 - exact) / n)
    again = sampled_hits(hits, probs, n, np.random.default_rng(0))
    np.testing.assert_array_equal(outcomes, again)
    # a larger case: CF hits with KL-like weights
    y = random_profiles(60, 15, 0.3, 4)
    weights = pair_weights(y, np.random.default_rng(1).uniform(0.2, 5.0, 15))
    cf = cosine_cf_hits(y, k=3)
    exact = user_hit_rates(cf, weights).mean()
    drawn = sampled_hits(cf, weights, n, np.random.default_rng(2)).mean()
    assert abs(drawn - exact) < 4 * math.sqrt(exact * (1 - exact) / n)
    with pytest.raises(ValueError, match="n_draws"):
        sampled_hits(hits, probs, 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="sparsity structure"):
        sampled_hits(hits, pair_weights(y, np.ones(15)), 10, np.random.default_rng(0))
