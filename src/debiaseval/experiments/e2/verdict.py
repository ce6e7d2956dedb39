"""E2's verdict: which elicitation strategies differ per evaluation method after Holm's
correction, and which gains more where the seeds or a one-sided test settle it ([FLAIRS20];
docs/experiments/e2.md, Reading the verdict)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.evaluation.uncertainty import holm, significance
from debiaseval.experiments.verdicts import inert_name, metric_label, number, p_text, seeds_text

__all__ = ["e2_directions", "e2_verdict"]

_SCOPES = {"user": "active users", "system": "all users"}


def _ahead(a: object, b: object, difference: float) -> tuple[object, object]:
    """``(a, b)`` when a's change is the larger (``difference`` = change of a − change of b),
    else ``(b, a)``."""
    return (a, b) if difference >= 0 else (b, a)


def _e2_rows(wilcoxon: pd.DataFrame, block: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """The tests the verdict draws from: those at the first metric and k of the ``e2`` block
    (else at the table's first), with the label of that metric."""
    metric = block.get("metrics", [wilcoxon["metric"].iloc[0]])[0]
    k = int(block.get("ks", [wilcoxon["k"].iloc[0]])[0])
    rows = wilcoxon[(wilcoxon["metric"] == metric) & (wilcoxon["k"] == k)]
    if rows.empty:
        metric, k = wilcoxon["metric"].iloc[0], int(wilcoxon["k"].iloc[0])
        rows = wilcoxon[(wilcoxon["metric"] == metric) & (wilcoxon["k"] == k)]
    return rows, metric_label(metric, k)


def e2_directions(part: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """One block of E2's tests (the strategy pairs of one method and scope; rows of
    ``wilcoxon.parquet``) with what the verdict may claim of each pair.

    ``holm_p``: the combined two-sided p (:func:`~debiaseval.active_learning.evaluation.
    combine_seeds`) Holm-adjusted within the block; ``direction_p`` and ``against_p``: the
    one-sided combined p in the direction of the mean difference and in the other one, each
    doubled (the direction is read off the data, so both are tried) and Holm-adjusted within
    the block; ``agree``: every seed's mean difference has the sign of the mean. A pair
    ``differs`` where ``holm_p`` < ``alpha``; it is ``directed`` ("a gains more than b")
    where it differs and either the seeds agree or ``direction_p`` < ``alpha`` ≤
    ``against_p`` (with two seeds the combined p is twice the smaller one, so two seeds
    significant in opposite directions make both one-sided p small: no direction then)."""
    mean = part["mean_difference"].to_numpy(np.float64)
    forward = mean >= 0
    greater = part["combined_p_greater"].to_numpy(np.float64)
    less = part["combined_p_less"].to_numpy(np.float64)
    ahead = np.where(forward, part["n_a_ahead"], part["n_b_ahead"])
    out = part.assign(
        holm_p=holm(part["combined_p"].to_numpy(np.float64)),
        direction_p=holm(np.minimum(1.0, 2.0 * np.where(forward, greater, less))),
        against_p=holm(np.minimum(1.0, 2.0 * np.where(forward, less, greater))),
        agree=(ahead == part["n_seeds"].to_numpy()) & (mean != 0),
    )
    out["differs"] = out["holm_p"] < alpha
    one_sided = (out["direction_p"] < alpha) & (out["against_p"] >= alpha)
    out["directed"] = out["differs"] & (out["agree"] | one_sided)
    return out


def _e2_finding(r: pd.Series) -> str:
    """One pair that differs: its direction where the verdict may claim one, else that the
    seeds do not settle it."""
    high, low = _ahead(r["strategy_a"], r["strategy_b"], r["mean_difference"])
    n = int(r["n_seeds"])
    if not r["directed"]:
        return (
            f"{inert_name(r['strategy_a'])} and {inert_name(r['strategy_b'])} differ "
            f"(Holm-adjusted combined p = {p_text(r['holm_p'])}) but the seeds do not settle "
            f"which gains more ({inert_name(r['strategy_a'])} ahead in {int(r['n_a_ahead'])} "
            f"of {seeds_text(n)}; one-sided p, doubled and adjusted, {p_text(r['direction_p'])})"
        )
    why = (
        f"every one of the {seeds_text(n)} agrees"
        if r["agree"]
        else f"one-sided p, doubled and adjusted, {p_text(r['direction_p'])}"
    )
    by = number(abs(r["mean_difference"]))
    return (
        f"{inert_name(high)} gains more than {inert_name(low)} by {by} on average "
        f"(Holm-adjusted combined p = {p_text(r['holm_p'])}; {why})"
    )


def e2_verdict(wilcoxon: pd.DataFrame, block: Mapping[str, Any], *, dataset: str) -> list[str]:
    """E2's verdict ([FLAIRS20]) from ``wilcoxon.parquet``: per evaluation method and scope (a
    block of tests), at the first metric and k of the ``e2`` block, the strategy pairs that
    differ after Holm's correction within the block at 1 − ``e2.confidence``, each with a
    direction only where :func:`e2_directions` allows one; then how many tests the verdict made
    and how many of them would fall below that level by chance alone."""
    where = inert_name(dataset)
    alpha = significance(float(block.get("confidence", 0.95)))
    if wilcoxon.empty:
        return [f"On {where}, no Wilcoxon test between strategies was run (fewer than two)."]
    rows, label = _e2_rows(wilcoxon, block)
    out = []
    for (method, scope), part in rows.groupby(["method", "scope"], sort=False):
        tests = e2_directions(part, alpha)
        head = (
            f"On {where}, {inert_name(method)}, {_SCOPES.get(scope, inert_name(scope))}, "
            f"{label} over {seeds_text(int(part['n_seeds'].max()))}"
        )
        hits = tests[tests["differs"]].sort_values("holm_p", kind="stable")
        if hits.empty:
            out.append(
                f"{head}: no two strategies differ after Holm's correction over the "
                f"{len(part)} pairs (smallest adjusted combined p {p_text(tests['holm_p'].min())}"
                f", unadjusted {p_text(part['combined_p'].min())})."
            )
            continue
        listed = "; ".join(_e2_finding(r) for _, r in hits.iterrows())
        out.append(
            f"{head}: {len(hits)} of {len(part)} strategy pairs differ after Holm's correction "
            f"at {alpha:g}: {listed}."
        )
    n_blocks = rows.groupby(["method", "scope"], sort=False).ngroups
    below = int((rows["combined_p"] < alpha).sum())
    out.append(
        f"On {where}, the verdict rests on {len(rows)} Wilcoxon tests ({n_blocks} method × scope "
        f"blocks at {label}, Holm-corrected within each block); {below} of them have a combined "
        f"p below {alpha:g} before correction, where chance alone gives {len(rows) * alpha:.3g} "
        "on average."
    )
    return out
