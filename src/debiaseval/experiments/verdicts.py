"""Each experiment's answer in plain sentences: the verdict, computed from its aggregated tables.

A verdict is a list of complete sentences, one finding each, with its numbers, the intervals
the tables give, the dataset and the number of seeds. It is written as ``verdict.md``
(:func:`verdict_markdown`: the line ``## Verdict``, a blank line, one bullet per sentence) beside
the experiment's other results, and as the first section of its main Markdown summary
(:func:`with_verdict`); ``api.run`` returns it as ``verdict`` (the sentences) and ``verdict_md``
(:func:`verdict_entries`). One function per experiment:

- :func:`e1_verdict`: the recommenders ranked on the tuned metric by the truth (``TRUE`` where
  known, else the MAR ground truth ``gt``), which pairs differ after Holm's correction and in how
  many seeds ([SAC20]; Holm 1979), the SNIPS rows' Γ* (Rosenbaum's sensitivity bound), the
  estimator arena's line at the tuned metric, and a plain statement when the truth cannot tell
  the recommenders apart;
- :func:`e2_verdict`: which elicitation strategies differ per evaluation method, in how many
  seeds, and the combined p ([FLAIRS20]);
- :func:`e3_verdict`: the estimators' RMSE against the true value ([ICML16] Figure 2);
- :func:`e4_verdict`: MF-IPS against MF-Naive, with the paired t-test across seeds and per seed
  ([ICML16] §6.5);
- :func:`e5_verdict`: Kendall's τ of URE and of traditional recall against the true recall
  ([URE24]);
- :func:`e6_verdict`: the constant recommenders' drift, unweighted and with KL weights ([MYT14]).

Every name that comes from a user (dataset, recommender, test set, estimator, strategy) is made
inert (:func:`~debiaseval.io.markup.inert_markdown`). The functions are pure: tables in,
sentences out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.evaluation.aggregate import markdown_table
from debiaseval.io.markup import inert_markdown

__all__ = [
    "HEADING",
    "comparisons_markdown",
    "e1_verdict",
    "e2_verdict",
    "e3_verdict",
    "e4_verdict",
    "e5_verdict",
    "e6_verdict",
    "metric_label",
    "truth_separation_notes",
    "verdict_entries",
    "verdict_markdown",
    "verdict_sentences",
    "with_verdict",
]

HEADING = "## Verdict"
"""The first line of every verdict (``verdict.md`` and the summaries' first section)."""

MIN_SEEDS_T = 3
"""With fewer seeds a t interval over seeds has too few degrees of freedom to mean much: the
verdict gives the per-seed bootstrap interval over users instead (issue 34, item 3)."""

_METRICS = {
    "recall": "Recall",
    "precision": "Precision",
    "hitrate": "HitRate",
    "ndcg": "NDCG",
    "map": "MAP",
    "avgdcg": "avgDCG",
    "mse": "MSE",
    "mae": "MAE",
}


def metric_label(metric: str, k: int | None = None) -> str:
    """``Recall@10``: the metric's usual spelling, with its cut-off."""
    name = _METRICS.get(str(metric), inert_markdown(metric))
    return name if k is None else f"{name}@{int(k)}"


def _name(text: object) -> str:
    return inert_markdown(text)


def _num(x: float, digits: int = 4) -> str:
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def _signed(x: float, digits: int = 4) -> str:
    return f"{round(float(x), digits) + 0.0:+.{digits}f}"


def _p(p: float) -> str:
    return "undefined" if not np.isfinite(p) else f"{p:.2g}"


def _seeds(n: int) -> str:
    return f"{int(n)} seed{'' if int(n) == 1 else 's'}"


def _list(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


# -- Markdown ----------------------------------------------------------------------------------


_NO_FINDING = "- No finding: the run produced no table to judge.\n"


def verdict_markdown(sentences: Sequence[str]) -> str:
    """The verdict as Markdown: ``## Verdict``, a blank line, one ``- `` bullet per sentence
    (each on one line)."""
    bullets = "".join(f"- {' '.join(str(s).split())}\n" for s in sentences)
    return f"{HEADING}\n\n{bullets or _NO_FINDING}"


def verdict_sentences(markdown: str) -> list[str]:
    """The sentences of a verdict's Markdown (:func:`verdict_markdown`), in order."""
    return [line[2:] for line in markdown.splitlines() if line.startswith("- ")]


def with_verdict(markdown: str, verdict_md: str) -> str:
    """``markdown`` (a summary whose first line is its ``# `` title) with ``verdict_md`` as its
    first section, right after the title."""
    title, _, rest = markdown.partition("\n")
    if not title.startswith("# "):
        raise ValueError(f"a summary starts with its '# ' title, not {title[:40]!r}")
    return f"{title}\n\n{verdict_md.rstrip(chr(10))}\n\n{rest.lstrip(chr(10))}"


def verdict_entries(sentences: Sequence[str]) -> dict[str, Any]:
    """The entries ``api.run`` returns: ``verdict`` (the sentences) and ``verdict_md``."""
    text = verdict_markdown(sentences)
    return {"verdict": verdict_sentences(text), "verdict_md": text}


# -- E1 ----------------------------------------------------------------------------------------


def _interval_of(row: pd.Series) -> tuple[float, float, str] | None:
    """The interval the tables give a summary row: the t interval over seeds with at least
    :data:`MIN_SEEDS_T` seeds, else the mean of the per-seed bootstrap bounds over users."""
    n = int(row.get("n_seeds", 0))
    ci = row.get("ci_low", np.nan), row.get("ci_high", np.nan)
    boot = row.get("boot_low", np.nan), row.get("boot_high", np.nan)
    if n >= MIN_SEEDS_T and np.isfinite(ci[0]) and np.isfinite(ci[1]):
        return float(ci[0]), float(ci[1]), "t"
    if np.isfinite(boot[0]) and np.isfinite(boot[1]):
        return float(boot[0]), float(boot[1]), "boot"
    return None


def _cell(row: pd.Series) -> tuple[str, str | None]:
    found = _interval_of(row)
    text = _num(row["mean"])
    if found is None:
        return text, None
    low, high, kind = found
    return f"{text} [{_num(low)}, {_num(high)}]", kind


def _tuned_block(summary: pd.DataFrame, block: Mapping[str, Any], truth: str) -> tuple[str, int]:
    tuning = block.get("tuning", {})
    metric, k = tuning.get("metric", "recall"), int(tuning.get("k", 10))
    rows = summary[summary["testset"] == truth]
    if ((rows["metric"] == metric) & (rows["k"] == k)).any() or rows.empty:
        return metric, k
    first = rows.sort_values(["metric", "k"]).iloc[0]
    return str(first["metric"]), int(first["k"])


_COMPARISON_KEYS = [
    "testset", "metric", "k", "recommender_a", "recommender_b", "n_seeds", "mean_diff",
    "n_a_better", "n_b_better", "max_p_holm", "gamma_star",
]  # fmt: skip


def e1_verdict(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    block: Mapping[str, Any],
    *,
    dataset: str,
    arena: Sequence[str] = (),
    excluded: Sequence[str] = (),
    per_seed: pd.DataFrame | None = None,
) -> list[str]:
    """E1's verdict ([SAC20]) from ``summary.parquet`` and ``comparisons.parquet``'s tables.

    The tuned metric (``e1.tuning.metric`` at ``e1.tuning.k``; the summary's first one when
    it does not report it) on the truth (``TRUE`` where the summary has it, else ``gt``): the
    recommenders ranked by their mean over seeds, each with its interval (the t interval over
    seeds from :data:`MIN_SEEDS_T` seeds on, else the per-seed bootstrap interval over users);
    then, from the paired tests of the truth (``gt``'s where the exact ``TRUE`` has none), the
    pairs that differ after Holm's correction and in how many seeds; a pair *differs* when more
    than half its seeds find it significant. When no pair of the ranked recommenders (all but
    ``excluded``, the sanity baselines) differs, the truth cannot tell them apart, and the
    verdict says so. With the exact ``TRUE`` (``per_seed``: the seeds' metrics), the truth has
    no sampling error within a seed, and two recommenders are separated when ``TRUE`` orders
    them the same way in every seed (:func:`_exact_order`). The SNIPS rows' Γ* at the tuned
    metric (the factor by which the propensities must be wrong before a difference's sign can
    flip; median over seeds), and
    ``arena``: the scoreboard's lines (:func:`~debiaseval.estimation.arena.scoreboard_tables`),
    of which the one at the tuned metric is kept.
    """
    where = _name(dataset)
    if comparisons.empty:  # no paired test (one recommender): no rows, maybe no columns
        comparisons = pd.DataFrame(columns=_COMPARISON_KEYS)
    truth = "TRUE" if (summary["testset"] == "TRUE").any() else "gt"
    metric, k = _tuned_block(summary, block, truth)
    label = metric_label(metric, k)
    rows = summary[
        (summary["testset"] == truth) & (summary["metric"] == metric) & (summary["k"] == k)
    ]
    what = (
        "the exact TRUE value from the full rating matrix"
        if truth == "TRUE"
        else "the MAR ground truth gt"
    )
    if rows.empty:
        return [f"On {where}, the summary has no {label} on {what}: there is nothing to rank."]
    n_seeds = int(rows["n_seeds"].max())
    ranked = rows.sort_values(["mean", "recommender"], ascending=[False, True], kind="stable")
    cells, kinds = [], set()
    for _, row in ranked.iterrows():
        text, kind = _cell(row)
        cells.append(f"{_name(row['recommender'])} {text}")
        if kind:
            kinds.add(kind)
    level = float(block.get("confidence", 0.95))
    how = {
        "t": f"{level:.0%} t interval over seeds",
        "boot": f"{level:.0%} bootstrap interval over users, the seeds' bounds averaged"
        + (f" (fewer than {MIN_SEEDS_T} seeds: no t interval)" if n_seeds < MIN_SEEDS_T else ""),
    }
    brackets = f" (in brackets: {'; '.join(how[k_] for k_ in sorted(kinds, reverse=True))})"
    if not kinds:  # e.g. the exact TRUE over fewer seeds than a t interval needs
        brackets = (
            f" (no interval: fewer than {MIN_SEEDS_T} seeds for a t interval, and no bootstrap "
            "over users)"
            if n_seeds < MIN_SEEDS_T
            else ""
        )
    sentences = [
        f"On {where}, over {_seeds(n_seeds)}, the recommenders ranked by {label} (the tuned "
        f"metric) on {what}: {', '.join(cells)}{brackets}."
    ]
    tested = truth if (comparisons["testset"] == truth).any() else "gt"
    pairs = comparisons[
        (comparisons["testset"] == tested)
        & (comparisons["metric"] == metric)
        & (comparisons["k"] == k)
    ]
    alpha = 1 - level
    if truth == "TRUE" and per_seed is not None:
        exact = per_seed[
            (per_seed["testset"] == truth) & (per_seed["metric"] == metric) & (per_seed["k"] == k)
        ]
        sentences += _exact_order(exact, label, where, excluded)
    if pairs.empty:
        sentences.append(f"No paired test of {label} on {tested} was run on {where}.")
    else:
        judge = "the truth itself" if tested == truth else "the MAR sample"
        sentences += _e1_pairs(pairs, tested, label, where, alpha, excluded, len(ranked), judge)
    snips = comparisons[
        (comparisons["metric"] == metric)
        & (comparisons["k"] == k)
        & np.isfinite(comparisons["gamma_star"].astype(float))
    ]
    if len(snips):
        gammas = [
            f"{_name(r['recommender_a'])} vs {_name(r['recommender_b'])} on "
            f"{_name(r['testset'])}: {_num(r['gamma_star'], 2)}"
            for _, r in snips.iterrows()
        ]
        sentences.append(
            f"On {where}, Γ* of the SNIPS rows at {label} (median over seeds; how far the "
            "propensities must be wrong before the sign of the difference can flip, 1 = not "
            "robust at all): "
            f"{'; '.join(gammas)}."
        )
    tag = f" at {metric}@{k} "
    line = next((a for a in arena if tag in a), arena[0] if arena else None)
    if line:
        line = line[0].lower() + line[1:] if line.startswith("The ") else line
        sentences.append(f"On {where}, {inert_markdown(line)}")
    return sentences


def _exact_order(exact: pd.DataFrame, label: str, where: str, excluded: Sequence[str]) -> list[str]:
    """The sentences on the exact truth's order over seeds: which pairs ``TRUE`` orders the same
    way in every seed (separated), and a plain statement when no two ranked ones are."""
    wide = exact.pivot_table(index="seed", columns="recommender", values="value", aggfunc="first")
    names = sorted(wide.columns, key=lambda r: (-wide[r].mean(), str(r)))
    n = len(wide)
    skip = set(excluded)
    apart, ranked_apart = [], 0
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            above = int((wide[a] > wide[b]).sum())
            if n >= 1 and above == n:
                apart.append(f"{_name(a)} > {_name(b)}")
                ranked_apart += a not in skip and b not in skip
    if not apart:
        return [
            f"On {where}, the truth itself (TRUE) cannot tell the {len(names)} recommenders "
            f"apart at {label}: no pair is ordered the same way in all {_seeds(n)}."
        ]
    text = (
        f"On {where}, TRUE orders these pairs the same way in all {_seeds(n)} at {label}: "
        f"{'; '.join(apart)}."
    )
    if not ranked_apart and len([r for r in names if r not in skip]) > 1:
        text += (
            " The truth itself (TRUE) cannot tell the other recommenders apart: no two of "
            "them are ordered the same way in every seed."
        )
    return [text]


def _e1_pairs(
    pairs: pd.DataFrame,
    tested: str,
    label: str,
    where: str,
    alpha: float,
    excluded: Sequence[str],
    n_recs: int,
    judge: str = "the truth itself",
) -> list[str]:
    """The sentences on E1's paired tests of one (test set, metric, k); ``judge`` names the
    test set in the statement on whether it separates the recommenders."""
    n = int(pairs["n_seeds"].max())
    skip = set(excluded)
    found, majority = [], []
    for _, r in pairs.iterrows():
        for win, lose, count in (
            (r["recommender_a"], r["recommender_b"], r["n_a_better"]),
            (r["recommender_b"], r["recommender_a"], r["n_b_better"]),
        ):
            if int(count) > 0:
                diff = r["mean_diff"] if win == r["recommender_a"] else -r["mean_diff"]
                found.append((int(count), _name(win), _name(lose), diff, int(r["n_seeds"])))
            if 2 * int(count) > int(r["n_seeds"]):
                majority.append((win, lose))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    test = f"paired t-tests over users on {tested}, Holm's correction per seed at α = {alpha:g}"
    out = []
    if found:
        listed = [
            f"{w} above {lo} in {c} of {_seeds(s)} ({_signed(d)} on average)"
            for c, w, lo, d, s in found
        ]
        out.append(
            f"On {where}, the pairs that differ at {label} ({test}): {'; '.join(listed)}; "
            "no other pair differs in any seed."
        )
    else:
        out.append(
            f"On {where}, no pair of recommenders differs at {label} in any of {_seeds(n)} "
            f"({test})."
        )
    most = max((f[0] for f in found), default=0)
    ranked_split = [(w, lo) for w, lo in majority if w not in skip and lo not in skip]
    if not majority:
        out.append(
            f"On {where}, {judge} ({tested}) cannot tell the {n_recs} recommenders "
            f"apart at {label}: no pair differs after Holm's correction in more than {most} of "
            f"{_seeds(n)}."
        )
    elif not ranked_split:
        apart = sorted({_name(x) for pair in majority for x in pair if x in skip})
        out.append(
            f"On {where}, {judge} ({tested}) separates only the baseline "
            f"{_list(apart)} at {label}: no two of the other recommenders differ in more than "
            f"half of {_seeds(n)}."
        )
    else:
        shown = [f"{_name(w)} > {_name(lo)}" for w, lo in ranked_split]
        out.append(
            f"On {where}, {tested} separates, in more than half of {_seeds(n)}: {'; '.join(shown)}."
        )
    return out


def truth_separation_notes(
    agreement: pd.DataFrame, excluded: Sequence[str], *, truth: str = "gt"
) -> dict[tuple[str, int], str]:
    """Per (metric, k) of E1's comparisons on ``truth``, how many pairs of the ranked
    recommenders (all but ``excluded``) it tells apart after Holm's correction in more than
    half the seeds: Kendall's τ against ``truth`` is worth only that much ([SAC20] §5 reads τ;
    a truth that separates no pair makes any τ noise)."""
    skip = set(excluded)
    rows = agreement[
        (agreement["testset"] == truth)
        & ~agreement["recommender_a"].isin(skip)
        & ~agreement["recommender_b"].isin(skip)
    ]
    notes = {}
    for (metric, k), part in rows.groupby(["metric", "k"], sort=True):
        seeds = part["n_seeds"].to_numpy()
        apart = int(((2 * np.maximum(part["n_a_better"], part["n_b_better"])) > seeds).sum())
        text = (
            f"{_name(truth)} itself tells apart {apart} of the {len(part)} pairs of ranked "
            f"recommenders (after Holm's correction, in more than half of "
            f"{_seeds(int(seeds.max()))}; comparisons.md)"
        )
        notes[(str(metric), int(k))] = text + (
            ": a τ here measures noise, whatever its value." if apart == 0 else "."
        )
    return notes


def comparisons_markdown(
    comparisons: pd.DataFrame, dataset: str, *, level: float, verdict_md: str = ""
) -> str:
    """``comparisons.md``: ``comparisons.parquet`` for people, per test set and metric@k: the
    pairs, how many seeds find each better (Holm-adjusted paired t-tests at 1 − ``level``),
    the mean difference over seeds, the least significant seed's Holm p, and Γ* of a SNIPS row;
    with ``verdict_md`` (E1's verdict) as its first section."""
    text = (
        f"# E1 on {_name(dataset)}: paired comparisons of the recommenders\n\n"
        "Per seed, every two recommenders are compared with a paired t-test over the users both "
        f"have, Holm-adjusted within the seed's family; a seed counts for a side when its "
        f"adjusted p is below {1 - level:g}. `mean diff`: a − b, mean over seeds; `max Holm p`: "
        "the least significant seed; `Γ*`: for a SNIPS row, the median over seeds of the factor "
        "by which the propensities must be wrong before the sign can flip.\n"
    )
    if verdict_md:
        text = with_verdict(text, verdict_md)
    if comparisons.empty:
        return text + "\nNo comparison: the run has fewer than two recommenders.\n"
    parts = [text]
    order = list(dict.fromkeys(comparisons["testset"]))
    frame = comparisons.assign(_t=comparisons["testset"].map({t: i for i, t in enumerate(order)}))
    for (_, metric, k), block in frame.groupby(["_t", "metric", "k"], sort=True):
        testset = block["testset"].iloc[0]
        table = pd.DataFrame(
            {
                "a": block["recommender_a"],
                "b": block["recommender_b"],
                "seeds": block["n_seeds"],
                "a better": block["n_a_better"],
                "b better": block["n_b_better"],
                "mean diff": [_signed(v) if np.isfinite(v) else "" for v in block["mean_diff"]],
                "max Holm p": [_p(v) for v in block["max_p_holm"]],
                "Γ*": [
                    _num(v, 2) if np.isfinite(v) else "" for v in block["gamma_star"].astype(float)
                ],
            }
        )
        parts.append(
            f"\n## {_name(testset)}: {metric_label(metric, k)}\n\n" + markdown_table(table)
        )
    return "".join(parts)


# -- E2 ----------------------------------------------------------------------------------------


def _ahead(a: object, b: object, difference: float) -> tuple[object, object]:
    """``(a, b)`` when a's change is the larger (``difference`` = change of a − change of b),
    else ``(b, a)``."""
    return (a, b) if difference >= 0 else (b, a)


def e2_verdict(wilcoxon: pd.DataFrame, block: Mapping[str, Any], *, dataset: str) -> list[str]:
    """E2's verdict ([FLAIRS20]) from ``wilcoxon.parquet``: per evaluation method and scope, at
    the first metric and k of the ``e2`` block, the strategy pairs whose combined p (over the
    seeds' Wilcoxon signed-rank tests) is below ``e2.alpha``, each with the seeds in which it is
    significant, the combined p and the mean difference of the changes."""
    where = _name(dataset)
    alpha = float(block.get("alpha", 0.05))
    if wilcoxon.empty:
        return [f"On {where}, no Wilcoxon test between strategies was run (fewer than two)."]
    metric = block.get("metrics", [wilcoxon["metric"].iloc[0]])[0]
    k = int(block.get("ks", [wilcoxon["k"].iloc[0]])[0])
    rows = wilcoxon[(wilcoxon["metric"] == metric) & (wilcoxon["k"] == k)]
    if rows.empty:
        metric, k = wilcoxon["metric"].iloc[0], int(wilcoxon["k"].iloc[0])
        rows = wilcoxon[(wilcoxon["metric"] == metric) & (wilcoxon["k"] == k)]
    label = metric_label(metric, k)
    scopes = {"user": "active users", "system": "all users"}
    out = []
    for (method, scope), part in rows.groupby(["method", "scope"], sort=False):
        n = int(part["n_seeds"].max())
        hits = part[part["combined_p"] < alpha].sort_values("combined_p", kind="stable")
        head = (
            f"On {where}, {_name(method)}, {scopes.get(scope, _name(scope))}, {label} over "
            f"{_seeds(n)}"
        )
        if hits.empty:
            best = part["combined_p"].min()
            out.append(
                f"{head}: no two of the strategies differ (every combined p ≥ {alpha:g}; "
                f"the smallest is {_p(best)})."
            )
            continue
        listed = [
            f"{_name(high)} gains more than {_name(low)} (significant in "
            f"{int(r['n_significant'])} of {int(r['n_seeds'])} seeds, combined p = "
            f"{_p(r['combined_p'])}, by {_num(abs(r['mean_difference']))} on average)"
            for _, r in hits.iterrows()
            for high, low in [_ahead(r["strategy_a"], r["strategy_b"], r["mean_difference"])]
        ]
        out.append(
            f"{head}: {len(hits)} of {len(part)} strategy pairs differ (combined p < "
            f"{alpha:g}): {'; '.join(listed)}."
        )
    return out


# -- E3 ----------------------------------------------------------------------------------------


def e3_verdict(
    rmse_mean: pd.DataFrame,
    block: Mapping[str, Any],
    *,
    dataset: str,
    n_seeds: int,
) -> list[str]:
    """E3's verdict ([ICML16] Figure 2) from ``rmse_vs_alpha_mean.parquet``: per metric, at the
    ``e3.alpha`` of Table 1 with the known propensities, each estimator's RMSE against the
    true value (mean over the prediction matrices) with its |bias| and sd over the draws, and
    the estimator that comes closest."""
    where = _name(dataset)
    alpha = float(block.get("alpha", 0.25))
    rows = rmse_mean[np.isclose(rmse_mean["alpha"].astype(float), alpha)]
    if rows.empty:
        return [f"On {where}, no estimate was made at α = {alpha:g}: nothing to compare."]
    labels = {"naive": "Naive", "ips": "IPS", "snips": "SNIPS"}
    draws = block.get("n_draws")
    out = []
    for metric, part in rows.groupby("metric", sort=False):
        part = part.sort_values("rmse", kind="stable")
        cells = [
            f"{labels.get(r['estimator'], _name(r['estimator']))} {_num(r['rmse'])} (|bias| "
            f"{_num(r['abs_bias'])}, sd {_num(r['sd'])})"
            for _, r in part.iterrows()
        ]
        best = part.iloc[0]
        name = labels.get(best["estimator"], _name(best["estimator"]))
        over = f"{_seeds(n_seeds)}" + (f" × {int(draws)} draws of O" if draws else "")
        out.append(
            f"On {where} at α = {alpha:g} with the known propensities, over {over} and "
            f"{int(part['n_matrices'].max())} prediction matrices, the RMSE of the "
            f"{metric_label(metric)} estimates against the true value: {', '.join(cells)}; "
            f"{name} comes closest."
        )
    return out


# -- E4 ----------------------------------------------------------------------------------------


def e4_verdict(
    summary: pd.DataFrame,
    pair_tests: pd.DataFrame,
    *,
    dataset: str,
    alpha: float | None = None,
    significance: float = 0.05,
) -> list[str]:
    """E4's verdict ([ICML16] Table 2, §6.5) from ``summary.parquet`` and ``pair_tests.parquet``:
    per MF-IPS model (and MCAR sample size) and metric, at ``alpha`` (the summary's α; all rows
    without a sweep), its test error against MF-Naive's (mean and in-range interval over seeds),
    the paired
    t-test across seeds, and in how many seeds the paired t-test over the MAR test pairs finds
    it better or worse at ``significance``."""
    where = _name(dataset)
    rows = summary
    if alpha is not None and summary["alpha"].notna().any():
        rows = summary[np.isclose(summary["alpha"].astype(float), alpha)]
    at = "" if alpha is None or rows["alpha"].isna().all() else f" at α = {alpha:g}"
    naive = rows[rows["propensity"] == "none"].set_index("metric")
    out = []
    for _, r in rows[rows["propensity"] != "none"].iterrows():
        metric = r["metric"]
        if metric not in naive.index:
            continue
        base = naive.loc[metric]
        base = base.iloc[0] if isinstance(base, pd.DataFrame) else base
        size = r.get("mar_size", np.nan)
        model = f"{_name(r['model'])} ({_name(r['propensity'])} propensities" + (
            f", MCAR sample {int(size):,})" if np.isfinite(size) else ")"
        )
        diff = r["mean"] - base["mean"]
        word = "lower" if diff < 0 else "higher"

        def spread(row: pd.Series) -> str:
            low, high = row.get("ci_low", np.nan), row.get("ci_high", np.nan)
            shown = int(row["n_seeds"]) >= MIN_SEEDS_T and np.isfinite(low) and np.isfinite(high)
            return f" [{_num(low, 3)}, {_num(high, 3)}]" if shown else ""

        intervals = (
            "mean [95% t interval over seeds, within [0, ∞)]"
            if spread(r) and spread(base)
            else f"means over seeds; fewer than {MIN_SEEDS_T} seeds give no interval"
        )
        text = (
            f"On {where}{at}, over {_seeds(int(r['n_seeds']))}, {model} has a test "
            f"{metric_label(metric)} of {_num(r['mean'], 3)}{spread(r)} against MF-Naive's "
            f"{_num(base['mean'], 3)}{spread(base)} ({intervals}), {word} by "
            f"{_num(abs(diff), 3)}; paired t-test across seeds: p = {_p(r['p_value'])}"
        )
        tests = pair_tests[
            (pair_tests["propensity"] == r["propensity"]) & (pair_tests["metric"] == metric)
        ]
        if alpha is not None and tests["alpha"].notna().any():
            tests = tests[np.isclose(tests["alpha"].astype(float), alpha)]
        if len(tests):
            sig = tests["p_value"] < significance
            better = int((sig & (tests["mean_diff"] < 0)).sum())
            worse = int((sig & (tests["mean_diff"] > 0)).sum())
            ps = ", ".join(
                f"seed {int(t['seed'])} p = {_p(t['p_value'])}" for _, t in tests.iterrows()
            )
            text += (
                f"; over the MAR test pairs it is better in {better} and worse in {worse} of "
                f"{_seeds(len(tests))} (paired t-test per seed at {significance:g}: {ps})"
            )
        out.append(text + ".")
    if not out:
        out.append(f"On {where}{at}, no MF-IPS model was compared with MF-Naive.")
    return out


# -- E5 ----------------------------------------------------------------------------------------


def _tau_text(row: pd.Series) -> str:
    """τ to 2 decimals, or why it is undefined: every model gets the same value (flag
    ``constant``, e.g. traditional recall once K reaches the sampled candidates)."""
    if np.isfinite(row["kendall_tau"]):
        return _num(row["kendall_tau"], 2)
    flags = str(row.get("flags", "") or "").split(",")
    return "undefined (every model scores the same)" if "constant" in flags else "undefined"


def e5_verdict(agreement: pd.DataFrame, estimates: pd.DataFrame, *, dataset: str) -> list[str]:
    """E5's verdict ([URE24]) from ``agreement.parquet`` and ``estimates.parquet``: per
    estimator, Kendall's τ of its model ranking against the reference (the true recall where
    known, else URE) at every K, with the mean bias; over how many seeds and models."""
    where = _name(dataset)
    if agreement.empty:
        return [f"On {where}, no agreement with a reference was computed."]
    n_seeds = int(estimates["n_seeds"].max()) if len(estimates) else 0
    names = {"ure": "URE", "traditional": "traditional recall"}
    refs = {"true_recall": "the true recall", "ure": "URE (no truth on this data)"}
    out = []
    for estimator, part in agreement.groupby("estimator", sort=False):
        part = part.sort_values("k")
        taus = ", ".join(
            f"{_tau_text(r)} at K = {int(r['k'])} (mean bias {_signed(r['mean_bias'])})"
            for _, r in part.iterrows()
        )
        out.append(
            f"On {where}, over {_seeds(n_seeds)} and {int(part['n_models'].max())} models, "
            f"Kendall's τ of the model ranking by {names.get(estimator, _name(estimator))} "
            f"against {refs.get(part['reference'].iloc[0], _name(part['reference'].iloc[0]))}: "
            f"{taus}."
        )
    return out


# -- E6 ----------------------------------------------------------------------------------------

_CONSTANT = ("g1", "g2")


def e6_verdict(scores: pd.DataFrame, *, dataset: str) -> list[str]:
    """E6's verdict ([MYT14]) from ``scores.parquet``: per constant recommender (g1, g2), its
    leave-one-out hit rate's drift from t0 to the last snapshot, unweighted and with each KL
    weighting (p items free to move), as the mean over seeds with the range of the seeds'
    drifts; the scores at t0 and at the end carry their intervals where there is one seed."""
    where = _name(dataset)
    out = []
    for rec in _CONSTANT:
        part = scores[scores["recommender"] == rec]
        if part.empty:
            continue
        first, last = int(part["t"].min()), int(part["t"].max())
        n = part["seed"].nunique()
        drifts = []
        variants = part.assign(_plain=~((part["p"] == 0) | (part["weighting"] == "none")))
        for (_, weighting, p), rows in variants.groupby(["_plain", "weighting", "p"], sort=True):
            start = rows[rows["t"] == first].set_index("seed")["score"]
            end = rows[rows["t"] == last].set_index("seed")["score"]
            d = (end - start).dropna()
            if d.empty:
                continue
            label = (
                "unweighted"
                if int(p) == 0 or weighting == "none"
                else (f"KL weights with p = {int(p)}")
            )
            spread = "" if len(d) < 2 else f" (seeds: {_signed(d.min())} to {_signed(d.max())})"
            one = rows[rows["seed"] == rows["seed"].min()]
            ends = one[one["t"].isin([first, last])].sort_values("t")
            path = " → ".join(
                f"{_num(s)} [{_num(lo)}, {_num(hi)}]"
                for s, lo, hi in ends[["score", "ci_low", "ci_high"]].itertuples(index=False)
            )
            drifts.append((label, float(d.mean()), spread, path))
        if not drifts:
            continue
        listed = "; ".join(
            f"{label}: {_signed(mean)}{spread}" + ("" if n > 1 else f", {path}")
            for label, mean, spread, path in drifts
        )
        plain = next((m for lab, m, _, _ in drifts if lab == "unweighted"), None)
        weighted = [m for lab, m, _, _ in drifts if lab != "unweighted"]
        tail = ""
        if plain is not None and weighted:
            best = min(weighted, key=abs)
            smaller = abs(best) < abs(plain)
            tail = (
                f"; the weights {'shrink' if smaller else 'do not shrink'} the drift "
                f"(smallest |drift| {_num(abs(best))} against {_num(abs(plain))} "
                "unweighted)"
            )
        out.append(
            f"On {where}, over {_seeds(n)}, the constant recommender {rec}'s leave-one-out hit "
            f"rate drifts from t{first} to t{last} by (mean over seeds) {listed}{tail}."
        )
    if not out:
        out.append(f"On {where}, no constant recommender was scored.")
    return out
