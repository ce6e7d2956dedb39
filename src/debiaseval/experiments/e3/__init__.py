"""Experiment E3: accuracy of the Naive, IPS and SNIPS estimators under selection bias ([ICML16]).

Schnabel et al., *Recommendations as treatments*, ICML 2016, §3.4 and §6.2–6.4:
on a dataset whose full rating matrix Y is known (``synthetic``, or
``ml-100k-semi``), the five prediction matrices of
:mod:`debiaseval.evaluation.prediction_matrices` have exactly known MAE and DCG@k
(:mod:`debiaseval.evaluation.losses`). Observation patterns O ~ Bernoulli(P_α) are drawn
from the dataset's own observation model at bias strength α, and every
estimator of :mod:`debiaseval.evaluation.loss_estimators` is computed from the observed pairs
with the known propensities P_α, or with Naive-Bayes propensities
(:func:`debiaseval.debiasing.propensities.naive_bayes`) whose P(Y = r) comes from a MAR
sample of a given size. One draw's uniforms U serve every α (O_α = U < P_α:
common random numbers), and the Naive-Bayes runs reuse the draw's O at the
table's α, so the comparisons across α and MAR sizes are paired.

Steps: :func:`simulate` (one seed: prediction matrices, true values, draws) →
:func:`summarise_estimates` (Table 1), :func:`rmse_table` (RMSE vs α and vs the
MAR sample size, per matrix), :func:`mean_over_matrices` (the same averaged over the
matrices, as [ICML16] Figures 2 and 4 show them), :func:`table1_markdown`;
:func:`run` does it all in-process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.data.draws import generator_block
from debiaseval.data.splits import run_rng
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.datasets.semisynthetic import full_matrices, observation_propensities
from debiaseval.debiasing.propensities import check_propensities, naive_bayes
from debiaseval.evaluation.flags import join_flags, legend, marked
from debiaseval.evaluation.loss_estimators import LOSS_ESTIMATORS, estimate
from debiaseval.evaluation.losses import loss_matrix, parse_metric
from debiaseval.evaluation.prediction_matrices import PREDICTION_MATRICES, prediction_matrix
from debiaseval.evaluation.uncertainty import interval_cell, seed_interval_note, seed_intervals
from debiaseval.experiments import (
    Data,
    input_frames,
    seed_data,
    seed_generated,
    seed_ids,
    validated,
)
from debiaseval.experiments.e3.verdict import e3_verdict
from debiaseval.experiments.verdicts import verdict_entries
from debiaseval.io.errors import ConfigError
from debiaseval.io.progress import stage, staged

__all__ = [
    "LEVELS",
    "NEEDS",
    "OUTPUTS",
    "Truth",
    "aggregate",
    "check_config",
    "dataset_truth",
    "full_truth",
    "mean_over_matrices",
    "rmse_table",
    "run",
    "simulate",
    "simulate_seed",
    "summarise_estimates",
    "synthetic_truth",
    "table1_markdown",
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
                "seed": np.empty(0, np.int32), "draw": np.empty(0, np.int32),
                "mar_size": np.empty(0, np.int64), "rating": np.empty(0, np.float32),
                "propensity": np.empty(0), "true_propensity": np.empty(0),
                "p_rating_observed": np.empty(0), "p_rating": np.empty(0),
            }
        )  # fmt: skip
    out = pd.concat(tables, ignore_index=True)
    out["seed"] = np.int32(seed)
    out["true_propensity"] = true_marginal[out["rating"].to_numpy(np.int64) - 1]
    return out[columns]


def _ordered_groups(draws: pd.DataFrame, keys: list[str]) -> pd.core.groupby.DataFrameGroupBy:
    return draws.groupby(keys, sort=False, observed=True)


LEVEL = 0.95
"""Level of the estimates' t interval over the draws. E3 has no level key: its aggregate job
gets only ``alpha``, ``table_metrics`` and ``curve_metrics`` of the block."""


def value_range(metric: str) -> tuple[float, float]:
    """The range of E3's ``metric`` and of its estimates: [0, 1] for ``accuracy``, [0, ∞) for
    the others (``mae``, ``mse``, and ``dcg@k``, ``precision@k``, whose gain is the rating,
    :mod:`debiaseval.evaluation.losses`, so not a share)."""
    return (0.0, 1.0) if parse_metric(metric)[0] == "accuracy" else (0.0, math.inf)


def summarise_estimates(draws: pd.DataFrame, *, alpha: float) -> pd.DataFrame:
    """[ICML16] Table 1: mean and sd (ddof 1) of every estimator over all draws at ``alpha``,
    and the :data:`LEVEL` t interval of the mean over the draws within the metric's range.

    Uses the known-propensity rows at ``alpha`` (of every seed); columns
    ``matrix``, ``metric``, ``estimator``, ``true_value`` (mean over seeds),
    ``mean``, ``sd``, ``ci_low``/``ci_high`` (the t interval over the draws computed on the
    logit or log scale of :func:`value_range` and mapped back:
    :func:`~debiaseval.evaluation.uncertainty.seed_intervals`), ``n_draws``, ``flags``
    (:mod:`debiaseval.evaluation.flags`: ``undefined_draws`` where some draws' estimate is
    NaN, e.g. SNIPS or Naive on a draw that observed no pair; the mean, sd and interval leave
    them out), in the order the draws list them.
    """
    rows = draws[(draws["propensity"] == "known") & np.isclose(draws["alpha"], alpha)]
    if rows.empty:
        raise ValueError(f"the draws hold no known-propensity estimates at alpha={alpha:g}")
    out = _ordered_groups(rows, ["matrix", "metric", "estimator"]).agg(
        true_value=("true_value", "mean"),
        mean=("value", "mean"),
        sd=("value", "std"),
        n_draws=("value", "size"),
        n_defined=("value", "count"),
    )
    out = out.reset_index()
    out["n_draws"] = out["n_draws"].astype(np.int64)
    undefined = (out.pop("n_defined") < out["n_draws"]).to_numpy()
    out["flags"] = join_flags({"undefined_draws": undefined})
    keys = ["matrix", "metric", "estimator"]
    ci = seed_intervals(rows, keys, level=LEVEL, bounds=value_range)[[*keys, "ci_low", "ci_high"]]
    columns = [*out.columns[: list(out.columns).index("sd") + 1], "ci_low", "ci_high",
               "n_draws", "flags"]  # fmt: skip
    return out.merge(ci, on=keys, how="left")[columns]


def rmse_table(draws: pd.DataFrame, *, propensity: str, by: str) -> pd.DataFrame:
    """RMSE, bias and sd of every estimator against the truth, per value of ``by``.

    ``propensity`` selects the rows (``known`` or ``naive_bayes``); ``by`` is
    ``alpha`` (RMSE vs α) or ``mar_size`` (RMSE vs the MAR sample size). RMSE =
    √(mean over draws and seeds of (estimate − true value)²). Columns
    ``matrix``, ``metric``, ``estimator``, ``alpha``, ``mar_size``, ``rmse``,
    ``bias``, ``sd``, ``n_draws``; sorted by matrix, metric, estimator (in the
    draws' order) and ``by``.
    """
    rows = draws[draws["propensity"] == propensity].copy()
    if rows.empty:
        return pd.DataFrame(
            {
                c: pd.Series(dtype=t)
                for c, t in [
                    ("matrix", object), ("metric", object), ("estimator", object),
                    ("alpha", np.float64), ("mar_size", np.int64), ("rmse", np.float64),
                    ("bias", np.float64), ("sd", np.float64), ("n_draws", np.int64),
                ]
            }
        )  # fmt: skip
    rows["error"] = rows["value"] - rows["true_value"]
    rows["sq"] = rows["error"] ** 2
    keys = ["matrix", "metric", "estimator", "alpha", "mar_size"]
    out = _ordered_groups(rows, keys).agg(
        rmse=("sq", "mean"), bias=("error", "mean"), sd=("value", "std"), n_draws=("value", "size")
    )
    out = out.reset_index()
    out["rmse"] = np.sqrt(out["rmse"])
    out["n_draws"] = out["n_draws"].astype(np.int64)
    order = {
        col: {v: i for i, v in enumerate(pd.unique(rows[col]))}
        for col in ("matrix", "metric", "estimator")
    }
    rank = [out[col].map(order[col]) for col in order]
    out = out.assign(_m=rank[0], _t=rank[1], _e=rank[2])
    out = out.sort_values(["_m", "_t", "_e", by], kind="stable", ignore_index=True)
    return out.drop(columns=["_m", "_t", "_e"])


def _fmt(x: float, scale: float) -> str:
    return f"{x:.3f}" if scale < 10 else f"{x:.2f}"


def table1_markdown(estimates: pd.DataFrame, *, title: str = "") -> str:
    """The estimates laid out like [ICML16] Table 1: metrics × (True, estimators) by matrix.

    Each cell is ``mean [t interval over the draws] (sd s)``: the interval of the mean, within
    the metric's range, and the estimator's spread over the draws; the ``True`` row is the
    true value.
    """
    matrices = list(pd.unique(estimates["matrix"]))
    lines = [f"# {title}", ""] if title else []
    lines.append("| metric | | " + " | ".join(matrices) + " |")
    lines.append("|---|---|" + "---:|" * len(matrices))
    labels = {"naive": "Naive", "ips": "IPS", "snips": "SNIPS"}
    for metric in pd.unique(estimates["metric"]):
        block = estimates[estimates["metric"] == metric]
        true = block.groupby("matrix", sort=False)["true_value"].first()
        scale = float(true.abs().max())  # one number format per metric
        cells = [_fmt(true[m], scale) for m in matrices]
        lines.append(f"| {metric.upper()} | True | " + " | ".join(cells) + " |")
        for est in pd.unique(block["estimator"]):
            row = block[block["estimator"] == est].set_index("matrix")
            digits = 3 if scale < 10 else 2  # as _fmt
            cells = [
                interval_cell(*row.loc[m, ["mean", "ci_low", "ci_high"]], np.nan, np.nan,
                              row.at[m, "n_draws"], digits=digits)
                + f" (sd {_fmt(row.at[m, 'sd'], scale)})"
                for m in matrices
            ]  # fmt: skip
            if "flags" in row:
                cells = marked(cells, [row.at[m, "flags"] for m in matrices])
            lines.append(f"| | {labels.get(est, est)} | " + " | ".join(cells) + " |")
    n = int(estimates["n_draws"].iloc[0])
    note = seed_interval_note(
        n,
        level=LEVEL,
        source="fixed: E3 has no level key",
        bounds="([0, 1] for accuracy, [0, ∞) for the other metrics)",
        scale="logit or log",
        over="draws of O",
    )
    lines += [
        "",
        f"Mean over {n} draws of O, and in round brackets the sd of the estimates over the "
        "draws; True = the exact value on the full matrix, averaged over the seeds where "
        f"each draws its own matrix (docs/datasets.md). {note}",
    ]
    notes = legend(estimates["flags"]) if "flags" in estimates else ""
    return "\n".join(lines) + "\n" + notes


def simulate_seed(
    truth: Truth, block: Mapping[str, Any], seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`simulate` for run ``seed`` with the ``e3`` config block's settings.

    The random streams are ``run_rng(seed, dataset, "e3", "predictions" | "draws")``.
    """
    return simulate(
        truth,
        seed=seed,
        matrices=block["matrices"],
        metrics=block["metrics"],
        alpha=block["alpha"],
        alphas=block["alphas"],
        n_draws=block["n_draws"],
        mar_sizes=block["mar_sizes"],
        smoothing=block["smoothing"],
        clip=block["clip"],
        rng_predictions=run_rng(seed, truth.name, "e3", "predictions"),
        rng_draws=run_rng(seed, truth.name, "e3", "draws"),
    )


def mean_over_matrices(rmse: pd.DataFrame) -> pd.DataFrame:
    """RMSE, |bias| and sd of each estimator averaged over the prediction matrices.

    [ICML16] Figures 2 and 4 plot, per metric and estimator, the RMSE averaged over the five
    prediction matrices against α (Fig. 2) and against the MAR sample size (Fig. 4). From a
    :func:`rmse_table`: per ``metric``, ``estimator``, ``alpha``, ``mar_size``, the means over
    matrices of ``rmse``, of ``abs_bias`` = |bias| and of ``sd``, with ``n_matrices``.
    """
    keys = ["metric", "estimator", "alpha", "mar_size"]
    out = (
        rmse.assign(abs_bias=rmse["bias"].abs())
        .groupby(keys, sort=False)
        .agg(
            rmse=("rmse", "mean"),
            abs_bias=("abs_bias", "mean"),
            sd=("sd", "mean"),
            n_matrices=("matrix", "nunique"),
        )
        .reset_index()
    )
    out["n_matrices"] = out["n_matrices"].astype(np.int64)
    return out


def _chosen(block: Mapping[str, Any], key: str) -> list[str] | None:
    """The metrics of ``block[key]`` (Table 1's or the curves'); None = every metric."""
    chosen = block.get(key)
    return None if chosen is None else list(chosen)


def _only(frame: pd.DataFrame, metrics: Sequence[str] | None) -> pd.DataFrame:
    if metrics is None:
        return frame
    return frame[frame["metric"].isin(metrics)].reset_index(drop=True)


def aggregate(draws: pd.DataFrame, block: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """The aggregated tables of E3 from every seed's draws.

    ``estimates`` ([ICML16] Table 1) for the metrics of ``block['table_metrics']``; the RMSE
    tables per matrix (``rmse_vs_alpha``, ``rmse_vs_mar``) and averaged over the matrices
    (``rmse_vs_alpha_mean``, ``rmse_vs_mar_mean``, Figures 2 and 4) for those of
    ``block['curve_metrics']``; a missing or null key means every metric of the draws.
    """
    curves = _only(draws, _chosen(block, "curve_metrics"))
    by_alpha = rmse_table(curves, propensity="known", by="alpha")
    by_mar = rmse_table(curves, propensity="naive_bayes", by="mar_size")
    return {
        "estimates": summarise_estimates(
            _only(draws, _chosen(block, "table_metrics")), alpha=block["alpha"]
        ),
        "rmse_vs_alpha": by_alpha,
        "rmse_vs_mar": by_mar,
        "rmse_vs_alpha_mean": mean_over_matrices(by_alpha),
        "rmse_vs_mar_mean": mean_over_matrices(by_mar),
    }


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


def _given_truth(
    data: Truth | Data, config: Mapping[str, Any] | None, dataset: str | None
) -> Truth:
    """The :class:`Truth` of a ``run``'s ``data`` other than ``synthetic``: a :class:`Truth` as
    given, else the ``full`` part of the dataset's frames (:func:`full_truth`)."""
    if isinstance(data, Truth):
        return data
    frames = input_frames(data, config, dataset, experiment="e3")
    return full_truth(frames.interactions, frames.dataset)


def run(
    data: Truth | Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Run E3 in-process: the tables the workflow writes, for the same config and seeds.

    ``data``: a dataset name (``synthetic`` generated from the config's ``synthetic``
    block, each seed its own draw unless ``synthetic.per_seed`` is false (docs/datasets.md),
    ``ml-100k-semi`` loaded like the workflow does), the canonical frames of a
    dataset with a ``full`` part (:func:`full_truth`, named ``dataset``) or a
    :class:`Truth`. ``config`` is a validated workflow config (:func:`debiaseval.api.run`
    validates a partial one);
    ``seeds`` a number of runs or a list of seed ids (default: the ``e3`` block's).
    Returns ``draws`` and ``naive_bayes`` (every seed's, concatenated: the
    per-seed files), ``estimates``, ``rmse_vs_alpha``, ``rmse_vs_mar``,
    ``rmse_vs_alpha_mean`` and ``rmse_vs_mar_mean`` (:func:`aggregate`), and the verdict
    (:func:`~debiaseval.experiments.e3.verdict.e3_verdict`: ``verdict``, ``verdict_md``).
    """
    cfg = validated(config, "e3")
    block = cfg["e3"]
    if isinstance(data, str) and data == "synthetic":  # each seed's own draw (per_seed)
        truth_of = seed_generated(cfg, data, synthetic_truth)
    else:
        truth_of = seed_data(lambda seed: _given_truth(data, config, dataset), drawn=False)
    ids = seed_ids(seeds, block["seeds"])
    name = truth_of(ids[0]).name
    runs = [simulate_seed(truth_of(s), block, s) for s in staged(ids)]
    draws = pd.concat([d for d, _ in runs], ignore_index=True)
    naive_bayes = pd.concat([nb for _, nb in runs], ignore_index=True)
    stage("aggregating")
    tables = aggregate(draws, block)
    found = e3_verdict(tables["rmse_vs_alpha_mean"], draws, block, dataset=name)
    return {"draws": draws, "naive_bayes": naive_bayes, **tables, **verdict_entries(found)}
