"""Diagnostics of weighting estimators and DR's weight control (docs/estimators.md)."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import genpareto

from debiaseval.estimation.diagnostics import (
    PARETO_K_LIMIT,
    heavy_tailed,
    mar_mass_ratio,
    pareto_k,
    weight_diagnostics,
)
from debiaseval.estimation.heldout import candidate_counts, prepare
from debiaseval.estimation.weight_control import (
    WeightControl,
    candidates,
    choose,
    controlled,
)
from debiaseval.experiments.e1.summary import summary_flags


@pytest.mark.parametrize("xi", [-0.2, 0.3, 0.6, 0.9])
def test_pareto_k_recovers_the_tail_index(xi):
    """Over 20 samples of 20,000 generalised Pareto weights, the mean k̂ is within 0.06 of ξ."""
    rng = np.random.default_rng(0)
    estimates = [pareto_k(genpareto.rvs(xi, size=20_000, random_state=rng)) for _ in range(20)]
    assert np.mean(estimates) == pytest.approx(xi, abs=0.06)


def test_pareto_k_marks_inverse_propensities_of_a_long_tail():
    """Weights 1/P with P uniform on (0, 1) have a Pareto tail of index 1 (k̂ > 0.7: do not
    trust); weights of a bounded P in (0.5, 1) have none (k̂ < 0.7); constant weights: −inf."""
    rng = np.random.default_rng(1)
    assert pareto_k(1 / rng.random(10_000)) > PARETO_K_LIMIT
    assert pareto_k(1 / rng.uniform(0.5, 1, 10_000)) < PARETO_K_LIMIT
    assert pareto_k(np.ones(100)) == -np.inf
    assert np.isnan(pareto_k(np.ones(5)))


def test_weight_diagnostics_hand_computed():
    """Two users; user 0 has 5 candidates and held-out weights 2, 4 (positive) and 2; user 1 has
    5 candidates and weights 5 (positive), 2.5. Σ_H w = 15.5 against Σ |C_u| = 10."""
    train = pd.DataFrame({"user": [0, 1], "item": [5, 0], "rating": [5.0, 5.0]})
    held = pd.DataFrame(
        {"user": [0, 0, 0, 1, 1], "item": [0, 2, 3, 2, 4], "rating": [5.0, 4.0, 1.0, 5.0, 2.0]}
    )
    p = np.array([0.5, 0.25, 0.5, 0.2, 0.4])
    h = prepare("snips", held, p, n_users=2, positive_threshold=3.0, train=train, n_items=6)
    assert h.candidates.tolist() == [5, 5]
    diag = weight_diagnostics(h)
    assert diag["calibration"] == pytest.approx(15.5 / 10)
    assert diag["calibration_median"] == pytest.approx(np.median([8 / 5, 7.5 / 5]))
    assert diag["ess_mean"] == pytest.approx((36 / 20 + 1) / 2)
    assert diag["max_weight_share"] == pytest.approx(5 / 11)  # positives only: 2 + 4 + 5


def test_candidate_counts_need_no_sorted_input():
    train = pd.DataFrame({"user": [1, 0, 1, 1], "item": [3, 2, 0, 3]})  # (1, 3) twice
    assert candidate_counts(train, n_users=3, n_items=4).tolist() == [3, 2, 4]


def test_mar_mass_ratio():
    # user 0: 10 candidates, MAR candidates 1 of 4 positive -> implies 2.5; user 1: no MAR
    mass = np.array([5.0, 9.0])
    ratio = mar_mass_ratio(
        mass, np.array([10, 10]), np.array([0, 0, 0, 0]), np.array([1.0, 0, 0, 0])
    )
    assert ratio == pytest.approx(5.0 / 2.5)
    assert np.isnan(mar_mass_ratio(mass, np.array([10, 10]), np.array([]), np.array([])))


def test_heavy_tailed_estimators_flag_their_summary_rows_and_out_of_range_values():
    diag = pd.DataFrame({"estimator": ["S", "S", "D"], "pareto_k": [0.2, 0.8, 0.1]})
    assert heavy_tailed(diag) == ["S"]
    summary = pd.DataFrame(
        {
            "recommender": ["A"] * 4,
            "testset": ["gt", "S", "D", "D2"],
            "metric": "recall",
            "k": 10,
            "mean": [0.1, 0.2, -0.29, 0.5],
            "ci_low": [0.05, 0.1, -0.5, 0.2],
            "ci_high": [0.15, 0.3, 0.1, 1.2],
            "boot_low": 0.0,
            "boot_high": 0.3,
        }
    )
    per_seed = summary[["recommender", "testset", "metric", "k"]].assign(
        n_users=100, n_short_lists=0
    )
    flags = summary_flags(summary, per_seed, heavy_tail=["S"])["flags"].tolist()
    assert flags == ["", "heavy_tail", "out_of_range", "out_of_range"]


def test_weight_controls():
    w = np.array([1.0, 4.0, 100.0])
    np.testing.assert_allclose(controlled(w, "clip", 10.0), [1, 4, 10])
    np.testing.assert_allclose(controlled(w, "switch", 10.0), [1, 4, 0])
    np.testing.assert_allclose(controlled(w, "shrink", 100.0), 100 * w / (w**2 + 100))
    np.testing.assert_array_equal(controlled(w, "clip", np.inf), w)
    np.testing.assert_array_equal(controlled(w, "none", 1.0), w)
    grid = candidates(WeightControl("clip"), np.arange(1.0, 101.0))
    assert grid[-1] == np.inf and np.all(np.diff(grid[:-1]) > 0) and grid.size == 7
    shrink = candidates(WeightControl("shrink"), np.arange(1.0, 101.0))
    np.testing.assert_allclose(shrink[:-1], grid[:-1] ** 2)
    assert candidates(WeightControl("switch", 7.0), w).tolist() == [7.0]
    assert candidates(WeightControl(), w).tolist() == [np.inf]
    assert choose([3.0, 1.0, 1.0, 2.0]) == 2  # a tie goes to the lighter control
    with pytest.raises(ValueError, match="unknown weight control"):
        WeightControl("trim")
    with pytest.raises(ValueError, match="positive"):
        WeightControl("clip", -1.0)
