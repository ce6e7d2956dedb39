"""E5's tables of Recall@K estimates over seeds ([URE24], docs/experiments/e5.md).

Per model and k: the true recall, the traditional recall over the randomly exposed items and
URE (:mod:`debiaseval.evaluation.ure`) with their seed intervals, bootstrap bounds and flags
(:func:`estimates_table`), the paired comparisons of models per user
(:func:`comparisons_table`), the agreement of each estimate's model ranking with the truth's
(:func:`agreement_table`) with its intervals over seeds (:func:`agreement_intervals`), their
Markdown pages, and all of them from every seed's files (rule ``e5_aggregate``,
:func:`aggregate_step`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.data.splits import run_rng
from debiaseval.estimation.resampling import ResamplingPlan, percentile_interval
from debiaseval.estimation.seed_scores import kendall_tau_b
from debiaseval.evaluation.agreement import agreement
from debiaseval.evaluation.flags import (
    DEGENERATE_SHARE,
    MIN_USERS,
    exposed_within_k,
    join_flags,
    legend,
    marked,
)
from debiaseval.evaluation.uncertainty import (
    INTERVAL_NOTE,
    agreement_over_seeds,
    bootstrap_interval,
    compare_recommenders,
    interval_cell,
    seed_intervals,
)
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.markdown_tables import markdown_table

__all__ = [
    "ESTIMATE_COLUMN",
    "ESTIMATE_COLUMNS",
    "INTERVAL_SUFFIXES",
    "PER_USER_COLUMNS",
    "RECALL_ESTIMATORS",
    "aggregate_step",
    "agreement_intervals",
    "agreement_markdown",
    "agreement_table",
    "bootstrap_table",
    "comparisons_table",
    "estimates_markdown",
    "estimates_table",
    "evaluated_users",
    "per_user_values",
    "users_k_ge_exposed",
]


RECALL_ESTIMATORS = ("traditional", "ure")
"""The estimators of Recall@K whose ranking of the models is compared with the truth's."""
ESTIMATE_COLUMN = {"traditional": "traditional_recall", "ure": "ure"}
"""The ``estimates`` column of each estimator of :data:`RECALL_ESTIMATORS`."""


PER_USER_COLUMNS = ["model", "params", "user", "k", "metric", "value"]
"""Columns of ``metrics_per_user/<model>.parquet`` (before the adapter's ``seed``)."""


def per_user_values(per_user: pd.DataFrame, model: str, params: str) -> pd.DataFrame:
    """:func:`~debiaseval.evaluation.ure.recall_estimates`' rows in long form: one row per
    user, k and estimate (``metric`` ∈ true_recall, traditional_recall, ure) where it is
    defined, so that the mean of ``value`` per (k, metric) is the estimate of
    :func:`~debiaseval.evaluation.ure.mean_recall`. Columns :data:`PER_USER_COLUMNS`."""
    long = per_user.melt(
        id_vars=["user", "k"],
        value_vars=["true_recall", "traditional_recall", "ure"],
        var_name="metric",
        value_name="value",
    )
    long = long[long["value"].notna()].reset_index(drop=True)
    long.insert(0, "params", params)
    long.insert(0, "model", model)
    long["k"] = long["k"].astype(np.int16)
    return long[PER_USER_COLUMNS]


def comparisons_table(
    per_user: pd.DataFrame, *, confidence: float
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Paired t-tests between the models of every seed, per k and estimate, over the users
    both have, Holm-adjusted over the pairs (:func:`compare_recommenders`); and how many
    seeds agree (:func:`agreement_over_seeds`, significant below 1 - ``confidence``).

    ``per_user``: :func:`per_user_values` rows with ``seed``. A model entry with one grid
    point is named by its model name, else by ``model params``. Returns
    ``(per_seed, agreement)``.
    """
    points = per_user.groupby("model", sort=False)["params"].nunique()
    label = per_user["model"].where(
        per_user["model"].map(points) == 1, per_user["model"] + " " + per_user["params"]
    )
    frame = per_user.assign(recommender=label)
    names = list(dict.fromkeys(frame["recommender"]))
    tests = []
    for (seed, k, metric), block in frame.groupby(["seed", "k", "metric"], sort=True):
        wide = block.pivot(index="user", columns="recommender", values="value")
        wide = wide.reindex(columns=[n for n in names if n in wide.columns])
        table = compare_recommenders(wide.to_numpy(), list(wide.columns))
        table.insert(0, "seed", seed)
        table.insert(1, "metric", metric)
        table.insert(2, "k", np.int16(k))
        tests.append(table)
    per_seed = pd.concat(tests, ignore_index=True) if tests else pd.DataFrame()
    if not len(per_seed):
        return per_seed, pd.DataFrame()
    return per_seed, agreement_over_seeds(per_seed, ["metric", "k"], alpha=1 - confidence)


def bootstrap_table(
    per_user: pd.DataFrame, *, resamples: int, confidence: float, dataset: str
) -> pd.DataFrame:
    """Per seed, the percentile bootstrap interval over users of every estimate.

    ``per_user``: :func:`per_user_values` rows with ``seed``. For each seed, the users ×
    (model, params, k, metric) values (NaN where an estimate is undefined for a user) go to
    :func:`~debiaseval.evaluation.uncertainty.bootstrap_interval`: ``resamples`` Poisson
    resamples of the seed's users from ``run_rng(seed, dataset, "e5_bootstrap")``, one count
    per user shared by every model, K and estimate. Returns seed, model, params, k, metric,
    boot_low, boot_high (NaN when ``resamples`` is 0).
    """
    keys = ["model", "params", "k", "metric"]
    frames = []
    for seed, block in per_user.groupby("seed", sort=True):
        grouped = block.groupby(keys, sort=False)
        column = grouped.ngroup().to_numpy()
        users, row = np.unique(block["user"].to_numpy(), return_inverse=True)
        wide = np.full((users.size, int(column.max()) + 1), np.nan, dtype=np.float32)
        wide[row, column] = block["value"].to_numpy()
        low, high = bootstrap_interval(
            wide,
            resamples=resamples,
            rng=run_rng(int(seed), dataset, "e5_bootstrap"),
            confidence=confidence,
        )
        labels = grouped.size().reset_index()[keys]
        frames.append(labels.assign(seed=seed, boot_low=low, boot_high=high))
    columns = ["seed", *keys, "boot_low", "boot_high"]
    return pd.concat(frames, ignore_index=True)[columns] if frames else pd.DataFrame()


ESTIMATE_COLUMNS = ("true_recall", "traditional_recall", "ure")
"""The estimates of ``estimates.parquet``, one column each."""
INTERVAL_SUFFIXES = ("ci_low", "ci_high", "boot_low", "boot_high")
"""Suffixes of the interval columns of ``estimates.parquet``, after each estimate's name."""


def estimates_table(
    per_seed: pd.DataFrame,
    *,
    min_users: int = MIN_USERS,
    bounds: pd.DataFrame | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Seed means per (model, params, k) and every estimate's rank of the model (1 = best).

    ``per_seed``: :func:`evaluate_models` rows with a ``seed`` column. Columns:
    model, params, k, true_recall, traditional_recall, ure, n_seeds,
    rank_true, rank_traditional, rank_ure (ranks among the models at that k,
    ties share the best rank; NaN where the value is), flags
    (:mod:`debiaseval.evaluation.flags`): ``degenerate_k`` where, in some seed, K ≥ |R_u|
    for at least :data:`~debiaseval.evaluation.flags.DEGENERATE_SHARE` of the users the
    traditional estimate averages over (on Yahoo! R3's ~9 random items per user, every
    K ≥ 10); ``few_users`` where some seed's mean is over fewer than ``min_users`` users.
    After the estimates, their intervals at ``confidence`` (columns ``<estimate>_<suffix>``, the
    suffixes of :data:`INTERVAL_SUFFIXES`): Student's t interval over seeds, and the mean over
    seeds of the per-seed bootstrap bounds over users of ``bounds`` (:func:`bootstrap_table`;
    NaN without it), as E1's summary gives them
    (:func:`~debiaseval.evaluation.uncertainty.seed_intervals`).
    """
    keys = ["model", "params", "k"]
    values = ["true_recall", "traditional_recall", "ure"]
    grouped = per_seed.groupby(keys, sort=False)
    out = grouped[values].mean().reset_index()
    out = out.merge(_estimate_intervals(per_seed, bounds, confidence), on=keys, how="left")
    out = out[keys + values + _interval_columns()]
    out["n_seeds"] = grouped["seed"].nunique().to_numpy().astype(np.int64)
    by_k = out.groupby("k")
    for col, name in zip(values, ("rank_true", "rank_traditional", "rank_ure"), strict=True):
        out[name] = by_k[col].rank(ascending=False, method="min")
    out["flags"] = _estimate_flags(per_seed, keys, min_users).to_numpy()
    return out.sort_values(["k", "model", "params"], kind="stable").reset_index(drop=True)


def _estimate_intervals(
    per_seed: pd.DataFrame, bounds: pd.DataFrame | None, confidence: float
) -> pd.DataFrame:
    """Per (model, params, k): the interval columns of :func:`estimates_table`, wide."""
    keys = ["model", "params", "k"]
    long = per_seed.melt(
        id_vars=["seed", *keys],
        value_vars=["true_recall", "traditional_recall", "ure"],
        var_name="metric",
        value_name="value",
    )
    long = long[long["value"].notna()]
    if bounds is not None and len(bounds):
        long = long.merge(
            bounds.astype({"seed": long["seed"].dtype, "k": long["k"].dtype}),
            on=["seed", *keys, "metric"],
            how="left",
        )
    intervals = seed_intervals(long, [*keys, "metric"], confidence=confidence)
    wide = intervals.pivot(index=keys, columns="metric", values=list(INTERVAL_SUFFIXES))
    wide.columns = [f"{metric}_{suffix}" for suffix, metric in wide.columns]
    return wide.reindex(columns=_interval_columns()).reset_index()


def _interval_columns() -> list[str]:
    return [f"{v}_{s}" for v in ESTIMATE_COLUMNS for s in INTERVAL_SUFFIXES]


def _estimate_flags(per_seed: pd.DataFrame, keys: list[str], min_users: int) -> pd.Series:
    """The ``flags`` of :func:`estimates_table`, per group of ``keys`` in first-seen order."""
    exposed = per_seed["n_users_exposed"].to_numpy()
    within = (
        per_seed["n_users_k_ge_exposed"].to_numpy()
        if "n_users_k_ge_exposed" in per_seed
        else np.zeros(len(per_seed), np.int64)
    )
    true = per_seed["n_users_true"].to_numpy()
    has_truth = per_seed["true_recall"].notna().to_numpy()
    seeds = per_seed[keys].assign(
        degenerate=(exposed > 0) & (within >= DEGENERATE_SHARE * exposed),
        few=(exposed < min_users) | (has_truth & (true < min_users)),
    )
    rows = seeds.groupby(keys, sort=False)[["degenerate", "few"]].any()
    flags = join_flags({"degenerate_k": rows["degenerate"], "few_users": rows["few"]})
    return pd.Series(flags, index=rows.index)


def agreement_table(estimates: pd.DataFrame) -> pd.DataFrame:
    """Agreement of each estimator with the reference across models, per k.

    The reference is ``true_recall`` where known; without truth (no full data)
    it is URE, and only the traditional estimator is compared with it (how the
    model ranking changes). Columns: k, estimator, reference, kendall_tau,
    pearson_r, mean_bias (mean of estimate − reference), n_models, flags: why τ and r
    are NaN where they are (``few_models``: fewer than two; ``constant``: the estimate or
    the reference is the same for every model), and ``degenerate_k`` on the traditional
    estimator where the estimates at that K are so flagged.
    """
    has_truth = estimates["true_recall"].notna().any()
    reference = "true_recall" if has_truth else "ure"
    rows = []
    for k, block in estimates.groupby("k", sort=True):
        for estimator in RECALL_ESTIMATORS if has_truth else ("traditional",):
            stats = agreement(
                block[ESTIMATE_COLUMN[estimator]].to_numpy(), block[reference].to_numpy()
            )
            degenerate = (
                estimator == "traditional"
                and "flags" in block
                and any("degenerate_k" in str(f).split(",") for f in block["flags"])
            )
            rows.append(
                {
                    "k": k,
                    "estimator": estimator,
                    "reference": reference,
                    **stats,
                    "degenerate": degenerate,
                }
            )
    out = pd.DataFrame(rows)
    out["k"] = out["k"].astype(np.int16)
    out["n_models"] = out["n_models"].astype(np.int64)
    few = (out["n_models"] < 2).to_numpy()
    undefined = (out["kendall_tau"].isna() | out["pearson_r"].isna()).to_numpy()
    out["flags"] = join_flags(
        {
            "degenerate_k": out.pop("degenerate").to_numpy(bool),
            "constant": undefined & ~few,
            "few_models": few,
        }
    )
    return out


def estimates_markdown(estimates: pd.DataFrame, dataset: str) -> str:
    """The estimates per K as Markdown tables (models sorted by the truth, else by URE), each
    estimate with its intervals where ``estimates`` has them (:func:`interval_cell`)."""
    has_truth = estimates["true_recall"].notna().any()
    sort = "true_recall" if has_truth else "ure"
    parts = [f"# E5 on {dataset}: Recall@K estimates per model\n"]
    if all(c in estimates for c in _interval_columns()):
        parts.append(f"\nEach estimate: {INTERVAL_NOTE}.\n")
        estimates = estimates.assign(
            **{
                v: [
                    interval_cell(*row)
                    for row in estimates[
                        [v, *(f"{v}_{s}" for s in INTERVAL_SUFFIXES), "n_seeds"]
                    ].itertuples(index=False)
                ]
                for v in ESTIMATE_COLUMNS
            },
            _sort=estimates[sort],
        )
        sort = "_sort"
    cols = ["model", "params", "true_recall", "traditional_recall", "ure"]
    ranks = ["rank_true", "rank_traditional", "rank_ure"]
    if not has_truth:
        cols.remove("true_recall")
        ranks.remove("rank_true")
    for k, block in estimates.groupby("k", sort=True):
        block = block.sort_values(sort, ascending=False, kind="stable")
        flags = block["flags"] if "flags" in block else pd.Series("", index=block.index)
        table = block[cols + ranks].assign(model=marked(block["model"], flags))
        table = table.assign(**{r: table[r].astype("Int64") for r in ranks})
        text = markdown_table(table.reset_index(drop=True)) + legend(flags)
        parts.append(f"\n## K = {k}\n\n" + text)
    return "".join(parts)


def agreement_markdown(agreement_frame: pd.DataFrame, dataset: str) -> str:
    """The agreement table as Markdown, each flagged estimator marked (legend under it)."""
    flags = (
        agreement_frame["flags"]
        if "flags" in agreement_frame
        else pd.Series("", index=agreement_frame.index)
    )
    table = agreement_frame.drop(columns="flags", errors="ignore").assign(
        estimator=marked(agreement_frame["estimator"], flags)
    )
    return (
        f"# E5 on {dataset}: agreement with the reference across models\n\n"
        + markdown_table(table)
        + legend(flags)
    )


def users_k_ge_exposed(
    per_user: pd.DataFrame, exposed: pd.DataFrame, train: sp.spmatrix
) -> np.ndarray:
    """Per K (ascending, as :func:`~debiaseval.evaluation.ure.mean_recall`), how many users
    with a traditional Recall@K have K ≥ |R_u|
    (:func:`~debiaseval.evaluation.flags.exposed_within_k`)."""
    within = exposed_within_k(per_user, exposed, train) & per_user["traditional_recall"].notna()
    counts = per_user.assign(within=within).groupby("k", sort=True)["within"].sum()
    return counts.to_numpy().astype(np.int64)


def evaluated_users(labelled: pd.DataFrame, *, positive_threshold: float) -> np.ndarray:
    """The users some estimate averages over: a positive in their randomly exposed set
    (traditional, URE) or, on fully exposed data, a positive outside their training set
    (true Recall@K). Sorted int64."""
    part = labelled["part"].to_numpy()
    positive = labelled["rating"].to_numpy() > positive_threshold
    counted = positive & (part != "train")
    if not (part == "unexposed").any():
        counted &= part == "exposed"
    return np.unique(labelled["user"].to_numpy(np.int64)[counted])


def agreement_intervals(
    per_seed: pd.DataFrame,
    agreement: pd.DataFrame,
    *,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """``agreement`` with ``tau_low``/``tau_high``: the interval of Kendall's τ at ``confidence``
    over ``resamples`` resamples of the seeds, τ recomputed from the models' means over each
    resample's seeds (:class:`~debiaseval.estimation.resampling.ResamplingPlan`, expanded
    percentile interval), for a new draw of the exposure.

    Given only where the reference is the true recall: every seed then simulates its own
    exposure of the fully exposed data, so the seeds are independent draws of what E5 varies.
    On an MNAR/MAR dataset the seeds re-split one MAR sample and a bootstrap over seeds would
    describe the split alone: no interval. None either below
    :data:`~debiaseval.estimation.resampling.MIN_SCOREBOARD_SEEDS` seeds."""
    out = agreement.copy()
    at = out.columns.get_loc("kendall_tau") + 1 if "kendall_tau" in out else len(out.columns)
    out.insert(at, "tau_high", np.nan)
    out.insert(at, "tau_low", np.nan)
    seeds = np.sort(per_seed["seed"].unique())
    if out.empty or (out["reference"] != "true_recall").all() or seeds.size < 2:
        return out
    plan = ResamplingPlan.of(
        seeds.size, draws="independent", resamples=resamples, user_resamples=0, rng=rng
    )
    models = per_seed.assign(model=per_seed["model"] + "\x1f" + per_seed["params"].astype(str))
    names = np.sort(models["model"].unique())
    for j, row in out.iterrows():
        at_k = models[models["k"] == row["k"]]
        draws = []
        for column in (ESTIMATE_COLUMN[row["estimator"]], row["reference"]):
            wide = at_k.pivot_table(
                index="seed", columns="model", values=column, aggfunc="first", dropna=False
            )
            wide = wide.reindex(index=seeds, columns=names)
            value = wide.to_numpy(dtype=np.float64)
            has = np.isfinite(value)
            with np.errstate(invalid="ignore", divide="ignore"):  # a model no seed scores: NaN
                draws.append(plan.counts @ np.where(has, value, 0.0) / (plan.counts @ has))
        estimate, reference = draws
        keep = np.isfinite(estimate).all(0) & np.isfinite(reference).all(0)
        tau = kendall_tau_b(estimate[:, keep], reference[:, keep])
        _, low, high = percentile_interval(
            tau,
            confidence,
            intervals=plan.gives_intervals,
            tail=plan.tail(confidence),
            bounds=(-1.0, 1.0),
        )
        out.loc[j, ["tau_low", "tau_high"]] = low, high
    return out


@dataclasses.dataclass(frozen=True)
class E5Aggregate(StepConfig):
    """What rule ``e5_aggregate`` reads of the config: ``confidence``, ``resamples`` (the
    ``e5`` block's ``bootstrap.resamples``) and ``min_users`` (the top-level key)."""

    BLOCK: ClassVar[str] = "e5"
    confidence: float
    resamples: int
    min_users: int

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """The values of ``config``."""
        block = config["e5"]
        return {
            "confidence": block["confidence"],
            "resamples": block["bootstrap"]["resamples"],
            "min_users": config["min_users"],
        }


def aggregate_step(
    per_seed: pd.DataFrame, per_user: pd.DataFrame, step: E5Aggregate, *, dataset: str
) -> dict[str, pd.DataFrame]:
    """Rule ``e5_aggregate``: E5's aggregated tables from the seeds' estimates (``per_seed``)
    and per-user values (``per_user``): ``estimates`` (seed means with their intervals),
    ``agreement`` (τ of each estimator against the reference, with its interval over seeds:
    :func:`agreement_intervals`), ``comparisons`` (the models' paired comparisons, agreed over
    seeds) and ``seed_comparisons``; the intervals at ``step.confidence``."""
    confidence, resamples, min_users = step.confidence, step.resamples, step.min_users
    bounds = bootstrap_table(per_user, resamples=resamples, confidence=confidence, dataset=dataset)
    estimates = estimates_table(per_seed, min_users=min_users, bounds=bounds, confidence=confidence)
    tests, agreed = comparisons_table(per_user, confidence=confidence)
    agreement = agreement_intervals(
        per_seed,
        agreement_table(estimates),
        confidence=confidence,
        resamples=resamples,
        rng=run_rng(0, dataset, "e5_agreement"),
    )
    return {
        "estimates": estimates,
        "agreement": agreement,
        "comparisons": agreed,
        "seed_comparisons": tests,
    }
