"""Semi-synthetic ML-100K, ``ml-100k-semi`` ([ICML16] §6.2, docs/datasets.md).

1. Complete the ML-100K ratings with biased MF (:class:`WeightedMF`, squared error,
   weights 1); rank d and L2 λ are chosen on a seeded 90/10 split of the ratings by
   the 0/1 accuracy of the rounded predictions on the 10% (the first grid point wins
   ties), and the chosen model is refitted on all ratings. The completed matrix is its
   prediction v_uᵀw_i + a_u + b_i + c (``user_bias=True``, the default), or
   v_uᵀw_i + b_i + c with the fitted user biases left out (``user_bias=False``), so that
   no user's row is shifted as a whole and every user keeps low ratings
   (docs/experiments/e3.md, "Departures from the paper").
2. Re-map the completed matrix to ratings 1..5 by rank so that the full matrix has the
   marginal p exactly up to rounding: the bottom round(p_1·N) entries → 1, the next
   → 2, … (ties broken by position, so the result is deterministic).
3. Observation model P_{u,i} = k if Y_{u,i} ≥ 4, else k·α^{4−Y_{u,i}}, with k such
   that Σ P = density·U·I (5% by default; P is capped at 1 and k re-solved if needed),
   and one MNAR sample O ~ Bernoulli(P).

Canonical form: ``part`` ``mnar`` = the observed pairs, ``full`` = every pair of the
U×I matrix; both carry the true ``propensity`` of the pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from debiaseval.data.preprocess import build_interactions
from debiaseval.data.raw import RawDataset
from debiaseval.data.splits import run_rng
from debiaseval.data.synthetic import observation_scale
from debiaseval.evaluation.metrics import accuracy
from debiaseval.recommenders.rating_mf import WeightedMF

__all__ = [
    "ICML16_MARGINAL",
    "SemiSynthetic",
    "build_ml_100k_semi",
    "complete_ratings",
    "draw_observed",
    "full_matrices",
    "make_semisynthetic",
    "observation_propensities",
    "remap_to_marginal",
    "semisynthetic_frames",
]

ICML16_MARGINAL = (0.526, 0.242, 0.144, 0.062, 0.026)
"""Marginal of ratings 1..5 of the full semi-synthetic matrix ([ICML16] §6.2)."""


@dataclass(frozen=True)
class SemiSynthetic:
    """A semi-synthetic dataset: full truth, true propensities and one MNAR sample."""

    ratings: np.ndarray
    """Full rating matrix Y, int8 in 1..5, shape (n_users, n_items)."""
    propensities: np.ndarray
    """True observation probability P of every pair, float64, same shape."""
    observed: np.ndarray
    """Boolean MNAR observation indicator O ~ Bernoulli(P)."""
    tuning: pd.DataFrame
    """Completion grid: ``factors``, ``l2``, ``accuracy`` on the 10%, ``selected``."""


def complete_ratings(
    users: np.ndarray,
    items: np.ndarray,
    ratings: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    factors: Sequence[int],
    l2: Sequence[float],
    holdout: float = 0.1,
    user_bias: bool = True,
    rng: np.random.Generator,
) -> tuple[np.ndarray, pd.DataFrame]:
    """Completed (real-valued) U×I matrix from biased MF tuned for 0/1 accuracy ([ICML16] §6.2).

    Returns the matrix of the best (factors, l2) refitted on all ratings, and one row per
    grid point with its held-out accuracy. The grid is scored with the full model
    (user biases included); with ``user_bias=False`` the completed matrix leaves the fitted
    user biases out.
    """
    if not 0 < holdout < 1:
        raise ValueError(f"holdout must be in (0, 1), got {holdout}")
    n = len(ratings)
    held = np.zeros(n, dtype=bool)
    held[rng.permutation(n)[: round(holdout * n)]] = True
    fit, test = ~held, held
    rows = []
    for d in factors:
        for lam in l2:
            model = WeightedMF(factors=int(d), l2=float(lam)).fit(
                users[fit], items[fit], ratings[fit], n_users=n_users, n_items=n_items, rng=rng
            )
            acc = accuracy(ratings[test], model.predict(users[test], items[test]))
            rows.append({"factors": int(d), "l2": float(lam), "accuracy": acc})
    tuning = pd.DataFrame(rows)
    best = int(np.argmax(tuning["accuracy"].to_numpy()))
    tuning["selected"] = np.arange(len(tuning)) == best
    model = WeightedMF(
        factors=int(tuning["factors"].iat[best]), l2=float(tuning["l2"].iat[best])
    ).fit(users, items, ratings, n_users=n_users, n_items=n_items, rng=rng)
    completed = model.predict_matrix()
    if not user_bias:
        completed -= model.user_bias_[:, None]
    return completed, tuning


def remap_to_marginal(
    values: np.ndarray, marginal: Sequence[float] = ICML16_MARGINAL
) -> np.ndarray:
    """Ratings 1..len(marginal) by rank of ``values`` with the given marginal (int8, same shape).

    The sizes of the rating classes are differences of round(cumulative p · N), so they add
    up to N exactly; ties in ``values`` are broken by position (stable sort).
    """
    p = np.asarray(marginal, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or p.min() < 0 or p.sum() <= 0:
        raise ValueError(f"marginal must be non-negative weights with a positive sum, got {p}")
    flat = np.asarray(values, dtype=np.float64).ravel()
    if not np.all(np.isfinite(flat)):
        raise ValueError("values to re-map contain NaN or infinite entries")
    sizes = np.diff(np.rint(np.cumsum(p) / p.sum() * flat.size).astype(np.int64), prepend=0)
    out = np.empty(flat.size, dtype=np.int8)
    out[np.argsort(flat, kind="stable")] = np.repeat(np.arange(1, p.size + 1, dtype=np.int8), sizes)
    return out.reshape(np.shape(values))


def observation_propensities(ratings: np.ndarray, *, alpha: float, density: float) -> np.ndarray:
    """P = k·α^{max(0, 4−Y)} with Σ P = density·U·I ([ICML16] §6.2); float64, capped at 1."""
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    if not 0 < density < 1:
        raise ValueError(f"density must be in (0, 1), got {density}")
    y = np.asarray(ratings)
    if y.size == 0 or y.min() < 1 or y.max() > 5:
        raise ValueError("ratings must be a non-empty matrix of values in 1..5")
    factor = alpha ** np.maximum(0, 4 - np.arange(1, 6)).astype(np.float64)
    counts = np.bincount(y.ravel().astype(np.int64) - 1, minlength=5).astype(np.float64)
    present = counts > 0
    scale = observation_scale(factor[present], counts[present], density * y.size)
    return np.minimum(1.0, scale * factor[y.astype(np.int64) - 1])


def draw_observed(propensities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """O ~ Bernoulli(P) elementwise (boolean, same shape)."""
    p = np.asarray(propensities, dtype=np.float64)
    return rng.random(p.shape) < p


def make_semisynthetic(
    interactions: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
    alpha: float = 0.25,
    density: float = 0.05,
    marginal: Sequence[float] = ICML16_MARGINAL,
    factors: Sequence[int] = (5, 10, 20),
    l2: Sequence[float] = (1.0, 3.0, 10.0),
    user_bias: bool = True,
    seed: int = 0,
) -> SemiSynthetic:
    """``ml-100k-semi`` from canonical ML-100K interactions, deterministic from ``seed``."""
    u = interactions["user"].to_numpy(np.int64)
    i = interactions["item"].to_numpy(np.int64)
    y = interactions["rating"].to_numpy(np.float64)
    completed, tuning = complete_ratings(
        u,
        i,
        y,
        n_users=n_users,
        n_items=n_items,
        factors=factors,
        l2=l2,
        user_bias=user_bias,
        rng=run_rng(seed, "ml-100k-semi", "complete"),
    )
    ratings = remap_to_marginal(completed, marginal)
    propensities = observation_propensities(ratings, alpha=alpha, density=density)
    observed = draw_observed(propensities, run_rng(seed, "ml-100k-semi", "observe"))
    return SemiSynthetic(ratings, propensities, observed, tuning)


def semisynthetic_frames(data: SemiSynthetic) -> pd.DataFrame:
    """Canonical interactions: ``mnar`` (observed pairs) then ``full`` (every pair).

    Columns ``user``, ``item`` (int32), ``rating`` (float32), ``part``, ``propensity``
    (float32, the true P of the pair); sorted by part, user, item.
    """
    n_users, n_items = data.ratings.shape
    obs_u, obs_i = np.nonzero(data.observed)
    all_u = np.repeat(np.arange(n_users), n_items)
    all_i = np.tile(np.arange(n_items), n_users)
    users = np.concatenate([obs_u, all_u])
    items = np.concatenate([obs_i, all_i])
    part = np.repeat(np.array(["mnar", "full"], dtype=object), [obs_u.size, all_u.size])
    return pd.DataFrame(
        {
            "user": users.astype(np.int32),
            "item": items.astype(np.int32),
            "rating": data.ratings[users, items].astype(np.float32),
            "part": part,
            "propensity": data.propensities[users, items].astype(np.float32),
        }
    )


def build_ml_100k_semi(
    raw: RawDataset, **params
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Canonical ``(interactions, users, items, tuning)`` of ``ml-100k-semi`` from raw ML-100K.

    ``params`` go to :func:`make_semisynthetic` (``alpha``, ``density``, ``marginal``,
    ``factors``, ``l2``, ``user_bias``, ``seed``); ``users``/``items`` map ids to ML-100K's raw ids.
    """
    base, users, items = build_interactions(raw)
    data = make_semisynthetic(base, n_users=len(users), n_items=len(items), **params)
    return semisynthetic_frames(data), users, items, data.tuning


def full_matrices(interactions: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The full rating matrix (int8) and propensity matrix (float64) from the ``full`` part."""
    full = interactions[interactions["part"] == "full"]
    if full.empty or "propensity" not in full.columns:
        raise ValueError("interactions need a 'full' part with a 'propensity' column")
    n_users = int(full["user"].max()) + 1
    n_items = int(full["item"].max()) + 1
    if len(full) != n_users * n_items:
        raise ValueError(
            f"the 'full' part has {len(full)} rows, expected every pair ({n_users}x{n_items})"
        )
    u = full["user"].to_numpy(np.int64)
    i = full["item"].to_numpy(np.int64)
    ratings = np.zeros((n_users, n_items), dtype=np.int8)
    propensities = np.zeros((n_users, n_items))
    ratings[u, i] = full["rating"].to_numpy()
    propensities[u, i] = full["propensity"].to_numpy(np.float64)
    return ratings, propensities
