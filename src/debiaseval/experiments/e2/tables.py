"""E2's tables over seeds: what elicitation asked and how it changed the metrics ([ELICIT]).

The per-strategy counts of elicited ratings (:func:`elicited_table`), the per-user changes of
each metric in long form (:func:`per_user_values`) and summarised with seed intervals and
flags (:func:`summary_table`), the summary's Markdown with the Wilcoxon tests
(:func:`summary_markdown`), and all of them with the verdict from every seed's changes (rule
``e2_aggregate``, :func:`aggregate_step`). The steps that make the changes are
:mod:`debiaseval.experiments.e2.steps`'.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.active_learning.evaluation import (
    SCOPES,
    change_summary,
    combine_seeds,
    pairwise_wilcoxon,
)
from debiaseval.evaluation.flags import MIN_USERS, join_flags, legend, marked
from debiaseval.evaluation.uncertainty import (
    interval_cell,
    seed_interval_note,
    seed_intervals,
    significance,
)
from debiaseval.experiments.e2.steps import user_filter_of
from debiaseval.experiments.e2.verdict import e2_verdict
from debiaseval.experiments.step_config import StepConfig
from debiaseval.experiments.verdicts import verdict_entries, with_verdict
from debiaseval.io.markdown_tables import markdown_table

__all__ = [
    "ELICITED_RANGE",
    "PCT_CHANGE_RANGE",
    "PER_USER_COLUMNS",
    "aggregate_step",
    "counts_frame",
    "elicited_table",
    "per_user_values",
    "summary_markdown",
    "summary_table",
]


def _ordered(frame: pd.DataFrame, orders: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    keys = list(orders)
    rank = {col: {v: i for i, v in enumerate(vals)} for col, vals in orders.items()}
    out = frame.sort_values(
        [*keys, *[c for c in ("k",) if c in frame]],
        key=lambda c: c.map(rank[c.name]) if c.name in rank else c,
        kind="stable",
    )
    return out.reset_index(drop=True)


def elicited_table(
    counts: pd.DataFrame, orders: Mapping[str, Sequence[str]], *, confidence: float = 0.95
) -> pd.DataFrame:
    """Elicited ratings per active user: mean and sd (ddof 1) over seeds per method, strategy,
    and the ``confidence`` t interval over seeds ``ci_low``/``ci_high`` (:func:`_with_interval`).

    ``counts`` has ``seed``, ``method``, ``strategy``, ``n_elicited``, ``n_active``.
    """
    per_seed = counts.assign(value=counts["n_elicited"] / counts["n_active"])
    out = (
        per_seed.groupby(["method", "strategy"], sort=False)["value"]
        .agg(mean="mean", sd=lambda v: v.std(ddof=1), n_seeds="count")
        .reset_index()
    )
    out["n_seeds"] = out["n_seeds"].astype(np.int64)
    out = _with_interval(out, per_seed, ["method", "strategy"], "value", ELICITED_RANGE, confidence)
    return _ordered(out, orders)


ELICITED_RANGE = (0.0, math.inf)
"""Range of the elicited ratings per active user (a count per user)."""

PCT_CHANGE_RANGE = (-100.0, math.inf)
"""Range of a % change 100·(after − before)/before of a metric that is never negative."""


def _with_interval(
    out: pd.DataFrame,
    per_seed: pd.DataFrame,
    keys: list[str],
    value: str,
    bounds: tuple[float, float],
    confidence: float,
) -> pd.DataFrame:
    """``out`` with ``ci_low``/``ci_high`` after its ``sd``: the ``confidence`` t interval over
    seeds of ``per_seed[value]`` computed on the log scale of ``bounds`` and mapped back
    (:func:`~debiaseval.evaluation.uncertainty.seed_intervals`), so it never leaves them.
    The tables print it from 3 seeds on (``MIN_T_SEEDS``)."""
    ci = seed_intervals(per_seed, keys, confidence=confidence, value=value, bounds=bounds)
    merged = out.merge(ci[[*keys, "ci_low", "ci_high"]], on=keys, how="left")
    at = list(out.columns).index("sd") + 1
    columns = [*out.columns[:at], "ci_low", "ci_high", *out.columns[at:]]
    return merged[columns]


PER_USER_COLUMNS = [
    "seed",
    "method",
    "strategy",
    "scope",
    "user",
    "metric",
    "k",
    "stage",
    "value",
]
"""Columns of ``metrics_per_user.parquet``; ``stage`` is ``before`` or ``after`` elicitation."""


def per_user_values(changes: pd.DataFrame) -> pd.DataFrame:
    """:func:`evaluate_step`'s rows in long form, one row per user and ``stage`` (``before``,
    ``after``): per (seed, method, strategy, scope, metric, k, stage) the mean of ``value`` is
    the summary's ``before`` or ``after`` of that seed. Columns :data:`PER_USER_COLUMNS`."""
    keys = [c for c in PER_USER_COLUMNS if c not in ("stage", "value")]
    long = changes.melt(
        id_vars=keys, value_vars=["before", "after"], var_name="stage", value_name="value"
    )
    return long[PER_USER_COLUMNS]


def summary_table(
    changes: pd.DataFrame,
    orders: Mapping[str, Sequence[str]],
    *,
    min_users: int = MIN_USERS,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per method, strategy, scope, metric, k: seed means of before and after, and of the
    per-seed % change 100·(after − before)/before, with its sd (ddof 1) and ``n_seeds``;
    the ``confidence`` t interval over seeds of the % change ``ci_low``/``ci_high`` within
    [-100, ∞) (:func:`_with_interval`); ``min_users`` (fewest users in a seed), and ``flags``
    (:mod:`debiaseval.evaluation.flags`): ``few_users`` where some seed's means are over fewer
    than ``min_users`` users (the active users of a small dataset), ``constant`` where the
    means before are 0 in every seed (the % change is undefined, empty)."""
    per_seed = change_summary(changes, keys=["seed", "method", "strategy"])
    out = (
        per_seed.groupby(["method", "strategy", "scope", "metric", "k"], sort=False)
        .agg(
            before=("before", "mean"),
            after=("after", "mean"),
            pct_change=("pct_change", "mean"),
            sd=("pct_change", lambda v: v.std(ddof=1)),
            n_seeds=("seed", "count"),
            n_users_min=("n_users", "min"),
        )
        .reset_index()
    )
    out["n_seeds"] = out["n_seeds"].astype(np.int64)
    out["n_users_min"] = out["n_users_min"].astype(np.int64)
    keys = ["method", "strategy", "scope", "metric", "k"]
    out = _with_interval(out, per_seed, keys, "pct_change", PCT_CHANGE_RANGE, confidence)
    out["flags"] = join_flags(
        {
            "few_users": (out["n_users_min"] < min_users).to_numpy(),
            "constant": out["pct_change"].isna().to_numpy(),
        }
    )
    metrics = list(dict.fromkeys([*orders.get("metric", []), *out["metric"]]))
    keys = {"method": orders["method"], "strategy": orders["strategy"], "scope": list(SCOPES)}
    return _ordered(out, {**keys, "metric": metrics})


def _interval_cells(rows: pd.DataFrame, value: str, digits: int, sign: bool = False) -> list[str]:
    """``mean [t interval over seeds]`` per row (the interval from 3 seeds on, else the mean
    alone: :func:`~debiaseval.evaluation.uncertainty.interval_cell`)."""
    columns = [value, "ci_low", "ci_high", "n_seeds"]
    return [
        interval_cell(m, low, high, np.nan, np.nan, n, digits=digits, sign=sign)
        for m, low, high, n in rows[columns].itertuples(index=False)
    ]


def summary_markdown(
    elicited: pd.DataFrame,
    summary: pd.DataFrame,
    wilcoxon: pd.DataFrame,
    *,
    dataset: str,
    about: Sequence[str] = (),
    confidence: float = 0.95,
) -> str:
    """E2's results for people: elicited ratings, % changes per scope and metric, and the
    Wilcoxon tests (:func:`~debiaseval.active_learning.evaluation.combine_seeds`) whose
    combined p is below 1 − ``confidence``. Cells show the ``confidence`` t interval over
    seeds (from 3 seeds on), within the range of the quantity."""
    alpha = significance(confidence)
    methods = list(dict.fromkeys(elicited["method"]))
    strategies = list(dict.fromkeys(elicited["strategy"]))
    parts = [
        f"# E2 on {dataset}: debiased offline evaluation of active learning\n\n"
        "Strategies ask each active user about n items; the elicited ratings are those found "
        "in the hidden set H. CLASSIC draws H and T uniformly from their pools, INT_T draws T "
        "by WTD_H, INT_HT both ([FLAIRS20]). "
        + seed_interval_note(
            int(summary["n_seeds"].max()) if len(summary) else 0,
            confidence=confidence,
            source="level `e2.confidence`",
            bounds="([0, ∞) for the elicited ratings per user, [-100, ∞) for a % change)",
            why="E2 keeps no per-seed interval over users",
        )
        + "\n\n"
    ]
    parts += [f"- {line}\n" for line in about]
    table = elicited.assign(cell=_interval_cells(elicited, "mean", 2)).pivot(
        index="strategy", columns="method", values="cell"
    )
    parts.append(
        "\n## Elicited ratings per active user\n\n"
        + markdown_table(table.reindex(index=strategies, columns=methods).reset_index())
    )
    for (metric, k), block in summary.groupby(["metric", "k"], sort=False):
        for scope in SCOPES:
            rows = block[block["scope"] == scope]
            flags = rows["flags"] if "flags" in rows else pd.Series("", index=rows.index)
            texts = _interval_cells(rows, "pct_change", 1, sign=True)
            cells = rows.assign(cell=marked(texts, flags)).pivot(
                index="strategy", columns="method", values="cell"
            )
            title = "active users (user-centric)" if scope == "user" else "all users (system-wide)"
            parts.append(
                f"\n## {metric}@{k}: % change after elicitation, {title}\n\n"
                + markdown_table(cells.reindex(index=strategies, columns=methods).reset_index())
                + legend(flags)
            )
    significant = wilcoxon[wilcoxon["significant"]]
    columns = ["method", "scope", "metric", "k", "strategy_a", "strategy_b", "n_seeds"]
    shown = significant[
        [*columns, "share_significant", "combined_p", "mean_users", "mean_difference"]
    ]
    parts.append(
        f"\n## Wilcoxon signed-rank tests with a combined p < {alpha:g}\n\n"
        "Two-sided, between strategies, on the per-user changes after − before, one test per "
        "seed (a user is one pair of a test, never pooled over seeds). `share_significant`: "
        f"the seeds with p < {alpha:g}; `combined_p`: min(1, K/k · p_(k)) with k = ⌈K/2⌉ of "
        "the K seeds' p-values (about twice their median), valid although the seeds re-split "
        "the same users; `mean_difference`: change of a − change of b, mean over users and "
        "seeds. These p-values are not corrected for the many tests (the verdict corrects them "
        "by Holm's method within each method and scope). Every test in `wilcoxon.parquet`, "
        "every seed's in `wilcoxon_seeds.parquet`."
        "\n\n" + (markdown_table(shown) if len(shown) else "None.\n")
    )
    return "".join(parts)


@dataclasses.dataclass(frozen=True)
class E2Aggregate(StepConfig):
    """What rule ``e2_aggregate`` reads of the config: of the ``e2`` block the methods' names,
    the dataset's ``user_filter`` and the keys its summary names; ``min_users``, the
    top-level key."""

    BLOCK: ClassVar[str] = "e2"
    methods: list[str]
    strategies: list[str]
    metrics: list[str]
    ks: list[int]
    confidence: float
    seeds: int
    split: dict[str, float]
    active_fraction: float
    n_asked: int
    rho: dict[str, float]
    user_filter: dict[str, int | None] | None = None
    min_users: int = MIN_USERS

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """The block's values for ``dataset``."""
        return {
            **super().values(config, dataset),
            "methods": list(config["e2"]["methods"]),
            "user_filter": user_filter_of(config, dataset),
            "min_users": config["min_users"],
        }


def aggregate_step(
    changes: Sequence[pd.DataFrame],
    counts: pd.DataFrame,
    step: E2Aggregate,
    *,
    dataset: str,
) -> dict[str, Any]:
    """Rule ``e2_aggregate``: the tables of ``OUTPUTS`` (Markdown as text, by file stem).

    ``changes``: the per-user tables of :func:`evaluate_step`; ``counts``: ``seed``,
    ``method``, ``strategy``, ``n_elicited``, ``n_active`` of every elicitation;
    ``step.min_users``: the top-level key, below which a mean is flagged ``few_users``. The
    intervals are at ``step.confidence``, the Wilcoxon tests at 1 − ``step.confidence``. The
    verdict (:func:`~debiaseval.experiments.e2.verdict.e2_verdict`): ``verdict`` and
    ``verdict_md``, also the first section of ``summary_md``.
    """
    orders = {"method": list(step.methods), "strategy": list(step.strategies)}
    per_user = pd.concat(changes, ignore_index=True)
    confidence, alpha = step.confidence, significance(step.confidence)
    elicited = elicited_table(counts, orders, confidence=confidence)
    summary = summary_table(
        per_user,
        {**orders, "metric": list(step.metrics)},
        min_users=step.min_users,
        confidence=confidence,
    )
    per_seed = pairwise_wilcoxon(per_user, step.strategies, alpha=alpha)
    wilcoxon = combine_seeds(per_seed, alpha=alpha)
    about = [
        f"{step.seeds} seed(s); split {step.split}; user filter "
        f"{step.user_filter or 'none'}; active users: "
        f"{step.active_fraction:.3g} of those with a known rating; n = {step.n_asked} "
        f"items asked; rho {step.rho}.",
    ]
    found = verdict_entries(e2_verdict(wilcoxon, step.params(), dataset=dataset))
    md = summary_markdown(
        elicited, summary, wilcoxon, dataset=dataset, about=about, confidence=confidence
    )
    return {
        "elicited": elicited,
        "metrics_per_user": per_user_values(per_user),
        "summary": summary,
        "wilcoxon": wilcoxon,
        "wilcoxon_seeds": per_seed,
        "summary_md": with_verdict(md, found["verdict_md"]),
        **found,
    }


def counts_frame(rows: Sequence[tuple[int, str, str, int, int]]) -> pd.DataFrame:
    """(seed, method, strategy, n_elicited, n_active) tuples as the ``counts`` of aggregation."""
    frame = pd.DataFrame(rows, columns=["seed", "method", "strategy", "n_elicited", "n_active"])
    return frame.astype({"seed": np.int64, "n_elicited": np.int64, "n_active": np.int64})
