"""Sensitivity of SNIPS to unmeasured selection: how wrong may the propensities be before a
conclusion changes? (docs/estimators.md, Sensitivity)

Following the marginal sensitivity model (Tan, *A distributional approach for causal
inference using propensity scores*, JASA 2006; Zhao, Small & Bhattacharya, JRSS-B 2019), let
the true weight of a held-out pair be any w* in [w/Γ, Γw], Γ ≥ 1. A user's SNIPS value
Σ δ w* / Σ w* over u's positive held-out pairs is a linear-fractional function of w* on that
box: its maximum puts w* = Γw on the pairs whose δ exceeds a threshold and w/Γ on the others,
the threshold being the maximum itself (Dorn & Guo, *Sharp sensitivity analysis for inverse
propensity weighting via quantile balancing*, JASA 2023, for the normalised estimator). So
sorting a user's pairs by δ and trying every cut finds it; with δ = c (a recommender's gain)
that bounds its estimate, with δ = c_A − c_B the paired difference of two recommenders.
The bounds of the mean over users are the means of the per-user bounds.

Γ*(A > B) is the smallest Γ at which the lower bound of the mean difference reaches 0
(:func:`gamma_star`, by bisection on log Γ): A beats B unless the propensities are wrong by
more than a factor Γ*. Γ* = 1 means the estimate itself does not separate them; ``inf`` that
no Γ up to :data:`MAX_GAMMA` does.

The pairs are grouped by user and level of δ once (O(pairs) for the few levels the gains
take, a sort otherwise); each Γ then costs O(groups): no loop over users or pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.estimation.heldout import HeldOut, gains, member
from debiaseval.io.markup import inert_markdown

__all__ = [
    "COMPARISONS_COLUMNS",
    "MAX_GAMMA",
    "SENSITIVITY_COLUMNS",
    "Levels",
    "bounds",
    "gamma_star",
    "gamma_star_over_seeds",
    "gamma_stars",
    "sensitivity",
    "sensitivity_markdown",
    "sensitivity_over_seeds",
    "sensitivity_table",
]

MAX_GAMMA = 1000.0
"""The largest Γ the bisection of :func:`gamma_star` tries; beyond it Γ* is reported as inf."""

SENSITIVITY_COLUMNS = ["recommender", "estimator", "metric", "k", "gamma", "low", "high"]
"""Columns of :func:`sensitivity_table` (the workflow adds ``seed``)."""

_DENSE_CELLS = 1 << 25


@dataclass(frozen=True)
class Levels:
    """Pairs grouped by user and by δ, descending within each user (the sums of their weights
    at each distinct δ), with what every cut of a user's groups needs: the weight and the
    weighted δ of the groups up to it (``top_w``, ``top_a``) and after it (``rest_w``,
    ``rest_a``), where each user's groups start, and the plain ratio Σ δ w / Σ w per user."""

    top_a: np.ndarray
    top_w: np.ndarray
    rest_a: np.ndarray
    rest_w: np.ndarray
    starts: np.ndarray
    base: np.ndarray
    users: np.ndarray
    """The users with groups, ascending (those of ``starts`` and ``base``)."""

    @classmethod
    def of(
        cls,
        users: np.ndarray,
        w: np.ndarray,
        *,
        delta: np.ndarray | None = None,
        codes: np.ndarray | None = None,
        table: np.ndarray | None = None,
    ) -> Levels:
        """Group pairs (``users`` and their weights ``w``) by user and δ, given as ``delta``,
        or as integer ``codes`` into the small ``table`` of the values δ takes (no sort of
        the pairs: a recommender's gain is a function of its rank)."""
        if codes is None:
            distinct, level = np.unique(delta, return_inverse=True)
        else:
            distinct, inverse = np.unique(table, return_inverse=True)
            level = inverse.ravel()[codes]
        level = distinct.size - 1 - level  # descending δ
        distinct = distinct[::-1]
        n_levels = max(distinct.size, 1)
        u = np.asarray(users, dtype=np.int64)
        keys = u * n_levels + level
        size = (int(u.max()) + 1 if u.size else 0) * n_levels
        if size <= _DENSE_CELLS:  # every weight is positive: a group is present iff its sum is
            sums = np.bincount(keys, weights=w, minlength=size)
            present = np.flatnonzero(sums)
            group_w = sums[present]
        else:
            present, inverse = np.unique(keys, return_inverse=True)
            group_w = np.bincount(inverse, weights=w)
        return cls._grouped(present // n_levels, distinct[present % n_levels], group_w)

    @classmethod
    def both(cls, users: np.ndarray, w: np.ndarray, delta: np.ndarray, totals: np.ndarray
             ) -> tuple[Levels, Levels]:  # fmt: skip
        """:meth:`of` δ and of −δ, from the pairs where δ may differ from 0 only: ``users``,
        ``w`` and ``delta`` of those pairs, and ``totals``, every user's weight over all its
        pairs (the rest has δ = 0). A recommender's gain is 0 outside its top k, so these are
        the few listed pairs, not every positive held-out pair; the sums per user and δ (a
        users × levels table) are read in both orders."""
        distinct, inverse = np.unique(np.r_[delta, 0.0], return_inverse=True)  # ascending
        zero, inverse = inverse[-1], inverse[:-1]
        n_levels, n_users = distinct.size, totals.size
        if n_users * n_levels > _DENSE_CELLS:  # too many levels for the table: one group a pair
            rest = np.flatnonzero(totals)
            pairs_u = np.r_[users, rest]
            pairs_w = np.r_[w, totals[rest] - np.bincount(users, weights=w,
                                                          minlength=n_users)[rest]]  # fmt: skip
            pairs_d = np.r_[delta, np.zeros(rest.size)]
            return (cls.of(pairs_u, pairs_w, delta=pairs_d),
                    cls.of(pairs_u, pairs_w, delta=-pairs_d))  # fmt: skip
        keys = np.asarray(users, dtype=np.int64) * n_levels + inverse
        sums = np.bincount(keys, weights=w, minlength=n_users * n_levels).reshape(-1, n_levels)
        sums = sums.astype(np.float64, copy=False)  # no listed pair: bincount gives integers
        # the other pairs of each user, at δ = 0 (rounding kept from going below 0)
        sums[:, zero] += np.maximum(totals - sums.sum(axis=1), 0.0)
        out = []
        for order, values in ((slice(None, None, -1), distinct[::-1]), (slice(None), -distinct)):
            ordered = sums[:, order].ravel()
            present = np.flatnonzero(ordered)
            out.append(cls._grouped(present // n_levels, values[present % n_levels],
                                    ordered[present]))  # fmt: skip
        return out[0], out[1]

    @classmethod
    def _grouped(cls, group_user: np.ndarray, value: np.ndarray, group_w: np.ndarray) -> Levels:
        """The prefix sums of the groups (sorted by user, then by descending δ ``value``)."""
        a = group_w * value
        starts = np.flatnonzero(np.r_[True, group_user[1:] != group_user[:-1]])
        owner = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, a.size]))
        cum_a, cum_w = np.cumsum(a), np.cumsum(group_w)
        top_a = cum_a - (cum_a - a)[starts][owner]  # the user's groups up to this one
        top_w = cum_w - (cum_w - group_w)[starts][owner]
        total_a = np.add.reduceat(a, starts) if a.size else a
        total_w = np.add.reduceat(group_w, starts) if a.size else a
        return cls(top_a, top_w, total_a[owner] - top_a, total_w[owner] - top_w, starts,
                   total_a / total_w if a.size else a, group_user[starts])  # fmt: skip

    def maximum(self, gamma: float) -> np.ndarray:
        """Per user of :attr:`users`: max over w* ∈ [w/Γ, Γw] of Σ δ w* / Σ w*: the best cut,
        Γw on the groups up to it and w/Γ after (or w/Γ everywhere: the plain ratio)."""
        if self.starts.size == 0:
            return self.base
        cut = (gamma * self.top_a + self.rest_a / gamma) / (gamma * self.top_w
                                                            + self.rest_w / gamma)  # fmt: skip
        return np.maximum(np.maximum.reduceat(cut, self.starts), self.base)


def bounds(
    users: np.ndarray,
    delta: np.ndarray | None,
    w: np.ndarray,
    gamma: float,
    levels: tuple[Levels, Levels] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per user: the users, and the lower and upper bounds of Σ δ w* / Σ w* over the box
    w* ∈ [w/Γ, Γw] of each user's pairs. ``levels``: (:class:`Levels` of δ, of −δ) when
    already grouped (then ``delta`` is not read)."""
    if gamma < 1:
        raise ValueError(f"the sensitivity parameter must be >= 1, got {gamma}")
    up, down = levels or (Levels.of(users, w, delta=delta), Levels.of(users, w, delta=-delta))
    return up.users, -down.maximum(gamma), up.maximum(gamma)


def gamma_star(users: np.ndarray, delta: np.ndarray, w: np.ndarray, *, tol: float = 1e-5,
               max_gamma: float = MAX_GAMMA) -> float:  # fmt: skip
    """Γ* of the mean over users of Σ δ w / Σ w: the smallest Γ at which the bound of the mean
    on the side of its sign reaches 0 (1 if the mean is 0, inf beyond ``max_gamma``), by
    bisection on log Γ to a relative ``tol``."""
    return _gamma_star(lambda sign: Levels.of(users, w, delta=sign * delta), tol=tol,
                       max_gamma=max_gamma)  # fmt: skip


def _gamma_star(
    levels_of: Callable[[float], Levels], *, tol: float = 1e-5, max_gamma: float = MAX_GAMMA
) -> float:
    """:func:`gamma_star` from ``levels_of(sign)``, the :class:`Levels` of sign · δ."""
    down = levels_of(-1.0)
    estimate = float(np.mean(-down.maximum(1.0))) if down.users.size else 0.0
    if estimate == 0 or not np.isfinite(estimate):
        return 1.0
    # the side that can cross 0: the lower bound of a positive mean, the upper of a negative one
    side = down if estimate > 0 else levels_of(1.0)

    def margin(gamma: float) -> float:  # > 0 while the sign holds
        return -float(np.mean(side.maximum(gamma)))

    if margin(max_gamma) > 0:
        return np.inf
    low, high = 0.0, float(np.log(max_gamma))
    while high - low > tol:
        mid = 0.5 * (low + high)
        if margin(float(np.exp(mid))) > 0:
            low = mid
        else:
            high = mid
    return float(np.exp(high))


class _Positives:
    """The positive held-out pairs of the users a SNIPS estimator averages, with each user's
    total weight over them, and the pairs a recommender lists in its top k among them."""

    def __init__(self, held: HeldOut) -> None:
        keep = member(held.users, held.evaluated, held.n_users) & (held.labels > 0)
        self.at = np.flatnonzero(keep)
        self.users, self.w = held.users[self.at], held.weights[self.at]
        self.totals = np.bincount(self.users, weights=self.w, minlength=held.n_users)

    def listed(self, rank: np.ndarray, k: int) -> np.ndarray:
        """Positions (into :attr:`at`) of the pairs ranked 1..k: the only ones of nonzero gain."""
        r = rank[self.at]
        return np.flatnonzero((r >= 1) & (r <= k))


def sensitivity(
    held: HeldOut,
    ranks: Mapping[str, np.ndarray],
    *,
    estimator: str,
    blocks: Sequence[tuple[str, int]],
    gammas: Sequence[float],
) -> tuple[pd.DataFrame, np.ndarray]:
    """One SNIPS estimator's sensitivity in a seed: the bounds of every recommender's mean
    estimate at each Γ of ``gammas`` (:data:`SENSITIVITY_COLUMNS`) and Γ* of every two
    recommenders (in the order of :func:`~debiaseval.evaluation.uncertainty.compare_recommenders`:
    block by block, then the pairs (a, b) with a before b in ``ranks``), for the side the
    estimate of a − b takes. ``ranks``: recommender -> the held-out pairs' ranks. Only the pairs
    a list ranks in its top k are grouped: every other positive pair has gain 0."""
    pos = _Positives(held)
    names = list(ranks)
    rows, stars = [], []
    for metric, k in blocks:
        listed = {rec: pos.listed(ranks[rec], k) for rec in names}
        for rec in names:
            c = gains(metric, ranks[rec][pos.at[listed[rec]]], k)
            levels = Levels.both(pos.users[listed[rec]], pos.w[listed[rec]], c, pos.totals)
            for gamma in gammas:
                _, low, high = bounds(pos.users, None, pos.w, float(gamma), levels)
                rows.append((rec, estimator, metric, k, float(gamma), float(low.mean()),
                             float(high.mean())))  # fmt: skip
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                either = np.union1d(listed[names[a]], listed[names[b]])
                at = pos.at[either]
                delta = gains(metric, ranks[names[a]][at], k) - gains(
                    metric, ranks[names[b]][at], k
                )
                up, down = Levels.both(pos.users[either], pos.w[either], delta, pos.totals)
                stars.append(_gamma_star(lambda sign, up=up, down=down: up if sign > 0 else down))
    table = pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS).astype({"k": np.int16})
    return table, np.asarray(stars, dtype=np.float64)


def sensitivity_table(held: HeldOut, ranks: Mapping[str, np.ndarray], **options: Any
                      ) -> pd.DataFrame:  # fmt: skip
    """The bounds of :func:`sensitivity` alone (``options``: its ``estimator``, ``blocks`` and
    ``gammas``)."""
    return sensitivity(held, ranks, **options)[0]


def gamma_stars(held: HeldOut, ranks: Mapping[str, np.ndarray], *,
                blocks: Sequence[tuple[str, int]]) -> np.ndarray:  # fmt: skip
    """Γ* of :func:`sensitivity` alone."""
    return sensitivity(held, ranks, estimator="", blocks=blocks, gammas=())[1]


COMPARISONS_COLUMNS = [
    "testset", "metric", "k", "recommender_a", "recommender_b",
    "n_seeds", "mean_diff", "n_a_better", "n_b_better", "max_p_holm", "gamma_star",
]  # fmt: skip
"""Columns of ``comparisons.parquet``: per test set, metric, k and two recommenders, how many
seeds find a (Holm-adjusted) significant difference each way, and, for a SNIPS row, the median
over seeds of Γ*, the factor by which its propensities must be wrong before the difference's
sign can flip."""


def gamma_star_over_seeds(seeds: pd.DataFrame, agreement: pd.DataFrame) -> np.ndarray:
    """Per row of ``agreement`` (:func:`~debiaseval.evaluation.uncertainty.agreement_over_seeds`
    of the seeds' comparisons ``seeds``, which carry ``gamma_star``): the median over seeds of
    Γ* for the side of the mean difference over seeds (a seed whose estimate takes the other
    side counts as Γ* = 1). NaN where no seed has a Γ* (rows that are not SNIPS)."""
    keys = ["testset", "metric", "k", "recommender_a", "recommender_b"]
    if "gamma_star" not in seeds or agreement.empty:
        return np.full(len(agreement), np.nan)
    frame = seeds[[*keys, "mean_diff", "gamma_star"]].merge(
        agreement[[*keys, "mean_diff"]].rename(columns={"mean_diff": "overall"}), on=keys
    )
    frame = frame[frame["gamma_star"].notna()]
    agrees = np.sign(frame["mean_diff"].to_numpy()) == np.sign(frame["overall"].to_numpy())
    frame = frame.assign(star=np.where(agrees, frame["gamma_star"].to_numpy(), 1.0))
    median = frame.groupby(keys, sort=False, observed=True)["star"].median()
    index = pd.MultiIndex.from_frame(agreement[keys])
    return median.reindex(index).to_numpy(dtype=np.float64)


def sensitivity_over_seeds(per_seed: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """The SNIPS bounds of the mean over seeds (the means of the seeds' bounds, since a mean's
    bounds are the means of its terms' bounds), beside the estimate (the summary's ``mean``):
    recommender, estimator, metric, k, estimate, gamma, low, high."""
    columns = ["recommender", "estimator", "metric", "k", "estimate", "gamma", "low", "high"]
    if per_seed.empty:
        return pd.DataFrame(columns=columns)
    keys = ["recommender", "estimator", "metric", "k", "gamma"]
    out = per_seed.groupby(keys, sort=False, observed=True)[["low", "high"]].mean().reset_index()
    means = summary.rename(columns={"testset": "estimator", "mean": "estimate"})
    out = out.merge(means[["recommender", "estimator", "metric", "k", "estimate"]],
                    on=["recommender", "estimator", "metric", "k"], how="left")  # fmt: skip
    return out[columns].astype({"k": np.int16})


def sensitivity_markdown(bounds: pd.DataFrame, comparisons: pd.DataFrame, dataset: str) -> str:
    """``sensitivity.md``: per SNIPS estimator and (metric, k), each recommender's estimate and
    its bounds at every Γ, then Γ* of every pair of recommenders."""
    parts = [
        f"# E1 on {dataset}: sensitivity of SNIPS to wrong propensities\n\n"
        "If every true weight may lie anywhere within a factor Γ of the one used "
        "(w/Γ ≤ w* ≤ Γw), each recommender's SNIPS estimate lies within the bounds below "
        "(the means over seeds of the sharp per-user bounds). Γ* of two recommenders is the "
        "factor the propensities must be wrong by before the sign of their difference can flip "
        "(median over seeds; ∞: no Γ up to 1000 flips it; 1: the estimate itself does not "
        "separate them).\n"
    ]
    if bounds.empty:
        return parts[0] + "\nNo SNIPS estimator in e1.estimators, or no Γ in e1.sensitivity.\n"
    stars = comparisons[comparisons["gamma_star"].notna()] if "gamma_star" in comparisons else None
    for (estimator, metric, k), block in bounds.groupby(["estimator", "metric", "k"], sort=False):
        gammas = list(dict.fromkeys(block["gamma"]))
        rows = []
        for rec, part in block.groupby("recommender", sort=False):
            cells = [f"{part['estimate'].iloc[0]:.4f}"]
            for gamma in gammas:
                hit = part[part["gamma"] == gamma]
                cells.append(f"[{hit['low'].iloc[0]:.4f}, {hit['high'].iloc[0]:.4f}]")
            rows.append("| " + " | ".join([inert_markdown(rec), *cells]) + " |")
        header = "| recommender | estimate | " + " | ".join(f"Γ = {g:g}" for g in gammas) + " |"
        rule = "|" + "|".join("---" for _ in range(2 + len(gammas))) + "|"
        parts.append(
            f"\n## {estimator}, {metric}@{k}\n\n" + "\n".join([header, rule, *rows]) + "\n"
        )
        if stars is not None:
            mine = stars[(stars["testset"] == estimator) & (stars["metric"] == metric)
                         & (stars["k"] == k)]  # fmt: skip
            if len(mine):
                lines = ["| A | B | mean A − B | Γ* |", "|---|---|---|---|"]
                for a, b, d, g in mine[["recommender_a", "recommender_b", "mean_diff",
                                        "gamma_star"]].itertuples(index=False):  # fmt: skip
                    star = "∞" if np.isinf(g) else f"{g:.2f}"
                    lines.append(
                        f"| {inert_markdown(a)} | {inert_markdown(b)} | {d:+.4f} | {star} |"
                    )
                parts.append("\n" + "\n".join(lines) + "\n")
    return "".join(parts)
