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

from debiaseval.estimation.sensitivity import gamma_cell
from debiaseval.evaluation.aggregate import markdown_table
from debiaseval.evaluation.uncertainty import MIN_T_SEEDS
from debiaseval.experiments.verdicts import (
    and_list,
    inert_name,
    metric_label,
    number,
    p_text,
    seeds_text,
    signed,
    with_verdict,
)

__all__ = ["comparisons_markdown", "e1_verdict", "truth_separation_notes"]


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
    seeds from :data:`MIN_T_SEEDS` seeds on, else the per-seed bootstrap interval over users);
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
    where = inert_name(dataset)
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
        cells.append(f"{inert_name(row['recommender'])} {text}")
        if kind:
            kinds.add(kind)
    level = float(block.get("confidence", 0.95))
    how = {
        "t": f"{level:.0%} t interval over seeds",
        "boot": f"{level:.0%} bootstrap interval over users, the seeds' bounds averaged"
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
            f"{inert_name(r['recommender_a'])} vs {inert_name(r['recommender_b'])} on "
            f"{inert_name(r['testset'])}: {number(r['gamma_star'], 2)}"
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
        sentences.append(f"On {where}, {inert_name(line)}")
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
                apart.append(f"{inert_name(a)} > {inert_name(b)}")
                ranked_apart += a not in skip and b not in skip
    if not apart:
        return [
            f"On {where}, the truth itself (TRUE) cannot tell the {len(names)} recommenders "
            f"apart at {label}: no pair is ordered the same way in all {seeds_text(n)}."
        ]
    text = (
        f"On {where}, TRUE orders these pairs the same way in all {seeds_text(n)} at {label}: "
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
                found.append(
                    (int(count), inert_name(win), inert_name(lose), diff, int(r["n_seeds"]))
                )
            if 2 * int(count) > int(r["n_seeds"]):
                majority.append((win, lose))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    test = f"paired t-tests over users on {tested}, Holm's correction per seed at α = {alpha:g}"
    out = []
    if found:
        listed = [
            f"{w} above {lo} in {c} of {seeds_text(s)} ({signed(d)} on average)"
            for c, w, lo, d, s in found
        ]
        out.append(
            f"On {where}, the pairs that differ at {label} ({test}): {'; '.join(listed)}; "
            "no other pair differs in any seed."
        )
    else:
        out.append(
            f"On {where}, no pair of recommenders differs at {label} in any of {seeds_text(n)} "
            f"({test})."
        )
    most = max((f[0] for f in found), default=0)
    ranked_split = [(w, lo) for w, lo in majority if w not in skip and lo not in skip]
    if not majority:
        out.append(
            f"On {where}, {judge} ({tested}) cannot tell the {n_recs} recommenders "
            f"apart at {label}: no pair differs after Holm's correction in more than {most} of "
            f"{seeds_text(n)}."
        )
    elif not ranked_split:
        apart = sorted({inert_name(x) for pair in majority for x in pair if x in skip})
        out.append(
            f"On {where}, {judge} ({tested}) separates only the baseline "
            f"{and_list(apart)} at {label}: no two of the other recommenders differ in more than "
            f"half of {seeds_text(n)}."
        )
    else:
        shown = [f"{inert_name(w)} > {inert_name(lo)}" for w, lo in ranked_split]
        out.append(
            f"On {where}, {tested} separates, in more than half of {seeds_text(n)}: "
            f"{'; '.join(shown)}."
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
            f"{inert_name(truth)} itself tells apart {apart} of the {len(part)} pairs of ranked "
            f"recommenders (after Holm's correction, in more than half of "
            f"{seeds_text(int(seeds.max()))}; comparisons.md)"
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
        f"# E1 on {inert_name(dataset)}: paired comparisons of the recommenders\n\n"
        "Per seed, every two recommenders are compared with a paired t-test over the users both "
        f"have, Holm-adjusted within the seed's family; a seed counts for a side when its "
        f"adjusted p is below {1 - level:g}. `mean diff`: a − b, mean over seeds; `max Holm p`: "
        "the least significant seed; `Γ*`: for a SNIPS row, the median over seeds of the factor "
        "by which the propensities must be wrong before the lower confidence bound of the "
        "difference reaches 0, with the recommender ahead (∞: not even at a factor 1000; 1: "
        "not significant).\n"
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
            f"\n## {inert_name(testset)}: {metric_label(metric, k)}\n\n" + markdown_table(table)
        )
    return "".join(parts)
