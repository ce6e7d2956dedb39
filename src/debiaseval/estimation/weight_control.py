"""Weight control of the doubly robust estimator's correction (docs/estimators.md).

A few held-out pairs of weight 1/P in the hundreds dominate DR's correction term. Each
control replaces w by ŵ in it, trading that variance for a bias the imputation bounds:

- ``clip``: ŵ = min(w, λ) (Ionides 2008; as Saito's and OBP's clipped DR);
- ``shrink``: ŵ = λw / (w² + λ), the optimistic shrinkage of DRos (Su, Dimakopoulou,
  Krishnamurthy & Dudík, *Doubly robust off-policy evaluation with shrinkage*, ICML 2020,
  eq. 9): close to w where w² ≪ λ, decaying as λ/w above √λ;
- ``switch``: ŵ = w·1[w ≤ τ], Switch-DR (Wang, Agarwal & Dudík, *Optimal and adaptive
  off-policy evaluation in contextual bandits*, ICML 2017): the direct method alone where
  the weight exceeds τ;
- ``none``: ŵ = w.

λ (or τ) is the config's ``value``, or the weights' ``quantile`` (for ``shrink`` its square), or,
when both are null, chosen from the data by
:func:`choose` over :func:`candidates`: the value minimising :func:`estimated_mse`, the
variance of the mean over users plus the squared bias the control adds, estimated signed with
its standard error (Su, Dimakopoulou, Krishnamurthy & Dudík 2020, §5): the control changes the
estimate by exactly the mean over users of its per-user changes, whose expectation is the
control's bias when the weights are right. A bias bound without its sign (Wang et al. 2017,
§4.2) cancels nothing and outgrows the variance it saves, so it almost never chose a control.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONTROLS",
    "QUANTILES",
    "WeightControl",
    "candidates",
    "choose",
    "controlled",
    "estimated_mse",
]

CONTROLS: tuple[str, ...] = ("none", "clip", "shrink", "switch")
"""The weight controls of DR's correction."""

QUANTILES: tuple[float, ...] = (0.5, 0.75, 0.9, 0.95, 0.99, 0.999)
"""Quantiles of the weights at which the data-driven choice tries a threshold (besides none)."""


@dataclass(frozen=True)
class WeightControl:
    """A control ``method`` of :data:`CONTROLS` at a fixed ``value`` (λ or τ), at a fixed
    ``quantile`` of the weights, or chosen from the data (both None)."""

    method: str = "none"
    value: float | None = None
    quantile: float | None = None

    def __post_init__(self) -> None:
        if self.method not in CONTROLS:
            raise ValueError(f"unknown weight control {self.method!r}; known: {CONTROLS}")
        if self.value is not None and not (np.isfinite(self.value) and self.value > 0):
            raise ValueError(f"a weight control's value must be positive, got {self.value}")
        if self.quantile is not None and not 0 < self.quantile < 1:
            raise ValueError(f"a weight control's quantile must be in (0, 1), got {self.quantile}")
        if self.value is not None and self.quantile is not None:
            raise ValueError("a weight control takes a value or a quantile, not both")


def controlled(w: np.ndarray, method: str, value: float) -> np.ndarray:
    """ŵ of ``w`` under ``method`` at threshold ``value`` (λ or τ; inf = no control)."""
    w = np.asarray(w, dtype=np.float64)
    if method == "none" or np.isinf(value):
        return w
    if method == "clip":
        return np.minimum(w, value)
    if method == "shrink":
        return value * w / (w * w + value)
    if method == "switch":
        return np.where(w <= value, w, 0.0)
    raise ValueError(f"unknown weight control {method!r}; known: {CONTROLS}")


def candidates(control: WeightControl, w: np.ndarray) -> np.ndarray:
    """The thresholds the choice tries, ascending, the last one ``inf`` (no control).

    A given ``value`` is the only candidate, and so is a given ``quantile`` of ``w``. Otherwise
    the :data:`QUANTILES` of ``w``, then ``inf``. For ``shrink`` a quantile enters squared, so
    that ŵ ≈ w below it and the largest ŵ, √λ/2, is half of it.
    """
    if control.method == "none":
        return np.array([np.inf])
    if control.value is not None:
        return np.array([float(control.value)])
    w = np.asarray(w, dtype=np.float64)
    if control.quantile is not None:
        q = float(np.quantile(w, control.quantile)) if w.size else np.inf
        return np.array([q * q if control.method == "shrink" else q])
    q = np.unique(np.quantile(w, QUANTILES)) if w.size else np.empty(0)
    q = q[q > 0]
    if control.method == "shrink":
        q = q * q
    return np.concatenate([q, [np.inf]])


def choose(mse: np.ndarray) -> int:
    """The index of the smallest estimated MSE; on a tie, the least control (the latest)."""
    m = np.asarray(mse, dtype=np.float64)
    m = np.where(np.isfinite(m), m, np.inf)
    return int(m.size - 1 - np.argmin(m[::-1]))


def estimated_mse(trials: Sequence[tuple[np.ndarray, Mapping[str, np.ndarray]]]) -> np.ndarray:
    """The estimated MSE of the mean over users of each trial (users, recommender -> blocks ×
    users), summed over the recommenders and blocks; the last trial is no control.

    A trial's MSE is s²/n, the variance of its mean over its n users, plus B̂² − SE², floored
    at 0: B̂ = the mean over the users it shares with no control of d_u = m̂_u − m̂_u(none), its
    signed bias estimate (the uncontrolled estimate is unbiased with the right weights), and
    SE² = var(d)/n its squared standard error, which E[B̂²] adds to B² (Su et al. 2020, §5).
    Where the control's change is within its noise, only the variance it saves counts; where
    it moves the estimate by more than its noise (a biased imputation with light weights), its
    bias counts.
    """
    ref_users, reference = trials[-1]
    out = np.zeros(len(trials))
    for j, (users, values) in enumerate(trials):
        _, at, ref_at = np.intersect1d(users, ref_users, assume_unique=True, return_indices=True)
        for rec, v in values.items():
            if users.size > 1:
                out[j] += float(np.sum(np.var(v, axis=1, ddof=1))) / users.size
            if at.size > 1:
                d = v[:, at] - reference[rec][:, ref_at]
                bias2 = d.mean(axis=1) ** 2 - np.var(d, axis=1, ddof=1) / at.size
                out[j] += float(np.sum(np.maximum(bias2, 0.0)))
    return out
