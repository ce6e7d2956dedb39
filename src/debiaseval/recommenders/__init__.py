"""Recommenders of SPEC §5 and their single registry.

Every recommender follows :class:`Recommender` (scikit-learn's estimator
contract); :data:`RECOMMENDERS` maps the config names to the classes,
:func:`make_recommender` builds one from a name and hyperparameters, and
:func:`fit_grid` fits the points of a hyperparameter grid, sharing one fit
between the k values of a k-NN grid.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import scipy.sparse as sp

from debiaseval.recommenders.base import NotFittedError, Recommender, check_train, positive_mask
from debiaseval.recommenders.baselines import AvgRating, PosPop, Random
from debiaseval.recommenders.knn import ItemKNN, KNNRecommender, UserKNN
from debiaseval.recommenders.mf import LightFMRanker
from debiaseval.recommenders.mf_ips import IPSMF

__all__ = [
    "IPSMF",
    "RECOMMENDERS",
    "AvgRating",
    "ItemKNN",
    "KNNRecommender",
    "LightFMRanker",
    "NotFittedError",
    "PosPop",
    "Random",
    "Recommender",
    "UserKNN",
    "check_train",
    "fit_grid",
    "make_recommender",
    "positive_mask",
]

RECOMMENDERS: dict[str, type[Recommender]] = {
    cls.name: cls for cls in (Random, PosPop, AvgRating, UserKNN, ItemKNN, LightFMRanker, IPSMF)
}


def make_recommender(name: str, **params: Any) -> Recommender:
    """An unfitted recommender from its registry ``name`` and hyperparameters.

    Raises a one-line ``ValueError`` naming an unknown recommender or unknown
    parameters, together with the valid choices, or an invalid value (checked
    eagerly by :meth:`Recommender.validate_params`, so a bad config fails early).
    """
    try:
        cls = RECOMMENDERS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown recommender {name!r}; known: {', '.join(RECOMMENDERS)}"
        ) from None
    model = cls().set_params(**params)
    model.validate_params()
    return model


def fit_grid(
    name: str,
    params: Mapping[str, Any],
    points: Iterable[Mapping[str, Any]],
    train: sp.spmatrix | sp.sparray,
    *,
    seed: int,
) -> Iterator[tuple[dict[str, Any], Recommender]]:
    """Yield ``(point, fitted model)`` for every grid point, in the given order.

    The model equals ``make_recommender(name, **params, **point).fit(train,
    seed=seed)``. For a :class:`KNNRecommender` the points that differ only in
    ``k`` share one fit at their largest k, and each model is its
    :meth:`KNNRecommender.with_k` twin (bit-identical to a refit), so a grid
    over k costs one similarity computation. Other recommenders are fitted
    lazily, one point at a time.
    """
    points = [dict(p) for p in points]
    cls = RECOMMENDERS.get(name)
    if cls is None or not issubclass(cls, KNNRecommender):
        for point in points:
            yield point, make_recommender(name, **{**params, **point}).fit(train, seed=seed)
        return
    models = [make_recommender(name, **{**params, **point}) for point in points]

    def others(model: Recommender) -> str:  # every hyperparameter but k
        return json.dumps({**model.get_params(), "k": None}, sort_keys=True, default=repr)

    largest: dict[str, int] = {}
    for model in models:
        largest[others(model)] = max(largest.get(others(model), 0), int(model.get_params()["k"]))
    fitted: dict[str, Recommender] = {}
    for point, model in zip(points, models, strict=True):
        key = others(model)
        if key not in fitted:
            twin = make_recommender(name, **{**model.get_params(), "k": largest[key]})
            fitted[key] = twin.fit(train, seed=seed)
        base = fitted[key]
        assert isinstance(base, KNNRecommender)
        yield point, base.with_k(model.get_params()["k"])
