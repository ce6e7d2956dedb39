"""Semi-real data: a real, fully observed rating block with a simulated exposure
(docs/datasets.md, "Semi-real Jester").

The ratings Y are real (every value of the block is known, so the truth is exact); only who
saw what is simulated, with the observation model of the ``synthetic`` dataset
(:mod:`debiaseval.data.synthetic`, after [ICML16] §6.2):

    P(u, i) = min(1, k * alpha^f(Y(u, i)) * q_i^(1 - alpha)),

where f is the synthetic model's exponent max(0, 4 - s) of the rating mapped linearly from
the block's scale [low, high] to stars s in [1, 5] (so f = 0 at 4 stars and above, 3 at the
bottom of the scale), q_i a Zipf popularity factor (mean 1, exponent ``popularity_exponent``)
over a random order of the items, and k set so that the expected number of observed pairs is
``density`` · U · I. alpha = 1 is missing completely at random. The MNAR part is
O ~ Bernoulli(P); the MAR part holds ``n_mar`` items per user drawn uniformly from the items O
left unobserved (``mar_from="unobserved"``, the default: all of them when fewer remain, and no
MAR pair is also an MNAR pair), or from all items (``"all"``, as ``synthetic`` draws it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from debiaseval.data.raw import RawDataset
from debiaseval.data.synthetic import observation_scale

__all__ = [
    "MAR_FROM",
    "FullBlock",
    "SemiRealDraw",
    "block_frames",
    "draw_semireal",
    "full_block",
    "selection_exponent",
    "semireal_propensities",
    "semireal_raw",
]


MAR_FROM = ("unobserved", "all")
"""Where the MAR sample's items come from: those the MNAR draw left unobserved, or all."""


@dataclass(frozen=True)
class FullBlock:
    """A fully observed rating block: every user of it rated every item of it."""

    ratings: np.ndarray
    """Y, float64 (n_users, n_items), rows and columns in raw-id order."""
    users: np.ndarray
    """The raw ids of its rows (int64)."""
    items: np.ndarray
    """The raw ids of its columns (int64)."""
    scale: tuple[float, float]
    """The rating scale [low, high] the ratings come from."""


@dataclass(frozen=True)
class SemiRealDraw:
    """One draw of the exposure on a :class:`FullBlock`."""

    propensities: np.ndarray
    """P(u, i) of every pair, float64, the block's shape."""
    observed: np.ndarray
    """The MNAR observation O ~ Bernoulli(P), bool."""
    mar: np.ndarray
    """The MAR sample, bool: up to ``n_mar`` items per user, uniformly drawn."""


def full_block(raw: RawDataset, *, scale: tuple[float, float]) -> FullBlock:
    """The users of ``raw``'s MNAR part who rated every item it has, over all its items
    (raw ids sorted; the block of Jester5k: 1,473 users × 100 jokes)."""
    mnar = raw.mnar
    items = np.unique(mnar["item"].to_numpy(np.int64))
    counts = mnar.groupby("user", sort=True)["item"].nunique()
    users = counts.index.to_numpy(np.int64)[counts.to_numpy() == len(items)]
    if users.size == 0:
        raise ValueError(f"dataset {raw.name!r} has no user who rated all {len(items)} items")
    rows = mnar[mnar["user"].isin(users)]
    ratings = np.full((users.size, items.size), np.nan)
    ratings[
        np.searchsorted(users, rows["user"].to_numpy(np.int64)),
        np.searchsorted(items, rows["item"].to_numpy(np.int64)),
    ] = rows["rating"].to_numpy(np.float64)
    return FullBlock(ratings, users, items, (float(scale[0]), float(scale[1])))


def block_frames(block: FullBlock) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``block`` as fully exposed data, the form of
    :func:`debiaseval.data.kuairec.fully_exposed_frame`: ``(interactions, users, items)`` with
    ``interactions`` every (user, item, rating) of the block, ``part`` = ``"full"``, ids its
    row and column indices (int32), and ``users``/``items`` mapping them to the source's raw
    ids (``raw_user``/``raw_item``)."""
    n_users, n_items = block.ratings.shape
    users, items = np.indices(block.ratings.shape, dtype=np.int32).reshape(2, -1)
    interactions = pd.DataFrame(
        {
            "user": users,
            "item": items,
            "rating": block.ratings.ravel().astype(np.float32),
            "part": "full",
        }
    )
    return (
        interactions,
        pd.DataFrame({"user": np.arange(n_users, dtype=np.int32), "raw_user": block.users}),
        pd.DataFrame({"item": np.arange(n_items, dtype=np.int32), "raw_item": block.items}),
    )


def selection_exponent(ratings: np.ndarray, scale: tuple[float, float]) -> np.ndarray:
    """f(Y) = max(0, 4 - s(Y)), s the rating mapped linearly from ``scale`` to stars 1..5: the
    ``synthetic`` model's exponent of alpha on a continuous scale (Jester: max(0, 1 - Y/5))."""
    low, high = scale
    stars = 1.0 + 4.0 * (np.asarray(ratings, dtype=np.float64) - low) / (high - low)
    return np.maximum(0.0, 4.0 - stars)


def semireal_propensities(
    ratings: np.ndarray,
    popularity: np.ndarray,
    *,
    alpha: float,
    density: float,
    scale: tuple[float, float],
) -> np.ndarray:
    """P = min(1, k · alpha^f(Y) · q^(1 - alpha)) with k such that sum(P) = density · U · I
    (:func:`~debiaseval.data.synthetic.observation_scale`); ``popularity`` is q, one per item."""
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    if not 0 < density < 1:
        raise ValueError(f"density must be in (0, 1), got {density}")
    base = alpha ** selection_exponent(ratings, scale) * (popularity ** (1.0 - alpha))[None, :]
    flat = base.ravel()
    scale_k = observation_scale(flat, np.ones(flat.size), density * flat.size)
    return np.minimum(1.0, scale_k * base)


def draw_semireal(
    block: FullBlock,
    *,
    alpha: float = 0.25,
    density: float = 0.2,
    n_mar: int = 10,
    popularity_exponent: float = 1.0,
    mar_from: str = "unobserved",
    seed: int = 0,
) -> SemiRealDraw:
    """One draw of the exposure on ``block``, deterministic from ``seed``: the popularity order
    of the items, O ~ Bernoulli(P) and the MAR sample, from the items O left unobserved or from
    all items (``mar_from``; module docstring)."""
    if n_mar < 1:
        raise ValueError(f"n_mar must be at least 1, got {n_mar}")
    if mar_from not in MAR_FROM:
        raise ValueError(f"mar_from must be one of {', '.join(MAR_FROM)}, got {mar_from!r}")
    n_users, n_items = block.ratings.shape
    rng = np.random.default_rng(seed)
    popularity = (rng.permutation(n_items) + 1.0) ** -popularity_exponent
    popularity /= popularity.mean()
    propensities = semireal_propensities(
        block.ratings, popularity, alpha=alpha, density=density, scale=block.scale
    )
    observed = rng.random((n_users, n_items)) < propensities
    keys = rng.random((n_users, n_items))
    if mar_from == "unobserved":
        keys[observed] = np.inf
    take = min(n_mar, n_items)
    chosen = np.argpartition(keys, take - 1, axis=1)[:, :take]
    mar = np.zeros_like(observed)
    rows = np.repeat(np.arange(n_users), take)
    mar[rows, chosen.ravel()] = np.isfinite(keys[rows, chosen.ravel()])
    return SemiRealDraw(propensities, observed, mar)


def _pairs(block: FullBlock, draw: SemiRealDraw, mask: np.ndarray) -> pd.DataFrame:
    users, items = np.nonzero(mask)
    return pd.DataFrame(
        {
            "user": users.astype(np.int64),
            "item": items.astype(np.int64),
            "rating": block.ratings[users, items],
            "propensity": draw.propensities[users, items],
        }
    )


def semireal_raw(block: FullBlock, *, name: str, **params: float | int | str) -> RawDataset:
    """One draw on ``block`` (:func:`draw_semireal` with ``params``) in the loaders' raw form:
    MNAR and MAR parts with the true propensities, raw ids the block's row and column indices
    (0-based, so that the truth's rows are the block's); ``users``/``items`` keep the source's
    raw ids as ``source_user``/``source_item``."""
    draw = draw_semireal(block, **params)  # type: ignore[arg-type]
    mnar, mar = _pairs(block, draw, draw.observed), _pairs(block, draw, draw.mar)
    pairs = pd.concat([mnar, mar], ignore_index=True)[["user", "item", "propensity"]]
    n_users, n_items = block.ratings.shape
    items = pd.DataFrame({"item": np.arange(n_items, dtype=np.int64), "source_item": block.items})
    return RawDataset(
        mnar=mnar.drop(columns="propensity"),
        mar=mar.drop(columns="propensity"),
        users=pd.DataFrame(
            {"user": np.arange(n_users, dtype=np.int64), "source_user": block.users}
        ),
        items=items,
        propensities=pairs.sort_values(["user", "item"]).reset_index(drop=True),
        name=name,
    )
