"""Hyperparameter tuning on a validation part (docs/experiments/e1.md).

[SAC20] §5.2 tunes every recommender by grid search for Recall@10 on the MAR
``val`` part; [FLAIRS20] tunes its MF the same way on data held out from
K_before. A grid is searched in chunks (:func:`grid_chunks`), so that the
workflow can run the chunks of one recommender side by side, on the cores of
one machine or on a cluster's nodes; :func:`select_point` then picks the best
point over all chunks. The epochs of a model trained by epochs (an ``epochs``
hyperparameter and ``_fit_partial``: LightFM, or a plugin;
:func:`~debiaseval.recommenders.base.trains_by_epochs`) are chosen by early
stopping on the same validation metric (:class:`EarlyStopping`). A point whose
model is degenerate (a ``health()`` that gives a reason, like LightFM's: diverged
or collapsed embeddings) is recorded with the reason and never selected.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.data.interactions import rating_matrix
from debiaseval.evaluation.metrics import evaluate_topk, summarise
from debiaseval.io.schema import expand_grid
from debiaseval.recommenders.base import Recommender, trains_by_epochs
from debiaseval.recommenders.ranking import top_k
from debiaseval.recommenders.registry import fit_grid, make_recommender, resolve_recommender

__all__ = [
    "OK",
    "EarlyStopping",
    "check_early_stopping",
    "grid_chunks",
    "merge_chunks",
    "recommender_params",
    "select_point",
    "tune_points",
    "tune_recommender",
    "validation_score",
]

OK = "ok"
"""``status`` of a grid point whose model is usable."""


@dataclass(frozen=True)
class EarlyStopping:
    """Epochs chosen on validation data: train ``eval_every`` epochs at a time, evaluate,
    and stop after ``patience`` evaluations without improvement or at ``max_epochs``;
    the model of the best evaluation (the earliest among equals) is kept."""

    max_epochs: int
    eval_every: int = 5
    patience: int = 2

    def __post_init__(self) -> None:
        for key in ("max_epochs", "eval_every", "patience"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"early stopping {key} must be an int >= 1, got {value!r}")


def grid_chunks(grid: Mapping[str, list[Any]], points_per_job: int) -> list[list[dict[str, Any]]]:
    """The grid's points in order, cut into consecutive chunks of ``points_per_job``."""
    if points_per_job < 1:
        raise ValueError(f"points_per_job must be >= 1, got {points_per_job}")
    points = expand_grid(grid)
    return [points[i : i + points_per_job] for i in range(0, len(points), points_per_job)]


def recommender_params(
    algorithm: str, params: Mapping[str, Any], positive_threshold: float
) -> dict[str, Any]:
    """``params`` plus the experiment's ``positive_threshold`` for algorithms that take one.

    A pair is positive (docs/datasets.md) when its rating is strictly greater than the
    threshold; PosPop counts and MF trains on positives, so the experiment's
    threshold reaches them unless their params set their own.
    """
    out = dict(params)
    if "positive_threshold" in resolve_recommender(algorithm)._param_names():
        out.setdefault("positive_threshold", float(positive_threshold))
    return out


def validation_score(
    recs: pd.DataFrame,
    val: pd.DataFrame,
    *,
    metric: str,
    k: int,
    n_items: int,
    positive_threshold: float,
) -> float:
    """Mean ``metric@k`` of the lists over the users with a relevant ``val`` pair (0 if none)."""
    scores = summarise(
        evaluate_topk(
            recs, val, [k], n_items=n_items, positive_threshold=positive_threshold, metrics=[metric]
        )
    )
    return float(scores["value"].iloc[0]) if len(scores) else 0.0


def _val_users(val: pd.DataFrame, positive_threshold: float) -> np.ndarray:
    return np.unique(val.loc[val["rating"] > positive_threshold, "user"].to_numpy(np.int64))


def _health(model: Recommender) -> str:
    check = getattr(model, "health", None)
    reason = check() if check is not None else None
    return OK if reason is None else reason


def _early_stopped(
    model: Recommender,
    matrix: sp.csr_matrix,
    score: Callable[[Recommender], float],
    seed: int,
    early_stopping: EarlyStopping,
) -> tuple[Recommender, float, int, str]:
    """Train by epochs with early stopping: (best model, its val score, its epochs, status)."""
    model.set_params(epochs=early_stopping.max_epochs)
    best: tuple[Recommender, float, int] | None = None
    status, since_best = OK, 0
    for epochs in model.iter_epochs(matrix, seed=seed, step=early_stopping.eval_every):
        status = _health(model)
        if status != OK:
            break
        value = score(model)
        if best is None or value > best[1]:
            best, since_best = (copy.deepcopy(model), value, epochs), 0
        else:
            since_best += 1
            if since_best >= early_stopping.patience:
                break
    if best is None:  # degenerate from the first evaluation on
        return model, float("nan"), int(model.epochs_), status
    return best[0], best[1], best[2], OK


def _fitted_points(
    algorithm: str,
    params: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    matrix: sp.csr_matrix,
    score: Callable[[Recommender], float],
    seed: int,
    early_stopping: EarlyStopping | None,
) -> Iterator[tuple[Mapping[str, Any], Recommender, float, int, str]]:
    """(point, model, val score, epochs, status) of every point, in order.

    Models trained by epochs go through early stopping when it is on; the
    others come from :func:`~debiaseval.recommenders.fit_grid`, which fits a
    k-NN grid once at its largest k.
    """
    if early_stopping is not None and trains_by_epochs(resolve_recommender(algorithm)):
        for point in points:
            model = make_recommender(algorithm, **{**params, **point})
            yield (point, *_early_stopped(model, matrix, score, seed, early_stopping))
        return
    for point, model in fit_grid(algorithm, params, points, matrix, seed=seed):
        status = _health(model)
        value = score(model) if status == OK else float("nan")
        yield point, model, value, int(getattr(model, "epochs_", 0)), status


def tune_points(
    matrix: sp.csr_matrix,
    val: pd.DataFrame,
    points: Sequence[Mapping[str, Any]],
    *,
    algorithm: str,
    params: Mapping[str, Any],
    metric: str,
    k: int,
    depth: int | None,
    positive_threshold: float,
    batch_size: int,
    seed: int,
    early_stopping: EarlyStopping | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Fit and score grid ``points`` of one recommender on ``val``.

    Every point is fitted on ``matrix`` (users × items training ratings) with
    the same ``seed`` and scored by ``metric@k`` of its top-k lists (training
    items excluded) on ``val``. Returns (rows, recs): one row per point with
    columns ``params`` (JSON), ``metric``, ``k``, ``value``, ``epochs`` (chosen
    by early stopping; the fixed count, or 0 for models without epochs) and
    ``status`` (``ok``, or why the model is degenerate: then ``value`` is NaN);
    and the top-``depth`` lists of every user from the best usable point (the
    first among equals), or None when no point is usable or ``depth`` is None.
    """
    n_items = matrix.shape[1]
    users = _val_users(val, positive_threshold)

    def score(model: Recommender) -> float:
        recs = top_k(model, matrix, k, users=users, batch_size=batch_size)
        return validation_score(
            recs, val, metric=metric, k=k, n_items=n_items, positive_threshold=positive_threshold
        )

    base = recommender_params(algorithm, params, positive_threshold)
    rows, best_model, best_value = [], None, -np.inf
    fitted = _fitted_points(algorithm, base, points, matrix, score, seed, early_stopping)
    for point, model, value, epochs, status in fitted:
        rows.append(
            {
                "params": json.dumps(dict(point), sort_keys=True),
                "metric": metric,
                "k": np.int16(k),
                "value": value,
                "epochs": np.int32(epochs),
                "status": status,
            }
        )
        if status == OK and value > best_value:
            best_model, best_value = model, value
    table = pd.DataFrame(rows, columns=["params", "metric", "k", "value", "epochs", "status"])
    if best_model is None or depth is None:
        return table, None
    return table, top_k(best_model, matrix, depth, batch_size=batch_size)


def select_point(tuning: pd.DataFrame, what: str = "the grid") -> int:
    """Row index of the best usable point (highest ``value`` among ``status == ok``, first wins).

    Raises ``ValueError`` naming ``what`` and every point's reason when no point is usable.
    """
    usable = (tuning["status"] == OK).to_numpy()
    if not usable.any():
        pairs = zip(tuning["params"], tuning["status"], strict=True)
        reasons = "; ".join(f"{point}: {status}" for point, status in pairs)
        raise ValueError(f"no usable model in {what}: {reasons}")
    values = np.where(usable, tuning["value"].to_numpy(np.float64), -np.inf)
    return int(np.argmax(values))


def merge_chunks(
    tables: Sequence[pd.DataFrame], what: str = "the grid"
) -> tuple[pd.DataFrame, int]:
    """Concatenate the chunks' tuning tables in grid order and mark the selected point.

    Returns (table with a boolean ``selected`` column, index of the chunk that
    holds the selected point): that chunk's lists are the selected model's,
    since the first best point overall is also the first best of its chunk.
    """
    table = pd.concat(tables, ignore_index=True)
    best = select_point(table, what)
    table["selected"] = np.arange(len(table)) == best
    bounds = np.cumsum([len(t) for t in tables])
    return table, int(np.searchsorted(bounds, best, side="right"))


def tune_recommender(
    train: pd.DataFrame,
    val: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
    algorithm: str,
    params: Mapping[str, Any],
    grid: Mapping[str, list[Any]],
    metric: str,
    k: int,
    positive_threshold: float,
    batch_size: int,
    seed: int,
    early_stopping: EarlyStopping | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Grid search of one recommender in-process: (selected hyperparameters, tuning table).

    The selected hyperparameters are ``params``, the best grid point and, for
    models trained by epochs, the ``epochs`` chosen by early stopping: passing
    them to :func:`debiaseval.recommenders.make_recommender` and fitting with
    the same ``seed`` rebuilds the selected model. The table is that of
    :func:`tune_points` with a boolean ``selected`` column.
    """
    matrix = rating_matrix(train, n_users, n_items)
    points = expand_grid(grid)
    table, _ = tune_points(
        matrix,
        val,
        points,
        algorithm=algorithm,
        params=params,
        metric=metric,
        k=k,
        depth=None,
        positive_threshold=positive_threshold,
        batch_size=batch_size,
        seed=seed,
        early_stopping=early_stopping,
    )
    best = select_point(table, f"the {algorithm} grid")
    table["selected"] = np.arange(len(table)) == best
    selected = {**recommender_params(algorithm, params, positive_threshold), **points[best]}
    if early_stopping is not None and trains_by_epochs(resolve_recommender(algorithm)):
        selected["epochs"] = int(table["epochs"].iloc[best])
    return selected, table


def check_early_stopping(
    recommenders: Mapping[str, Mapping[str, Any]],
    early_stopping: Mapping[str, Any] | None,
    where: str,
) -> None:
    """Refuse ``epochs`` in the params or grid of a model trained by epochs while early stopping
    chooses them, in one line naming ``<where>.recommenders.<name>`` (``where``: the
    experiment's block). Precomputed lists (algorithm ``external``) train nothing."""
    from debiaseval.io.errors import ConfigError
    from debiaseval.recommenders.registry import EXTERNAL, resolve_recommender

    if early_stopping is None:
        return
    for name, spec in recommenders.items():
        if spec["algorithm"] == EXTERNAL or not trains_by_epochs(
            resolve_recommender(spec["algorithm"])
        ):
            continue
        if "epochs" in spec["params"] or "epochs" in spec["grid"]:
            raise ConfigError(
                f"config error at '{where}.recommenders.{name}': epochs are chosen by early "
                f"stopping ({where}.tuning.early_stopping); set its max_epochs, or set it to "
                "null to fix epochs"
            )
