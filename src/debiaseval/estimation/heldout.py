"""The recommender-independent part of a weighting estimator for one seed (docs/estimators.md).

Metrics of the form m_u = (1/|Rel_u|) Σ_{i∈Rel_u} c(rank_u(i)), the mean over u's relevant
candidate items of a rank gain (Yang et al., *Unbiased offline recommender evaluation for
missing-not-at-random implicit feedback*, RecSys 2018): Recall@K, c = 1[rank ≤ K], and the
per-relevant-item DCG@K (metric ``avgdcg``), c = 1[rank ≤ K] / log2(1 + rank). An estimator
sees the held-out pairs H (o_ui = 1), their labels y_ui, their weights w_ui = 1/P_ui
(P_ui: the probability that a candidate pair is in H, Σ_{u, i∈C_u} P_ui = |H|; E1 conditions
it on its random train/held-out split, :func:`debiaseval.debiasing.propensities.scaled`) and,
for DR, an imputation r̂_ui ≈ P(y_ui = 1) of a candidate pair
(:mod:`debiaseval.estimation.imputation`) with its per-user mass M_u = Σ_{i∈C_u} r̂_ui.
:func:`prepare` computes them once per seed; every recommender then needs only the ranks of
the held-out pairs in its lists (:func:`list_ranks`). Everything is per-pair arrays and
``np.bincount``: no loop over users or pairs.

Every estimator averages over the users with a positive held-out pair (``evaluated``): the
users whose metric FULL and SNIPS define, so that the rows of one seed are means over one set
of users (docs/estimators.md, The scoreboard). DR leaves out those of them with no imputed
mass (M_u = 0), and its ratio form those whose denominator D_u is not positive; both are
counted. The scaled form keeps them all (its λ keeps every D_u positive).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from debiaseval.estimation.imputation import Imputation
from debiaseval.evaluation.metrics import GAINS

__all__ = [
    "FORMS",
    "GAINS",
    "RANKING_ESTIMATORS",
    "HeldOut",
    "PairIndex",
    "candidate_counts",
    "gains",
    "list_ranks",
    "member",
    "prepare",
    "sorted_pair_keys",
]

RANKING_ESTIMATORS: tuple[str, ...] = ("naive", "snips", "dr")
"""The estimators of a ranking metric per user: naive (no weights), snips and dr
(:mod:`~debiaseval.estimation.ranking_estimators`)."""

FORMS: tuple[str, ...] = ("one_step", "ratio", "scaled")
"""DR's forms: the one-step (linearised) form, the default, the ratio form N_u / D_u, and the
ratio form with the imputation scaled by λ, SNIPS at λ = 0
(:mod:`~debiaseval.estimation.scaled_dr`)."""


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


class PairIndex:
    """Query pairs (user, item) sorted once, to look up the ranks of many recommenders' lists
    (:meth:`ranks`): E1's held-out pairs, shared by every recommender of a seed."""

    def __init__(self, users: np.ndarray, items: np.ndarray, *, n_items: int) -> None:
        self.n_items = n_items
        self.query = np.asarray(users, dtype=np.int64) * n_items + np.asarray(items, np.int64)
        self.order = np.argsort(self.query, kind="stable")
        self.ordered = self.query[self.order]
        self.distinct = not np.any(self.ordered[1:] == self.ordered[:-1])

    def ranks(self, recs: pd.DataFrame, *, depth: int) -> np.ndarray:
        """:func:`list_ranks` of the indexed pairs in ``recs``."""
        return list_ranks(recs, None, None, n_items=self.n_items, depth=depth, index=self)


def list_ranks(
    recs: pd.DataFrame,
    users: np.ndarray | None,
    items: np.ndarray | None,
    *,
    n_items: int,
    depth: int,
    index: PairIndex | None = None,
) -> np.ndarray:
    """The 1-based rank of every (user, item) pair in ``recs`` (0 when not in the top ``depth``).

    With distinct query pairs (E1's held-out pairs, stored sorted so their sort is a pass),
    the lists' pairs are looked up among the sorted queries: O(list rows · log pairs), no
    sort of the lists. Otherwise (a pair asked twice, or listed twice for a user: the first
    of its rows counts) the queries are looked up among the sorted lists' pairs. ``index``:
    the queries already sorted (:class:`PairIndex`), in place of ``users`` and ``items``.
    """
    rank = recs["rank"].to_numpy().astype(np.int64)
    keep = rank <= depth
    keys = recs["user"].to_numpy().astype(np.int64)[keep] * n_items + recs["item"].to_numpy()[keep]
    rank = rank[keep]
    index = PairIndex(users, items, n_items=n_items) if index is None else index
    query, order, ordered = index.query, index.order, index.ordered
    if keys.size == 0 or query.size == 0:
        return np.zeros(query.size, dtype=np.int64)
    if index.distinct:
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


def member(ids: np.ndarray, chosen: np.ndarray, n: int) -> np.ndarray:
    """``np.isin(ids, chosen)`` for ids ≥ 0 (``chosen`` in [0, n)), by a lookup table:
    O(len(ids) + n)."""
    size = max(n, int(ids.max()) + 1 if ids.size else 0)
    table = np.zeros(size, dtype=bool)
    table[chosen] = True
    return table[ids]


def sorted_pair_keys(pairs: pd.DataFrame, n_items: int) -> np.ndarray:
    """The keys user · n_items + item of ``pairs``, sorted: one pass where the pairs are sorted
    by user and item, as a split's parts are, else a sort."""
    keys = pairs["user"].to_numpy(np.int64) * n_items + pairs["item"].to_numpy(np.int64)
    if (keys[1:] < keys[:-1]).any():
        keys = np.sort(keys)
    return keys


def candidate_counts(train: pd.DataFrame, *, n_users: int, n_items: int) -> np.ndarray:
    """|C_u| per user: the items without a training pair (:func:`sorted_pair_keys`)."""
    if len(train) == 0:
        return np.full(n_users, n_items, dtype=np.int64)
    keys = sorted_pair_keys(train, n_items)
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return n_items - np.bincount(keys[first] // n_items, minlength=n_users)


@dataclass(frozen=True)
class HeldOut:
    """The recommender-independent part of an estimator for one seed (:func:`prepare`)."""

    estimator: str
    users: np.ndarray
    items: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    """w = 1/P of every held-out pair (1 for naive)."""
    n_users: int
    evaluated: np.ndarray
    """Sorted ids of the users averaged over: those with a positive held-out pair."""
    candidates: np.ndarray | None = None
    """|C_u| per user (with the training part)."""
    form: str = "one_step"
    imputation: Imputation | None = None
    imputed: np.ndarray | None = None
    """r̂ of every held-out pair (dr)."""
    mass: np.ndarray | None = None
    """M_u = Σ_{i∈C_u} r̂_ui per user (dr)."""
    n_left_out: int = 0
    """Users with a positive held-out pair left out because M_u = 0 (dr's one-step form: no
    imputed mass)."""
    scale: float | None = None
    """The scaled form's λ in [0, 1] (None: chosen per seed)."""


def prepare(
    estimator: str,
    heldout: pd.DataFrame,
    propensities: np.ndarray | None,
    *,
    n_users: int,
    positive_threshold: float,
    imputation: Imputation | None = None,
    train: pd.DataFrame | None = None,
    n_items: int | None = None,
    form: str = "one_step",
    candidates: np.ndarray | None = None,
    scale: float | None = None,
) -> HeldOut:
    """The held-out pairs, labels and weights 1/P of ``estimator``, and for dr its imputation.

    ``propensities``: scaled P of ``heldout``'s pairs in its order (None for naive).
    dr also needs the ``imputation`` and the ``train`` part (the candidates C_u are the
    items without a training pair). ``candidates``: the counts |C_u| (the weights'
    calibration, :mod:`debiaseval.estimation.diagnostics`), or computed from ``train`` and
    ``n_items`` when given. ``scale``: the scaled form's λ (None = chosen per seed).
    Computed once per seed, shared by every recommender.
    """
    if estimator not in RANKING_ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(RANKING_ESTIMATORS)}")
    if form not in FORMS:
        raise ValueError(f"unknown DR form {form!r}; known: {', '.join(FORMS)}")
    if scale is not None and not 0.0 <= scale <= 1.0:
        raise ValueError(f"the scaled form's λ must lie in [0, 1], got {scale}")
    users = heldout["user"].to_numpy().astype(np.int64)
    items = heldout["item"].to_numpy().astype(np.int64)
    y = (heldout["rating"].to_numpy() > positive_threshold).astype(np.float64)
    if estimator == "naive":
        w = np.ones(users.size)
    else:
        if propensities is None or np.shape(propensities) != (users.size,):
            raise ValueError(f"{estimator} needs one propensity per held-out pair")
        w = 1.0 / np.asarray(propensities, dtype=np.float64)
    evaluated = np.flatnonzero(np.bincount(users, weights=y, minlength=n_users) > 0)
    if candidates is None and train is not None and n_items is not None:
        candidates = candidate_counts(train, n_users=n_users, n_items=n_items)
    if estimator != "dr":
        return HeldOut(estimator, users, items, y, w, n_users, evaluated, candidates)
    if imputation is None or train is None:
        raise ValueError("dr needs an imputation and the training part")
    imputed = imputation.pairs(users, items)
    mass = imputation.candidate_mass(train["user"].to_numpy(), train["item"].to_numpy(), n_users)
    # the one-step form divides by M_u; the ratio form by D_u, checked per weight control
    kept = evaluated[mass[evaluated] > _EPS] if form == "one_step" else evaluated
    return HeldOut(
        estimator,
        users,
        items,
        y,
        w,
        n_users,
        kept,
        candidates,
        form=form,
        imputation=imputation,
        imputed=imputed,
        mass=mass,
        n_left_out=evaluated.size - kept.size,
        scale=scale,
    )
