"""The embedded ``synthetic`` dataset: a full ground truth with known propensities.

See docs/datasets.md.

A full rating matrix Y is drawn from low-rank user/item factors plus an item
bias and Gaussian noise, then quantised by rank to ratings 1..5 with a target
marginal (as in [ICML16] section 6.2). The MNAR observation model follows the
semi-synthetic one of [ICML16] section 6.2 with an added popularity factor:

    P(u, i) = min(1, k * alpha^max(0, 4 - Y(u, i)) * q_i^(1 - alpha)),

where q_i is a Zipf popularity factor (mean 1) with exponent
``popularity_exponent`` and k is chosen so that the expected number of observed
pairs is ``density * U * I``. alpha = 1 is MCAR (every pair equally likely).
The MAR part holds ``n_mar`` items per user drawn uniformly without replacement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "DENSE_CELLS",
    "SyntheticData",
    "check_synthetic",
    "generate_synthetic",
    "observation_scale",
]

DENSE_CELLS = 1 << 26
"""Largest n_users × n_items drawn as a full matrix by :func:`synthetic_raw` (about 1 GB
peak); larger shapes are sampled pair by pair."""


@dataclass(frozen=True)
class SyntheticData:
    """A generated dataset together with the truth that produced it."""

    ratings: np.ndarray
    """Full rating matrix Y, int8 in 1..5, shape (n_users, n_items)."""
    propensities: np.ndarray
    """True MNAR observation probability of every pair, float32, same shape."""
    observed: np.ndarray
    """Boolean MNAR observation indicator O ~ Bernoulli(propensities)."""
    mar_items: np.ndarray
    """The n_mar uniformly drawn items of every user, shape (n_users, n_mar)."""

    def mnar_frame(self) -> pd.DataFrame:
        """Observed MNAR pairs as (user, item, rating, propensity), sorted by user, item."""
        users, items = np.nonzero(self.observed)
        return pd.DataFrame(
            {
                "user": users.astype(np.int64),
                "item": items.astype(np.int64),
                "rating": self.ratings[users, items].astype(np.float64),
                "propensity": self.propensities[users, items].astype(np.float64),
            }
        )

    def mar_frame(self) -> pd.DataFrame:
        """MAR pairs as (user, item, rating, propensity), sorted by user, item."""
        n_users, n_mar = self.mar_items.shape
        users = np.repeat(np.arange(n_users), n_mar)
        items = np.sort(self.mar_items, axis=1).ravel()
        return pd.DataFrame(
            {
                "user": users.astype(np.int64),
                "item": items.astype(np.int64),
                "rating": self.ratings[users, items].astype(np.float64),
                "propensity": self.propensities[users, items].astype(np.float64),
            }
        )

    def to_raw(self):  # -> RawDataset (imported lazily to keep this module light)
        """The dataset in the loaders' raw form: MNAR and MAR parts with true propensities."""
        from debiaseval.data.raw import RawDataset

        mnar, mar = self.mnar_frame(), self.mar_frame()
        pairs = pd.concat([mnar, mar], ignore_index=True)[["user", "item", "propensity"]]
        pairs = pairs.drop_duplicates(["user", "item"]).sort_values(["user", "item"])
        n_users, n_items = self.ratings.shape
        return RawDataset(
            mnar=mnar.drop(columns="propensity"),
            mar=mar.drop(columns="propensity"),
            users=pd.DataFrame({"user": np.arange(n_users, dtype=np.int64)}),
            items=pd.DataFrame({"item": np.arange(n_items, dtype=np.int64)}),
            propensities=pairs.reset_index(drop=True),
        )


def _quantise(latent: np.ndarray, marginal: np.ndarray) -> np.ndarray:
    """Map values to ratings 1..5 by rank so that the ratings follow ``marginal``."""
    cuts = np.cumsum(marginal / marginal.sum())[:-1]
    thresholds = np.quantile(latent, cuts)
    return (np.searchsorted(thresholds, latent, side="right") + 1).astype(np.int8)


def observation_scale(base: np.ndarray, counts: np.ndarray, target: float) -> float:
    """Scale k with sum(counts * min(1, k * base)) = target, by bisection on k.

    ``base`` holds the distinct unscaled propensities and ``counts`` how many
    pairs have each; the clipping at 1 makes the sum piecewise linear in k.
    """
    if target >= counts.sum():
        raise ValueError(f"density target {target:g} needs every pair observed")
    lo, hi = 0.0, 1.0 / base.min()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.dot(counts, np.minimum(1.0, mid * base)) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def check_synthetic(
    *, alpha: float, n_mar: int, n_items: int, marginal: tuple[float, ...] | list[float]
) -> np.ndarray:
    """The ``synthetic`` block's checks; returns the marginal as an array."""
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    if not 1 <= n_mar <= n_items:
        raise ValueError(f"n_mar must be in [1, n_items={n_items}], got {n_mar}")
    marginal_arr = np.asarray(marginal, dtype=np.float64)
    if marginal_arr.shape != (5,) or marginal_arr.min() < 0 or marginal_arr.sum() <= 0:
        raise ValueError(f"marginal must be 5 non-negative weights, got {list(marginal)}")
    return marginal_arr


def generate_synthetic(
    *,
    n_users: int = 300,
    n_items: int = 400,
    rank: int = 8,
    noise: float = 0.5,
    item_bias: float = 1.0,
    marginal: tuple[float, ...] | list[float] = (0.526, 0.242, 0.144, 0.062, 0.026),
    density: float = 0.05,
    alpha: float = 0.25,
    popularity_exponent: float = 1.0,
    n_mar: int = 20,
    seed: int = 0,
) -> SyntheticData:
    """Generate Y, the true propensities, an MNAR sample and a MAR sample (docs/datasets.md)."""
    marginal_arr = check_synthetic(alpha=alpha, n_mar=n_mar, n_items=n_items, marginal=marginal)
    rng = np.random.default_rng(seed)

    user_factors = rng.standard_normal((n_users, rank), dtype=np.float32)
    item_factors = rng.standard_normal((n_items, rank), dtype=np.float32)
    bias = item_bias * rng.standard_normal(n_items, dtype=np.float32)
    latent = user_factors @ item_factors.T
    latent *= np.float32(1.0 / np.sqrt(rank))
    latent += bias
    latent += np.float32(noise) * rng.standard_normal((n_users, n_items), dtype=np.float32)
    ratings = _quantise(latent, marginal_arr)
    del latent

    popularity = (rng.permutation(n_items) + 1.0) ** -popularity_exponent
    popularity /= popularity.mean()
    item_factor = popularity ** (1.0 - alpha)
    rating_factor = alpha ** np.maximum(0, 4 - np.arange(1, 6))  # indexed by rating - 1
    counts = np.stack([(ratings == r).sum(axis=0) for r in range(1, 6)], axis=1)
    base = item_factor[:, None] * rating_factor[None, :]
    scale = observation_scale(base.ravel(), counts.ravel(), density * n_users * n_items)
    propensities = np.minimum(
        1.0, scale * rating_factor[ratings - 1] * item_factor[None, :]
    ).astype(np.float32)
    observed = rng.random((n_users, n_items), dtype=np.float32) < propensities

    keys = rng.random((n_users, n_items), dtype=np.float32)
    mar_items = np.argpartition(keys, n_mar - 1, axis=1)[:, :n_mar]
    return SyntheticData(ratings, propensities, observed, mar_items)
