"""Naive, SNIPS and doubly robust estimates of a ranking metric per user (docs/estimators.md).

With the notation of :mod:`debiaseval.estimation.heldout` (H_u: u's held-out pairs, H_u⁺ the
positive ones, C_u u's candidates, w = 1/P, r̂ the imputation, M_u = Σ_{C_u} r̂):

- ``naive``: (1/|H_u⁺|) Σ_{H_u⁺} c_ui, the FULL test set's value;
- ``snips``: Σ_{H_u⁺} c w ÷ Σ_{H_u⁺} w (per user self-normalised; [ICML16] eq. 11 per user,
  Yang et al., RecSys 2018);
- ``dr``, one-step (linearised) form, the default: with the direct method
  ψ_u = Σ_{C_u} c r̂ ÷ M_u,

      m̂_u = ψ_u + (1/M_u) Σ_{i∈H_u} ŵ_ui (c_ui − ψ_u)(y_ui − r̂_ui),

  which divides only by the imputed mass. Given r̂ and the right P (ŵ = w),
  E[m̂_u] − m_u = (ψ_u − m_u)(1 − B_u/M_u), B_u = Σ_{C_u} y: zero if either the ratio or
  the mass of the imputation is right (Kennedy, *Semiparametric doubly robust targeted
  double machine learning*, 2022, for the one-step estimator of a ratio);
- ``dr``, ratio form: N_u / D_u with N_u = Σ_{C_u} c (r̂ + o (y − r̂) ŵ) and
  D_u = Σ_{C_u} (r̂ + o (y − r̂) ŵ) (Saito, RecSys 2020; Wang et al., ICML 2019), over the
  users with D_u > 0: D_u carries the whole variance of the correction and comes near 0.

- ``dr``, scaled form: the ratio form with r̂ scaled by λ ∈ [0, 1], SNIPS at λ = 0, λ chosen
  per seed (:mod:`debiaseval.estimation.scaled_dr`; Tan, JASA 2006; Kallus & Uehara, NeurIPS
  2019).

ŵ is w under DR's weight control (:mod:`debiaseval.estimation.weight_control`). c_ui is 0
outside the top K, so DR costs O(K + |H_u|) per user given M_u. A per-user value is kept as it
is, negative or above 1 (clipping would bias the mean), and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from debiaseval.estimation.heldout import HeldOut, gains, list_ranks, member
from debiaseval.estimation.scaled_dr import scaled_values
from debiaseval.estimation.weight_control import (
    WeightControl,
    candidates,
    choose,
    controlled,
    estimated_mse,
)

__all__ = ["ESTIMATE_COLUMNS", "Estimates", "estimate", "estimate_all"]

_EPS = 1e-12

ESTIMATE_COLUMNS = [
    "metric",
    "k",
    "n_users",
    "n_left_out",
    "n_negative",
    "n_above_one",
    "weight_control",
    "control_value",
    "imputation_scale",
]
"""Columns of :func:`estimate`'s per-(metric, k) table."""


@dataclass(frozen=True)
class Estimates:
    """Every recommender's per-user values under one estimator of one seed."""

    users: np.ndarray
    """The users averaged over (sorted), the same for every recommender and block."""
    values: dict[str, np.ndarray]
    """Recommender -> blocks × users."""
    blocks: tuple[tuple[str, int], ...]
    control: str = "none"
    value: float = np.inf
    """The weight control's threshold λ or τ (inf: none)."""
    n_left_out: int = 0
    scale: float = np.nan
    """DR's scaled form: the λ of the imputation (NaN for the other forms)."""

    def table(self, recommender: str) -> pd.DataFrame:
        """The recommender's per-(metric, k) counts: :data:`ESTIMATE_COLUMNS`."""
        v = self.values[recommender]
        return pd.DataFrame(
            {
                "metric": [m for m, _ in self.blocks],
                "k": np.array([k for _, k in self.blocks], dtype=np.int16),
                "n_users": np.full(len(self.blocks), self.users.size, dtype=np.int64),
                "n_left_out": np.full(len(self.blocks), self.n_left_out, dtype=np.int64),
                "n_negative": (v < 0).sum(axis=1).astype(np.int64),
                "n_above_one": (v > 1).sum(axis=1).astype(np.int64),
                "weight_control": self.control,
                "control_value": float(self.value),
                "imputation_scale": float(self.scale),
            },
            columns=ESTIMATE_COLUMNS,
        )


def _blocks(metrics: Sequence[str], ks: Sequence[int]) -> tuple[tuple[str, int], ...]:
    ks = list(dict.fromkeys(int(k) for k in ks))
    return tuple((m, k) for m in metrics for k in ks)


def _ranks(
    held: HeldOut, lists: Mapping[str, pd.DataFrame], ranks, n_items: int, depth: int
) -> dict[str, np.ndarray]:
    out = {}
    for rec, recs in lists.items():
        given = None if ranks is None else ranks.get(rec)
        if given is None:
            given = list_ranks(recs, held.users, held.items, n_items=n_items, depth=depth)
        elif np.shape(given) != held.users.shape:
            raise ValueError("ranks must hold one rank per held-out pair")
        out[rec] = given
    return out


Listed = dict[tuple[str, tuple[str, int]], tuple[np.ndarray, np.ndarray]]
"""(recommender, block) -> the positions of the pairs it lists in the top k, their gains."""


def _listed(ranks: Mapping[str, np.ndarray], blocks: Sequence[tuple[str, int]]) -> Listed:
    """(recommender, block) -> the held-out pairs its list ranks 1..k and their gains c: the
    only pairs of nonzero gain, so the per-user sums of c·x run over them alone."""
    out = {}
    for rec, rank in ranks.items():
        for metric, k in blocks:
            at = np.flatnonzero((rank >= 1) & (rank <= k))
            out[rec, (metric, k)] = (at, gains(metric, rank[at], k))
    return out


def estimate_all(
    held: HeldOut,
    lists: Mapping[str, pd.DataFrame],
    *,
    ks: Sequence[int],
    metrics: Sequence[str],
    n_items: int,
    ranks: Mapping[str, np.ndarray] | None = None,
    control: WeightControl | None = None,
) -> Estimates:
    """Per-user estimates of every recommender's top-k ``lists`` (name -> lists).

    ``ranks``: name -> the held-out pairs' ranks in its lists when already looked up
    (:func:`~debiaseval.estimation.heldout.list_ranks` at depth ≥ max(``ks``)).
    ``control`` (dr only): its threshold is chosen once for all the recommenders and blocks
    (so that their values weight the pairs alike and the ratio form keeps one set of users):
    the candidate minimising the estimated MSE summed over them
    (:func:`~debiaseval.estimation.weight_control.estimated_mse`). DR's scaled form chooses its
    λ the same way, once for all of them (:mod:`~debiaseval.estimation.scaled_dr`), and takes
    no weight control.
    """
    blocks = _blocks(metrics, ks)
    depth = max(k for _, k in blocks)
    listed = _listed(_ranks(held, lists, ranks, n_items, depth), blocks)
    if held.estimator != "dr":
        users = held.evaluated
        wy = held.weights * held.labels
        den = np.bincount(held.users, weights=wy, minlength=held.n_users)[users]
        values = {}
        for rec in lists:
            rows = []
            for block in blocks:
                at, c = listed[rec, block]
                num = np.bincount(held.users[at], weights=c * wy[at], minlength=held.n_users)
                rows.append(num[users] / den)
            values[rec] = np.stack(rows) if rows else np.empty((0, users.size))
        return Estimates(users, values, blocks)
    return _dr_all(held, lists, listed, blocks, depth, control or WeightControl())


def _dr_all(
    held: HeldOut,
    lists: Mapping[str, pd.DataFrame],
    listed: Listed,
    blocks: Sequence[tuple[str, int]],
    depth: int,
    control: WeightControl,
) -> Estimates:
    # every held-out pair enters the per-user sums; only the evaluated users' are read
    evaluated = held.evaluated
    users_h, w = held.users, held.weights
    resid = held.labels - held.imputed
    tops = {}
    for rec, recs in lists.items():
        r_rank = recs["rank"].to_numpy().astype(np.int64)
        r_user = recs["user"].to_numpy().astype(np.int64)
        sel = (r_rank <= depth) & member(r_user, evaluated, held.n_users)
        items = recs["item"].to_numpy()[sel]
        tops[rec] = (r_user[sel], r_rank[sel], held.imputation.pairs(r_user[sel], items))
    direct = {}
    for rec, (t_user, t_rank, r_top) in tops.items():
        for m, k in blocks:
            s = np.bincount(t_user, weights=gains(m, t_rank, k) * r_top, minlength=held.n_users)
            direct[rec, (m, k)] = s
    if held.form == "scaled":
        if control.method != "none":
            raise ValueError("DR's scaled form takes no weight control: its λ controls the weights")
        users, values, scale = scaled_values(held, listed, direct, blocks, list(lists), held.scale)
        return Estimates(users, values, blocks, n_left_out=held.n_left_out, scale=scale)
    thresholds = candidates(control, w)
    trials = []
    for value in thresholds:
        w_hat = controlled(w, control.method, value)
        trials.append(dr_values(held, users_h, w_hat, resid, listed, direct, blocks, lists))
    best = choose(estimated_mse(trials)) if len(trials) > 1 else 0
    users, values = trials[best]
    return Estimates(
        users,
        values,
        blocks,
        control=control.method,
        value=float(thresholds[best]),
        n_left_out=held.n_left_out + evaluated.size - users.size,
    )


def dr_values(
    held: HeldOut,
    users_h: np.ndarray,
    w_hat: np.ndarray,
    resid: np.ndarray,
    listed: Listed,
    direct: Mapping[tuple[str, tuple[str, int]], np.ndarray],
    blocks: Sequence[tuple[str, int]],
    lists: Mapping[str, object],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """DR's per-user values (one-step or ratio form) with the correction's weights ``w_hat``.

    ``users_h``, ``w_hat``, ``resid`` (y − r̂): the held-out pairs (only the evaluated users'
    sums are read); ``listed``: (recommender, block) -> the pairs of nonzero gain and their
    gains c (:func:`_listed`); ``direct``: (recommender, block) -> Σ_{C_u} c r̂ per user.
    Returns the users and recommender -> blocks × users.
    """
    n = held.n_users
    mass = held.mass
    b = np.bincount(users_h, weights=w_hat * resid, minlength=n)
    users = held.evaluated
    if held.form == "ratio":
        users = users[mass[users] + b[users] > _EPS]
    m_u = mass[users]
    values: dict[str, list[np.ndarray]] = {rec: [] for rec in lists}
    for rec in lists:
        for block in blocks:
            at, c = listed[rec, block]
            s = direct[rec, block]
            a = np.bincount(users_h[at], weights=w_hat[at] * c * resid[at], minlength=n)
            if held.form == "ratio":
                value = (s[users] + a[users]) / (m_u + b[users])
            else:
                psi = s[users] / m_u
                value = psi + (a[users] - psi * b[users]) / m_u
            values[rec].append(value)
    stacked = {rec: np.stack(v) if v else np.empty((0, users.size)) for rec, v in values.items()}
    return users, stacked


def estimate(
    held: HeldOut,
    recs: pd.DataFrame,
    *,
    ks: Sequence[int],
    metrics: Sequence[str],
    n_items: int,
    ranks: np.ndarray | None = None,
    control: WeightControl | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user estimates of one recommender's top-k lists (:func:`estimate_all` of one).

    Returns (per-user values: ``user`` int32, ``metric``, ``k`` int16, ``value``, ordered by
    metric, k, user as :func:`~debiaseval.evaluation.metrics.evaluate_topk` orders them;
    the per-(metric, k) counts: :data:`ESTIMATE_COLUMNS`).
    """
    name = "_"
    out = estimate_all(
        held,
        {name: recs},
        ks=ks,
        metrics=metrics,
        n_items=n_items,
        ranks=None if ranks is None else {name: ranks},
        control=control,
    )
    users, blocks = out.users, out.blocks
    per_user = pd.DataFrame(
        {
            "user": np.tile(users, len(blocks)).astype(np.int32),
            "metric": pd.Series(np.repeat([m for m, _ in blocks], users.size), dtype=str),
            "k": np.repeat([k for _, k in blocks], users.size).astype(np.int16),
            "value": out.values[name].ravel(),
        }
    )
    return per_user, out.table(name)
