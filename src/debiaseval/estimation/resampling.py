"""What the estimator arena resamples, so that its intervals hold for a new study
(docs/estimators.md, What varies).

A verdict about estimators is a claim about the process that generates the data. Where each
seed draws its own data (``synthetic`` with ``per_seed``: :mod:`debiaseval.data.draws`), the
seeds are independent draws of the whole process and a bootstrap over seeds is valid: the plan
resamples seeds alone (``independent``). Where every seed re-splits one fixed dataset (real
data: one MNAR log, one MAR sample), seeds measure only the split's variability; the plan is a
two-level bootstrap (``fixed``): seeds resampled, and with them the users, once for all seeds
(replicate r of :func:`~debiaseval.estimation.seed_scores.common_means` counts every user alike
in every seed, so a difference keeps its pairing across rows, the truth and seeds). Intervals
are then conditional on the one MAR sample's items.

Below :data:`MIN_SCOREBOARD_SEEDS` seeds a percentile bootstrap over seeds has too few
distinct resamples to mean anything (with 2 seeds it covers a fresh study's value about half
the time): the scoreboard then gives no interval, no "significant" and no best row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "DRAWS",
    "MIN_SCOREBOARD_SEEDS",
    "ResamplingPlan",
    "noise_shift",
    "percentile_interval",
    "seed_cube",
]

DRAWS = ("independent", "fixed")
"""How the seeds' data relate: each seed its own draw, or one dataset re-split by every seed."""

MIN_SCOREBOARD_SEEDS = 5
"""The fewest seeds from which the scoreboard gives intervals and names a best row."""


@dataclass(frozen=True)
class ResamplingPlan:
    """The resamples of one scoreboard: ``counts`` ((1 + B) × seeds, row 0 the observed seeds,
    all 1) and ``replicate`` (1 + B; 0 the observed means, r > 0 the users' resample r − 1),
    shared by every row, so that the difference of two rows' statistics under each resample
    gives the interval of their difference."""

    counts: np.ndarray
    replicate: np.ndarray
    draws: str
    n_seeds: int

    @classmethod
    def of(
        cls,
        n_seeds: int,
        *,
        draws: str,
        resamples: int,
        user_resamples: int,
        rng: np.random.Generator,
    ) -> ResamplingPlan:
        """``resamples`` multinomial resamples of ``n_seeds`` seeds from ``rng``; with
        ``draws="fixed"`` each also takes a user resample, cycling through the
        ``user_resamples`` the seeds share (none: seeds alone)."""
        if draws not in DRAWS:
            raise ValueError(f"draws must be one of {DRAWS}, got {draws!r}")
        n = max(n_seeds, 1)
        seeds = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)
        counts = np.vstack([np.ones((1, n)), seeds]).astype(np.float64)
        replicate = np.zeros(resamples + 1, dtype=np.int64)
        if draws == "fixed" and user_resamples > 0:
            replicate[1:] = 1 + np.arange(resamples) % user_resamples
        return cls(counts, replicate, draws, n_seeds)

    def seeds_only(self) -> ResamplingPlan:
        """The same seed resamples without the users' resamples (every replicate the observed
        means): what the users' level adds is the difference of the two."""
        return ResamplingPlan(self.counts, np.zeros_like(self.replicate), self.draws, self.n_seeds)

    def tail(self, confidence: float) -> float:
        """The tail probability of the expanded percentile interval at ``confidence`` (Hesterberg,
        *What teachers should know about the bootstrap*, The American Statistician 69(4),
        2015, §4.2): a percentile interval over n resampled seeds is too narrow by the
        factor √((n − 1)/n) and by z against Student's t; the expanded one takes the
        quantiles at Φ(−√(n/(n−1)) · t_{n−1, (1+confidence)/2}) instead of (1 − confidence)/2,
        so that with 10 seeds a 95% interval spans the 0.9% and 99.1% quantiles."""
        from scipy.special import ndtr, stdtrit

        n = self.n_seeds
        if n < 2:
            return (1 - confidence) / 2
        return float(ndtr(-np.sqrt(n / (n - 1)) * stdtrit(n - 1, (1 + confidence) / 2)))

    @property
    def gives_intervals(self) -> bool:
        """Whether there are seeds enough for an interval (:data:`MIN_SCOREBOARD_SEEDS`)."""
        return self.n_seeds >= MIN_SCOREBOARD_SEEDS

    def ratio(self, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        """Σ_s c_s num[s, r] / Σ_s c_s den[s, r] under every resample (``num``, ``den``: seeds ×
        (1 + user resamples), NaN-free; den > 0 where a seed counts), NaN where nothing
        counts."""
        at = self.replicate
        top = np.einsum("bs,bs->b", self.counts, num[:, at].T)
        bottom = np.einsum("bs,bs->b", self.counts, den[:, at].T)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(bottom > 0, top / bottom, np.nan)


def seed_cube(
    observed: pd.DataFrame,
    replicates: pd.DataFrame,
    column: str,
    *,
    seeds: np.ndarray,
    recommenders: Sequence[str],
    n_replicates: int,
) -> np.ndarray:
    """``column`` as seeds × (1 + ``n_replicates``) × ``recommenders``, the layout
    :meth:`ResamplingPlan.ratio` resamples: slot 0 the observed means (``observed``: seed,
    recommender, ``column``), slot r + 1 the users' resample r (``replicates``: seed, replicate,
    recommender, ``column``); NaN where absent. Rows of other seeds, recommenders or
    replicates are left out."""
    out = np.full((len(seeds), 1 + n_replicates, len(recommenders)), np.nan)
    seed_at, rec_at = pd.Index(seeds), pd.Index(recommenders)
    slots = (
        np.zeros(len(observed), dtype=np.int64),
        1 + replicates["replicate"].to_numpy(dtype=np.int64) if len(replicates) else None,
    )
    for frame, at in zip((observed, replicates), slots, strict=True):
        if at is None:
            continue
        s, r = seed_at.get_indexer(frame["seed"]), rec_at.get_indexer(frame["recommender"])
        keep = (s >= 0) & (r >= 0) & (at <= n_replicates)
        out[s[keep], at[keep], r[keep]] = frame[column].to_numpy(dtype=np.float64)[keep]
    return out


def percentile_interval(
    draws: np.ndarray,
    confidence: float,
    *,
    intervals: bool = True,
    tail: float | None = None,
    shift: float = 0.0,
    bounds: tuple[float, float] = (-np.inf, np.inf),
) -> tuple[float, float, float]:
    """(point, low, high) from a statistic under every resample (row 0 the observed): the
    percentile interval at ``confidence`` over the finite resamples (the ``tail`` and 1 − ``tail``
    quantiles, by default (1 − confidence)/2: :meth:`ResamplingPlan.tail` expands it for few
    seeds), less ``shift`` and cut to the statistic's ``bounds``; no interval (NaN) when the
    point is not finite, nothing was resampled, or ``intervals`` is false.

    ``shift`` is what a second dose of noise moves the statistic by (:func:`noise_shift`)."""
    point, rest = float(draws[0]), draws[1:]
    rest = rest[np.isfinite(rest)]
    if not intervals or not np.isfinite(point) or rest.size == 0:
        return point, np.nan, np.nan
    tail = (1 - confidence) / 2 if tail is None else tail
    low, high = np.quantile(rest, [tail, 1 - tail]) - shift
    low, high = np.clip([low, high], *bounds)
    return point, float(low), float(high)


def noise_shift(two_level: np.ndarray, seeds_only: np.ndarray) -> float:
    """How far the users' resamples move a statistic beyond the seeds' resamples alone: the
    median over resamples of (two-level − seeds only), the same seed counts in both.

    A user resample adds the users' sampling noise once more to a statistic that already holds
    it: a squared error (RMSE) grows and a rank agreement (τ) shrinks in every resample, by
    about that noise, and the plain percentile interval would describe a study with twice the
    noise. Subtracting the median shift (the bootstrap's bias estimate, Efron & Tibshirani
    1993, §10.6, of the users' level alone) keeps the spread and removes the second dose; the
    seeds' own skew (one outlying seed) is left as it is. A mean (bias, a difference in
    truth) moves by 0."""
    moved = (two_level - seeds_only)[1:]
    moved = moved[np.isfinite(moved)]
    return float(np.median(moved)) if moved.size else 0.0
