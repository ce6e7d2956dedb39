"""Campaign simulation on the synthetic truth and snapshot cuts of time-stamped data ([MYT14])."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.campaigns import simulate_campaigns
from debiaseval.data.snapshots import count_cuts, date_cuts, snapshot_masks
from debiaseval.data.synthetic import generate_synthetic


def test_without_boost_observation_rates_match_the_propensities() -> None:
    rng = np.random.default_rng(0)
    prop = np.full((400, 50), 0.3)
    log = simulate_campaigns(
        np.ones((400, 50)), prop, n_periods=4, n_boosted=0, boost=1.0, rng=rng
    ).interactions
    n = prop.size
    # 20,000 Bernoulli(0.3) pairs: within 4 standard errors
    assert abs(len(log) / n - 0.3) < 4 * np.sqrt(0.3 * 0.7 / n)
    per_period = np.bincount(log["timestamp"], minlength=4) / n
    h = 1 - 0.7**0.25  # hazard per period
    expected = h * (1 - h) ** np.arange(4)
    np.testing.assert_allclose(per_period, expected, atol=4 * np.sqrt(h / n))
    assert not log.duplicated(["user", "item"]).any()


def test_boosted_items_gain_share_after_t0_only() -> None:
    truth = generate_synthetic(n_users=500, n_items=100, density=0.1, seed=3)
    log = simulate_campaigns(
        truth.ratings,
        truth.propensities,
        n_periods=3,
        n_boosted=10,
        boost=6.0,
        rng=np.random.default_rng(1),
    )
    frame = log.interactions
    assert log.boosted.size == 10 and np.all(np.diff(log.boosted) > 0)
    assert list(frame.columns) == ["user", "item", "rating", "timestamp"]
    assert frame["user"].dtype == np.int32 and frame["rating"].dtype == np.float32
    np.testing.assert_array_equal(
        frame["rating"], truth.ratings[frame["user"], frame["item"]].astype(np.float32)
    )
    boosted = frame["item"].isin(log.boosted)
    share = boosted.groupby(frame["timestamp"]).mean()
    no_boost = simulate_campaigns(
        truth.ratings,
        truth.propensities,
        n_periods=3,
        n_boosted=10,
        boost=1.0,
        rng=np.random.default_rng(1),
    ).interactions
    base = no_boost["item"].isin(log.boosted).groupby(no_boost["timestamp"]).mean()
    assert share[0] == pytest.approx(base[0])  # same draws before the campaign
    assert share[1] > 2 * base[1] and share[2] > 2 * base[2]


def test_simulation_is_deterministic_and_checks_arguments() -> None:
    truth = generate_synthetic(n_users=30, n_items=20, seed=0)
    a = simulate_campaigns(
        truth.ratings,
        truth.propensities,
        n_periods=3,
        n_boosted=2,
        boost=3.0,
        rng=np.random.default_rng(5),
    )
    b = simulate_campaigns(
        truth.ratings,
        truth.propensities,
        n_periods=3,
        n_boosted=2,
        boost=3.0,
        rng=np.random.default_rng(5),
    )
    pd.testing.assert_frame_equal(a.interactions, b.interactions)
    with pytest.raises(ValueError, match="n_periods"):
        simulate_campaigns(
            truth.ratings,
            truth.propensities,
            n_periods=1,
            n_boosted=2,
            boost=3.0,
            rng=np.random.default_rng(5),
        )
    with pytest.raises(ValueError, match="n_boosted"):
        simulate_campaigns(
            truth.ratings,
            truth.propensities,
            n_periods=2,
            n_boosted=21,
            boost=3.0,
            rng=np.random.default_rng(5),
        )


def test_count_cuts() -> None:
    ts = np.array([5, 1, 2, 2, 3, 4, 4, 4, 9, 10])
    cuts = count_cuts(ts, 2)  # the 5th interaction in time order has timestamp 4
    np.testing.assert_array_equal(cuts, [5, 11])
    masks = snapshot_masks(ts, cuts)
    assert [m.sum() for m in masks] == [7, 10]  # ties at the cut are all in
    with pytest.raises(ValueError, match="distinct"):
        count_cuts(np.array([1, 1, 1, 1]), 2)
    with pytest.raises(ValueError, match=">= 2"):
        count_cuts(ts, 1)


def test_date_cuts() -> None:
    ts = np.array([883_000_000, 885_000_000, 890_000_000])  # 1997-12-25 ... 1998-03-15
    cuts = date_cuts(["1998-01-01", "1998-04-01"], ts)
    np.testing.assert_array_equal(cuts, [883_612_800, 891_388_800])
    with pytest.raises(ValueError, match="increasing"):
        date_cuts(["1998-04-01", "1998-01-01"], ts)
    with pytest.raises(ValueError, match="no interaction before"):
        date_cuts(["1990-01-01", "1998-01-01"], ts)
    with pytest.raises(ValueError, match="ISO"):
        date_cuts(["soon", "later"], ts)
