"""A time axis for the ``synthetic`` dataset with simulated recommendation campaigns ([MYT14]).

[MYT14] A. de Myttenaere, B. Golden, B. Le Grand, F. Rossi, *Reducing offline
evaluation bias in recommendation systems* (Benelearn 2014): a live system's own
recommendations raise the observation rate of the items it pushes, so the item
marginal of the logs drifts and offline scores drift with it.

The simulation keeps the truth of :func:`~debiaseval.data.synthetic.generate_synthetic`
(ratings and propensities P(u, i), unchanged) and spreads observations over
periods 0..T−1: a pair not yet observed is observed in period t with hazard
h = 1 − (1 − P)^(1/T), so that without campaigns it is observed by the end with
probability P, as in the static dataset. From period 1 on (after t0) the
campaign multiplies the hazard of the boosted items by ``boost`` (capped at 1).
The effect on the item marginal is known by construction: boosted items gain
share after t0, the others lose it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["CampaignLog", "simulate_campaigns"]


@dataclass(frozen=True)
class CampaignLog:
    """Time-stamped interactions of a campaign simulation and the items it boosted."""

    interactions: pd.DataFrame
    """``user``, ``item`` (int32), ``rating`` (float32), ``timestamp`` (int64, the period)."""
    boosted: np.ndarray
    """Sorted ids of the boosted items (int64)."""


def simulate_campaigns(
    ratings: np.ndarray,
    propensities: np.ndarray,
    *,
    n_periods: int,
    n_boosted: int,
    boost: float,
    rng: np.random.Generator,
) -> CampaignLog:
    """Observe the pairs of a full truth period by period, boosting items after t0.

    ``ratings`` and ``propensities`` are the n_users × n_items truth of a
    :class:`~debiaseval.data.synthetic.SyntheticData`; ``n_boosted`` items
    are drawn uniformly without replacement from ``rng``, then one uniform per
    pair and period decides the observations (module docstring). Rows are
    sorted by period, user, item.
    """
    y = np.asarray(ratings)
    prop = np.asarray(propensities, dtype=np.float64)
    if y.ndim != 2 or y.shape != prop.shape:
        raise ValueError(
            f"ratings and propensities must be 2-D of one shape, got {y.shape}, {prop.shape}"
        )
    if not np.all((prop >= 0) & (prop <= 1)):
        raise ValueError("propensities must lie in [0, 1]")
    n_users, n_items = y.shape
    if isinstance(n_periods, bool) or not isinstance(n_periods, int) or n_periods < 2:
        raise ValueError(
            f"n_periods must be an int >= 2 (t0 and at least one later time), got {n_periods!r}"
        )
    if (
        isinstance(n_boosted, bool)
        or not isinstance(n_boosted, int)
        or not 0 <= n_boosted <= n_items
    ):
        raise ValueError(f"n_boosted must be an int in [0, {n_items}], got {n_boosted!r}")
    if not (np.isfinite(boost) and boost >= 0):
        raise ValueError(f"boost must be finite and >= 0, got {boost!r}")

    boosted = np.sort(rng.choice(n_items, size=n_boosted, replace=False)).astype(np.int64)
    base = -np.expm1(np.log1p(-np.minimum(prop, 1 - 1e-12)) / n_periods)
    hazard = base.copy()  # from period 1 on: the campaign's boosted hazards
    hazard[:, boosted] = np.minimum(1.0, boost * base[:, boosted])
    when = np.full((n_users, n_items), -1, dtype=np.int64)
    for period in range(n_periods):
        h = base if period == 0 else hazard
        fire = (when < 0) & (rng.random((n_users, n_items)) < h)
        when[fire] = period
    users, items = np.nonzero(when >= 0)
    frame = pd.DataFrame(
        {
            "user": users.astype(np.int32),
            "item": items.astype(np.int32),
            "rating": y[users, items].astype(np.float32),
            "timestamp": when[users, items],
        }
    )
    frame = frame.sort_values(["timestamp", "user", "item"], kind="stable").reset_index(drop=True)
    return CampaignLog(frame, boosted)
