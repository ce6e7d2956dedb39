"""The sampling-aware Γ* of two recommenders under SNIPS (Zhao, Small & Bhattacharya 2019):
the smallest Γ at which the bootstrap lower confidence bound of the lower bound of the mean
difference reaches 0, its leader, and how the tables print it (docs/estimators.md)."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.estimation import sensitivity as sens
from debiaseval.estimation.sensitivity import (
    Resamples,
    bounds,
    gamma_sentence,
    gamma_star,
    gamma_star_over_seeds,
    percentile_rank,
    sensitivity_markdown,
)
from debiaseval.experiments.e1.arena import with_gamma_stars
from debiaseval.experiments.e1.verdict import comparisons_markdown


def _case(seed: int, n_users: int = 50, lead: float = 0.5, zero_users: int = 5):
    """Users with 5 pairs each, δ in {-1, 0, 1} plus ``lead`` on half the pairs, the last
    ``zero_users`` users with δ = 0 (they enter the means' denominators only)."""
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), 5)
    delta = rng.integers(-1, 2, users.size) + lead * (rng.random(users.size) < 0.5)
    delta[users >= n_users - zero_users] = 0.0
    w = rng.exponential(size=users.size)
    return users, delta, w


def _draws(users, delta, resamples=200, seed=1):
    kept = np.unique(users[delta != 0])
    return Resamples.draw(
        np.random.default_rng(seed), resamples, kept, np.unique(users).size - kept.size
    )


def _lower_confidence_bound(users, delta, w, draws, gamma, confidence=0.95):
    """Brute force: every resample's mean of the per-user lower bounds at ``gamma``, in float64,
    and their (1 − confidence) quantile by numpy's inverted-CDF definition."""
    at, low, _ = bounds(users, delta, w, gamma)
    lb = low[np.searchsorted(at, draws.users)]
    means = draws.counts.astype(np.float64) @ lb / draws.totals
    return float(np.quantile(means, round(1 - confidence, 12), method="inverted_cdf"))


def _strong_case(seed: int, p_behind: float):
    """80 users with 5 pairs each: A ahead on half the pairs, behind on a share ``p_behind``."""
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(80), 5)
    delta = (rng.random(users.size) < 0.5) - (rng.random(users.size) < p_behind).astype(float)
    return users, delta, rng.exponential(size=users.size)


@pytest.mark.parametrize(
    "case", [_case(7), _case(8), _strong_case(0, 0.02), _strong_case(5, 0.01)], ids=range(4)
)
def test_gamma_star_is_where_the_bootstrap_lower_bound_reaches_0_on_a_grid(case):
    """Against the first Γ of a grid (steps of 0.2% up to 1000) at which the brute-force lower
    confidence bound over the same resamples is ≤ 0: Γ* from 1.5 to 8, between different rungs
    of the search's first ladder."""
    users, delta, w = case
    draws = _draws(users, delta)
    star = gamma_star(users, delta, w, draws=draws)
    assert star.leader == 1
    assert _lower_confidence_bound(users, delta, w, draws, 1.0) > 0  # significant at Γ = 1
    grid = np.exp(np.arange(0.0, np.log(1000.0), 2e-3))
    reached = [_lower_confidence_bound(users, delta, w, draws, g) <= 0 for g in grid[::25]]
    coarse = reached.index(True)  # the bound falls with Γ: the first coarse step, then fine
    fine = grid[max(0, 25 * (coarse - 1)) : 25 * coarse + 1]
    first = next(g for g in fine if _lower_confidence_bound(users, delta, w, draws, g) <= 0)
    assert 1 < star.gamma < 10
    assert star.gamma == pytest.approx(first, rel=2.5e-3)
    # just below Γ* the bound is still above 0, at Γ* it is not
    assert _lower_confidence_bound(users, delta, w, draws, star.gamma * (1 - 1e-3)) > 0
    assert _lower_confidence_bound(users, delta, w, draws, star.gamma * (1 + 1e-4)) <= 0


def test_the_percentile_is_the_order_statistic_of_efron_and_tibshirani():
    assert percentile_rank(1000, 0.95) == 50  # not 51: 1 − 0.95 is rounded to 0.05
    assert percentile_rank(200, 0.95) == 10
    assert percentile_rank(30, 0.9) == 3
    assert percentile_rank(10, 0.95) == 1 and percentile_rank(1, 0.95) == 1


def test_gamma_star_is_1_when_the_difference_is_not_significant():
    """A small lead among noisy users: the estimate is positive and its own bound needs some
    Γ > 1 to reach 0, but the lower confidence bound is below 0 already at Γ = 1."""
    users, delta, w = _case(2, n_users=40, lead=0.15)
    draws = _draws(users, delta)
    assert bounds(users, delta, w, 1.0)[1].mean() > 0
    assert _lower_confidence_bound(users, delta, w, draws, 1.0) <= 0
    assert gamma_star(users, delta, w, draws=draws) == (1.0, 1)
    assert gamma_star(users, delta, w).gamma > 1  # the point estimate's Γ* protects its sign


def test_gamma_star_is_inf_when_the_lower_bound_never_reaches_0():
    """A hits a relevant item of every user that B misses, and B none that A misses: every
    user's lower bound stays above 0 at any Γ, so does the bootstrap's percentile."""
    users = np.repeat(np.arange(30), 3)
    delta = np.tile([1.0, 0.0, 0.0], 30)
    w = np.random.default_rng(0).exponential(size=users.size)
    draws = _draws(users, delta, resamples=100)
    assert gamma_star(users, delta, w, draws=draws) == (np.inf, 1)
    assert gamma_star(users, -delta, w, draws=draws) == (np.inf, -1)
    assert gamma_star(users, np.zeros(users.size), w, draws=draws) == (1.0, 0)  # no leader


def test_gamma_star_protects_the_leader_whichever_side_it_is_on():
    users, delta, w = _case(7)
    draws = _draws(users, delta)
    a_ahead, b_ahead = (
        gamma_star(users, delta, w, draws=draws),
        gamma_star(users, -delta, w, draws=draws),
    )
    assert (a_ahead.leader, b_ahead.leader) == (1, -1)
    assert b_ahead.gamma == pytest.approx(a_ahead.gamma, rel=1e-4) and a_ahead.gamma > 1
    comparisons = pd.DataFrame(
        {
            "testset": ["S", "S", "gt"],
            "recommender_a": ["A", "C", "A"],
            "recommender_b": ["B", "D", "B"],
        }
    )
    stars = {
        "S": pd.DataFrame(
            {
                "gamma_star": [a_ahead.gamma, b_ahead.gamma],
                "leader": [a_ahead.leader, b_ahead.leader],
            }
        )
    }
    out = with_gamma_stars(comparisons, stars)
    assert out["gamma_leader"].tolist()[:2] == ["A", "D"]
    assert pd.isna(out["gamma_leader"].iloc[2]) and np.isnan(out["gamma_star"].iloc[2])


@pytest.mark.parametrize("seed", range(6))
def test_the_sampling_aware_gamma_star_is_at_most_the_point_estimates(seed):
    users, delta, w = _case(seed, lead=0.6) if seed < 3 else _strong_case(seed, 0.01 * seed)
    point = gamma_star(users, delta, w)
    sampled = gamma_star(users, delta, w, draws=_draws(users, delta, seed=seed))
    assert sampled.leader == point.leader != 0
    assert sampled.gamma <= point.gamma


def test_resamples_do_not_depend_on_the_block_size(monkeypatch):
    """The counts are drawn in blocks of rows; any block size gives the same resamples, hence
    the same Γ* (the bytes of a seed's outputs do not depend on the memory bound)."""
    users, delta, w = _case(7)
    whole = _draws(users, delta)
    monkeypatch.setattr(sens, "_DRAW_CELLS", 50)
    monkeypatch.setattr(sens, "_PRODUCT_CELLS", 30)
    blocks = _draws(users, delta)
    np.testing.assert_array_equal(blocks.counts, whole.counts)
    np.testing.assert_array_equal(blocks.totals, whole.totals)
    assert gamma_star(users, delta, w, draws=blocks) == gamma_star(users, delta, w, draws=whole)


def test_resamples_keep_the_counts_of_some_users_and_the_sum_of_the_others():
    """The users whose values are 0 enter each resample's denominator through the sum of
    their Poisson(1) counts: one Poisson(others) variate, mean and variance ``others``."""
    draws = Resamples.draw(np.random.default_rng(4), 4000, np.array([2, 5, 9]), others=50)
    assert draws.counts.shape == (4000, 3) and draws.counts.dtype == np.uint8
    rest = draws.totals - draws.counts.sum(axis=1)
    assert rest.mean() == pytest.approx(50, abs=0.5) and rest.var() == pytest.approx(50, rel=0.1)
    assert draws.counts.mean() == pytest.approx(1, abs=0.05)
    values = np.array([0.5, -1.0, 0.25])
    rows = np.array([3, 0, 7])
    np.testing.assert_allclose(draws.sums(rows, values), draws.counts[rows] @ values)


def test_over_seeds_inf_is_kept_and_the_leader_named():
    """Pairs A–B (B ahead, robust in two seeds), A–C (C ahead over seeds, A in seed 0), B–C
    (a mean difference of 0: no leader) and a test-set row without Γ*."""
    keys = {"metric": "recall", "k": 10}
    seeds = pd.DataFrame(
        {
            **keys,
            "testset": ["S"] * 9 + ["gt"] * 3,
            "seed": [0, 1, 2] * 4,
            "recommender_a": ["A"] * 6 + ["B"] * 3 + ["A"] * 3,
            "recommender_b": ["B"] * 3 + ["C"] * 6 + ["B"] * 3,
            "gamma_star": [np.inf, np.inf, 2.0, 3.0, np.inf, 1.5, 1.2, 1.0, 1.3] + [np.nan] * 3,
            "gamma_leader": ["B", "B", "B", "A", "C", "C", "B", "C", "C"] + [None] * 3,
        }
    )
    agreement = pd.DataFrame(
        {
            **keys,
            "testset": ["S", "S", "S", "gt"],
            "recommender_a": ["A", "A", "B", "A"],
            "recommender_b": ["B", "C", "C", "B"],
            "mean_diff": [-0.2, -0.01, 0.0, -0.1],
        },
        index=[3, 4, 5, 6],
    )
    over = gamma_star_over_seeds(seeds, agreement)
    assert over.index.tolist() == [3, 4, 5, 6]
    # A–C: seed 0's leader is A, so it counts as 1; B–C: no leader, every seed counts as 1
    np.testing.assert_array_equal(over["gamma_star"], [np.inf, 1.5, 1.0, np.nan])
    assert over["gamma_leader"].tolist()[:2] == ["B", "C"]
    assert over["gamma_leader"].iloc[2:].isna().all()


def test_the_tables_print_inf_and_name_the_leader():
    comparisons = pd.DataFrame(
        {
            "testset": "SNIPS",
            "metric": "recall",
            "k": 10,
            "recommender_a": ["Random", "Random", "PosPop"],
            "recommender_b": ["PosPop", "MF", "MF"],
            "n_seeds": 3,
            "mean_diff": [-0.09, -0.12, 0.001],
            "n_a_better": 0,
            "n_b_better": 3,
            "max_p_holm": 0.01,
            "gamma_star": [19.694912, np.inf, 1.0],
            "gamma_leader": ["PosPop", "MF", "PosPop"],
        }
    )
    bounds_table = pd.DataFrame(
        {
            "recommender": ["Random"],
            "estimator": ["SNIPS"],
            "metric": ["recall"],
            "k": [10],
            "estimate": [0.1],
            "gamma": [2.0],
            "low": [0.05],
            "high": [0.2],
        }
    )
    text = sensitivity_markdown(bounds_table, comparisons, "synthetic")
    assert (
        "PosPop above Random unless the propensities are wrong by more than a factor 19.7" in text
    )
    assert "| Random | MF | -0.1200 | ∞ | MF above Random even if the propensities" in text
    assert "PosPop above MF by the estimate, not significantly (Γ* = 1)" in text
    table = comparisons_markdown(comparisons, "synthetic", confidence=0.95)
    assert "19.69 (PosPop ahead)" in table and "∞ (MF ahead)" in table
    assert gamma_sentence(1.23456, "A", "B", "B") == (
        "B above A unless the propensities are wrong by more than a factor 1.23"
    )
    assert gamma_sentence(np.nan, "A", "B", None) == ""
