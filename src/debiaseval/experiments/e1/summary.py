"""E1's summary and Kendall tables over seeds: mean and sd per (recommender, test set, metric,
k), the % difference from gt, Kendall's τ of the rankings against gt's, and their Markdown
([SAC20] section 5; docs/experiments/e1.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.evaluation.agreement import kendall_variants
from debiaseval.evaluation.flags import MIN_USERS, join_flags, legend, marked
from debiaseval.evaluation.metrics import GAINS
from debiaseval.evaluation.uncertainty import INTERVAL_NOTE, interval_cell
from debiaseval.io.markdown_tables import markdown_table

__all__ = [
    "KENDALL_COLUMNS",
    "TRUE_NOTE",
    "check_kendall",
    "compared_with_gt",
    "kendall_excluded",
    "kendall_groups",
    "kendall_markdown",
    "kendall_table",
    "summary_about",
    "summary_flags",
    "summary_markdown",
    "summary_table",
    "testsets_table",
    "with_empty_testsets",
]

GROUND_TRUTH = "gt"


def summary_table(per_seed: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over seeds of every (recommender, testset, metric, k).

    ``per_seed`` has columns recommender, seed, testset, metric, k, value.
    ``pct_diff_vs_gt`` = 100 * (mean - mean_gt) / mean_gt, the percentage
    difference of the seed-averaged metric from its ground-truth value; NaN
    where the ground truth is 0 or missing. ``sd`` uses ddof=1 (NaN for one seed).
    """
    keys = ["recommender", "testset", "metric", "k"]
    grouped = per_seed.groupby(keys, sort=True)["value"]
    out = grouped.agg(mean="mean", sd=lambda v: v.std(ddof=1), n_seeds="count").reset_index()
    gt = out[out["testset"] == GROUND_TRUTH].set_index(["recommender", "metric", "k"])["mean"]
    gt_mean = gt.reindex(pd.MultiIndex.from_frame(out[["recommender", "metric", "k"]])).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(gt_mean > 0, 100.0 * (out["mean"].to_numpy() - gt_mean) / gt_mean, np.nan)
    out["pct_diff_vs_gt"] = pct
    out["n_seeds"] = out["n_seeds"].astype(np.int64)
    order = {name: i for i, name in enumerate(_testset_order(out["testset"]))}
    out = out.sort_values(
        ["metric", "k", "recommender", "testset"],
        key=lambda c: c.map(order) if c.name == "testset" else c,
    )
    return out.reset_index(drop=True)


def summary_flags(
    summary: pd.DataFrame,
    per_seed: pd.DataFrame,
    *,
    min_users: int = MIN_USERS,
    heavy_tail: Iterable[str] = (),
) -> pd.DataFrame:
    """``summary`` with a ``flags`` column (:mod:`debiaseval.evaluation.flags`) per
    (recommender, testset, metric, k): ``short_lists`` where some seed's
    ``n_short_lists`` > 0, ``few_users`` where some seed's ``n_users`` < ``min_users``,
    ``out_of_range`` where the mean leaves [0, 1], the range of every top-k metric (its
    intervals are then NaN, :func:`~debiaseval.evaluation.uncertainty.seed_intervals`; a
    bound outside it, from a summary made elsewhere, is flagged too), and ``heavy_tail`` on
    the rows of the estimators named in ``heavy_tail``. A ``per_seed`` without one of these columns
    raises no flag of it."""
    keys = ["recommender", "testset", "metric", "k"]
    seeds = per_seed.assign(
        short=per_seed["n_short_lists"] > 0 if "n_short_lists" in per_seed else False,
        few=per_seed["n_users"] < min_users if "n_users" in per_seed else False,
    )
    anyof = seeds.groupby(keys, sort=False)[["short", "few"]].any()
    rows = anyof.reindex(pd.MultiIndex.from_frame(summary[keys])).fillna(False).astype(bool)
    bounds = [c for c in ("mean", "ci_low", "ci_high", "boot_low", "boot_high") if c in summary]
    values = summary[bounds].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        outside = ((values < 0) | (values > 1)).any(axis=1)
    flags = join_flags(
        {
            "short_lists": rows["short"].to_numpy(),
            "few_users": rows["few"].to_numpy(),
            "out_of_range": outside,
            "heavy_tail": summary["testset"].isin(list(heavy_tail)).to_numpy(),
        }
    )
    return summary.assign(flags=flags)


def _testset_order(names: Iterable[str]) -> list[str]:
    unique = list(dict.fromkeys(names))
    return (
        [GROUND_TRUTH, *[n for n in unique if n != GROUND_TRUTH]]
        if GROUND_TRUTH in unique
        else unique
    )


KENDALL_COLUMNS = [
    "testset",
    "metric",
    "k",
    "group",
    "with_group",
    "tau",
    "p_value",
    "n_recommenders",
]
"""Columns of E1's Kendall table (``kendall.parquet``)."""


def kendall_excluded(block: Mapping[str, Any]) -> list[str]:
    """The recommenders left out of Kendall's tau: ``kendall_exclude``, or the random ones."""
    if block["kendall_exclude"] is not None:
        return list(block["kendall_exclude"])
    return [n for n, spec in block["recommenders"].items() if spec["algorithm"] == "random"]


def kendall_groups(block: Mapping[str, Any]) -> dict[str, list[str]]:
    """The groups of Kendall's "with/without": ``kendall_groups``, or {MF: the mf recommenders}."""
    if block["kendall_groups"] is not None:
        return {group: list(members) for group, members in block["kendall_groups"].items()}
    return {"MF": [n for n, spec in block["recommenders"].items() if spec["algorithm"] == "mf"]}


def check_kendall(block: Mapping[str, Any], where: str) -> None:
    """Refuse a name of ``kendall_exclude`` or ``kendall_groups`` that is not a recommender of
    the block, in one line naming ``<where>.kendall_…`` and the recommenders."""
    from debiaseval.io.errors import ConfigError

    names = ", ".join(block["recommenders"])
    keys = [(f"kendall_exclude.{j}", n) for j, n in enumerate(block["kendall_exclude"] or [])]
    keys += [
        (f"kendall_groups.{group}.{j}", n)
        for group, members in (block["kendall_groups"] or {}).items()
        for j, n in enumerate(members)
    ]
    for key, name in keys:
        if name not in block["recommenders"]:
            raise ConfigError(
                f"config error at '{where}.{key}': {name!r} is not a recommender of "
                f"{where}.recommenders ({names})"
            )


def kendall_table(
    summary: pd.DataFrame,
    groups: Mapping[str, Sequence[str]] | Sequence[str],
    excluded: Sequence[str] = (),
) -> pd.DataFrame:
    """Kendall's tau-b between the recommender ranking on ``gt`` and on each test set.

    Computed per (metric, k) from the seed-averaged means over all recommenders but
    ``excluded``, and, for every group of ``groups`` (group name -> recommenders,
    ``e1.kendall_groups``; a plain list is the group "MF"), once with the group
    (``with_group`` True: every recommender ranked) and once without its members
    (``with_group`` False), as [SAC20] Tables 3–4 do with and without matrix
    factorisation, ranking PosPop, AvgRating, UserKNN, ItemKNN and MF: sanity
    baselines such as Random, last on both sides, would inflate tau, so they are
    excluded. ``n_recommenders`` counts the recommenders ranked.
    """
    if not isinstance(groups, Mapping):
        groups = {"MF": list(groups)}
    rows = []
    kept = summary[~summary["recommender"].isin(list(excluded))]
    for (metric, k), block in kept.groupby(["metric", "k"], sort=True):
        table = block.pivot(index="recommender", columns="testset", values="mean")
        if GROUND_TRUTH not in table:
            continue
        for group, members in groups.items():
            for with_group in (True, False):
                sub = table if with_group else table.drop(index=list(members), errors="ignore")
                for testset in [t for t in _testset_order(block["testset"]) if t != GROUND_TRUTH]:
                    pair = sub[[GROUND_TRUTH, testset]].dropna()
                    if len(pair) >= 2:
                        from scipy.stats import kendalltau  # lazy: scipy.stats costs 0.5 s

                        result = kendalltau(pair[GROUND_TRUTH], pair[testset], variant="b")
                        tau, p = float(result.statistic), float(result.pvalue)
                    else:
                        tau = p = np.nan
                    rows.append(
                        {
                            "testset": testset,
                            "metric": metric,
                            "k": k,
                            "group": group,
                            "with_group": with_group,
                            "tau": tau,
                            "p_value": p,
                            "n_recommenders": np.int64(len(pair)),
                        }
                    )
    return pd.DataFrame(rows, columns=KENDALL_COLUMNS)


EMPTY = "empty"
"""What the Markdown tables show for a test set with no (relevant) pair."""


def with_empty_testsets(kendall: pd.DataFrame, testsets: Sequence[str]) -> pd.DataFrame:
    """``kendall`` with a row marked ``empty`` for every test set it has no row for.

    A test set with no relevant pair (allowed by ``e1.allow_empty_testsets``)
    has no metric, hence no tau; the Markdown shows it instead of dropping it.
    """
    missing = [t for t in testsets if t not in set(kendall["testset"])]
    if not missing or kendall.empty:
        return kendall
    keys = kendall[["metric", "k", "group", "with_group"]].drop_duplicates()
    rows = [
        {
            "testset": t,
            "metric": m,
            "k": k,
            "group": g,
            "with_group": w,
            "tau": EMPTY,
            "p_value": EMPTY,
        }
        for t in missing
        for m, k, g, w in keys.itertuples(index=False)
    ]
    out = pd.concat([kendall.astype({"tau": object, "p_value": object}), pd.DataFrame(rows)])
    order = {name: i for i, name in enumerate(testsets)}
    groups = {name: i for i, name in enumerate(dict.fromkeys(kendall["group"]))}
    ranks = {"testset": order, "group": groups}
    out = out.sort_values(
        ["metric", "k", "group", "with_group", "testset"],
        key=lambda c: c.map(ranks[c.name]) if c.name in ranks else c,
        ascending=[True, True, True, False, True],
        kind="stable",
    )
    out["n_recommenders"] = out["n_recommenders"].fillna(0).astype(np.int64)
    return out.reset_index(drop=True)


def kendall_markdown(
    kendall: pd.DataFrame,
    dataset: str,
    testsets: Sequence[str] = (),
    notes: Mapping[tuple[str, int], str] | None = None,
) -> str:
    """E1's Kendall table for people, pivoted like the summary: one table per (metric, k) of
    test sets × (tau, p) with every recommender and without each group of ``e1.kendall_groups``
    (:func:`~debiaseval.evaluation.agreement.kendall_variants`, as the figure). The number of
    recommenders ranked heads each column pair (a column of its own where it differs between
    test sets); a test set of ``testsets`` with no value shows ``empty``. ``notes``: a sentence
    under the heading of a (metric, k), e.g. how many pairs gt itself tells apart, which says
    what a τ is worth there."""
    parts = [
        f"# E1 on {dataset}: Kendall's tau-b of the recommender ranking vs gt\n\n"
        "From the seed means; 1 = the test set ranks the recommenders as the MAR ground truth "
        "does (higher is better); p: the test's p-value; n: the recommenders ranked.\n"
    ]
    full = with_empty_testsets(kendall, testsets)
    for (metric, k), block in full.groupby(["metric", "k"], sort=True):
        order = list(dict.fromkeys([*testsets, *block["testset"]]))
        table = pd.DataFrame(index=[t for t in order if t in set(block["testset"])])
        for label, rows in kendall_variants(block):
            part = rows.set_index("testset")
            if part.empty:
                continue
            counts = part.loc[part["n_recommenders"] > 0, "n_recommenders"].unique()
            heading = f"tau {label} (n = {counts[0]})" if len(counts) == 1 else f"tau {label}"
            table[heading] = part["tau"]
            table[f"p {label}"] = part["p_value"]
            if len(counts) > 1:
                table[f"n {label}"] = part["n_recommenders"]
        table = table.rename_axis("testset").reset_index()
        note = (notes or {}).get((metric, int(k)))
        parts.append(f"\n## {metric}@{k}\n\n" + (f"{note}\n\n" if note else ""))
        parts.append(markdown_table(table))
    return "".join(parts)


TRUE = "TRUE"
"""The exact truth from the full rating matrix (synthetic data), a row of E1's summary."""

TRUE_NOTE = (
    "TRUE shows no % difference from gt here: HitRate, Precision, MAP and NDCG of a sampled "
    "test set depend on how many relevant items the sample holds, and TRUE's come from the "
    "full matrix, another estimand. Only Recall and avgDCG, means over the relevant items, "
    "compare TRUE with gt."
)
"""The line under a table of :func:`summary_markdown` whose TRUE row shows no % difference."""


def compared_with_gt(testset: str, metric: str) -> bool:
    """Whether ``summary.md`` gives ``testset``'s % difference from gt at ``metric``: every
    test set but gt itself, and TRUE only at a mean over the relevant items of a rank gain
    (:data:`~debiaseval.evaluation.metrics.GAINS`: Recall, avgDCG), the metrics whose value
    on a sample estimates the full matrix's (:data:`TRUE_NOTE` says why the others do not)."""
    return testset != GROUND_TRUTH and (testset != TRUE or str(metric) in GAINS)


def _summary_cell(mean: float, sd: float, pct: float, testset: str, metric: str) -> str:
    """``mean ± sd (+pct%)``; no sd for a single seed, no pct where :func:`compared_with_gt`
    says none or where undefined."""
    text = f"{mean:.4f}" if np.isnan(sd) else f"{mean:.4f} ± {sd:.4f}"
    return _with_pct(text, pct, testset, metric)


def _with_pct(text: str, pct: float, testset: str, metric: str) -> str:
    shown = compared_with_gt(testset, metric) and not np.isnan(pct)
    return f"{text} ({pct:+.1f}%)" if shown else text


def _summary_cells(block: pd.DataFrame) -> list[str]:
    """The cells of :func:`summary_markdown`: with the summary's intervals, ``mean [t interval
    over seeds] ⟨bootstrap interval over users⟩ (+pct%)`` (:func:`interval_cell`: the t
    interval from 3 seeds on), else ``mean ± sd (+pct%)``."""
    bounds = ["ci_low", "ci_high", "boot_low", "boot_high", "n_seeds"]
    where = ["pct_diff_vs_gt", "testset", "metric"]
    if set(bounds) <= set(block.columns):
        rows = block[["mean", *bounds, *where]].itertuples(index=False)
        return [_with_pct(interval_cell(*row[:6]), *row[6:]) for row in rows]
    rows = block[["mean", "sd", *where]].itertuples(index=False)
    return [_summary_cell(*row) for row in rows]


def testsets_table(diagnostics: pd.DataFrame) -> pd.DataFrame:
    """Per-seed test-set diagnostics in test-set then seed order (E1, ``testsets.parquet``)."""
    order = {name: i for i, name in enumerate(dict.fromkeys(diagnostics["testset"]))}
    out = diagnostics.sort_values(
        ["testset", "seed"], key=lambda c: c.map(order) if c.name == "testset" else c
    )
    return out.reset_index(drop=True)


def _diagnostics_markdown(diagnostics: pd.DataFrame) -> str:
    means = diagnostics.groupby("testset", sort=False)[
        ["n_pairs", "n_users", "n_items", "zero_weight_share", "kl_users", "kl_items"]
    ].mean()
    return (
        "\n## How MAR-like each test set is (mean over seeds)\n\n"
        "`zero_weight_share`: share of the held-out pairs whose sampling weight is 0 (WTD gives "
        "weight 0 to users and items absent from the MAR weights part). `kl_users`, `kl_items`: "
        "KL divergence of the test set's user and item marginals from those of MAR gt "
        "(Laplace-smoothed); lower is closer to MAR.\n\n" + markdown_table(means.reset_index())
    )


def summary_about(
    interactions: pd.DataFrame, block: Mapping[str, Any], external: Sequence[str] = ()
) -> list[str]:
    """Lines describing an E1 run for its summary (:func:`summary_markdown`'s ``about``): data
    sizes and the settings that shape it; ``external``: the recommenders whose lists were
    precomputed (not tuned here)."""
    parts = interactions["part"].value_counts()
    testsets = ", ".join(f"{n} ({s['strategy']})" for n, s in block["testsets"].items())
    excluded = kendall_excluded(block)
    trained = [name for name in block["recommenders"] if name not in external]
    lists = f"; precomputed lists: {', '.join(external)}" if external else ""
    return [
        f"Data: {interactions['user'].nunique():,} users, {interactions['item'].nunique():,} "
        f"items; {int(parts.get('mnar', 0)):,} MNAR and {int(parts.get('mar', 0)):,} MAR ratings.",
        f"Splits: MNAR {block['mnar_split']}, MAR {block['mar_split']}; rho = {block['rho']}; "
        f"{block['seeds']} seed(s); positive = rating > {block['positive_threshold']}.",
        f"Test sets: gt (MAR ground truth), {testsets}.",
        f"Recommenders: {', '.join(trained) or 'none'}, tuned for "
        f"{block['tuning']['metric']}@{block['tuning']['k']} on MAR val (selected points in "
        f"seed*/tuning/){lists}. Kendall's tau leaves out: "
        f"{', '.join(excluded) if excluded else 'none'}.",
    ]


def summary_markdown(
    summary: pd.DataFrame,
    dataset: str,
    *,
    diagnostics: pd.DataFrame | None = None,
    about: Sequence[str] = (),
    testsets: Sequence[str] = (),
) -> str:
    """The E1 summary for people: how to read it, the run's metadata (``about`` lines), one
    table per (metric, k) of recommenders × test sets (``mean ± sd (pct vs gt)``, followed by
    the symbols of its ``flags`` if the summary has them, explained under the table; TRUE's
    pct only where :func:`compared_with_gt`, else :data:`TRUE_NOTE` under the table), and the
    test-set diagnostics. A test set of ``testsets`` with no value (empty) gets a column of
    ``empty`` rather than none."""
    parts = [
        f"# E1 on {dataset}: intervened test sets vs the MAR ground truth\n\n"
        "Each cell is the mean ± sd over seeds of the metric on that test set and, in brackets, "
        "its % difference from `gt`, the MAR ground truth ([SAC20]). A test set that evaluates "
        "without bias gives the numbers gt gives: **closer to 0% is better**.\n\n"
    ]
    if {"ci_low", "ci_high", "boot_low", "boot_high", "n_seeds"} <= set(summary.columns):
        parts[0] = parts[0].replace(
            "mean ± sd over seeds of the metric on that test set and, in brackets, its % "
            "difference from `gt`",
            "mean over seeds of the metric on that test set and, in round brackets, its % "
            "difference from `gt`",
        ) + (f"Intervals at the level of `e1.confidence`: {INTERVAL_NOTE}.\n\n")
    parts += [f"- {line}\n" for line in about]
    for (metric, k), block in summary.groupby(["metric", "k"], sort=True):
        cells = block.assign(cell=_summary_cells(block))
        flags = cells["flags"] if "flags" in cells else pd.Series("", index=cells.index)
        cells["cell"] = marked(cells["cell"], flags)
        table = cells.pivot(index="recommender", columns="testset", values="cell")
        columns = _testset_order([*block["testset"], *testsets])
        table = table.reindex(columns=columns).astype(object).fillna(EMPTY).reset_index()
        note = "" if compared_with_gt(TRUE, metric) or TRUE not in columns else f"\n{TRUE_NOTE}\n"
        parts.append(f"\n## {metric}@{k}\n\n" + markdown_table(table) + note + legend(flags))
    if diagnostics is not None:
        parts.append(_diagnostics_markdown(diagnostics))
    return "".join(parts)
