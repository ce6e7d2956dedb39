"""Weighted sampling without replacement (docs/experiments/e1.md).

Interventions ([SAC20] Carraro & Bridge 2020, §3) draw a sample of fixed size
from a sampling space *without replacement*, each draw taking a remaining pair
with probability proportional to its weight ("successive sampling").
:func:`weighted_sample_without_replacement` does it in O(n) with the
exponential-clock form of the Efraimidis–Spirakis keys; :func:`exact_inclusion_probabilities`
enumerates the same process exactly for tiny inputs (the target of the tests).
"""

from __future__ import annotations

import numpy as np

__all__ = ["exact_inclusion_probabilities", "weighted_sample_without_replacement"]

_MAX_EXACT_N = 12


def _check(weights: np.ndarray, size: int) -> np.ndarray:
    """Check weights (1-D, finite, ≥ 0) and 0 ≤ size ≤ n; return the weights as float64."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"weights must be 1-D, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("weights must be finite (found NaN or inf)")
    if np.any(w < 0):
        raise ValueError(f"weights must be non-negative (min {w.min()!r})")
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise ValueError(f"size must be an integer, got {size!r}")
    if not 0 <= size <= w.size:
        raise ValueError(f"size must be in [0, {w.size}] (the number of weights), got {size}")
    return w


def weighted_sample_without_replacement(
    weights: np.ndarray, size: int, rng: np.random.Generator
) -> np.ndarray:
    """Indices (sorted ascending) of a successive weighted sample without replacement.

    Each draw takes a remaining index with probability proportional to its
    weight (docs/experiments/e1.md, [SAC20]). Implemented in O(n) with Efraimidis–Spirakis keys
    (Efraimidis & Spirakis 2006, "Weighted random sampling with a reservoir"):
    the items with the ``size`` largest keys ``log(U)/w`` are a successive sample.
    We use the equivalent exponential clocks ``E/w`` with ``E = -log(U) ~ Exp(1)``
    and take the ``size`` smallest, compared in log space
    (``log E − log w``) so that tiny weights cannot overflow; selection is a
    partial sort (:func:`numpy.argpartition`).

    Zero weights: zero-weight items are taken only after every positive-weight
    item has been taken, and uniformly at random among themselves (the limit
    of a vanishing equal weight). ``rng`` always draws exactly ``n`` variates.

    Raises ValueError for non-1-D, negative, NaN or infinite weights, and for
    ``size`` outside ``[0, n]``.
    """
    w = _check(weights, size)
    n = w.size
    e = rng.standard_exponential(n)
    if size == 0:
        return np.empty(0, dtype=np.intp)
    if size == n:
        return np.arange(n, dtype=np.intp)
    positive = w > 0
    n_pos = int(np.count_nonzero(positive))
    with np.errstate(divide="ignore"):
        log_e = np.log(e)  # e == 0 (probability 0) gives -inf: taken first, harmless
    if size <= n_pos:
        pos_idx = np.flatnonzero(positive)
        keys = log_e[pos_idx] - np.log(w[pos_idx])
        chosen = pos_idx[np.argpartition(keys, size - 1)[:size]]
    else:
        zero_idx = np.flatnonzero(~positive)
        extra = size - n_pos
        # iid clocks among the zero-weight items: a uniform subset of them
        take = zero_idx[np.argpartition(log_e[zero_idx], extra - 1)[:extra]]
        chosen = np.concatenate([np.flatnonzero(positive), take])
    return np.sort(chosen).astype(np.intp, copy=False)


def exact_inclusion_probabilities(weights: np.ndarray, size: int) -> np.ndarray:
    """Exact first-order inclusion probabilities of successive weighted sampling.

    ``P(i in sample)`` for the process of :func:`weighted_sample_without_replacement`
    (same zero-weight convention: once the remaining positive weight is 0, draws
    are uniform among the remaining items). Computed by dynamic programming over
    the 2^n subsets of already drawn items, so only for n ≤ 12 (test oracle).
    """
    w = _check(weights, size)
    n = w.size
    if n > _MAX_EXACT_N:
        raise ValueError(f"exact_inclusion_probabilities is for n <= {_MAX_EXACT_N}, got n={n}")
    n_states = 1 << n
    bits = (np.arange(n_states)[:, None] >> np.arange(n)) & 1  # (2^n, n) membership
    n_drawn = bits.sum(axis=1)
    prob = np.zeros(n_states)
    prob[0] = 1.0
    # states in order of increasing popcount: every predecessor is finished first
    for state in np.argsort(n_drawn, kind="stable"):
        p = prob[state]
        if p == 0.0 or n_drawn[state] >= size:
            continue
        remaining = np.flatnonzero(bits[state] == 0)
        rem_weight = w[remaining].sum()
        if rem_weight > 0:
            step = w[remaining] / rem_weight
        else:
            step = np.full(remaining.size, 1.0 / remaining.size)
        prob[state | (1 << remaining)] += p * step
    final = n_drawn == size
    return prob[final] @ bits[final].astype(np.float64)
