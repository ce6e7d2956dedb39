"""Recommenders of SPEC §5 and their single registry.

Every recommender follows :class:`Recommender` (scikit-learn's estimator
contract); :data:`RECOMMENDERS` maps the config names to the classes and
:func:`make_recommender` builds one from a name and hyperparameters.
"""

from __future__ import annotations

from typing import Any

from debiaseval.recommenders.base import NotFittedError, Recommender, check_train, positive_mask
from debiaseval.recommenders.baselines import AvgRating, PosPop, Random
from debiaseval.recommenders.knn import ItemKNN, UserKNN
from debiaseval.recommenders.mf import LightFMRanker
from debiaseval.recommenders.mf_ips import IPSMF

__all__ = [
    "IPSMF",
    "RECOMMENDERS",
    "AvgRating",
    "ItemKNN",
    "LightFMRanker",
    "NotFittedError",
    "PosPop",
    "Random",
    "Recommender",
    "UserKNN",
    "check_train",
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
