"""Sensitivity of SNIPS to propensities wrong by a factor Γ, and Γ* (docs/estimators.md)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from debiaseval.estimation.heldout import prepare
from debiaseval.estimation.sensitivity import (
    Levels,
    Resamples,
    bounds,
    gamma_star,
    gamma_star_over_seeds,
    gamma_stars,
    sensitivity_table,
)


def _corners(delta: np.ndarray, w: np.ndarray, gamma: float) -> tuple[float, float]:
    """Brute force: Σ δ w* / Σ w* at every corner of the box [w/Γ, Γw]."""
    values = []
    for corner in itertools.product((1 / gamma, gamma), repeat=w.size):
        weights = w * np.array(corner)
        values.append(float(delta @ weights / weights.sum()))
    return min(values), max(values)


@pytest.mark.parametrize("gains", ["binary", "graded"])
def test_bounds_of_a_user_are_the_extremes_over_the_box_corners(gains):
    """The linear-fractional program's optimum is at a corner of the box: the threshold scan
    finds the extremes of all 2^n corners, for 0/1 gains (Recall), graded gains (the
    per-relevant DCG) and differences of two recommenders'."""
    rng = np.random.default_rng(0 if gains == "binary" else 1)
    for _ in range(60):
        sizes = rng.integers(1, 9, size=4)
        users = np.repeat(np.arange(4), sizes)
        if gains == "binary":
            delta = rng.integers(0, 2, users.size).astype(float)
        else:
            ranks = rng.integers(0, 6, users.size)
            delta = np.where(ranks > 0, 1 / np.log2(1 + ranks.clip(1)), 0.0)
            delta -= np.where(rng.random(users.size) < 0.5, 1 / np.log2(2 + rng.integers(0, 5)), 0)
        w = rng.exponential(size=users.size) * 20
        gamma = float(rng.uniform(1, 4))
        at, low, high = bounds(users, delta, w, gamma)
        assert at.tolist() == [0, 1, 2, 3]
        for j, user in enumerate(at):
            mine = users == user
            expected = _corners(delta[mine], w[mine], gamma)
            assert low[j] == pytest.approx(expected[0]) and high[j] == pytest.approx(expected[1])


def test_binary_gains_have_a_closed_form():
    """For Recall, max Σ c w* / Σ w* = Γ²h / (Γ²h + l), h and l the hits' and misses' weight."""
    users = np.zeros(5, dtype=np.int64)
    c = np.array([1.0, 1.0, 0.0, 0.0, 0.0])
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    _, low, high = bounds(users, c, w, 2.0)
    h, miss = 3.0, 12.0
    assert high[0] == pytest.approx(4 * h / (4 * h + miss))
    assert low[0] == pytest.approx(h / (h + 4 * miss))
    _, low1, high1 = bounds(users, c, w, 1.0)
    assert low1[0] == high1[0] == pytest.approx(h / (h + miss))  # Γ = 1: the estimate itself


def test_point_gamma_star_by_bisection_matches_a_grid_scan():
    """Without resamples, Γ* is the point estimate's: where the bound of the mean itself
    reaches 0."""
    rng = np.random.default_rng(3)
    users = np.repeat(np.arange(40), 6)
    delta = rng.integers(-1, 2, users.size) + 0.4 * (rng.random(users.size) < 0.4)
    w = rng.exponential(size=users.size)
    star = gamma_star(users, delta, w)
    estimate = bounds(users, delta, w, 1.0)[1].mean()
    assert estimate > 0 and star.leader == 1
    grid = np.arange(1.0, 6.0, 1e-4)
    first = next(g for g in grid if bounds(users, delta, w, g)[1].mean() <= 0)
    assert star.gamma == pytest.approx(first, abs=2e-4)
    # the other side: a negative mean crosses 0 through its upper bound at the same Γ
    other = gamma_star(users, -delta, w)
    assert other.gamma == pytest.approx(star.gamma) and other.leader == -1


def test_gamma_star_edges():
    users = np.repeat(np.arange(3), 2)
    w = np.ones(6)
    assert gamma_star(users, np.zeros(6), w) == (1.0, 0)  # the estimate does not separate them
    # A hits every relevant item B misses and no user has a pair where B is ahead: A > B
    # whatever the weights
    assert gamma_star(users, np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0]), w) == (np.inf, 1)


def test_tables_of_a_seed_and_over_seeds():
    heldout = pd.DataFrame(
        {"user": [0, 0, 1, 1, 2], "item": [0, 1, 0, 2, 1], "rating": [5.0, 5.0, 4.0, 5.0, 5.0]}
    )
    held = prepare(
        "snips", heldout, np.array([0.5, 0.25, 0.5, 0.2, 0.4]), n_users=3, positive_threshold=3.0
    )
    ranks = {"A": np.array([1, 0, 2, 0, 1]), "B": np.array([0, 1, 0, 0, 0])}
    table = sensitivity_table(held, ranks, estimator="S", blocks=[("recall", 2)], gammas=[1.0, 2.0])
    assert table["gamma"].tolist() == [1.0, 2.0, 1.0, 2.0]
    one = table[(table["recommender"] == "A") & (table["gamma"] == 1.0)].iloc[0]
    # A's SNIPS recall: user 0 (w 2 hit, 4 miss) 1/3, user 1 (w 2 hit, 5 miss) 2/7, user 2: 1
    assert one["low"] == pytest.approx((1 / 3 + 2 / 7 + 1) / 3) == one["high"]
    two = table[(table["recommender"] == "A") & (table["gamma"] == 2.0)].iloc[0]
    assert two["low"] < one["low"] < two["high"]
    stars = gamma_stars(
        held, ranks, blocks=[("recall", 2)], resamples=50, rng=np.random.default_rng(0)
    )
    assert len(stars) == 1 and stars["gamma_star"].iloc[0] >= 1 and stars["leader"].iloc[0] == 1
    # no resamples, no sampling-aware Γ*
    assert gamma_stars(held, ranks, blocks=[("recall", 2)])["gamma_star"].isna().all()
    seeds = pd.DataFrame(
        {
            "testset": "S",
            "metric": "recall",
            "k": 2,
            "recommender_a": "A",
            "recommender_b": "B",
            "seed": [0, 1, 2],
            "mean_diff": [0.2, 0.1, -0.05],
            "gamma_star": [3.0, 2.0, 1.5],
            "gamma_leader": ["A", "A", "B"],
        }
    )
    agreement = pd.DataFrame(
        {
            "testset": ["S"],
            "metric": ["recall"],
            "k": [2],
            "recommender_a": ["A"],
            "recommender_b": ["B"],
            "mean_diff": [0.25 / 3],
        }
    )
    # the seed whose leader is the other one counts as Γ* = 1: median of 3, 2, 1
    over = gamma_star_over_seeds(seeds, agreement)
    assert over["gamma_star"].tolist() == [2.0] and over["gamma_leader"].tolist() == ["A"]


@pytest.mark.parametrize("metric", ["recall", "avgdcg"])
def test_the_seed_tables_group_only_the_listed_pairs_and_agree_with_the_general_path(metric):
    """sensitivity_table and gamma_stars group only the pairs some list ranks in its top k
    (every other positive pair of a user has gain 0): the same bounds and Γ* as the general
    scan over every positive pair of the evaluated users."""
    from debiaseval.estimation.heldout import gains as gain_of
    from debiaseval.estimation.heldout import member

    rng = np.random.default_rng(5)
    n_users, n_pairs, k = 40, 600, 5
    heldout = pd.DataFrame(
        {
            "user": np.sort(rng.integers(0, n_users, n_pairs)),
            "item": rng.permutation(n_pairs),
            "rating": rng.choice([1.0, 5.0], n_pairs, p=[0.3, 0.7]),
        }
    )
    held = prepare(
        "snips", heldout, rng.uniform(0.01, 0.5, n_pairs), n_users=n_users, positive_threshold=3.0
    )
    # A lists more pairs: A ahead of B and C beyond Γ = 1, B and C not separated
    ranks = {
        name: np.where(rng.random(n_pairs) < share, rng.integers(1, 9, n_pairs), 0)
        for name, share in (("A", 0.6), ("B", 0.3), ("C", 0.25))
    }
    table = sensitivity_table(held, ranks, estimator="S", blocks=[(metric, k)], gammas=[2.0])
    keep = member(held.users, held.evaluated, n_users) & (held.labels > 0)
    users, w = held.users[keep], held.weights[keep]
    for rec, rank in ranks.items():
        _, low, high = bounds(users, gain_of(metric, rank[keep], k), w, 2.0)
        row = table[table["recommender"] == rec].iloc[0]
        assert row["low"] == pytest.approx(low.mean()) and row["high"] == pytest.approx(high.mean())
    stars = gamma_stars(
        held, ranks, blocks=[(metric, k)], resamples=200, rng=np.random.default_rng(9)
    )

    def gain(rec):
        return gain_of(metric, ranks[rec][keep], k)

    # the same resamples: counts kept for the users some list ranks a pair of within k, the
    # other averaged users' counts summed
    listed = np.zeros(keep.sum(), dtype=bool)
    for rank in ranks.values():
        listed |= (rank[keep] >= 1) & (rank[keep] <= k)
    kept = np.unique(users[listed])
    draws = Resamples.draw(np.random.default_rng(9), 200, kept, np.unique(users).size - kept.size)
    expected = [
        gamma_star(users, gain(a) - gain(b), w, draws=draws)
        for a, b in (("A", "B"), ("A", "C"), ("B", "C"))
    ]
    np.testing.assert_allclose(stars["gamma_star"], [e.gamma for e in expected], rtol=1e-4)
    assert (stars["gamma_star"] > 1).sum() == 2 and stars["gamma_star"].iloc[2] == 1.0
    assert stars["leader"].tolist() == [e.leader for e in expected]


def test_a_recommender_that_lists_no_positive_pair_has_float_sums():
    """With no listed pair (an MCAR draw where a model hits nothing held out), the users' sums
    are a table of floats all at δ = 0, not bincount's integers (a casting error before)."""
    empty = np.array([], dtype=np.int64)
    totals = np.array([2.0, 0.0, 3.5])
    up, down = Levels.both(empty, np.array([]), np.array([]), totals)
    assert up.base.tolist() == [0.0, 0.0] and down.users.tolist() == [0, 2]
