"""Estimators of a loss averaged over all user-item pairs from observed pairs (SPEC §6).

[ICML16] T. Schnabel et al., *Recommendations as treatments: debiasing learning
and evaluation*, ICML 2016, eqs. 5, 10 and 11. Each takes the per-pair losses
δ_{u,i} of the observed pairs (and their propensities P_{u,i}) and estimates
R(Ŷ) = 1/(U·I) Σ_{u,i} δ_{u,i}.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ips", "naive", "snips"]


def _losses(delta: np.ndarray) -> np.ndarray:
    d = np.asarray(delta, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError(f"delta must be a non-empty 1-D array, got shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise ValueError("delta contains NaN or infinite losses")
    return d


def _propensities(propensity: np.ndarray, size: int) -> np.ndarray:
    p = np.asarray(propensity, dtype=np.float64)
    if p.shape != (size,):
        raise ValueError(f"propensity must have shape ({size},), got {p.shape}")
    if not np.all((p > 0) & (p <= 1)):
        raise ValueError("propensities must lie in (0, 1]")
    return p


def naive(delta: np.ndarray) -> float:
    """Naive estimate: the mean loss over the observed pairs ([ICML16] eq. 5)."""
    return float(_losses(delta).mean())


def ips(delta: np.ndarray, propensity: np.ndarray, n_total: int) -> float:
    """IPS estimate (1/(U·I)) Σ_{O=1} δ/P ([ICML16] eq. 10); ``n_total`` = U·I."""
    d = _losses(delta)
    if n_total < 1:
        raise ValueError(f"n_total must be >= 1, got {n_total}")
    return float((d / _propensities(propensity, d.size)).sum() / n_total)


def snips(delta: np.ndarray, propensity: np.ndarray) -> float:
    """Self-normalised IPS Σ δ/P / Σ 1/P ([ICML16] eq. 11)."""
    d = _losses(delta)
    inv = 1.0 / _propensities(propensity, d.size)
    return float((d * inv).sum() / inv.sum())
