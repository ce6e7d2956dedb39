"""Diagnostics of a weighting estimator: numbers that say when not to trust a row
(docs/estimators.md, Diagnostics).

Per estimator and seed, from its held-out part (:class:`~debiaseval.estimation.heldout.HeldOut`):

- the effective sample size per user (Σw)²/Σw² of the weights it averages (Kish);
- the Pareto tail index k̂ of those weights (:func:`pareto_k`; Vehtari, Simpson, Gelman,
  Yao & Gabry, *Pareto smoothed importance sampling*, JMLR 2024): above
  :data:`PARETO_K_LIMIT` a weighted mean is unreliable, whatever its interval says;
- the largest weight's share of the total and the share of the top 1% of pairs;
- the weights' calibration: Σ_{H_u} w estimates |C_u| when the propensities are right, so
  Σ_H w ÷ Σ_u |C_u| (``calibration``) and the median over users of Σ_{H_u} w ÷ |C_u|
  (``calibration_median``) are near 1;
- for DR, the imputed mass against the relevant count a MAR sample implies
  (:func:`mar_mass_ratio`): near 1 when the imputation is calibrated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from debiaseval.estimation.heldout import HeldOut, member

__all__ = [
    "PARETO_K_LIMIT",
    "WEIGHT_COLUMNS",
    "effective_sample_sizes",
    "heavy_tailed",
    "mar_mass_ratio",
    "pareto_k",
    "weight_diagnostics",
]

PARETO_K_LIMIT = 0.7
"""Above this Pareto k̂, the weighted mean is unreliable (Vehtari et al. 2024, §3.2)."""

WEIGHT_COLUMNS = [
    "ess_mean",
    "ess_median",
    "ess_min",
    "pareto_k",
    "max_weight_share",
    "top1pct_weight_share",
    "calibration",
    "calibration_median",
]
"""The recommender-independent diagnostics of :func:`weight_diagnostics`."""


def pareto_k(weights: np.ndarray, *, tail: np.ndarray | None = None) -> float:
    """The Pareto k̂ of ``weights``: the shape of a generalised Pareto fitted to their tail.

    The tail is the M = ⌈min(S/5, 3√S)⌉ largest of the S weights, taken as exceedances over
    the largest weight below them; the shape is Zhang & Stephens' estimate (*A new and
    efficient estimation method for the generalized Pareto distribution*, Technometrics 2009)
    with the weakly informative prior of Vehtari et al. (2024, appendix C): ten pseudo-
    observations at 0.5. ``tail``: the largest weights, sorted ascending, when already found
    (at least M + 1 of them). NaN for fewer than 10 weights; −inf for a tail without spread.
    """
    s = np.size(weights)
    if s < 10:
        return np.nan
    m = _tail_size(s)
    if tail is None:
        w = np.asarray(weights, dtype=np.float64)
        tail = np.sort(np.partition(w, s - m - 1)[s - m - 1 :])
    top = tail[-(m + 1) :]
    x = top[1:] - top[0]  # the M exceedances over the (M+1)-th largest weight
    if x[-1] <= 0:
        return -np.inf
    return _zhang_stephens(x)


def _tail_size(s: int) -> int:
    return int(np.ceil(min(0.2 * s, 3.0 * np.sqrt(s))))


def _zhang_stephens(x: np.ndarray) -> float:
    """Zhang & Stephens' (2009) estimate of a generalised Pareto's shape ξ from sorted
    exceedances ``x`` (the largest > 0), with Vehtari et al.'s prior on ξ.

    In their parametrisation F(x) = 1 − (1 − θx/κ)^(1/κ), κ = −ξ: the profile likelihood of
    θ, n(log(θ/κ(θ)) + κ(θ) − 1) with κ(θ) = −mean log(1 − θx), is averaged over their grid
    of θ (eq. 6) with the posterior weights it gives; ξ̂ = mean log(1 − θ̂x).
    """
    n = x.size
    grid = 30 + int(np.sqrt(n))
    quartile = x[max(int(n / 4 + 0.5) - 1, 0)]
    if quartile <= 0:
        quartile = x[x > 0][0]
    theta = 1.0 / x[-1] + (1.0 - np.sqrt(grid / (np.arange(1, grid + 1) - 0.5))) / (3 * quartile)
    kappa = -np.log1p(-theta[:, None] * x[None, :]).mean(axis=1)
    loglik = n * (np.log(theta / kappa) + kappa - 1.0)
    posterior = np.exp(loglik - loglik.max())  # normalised below: exp(l_j) / Σ exp(l)
    posterior /= posterior.sum()
    theta_hat = float(np.sum(theta * posterior))
    xi = float(np.log1p(-theta_hat * x).mean())
    return (n * xi + 10 * 0.5) / (n + 10)


def effective_sample_sizes(users: np.ndarray, w: np.ndarray, n_users: int) -> np.ndarray:
    """(Σw)²/Σw² per user among ``users`` (the users of the pairs of weights ``w``) that have
    some weight."""
    s1 = np.bincount(users, weights=w, minlength=n_users)
    s2 = np.bincount(users, weights=w * w, minlength=n_users)
    has = s2 > 0
    return s1[has] ** 2 / s2[has]


def weight_diagnostics(held: HeldOut) -> dict[str, float]:
    """:data:`WEIGHT_COLUMNS` of ``held``'s weights: over the positive pairs of the users it
    averages (SNIPS, naive), or every held-out pair (DR, whose correction weights them all);
    the calibration over every held-out pair (NaN without the candidate counts)."""
    sums = np.bincount(held.users, weights=held.weights, minlength=held.n_users)
    if held.estimator == "dr":
        u, w = held.users, held.weights
        squares = np.bincount(u, weights=w * w, minlength=held.n_users)
        has = squares > 0
        ess = sums[has] ** 2 / squares[has]
    else:
        mask = member(held.users, held.evaluated, held.n_users) & (held.labels > 0)
        u, w = held.users[mask], held.weights[mask]
        ess = effective_sample_sizes(u, w, held.n_users)
    out = dict.fromkeys(WEIGHT_COLUMNS, np.nan)
    if w.size:
        n_top = max(1, int(np.ceil(0.01 * w.size)))
        # one partition for both the top 1% and the Pareto tail
        t = min(w.size, max(n_top, _tail_size(w.size) + 1))
        tail = np.sort(np.partition(w, w.size - t)[w.size - t :])
        total = float(w.sum())
        out.update(
            ess_mean=float(ess.mean()) if ess.size else np.nan,
            ess_median=float(np.median(ess)) if ess.size else np.nan,
            ess_min=float(ess.min()) if ess.size else np.nan,
            pareto_k=pareto_k(w, tail=tail) if held.estimator != "naive" else np.nan,
            max_weight_share=float(tail[-1] / total),
            top1pct_weight_share=float(tail[-n_top:].sum() / total),
        )
    if held.candidates is not None and held.estimator != "naive":
        size = held.candidates.astype(np.float64)
        has = size > 0
        out["calibration"] = float(sums[has].sum() / size[has].sum()) if has.any() else np.nan
        out["calibration_median"] = float(np.median(sums[has] / size[has])) if has.any() else np.nan
    return out


def mar_mass_ratio(
    mass: np.ndarray,
    candidates: np.ndarray,
    mar_users: np.ndarray,
    mar_labels: np.ndarray,
) -> float:
    """Σ_u M_u ÷ Σ_u |C_u|·ȳ_u over the users with MAR pairs among their candidates, ȳ_u the
    share of positives among them: the imputed mass against the relevant count a MAR sample
    implies (1 = calibrated). ``mar_users``, ``mar_labels``: the MAR pairs that are candidates
    (not in the training part). NaN without such pairs or positives."""
    u = np.asarray(mar_users, dtype=np.int64)
    if u.size == 0:
        return np.nan
    n = mass.size
    count = np.bincount(u, minlength=n)
    positive = np.bincount(u, weights=np.asarray(mar_labels, dtype=np.float64), minlength=n)
    has = count > 0
    implied = float((candidates[has] * positive[has] / count[has]).sum())
    return float(mass[has].sum() / implied) if implied > 0 else np.nan


def heavy_tailed(diagnostics: pd.DataFrame) -> list[str]:
    """The estimators whose weights' Pareto k̂ exceeds :data:`PARETO_K_LIMIT` in some seed
    (rows of ``estimators.diagnostics.parquet``), in their first order."""
    if diagnostics.empty or "pareto_k" not in diagnostics:
        return []
    over = diagnostics[diagnostics["pareto_k"].astype(float) > PARETO_K_LIMIT]
    return list(dict.fromkeys(over["estimator"]))
