"""E3's steps (rule ``e3_simulate``): the truth of a dataset, the observed draws at every bias
strength and the estimators' values on them, and what the workflow asks of E3 before any job:
the parts of a dataset it needs, its outputs, its config check ([ICML16] §6.2;
docs/experiments/e3.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.data.draws import generator_block
from debiaseval.data.splits import run_rng
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.datasets.semisynthetic import full_matrices, observation_propensities
from debiaseval.debiasing.propensities import check_propensities, naive_bayes
from debiaseval.evaluation.loss_estimators import LOSS_ESTIMATORS, estimate
from debiaseval.evaluation.losses import loss_matrix, parse_metric
from debiaseval.evaluation.prediction_matrices import PREDICTION_MATRICES, prediction_matrix
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.errors import ConfigError

__all__ = [
    "LEVELS",
    "NEEDS",
    "OUTPUTS",
    "E3Simulate",
    "Truth",
    "check_config",
    "dataset_truth",
    "full_truth",
    "simulate",
    "simulate_seed",
    "synthetic_truth",
    "true_losses",
]

NEEDS: tuple[tuple[str, ...], ...] = (("truth",),)
"""The parts E3 needs of a dataset (:mod:`debiaseval.data.catalog`): a full rating matrix
and its observation model (``synthetic``, ``ml-100k-semi``)."""


OUTPUTS = (
    "verdict.md",
    "estimates.parquet",
    "estimates.md",
    "rmse_vs_alpha.parquet",
    "rmse_vs_mar.parquet",
    "rmse_vs_alpha_mean.parquet",
    "rmse_vs_mar_mean.parquet",
)
"""Aggregated outputs of E3 in ``results/<study>/e3/{dataset}/``."""


LEVELS = np.arange(1.0, 6.0)
"""Rating levels 1..5 of the full matrices."""


@dataclass(frozen=True)
class Truth:
    """A full rating matrix and its observation model: what E3 needs of a dataset."""

    name: str
    """Dataset name (labels the random streams)."""
    ratings: np.ndarray
    """Full rating matrix Y, integers 1..5, shape (n_users, n_items)."""
    propensities: Callable[[float], np.ndarray]
    """α ↦ the true observation probabilities P_α, same shape as ``ratings``."""


def synthetic_truth(params: Mapping[str, Any], name: str = "synthetic") -> Truth:
    """The ``synthetic`` dataset's Y and its own observation model (docs/datasets.md) at any α.

    ``params`` are :func:`generate_synthetic`'s keyword arguments (the config's
    ``synthetic`` block); Y does not depend on α, only the propensities do.
    """
    base = {k: v for k, v in generator_block(params).items() if k != "alpha"}
    data = generate_synthetic(**base)

    def propensities(alpha: float) -> np.ndarray:
        other = generate_synthetic(**base, alpha=alpha)
        if not np.array_equal(other.ratings, data.ratings):
            raise ValueError("the synthetic generator's ratings changed with alpha")
        return other.propensities

    return Truth(name, data.ratings, propensities)


def full_truth(interactions: pd.DataFrame, name: str) -> Truth:
    """Y from the ``full`` part of canonical interactions, with the [ICML16] §6.2 model at any α.

    The ``full`` part (``ml-100k-semi``) holds every (user, item) pair with its
    rating and true ``propensity``; P_α = k·α^{max(0, 4 − Y)} with k re-solved
    so that the expected density stays the dataset's, mean(P) over the part.
    """
    if "part" not in interactions.columns or not (interactions["part"] == "full").any():
        raise ValueError(f"{name}: E3 needs the full rating matrix (a 'full' part), found none")
    try:
        ratings, given = full_matrices(interactions)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    density = float(given.mean())

    def propensities(alpha: float) -> np.ndarray:
        return observation_propensities(ratings, alpha=alpha, density=density)

    return Truth(name, ratings, propensities)


def dataset_truth(
    dataset: str, interactions: pd.DataFrame | None, synthetic: Mapping[str, Any]
) -> Truth:
    """The :class:`Truth` of ``dataset``: generated for ``synthetic``, else its ``full`` part."""
    if dataset == "synthetic":
        return synthetic_truth(synthetic)
    if interactions is None:
        raise ValueError(f"{dataset}: E3 needs the dataset's interactions with a 'full' part")
    return full_truth(interactions, dataset)


def true_losses(
    ratings: np.ndarray,
    *,
    matrices: Sequence[str],
    metrics: Sequence[str],
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Per-pair losses of every (matrix, metric) and their true values R(Ŷ).

    Returns a frame with ``matrix``, ``metric``, ``true_value`` (the mean of δ
    over all pairs, float64) and the losses as a float32 array of shape
    (len(matrices) · len(metrics), n_users · n_items) in the frame's row order.
    Ties in the rankings are broken by one random item order drawn from ``rng``.
    """
    y = np.asarray(ratings, dtype=np.float64)
    tie_break = rng.permutation(y.shape[1])
    rows, deltas = [], []
    for name in matrices:
        pred = prediction_matrix(name, y, rng)
        for metric in metrics:
            delta = loss_matrix(metric, y, pred, tie_break=tie_break)
            rows.append({"matrix": name, "metric": metric, "true_value": float(delta.mean())})
            deltas.append(delta.astype(np.float32).ravel())
    return pd.DataFrame(rows), np.stack(deltas)


def simulate(
    truth: Truth,
    *,
    seed: int,
    matrices: Sequence[str] = tuple(PREDICTION_MATRICES),
    metrics: Sequence[str] = ("mae", "dcg@50"),
    alpha: float = 0.25,
    alphas: Sequence[float] = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0),
    n_draws: int = 50,
    mar_sizes: Sequence[int] = (),
    smoothing: float = 1.0,
    clip: float | None = None,
    rng_predictions: np.random.Generator,
    rng_draws: np.random.Generator,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Estimates of every (matrix, metric, estimator) over ``n_draws`` draws of O (one seed).

    For each draw and each α in {``alpha``} ∪ ``alphas``: O = U < P_α and the
    estimators with the known propensities (``propensity`` = ``known``,
    ``mar_size`` = 0). Then, for each size m in ``mar_sizes``, the O of ``alpha``
    with Naive-Bayes propensities whose P(Y = r) comes from m MAR ratings drawn
    uniformly without replacement from all pairs (their rating counts are a
    multivariate hypergeometric draw), Laplace-smoothed with ``smoothing``
    (``propensity`` = ``naive_bayes``). ``clip`` floors every propensity used.

    Returns (draws, naive_bayes). ``draws`` has one row per draw, setting,
    matrix, metric and estimator: ``seed``, ``draw``, ``propensity``, ``alpha``,
    ``mar_size``, ``matrix``, ``metric``, ``estimator``, ``value``,
    ``true_value``, ``n_observed``. ``naive_bayes`` holds every fitted
    Naive-Bayes table (:func:`naive_bayes`'s columns) with ``seed``, ``draw``,
    ``mar_size`` and ``true_propensity`` = P(O=1 | Y=r) at ``alpha``, the mean
    of P_α over the pairs rated r.
    """
    y = np.asarray(truth.ratings)
    n_users, n_items = y.shape
    n_total = y.size
    for metric in metrics:
        parse_metric(metric)
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    too_big = [m for m in mar_sizes if not 1 <= m <= n_total]
    if too_big:
        raise ValueError(f"MAR sample sizes must lie in [1, {n_total}] (all pairs), got {too_big}")
    if clip is not None and not 0 < clip <= 1:
        raise ValueError(f"clip must lie in (0, 1], got {clip}")
    grid = sorted({float(alpha), *map(float, alphas)})
    props = {
        a: check_propensities(truth.propensities(a), f"propensities at alpha={a:g}")
        .astype(np.float32)
        .ravel()
        for a in grid
    }
    cells, delta = true_losses(y, matrices=matrices, metrics=metrics, rng=rng_predictions)
    y_flat = y.ravel().astype(np.int64)
    level_counts = np.bincount(y_flat - 1, minlength=LEVELS.size)[: LEVELS.size]
    floor = 0.0 if clip is None else clip

    settings: list[tuple[int, str, float, int, int]] = []
    values: list[np.ndarray] = []
    tables: list[pd.DataFrame] = []

    def record(draw: int, kind: str, a: float, m: int, idx: np.ndarray, p: np.ndarray) -> None:
        est = estimate(delta[:, idx], np.maximum(p, floor), n_total)
        values.append(np.stack([est[e] for e in LOSS_ESTIMATORS], axis=1))
        settings.append((draw, kind, a, m, idx.size))

    for draw in range(n_draws):
        u = rng_draws.random(n_total, dtype=np.float32)
        for a in grid:
            idx = np.flatnonzero(u < props[a])
            record(draw, "known", a, 0, idx, props[a][idx].astype(np.float64))
        idx = np.flatnonzero(u < props[float(alpha)])
        for m in mar_sizes:
            counts = rng_draws.multivariate_hypergeometric(level_counts, int(m))
            table = naive_bayes(
                y_flat[idx],
                np.repeat(LEVELS, counts),
                n_users=n_users,
                n_items=n_items,
                levels=LEVELS,
                smoothing=smoothing,
            )
            p = table["propensity"].to_numpy()[y_flat[idx] - 1]
            record(draw, "naive_bayes", float(alpha), int(m), idx, p)
            tables.append(table.assign(draw=np.int32(draw), mar_size=np.int64(m)))

    est = np.stack(values)  # (settings, cells, estimators)
    n_set, n_cells, n_est = est.shape
    setting = np.repeat(np.arange(n_set), n_cells * n_est)
    cell = np.tile(np.repeat(np.arange(n_cells), n_est), n_set)
    info = pd.DataFrame(settings, columns=["draw", "propensity", "alpha", "mar_size", "n_obs"])
    draws = pd.DataFrame(
        {
            "seed": np.full(setting.size, seed, dtype=np.int32),
            "draw": info["draw"].to_numpy(np.int32)[setting],
            "propensity": info["propensity"].to_numpy(object)[setting],
            "alpha": info["alpha"].to_numpy(np.float64)[setting],
            "mar_size": info["mar_size"].to_numpy(np.int64)[setting],
            "matrix": cells["matrix"].to_numpy(object)[cell],
            "metric": cells["metric"].to_numpy(object)[cell],
            "estimator": np.tile(np.array(LOSS_ESTIMATORS, dtype=object), n_set * n_cells),
            "value": est.ravel(),
            "true_value": cells["true_value"].to_numpy(np.float64)[cell],
            "n_observed": info["n_obs"].to_numpy(np.int64)[setting],
        }
    )
    level_sums = np.bincount(y_flat - 1, weights=props[float(alpha)], minlength=LEVELS.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        true_marginal = level_sums[: LEVELS.size] / level_counts
    nb = _naive_bayes_frame(tables, seed, true_marginal)
    return draws, nb


def _naive_bayes_frame(
    tables: list[pd.DataFrame], seed: int, true_marginal: np.ndarray
) -> pd.DataFrame:
    columns = ["seed", "draw", "mar_size", "rating", "propensity", "true_propensity"]
    columns += ["p_rating_observed", "p_rating"]
    if not tables:
        return pd.DataFrame(
            {
                "seed": np.empty(0, np.int32),
                "draw": np.empty(0, np.int32),
                "mar_size": np.empty(0, np.int64),
                "rating": np.empty(0, np.float32),
                "propensity": np.empty(0),
                "true_propensity": np.empty(0),
                "p_rating_observed": np.empty(0),
                "p_rating": np.empty(0),
            }
        )
    out = pd.concat(tables, ignore_index=True)
    out["seed"] = np.int32(seed)
    out["true_propensity"] = true_marginal[out["rating"].to_numpy(np.int64) - 1]
    return out[columns]


@dataclasses.dataclass(frozen=True)
class E3Simulate(StepConfig):
    """What rule ``e3_simulate`` reads of the ``e3`` block: :func:`simulate`'s settings."""

    BLOCK: ClassVar[str] = "e3"
    matrices: list[str]
    metrics: list[str]
    alpha: float
    alphas: list[float]
    n_draws: int
    mar_sizes: list[int]
    smoothing: float
    clip: float | None


def simulate_seed(truth: Truth, step: E3Simulate, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`simulate` for run ``seed`` with the step's settings
    (:meth:`E3Simulate.of` the validated config).

    The random streams are ``run_rng(seed, dataset, "e3", "predictions" | "draws")``.
    """
    return simulate(
        truth,
        seed=seed,
        **{f.name: getattr(step, f.name) for f in dataclasses.fields(step)},
        rng_predictions=run_rng(seed, truth.name, "e3", "predictions"),
        rng_draws=run_rng(seed, truth.name, "e3", "draws"),
    )


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e3`` block (after schema validation); raise ``ConfigError``."""
    block = config["e3"]
    for key in ("table_metrics", "curve_metrics"):
        for position, metric in enumerate(block[key] or ()):
            if metric not in block["metrics"]:
                raise ConfigError(
                    f"config error at 'e3.{key}.{position}': {metric!r} is not one of the "
                    f"metrics E3 estimates (e3.metrics: {block['metrics']})"
                )
    if "synthetic" in block["datasets"] and block["mar_sizes"]:
        n_pairs = config["synthetic"]["n_users"] * config["synthetic"]["n_items"]
        too_big = [m for m in block["mar_sizes"] if m > n_pairs]
        if too_big:
            raise ConfigError(
                f"config error at 'e3.mar_sizes': {too_big} exceed the {n_pairs} pairs of the "
                "synthetic dataset"
            )
