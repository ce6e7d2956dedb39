"""Flags on result rows that look like any other but should not be read as such.

Every experiment summary that may hold such a row has a ``flags`` column: the codes of
:data:`FLAGS` that apply, comma-separated in :data:`FLAGS` order ("" when none). The
Markdown (and so the report, which renders it) marks a flagged cell with the flags'
symbols and explains them in a legend under the table (:func:`marked`, :func:`legend`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "DEGENERATE_SHARE",
    "FLAGS",
    "MIN_USERS",
    "exposed_within_k",
    "join_flags",
    "legend",
    "marked",
    "short_list_counts",
]

FLAGS: dict[str, tuple[str, str]] = {
    "short_lists": (
        "†",
        "some evaluated users' lists hold fewer than k items (an external list, a plugin, or "
        "fewer candidate items than k): their missing ranks count as misses",
    ),
    "few_users": (
        "‡",
        "averaged over fewer users than `min_users` in at least one seed: a noisy mean",
    ),
    "degenerate_k": (
        "§",
        "K ≥ the randomly exposed items of at least half the users scored: their traditional "
        "Recall@K is the same for every model",
    ),
    "constant": (
        "¶",
        "the estimate or its reference is the same for every model: Kendall's tau and "
        "Pearson's r are undefined (empty)",
    ),
    "few_models": ("#", "fewer than two models: Kendall's tau and Pearson's r are undefined"),
    "undefined_draws": (
        "◊",
        "in some draws the estimate is undefined (no pair observed, so no mean): the mean and "
        "sd are over the other draws",
    ),
    "grid_edge": (
        "↔",
        "the selected hyperparameters lie on the edge of the tuning grid in at least one seed: "
        "the optimum may lie outside the grid",
    ),
    "bias_only": (
        "∅",
        "in at least one seed the selected model's factors add almost nothing to its offset "
        "and biases (RMS < 0.001): it predicts with the biases alone, as would any larger λ",
    ),
    "not_converged": (
        "≈",
        "a reported fit stopped at its sweep cap (`max_iter`) before meeting its tolerance "
        "(`tol`) in at least one seed",
    ),
    "few_pairs": (
        "°",
        "averaged over fewer test pairs than `min_users` in at least one seed: a noisy mean",
    ),
    "out_of_range": (
        "⇅",
        "the estimate leaves the metric's range [0, 1] (per-user values outside it: an "
        "unstable estimator): no interval in the range can hold it, so none is shown",
    ),
    "heavy_tail": (
        "κ",
        "the estimator's weights have a Pareto k̂ above 0.7 in at least one seed: their "
        "weighted mean is unreliable, whatever its interval says (Vehtari et al. 2024)",
    ),
}
"""Flag code -> (Markdown symbol, what it means)."""

MIN_USERS = 30
"""Default of the config key ``min_users``: a mean over fewer users is flagged ``few_users``."""

DEGENERATE_SHARE = 0.5
"""Share of the users scored at or above which K ≥ |R_u| flags ``degenerate_k`` (E5)."""


def join_flags(masks: Mapping[str, np.ndarray | pd.Series]) -> np.ndarray:
    """Comma-separated flag codes per row from one boolean mask per code (any order given)."""
    unknown = set(masks) - set(FLAGS)
    if unknown:
        raise ValueError(f"unknown flag(s) {sorted(unknown)}; known: {', '.join(FLAGS)}")
    lengths = {len(np.asarray(m)) for m in masks.values()}
    if len(lengths) > 1:
        raise ValueError(f"flag masks differ in length: {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    out = np.full(n, "", dtype=object)
    for code in FLAGS:
        if code in masks:
            mask = np.asarray(masks[code], dtype=bool)
            out[mask] = np.where(out[mask] == "", code, out[mask] + "," + code)
    return out


def _codes(flags: str) -> list[str]:
    return [code for code in str(flags).split(",") if code]


def marked(values: Iterable[object], flags: Iterable[str]) -> list[str]:
    """Each value as text followed by the symbols of its flags (unchanged when it has none)."""
    out = []
    for value, row in zip(values, flags, strict=True):
        symbols = "".join(FLAGS[code][0] for code in _codes(row))
        out.append(f"{value} {symbols}" if symbols else f"{value}")
    return out


def legend(flags: Iterable[str]) -> str:
    """The Markdown legend of the flags that occur in ``flags`` ("" when none does)."""
    used = {code for row in flags for code in _codes(row)}
    lines = [f"- {FLAGS[c][0]} `{c}`: {FLAGS[c][1]}\n" for c in FLAGS if c in used]
    return "\nFlags:\n\n" + "".join(lines) if lines else ""


def short_list_counts(recs: pd.DataFrame, per_user: pd.DataFrame) -> np.ndarray:
    """Per row of ``per_user`` (columns user, k), whether the user's list in ``recs`` (one row
    per listed item) holds fewer than k items."""
    users = per_user["user"].to_numpy(np.int64)
    size = int(users.max()) + 1 if users.size else 0
    rec_users = recs["user"].to_numpy(np.int64)
    length = np.bincount(rec_users[rec_users < size], minlength=size)
    return length[users] < per_user["k"].to_numpy(np.int64)


def exposed_within_k(
    per_user: pd.DataFrame, exposed: pd.DataFrame, train: sp.spmatrix
) -> np.ndarray:
    """Per row of ``per_user`` (columns user, k), whether k ≥ |R_u|: the user's randomly
    exposed items that are candidates (not in the user's ``train`` row). Then the traditional
    Recall@k ranks all of R_u and does not depend on the model ([URE24], E5)."""
    users = exposed["user"].to_numpy(np.int64)
    items = exposed["item"].to_numpy(np.int64)
    train = sp.csr_matrix(train)
    in_train = np.asarray(train[users, items]).ravel() != 0 if users.size else np.zeros(0, bool)
    kept = users[~in_train]
    rows = per_user["user"].to_numpy(np.int64)
    size = max(int(rows.max()) + 1 if rows.size else 0, int(kept.max()) + 1 if kept.size else 0)
    sizes = np.bincount(kept, minlength=size)
    return per_user["k"].to_numpy(np.int64) >= sizes[rows]
