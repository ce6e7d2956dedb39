"""The doubly robust estimator that contains SNIPS: the ratio form with the imputation scaled
by λ ∈ [0, 1] (docs/estimators.md, DR that contains SNIPS).

With the notation of :mod:`debiaseval.estimation.ranking_estimators` (H_u: u's held-out pairs,
C_u its candidates, w = 1/P, r̂ the imputation, M_u = Σ_{C_u} r̂, c the rank gain),

    N_u(λ) = λ Σ_{C_u} c r̂ + Σ_{H_u} w c (y − λ r̂),   D_u(λ) = λ M_u + Σ_{H_u} w (y − λ r̂),

and m̂_u(λ) = N_u(λ) / D_u(λ). At λ = 0 it is SNIPS exactly (Σ_{H_u⁺} c w ÷ Σ_{H_u⁺} w); at λ = 1
the ratio DR (Saito, RecSys 2020). Given the right P, λ r̂ is a control variate of known total
for any λ (E Σ_{H_u} w λ r̂ = λ M_u), so every λ estimates the same ratio; λ only trades variance.
It is the regression estimator of Tan (*Distributionally robust estimation*, JASA 2006, eq. 9)
and the intrinsically efficient DR of Kallus & Uehara (NeurIPS 2019, §4) restricted to [0, 1].

λ is chosen once per seed (for every recommender and block, so they weight the pairs alike) on
the grid :data:`SCALES` by :func:`choose_scale`: the smallest estimated MSE of the mean over
users. Its variance linearises each user's ratio around the direct method ψ_u = Σ c r̂ / M_u
(the Horvitz–Thompson variance under independent draws of the held-out pairs; Särndal, Swensson &
Wretman, *Model assisted survey sampling*, 1992, eq. 5.6.5):

    V(λ) = (1/n²) Σ_u Σ_{H_u} (1 − P) w² (c − ψ_u)² (y − λ r̂)² / B̂_u²,   B̂_u = Σ_{H_u} w y,

a quadratic in λ whose minimiser is the regression coefficient of the control variate (Tan
2006), plus the squared bias the imputation adds where the propensities are wrong: every λ
estimates the same ratio only if E Σ_{H_u} w r̂ = M_u, so a mean change from SNIPS,
B̂(λ) = mean_u (m̂_u(λ) − m̂_u(0)), beyond twice its standard error SE(λ) over users is bias,
counted as max(|B̂| − 2 SE, 0)² (a signed bias estimate with its standard error, as in DR's
weight-control rule, Su et al., ICML 2020, §5; two SE here, so that the noise of B̂ moves λ off
its variance optimum in about 5% of seeds, not a third). A λ is
admissible when every user's denominator stays at half the smaller of the two estimates of its
relevant count or more, D_u(λ) ≥ min(D_u(0), M_u)/2 and D_u(λ) > 0
(D_u(0) = B̂_u by weighting, M_u by imputation; D_u is linear in λ): the ratio form's failure is
a denominator near 0. λ = 0 always is, and ties go to the smaller λ, the nearer SNIPS. Every
sum is a ``np.bincount`` over the held-out pairs once per seed, and over the listed pairs per
recommender and block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from debiaseval.estimation.heldout import HeldOut

__all__ = ["SCALES", "choose_scale", "scaled_values"]

SCALES: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
"""The λ grid of :func:`choose_scale` (0 = SNIPS, 1 = the ratio DR)."""

Sums = dict[str, np.ndarray]


def _user_sums(held: HeldOut) -> Sums:
    """Per-user sums over every held-out pair that do not depend on the recommender."""
    n, u, w, y, r = held.n_users, held.users, held.weights, held.labels, held.imputed
    q = np.maximum(w * w - w, 0.0)  # (1 − P) w²: the Horvitz–Thompson variance's weight
    return {
        "wy": np.bincount(u, weights=w * y, minlength=n),
        "wr": np.bincount(u, weights=w * r, minlength=n),
        "q_y": np.bincount(u, weights=q * y, minlength=n),
        "q_yr": np.bincount(u, weights=q * y * r, minlength=n),
        "q_rr": np.bincount(u, weights=q * r * r, minlength=n),
    }


def _block_sums(held: HeldOut, at: np.ndarray, c: np.ndarray) -> Sums:
    """Per-user sums over the pairs a recommender lists in a block (gains ``c`` at ``at``)."""
    n, u = held.n_users, held.users[at]
    w, y, r = held.weights[at], held.labels[at], held.imputed[at]
    q = np.maximum(w * w - w, 0.0)
    out = {
        "cwy": np.bincount(u, weights=c * w * y, minlength=n),
        "cwr": np.bincount(u, weights=c * w * r, minlength=n),
    }
    for power, name in ((1, "c"), (2, "cc")):
        g = c**power * q
        out[f"{name}_y"] = np.bincount(u, weights=g * y, minlength=n)
        out[f"{name}_yr"] = np.bincount(u, weights=g * y * r, minlength=n)
        out[f"{name}_rr"] = np.bincount(u, weights=g * r * r, minlength=n)
    return out


def scaled_values(
    held: HeldOut,
    listed: Mapping[tuple[str, tuple[str, int]], tuple[np.ndarray, np.ndarray]],
    direct: Mapping[tuple[str, tuple[str, int]], np.ndarray],
    blocks: Sequence[tuple[str, int]],
    recommenders: Sequence[str],
    scale: float | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
    """Per-user values N_u(λ)/D_u(λ) of every recommender and block at λ = ``scale``, or at
    the λ of :func:`choose_scale` when None.

    ``listed``: (recommender, block) -> the held-out pairs of nonzero gain and their gains;
    ``direct``: (recommender, block) -> Σ_{C_u} c r̂ per user. Returns the users (``held``'s
    evaluated users, those of SNIPS), recommender -> blocks × users, and λ.
    """
    users = held.evaluated
    sums = _user_sums(held)
    per_block = {key: _block_sums(held, *listed[key]) for key in listed}
    grid = np.asarray(SCALES if scale is None else (float(scale),))
    den = grid[:, None] * held.mass[users] + sums["wy"][users] - grid[:, None] * sums["wr"][users]
    values = {
        rec: np.stack(
            [
                (
                    grid[:, None] * direct[rec, block][users]
                    + per_block[rec, block]["cwy"][users]
                    - grid[:, None] * per_block[rec, block]["cwr"][users]
                )
                / den
                for block in blocks
            ],
            axis=1,
        )
        if blocks
        else np.empty((grid.size, 0, users.size))
        for rec in recommenders
    }
    at = 0 if scale is not None else choose_scale(held, sums, per_block, direct, users, values)
    return users, {rec: v[at] for rec, v in values.items()}, float(grid[at])


def choose_scale(
    held: HeldOut,
    sums: Sums,
    per_block: Mapping[tuple[str, tuple[str, int]], Sums],
    direct: Mapping[tuple[str, tuple[str, int]], np.ndarray],
    users: np.ndarray,
    values: Mapping[str, np.ndarray],
) -> int:
    """The index in :data:`SCALES` of the admissible λ of smallest estimated MSE of the mean,
    summed over the recommenders and blocks: the module's V(λ) plus max(|B̂| − 2 SE, 0)²
    against λ = 0 (``values``: recommender -> λ × blocks × users); the smaller λ on a tie."""
    grid = np.asarray(SCALES)
    n = users.size
    if n == 0:
        return 0
    mass = held.mass[users]
    b_hat = sums["wy"][users]  # D_u(0) > 0: every evaluated user has a positive pair
    den = b_hat[None, :] + grid[:, None] * (mass - sums["wr"][users])[None, :]
    floor = 0.5 * np.minimum(b_hat, mass)[None, :]
    admissible = np.all((den > 0) & (den >= floor), axis=1)
    coef = np.zeros(3)  # V(λ) n² = coef · (1, −2λ, λ²)
    for key, b in per_block.items():
        psi = np.divide(direct[key][users], mass, out=np.zeros(n), where=mass > 0)
        for j, t in enumerate(("y", "yr", "rr")):
            # Σ q (c − ψ)² t = Σ q c² t − 2ψ Σ q c t + ψ² Σ q t (c = 0 off the list)
            total = b[f"cc_{t}"][users] - 2 * psi * b[f"c_{t}"][users]
            total += psi**2 * sums[f"q_{t}"][users]
            coef[j] += float(np.sum(total / b_hat**2))
    mse = (coef[0] - 2 * grid * coef[1] + grid**2 * coef[2]) / n**2
    for v in values.values():
        d = v - v[:1]  # each λ's change from SNIPS, λ × blocks × users
        se = np.sqrt(np.var(d, axis=2, ddof=1) / n) if n > 1 else 0.0
        mse = mse + (np.maximum(np.abs(d.mean(axis=2)) - 2 * se, 0.0) ** 2).sum(axis=1)
    mse = np.where(admissible, mse, np.inf)
    return int(np.argmin(mse))  # argmin keeps the first: the smaller λ
