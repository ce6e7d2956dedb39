"""Semi-synthetic ML-100K ([ICML16] §6.2): re-mapping, observation model, canonical frames."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from debiaseval.data import MIRROR_ENV, load_ml_100k
from debiaseval.datasets.semisynthetic import (
    ICML16_MARGINAL,
    build_ml_100k_semi,
    complete_ratings,
    draw_observed,
    full_matrices,
    make_semisynthetic,
    observation_propensities,
    remap_to_marginal,
    semisynthetic_frames,
)


def _low_rank_ratings(n_users: int, n_items: int, seed: int) -> pd.DataFrame:
    """A small observed rating set with low-rank structure (a stand-in for ML-100K)."""
    rng = np.random.default_rng(seed)
    latent = rng.standard_normal((n_users, 3)) @ rng.standard_normal((3, n_items))
    truth = remap_to_marginal(latent, (0.1, 0.2, 0.3, 0.25, 0.15))
    users, items = np.nonzero(rng.random((n_users, n_items)) < 0.3)
    return pd.DataFrame({"user": users, "item": items, "rating": truth[users, items]})


def test_remap_matches_marginal_exactly() -> None:
    values = np.random.default_rng(0).standard_normal((37, 53))
    ratings = remap_to_marginal(values)
    counts = np.bincount(ratings.ravel(), minlength=6)[1:]
    expected = np.diff(np.rint(np.cumsum(ICML16_MARGINAL) * values.size), prepend=0)
    np.testing.assert_array_equal(counts, expected)
    # order preserving: every 1 lies below every 2, and so on
    for r in range(1, 5):
        assert values[ratings == r].max() <= values[ratings == r + 1].min()


@pytest.mark.parametrize("alpha", [0.05, 0.25, 1.0])
def test_propensities_have_target_density_and_shape(alpha: float) -> None:
    ratings = remap_to_marginal(np.random.default_rng(1).standard_normal((200, 300)))
    p = observation_propensities(ratings, alpha=alpha, density=0.05)
    assert p.sum() == pytest.approx(0.05 * ratings.size, rel=1e-9)
    k = p[ratings >= 4].max()
    np.testing.assert_allclose(p, k * alpha ** np.maximum(0, 4 - ratings.astype(float)))
    # the MNAR draw has about 5% density: within 4 binomial standard errors
    observed = draw_observed(p, np.random.default_rng(2))
    sd = np.sqrt((p * (1 - p)).sum())
    assert abs(observed.sum() - p.sum()) < 4 * sd


def test_bad_inputs_raise() -> None:
    ratings = np.ones((3, 3), dtype=np.int8)
    with pytest.raises(ValueError, match="alpha"):
        observation_propensities(ratings, alpha=0.0, density=0.05)
    with pytest.raises(ValueError, match=r"1\.\.5"):
        observation_propensities(ratings * 0, alpha=0.5, density=0.05)
    with pytest.raises(ValueError, match="NaN"):
        remap_to_marginal(np.array([1.0, np.nan]))


def test_semisynthetic_is_deterministic_and_canonical() -> None:
    base = _low_rank_ratings(60, 80, seed=3)
    kwargs = dict(n_users=60, n_items=80, factors=(2, 4), l2=(1.0, 10.0), seed=7)
    a = make_semisynthetic(base, **kwargs)
    b = make_semisynthetic(base, **kwargs)
    np.testing.assert_array_equal(a.ratings, b.ratings)
    np.testing.assert_array_equal(a.observed, b.observed)
    assert a.tuning["selected"].sum() == 1
    counts = np.bincount(a.ratings.ravel(), minlength=6)[1:] / a.ratings.size
    np.testing.assert_allclose(counts, ICML16_MARGINAL, atol=1 / a.ratings.size)
    assert a.propensities.mean() == pytest.approx(0.05)

    frame = semisynthetic_frames(a)
    assert list(frame.columns) == ["user", "item", "rating", "part", "propensity"]
    assert frame["user"].dtype == np.int32 and frame["rating"].dtype == np.float32
    assert (frame["part"] == "mnar").sum() == a.observed.sum()
    assert (frame["part"] == "full").sum() == 60 * 80
    ratings, propensities = full_matrices(frame)
    np.testing.assert_array_equal(ratings, a.ratings)
    np.testing.assert_allclose(propensities, a.propensities, rtol=1e-6)


def test_completion_without_user_bias_has_no_user_offset() -> None:
    """Ratings = user offset + item effect + rank-2 taste: with ``user_bias=False`` the
    completed rows carry no user-level offset (their means agree to within the taste's
    spread), with ``user_bias=True`` they carry the offsets; the re-mapped matrix then
    leaves users without any 1 only in the second case."""
    rng = np.random.default_rng(11)
    n_users, n_items = 120, 150
    offset = np.linspace(-2.0, 2.0, n_users)
    effect = rng.normal(0.0, 0.5, n_items)
    taste = 0.3 * rng.standard_normal((n_users, 2)) @ rng.standard_normal((2, n_items))
    truth = 3.0 + offset[:, None] + effect[None, :] + taste
    users, items = np.nonzero(rng.random((n_users, n_items)) < 0.4)
    kwargs = dict(n_users=n_users, n_items=n_items, factors=(2,), l2=(1.0,))
    args = (users, items, truth[users, items])
    kept, _ = complete_ratings(*args, user_bias=True, rng=np.random.default_rng(0), **kwargs)
    dropped, _ = complete_ratings(*args, user_bias=False, rng=np.random.default_rng(0), **kwargs)
    # with biases kept, the row means follow the offsets (slope 1)
    assert np.polyfit(offset, kept.mean(axis=1), 1)[0] == pytest.approx(1.0, abs=0.1)
    # without them, no user-level offset is left: row means equal within 0.1
    row_means = dropped.mean(axis=1)
    assert row_means.std() < 0.1 and abs(np.polyfit(offset, row_means, 1)[0]) < 0.05
    # same model, only a_u left out: the two differ by a per-user constant
    gap = kept - dropped
    np.testing.assert_allclose(gap, gap[:, :1] * np.ones((1, n_items)), atol=1e-9)
    ones_kept = (remap_to_marginal(kept) == 1).sum(axis=1)
    ones_dropped = (remap_to_marginal(dropped) == 1).sum(axis=1)
    assert ones_kept.min() == 0 and ones_dropped.min() > 0.2 * n_items


@pytest.mark.realdata
@pytest.mark.slow
def test_ml_100k_semi_from_mirror() -> None:
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        pytest.skip(f"{MIRROR_ENV} not set: ml-100k-semi needs ML-100K from the local mirror")
    folder = Path(mirror) / "ml-100k"
    if not (folder / "u.data").is_file():
        pytest.skip(f"ml-100k is not in the mirror {mirror}")
    interactions, users, items, tuning = build_ml_100k_semi(
        load_ml_100k(folder), factors=(5,), l2=(3.0,), user_bias=False, seed=0
    )
    assert (len(users), len(items)) == (943, 1682)
    full = interactions[interactions["part"] == "full"]
    shares = full["rating"].value_counts(normalize=True).sort_index().to_numpy()
    np.testing.assert_allclose(shares, ICML16_MARGINAL, atol=1e-6)
    assert full["propensity"].astype(float).mean() == pytest.approx(0.05, rel=1e-5)
    n_mnar = int((interactions["part"] == "mnar").sum())
    assert abs(n_mnar - 0.05 * len(full)) < 4 * np.sqrt(0.05 * len(full))
    assert tuning["accuracy"].iat[0] > 0.35
    # without user biases in the completion every user keeps at least 50 true 1s, as
    # [ICML16]'s ROTATE truth of DCG@50 = 12.90 = sum_{r<=50} 1/log2(1+r) requires
    ones = full[full["rating"] == 1].groupby("user").size().reindex(range(943), fill_value=0)
    assert ones.min() >= 50
