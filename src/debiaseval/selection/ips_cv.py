"""k-fold cross-validation on MNAR data with an IPS-estimated validation error.

See docs/experiments/e4.md.

[ICML16] T. Schnabel et al., ICML 2016, §6.4: the observed pairs are split into k folds;
a model is trained on k−1 of them and its loss is estimated on the held-out fold. A pair
lands in the training folds with probability (k−1)/k and in the validation fold with
probability 1/k, so its propensity is scaled by (k−1)/k for training (weights
1/(P·(k−1)/k)) and by 1/k for validation (IPS estimate (1/(U·I)) Σ δ/(P/k), [ICML16]
eq. 10). MF-Naive trains with weights 1; [ICML16] §6.1 selects every model "using the IPS
estimator", so MF-Naive's validation error is IPS-estimated too, given the propensities of
validation alone (``validation_propensities``); without them it is the Naive mean
([ICML16] eq. 5). The selected hyperparameters minimise the mean
validation estimate over the folds (the first grid point wins ties).

Since :class:`WeightedMF` normalises its weights to mean 1, the training scale
(k−1)/k does not change the fit; the validation scale 1/k multiplies every grid
point's estimate by k and so never changes the choice. Both are kept so the reported
estimates are those of [ICML16].
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.evaluation.loss_estimators import ips, naive
from debiaseval.recommenders.rating_mf import WeightedMF

__all__ = ["LOSS_OF_METRIC", "cv_select", "fold_labels", "model_l2", "pair_losses"]

LOSS_OF_METRIC = {"mse": "squared", "mae": "absolute"}
"""Training loss of the model that is evaluated (and tuned) on each rating metric."""


def fold_labels(n: int, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold 0..k−1 of each of ``n`` pairs: uniformly random, fold sizes differ by at most 1."""
    if not 2 <= n_folds <= n:
        raise ValueError(f"n_folds must be in [2, {n}] (number of pairs), got {n_folds}")
    out = np.empty(n, dtype=np.int64)
    out[rng.permutation(n)] = np.arange(n) % n_folds
    return out


def pair_losses(metric: str, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """Per-pair loss δ of a rating metric: (y − ŷ)² for ``mse``, |y − ŷ| for ``mae``."""
    if metric not in LOSS_OF_METRIC:
        raise ValueError(f"metric must be one of {sorted(LOSS_OF_METRIC)}, got {metric!r}")
    diff = np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64)
    return diff**2 if metric == "mse" else np.abs(diff)


def model_l2(l2: float, n_train: int, per_pair: bool) -> float:
    """λ of :class:`WeightedMF` for a grid value ``l2``: itself, or ``l2`` × n_train when the
    grid is per training pair, the scale of [ICML16]'s grid {1e-6, …, 1} (a mean loss plus
    λ‖·‖²; see docs/experiments/e4.md)."""
    return float(l2) * n_train if per_pair else float(l2)


def _check_propensities(values: np.ndarray, n: int) -> np.ndarray:
    p = np.asarray(values, dtype=np.float64)
    if p.shape != (n,) or not np.all((p > 0) & (p <= 1)):
        raise ValueError("propensities must be one value in (0, 1] per rating")
    return p


def cv_select(
    users: np.ndarray,
    items: np.ndarray,
    ratings: np.ndarray,
    propensities: np.ndarray | None,
    *,
    n_users: int,
    n_items: int,
    grid: Sequence[Mapping[str, Any]],
    metric: str,
    n_folds: int,
    model_params: Mapping[str, Any] | None = None,
    rng: np.random.Generator,
    warm_start: bool = False,
    validation_propensities: np.ndarray | str | None = "same",
    l2_per_pair: bool = False,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Choose :class:`WeightedMF` hyperparameters from ``grid`` by k-fold CV ([ICML16] §6.4).

    The model's loss is that of ``metric`` (squared for ``mse``, absolute for ``mae``);
    ``propensities`` (one per pair, in (0, 1]) make it MF-IPS, None MF-Naive.
    ``validation_propensities`` give the validation estimate: IPS with these propensities,
    or the Naive mean with None; by default (``"same"``) those of training, so MF-Naive
    selected by IPS ([ICML16] §6.1) passes None and the propensities here. With
    ``l2_per_pair`` a grid point's ``l2`` is per training pair: the fit's λ is ``l2`` times
    the fold's training pairs (:func:`model_l2`). Returns the
    best grid point and one row per grid point and fold: ``params`` (JSON), ``fold``,
    ``value`` (the fold's validation estimate), ``selected``. With ``warm_start`` a fit
    starts from the same fold's fit of the previous grid point that differs only in
    ``l2`` (see docs/experiments/e4.md); the random stream is drawn as without it.
    """
    u = np.asarray(users, dtype=np.int64)
    i = np.asarray(items, dtype=np.int64)
    y = np.asarray(ratings, dtype=np.float64)
    p = None if propensities is None else _check_propensities(propensities, y.size)
    if isinstance(validation_propensities, str):
        if validation_propensities != "same":
            raise ValueError("validation_propensities must be an array, None or 'same'")
        pv = p
    else:
        pv = (
            None
            if validation_propensities is None
            else _check_propensities(validation_propensities, y.size)
        )
    if not grid:
        raise ValueError("the hyperparameter grid is empty")
    folds = fold_labels(y.size, n_folds, rng)
    base = {**(model_params or {}), "loss": LOSS_OF_METRIC[metric]}
    rows = []
    previous: dict[tuple[str, int], WeightedMF] = {}
    for point in grid:
        others = json.dumps({k: v for k, v in point.items() if k != "l2"}, sort_keys=True)
        for fold in range(n_folds):
            train, val = folds != fold, folds == fold
            weights = None if p is None else 1.0 / (p[train] * (n_folds - 1) / n_folds)
            fitted = {**point, "l2": model_l2(point["l2"], int(train.sum()), l2_per_pair)}
            model = WeightedMF(**{**base, **fitted}).fit(
                u[train],
                i[train],
                y[train],
                n_users=n_users,
                n_items=n_items,
                weights=weights,
                rng=rng,
                init=previous.get((others, fold)),
            )
            if warm_start:
                previous[others, fold] = model
            delta = pair_losses(metric, y[val], model.predict(u[val], i[val]))
            value = naive(delta) if pv is None else ips(delta, pv[val] / n_folds, n_users * n_items)
            rows.append(
                {"params": json.dumps(dict(point), sort_keys=True), "fold": fold, "value": value}
            )
    table = pd.DataFrame(rows)
    means = table.groupby("params", sort=False)["value"].mean()
    best = str(means.index[int(np.argmin(means.to_numpy()))])
    table["selected"] = table["params"] == best
    return json.loads(best), table
