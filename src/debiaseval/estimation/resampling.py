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

from dataclasses import dataclass

import numpy as np

__all__ = ["DRAWS", "MIN_SCOREBOARD_SEEDS", "ResamplingPlan", "percentile_interval"]

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
        cls, n_seeds: int, *, draws: str, resamples: int, user_resamples: int,
        rng: np.random.Generator,
    ) -> ResamplingPlan:  # fmt: skip
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


def percentile_interval(
    draws: np.ndarray, level: float, *, intervals: bool = True
) -> tuple[float, float, float]:
    """(point, low, high) from a statistic under every resample (row 0 the observed): the
    percentile interval at ``level`` over the finite resamples; no interval (NaN) when the
    point is not finite, nothing was resampled, or ``intervals`` is false."""
    point, rest = float(draws[0]), draws[1:]
    rest = rest[np.isfinite(rest)]
    if not intervals or not np.isfinite(point) or rest.size == 0:
        return point, np.nan, np.nan
    low, high = np.quantile(rest, [0.5 - level / 2, 0.5 + level / 2])
    return point, float(low), float(high)
