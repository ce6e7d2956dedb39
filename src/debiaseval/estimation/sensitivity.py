"""Sensitivity of SNIPS to unmeasured selection: how wrong may the propensities be before a
conclusion changes? (docs/estimators.md, Sensitivity)

Following the marginal sensitivity model (Tan, *A distributional approach for causal
inference using propensity scores*, JASA 2006; Rosenbaum, *Observational Studies*, 2002, for Γ),
let the true weight of a held-out pair be any w* in [w/Γ, Γw], Γ ≥ 1. A user's SNIPS value
Σ δ w* / Σ w* over u's positive held-out pairs is a linear-fractional function of w* on that
box: its maximum puts w* = Γw on the pairs whose δ exceeds a threshold and w/Γ on the others,
the threshold being the maximum itself (Dorn & Guo, *Sharp sensitivity analysis for inverse
propensity weighting via quantile balancing*, JASA 2023, for the normalised estimator). So
sorting a user's pairs by δ and trying every cut finds it; with δ = c (a recommender's gain)
that bounds its estimate, with δ = c_A − c_B the paired difference of two recommenders.
The bounds of the mean over users are the means of the per-user bounds.

Γ* of two recommenders includes sampling error (Zhao, Small & Bhattacharya, *Sensitivity
analysis for inverse probability weighting estimators via the percentile bootstrap*, JRSS-B
2019): for the leader A (the sign of the estimate of the mean of δ = c_A − c_B), the smallest Γ
at which the one-sided lower confidence bound at ``confidence`` of the lower bound of the mean
difference reaches 0 (:func:`gamma_star`, by a search on log Γ). That confidence bound is the
(1 − confidence) percentile of the lower bound over Poisson bootstrap resamples of the users
(:class:`Resamples`); since the box is a product over users, the bound re-optimised on a
resample, as Zhao et al. prescribe, is the resample's weighted mean Σ_u n_u lb_u(Γ) / Σ_u n_u
of the same per-user bounds. A is above B unless the propensities are wrong by more than a
factor Γ*. Γ* = 1 means the bound is not above 0 even at Γ = 1 (the difference is not
significant); ``inf`` that it stays above 0 up to :data:`MAX_GAMMA`. Without resamples the same
search gives the point estimate's Γ*, which protects only its sign; it is the larger of the two
whenever the percentile lies below the estimate, as it does unless the resamples hardly vary.

The pairs are grouped by user and level of δ once (O(pairs) for the few levels the gains
take, a sort otherwise); each Γ then costs O(groups) for the bounds, and a product of the
resamples' counts with them for the confidence bound, over the resamples whose mean may still
cross 0 in the search's bracket: no loop over users or pairs. Γ* is the (1 − confidence) order
statistic of the resamples' own crossings of 0, so after one product at a few Γ the search
follows only the resamples that cross near it, a few dozen after its first interpolated step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from debiaseval.estimation.heldout import HeldOut, gains, member
from debiaseval.evaluation.uncertainty import significance
from debiaseval.io.markup import inert_markdown

__all__ = [
    "COMPARISONS_COLUMNS",
    "GAMMA_COLUMNS",
    "MAX_GAMMA",
    "SENSITIVITY_COLUMNS",
    "STAR_COLUMNS",
    "GammaStar",
    "Levels",
    "Resamples",
    "bounds",
    "gamma_cell",
    "gamma_sentence",
    "gamma_star",
    "gamma_star_over_seeds",
    "gamma_stars",
    "gamma_text",
    "percentile_rank",
    "sensitivity",
    "sensitivity_markdown",
    "sensitivity_over_seeds",
    "sensitivity_table",
]

MAX_GAMMA = 1000.0
"""The largest Γ the search of :func:`gamma_star` tries; beyond it Γ* is reported as inf."""

SENSITIVITY_COLUMNS = ["recommender", "estimator", "metric", "k", "gamma", "low", "high"]
"""Columns of :func:`sensitivity_table` (the workflow adds ``seed``)."""

_DENSE_CELLS = 1 << 25
_DRAW_CELLS = 1 << 20
"""Counts drawn at a time by :meth:`Resamples.draw` (float32 before they are kept as uint8:
4 MiB, which stay in cache while they are converted: half the time of 32 MiB blocks)."""
_LADDER = (1.0, 1.5, 3.0, 10.0, 50.0)
"""The Γ (from 1, with the largest Γ tried) at which :func:`_crossing` first evaluates every
resample, in one product: the rungs between which its search starts. Few rungs: each costs
about a third of a pass over the counts, and the search's interpolation needs no finer start
(at ML-20M's shape, three pairs: 5,630 resamples evaluated in all, against 19,393 from Γ = 1
and 1000 alone)."""
_PRODUCT_CELLS = 1 << 18
"""Counts multiplied at a time by :meth:`Resamples.sums` (1 MiB in float32: a block that stays
in cache between its conversion and its product)."""


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
    def both(
        cls, users: np.ndarray, w: np.ndarray, delta: np.ndarray, totals: np.ndarray
    ) -> tuple[Levels, Levels]:
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
            pairs_w = np.r_[
                w, totals[rest] - np.bincount(users, weights=w, minlength=n_users)[rest]
            ]
            pairs_d = np.r_[delta, np.zeros(rest.size)]
            return (
                cls.of(pairs_u, pairs_w, delta=pairs_d),
                cls.of(pairs_u, pairs_w, delta=-pairs_d),
            )
        keys = np.asarray(users, dtype=np.int64) * n_levels + inverse
        sums = np.bincount(keys, weights=w, minlength=n_users * n_levels).reshape(-1, n_levels)
        sums = sums.astype(np.float64, copy=False)  # no listed pair: bincount gives integers
        # the other pairs of each user, at δ = 0 (rounding kept from going below 0)
        sums[:, zero] += np.maximum(totals - sums.sum(axis=1), 0.0)
        out = []
        for order, values in ((slice(None, None, -1), distinct[::-1]), (slice(None), -distinct)):
            ordered = sums[:, order].ravel()
            present = np.flatnonzero(ordered)
            out.append(
                cls._grouped(present // n_levels, values[present % n_levels], ordered[present])
            )
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
        return cls(
            top_a,
            top_w,
            total_a[owner] - top_a,
            total_w[owner] - top_w,
            starts,
            total_a / total_w if a.size else a,
            group_user[starts],
        )

    def maximum(self, gamma: float) -> np.ndarray:
        """Per user of :attr:`users`: max over w* ∈ [w/Γ, Γw] of Σ δ w* / Σ w*: the best cut,
        Γw on the groups up to it and w/Γ after (or w/Γ everywhere: the plain ratio)."""
        if self.starts.size == 0:
            return self.base
        cut = (gamma * self.top_a + self.rest_a / gamma) / (
            gamma * self.top_w + self.rest_w / gamma
        )
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


@dataclass(frozen=True)
class Resamples:
    """Poisson bootstrap resamples of the users a SNIPS mean averages over (Hanley & MacGibbon
    2006; :func:`~debiaseval.evaluation.uncertainty.poisson_weights`): in each resample every
    user is drawn an independent Poisson(1) number of times n_u.

    Only :attr:`users`, those whose δ may differ from 0, keep their counts; the others' values
    are 0 in every mean, so they enter only the denominator Σ_u n_u, through the sum of their
    counts (:attr:`totals`)."""

    users: np.ndarray
    """The users whose counts are kept, ascending."""
    counts: np.ndarray
    """resamples × users: each user's count (uint8)."""
    totals: np.ndarray
    """Per resample: the sum of the counts of every user averaged over (float64)."""

    @classmethod
    def draw(
        cls, rng: np.random.Generator, resamples: int, users: np.ndarray, others: int = 0
    ) -> Resamples:
        """``resamples`` resamples of ``users`` and of ``others`` more users whose values are 0:
        the counts of ``users`` from ``rng`` (:func:`poisson_weights`, in blocks of rows: the
        same counts as one draw), then per resample the sum of the others' counts as one
        Poisson(``others``) variate (a sum of independent Poisson(1) counts)."""
        from debiaseval.evaluation.uncertainty import poisson_weights

        users = np.asarray(users)
        counts = np.empty((resamples, users.size), dtype=np.uint8)
        totals = np.empty(resamples)
        step = max(1, _DRAW_CELLS // max(users.size, 1))
        for start in range(0, resamples, step):
            block = poisson_weights(rng, min(step, resamples - start), users.size)
            counts[start : start + block.shape[0]] = block
            totals[start : start + block.shape[0]] = block.sum(axis=1, dtype=np.float64)
        totals += rng.poisson(float(others), resamples)
        return cls(users, counts, totals)

    @classmethod
    def identity(cls, users: np.ndarray) -> Resamples:
        """The sample itself as its only resample (every count 1): its mean is the estimate."""
        users = np.asarray(users)
        return cls(users, np.ones((1, users.size), dtype=np.uint8), np.array([float(users.size)]))

    def sums(self, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Per resample of ``rows``: Σ_u n_u · values_u over :attr:`users` (float64; ``values``
        users × columns gives rows × columns): float32 products of the counts of a block of
        users at a time, summed in float64, on one BLAS thread (the bytes do not depend on the
        job's threads). Blocks of users, not of resamples: every product then has all the
        rows, which several columns need to run at speed."""
        v = np.asarray(values, dtype=np.float32)
        out = np.zeros((rows.size, *v.shape[1:]))
        width = max(64, _PRODUCT_CELLS // max(rows.size, 1))
        every = rows.size == self.counts.shape[0]  # all the rows, in order: no gather
        for start in range(0, v.shape[0], width):
            part = slice(start, start + width)
            block = self.counts[:, part] if every else self.counts[rows, part]
            out += block.astype(np.float32) @ v[part]
        return out


class GammaStar(NamedTuple):
    """Γ* of a paired difference and the side it protects."""

    gamma: float
    """Γ* (1: not above 0 even at Γ = 1; inf: above 0 up to :data:`MAX_GAMMA`; NaN: no
    resample)."""
    leader: int
    """+1 when the estimate of the mean of δ = c_A − c_B is positive (A ahead), −1 when
    negative (B ahead), 0 when it is 0 (no side, Γ* = 1)."""


def gamma_star(
    users: np.ndarray,
    delta: np.ndarray,
    w: np.ndarray,
    *,
    draws: Resamples | None = None,
    confidence: float = 0.95,
    tol: float = 1e-5,
    max_gamma: float = MAX_GAMMA,
) -> GammaStar:
    """Γ* of the mean over users of Σ δ w / Σ w, for the side of the estimate's sign.

    With ``draws`` (:class:`Resamples` of the users, every user with some δ ≠ 0 among its
    :attr:`~Resamples.users`), the sampling-aware Γ* of Zhao, Small & Bhattacharya (2019): the
    smallest Γ at which the (1 − ``confidence``) percentile over the resamples of the lower bound of
    the mean reaches 0, a one-sided lower confidence bound at ``confidence``. Without, the point
    estimate's Γ*: the smallest Γ at which the bound itself reaches 0. By a search on log Γ
    (:func:`_crossing`) to a relative ``tol``, up to ``max_gamma`` (inf beyond)."""
    up, down = Levels.of(users, w, delta=delta), Levels.of(users, w, delta=-delta)
    draws = Resamples.identity(up.users) if draws is None else draws
    return _directional(up, down, draws, confidence=confidence, tol=tol, max_gamma=max_gamma)


def _directional(up: Levels, down: Levels, draws: Resamples, **options: float) -> GammaStar:
    """Γ* for the leader: from (:class:`Levels` of δ, of −δ) over the same users, the side of
    the estimate's sign (:func:`_crossing` of −δ for a positive estimate, of δ otherwise)."""
    estimate = float(np.mean(up.base)) if up.users.size else 0.0
    if estimate == 0 or not np.isfinite(estimate):
        return GammaStar(1.0, 0)
    return GammaStar(
        _crossing(down if estimate > 0 else up, draws, **options), 1 if estimate > 0 else -1
    )


def percentile_rank(n: int, confidence: float) -> int:
    """Which of ``n`` resampled values, counted from the smallest, is their (1 − ``confidence``)
    percentile: the ⌈(1 − confidence) n⌉-th, the B·α-th ordered value of Efron & Tibshirani's
    percentile interval (1993, §13.3; numpy's ``inverted_cdf``), at least the first, with
    1 − confidence as :func:`~debiaseval.evaluation.uncertainty.significance` rounds it."""
    alpha = significance(confidence)
    return int(np.quantile(np.arange(n), alpha, method="inverted_cdf")) + 1


def _crossing(
    down: Levels, draws: Resamples, *, confidence: float, tol: float, max_gamma: float
) -> float:
    """The smallest Γ at which the (1 − ``confidence``) percentile (:func:`percentile_rank`) over
    ``draws`` of the mean of the per-user lower bounds lb_u(Γ) = −``down``.maximum(Γ) is ≤ 0.

    Each resample's mean Σ_u n_u lb_u(Γ) / Σ_u n_u falls as Γ grows (the boxes are nested), so
    the percentile is ≤ 0 once ``rank`` of the means are: Γ* is the ``rank``-th smallest of
    the resamples' own crossings of 0. Every resample is first evaluated at the rungs of
    :data:`_LADDER` and ``max_gamma`` (one product), which settle Γ* = 1 and inf and bracket
    Γ* between two rungs; the search on log Γ (:class:`_Bracket`) then follows only the
    resamples that cross inside the bracket. NaN without a resample that draws a user."""
    at = np.searchsorted(down.users, draws.users)
    rows = np.flatnonzero(draws.totals > 0)
    if rows.size == 0:
        return np.nan
    rank = percentile_rank(rows.size, confidence)
    ladder = np.log([*(g for g in _LADDER if g < max_gamma), max_gamma])
    from threadpoolctl import threadpool_limits

    def margins(log_gammas: float | np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Per resample of ``rows`` (and Γ of ``log_gammas``): −Σ_u n_u lb_u(Γ), ≥ 0 once its
        mean has reached 0."""
        gammas = np.exp(np.atleast_1d(log_gammas))
        values = np.stack([down.maximum(float(g))[at] for g in gammas], axis=-1)
        return draws.sums(rows, values if np.ndim(log_gammas) else values[:, 0])

    with threadpool_limits(limits=1, user_api="blas"):
        values = margins(ladder, rows)
        rungs = values >= 0
        reached = np.flatnonzero(np.count_nonzero(rungs, axis=0) >= rank)
        if reached.size == 0:
            return np.inf
        if reached[0] == 0:
            return 1.0
        top = int(reached[0])
        inside = ~rungs[:, top - 1] & rungs[:, top]
        bracket = _Bracket(
            float(ladder[top - 1]),
            float(ladder[top]),
            rows[inside],
            values[inside, top - 1],
            values[inside, top],
            int(np.count_nonzero(rungs[:, top - 1])),
        )
        while bracket.high - bracket.low > tol:
            bracket.cut(bracket.probe(rank, tol), margins, rank)
    return float(np.exp(bracket.high))


@dataclass
class _Bracket:
    """The search of :func:`_crossing`: Γ* lies in [exp(low), exp(high)]; ``rows`` are the
    resamples whose mean crosses 0 inside, with their margins (≥ 0 once crossed) at ``low``
    (``at_low`` < 0) and ``high`` (``at_high`` ≥ 0); ``below`` resamples have crossed by
    ``low``. ``interpolate``: whether the next probe is interpolated (else the midpoint);
    ``lowered``: whether the last probe moved ``high``."""

    low: float
    high: float
    rows: np.ndarray
    at_low: np.ndarray
    at_high: np.ndarray
    below: int
    interpolate: bool = True
    lowered: bool = False

    def probe(self, rank: int, tol: float) -> float:
        """Where to look next, from each open resample's crossing estimated by interpolating
        its margin linearly in log Γ between the ends; ``need`` = rank − ``below`` is the rank
        of Γ* among them. While many cross in the bracket, just past the estimated (4 · need)-th
        crossing, so that the next bracket keeps about that many resamples; then at the
        estimated need-th crossing, a step of tol / 2 towards the end that did not move last
        (Brent's tolerance step, so that the bracket closes from both sides); and after an
        interpolated probe that halved neither the bracket nor its resamples, the midpoint."""
        need, width = rank - self.below, self.high - self.low
        if not self.interpolate:
            return self.low + width / 2
        guess = self.low + width * -self.at_low / (self.at_high - self.at_low)
        if self.rows.size > 4 * need + 16:
            aim = float(np.partition(guess, 4 * need)[4 * need])
        else:
            aim = float(np.partition(guess, need - 1)[need - 1])
            aim += -tol / 2 if self.lowered else tol / 2
        return min(max(aim, self.low + width / 64), self.high - width / 64)

    def cut(self, at: float, margins: Callable[[float, np.ndarray], np.ndarray], rank: int) -> None:
        """Narrow the bracket to the side of ``at`` where the percentile reaches 0, from the
        ``margins`` of the open resamples there."""
        value = margins(at, self.rows)
        hit, size, width = value >= 0, self.rows.size, self.high - self.low
        self.lowered = self.below + int(np.count_nonzero(hit)) >= rank
        if self.lowered:  # reached by ``at``: [low, at]
            keep = hit
            self.high, self.at_low, self.at_high = at, self.at_low[keep], value[keep]
        else:  # not yet: [at, high]
            keep = ~hit
            self.below += int(np.count_nonzero(hit))
            self.low, self.at_low, self.at_high = at, value[keep], self.at_high[keep]
        self.rows = self.rows[keep]
        halved = 2 * self.rows.size <= size or 2 * (self.high - self.low) <= width
        self.interpolate = not self.interpolate or halved


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


STAR_COLUMNS = ["gamma_star", "leader"]
"""Columns of :func:`sensitivity`'s Γ* of a seed: one row per pair of recommenders, ``leader``
as :attr:`GammaStar.leader` (int8)."""


def sensitivity(
    held: HeldOut,
    ranks: Mapping[str, np.ndarray],
    *,
    estimator: str,
    blocks: Sequence[tuple[str, int]],
    gammas: Sequence[float],
    resamples: int = 0,
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One SNIPS estimator's sensitivity in a seed: the bounds of every recommender's mean
    estimate at each Γ of ``gammas`` (:data:`SENSITIVITY_COLUMNS`) and Γ* of every two
    recommenders (:data:`STAR_COLUMNS`, in the order of
    :func:`~debiaseval.evaluation.uncertainty.compare_recommenders`: block by block, then the
    pairs (a, b) with a before b in ``ranks``), for the side the estimate of a − b takes, with
    sampling error: the lower confidence bound at ``confidence`` from ``resamples`` Poisson
    resamples of the averaged users drawn from ``rng`` (:class:`Resamples`, one draw for every
    block and pair; Γ* NaN and no leader without resamples). ``ranks``: recommender -> the
    held-out pairs' ranks. Only the pairs a list ranks in its top k are grouped, and only the
    users with such a pair keep their counts: every other positive pair has gain 0."""
    pos = _Positives(held)
    names = list(ranks)
    draws = _draws(pos, ranks, blocks, resamples, rng) if len(names) > 1 else None
    rows, stars = [], []
    for metric, k in blocks:
        listed = {rec: pos.listed(ranks[rec], k) for rec in names}
        for rec in names:
            c = gains(metric, ranks[rec][pos.at[listed[rec]]], k)
            levels = Levels.both(pos.users[listed[rec]], pos.w[listed[rec]], c, pos.totals)
            for gamma in gammas:
                _, low, high = bounds(pos.users, None, pos.w, float(gamma), levels)
                rows.append(
                    (rec, estimator, metric, k, float(gamma), float(low.mean()), float(high.mean()))
                )
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                if draws is None:
                    stars.append(GammaStar(np.nan, 0))
                    continue
                either = np.union1d(listed[names[a]], listed[names[b]])
                at = pos.at[either]
                delta = gains(metric, ranks[names[a]][at], k) - gains(
                    metric, ranks[names[b]][at], k
                )
                up, down = Levels.both(pos.users[either], pos.w[either], delta, pos.totals)
                stars.append(
                    _directional(
                        up, down, draws, confidence=confidence, tol=1e-5, max_gamma=MAX_GAMMA
                    )
                )
    table = pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS).astype({"k": np.int16})
    star = pd.DataFrame(stars, columns=STAR_COLUMNS).astype(
        {"gamma_star": np.float64, "leader": np.int8}
    )
    return table, star


def _draws(
    pos: _Positives,
    ranks: Mapping[str, np.ndarray],
    blocks: Sequence[tuple[str, int]],
    resamples: int,
    rng: np.random.Generator | None,
) -> Resamples | None:
    """The resamples of the users ``pos`` averages over: counts kept for the users with a
    pair some list ranks within the largest k of ``blocks`` (None without resamples)."""
    if not resamples or rng is None or not blocks:
        return None
    depth = max(k for _, k in blocks)
    listed = np.concatenate([pos.listed(rank, depth) for rank in ranks.values()])
    kept = np.unique(pos.users[listed])
    return Resamples.draw(rng, resamples, kept, int(np.count_nonzero(pos.totals)) - kept.size)


def sensitivity_table(
    held: HeldOut, ranks: Mapping[str, np.ndarray], **options: Any
) -> pd.DataFrame:
    """The bounds of :func:`sensitivity` alone (``options``: its ``estimator``, ``blocks`` and
    ``gammas``)."""
    return sensitivity(held, ranks, **options)[0]


def gamma_stars(
    held: HeldOut,
    ranks: Mapping[str, np.ndarray],
    *,
    blocks: Sequence[tuple[str, int]],
    **options: Any,
) -> pd.DataFrame:
    """Γ* of :func:`sensitivity` alone (``options``: its ``resamples``, ``rng`` and
    ``confidence``)."""
    return sensitivity(held, ranks, estimator="", blocks=blocks, gammas=(), **options)[1]


COMPARISONS_COLUMNS = [
    "testset",
    "metric",
    "k",
    "recommender_a",
    "recommender_b",
    "n_seeds",
    "mean_diff",
    "n_a_better",
    "n_b_better",
    "max_p_holm",
    "gamma_star",
    "gamma_leader",
]
"""Columns of ``comparisons.parquet``: per test set, metric, k and two recommenders, how many
seeds find a (Holm-adjusted) significant difference each way, and, for a SNIPS row, the median
over seeds of Γ*, the factor by which its propensities must be wrong before the lower
confidence bound of the difference reaches 0 (inf: beyond :data:`MAX_GAMMA`), and
``gamma_leader``, the recommender whose lead it protects."""

GAMMA_COLUMNS = ["gamma_star", "gamma_leader"]
"""The Γ* columns of a seed's and of the aggregate ``comparisons.parquet``."""


def gamma_star_over_seeds(seeds: pd.DataFrame, agreement: pd.DataFrame) -> pd.DataFrame:
    """Per row of ``agreement`` (:func:`~debiaseval.evaluation.uncertainty.agreement_over_seeds`
    of the seeds' comparisons ``seeds``, which carry :data:`GAMMA_COLUMNS`), on its index:
    ``gamma_leader``, the recommender ahead by the sign of the mean difference over seeds, and
    ``gamma_star``, the median over seeds of Γ* for that leader (a seed whose leader is the
    other one, or none, counts as Γ* = 1, and so does every seed when the mean difference is 0,
    which leaves no leader; inf is kept, as the most robust value). NaN where no seed has a Γ*
    (rows that are not SNIPS); the leader is missing there and where the mean difference is
    0."""
    keys = ["testset", "metric", "k", "recommender_a", "recommender_b"]
    out = pd.DataFrame({"gamma_star": np.nan, "gamma_leader": None}, index=agreement.index)
    if "gamma_star" not in seeds or agreement.empty:
        return out
    diff = agreement["mean_diff"].to_numpy(dtype=np.float64)
    leader = np.where(
        diff > 0,
        agreement["recommender_a"].to_numpy(),
        np.where(diff < 0, agreement["recommender_b"].to_numpy(), None),
    )
    frame = seeds[[*keys, *GAMMA_COLUMNS]].merge(agreement[keys].assign(overall=leader), on=keys)
    frame = frame[frame["gamma_star"].notna()]
    agrees = (frame["gamma_leader"] == frame["overall"]).to_numpy()
    frame = frame.assign(star=np.where(agrees, frame["gamma_star"].to_numpy(), 1.0))
    median = frame.groupby(keys, sort=False, observed=True)["star"].median()
    out["gamma_star"] = median.reindex(pd.MultiIndex.from_frame(agreement[keys])).to_numpy(
        dtype=np.float64
    )
    out["gamma_leader"] = np.where(out["gamma_star"].notna(), leader, None)
    return out


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
    out = out.merge(
        means[["recommender", "estimator", "metric", "k", "estimate"]],
        on=["recommender", "estimator", "metric", "k"],
        how="left",
    )
    return out[columns].astype({"k": np.int16})


def gamma_text(gamma: float) -> str:
    """Γ* as the tables print it: ∞ for inf, two decimals otherwise, "" for NaN (no Γ*)."""
    if np.isnan(gamma):
        return ""
    return "∞" if np.isinf(gamma) else f"{round(float(gamma), 2):.2f}"


def gamma_cell(gamma: float, leader: str | None) -> str:
    """A table's Γ* cell: :func:`gamma_text`, with the recommender ahead in parentheses when Γ*
    exceeds 1 (at 1 the difference is not significant: no one is ahead)."""
    text = gamma_text(gamma)
    return f"{text} ({leader} ahead)" if text and leader and gamma > 1 else text


def gamma_sentence(
    gamma: float, a: str, b: str, leader: str | None, *, name: Callable[[str], str] = str
) -> str:
    """What Γ* says of two recommenders ``a`` and ``b`` when ``leader`` (one of them) is ahead,
    their names printed by ``name`` (e.g. made inert): "A above B unless the propensities are
    wrong by more than a factor Γ*" (Γ* to three significant digits), "even if they are wrong
    by a factor 1000 (Γ* = ∞)" for ∞, "not significantly (Γ* = 1)" for 1; that neither is
    ahead without a leader (a mean difference of 0); "" for NaN (no Γ*)."""
    if np.isnan(gamma):
        return ""
    if leader not in (a, b):
        return f"neither {name(a)} nor {name(b)} is ahead (a mean difference of 0)"
    ahead, other = (name(a), name(b)) if leader == a else (name(b), name(a))
    if np.isinf(gamma):
        return (
            f"{ahead} above {other} even if the propensities are wrong by a factor "
            f"{MAX_GAMMA:g} (Γ* = ∞)"
        )
    if gamma <= 1:
        return f"{ahead} above {other} by the estimate, not significantly (Γ* = 1)"
    digits = max(0, 2 - int(np.floor(np.log10(gamma))))
    return (
        f"{ahead} above {other} unless the propensities are wrong by more than a factor "
        f"{round(float(gamma), digits):.{digits}f}"
    )


def sensitivity_markdown(
    bounds: pd.DataFrame, comparisons: pd.DataFrame, dataset: str, *, confidence: float = 0.95
) -> str:
    """``sensitivity.md``: per SNIPS estimator and (metric, k), each recommender's estimate and
    its bounds at every Γ, then Γ* of every pair of recommenders with the sentence that names
    the one ahead (:func:`gamma_sentence`; ∞ printed, never left out)."""
    parts = [
        f"# E1 on {dataset}: sensitivity of SNIPS to wrong propensities\n\n"
        "If every true weight may lie anywhere within a factor Γ of the one used "
        "(w/Γ ≤ w* ≤ Γw), each recommender's SNIPS estimate lies within the bounds below "
        "(the means over seeds of the sharp per-user bounds). Γ* of two recommenders is the "
        "factor the propensities must be wrong by before the difference is no longer "
        f"significant: the smallest Γ at which the one-sided {confidence:.0%} lower confidence "
        "bound of the lower bound of their mean difference (the percentile bootstrap over "
        "users, Zhao, Small & Bhattacharya 2019) reaches 0, for the recommender ahead. It "
        "includes sampling error, so it is smaller than the factor that flips the estimate's "
        f"sign. Median over seeds; ∞: no Γ up to {MAX_GAMMA:g} reaches 0; 1: not significant "
        "even with these propensities; none without bootstrap resamples "
        "(e1.bootstrap.resamples = 0).\n"
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
            mine = stars[
                (stars["testset"] == estimator) & (stars["metric"] == metric) & (stars["k"] == k)
            ]
            if len(mine):
                parts.append("\n" + _pair_lines(mine) + "\n")
    return "".join(parts)


def _pair_lines(stars: pd.DataFrame) -> str:
    """The pairs' table of :func:`sensitivity_markdown`: A, B, the mean difference, Γ* and the
    sentence that names the recommender ahead (:func:`gamma_sentence`)."""
    lines = ["| A | B | mean A − B | Γ* | reading |", "|---|---|---|---|---|"]
    columns = ["recommender_a", "recommender_b", "mean_diff", "gamma_star", "gamma_leader"]
    for a, b, d, g, leader in stars.reindex(columns=columns).itertuples(index=False):
        reading = gamma_sentence(g, a, b, leader, name=inert_markdown)
        lines.append(
            f"| {inert_markdown(a)} | {inert_markdown(b)} | {d:+.4f} | {gamma_text(g)} "
            f"| {reading} |"
        )
    return "\n".join(lines)
