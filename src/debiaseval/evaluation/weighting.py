"""Weighting estimators of ranking metrics from a held-out MNAR part (docs/experiments/e1.md).

Metrics of the form m_u = (1/|Rel_u|) Σ_{i∈Rel_u} c(rank_u(i)), the mean over u's relevant
candidate items of a rank gain (Yang et al., *Unbiased offline recommender evaluation for
missing-not-at-random implicit feedback*, RecSys 2018): Recall@K, c = 1[rank ≤ K], and the
per-relevant-item DCG@K (metric ``avgdcg``), c = 1[rank ≤ K] / log2(1 + rank). From the
held-out pairs H (o_ui = 1), their labels y_ui, propensities P_ui (the probability that a
candidate pair is in H, Σ_{u, i∈C_u} P_ui = |H|: E1 conditions them on its random
train/held-out split, :func:`debiaseval.debiasing.propensities.scaled`) and, for DR, an
imputation r̂_ui ≈ P(y_ui = 1) (:mod:`debiaseval.evaluation.imputation`):

- ``naive``: (1/|H_u⁺|) Σ_{i∈H_u⁺} c_ui, the FULL test set's value;
- ``snips``: Σ_{i∈H_u⁺} c_ui / P_ui ÷ Σ_{i∈H_u⁺} 1 / P_ui (per user self-normalised);
- ``dr``: N_u / D_u with N_u = Σ_{i∈C_u} c_ui (r̂_ui + o_ui (y_ui − r̂_ui) / P_ui) and
  D_u = Σ_{i∈C_u} (r̂_ui + o_ui (y_ui − r̂_ui) / P_ui) (Saito, RecSys 2020; Wang et al.,
  ICML 2019). c_ui is 0 outside the top K, so N_u costs O(K + |H_u|); D_u needs the
  per-user candidate sum of r̂, which the imputation gives without a users × items array.

naive and snips average over the users with a positive held-out pair, dr over the users
with a held-out pair and D_u > 0: the others are left out and counted. A per-user value
is kept as it is, negative or above 1 (clipping it to [0, 1] would bias the mean), and
counted. Everything is per-pair arrays and ``np.bincount``: no loop over users or pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from debiaseval.evaluation.imputation import Imputation

__all__ = [
    "DIAGNOSTICS_COLUMNS",
    "ESTIMATORS",
    "GAINS",
    "HeldOut",
    "estimate",
    "gains",
    "list_ranks",
    "prepare",
]

ESTIMATORS: tuple[str, ...] = ("naive", "snips", "dr")
"""The weighting estimators: naive (no weights), snips and dr."""

GAINS: tuple[str, ...] = ("recall", "avgdcg")
"""The metrics (names of :data:`debiaseval.evaluation.metrics.TOPK_METRICS`) that are a mean
over the relevant items of a rank gain, the only ones these estimators are defined for."""

DIAGNOSTICS_COLUMNS = [
    "metric", "k", "n_users", "n_left_out", "n_negative", "n_above_one",
    "ess_mean", "ess_median", "ess_min", "max_weight_share", "top1pct_weight_share",
]  # fmt: skip
"""Columns of :func:`estimate`'s diagnostics, one row per metric and k."""

_EPS = 1e-12


def gains(metric: str, rank: np.ndarray, k: int) -> np.ndarray:
    """The rank gain c of ``metric`` at 1-based ranks (0 = not in the list): float64."""
    if metric not in GAINS:
        raise ValueError(
            f"metric {metric!r} is not estimated by weighting; these are: {', '.join(GAINS)}"
        )
    r = np.asarray(rank, dtype=np.int64)
    hit = (r >= 1) & (r <= k)
    if metric == "recall":
        return hit.astype(np.float64)
    out = np.zeros(r.size)
    out[hit] = 1.0 / np.log2(1.0 + r[hit])
    return out


def list_ranks(
    recs: pd.DataFrame, users: np.ndarray, items: np.ndarray, *, n_items: int, depth: int
) -> np.ndarray:
    """The 1-based rank of every (user, item) pair in ``recs`` (0 when not in the top ``depth``).

    With distinct query pairs (E1's held-out pairs, stored sorted so their sort is a pass),
    the lists' pairs are looked up among the sorted queries: O(list rows · log pairs), no
    sort of the lists. Otherwise (a pair asked twice, or listed twice for a user: the first
    of its rows counts) the queries are looked up among the sorted lists' pairs.
    """
    rank = recs["rank"].to_numpy().astype(np.int64)
    keep = rank <= depth
    keys = recs["user"].to_numpy().astype(np.int64)[keep] * n_items + recs["item"].to_numpy()[keep]
    rank = rank[keep]
    query = np.asarray(users, dtype=np.int64) * n_items + np.asarray(items, dtype=np.int64)
    if keys.size == 0 or query.size == 0:
        return np.zeros(query.size, dtype=np.int64)
    order = np.argsort(query, kind="stable")
    ordered = query[order]
    if not np.any(ordered[1:] == ordered[:-1]):
        at = np.minimum(np.searchsorted(ordered, keys), ordered.size - 1)
        hit = ordered[at] == keys
        target = order[at[hit]]
        found = np.zeros(query.size, dtype=bool)
        found[target] = True
        if np.count_nonzero(found) == target.size:  # no pair listed twice
            out = np.zeros(query.size, dtype=np.int64)
            out[target] = rank[hit]
            return out
    order = np.argsort(keys, kind="stable")
    keys, rank = keys[order], rank[order]
    at = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return np.where(keys[at] == query, rank[at], 0)


@dataclass(frozen=True)
class HeldOut:
    """The recommender-independent part of an estimator for one seed (:func:`prepare`)."""

    estimator: str
    users: np.ndarray
    items: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    n_users: int
    imputation: Imputation | None = None
    imputed: np.ndarray | None = None
    denominator: np.ndarray | None = None
    """Per user: Σ 1/P over H_u⁺ (snips), |H_u⁺| (naive) or D_u (dr)."""
    evaluated: np.ndarray | None = None
    """Sorted ids of the users averaged over."""
    n_left_out: int = 0
    weight_diagnostics: dict[str, float] | None = None
    """The weights' diagnostics (:func:`estimate`'s ESS and shares), filled by :func:`prepare`."""


def prepare(
    estimator: str,
    heldout: pd.DataFrame,
    propensities: np.ndarray | None,
    *,
    n_users: int,
    positive_threshold: float,
    imputation: Imputation | None = None,
    train: pd.DataFrame | None = None,
) -> HeldOut:
    """The held-out pairs, labels, weights 1/P and per-user denominators of ``estimator``.

    ``propensities``: scaled P of ``heldout``'s pairs in its order (None for naive).
    dr also needs the ``imputation`` and the ``train`` part (the candidates C_u are the
    items without a training pair). Computed once per seed, shared by every recommender.
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATORS)}")
    users = heldout["user"].to_numpy().astype(np.int64)
    items = heldout["item"].to_numpy().astype(np.int64)
    y = (heldout["rating"].to_numpy() > positive_threshold).astype(np.float64)
    if estimator == "naive":
        w = np.ones(users.size)
    else:
        if propensities is None or np.shape(propensities) != (users.size,):
            raise ValueError(f"{estimator} needs one propensity per held-out pair")
        w = 1.0 / np.asarray(propensities, dtype=np.float64)
    has_pos = np.bincount(users, weights=y, minlength=n_users) > 0
    if estimator != "dr":
        den = np.bincount(users, weights=w * y, minlength=n_users)
        evaluated = np.flatnonzero(has_pos)
        held = HeldOut(estimator, users, items, y, w, n_users, denominator=den,
                       evaluated=evaluated)  # fmt: skip
        return replace(held, weight_diagnostics=_weight_diagnostics(held))
    if imputation is None or train is None:
        raise ValueError("dr needs an imputation and the training part")
    r_h = imputation.pairs(users, items)
    mass = imputation.candidate_mass(train["user"].to_numpy(), train["item"].to_numpy(), n_users)
    den = mass + np.bincount(users, weights=(y - r_h) * w, minlength=n_users)
    in_h = np.bincount(users, minlength=n_users) > 0
    keep = in_h & (den > _EPS)
    held = HeldOut(
        estimator, users, items, y, w, n_users, imputation=imputation, imputed=r_h,
        denominator=den, evaluated=np.flatnonzero(keep), n_left_out=int((in_h & ~keep).sum()),
    )  # fmt: skip
    return replace(held, weight_diagnostics=_weight_diagnostics(held))


def _member(ids: np.ndarray, chosen: np.ndarray, n: int) -> np.ndarray:
    """``np.isin(ids, chosen)`` for ids ≥ 0 (``chosen`` in [0, n)), by a lookup table:
    O(len(ids) + n)."""
    size = max(n, int(ids.max()) + 1 if ids.size else 0)
    table = np.zeros(size, dtype=bool)
    table[chosen] = True
    return table[ids]


def _weight_diagnostics(held: HeldOut) -> dict[str, float]:
    """ESS per user (mean, median, min), the largest weight's share and the top 1%'s share."""
    mask = _member(held.users, held.evaluated, held.n_users)
    if held.estimator != "dr":
        mask &= held.labels > 0
    u, w = held.users[mask], held.weights[mask]
    if w.size == 0:
        return dict.fromkeys(DIAGNOSTICS_COLUMNS[6:], np.nan)
    s1 = np.bincount(u, weights=w, minlength=held.n_users)[held.evaluated]
    s2 = np.bincount(u, weights=w * w, minlength=held.n_users)[held.evaluated]
    has = s2 > 0
    ess = s1[has] ** 2 / s2[has]
    n_top = max(1, int(np.ceil(0.01 * w.size)))
    top = np.sort(np.partition(w, w.size - n_top)[w.size - n_top :])[::-1]
    total = float(w.sum())
    return {
        "ess_mean": float(ess.mean()) if ess.size else np.nan,
        "ess_median": float(np.median(ess)) if ess.size else np.nan,
        "ess_min": float(ess.min()) if ess.size else np.nan,
        "max_weight_share": float(top[0] / total),
        "top1pct_weight_share": float(top.sum() / total),
    }


def estimate(
    held: HeldOut,
    recs: pd.DataFrame,
    *,
    ks: Sequence[int],
    metrics: Sequence[str],
    n_items: int,
    ranks: np.ndarray | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-user estimates of one recommender's top-k lists, and their diagnostics.

    ``ranks``: the held-out pairs' ranks in ``recs`` when already looked up
    (:func:`list_ranks` of ``held.users``, ``held.items`` at depth ≥ max(``ks``)), shared by
    the estimators of a seed, which all weight the same held-out pairs.

    Returns (per-user values: ``user`` int32, ``metric``, ``k`` int16, ``value``, ordered by
    metric, k, user as :func:`~debiaseval.evaluation.metrics.evaluate_topk` orders them;
    diagnostics: :data:`DIAGNOSTICS_COLUMNS`, one row per metric and k).
    """
    ks = list(dict.fromkeys(int(k) for k in ks))
    depth = max(ks)
    if ranks is None:
        ranks = list_ranks(recs, held.users, held.items, n_items=n_items, depth=depth)
    elif np.shape(ranks) != held.users.shape:
        raise ValueError("ranks must hold one rank per held-out pair")
    rank_h = ranks
    top = None
    if held.estimator == "dr":
        r_rank = recs["rank"].to_numpy().astype(np.int64)
        r_user = recs["user"].to_numpy().astype(np.int64)
        sel = (r_rank <= depth) & _member(r_user, held.evaluated, held.n_users)
        top_users, top_rank = r_user[sel], r_rank[sel]
        top = (top_users, top_rank, held.imputation.pairs(top_users, recs["item"].to_numpy()[sel]))
    weights = held.weight_diagnostics or _weight_diagnostics(held)
    users = held.evaluated
    frames, rows = [], []
    for metric in metrics:
        for k in ks:
            c_h = gains(metric, rank_h, k)
            if held.estimator == "dr":
                top_users, top_rank, r_top = top
                num = np.bincount(top_users, weights=gains(metric, top_rank, k) * r_top,
                                  minlength=held.n_users)  # fmt: skip
                num += np.bincount(held.users, weights=c_h * (held.labels - held.imputed)
                                   * held.weights, minlength=held.n_users)  # fmt: skip
            else:
                num = np.bincount(held.users, weights=c_h * held.weights * held.labels,
                                  minlength=held.n_users)  # fmt: skip
            value = num[users] / held.denominator[users]
            frames.append(value)
            rows.append({
                "metric": metric, "k": k, "n_users": users.size, "n_left_out": held.n_left_out,
                "n_negative": int((value < 0).sum()), "n_above_one": int((value > 1).sum()),
                **weights,
            })  # fmt: skip
    n_blocks = len(frames)
    per_user = pd.DataFrame(
        {
            "user": np.tile(users, n_blocks).astype(np.int32),
            "metric": pd.Series(np.repeat(list(metrics), len(ks) * users.size), dtype=str),
            "k": np.tile(np.repeat(ks, users.size), len(metrics)).astype(np.int16),
            "value": np.concatenate(frames) if frames else np.empty(0),
        }
    )
    diagnostics = pd.DataFrame(rows, columns=DIAGNOSTICS_COLUMNS).astype({"k": np.int16})
    return per_user, diagnostics
