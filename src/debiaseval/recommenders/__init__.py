"""Recommenders and their single registry.

Every recommender follows :class:`Recommender` (scikit-learn's estimator contract,
written down in docs/own-recommender.md); :data:`RECOMMENDERS`
maps the built-in names to the classes, :func:`resolve_recommender` resolves any
name a config may give (built-in, entry point, registered at run time, or
``"package.module:Class"``), :func:`make_recommender` builds one from a name and
hyperparameters, :func:`fit_grid` fits the points of a hyperparameter grid,
sharing one fit between the k values of a k-NN grid, and
:func:`check_recommender` is the shared behavioural check of the contract, for
the built-ins' tests and for users' own classes. :mod:`~debiaseval.recommenders.ranking`
turns a fitted model's scores into top-k lists (its numba kernel in ``_topk_kernel``), for
the metrics above and for the baselines here.
"""

from __future__ import annotations

from debiaseval.recommenders.base import (
    NotFittedError,
    Recommender,
    check_train,
    positive_mask,
    trains_by_epochs,
)
from debiaseval.recommenders.baselines import AvgRating, PosPop, Random
from debiaseval.recommenders.checks import check_recommender
from debiaseval.recommenders.knn import ItemKNN, KNNRecommender, UserKNN
from debiaseval.recommenders.mf import LightFMRanker
from debiaseval.recommenders.mf_ips import IPSMF
from debiaseval.recommenders.registry import (
    RECOMMENDERS,
    ContractError,
    check_recommender_class,
    fit_grid,
    make_recommender,
    register_recommender,
    resolve_recommender,
)

__all__ = [
    "IPSMF",
    "RECOMMENDERS",
    "AvgRating",
    "ContractError",
    "ItemKNN",
    "KNNRecommender",
    "LightFMRanker",
    "NotFittedError",
    "PosPop",
    "Random",
    "Recommender",
    "UserKNN",
    "check_recommender",
    "check_recommender_class",
    "check_train",
    "fit_grid",
    "make_recommender",
    "positive_mask",
    "register_recommender",
    "resolve_recommender",
    "trains_by_epochs",
]
