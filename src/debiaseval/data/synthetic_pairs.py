"""The ``synthetic`` dataset at large shapes, sampled in O(pairs) (see docs/performance.md).

:func:`~debiaseval.data.synthetic.generate_synthetic` draws the full rating matrix
Y, so its time and memory grow with n_users × n_items (3.7e9 cells at ML-20M's
138,493 × 26,744). :func:`sample_synthetic` draws the same model of [ICML16]
§6.2 touching only the pairs it may observe:

- Y(u, i) is the rank-``rank`` latent score plus the item bias plus noise; the
  noise of a pair is a hash of (seed, u, i) mapped to a standard normal, so Y is a
  fixed function of the pair, evaluated lazily (an MNAR pair that is also in the
  MAR part has one rating);
- the rating cut points are the quantiles of the population marginal of the
  latent score: over users with N(0, I) factors, item i's latent score is
  N(b_i, |v_i|²/rank + noise²), so the marginal is a mixture over items, solved
  by bisection (the dense generator uses the empirical quantiles of its draw);
- k of P(u, i) = min(1, k α^max(0, 4 − Y) q_i^(1−α)) is fitted to the expected
  counts of every (item, rating) from the same Gaussians;
- pairs are observed by thinning: candidates are drawn per item with the item's
  largest propensity p_i = min(1, k q_i^(1−α)) by geometric skips over the users
  (exact Bernoulli(p_i) trials, O(candidates)), then each is kept with
  probability P(u, i) / p_i once its rating is known;
- the MAR part is ``n_mar`` distinct uniform items per user (rows with a
  repeated item are drawn again: uniform subsets).

Expected work is O(n_users·rank + n_items + Σ_i n_users·p_i), about 7 candidates
per observed pair at the default α = 0.25.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import ndtr, ndtri

from debiaseval.data.synthetic import check_synthetic, generate_synthetic, observation_scale

__all__ = ["SyntheticPairs", "pair_noise", "pair_rating_rows", "sample_synthetic"]

_CHUNK_CANDIDATES = 1 << 23  # expected candidates per chunk of items (memory, not the result)


@dataclass(frozen=True)
class SyntheticPairs:
    """The MNAR and MAR samples of the synthetic model without the full matrix."""

    mnar: pd.DataFrame
    """Observed MNAR pairs (user, item, rating, propensity), sorted by user, item."""
    mar: pd.DataFrame
    """MAR pairs (user, item, rating, propensity), sorted by user, item."""
    n_users: int
    n_items: int

    def mnar_frame(self) -> pd.DataFrame:
        """Observed MNAR pairs as (user, item, rating, propensity), sorted by user, item."""
        return self.mnar

    def mar_frame(self) -> pd.DataFrame:
        """MAR pairs as (user, item, rating, propensity), sorted by user, item."""
        return self.mar

    def to_raw(self):  # -> RawDataset (imported lazily to keep this module light)
        """The dataset in the loaders' raw form: MNAR and MAR parts with true propensities."""
        from debiaseval.data.raw import RawDataset

        keys = np.concatenate([_keys(f, self.n_items) for f in (self.mnar, self.mar)])
        props = np.concatenate(
            [self.mnar["propensity"].to_numpy(), self.mar["propensity"].to_numpy()]
        )
        unique, first = np.unique(keys, return_index=True)
        return RawDataset(
            mnar=self.mnar.drop(columns="propensity"),
            mar=self.mar.drop(columns="propensity"),
            users=pd.DataFrame({"user": np.arange(self.n_users, dtype=np.int64)}),
            items=pd.DataFrame({"item": np.arange(self.n_items, dtype=np.int64)}),
            propensities=pd.DataFrame(
                {
                    "user": unique // self.n_items,
                    "item": unique % self.n_items,
                    "propensity": props[first],
                }
            ),
        )


def _keys(frame: pd.DataFrame, n_items: int) -> np.ndarray:
    return frame["user"].to_numpy(np.int64) * n_items + frame["item"].to_numpy(np.int64)


def pair_noise(users: np.ndarray, items: np.ndarray, n_items: int, seed: int) -> np.ndarray:
    """A standard normal value per pair, a fixed function of (seed, user, item).

    SplitMix64 of the pair's key gives 53 uniform bits, mapped through the normal
    quantile function.
    """
    with np.errstate(over="ignore"):
        z = users.astype(np.uint64) * np.uint64(n_items) + items.astype(np.uint64)
        z += np.uint64(0x9E3779B97F4A7C15) * np.uint64(seed + 1)
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    uniform = ((z >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    return ndtri(uniform)


def _mixture_quantiles(mean: np.ndarray, sd: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Quantiles at ``cuts`` of the equal-weight mixture of N(mean_i, sd_i²), by bisection."""
    lo = np.full(cuts.size, (mean - 10 * sd).min())
    hi = np.full(cuts.size, (mean + 10 * sd).max())
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        below = ndtr((mid[:, None] - mean[None, :]) / sd[None, :]).mean(axis=1) < cuts
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


@dataclass(frozen=True)
class _Truth:
    """Y's latent score of a pair: factors' dot / √rank + item bias + noise · pair_noise."""

    user_factors: np.ndarray
    item_factors: np.ndarray
    bias: np.ndarray
    noise: float
    seed: int

    def latent(self, users: np.ndarray, items: np.ndarray, dot: np.ndarray | None = None):
        """The latent score (float64) of pairs (``dot``: their factor products, if known)."""
        if dot is None:
            dot = np.einsum(
                "ij,ij->i", self.user_factors[users], self.item_factors[items], dtype=np.float64
            )
        n_items, rank = self.item_factors.shape
        noise = pair_noise(users, items, n_items, self.seed)
        return dot * (1.0 / np.sqrt(rank)) + self.bias[items] + self.noise * noise

    def latent_by_item(self, users: np.ndarray, counts: np.ndarray, first: int) -> np.ndarray:
        """:meth:`latent` of pairs grouped by item (``counts[j]`` pairs of item ``first + j``):
        one matrix-vector product per item instead of a gather of item factors per pair."""
        rows = self.user_factors[users]
        dot = np.empty(users.size, dtype=np.float64)
        ends = np.cumsum(counts)
        for j, (lo, hi) in enumerate(zip(ends - counts, ends, strict=True)):
            if hi > lo:
                dot[lo:hi] = rows[lo:hi] @ self.item_factors[first + j]
        return self.latent(users, np.repeat(np.arange(first, first + counts.size), counts), dot)


def _bernoulli_users(
    p: np.ndarray, n_users: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(item position, user) of Bernoulli(p[j]) trials over every user, by geometric skips.

    Users of one item come out ascending; items in order.
    """
    mean = n_users * p
    draws = np.ceil(mean + 8.0 * np.sqrt(mean * (1.0 - p)) + 16.0).astype(np.int64)
    owner = np.repeat(np.arange(p.size), draws)
    gaps = rng.geometric(p[owner])
    ends = np.cumsum(draws)
    position = np.cumsum(gaps)
    before = np.concatenate([[0], position[ends[:-1] - 1]]) if p.size else np.empty(0, np.int64)
    position -= np.repeat(before, draws)
    short = position[ends - 1] <= n_users if p.size else np.empty(0, bool)
    if short.any():  # ran out of skips (probability ~1e-15 per item): redraw those items
        redo = np.flatnonzero(short)
        r_owner, r_users = _bernoulli_users(p[redo], n_users, rng)
        keep = ~short[owner] & (position <= n_users)
        owner = np.concatenate([owner[keep], redo[r_owner]])
        users = np.concatenate([position[keep] - 1, r_users])
        order = np.argsort(owner, kind="stable")
        return owner[order], users[order]
    keep = position <= n_users
    return owner[keep], position[keep] - 1


def _mar_items(n_users: int, n_items: int, n_mar: int, rng: np.random.Generator) -> np.ndarray:
    """``n_mar`` distinct uniform items per user, each row sorted (repeats drawn again)."""
    out = np.sort(rng.integers(0, n_items, size=(n_users, n_mar)), axis=1)
    bad = np.flatnonzero((np.diff(out, axis=1) == 0).any(axis=1))
    while bad.size:
        redo = np.sort(rng.integers(0, n_items, size=(bad.size, n_mar)), axis=1)
        out[bad] = redo
        bad = bad[(np.diff(redo, axis=1) == 0).any(axis=1)]
    return out


def _params(params: dict[str, Any], caller: str) -> dict[str, Any]:
    """``params`` with :func:`~debiaseval.data.synthetic.generate_synthetic`'s defaults."""
    defaults = {
        name: arg.default for name, arg in inspect.signature(generate_synthetic).parameters.items()
    }
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise TypeError(f"{caller}() got unexpected parameter(s) {unknown}")
    return {**defaults, **params}


def _model(p: dict[str, Any]) -> tuple[np.random.Generator, _Truth, np.ndarray, np.ndarray]:
    """The seeded latent model of ``p``: the generator after drawing the factors and biases,
    Y's latent score, the rating cut points and every item's latent sd."""
    n_users, n_items, rank, noise = p["n_users"], p["n_items"], p["rank"], p["noise"]
    marginal_arr = check_synthetic(
        alpha=p["alpha"], n_mar=p["n_mar"], n_items=n_items, marginal=p["marginal"]
    )
    rng = np.random.default_rng(p["seed"])
    user_factors = rng.standard_normal((n_users, rank), dtype=np.float32)
    item_factors = rng.standard_normal((n_items, rank), dtype=np.float32)
    bias = p["item_bias"] * rng.standard_normal(n_items)
    truth = _Truth(user_factors, item_factors, bias, noise, p["seed"])
    sd = np.sqrt((item_factors.astype(np.float64) ** 2).sum(axis=1) / rank + noise**2)
    cuts = np.cumsum(marginal_arr / marginal_arr.sum())[:-1]
    return rng, truth, _mixture_quantiles(bias, sd, cuts), sd


def pair_rating_rows(**params: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The full rating rows of the model :func:`sample_synthetic` samples from.

    Returns ``rows(users)``: Y of ``users`` × every item (int8, 1..5), the ratings the MNAR
    and MAR samples of the same parameters hold; memory grows with ``len(users)``, so ask
    for users in batches.
    """
    p = _params(params, "pair_rating_rows")
    _, truth, thresholds, _ = _model(p)
    n_items = p["n_items"]

    def rows(users: np.ndarray) -> np.ndarray:
        users = np.asarray(users, dtype=np.int64)
        factors = truth.user_factors[users].astype(np.float64)
        dot = (factors @ truth.item_factors.T.astype(np.float64)).ravel()
        pair_users = np.repeat(users, n_items)
        items = np.tile(np.arange(n_items, dtype=np.int64), users.size)
        latent = truth.latent(pair_users, items, dot)
        out = np.searchsorted(thresholds, latent, side="right") + 1
        return out.astype(np.int8).reshape(users.size, n_items)

    return rows


def sample_synthetic(**params: Any) -> SyntheticPairs:
    """The MNAR and MAR samples of the synthetic model in O(pairs) (module docstring).

    Same parameters as :func:`~debiaseval.data.synthetic.generate_synthetic`; same
    model, a different random draw.
    """
    p = _params(params, "sample_synthetic")
    n_users, n_items = p["n_users"], p["n_items"]
    alpha, n_mar = p["alpha"], p["n_mar"]
    rng, truth, thresholds, sd = _model(p)
    bias = truth.bias
    edges = np.concatenate([[-np.inf], thresholds, [np.inf]])
    cdf = ndtr((edges[None, :] - bias[:, None]) / sd[:, None])
    counts = n_users * np.diff(cdf, axis=1)  # expected pairs of every (item, rating)

    popularity = (rng.permutation(n_items) + 1.0) ** -p["popularity_exponent"]
    popularity /= popularity.mean()
    item_factor = popularity ** (1.0 - alpha)
    rating_factor = alpha ** np.maximum(0, 4 - np.arange(1, 6))
    base = item_factor[:, None] * rating_factor[None, :]
    scale = observation_scale(base.ravel(), counts.ravel(), p["density"] * n_users * n_items)
    top = np.minimum(1.0, scale * item_factor)  # the largest propensity of every item
    accept = np.minimum(1.0, scale * base) / top[:, None]  # P(u, i) / top[i] by (item, rating)

    ratings_parts, users_parts, counts_per_item = [], [], np.zeros(n_items, dtype=np.int64)
    start = 0
    expected = np.cumsum(n_users * top)
    while start < n_items:
        stop = int(np.searchsorted(expected, expected[start] + _CHUNK_CANDIDATES, side="right"))
        stop = max(stop, start + 1)
        owner, users = _bernoulli_users(top[start:stop], n_users, rng)
        per_item = np.bincount(owner, minlength=stop - start)
        latent = truth.latent_by_item(users, per_item, start)
        rating = np.searchsorted(thresholds, latent, side="right")  # rating - 1
        keep = rng.random(users.size) < accept[start:stop][owner, rating]
        counts_per_item[start:stop] = np.bincount(owner[keep], minlength=stop - start)
        users_parts.append(users[keep].astype(np.int32))
        ratings_parts.append((rating[keep] + 1).astype(np.int8))
        start = stop
    by_item = sp.csc_matrix(
        (
            np.concatenate(ratings_parts),
            np.concatenate(users_parts),
            np.concatenate([[0], np.cumsum(counts_per_item)]),
        ),
        shape=(n_users, n_items),
    ).tocsr()
    mnar = _frame(by_item, item_factor, rating_factor, scale)

    mar_items = _mar_items(n_users, n_items, n_mar, rng).ravel()
    mar_users = np.repeat(np.arange(n_users, dtype=np.int64), n_mar)
    latent = truth.latent(mar_users, mar_items)
    mar_ratings = (np.searchsorted(thresholds, latent, side="right") + 1).astype(np.int8)
    mar = _pairs_frame(mar_users, mar_items, mar_ratings, item_factor, rating_factor, scale)
    return SyntheticPairs(mnar, mar, n_users, n_items)


def _frame(by_user: sp.csr_matrix, item_factor, rating_factor, scale) -> pd.DataFrame:
    users = np.repeat(np.arange(by_user.shape[0], dtype=np.int64), np.diff(by_user.indptr))
    items = by_user.indices.astype(np.int64)
    return _pairs_frame(users, items, by_user.data, item_factor, rating_factor, scale)


def _pairs_frame(users, items, ratings, item_factor, rating_factor, scale) -> pd.DataFrame:
    prop = np.minimum(1.0, scale * rating_factor[ratings - 1] * item_factor[items])
    return pd.DataFrame(
        {
            "user": users,
            "item": items,
            "rating": ratings.astype(np.float64),
            "propensity": prop.astype(np.float32).astype(np.float64),
        }
    )
