"""The classic leave-one-out protocol of [MYT14], computed exactly, with item weights.

A. de Myttenaere, B. Golden, B. Le Grand, F. Rossi, *Reducing offline evaluation
bias in recommendation systems* (Benelearn 2014), §3–5; see docs/experiments/e6.md.

The protocol draws a user u uniformly, then a held-out item i of the profile I_u
(uniformly, or with P(i|u,ω) = ω_i / Σ_{j∈I_u} ω_j under item weights, see
:mod:`debiaseval.debiasing.kl_weights`), recomputes the recommender on the data without
(u, i), and scores a hit when i is in the user's top k (k = 5). Its score is the
probability of a hit,

    score(ω) = (1/|U|) Σ_u Σ_{i∈I_u} P(i|u,ω) · hit(u, i),

which this module computes exactly, over every user and every profile item
(:func:`user_hit_rates`), or estimates as [MYT14] do from a number of sampled (user, item)
draws (:func:`sampled_hits`, 20,000 or 30,000 in the papers, with a Wald interval), from
0/1 hit matrices with the profiles' sparsity:

- constant recommenders (g1, g2 of [MYT14]) recommend one fixed list L to every
  user, so hit(u, i) = 1[i ∈ L] and score(ω) = Σ_{i∈L} P(i|ω);
- naive CF, score(u, i') = max_{j∈I_u} #(U_i' ∩ U_j) / #U_j, and cosine user CF,
  score(u, i') = Σ_{v≠u} cos(x_u, x_v) 1[i' ∈ I_v] on binary profiles, with the
  effect of removing (u, i) written in closed form (docstrings below), so the
  whole table costs O(n_items · nnz) without refitting anything.

CF candidates are the items outside I_u \\ {i}; ranks break ties by the smaller
item id (as :func:`debiaseval.recommenders.ranking.top_k_indices`). Users with an empty
profile are not in U.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "INTERVALS",
    "constant_hits",
    "cosine_cf_hits",
    "cosine_cf_scores",
    "loo_interval",
    "naive_cf_hits",
    "naive_cf_scores",
    "sampled_hits",
    "user_hit_rates",
]

INTERVALS: tuple[str, ...] = ("binomial", "wald", "bootstrap")
_DECIMALS = 9  # cosine scores are rounded so that ties in exact arithmetic stay ties
_HEAD_CELLS = 1 << 27  # dense cells of the popular items' rows, formed once (1 GiB of float64)
_BLOCK_CELLS = 1 << 25  # dense cells of other item rows formed at a time (256 MiB)


def _binary(profiles: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    if not sp.issparse(profiles) or profiles.ndim != 2:
        raise ValueError("profiles must be a 2-D scipy sparse users x items matrix")
    x = sp.csr_matrix(profiles, dtype=np.float64, copy=True)
    x.sum_duplicates()
    x.eliminate_zeros()
    x.data[:] = 1.0
    x.sort_indices()
    return x


def _users(x: sp.csr_matrix, users: np.ndarray | None) -> np.ndarray:
    if users is None:
        return np.arange(x.shape[0], dtype=np.int64)
    u = np.asarray(users)
    if u.ndim != 1 or (u.size and not np.issubdtype(u.dtype, np.integer)):
        raise ValueError("users must be a 1-D array of integer user ids")
    if u.size and (u.min() < 0 or u.max() >= x.shape[0]):
        raise ValueError(f"user ids must lie in [0, {x.shape[0]})")
    return np.sort(u.astype(np.int64))


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    return int(k)


def _hit_matrix(x: sp.csr_matrix, users: np.ndarray, hits: list[np.ndarray]) -> sp.csr_matrix:
    """A CSR matrix with the structure of ``x[users]`` and the given per-row hit flags."""
    rows = x[users]
    data = np.concatenate(hits) if hits else np.empty(0)
    return sp.csr_matrix((data.astype(np.float64), rows.indices, rows.indptr), shape=rows.shape)


def _count_hits(
    candidates: np.ndarray, cand_scores: np.ndarray, held: np.ndarray, own: np.ndarray, k: int
) -> np.ndarray:
    """hit flags: held item a is in the top k of {cand_scores[a]} ∪ {own[a]} (ties: smaller id)."""
    target = own[:, None]
    ahead = (cand_scores > target) | (
        (cand_scores == target) & (candidates[None, :] < held[:, None])
    )
    return (ahead.sum(axis=1) < k).astype(np.float64)


def constant_hits(profiles: sp.spmatrix | sp.sparray, items: np.ndarray) -> sp.csr_matrix:
    """hit(u, i) = 1[i ∈ L] for a constant recommender with fixed list ``items`` ([MYT14] §4).

    The list is recommended as is (profile items are not removed from it), so
    the protocol's score is Σ_{i∈L} P(i|ω). Same structure as ``profiles``.
    """
    x = _binary(profiles)
    out = x.copy()
    out.data = np.isin(x.indices, np.asarray(items)).astype(np.float64)
    return out


def naive_cf_scores(profiles: sp.spmatrix | sp.sparray, users: np.ndarray) -> np.ndarray:
    """Naive CF ([MYT14] §5): score(u, i) = max_{j∈I_u} #(U_i ∩ U_j) / #U_j; 0 for empty I_u."""
    x = _binary(profiles)
    users = np.asarray(users, dtype=np.int64)
    cooc = (x.T @ x).toarray()
    count = np.diag(cooc).copy()
    ratio = cooc / np.maximum(count, 1.0)[None, :]
    out = np.zeros((users.size, x.shape[1]))
    for r, u in enumerate(users):
        held = x.indices[x.indptr[u] : x.indptr[u + 1]]
        if held.size:
            out[r] = ratio[:, held].max(axis=1)
    return out


def _user_groups(
    x: sp.csr_matrix, users: np.ndarray, skip: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Consecutive groups of ``users`` with the sorted union of their profile items outside
    ``skip`` (boolean per item), the union holding at most ``_BLOCK_CELLS // n_items`` items
    (or one user's)."""
    limit = max(1, _BLOCK_CELLS // max(x.shape[1], 1))
    start, union = 0, np.empty(0, dtype=x.indices.dtype)
    for pos, u in enumerate(users):
        held = x.indices[x.indptr[u] : x.indptr[u + 1]]
        held = held[~skip[held]]
        grown = np.union1d(union, held)
        if grown.size > limit and pos > start:
            yield users[start:pos], union
            start, grown = pos, held
        union = grown
    if users.size > start:
        yield users[start:], union


def _item_rows(
    left: sp.csr_matrix, x: sp.csr_matrix, users: np.ndarray
) -> Iterator[tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]]:
    """For groups of ``users``: (group, rows) where ``rows(items)`` gives ``(left @ x)[items]``
    dense, for the items of the group's profiles.

    ``left`` is items × users (Xᵀ, possibly column-scaled). The rows of the most
    popular items (the costliest to form, and in most profiles) are formed once, at
    most :data:`_HEAD_CELLS` dense cells; the others for each group of users, at most
    :data:`_BLOCK_CELLS`; never items × items. Row r of a sparse product is computed
    from row r of ``left`` alone, so the values equal the full product's bit for bit.
    """
    n_items = x.shape[1]
    popularity = np.diff(left.indptr)
    n_head = min(n_items, _HEAD_CELLS // max(n_items, 1))
    head = np.sort(np.argsort(-popularity, kind="stable")[:n_head])
    in_head = np.zeros(n_items, dtype=bool)
    in_head[head] = True
    head_rows = (left[head] @ x).toarray()
    for group, union in _user_groups(x, users, in_head):
        tail_rows = (left[union] @ x).toarray()

        def rows(items: np.ndarray, union=union, tail_rows=tail_rows) -> np.ndarray:
            out = np.empty((items.size, n_items))
            top = in_head[items]
            out[top] = head_rows[np.searchsorted(head, items[top])]
            out[~top] = tail_rows[np.searchsorted(union, items[~top])]
            return out

        yield group, rows


def naive_cf_hits(
    profiles: sp.spmatrix | sp.sparray, *, k: int = 5, users: np.ndarray | None = None
) -> sp.csr_matrix:
    """Leave-one-out hits of naive CF for every pair of ``users`` (rows of ``profiles[users]``).

    Removing (u, i) leaves #U_j and #(U_i' ∩ U_j) unchanged for j, i' ≠ i and
    lowers #(U_i ∩ U_j) by one for j ∈ I_u, so a candidate i' ∉ I_u scores the
    max over I_u \\ {i} of C[i', j]/#U_j (the best ratio, or the second best when
    the best comes from j = i) and the held-out item scores
    max_{j∈I_u\\{i}} (C[i, j] − 1)/#U_j (C = item co-occurrence counts, symmetric
    and exact). Per user, O(n_items · |I_u|) with dense blocks; C is formed only for
    the rows of a group of users' items at a time.
    """
    k = _check_k(k)
    x = _binary(profiles)
    users = _users(x, users)
    count = np.diff(x.tocsc().indptr).astype(np.float64)  # #U_j = C[j, j]
    safe = np.maximum(count, 1.0)
    n_items = x.shape[1]
    hits = []
    for group, item_rows in _item_rows(sp.csr_matrix(x.T), x, users):
        for u in group:
            held = x.indices[x.indptr[u] : x.indptr[u + 1]]
            if held.size == 0:
                continue
            outside = np.ones(n_items, dtype=bool)
            outside[held] = False
            candidates = np.flatnonzero(outside)
            rows = item_rows(held)  # C[held, ·] = C[·, held]ᵀ
            block = (rows[:, candidates] / safe[held][:, None]).T  # ratio (n_cand, m)
            cand = np.arange(candidates.size)
            arg = block.argmax(axis=1)
            best = block[cand, arg]
            block[cand, arg] = -np.inf
            second = block.max(axis=1, initial=-np.inf)
            cand_scores = np.repeat(best[None, :], held.size, axis=0)
            cand_scores[arg, cand] = second  # the held-out item j = arg was the best
            own = (rows[:, held] - 1.0) / safe[held][None, :]
            np.fill_diagonal(own, -np.inf)
            own_best = own.max(axis=1)
            hits.append(_count_hits(candidates, cand_scores, held, own_best, k))
    return _hit_matrix(x, users, hits)


COSINE_NEIGHBOUR_EXPONENT = 0.5
"""The exponent γ of the neighbour's profile size in :func:`cosine_cf_scores`: ½ is the cosine."""


def _power(values: Any, exponent: float) -> Any:
    """values ** exponent, by the square root where the exponent is ½ (the cosine's bytes)."""
    return np.sqrt(values) if exponent == 0.5 else np.power(values, exponent)


def _inverse_size_powers(x: sp.csr_matrix, exponent: float = 0.5) -> np.ndarray:
    """|I_v|^(−exponent) per user (0 for an empty profile)."""
    sizes = np.diff(x.indptr).astype(np.float64)
    return np.divide(1.0, _power(sizes, exponent), out=np.zeros_like(sizes), where=sizes > 0)


def _check_exponent(exponent: float) -> float:
    value = float(exponent)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"neighbour_exponent must be a finite number >= 0, got {exponent!r}")
    return value


def cosine_cf_scores(
    profiles: sp.spmatrix | sp.sparray,
    users: np.ndarray,
    *,
    neighbour_exponent: float = COSINE_NEIGHBOUR_EXPONENT,
) -> np.ndarray:
    """Cosine user CF ([MYT14] §5) on binary profiles, every other user a neighbour.

    score(u, i) = Σ_{v≠u} |I_u ∩ I_v| / (|I_u|^½ |I_v|^γ) 1[i ∈ I_v] with γ =
    ``neighbour_exponent``: γ = ½ (the default) is cos(x_u, x_v) = |I_u ∩ I_v| /
    √(|I_u||I_v|); γ = 1 divides each neighbour's votes by its profile size, γ = 0 counts
    co-occurrences (docs/experiments/e6.md). 0 for an empty I_u. Dense only in ``users`` ×
    users and ``users`` × items.
    """
    x = _binary(profiles)
    users = np.asarray(users, dtype=np.int64)
    own = _inverse_size_powers(x)
    inv = _inverse_size_powers(x, _check_exponent(neighbour_exponent))
    sims = (x[users] @ x.T).toarray() * own[users][:, None] * inv[None, :]
    sims[np.arange(users.size), users] = 0.0
    return np.asarray(x.T @ sims.T).T


def cosine_cf_hits(
    profiles: sp.spmatrix | sp.sparray,
    *,
    k: int = 5,
    users: np.ndarray | None = None,
    neighbour_exponent: float = COSINE_NEIGHBOUR_EXPONENT,
) -> sp.csr_matrix:
    """Leave-one-out hits of cosine user CF (:func:`cosine_cf_scores`) for every pair of
    ``users``.

    Removing (u, i) turns x_u into x_u − e_i and leaves the other users
    unchanged. With γ = ``neighbour_exponent``, G = Xᵀ diag(|I_v|^−γ) X, m = |I_u| and
    b = Σ_{j∈I_u} G[j, ·], the new scores times √(m − 1) (a factor common to all items, so
    the ranking is unchanged) are b[i'] − G[i, i'] for a candidate i' ∉ I_u and
    b[i] − m^(1−γ) − G[i, i] + m^−γ for the held-out item (u is no neighbour of
    itself: its own term m^−γ of G is taken out of the m − 1 rows j ≠ i); with m = 1 the
    profile becomes empty and every score is 0. Values are rounded to 1e-9 so that exact
    ties stay ties. Per user, O(n_items · |I_u|); G is formed only for the rows of a group
    of users' items at a time.
    """
    k = _check_k(k)
    gamma = _check_exponent(neighbour_exponent)
    x = _binary(profiles)
    users = _users(x, users)
    left = sp.csr_matrix(x.T @ sp.diags(_inverse_size_powers(x, gamma)))
    n_items = x.shape[1]
    hits = []
    for group, item_rows in _item_rows(left, x, users):
        for u in group:
            held = x.indices[x.indptr[u] : x.indptr[u + 1]]
            m = held.size
            if m == 0:
                continue
            outside = np.ones(n_items, dtype=bool)
            outside[held] = False
            candidates = np.flatnonzero(outside)
            rows = item_rows(held)  # G[held, ·], (m, n_items)
            base = rows.sum(axis=0)
            if m == 1:  # the profile becomes empty: every score is 0
                cand_scores = np.zeros((1, candidates.size))
                own = np.zeros(1)
            else:
                cand_scores = np.round(base[candidates][None, :] - rows[:, candidates], _DECIMALS)
                # u's own votes: m^(1−γ) in b[i], of which m^−γ through G[i, i]
                votes = float(_power(float(m), 1.0 - gamma))
                through_i = 1.0 / float(_power(float(m), gamma))
                diag = rows[np.arange(m), held]
                own = np.round(base[held] - votes - diag + through_i, _DECIMALS)
            hits.append(_count_hits(candidates, cand_scores, held, own, k))
    return _hit_matrix(x, users, hits)


def user_hit_rates(hits: sp.csr_matrix, weights: sp.csr_matrix) -> np.ndarray:
    """Per-user expected hit Σ_{i∈I_u} P(i|u,ω) hit(u, i) of the users with a profile.

    ``weights`` holds P(i|u,ω) on the same structure as ``hits``
    (:func:`debiaseval.debiasing.kl_weights.pair_weights`, rows of the evaluated users);
    the protocol's score is the mean of the returned values.
    """
    if hits.shape != weights.shape or hits.nnz != weights.nnz:
        raise ValueError(f"hits and weights differ in shape: {hits.shape} vs {weights.shape}")
    if not (
        np.array_equal(hits.indptr, weights.indptr)
        and np.array_equal(hits.indices, weights.indices)
    ):
        raise ValueError("hits and weights must have the same sparsity structure")
    products = sp.csr_matrix(
        (hits.data * weights.data, hits.indices, hits.indptr), shape=hits.shape
    )
    rates = np.asarray(products.sum(axis=1)).ravel()
    return rates[np.diff(hits.indptr) > 0]


def sampled_hits(
    hits: sp.csr_matrix, weights: sp.csr_matrix, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Outcomes (0/1, float64) of ``n_draws`` draws of the protocol as [MYT14] run it.

    Each draw takes a user uniformly among the rows with a profile, then an item of the
    profile with probability P(i|u,ω) (``weights``, the structure of ``hits``, e.g.
    :func:`debiaseval.debiasing.kl_weights.pair_weights`), and records hit(u, i). The mean of
    the outcomes is an unbiased estimate of the exact score (the mean of
    :func:`user_hit_rates`); vectorised by inverse transform on the cumulative weights.
    """
    if hits.shape != weights.shape or not (
        np.array_equal(hits.indptr, weights.indptr)
        and np.array_equal(hits.indices, weights.indices)
    ):
        raise ValueError("hits and weights must have the same sparsity structure")
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 1:
        raise ValueError(f"n_draws must be an int >= 1, got {n_draws!r}")
    rows = np.flatnonzero(np.diff(hits.indptr) > 0)
    if rows.size == 0:
        raise ValueError("no user has a profile to draw from")
    drawn = rows[rng.integers(rows.size, size=int(n_draws))]
    cum = np.concatenate([[0.0], np.cumsum(np.asarray(weights.data, dtype=np.float64))])
    lo, hi = hits.indptr[drawn], hits.indptr[drawn + 1]
    target = cum[lo] + rng.random(drawn.size) * (cum[hi] - cum[lo])
    pick = np.clip(np.searchsorted(cum, target, side="right") - 1, lo, hi - 1)
    return np.asarray(hits.data, dtype=np.float64)[pick]


def loo_interval(
    rates: np.ndarray,
    *,
    interval: str = "binomial",
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
    resamples: int = 1000,
) -> tuple[float, float, float]:
    """(score, low, high): the mean of the per-user hit rates and its ``confidence`` interval.

    - "binomial": Wilson score interval for a proportion with n = the number of
      values (users; draws for :func:`sampled_hits`' outcomes);
    - "wald": the normal-approximation interval score ± z·√(score(1 − score)/n), clipped
      to [0, 1], as [MYT14] give for their sampled draws;
    - "bootstrap": percentile interval of the mean over ``resamples`` resamples of
      the values (``rng`` required).
    """
    r = np.asarray(rates, dtype=np.float64)
    if r.ndim != 1 or r.size == 0:
        raise ValueError("rates must be a non-empty 1-D array (no user was evaluated)")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    score = float(r.mean())
    if interval in ("binomial", "wald"):
        n = r.size
        import scipy.stats  # lazy: scipy.stats costs 0.5 s

        z = float(scipy.stats.norm.ppf(0.5 + confidence / 2))
        if interval == "wald":
            half = z * math.sqrt(score * (1 - score) / n)
            return score, max(0.0, score - half), min(1.0, score + half)
        centre = (score + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n))
        return score, max(0.0, centre - half), min(1.0, centre + half)
    if interval == "bootstrap":
        if rng is None:
            raise ValueError("the bootstrap interval needs a numpy Generator (rng=None)")
        if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
            raise ValueError(f"resamples must be an int >= 1, got {resamples!r}")
        counts = rng.multinomial(r.size, np.full(r.size, 1.0 / r.size), size=resamples)
        means = counts @ r / r.size
        alpha = (1 - confidence) / 2
        low, high = np.quantile(means, [alpha, 1 - alpha])
        return score, float(low), float(high)
    raise ValueError(f"unknown interval {interval!r}; expected one of {', '.join(INTERVALS)}")
