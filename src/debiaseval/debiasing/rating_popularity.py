"""Rating-aware popularity propensities: P(O = 1 | u, i, y = r) ∝ g_i · P(O = 1 | Y = r)
(docs/experiments/e1.md, Propensity models).

Item popularity alone cannot see that users rate what they like: with propensities of the
item only, the Horvitz–Thompson candidate rate of DR's imputation reduces to the share of
positives among the item's rated pairs, several times the rate among its candidates. Naive
Bayes alone ([ICML16] §5.1) sees the rating but not the item. This model has both factors:

- h(r) = P(O = 1 | Y = r) = P(Y = r | O = 1) P(O = 1) / P(Y = r), Naive Bayes from the MNAR
  rating marginal and the MAR one (:func:`~debiaseval.debiasing.propensities.naive_bayes`).
  Without a MAR part, P(Y = r) is its Laplace prior, uniform over the levels: the stated
  assumption that under full exposure every rating level is equally likely;
- g_i = (n_i + s) / ĥ_i: the item's training count n_i (plus ``smoothing`` s) over ĥ_i, the
  mean of h over the item's pairs under full exposure, so that Σ_u g_i h(Y_ui) matches n_i
  whatever the item's rating mix (the moment condition of P(O | i, r) = g_i h(r); Marlin &
  Zemel, RecSys 2009, for a rating-dependent observation model). Each observed pair stands for
  1/h(r) pairs of its rating, so ĥ_i = (n_i + m) / (Σ_{u∈T_i} 1/h(r_ui) + m / E[h]): the
  Horvitz–Thompson harmonic mean, shrunk by ``prior`` m pseudo-pairs toward the overall
  E[h] = Σ_r P(Y = r) h(r) (m = 0: the unshrunk estimate, whose 1/ĥ_i is noisy for an item
  with a few ratings; m → ∞: g_i ∝ n_i, item popularity times h).

The product P_ui ∝ g_i h(y_ui) is a :class:`~debiaseval.debiasing.propensities.PropensityModel`;
:func:`~debiaseval.debiasing.propensities.scaled` normalises it so that Σ_{u, i∈C_u} P_ui =
|H|, an unobserved pair counting with its item's ĥ_i (a global E[h] would miss the items'
rating mixes: popular items rated well take more than their share). O(pairs + items + levels).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from debiaseval.debiasing.propensities import PropensityModel, as_model, naive_bayes

__all__ = ["rating_popularity"]


def rating_popularity(
    train: pd.DataFrame,
    mnar_ratings: np.ndarray | pd.Series,
    mar_ratings: np.ndarray | pd.Series,
    *,
    n_users: int,
    n_items: int,
    levels: Sequence[float] = (1.0, 2.0, 3.0, 4.0, 5.0),
    smoothing: float = 1.0,
    prior: float = 5.0,
) -> PropensityModel:
    """P_ui ∝ g_i · h(y_ui) (the module's model): h by Naive Bayes from ``mnar_ratings`` and
    ``mar_ratings`` (empty: uniform P(Y = r)), g_i from the ``train`` pairs (``user``,
    ``item``, ``rating``); ``smoothing`` s > 0 of both, ``prior`` m > 0 pseudo-pairs of ĥ_i."""
    if not (np.isfinite(prior) and prior > 0):
        raise ValueError(f"the rating-aware popularity prior must be positive, got {prior}")
    if not (np.isfinite(smoothing) and smoothing > 0):
        raise ValueError(f"rating-aware popularity needs smoothing > 0, got {smoothing}")
    table = naive_bayes(
        mnar_ratings,
        mar_ratings,
        n_users=n_users,
        n_items=n_items,
        levels=levels,
        smoothing=smoothing,
    )
    rating = as_model(table, n_users=n_users, n_items=n_items)
    items = train["item"].to_numpy().astype(np.int64)
    if items.size and (items.min() < 0 or items.max() >= n_items):
        raise ValueError(f"training items must lie in [0, {n_items})")
    inverse = 1.0 / rating.pairs(train["user"].to_numpy(), items, train["rating"].to_numpy())
    counts = np.bincount(items, minlength=n_items).astype(np.float64)
    mean_h = float(rating.rating @ rating.rating_prior)
    h_item = (counts + prior) / (
        np.bincount(items, weights=inverse, minlength=n_items) + prior / mean_h
    )
    return PropensityModel(
        n_users,
        n_items,
        item=(counts + smoothing) / h_item,
        levels=rating.levels,
        rating=rating.rating,
        rating_prior=rating.rating_prior,
        item_rating_mean=h_item,
    )
