"""Active-learning elicitation strategies ([FLAIRS20]; docs/experiments/e2.md).

Carraro & Bridge, *Debiased offline evaluation of active learning in recommender
systems*, FLAIRS-33 2020, §3: each active user is asked about ``n`` items that
they have no known rating for (K_before); the ratings they can give are the
asked items found in the hidden set H (:func:`elicit`).

A strategy is one function ``(ctx, users) -> scores`` returning a dense
(len(users), n_items) float array (higher = asked first), registered in
:data:`STRATEGIES`; :func:`ask` scores the active users in batches, masks their
known items and keeps the top ``n`` of each row (one ``argpartition`` per batch,
:func:`debiaseval.recommenders.ranking.top_k`, ties to the smaller item id). Strategies:

- RND, POP, HP: the paper's three ([FLAIRS20] §3): uniform random, most known
  ratings, highest score of the MF trained on K_before.
- POPENT: log10(popularity) × entropy of the item's known ratings
  (Rashid et al., *Getting to know you: learning new user preferences in
  recommender systems*, IUI 2002, §3.3 "Pop*Ent").
- VAR: variance of the item's known ratings, an uncertainty strategy
  (Kohrs & Merialdo, *Improving collaborative filtering for new users by smart
  object selection*, ICME 2001; Elahi, Ricci & Rubens, *A survey of active
  learning in collaborative filtering recommender systems*, Computer Science
  Review 2016, §4.1.2).
- BIN: binary prediction "will the user have rated it": MF trained on every
  known pair as a positive, whatever its rating (Elahi, Ricci & Rubens,
  *Active learning strategies for rating elicitation in collaborative
  filtering: a system-wide perspective*, ACM TIST 2014, §4 "Binary Prediction").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.evaluation.metrics import train_overlap_mask
from debiaseval.recommenders.base import Recommender
from debiaseval.recommenders.ranking import empty_recommendations, top_k
from debiaseval.recommenders.registry import make_recommender

__all__ = [
    "STRATEGIES",
    "ElicitationContext",
    "ask",
    "elicit",
    "uniform_hash",
]


def uniform_hash(seed: int, users: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Uniform [0, 1) numbers, a fixed function of (seed, user, item) (SplitMix64 finaliser).

    Broadcasts ``users`` against ``items``. RND's scores come from it, so that they
    do not depend on the batching of the users (Steele et al., *Fast splittable
    pseudorandom number generators*, OOPSLA 2014).
    """
    u = np.asarray(users, dtype=np.uint64)
    i = np.asarray(items, dtype=np.uint64)
    z = np.uint64((int(seed) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
    z = z + u * np.uint64(0xD1B54A32D192ED03) + i * np.uint64(0x8CB92BA72F3D8DD7)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


@dataclass
class ElicitationContext:
    """What a strategy may look at: the known ratings K_before, never H or T.

    ``known``: n_users × n_items CSR matrix of the known ratings. ``algorithm``
    and ``mf_params``: the recommender of HP and BIN and its hyperparameters (those
    E2's tuning selected; the LightFM MF by default, any name of
    :func:`~debiaseval.recommenders.resolve_recommender`); ``seed``: their fit seed
    and RND's stream.
    """

    known: sp.csr_matrix
    seed: int = 0
    mf_params: Mapping[str, Any] = field(default_factory=dict)
    algorithm: str = "mf"

    @property
    def n_items(self) -> int:
        """Number of items (columns of ``known``)."""
        return int(self.known.shape[1])

    @cached_property
    def popularity(self) -> np.ndarray:
        """Known ratings per item (float64)."""
        return np.bincount(self.known.indices, minlength=self.n_items).astype(np.float64)

    @cached_property
    def mf(self) -> Recommender:
        """The model of HP: ``algorithm`` with ``mf_params`` fitted on K_before."""
        return make_recommender(self.algorithm, **self.mf_params).fit(self.known, seed=self.seed)

    @cached_property
    def binary(self) -> Recommender:
        """The model of BIN: the same model trained on every known pair as a positive
        (``positives_only=False``, a hyperparameter BIN needs of the model)."""
        params = {**self.mf_params, "positives_only": False}
        return make_recommender(self.algorithm, **params).fit(self.known, seed=self.seed)

    def _rows(self, row: np.ndarray, users: np.ndarray) -> np.ndarray:
        return np.tile(row, (len(users), 1))


def _rating_codes(ratings: np.ndarray) -> tuple[np.ndarray, int]:
    values, codes = np.unique(ratings, return_inverse=True)
    return codes.astype(np.int64), len(values)


def rnd(ctx: ElicitationContext, users: np.ndarray) -> np.ndarray:
    """RND ([FLAIRS20] §3): uniform random scores, a fixed function of (seed, user, item)."""
    return uniform_hash(ctx.seed, np.asarray(users)[:, None], np.arange(ctx.n_items)[None, :])


def pop(ctx: ElicitationContext, users: np.ndarray) -> np.ndarray:
    """POP ([FLAIRS20] §3): the number of known ratings of the item."""
    return ctx._rows(ctx.popularity, users)


def hp(ctx: ElicitationContext, users: np.ndarray) -> np.ndarray:
    """HP ([FLAIRS20] §3): the score of the MF trained on K_before (highest predicted)."""
    return ctx.mf.score(np.asarray(users, dtype=np.int64))


def popent(ctx: ElicitationContext, users: np.ndarray) -> np.ndarray:
    """POPENT (Rashid et al. 2002): log10(max(pop, 1)) × entropy (bits) of the known ratings.

    The entropy is that of the item's distribution over the rating values; an item
    without known ratings scores 0.
    """
    coo = ctx.known.tocoo()
    codes, n_values = _rating_codes(coo.data)
    counts = np.bincount(
        coo.col.astype(np.int64) * n_values + codes, minlength=ctx.n_items * n_values
    ).reshape(ctx.n_items, n_values)
    total = counts.sum(axis=1, keepdims=True)
    p = np.divide(counts, total, out=np.zeros(counts.shape), where=total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.sum(np.where(p > 0, p * np.log2(p), 0.0), axis=1)
    return ctx._rows(np.log10(np.maximum(ctx.popularity, 1.0)) * entropy, users)


def var(ctx: ElicitationContext, users: np.ndarray) -> np.ndarray:
    """VAR (Kohrs & Merialdo 2001): variance (ddof 0) of the item's known ratings; 0 if < 2."""
    n = ctx.popularity
    ratings = ctx.known.astype(np.float64).tocsc()
    sums = np.asarray(ratings.sum(axis=0)).ravel()
    squares = np.asarray(ratings.multiply(ratings).sum(axis=0)).ravel()
    mean = np.divide(sums, n, out=np.zeros_like(sums), where=n > 0)
    variance = np.divide(squares, n, out=np.zeros_like(sums), where=n > 0) - mean**2
    return ctx._rows(np.where(n >= 2, np.maximum(variance, 0.0), 0.0), users)


def binary(ctx: ElicitationContext, users: np.ndarray) -> np.ndarray:
    """BIN (Elahi et al. 2014): the score of the MF trained on all known pairs as positives."""
    return ctx.binary.score(np.asarray(users, dtype=np.int64))


Strategy = Callable[[ElicitationContext, np.ndarray], np.ndarray]

STRATEGIES: dict[str, Strategy] = {
    "RND": rnd,
    "POP": pop,
    "HP": hp,
    "POPENT": popent,
    "VAR": var,
    "BIN": binary,
}
"""Strategy name → scoring function; a new strategy is one function and one entry here."""


class _Scorer:
    """A strategy seen as a fitted model by :func:`debiaseval.recommenders.ranking.top_k`."""

    def __init__(self, ctx: ElicitationContext, strategy: Strategy) -> None:
        self.ctx, self.strategy = ctx, strategy

    def score(self, users: np.ndarray) -> np.ndarray:
        out = np.array(self.strategy(self.ctx, users), dtype=np.float64)
        if out.shape != (len(users), self.ctx.n_items):
            raise ValueError(f"strategy scores have shape {out.shape}")
        return out


def ask(
    ctx: ElicitationContext,
    strategy: str,
    users: np.ndarray,
    *,
    n: int = 50,
    batch_size: int = 1024,
) -> pd.DataFrame:
    """The ``n`` items ``strategy`` asks each of ``users`` about ([FLAIRS20] §3).

    Only items without a known rating of the user are asked (fewer when fewer
    remain). Users are scored in batches of ``batch_size`` (memory only, never
    the result). Returns ``user``, ``item``, ``rank`` (1 = asked first), ``score``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    users = np.unique(np.asarray(users, dtype=np.int64))
    if users.size == 0:
        return empty_recommendations()
    return top_k(
        _Scorer(ctx, STRATEGIES[strategy]),  # type: ignore[arg-type]
        ctx.known,
        n,
        users=users,
        batch_size=batch_size,
    )


def elicit(asked: pd.DataFrame, hidden: pd.DataFrame) -> pd.DataFrame:
    """The elicited ratings: the rows of ``hidden`` (H) whose pair was asked ([FLAIRS20] §3).

    Returns ``user``, ``item``, ``rating`` in the order of ``hidden``, index reset.
    """
    found = train_overlap_mask(hidden, asked)
    return hidden.loc[found, ["user", "item", "rating"]].reset_index(drop=True)
