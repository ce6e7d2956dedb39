"""E1's verdict ([SAC20]) and the tables that carry its evidence (``comparisons.md``, the Kendall
table's notes), in the sentences of :mod:`debiaseval.experiments.verdicts`.

:func:`e1_verdict`: the recommenders ranked on the tuned metric by the truth (``TRUE`` where
known, else the MAR ground truth ``gt``), which pairs differ after Holm's correction and in how
many seeds (Holm 1979), the SNIPS rows' Γ* (Rosenbaum's sensitivity bound), the estimator
arena's line at the tuned metric, and a plain statement when the truth cannot tell the
recommenders apart. Every user-given name is made inert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.estimation.sensitivity import COMPARISONS_COLUMNS, gamma_cell, gamma_sentence
from debiaseval.estimation.separation import separation_method
from debiaseval.evaluation.uncertainty import MIN_T_SEEDS
from debiaseval.experiments.verdicts import (
    in_any_seed,
    in_seeds,
    inert_name,
    metric_label,
    number,
    p_text,
    seeds_text,
    signed,
    with_verdict,
)
from debiaseval.io.markdown_tables import markdown_table

__all__ = ["comparisons_markdown", "e1_verdict", "pair_sentences", "truth_separation_notes"]


def _interval_of(row: pd.Series) -> tuple[float, float, str] | None:
    """The interval the tables give a summary row: the t interval over seeds with at least
    :data:`MIN_T_SEEDS` seeds, else the mean of the per-seed bootstrap bounds over users."""
    n = int(row.get("n_seeds", 0))
    ci = row.get("ci_low", np.nan), row.get("ci_high", np.nan)
    boot = row.get("boot_low", np.nan), row.get("boot_high", np.nan)
    if n >= MIN_T_SEEDS and np.isfinite(ci[0]) and np.isfinite(ci[1]):
        return float(ci[0]), float(ci[1]), "t"
    if np.isfinite(boot[0]) and np.isfinite(boot[1]):
        return float(boot[0]), float(boot[1]), "boot"
    return None


def _cell(row: pd.Series) -> tuple[str, str | None]:
    found = _interval_of(row)
    text = number(row["mean"])
    if found is None:
        return text, None
    low, high, kind = found
    return f"{text} [{number(low)}, {number(high)}]", kind


def _tuned_block(summary: pd.DataFrame, block: Mapping[str, Any], truth: str) -> tuple[str, int]:
    tuning = block.get("tuning", {})
    metric, k = tuning.get("metric", "recall"), int(tuning.get("k", 10))
    rows = summary[summary["testset"] == truth]
    if ((rows["metric"] == metric) & (rows["k"] == k)).any() or rows.empty:
        return metric, k
    first = rows.sort_values(["metric", "k"]).iloc[0]
    return str(first["metric"]), int(first["k"])


def e1_verdict(
    summary: pd.DataFrame,
    comparisons: pd.DataFrame,
    block: Mapping[str, Any],
    *,
    dataset: str,
    separation: pd.DataFrame | None = None,
    arena: Sequence[str] = (),
    excluded: Sequence[str] = (),
) -> list[str]:
    """E1's verdict ([SAC20]): a few short sentences from ``summary.parquet``, the truth's
    ``separation`` (:func:`~debiaseval.estimation.separation.truth_separation`) and the
    scoreboard's lines; the pair lists are in ``comparisons.md``.

    The tuned metric (``e1.tuning.metric`` at ``e1.tuning.k``; the summary's first one when
    it does not report it) on the truth (``TRUE`` where the summary has it, else ``gt``): the
    recommenders ranked by their mean over seeds, each with its interval (the t interval over
    seeds from :data:`MIN_T_SEEDS` seeds on, else the per-seed bootstrap interval over users);
    how many of the ranked pairs (all recommenders but ``excluded``, the sanity baselines) the
    truth separates (paired user-level tests, Holm-corrected, pooled only across independent
    draws), and plainly that it cannot tell them apart when it separates none; the SNIPS rows'
    Γ* at that metric (:func:`_gamma_sentence`); and ``arena``'s line at that metric (already
    inert).
    """
    where = inert_name(dataset)
    if comparisons.empty:  # no paired test (one recommender): no rows, maybe no columns
        comparisons = pd.DataFrame(columns=COMPARISONS_COLUMNS)
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
        cells.append(f"{inert_name(row['recommender'])} {text}")
        if kind:
            kinds.add(kind)
    confidence = float(block.get("confidence", 0.95))
    how = {
        "t": f"{confidence:.0%} t interval over seeds",
        "boot": f"{confidence:.0%} bootstrap interval over users, the seeds' bounds averaged"
        + (f" (fewer than {MIN_T_SEEDS} seeds: no t interval)" if n_seeds < MIN_T_SEEDS else ""),
    }
    brackets = f" (in brackets: {'; '.join(how[k_] for k_ in sorted(kinds, reverse=True))})"
    if not kinds:  # e.g. the exact TRUE over fewer seeds than a t interval needs
        brackets = (
            f" (no interval: fewer than {MIN_T_SEEDS} seeds for a t interval, and no bootstrap "
            "over users)"
            if n_seeds < MIN_T_SEEDS
            else ""
        )
    sentences = [
        f"On {where}, over {seeds_text(n_seeds)}, the recommenders ranked by {label} (the tuned "
        f"metric) on {what}: {', '.join(cells)}{brackets}."
    ]
    sentences.append(
        _separation_sentence(
            separation,
            truth,
            metric,
            k,
            label,
            where,
            confidence,
            len([r for r in ranked["recommender"] if r not in set(excluded)]),
        )
    )
    gamma = _gamma_sentence(comparisons, metric, k, label, where, excluded)
    if gamma:
        sentences.append(gamma)
    tag = f" at {metric}@{k} "
    line = next((a for a in arena if tag in a), arena[0] if arena else None)
    if line:
        line = line[0].lower() + line[1:] if line.startswith("The ") else line
        sentences.append(f"On {where}, {line}")
    return sentences


def _separation_sentence(
    separation: pd.DataFrame | None,
    truth: str,
    metric: str,
    k: int,
    label: str,
    where: str,
    confidence: float,
    n_ranked: int,
) -> str:
    """Whether the truth separates the ranked recommenders at the tuned metric: k of n pairs,
    or plainly that it cannot tell them apart (and then no row is named best)."""
    part = (
        pd.DataFrame(columns=["metric", "k", "separated", "method"])
        if separation is None
        else separation[(separation["metric"] == metric) & (separation["k"] == k)]
    )
    if part.empty:
        return (
            f"On {where}, no paired test of {label} on {truth} was run: whether it "
            "separates the recommenders is not known."
        )
    apart = int(part["separated"].sum())
    test = f"{separation_method(part)}, Holm at α = {1 - confidence:g}; the pairs in comparisons.md"
    if apart == 0:
        return (
            f"On {where}, the truth itself ({truth}) cannot tell the {n_ranked} ranked "
            f"recommenders apart at {label}: it separates none of the {len(part)} pairs "
            f"({test}). No row of the scoreboard is named best."
        )
    return (
        f"On {where}, {truth} separates {apart} of the {len(part)} pairs of ranked "
        f"recommenders at {label} ({test})."
    )


def _gamma_sentence(
    comparisons: pd.DataFrame,
    metric: str,
    k: int,
    label: str,
    where: str,
    excluded: Sequence[str],
) -> str | None:
    """Γ* of the first SNIPS row at the tuned metric in one sentence, over the ranked pairs:
    how many keep their order beyond a factor 2 and at any factor (∞), how many are not
    established even with the propensities as they are (Γ* = 1), and the weakest established
    lead with its leader (``gamma_leader``); the other SNIPS rows are counted, and every pair
    is in sensitivity.md."""
    skip = set(excluded)
    rows = comparisons[
        (comparisons["metric"] == metric)
        & (comparisons["k"] == k)
        & comparisons["gamma_star"].notna()
        & ~comparisons["recommender_a"].isin(skip)
        & ~comparisons["recommender_b"].isin(skip)
    ]
    if rows.empty:
        return None
    names = list(dict.fromkeys(rows["testset"]))
    part = rows[rows["testset"] == names[0]]
    stars = part["gamma_star"].astype(float)
    established = part[stars > 1]
    robust, unsure = int((stars >= 2).sum()), int((stars == 1).sum())
    text = (
        f"On {where}, Γ* at {label} (how far SNIPS's propensities may be wrong, sampling error "
        f"included, before a pair's order can flip; sensitivity.md): under "
        f"{inert_name(names[0])}, {robust} of the {len(part)} ranked pairs "
        f"{'keeps its' if robust == 1 else 'keep their'} order beyond a factor 2 "
        f"({int(np.isinf(stars).sum())} at any factor, Γ* = ∞), {unsure} "
        f"{'is' if unsure == 1 else 'are'} not established even with the propensities as they "
        "are (Γ* = 1)"
    )
    if len(established):
        weakest = established.loc[established["gamma_star"].astype(float).idxmin()]
        text += "; the weakest established lead: " + gamma_sentence(
            float(weakest["gamma_star"]),
            weakest["recommender_a"],
            weakest["recommender_b"],
            weakest["gamma_leader"],
            name=inert_name,
        )
    if len(names) > 1:
        others = len(names) - 1
        text += f"; {others} other SNIPS row{'s' if others > 1 else ''} in sensitivity.md"
    return text + "."


def pair_sentences(pairs: pd.DataFrame, label: str, alpha: float) -> str:
    """The pairs of one (test set, metric, k) that differ after Holm's correction in some seed,
    each with its seed count and mean difference, for ``comparisons.md``: evidence, not a
    verdict (the seeds of one fixed dataset are not independent tests)."""
    found = []
    for _, r in pairs.iterrows():
        for win, lose, count in (
            (r["recommender_a"], r["recommender_b"], r["n_a_better"]),
            (r["recommender_b"], r["recommender_a"], r["n_b_better"]),
        ):
            if int(count) > 0:
                diff = r["mean_diff"] if win == r["recommender_a"] else -r["mean_diff"]
                found.append(
                    (int(count), inert_name(win), inert_name(lose), diff, int(r["n_seeds"]))
                )
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    test = f"paired t-tests over users, Holm's correction per seed at α = {alpha:g}"
    if not found:
        n = int(pairs["n_seeds"].max()) if len(pairs) else 0
        return f"No pair differs at {label} {in_any_seed(n)} ({test})."
    listed = [
        f"{w} above {lo} {in_seeds(c, s)} ({signed(d)} on average)" for c, w, lo, d, s in found
    ]
    others = "in its one seed" if max(f[4] for f in found) == 1 else "in any seed"
    return (
        f"The pairs that differ at {label} ({test}): {'; '.join(listed)}; no other pair "
        f"differs {others}."
    )


def truth_separation_notes(separation: pd.DataFrame) -> dict[tuple[str, int], str]:
    """Per (metric, k) of the truth's ``separation``
    (:func:`~debiaseval.estimation.separation.truth_separation`), how many pairs of the ranked
    recommenders it tells apart: Kendall's τ against the truth is worth only that much
    ([SAC20] §5 reads τ; a truth that separates no pair makes any τ noise)."""
    notes = {}
    for (metric, k), part in separation.groupby(["metric", "k"], sort=True):
        apart = int(part["separated"].sum())
        truth = inert_name(part["truth"].iloc[0])
        text = (
            f"{truth} itself tells apart {apart} of the {len(part)} pairs of ranked "
            "recommenders (paired tests over users, Holm-corrected; "
            "comparisons.md)"
        )
        notes[(str(metric), int(k))] = text + (
            ": a τ here measures noise, whatever its value." if apart == 0 else "."
        )
    return notes


def _separation_table(separation: pd.DataFrame, confidence: float) -> str:
    """``comparisons.md``'s section on whether the truth separates the ranked recommenders."""
    if separation.empty:
        return ""
    method = separation["method"].iloc[0]
    how = (
        "each seed's paired t-test over users on the truth, pooled over the seeds (independent "
        "draws of the data) by Stouffer's z"
        if method == "stouffer"
        else "the seed-averaged difference on the truth under a two-level bootstrap (seeds, and "
        "users once for all seeds: every seed re-splits the same data, so its seeds are not "
        "independent tests)"
    )
    parts = [
        "\n## Does the truth separate the models?\n\n"
        f"Per ranked pair: {how}; `Holm p` over the pairs of each metric@k, separated below "
        f"{1 - confidence:g}; `seeds finding it`: the seeds whose own test finds a difference "
        "(either way) after Holm's correction (evidence, not the decision).\n"
    ]
    for (metric, k), block in separation.groupby(["metric", "k"], sort=True):
        table = pd.DataFrame(
            {
                "ahead": [inert_name(x) for x in block["leader"]],
                "behind": [inert_name(x) for x in block["other"]],
                "mean diff": [signed(v) for v in block["mean_diff"]],
                "p": [p_text(v) for v in block["p_value"]],
                "Holm p": [p_text(v) for v in block["p_holm"]],
                "separated": ["yes" if v else "no" for v in block["separated"]],
                "seeds finding it": [
                    f"{a} of {b}"
                    for a, b in zip(block["n_seeds_significant"], block["n_seeds"], strict=True)
                ],
            }
        )
        parts.append(
            f"\n### {inert_name(block['truth'].iloc[0])}: "
            f"{metric_label(metric, int(k))}\n\n" + markdown_table(table)
        )
    return "".join(parts)


def comparisons_markdown(
    comparisons: pd.DataFrame,
    dataset: str,
    *,
    confidence: float,
    verdict_md: str = "",
    separation: pd.DataFrame | None = None,
) -> str:
    """``comparisons.md``: with ``verdict_md`` (E1's verdict) as its first section, whether the
    truth separates the ranked recommenders (``separation``), then ``comparisons.parquet`` for
    people, per test set and metric@k: the pairs that differ in some seed, then the table of
    every pair with how many seeds find each better (Holm-adjusted paired t-tests at
    1 − ``confidence``), the mean difference over seeds, the least significant seed's Holm p, and
    Γ* of a SNIPS row."""
    text = (
        f"# E1 on {inert_name(dataset)}: paired comparisons of the recommenders\n\n"
        "Per seed, every two recommenders are compared with a paired t-test over the users both "
        f"have, Holm-adjusted within the seed's family; a seed counts for a side when its "
        f"adjusted p is below {1 - confidence:g}. `mean diff`: a − b, mean over seeds; "
        "`max Holm p`: the least significant seed; `Γ*`: for a SNIPS row, the median over seeds "
        "of the factor by which the propensities must be wrong before the lower confidence bound "
        "of the difference reaches 0, with the recommender ahead (∞: not even at a factor 1000; "
        "1: not significant).\n"
    )
    if verdict_md:
        text = with_verdict(text, verdict_md)
    if comparisons.empty:
        return text + "\nNo comparison: the run has fewer than two recommenders.\n"
    parts = [
        text,
        _separation_table(separation if separation is not None else pd.DataFrame(), confidence),
    ]
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
                "mean diff": [signed(v) if np.isfinite(v) else "" for v in block["mean_diff"]],
                "max Holm p": [p_text(v) for v in block["max_p_holm"]],
                "Γ*": [
                    gamma_cell(v, leader)
                    for v, leader in zip(
                        block["gamma_star"].astype(float),
                        block.get("gamma_leader", pd.Series(None, index=block.index)),
                        strict=True,
                    )
                ],
            }
        )
        parts.append(
            f"\n## {inert_name(testset)}: {metric_label(metric, k)}\n\n"
            f"{pair_sentences(block, metric_label(metric, k), 1 - confidence)}\n\n"
            + markdown_table(table)
        )
    return "".join(parts)
