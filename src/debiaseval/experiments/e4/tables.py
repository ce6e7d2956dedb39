"""E4's tables of the test errors of MF-Naive and MF-IPS over seeds ([ICML16] §6.5, Table 2).

The per-seed errors of every propensity model's MF summarised with t intervals and flags
(:func:`summarise`), the paired t-tests of MF-IPS against MF-Naive on the same MAR test pairs
(:func:`pair_tests`), both together (:func:`aggregate`), and the summary's Markdown
(:func:`summary_markdown`) with its title (:func:`summary_title`). The fits that make the
errors are :func:`debiaseval.experiments.e4.steps.fit`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.evaluation.flags import MIN_USERS, join_flags, legend, marked
from debiaseval.evaluation.uncertainty import (
    MIN_T_SEEDS,
    interval_cell,
    seed_interval_note,
    seed_intervals,
)
from debiaseval.experiments.step_config import StepConfig

__all__ = [
    "BIAS_ONLY_RMS",
    "CONFIDENCE",
    "LOSS_COLUMNS",
    "PAIR_TEST_COLUMNS",
    "SUMMARY_COLUMNS",
    "TRUTH_DATASETS",
    "E4Aggregate",
    "aggregate",
    "grid_edge",
    "losses_frame",
    "model_name",
    "pair_tests",
    "summarise",
    "summary_markdown",
    "summary_title",
    "tuning_grid",
]


BIAS_ONLY_RMS = 1e-3
"""A reported model whose factors add less than this (``factor_rms``, on the rating scale) is
flagged ``bias_only``: it predicts with the offset and biases alone, and so does every model
with a larger λ."""

SUMMARY_COLUMNS = (
    "model",
    "propensity",
    "metric",
    "alpha",
    "mar_size",
    "mean",
    "sd",
    "ci_low",
    "ci_high",
    "n_seeds",
    "p_value",
    "flags",
)
"""Columns of the summary (``summary.parquet``); ``ci_low``/``ci_high``: the
:data:`CONFIDENCE` t interval over seeds within [0, ∞); ``flags`` as in
:mod:`debiaseval.evaluation.flags` (:func:`summarise`)."""

CONFIDENCE = 0.95
"""Coverage of the summary's t interval over seeds, fixed: E4 has no ``confidence`` key
(docs/experiments/e4.md)."""

LOSS_COLUMNS = ("seed", "alpha", "propensity", "metric", "pair", "value")
"""Columns of one fit's per-pair MAR test losses (``losses.parquet``): ``pair`` numbers the
test pairs of the seed in :func:`prepare`'s order, so two models' losses pair up."""

PAIR_TEST_COLUMNS = (
    "model",
    "propensity",
    "metric",
    "alpha",
    "seed",
    "n_pairs",
    "mean_diff",
    "t",
    "p_value",
)
"""Columns of the per-seed paired t-tests over the test pairs (``pair_tests.parquet``)."""


def model_name(propensity: str) -> str:
    """``MF-Naive`` for propensity model ``none``, else ``MF-IPS``."""
    return "MF-Naive" if propensity == "none" else "MF-IPS"


def losses_frame(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Fits' per-pair test losses as one frame of :data:`LOSS_COLUMNS` (typed when empty)."""
    if not frames:
        types = {
            "seed": np.int32,
            "alpha": np.float64,
            "propensity": object,
            "metric": object,
            "pair": np.int64,
            "value": np.float64,
        }
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in types.items()})
    return pd.concat(frames, ignore_index=True)[list(LOSS_COLUMNS)]


def pair_tests(losses: pd.DataFrame) -> pd.DataFrame:
    """[ICML16]'s paired t-test of each MF-IPS against MF-Naive within a seed ([ICML16] §6.5).

    The two models' losses δ on the same MAR test pairs are paired (``scipy.stats.ttest_rel``,
    two-sided); one row per ``propensity``, ``metric``, ``alpha``, ``seed``: ``n_pairs``,
    ``mean_diff`` (MF-IPS − MF-Naive, the difference of the test errors), ``t``, ``p_value``.
    """
    from scipy.stats import ttest_rel

    keys = ["seed", "alpha", "metric", "pair"]
    naive = losses[losses["propensity"] == "none"]
    rows = []
    for propensity, block in losses[losses["propensity"] != "none"].groupby(
        "propensity", sort=False
    ):
        both = block.merge(naive, on=keys, suffixes=("", "_naive"), validate="one_to_one")
        for (metric, alpha, seed), cell in both.groupby(
            ["metric", "alpha", "seed"], sort=True, dropna=False
        ):
            a, b = cell["value"].to_numpy(), cell["value_naive"].to_numpy()
            same = a.size < 2 or np.all(a == b)
            test = None if same else ttest_rel(a, b)
            rows.append(
                {
                    "model": model_name(propensity),
                    "propensity": propensity,
                    "metric": metric,
                    "alpha": float(alpha),
                    "seed": np.int32(seed),
                    "n_pairs": np.int64(a.size),
                    "mean_diff": float(np.mean(a - b)) if a.size else np.nan,
                    "t": np.nan if test is None else float(test.statistic),
                    "p_value": np.nan if test is None else float(test.pvalue),
                }
            )
    out = pd.DataFrame(rows, columns=list(PAIR_TEST_COLUMNS))
    return out.astype({"seed": np.int32, "n_pairs": np.int64, "alpha": np.float64})


def grid_edge(errors: pd.DataFrame, grid: Mapping[str, Sequence[Any]]) -> np.ndarray:
    """Per row of ``errors``, whether a chosen hyperparameter (a column of ``errors``, e.g.
    ``factors``, ``l2``) is the smallest or largest of the two or more values ``grid`` lists
    for it: the cross-validated optimum may then lie outside the grid."""
    edge = np.zeros(len(errors), dtype=bool)
    for key, values in grid.items():
        levels = np.unique(np.asarray(values, dtype=np.float64))
        if key in errors.columns and levels.size >= 2:
            chosen = errors[key].to_numpy(np.float64)
            edge |= np.isclose(chosen, levels[0]) | np.isclose(chosen, levels[-1])
    return edge


def summarise(
    errors: pd.DataFrame,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    min_users: int = MIN_USERS,
) -> pd.DataFrame:
    """Mean, sd (ddof 1) and :data:`CONFIDENCE` t interval of the test error over seeds, a paired
    t-test against MF-Naive, and flags.

    One row per ``model``, ``propensity``, ``metric``, ``alpha``, ``mar_size`` (MF-IPS-NB's
    MCAR sample on the sweep, else NaN; in the errors' order, MF-Naive first): ``mean``,
    ``sd``, ``ci_low``/``ci_high`` (the t interval over seeds computed on the log scale of
    the error's range [0, ∞) and mapped back, so that it never reaches below 0:
    :func:`~debiaseval.evaluation.uncertainty.seed_intervals`), ``n_seeds`` and ``p_value``,
    the two-sided paired
    t-test (``scipy.stats.ttest_rel``) of the model's per-seed errors against MF-Naive's
    on the same seeds (NaN for MF-Naive itself and, as the t interval, with fewer than
    :data:`~debiaseval.evaluation.uncertainty.MIN_T_SEEDS` common seeds: one policy for the
    interval and the test across seeds).
    ``flags`` (:mod:`debiaseval.evaluation.flags`), each when it holds in at least one seed:
    ``grid_edge``, the chosen ``factors`` or ``l2`` is an end of ``grid`` (the tuning grid,
    :func:`tuning_grid`; not checked without it) of a model that is not bias-only;
    ``bias_only``, the reported model's factors add less than :data:`BIAS_ONLY_RMS` to its
    predictions (``factor_rms``): the offset and biases alone predict, every larger λ gives the
    same model, so a λ at the top of the grid is no edge of the search; ``not_converged``, the
    reported fit stopped at ``model.max_iter`` sweeps before meeting ``model.tol``
    (``converged``); ``few_pairs``,
    the test error is a mean over fewer than ``min_users`` test pairs (``n_test``).
    """
    from scipy.stats import ttest_rel  # lazy: scipy.stats costs 0.5 s of every E4 job

    if "mar_size" not in errors.columns:
        errors = errors.assign(mar_size=np.nan)
    keys = ["model", "propensity", "metric", "alpha", "mar_size"]
    masks = _seed_flags(errors, grid, min_users)
    rows = errors.assign(_naive=errors["propensity"] != "none", **masks)
    rows = rows.sort_values("_naive", kind="stable")
    out = rows.groupby(keys, sort=False, dropna=False).agg(
        mean=("value", "mean"),
        sd=("value", "std"),
        n_seeds=("value", "size"),
        **{code: (code, "any") for code in masks},
    )
    out = out.reset_index()
    out["n_seeds"] = out["n_seeds"].astype(np.int64)
    out["flags"] = join_flags({code: out[code] for code in masks}) if masks else ""
    naive = errors[errors["propensity"] == "none"]
    naive_values = {
        (m, _alpha_key(a), int(s)): v
        for m, a, s, v in naive[["metric", "alpha", "seed", "value"]].itertuples(index=False)
    }
    p_values = []
    for _model, propensity, metric, alpha, size in out[keys].itertuples(index=False):
        if propensity == "none":
            p_values.append(np.nan)
            continue
        sel = errors[(errors["propensity"] == propensity) & (errors["metric"] == metric)]
        sel = sel[_same_alpha(sel["alpha"], alpha) & _same_alpha(sel["mar_size"], size)]
        pairs = [
            (v, naive_values[(metric, _alpha_key(alpha), int(s))])
            for s, v in sel[["seed", "value"]].itertuples(index=False)
            if (metric, _alpha_key(alpha), int(s)) in naive_values
        ]
        if len(pairs) < MIN_T_SEEDS:  # as the t interval: no test of one degree of freedom
            p_values.append(np.nan)
            continue
        a, b = np.array(pairs).T
        p_values.append(np.nan if np.all(a == b) else float(ttest_rel(a, b).pvalue))
    out["p_value"] = np.asarray(p_values, dtype=np.float64)
    ci = seed_intervals(errors, keys, confidence=CONFIDENCE)[[*keys, "ci_low", "ci_high"]]
    return out.merge(ci, on=keys, how="left")[list(SUMMARY_COLUMNS)]


def _seed_flags(
    errors: pd.DataFrame, grid: Mapping[str, Sequence[Any]] | None, min_users: int
) -> dict[str, np.ndarray]:
    """Per row of ``errors``, one mask per flag of :func:`summarise` whose evidence the table
    holds (``grid``; the ``converged`` and ``n_test`` columns)."""
    masks = {}
    bias_only = None
    if "factor_rms" in errors.columns:
        bias_only = errors["factor_rms"].to_numpy(np.float64) < BIAS_ONLY_RMS
    if grid is not None:
        edge = grid_edge(errors, grid)
        masks["grid_edge"] = edge if bias_only is None else edge & ~bias_only
    if bias_only is not None:
        masks["bias_only"] = bias_only
    if "converged" in errors.columns:
        masks["not_converged"] = ~errors["converged"].to_numpy(bool)
    if "n_test" in errors.columns:
        masks["few_pairs"] = errors["n_test"].to_numpy(np.int64) < int(min_users)
    return masks


def _alpha_key(alpha: float) -> float | None:
    return None if np.isnan(alpha) else float(alpha)


def _same_alpha(values: pd.Series, alpha: float) -> np.ndarray:
    v = values.to_numpy(np.float64)
    return np.isnan(v) if np.isnan(alpha) else v == alpha


def summary_markdown(
    summary: pd.DataFrame,
    *,
    title: str = "",
    alpha: float | None = None,
    tests: pd.DataFrame | None = None,
) -> str:
    """Markdown table of the summary ([ICML16] Table 2 layout): models × (MSE, MAE).

    With an α sweep only the rows at ``alpha`` are shown (all α are in the Parquet table).
    Cells are ``mean [t interval over seeds]`` (the interval from 3 seeds on, within
    [0, ∞): :func:`~debiaseval.evaluation.uncertainty.interval_cell`), followed by the
    symbols of the row's ``flags`` (explained in a legend under the table); the p-values
    are of the paired t-test against MF-Naive across seeds (from 3 seeds on, as the
    interval). With ``tests`` (:func:`pair_tests`) a second table gives every seed's p of
    [ICML16]'s test, paired over the MAR test pairs.
    """
    rows = summary
    if alpha is not None and summary["alpha"].notna().any():
        rows = summary[np.isclose(summary["alpha"], alpha)]
    metrics = list(dict.fromkeys(rows["metric"]))
    lines = [f"# {title}", ""] if title else []
    head = "| model | propensity | " + " | ".join(f"{m.upper()} | p ({m.upper()})" for m in metrics)
    lines += [head + " |", "|---|---|" + "---:|---:|" * len(metrics)]
    rows = (
        rows.assign(_size=rows["mar_size"].fillna(-1.0))
        if "mar_size" in rows
        else rows.assign(_size=-1.0)
    )
    for (model, propensity, size), block in rows.groupby(
        ["model", "propensity", "_size"], sort=False
    ):
        if size >= 0:
            propensity = f"{propensity} (MCAR sample {int(size):,})"
        cells = []
        for metric in metrics:
            cell = block[block["metric"] == metric]
            if cell.empty:
                cells += ["", ""]
                continue
            r = cell.iloc[0]
            text = interval_cell(
                r["mean"], r["ci_low"], r["ci_high"], np.nan, np.nan, r["n_seeds"], digits=3
            )
            cells += marked([text], [r.get("flags", "")])
            cells.append("" if np.isnan(r["p_value"]) else f"{r['p_value']:.3g}")
        lines.append(f"| {model} | {propensity} | " + " | ".join(cells) + " |")
    n = int(rows["n_seeds"].max()) if len(rows) else 0
    where = "" if alpha is None or rows["alpha"].isna().all() else f" at alpha = {alpha:g}"
    lines += [
        "",
        f"Test error{where}, mean over {n} seed(s); p: paired t-test against MF-Naive "
        f"across seeds (scipy.stats.ttest_rel, two-sided), from {MIN_T_SEEDS} seeds on as the "
        "interval (with fewer it has at most one degree of freedom, and no p is given). "
        + seed_interval_note(
            n,
            confidence=CONFIDENCE,
            source="fixed: E4 has no level key",
            bounds="[0, ∞)",
            why="E4 keeps no interval over test pairs",
        ),
    ]
    notes = legend(rows["flags"]) if "flags" in rows else ""
    if notes:
        lines.append(notes.rstrip("\n"))
    if tests is not None and len(tests):
        seeds = sorted(set(tests["seed"].tolist()))
        lines += [
            "",
            "Paired t-test of MF-IPS against MF-Naive over the MAR test pairs, per seed "
            "(ICML16 section 6.5; p, and the mean difference of the errors):",
            "",
            "| model | propensity | metric | " + " | ".join(f"seed {s}" for s in seeds) + " |",
            "|---|---|---|" + "---:|" * len(seeds),
        ]
        keys = ["model", "propensity", "metric"]
        for (model, propensity, metric), block in tests.groupby(keys, sort=False):
            by_seed = block.set_index("seed")
            cells = [
                f"{by_seed.at[s, 'p_value']:.2g} ({by_seed.at[s, 'mean_diff']:+.3f})"
                if s in by_seed.index
                else ""
                for s in seeds
            ]
            head = f"| {model} | {propensity} | {metric.upper()} | "
            lines.append(head + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


TRUTH_DATASETS = ("synthetic", "ml-100k-semi")
"""Datasets with a full rating matrix and observation model: the α sweep, full-matrix test."""


def tuning_grid(block: Mapping[str, Any], dataset: str) -> dict[str, list[Any]]:
    """The hyperparameter grid :func:`~debiaseval.experiments.e4.steps.fit` tunes over on
    ``dataset``: ``alpha_sweep.grid`` with a full truth, else ``grid``."""
    sweep = block["alpha_sweep"]
    return dict(sweep["grid"] if dataset in TRUTH_DATASETS else block["grid"])


@dataclasses.dataclass(frozen=True)
class E4Aggregate(StepConfig):
    """What rule ``e4_aggregate`` reads of the config: ``alpha`` is ``alpha_sweep.alpha``,
    ``grid`` the dataset's tuning grid (:func:`tuning_grid`), ``min_users`` the top-level key."""

    BLOCK: ClassVar[str] = "e4"
    alpha: float
    grid: dict[str, list[Any]]
    min_users: int

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """The values for ``dataset``."""
        block = config["e4"]
        return {
            "alpha": block["alpha_sweep"]["alpha"],
            "grid": tuning_grid(block, dataset),
            "min_users": config["min_users"],
        }


def aggregate(
    errors: Sequence[pd.DataFrame], losses: Sequence[pd.DataFrame], step: E4Aggregate
) -> dict[str, pd.DataFrame]:
    """Rule ``e4_aggregate``: every seed's and model's errors (sorted by seed, propensity order
    kept), the summary (flagged against the tuning ``step.grid`` and ``step.min_users``:
    :func:`summarise`) and, from the per-pair test ``losses`` of the same fits, the per-seed
    :func:`pair_tests`."""
    table = pd.concat(list(errors), ignore_index=True)
    table = table.sort_values(["seed"], kind="stable", ignore_index=True)
    pairs = pd.concat(list(losses), ignore_index=True) if losses else losses_frame([])
    summary = summarise(table, grid=step.grid, min_users=step.min_users)
    return {"errors": table, "summary": summary, "pair_tests": pair_tests(pairs)}


def summary_title(dataset: str) -> str:
    """Title of the Markdown summary of ``dataset``."""
    return f"E4 on {dataset}: MF-Naive vs MF-IPS (ICML16 Table 2)"
