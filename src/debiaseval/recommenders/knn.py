"""Neighbourhood recommenders of [SAC20] §4 (docs/experiments/e1.md): cosine UserKNN and ItemKNN.

Similarities are plain cosines of the raw rating vectors (unrated = 0, no mean
centring). Neighbourhoods are the k most similar *other* users or items, ties
broken by the smaller index. Nothing of size n_users × n_users (or
n_items × n_items, dense) is ever built: a compiled kernel keeps each row's k
best similarities while it sums that row's sparse product, on the job's
threads (:func:`_neighbour_lists`).

``fit`` stores each user's (or item's) neighbours *best first*, so the top-j
neighbourhood of any j ≤ k is a prefix of the list: :meth:`KNNRecommender.with_k`
gives a fitted twin for a smaller k without recomputing any similarity, and a
grid over k costs one fit at the grid's largest k.
"""

from __future__ import annotations

import copy
from typing import Self

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import NotFittedError, Recommender, check_int

__all__ = ["DIRECTIONS", "ItemKNN", "KNNRecommender", "UserKNN", "kernel_threads"]


def _row_normalize(x: sp.csr_matrix) -> sp.csr_matrix:
    """Rows scaled to unit L2 norm (all-zero rows stay zero)."""
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(inv) @ x)


def _regular_csr(cols: np.ndarray, vals: np.ndarray, n_cols: int) -> sp.csr_matrix:
    """CSR matrix whose row r holds ``cols[r]`` with ``vals[r]``, in the given (unsorted) order."""
    n_rows, width = cols.shape
    indptr = np.arange(n_rows + 1, dtype=np.int64) * width
    return sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=(n_rows, n_cols))


def kernel_threads() -> int:
    """Threads of the compiled neighbour-list kernel: the size of the BLAS thread pool.

    A workflow job caps that pool at its ``threads`` (``threadpool_limits``), so the
    kernel follows the job; elsewhere it is the machine's default. Never more than
    numba's pool. The lists do not depend on it.
    """
    import numba
    from threadpoolctl import threadpool_info

    blas = [int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]
    return max(1, min([numba.config.NUMBA_NUM_THREADS, *blas]))


def _unsigned(x: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x``'s CSR arrays with unsigned index types (uint64 offsets, uint32 column ids):
    compiled code then indexes without the checks for negative indices (about 1.5x faster)."""
    return x.indptr.astype(np.uint64), x.indices.astype(np.uint32), x.data


def _neighbour_lists(unit: sp.csr_matrix, k: int, threads: int | None = None) -> sp.csr_matrix:
    """Best-first top-``k`` neighbour lists of the rows of ``unit`` (unit-norm rows).

    Row r of the n × n result holds, in its stored order, the ``k`` rows s ≠ r
    with the largest cosine ``unit[r]·unit[s]`` (ties by smaller index; zero
    similarities kept), so every row has exactly ``k`` entries and its first j
    entries are its top-j neighbours. Built by a compiled pruned sparse product
    (:mod:`debiaseval.recommenders._knn_kernel`: each row's top-k kept while its
    product row is summed, rows over ``threads`` threads, default
    :func:`kernel_threads`); the similarities are bit for bit those of scipy's
    ``unit[r] @ unit.T``, and the lists the same for any thread count.
    """
    n = unit.shape[0]
    cols = np.zeros((n, k), dtype=np.int64)
    vals = np.zeros((n, k), dtype=np.float64)
    if k > 0 and n > 0:
        import numba

        from debiaseval.recommenders._knn_kernel import top_k_lists

        threads = kernel_threads() if threads is None else int(threads)
        unit_t = sp.csr_matrix(unit.T)
        before = numba.get_num_threads()
        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
        try:
            top_k_lists(*_unsigned(unit), *_unsigned(unit_t), k, min(n, 8 * threads), cols, vals)
        finally:
            numba.set_num_threads(before)
    return _regular_csr(cols, vals, n)


def _prefix(lists: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """The first ``k`` entries of every row of regular best-first ``lists``."""
    n = lists.shape[0]
    width = int(lists.indptr[1]) if n else 0
    keep = min(k, width)
    cols = lists.indices.reshape(n, width)[:, :keep]
    vals = lists.data.reshape(n, width)[:, :keep]
    return _regular_csr(cols, vals, lists.shape[1])


class KNNRecommender(Recommender):
    """Shared machinery of the cosine k-NN recommenders: best-first lists and :meth:`with_k`.

    Subclasses set ``_by_users`` (neighbours among users, or among items) and
    :meth:`_use_neighbours`, which derives their scoring state from the lists.
    """

    _by_users: bool

    def __init__(self, *, k: int = 50) -> None:
        self.k = k

    def validate_params(self) -> None:
        check_int("k", self.k)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        self.train_ = train
        rows = train if self._by_users else sp.csr_matrix(train.T)
        k = min(int(self.k), rows.shape[0] - 1)
        self._use_neighbours(_neighbour_lists(_row_normalize(rows), k))

    def _use_neighbours(self, lists: sp.csr_matrix) -> None:
        """Store the best-first neighbour ``lists`` as ``neighbours_`` and derive scoring state."""
        self.neighbours_ = lists

    def with_k(self, k: int) -> Self:
        """A fitted twin with hyperparameter ``k``, scoring with the first ``k`` neighbours.

        Its scores equal, bit for bit, those of a fresh model with ``k`` fitted on
        the same matrix (same neighbourhoods, ties by smaller index, same
        summation order), at the cost of slicing the stored lists: fit once at
        the largest k of a grid, then call ``with_k`` for every k. ``k`` may not
        exceed the k this model was fitted with (unless that already covered
        every other user or item). The twin shares ``train_`` with this model.
        """
        if not hasattr(self, "neighbours_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit() first")
        check_int("k", k)
        n, width = self.neighbours_.shape[0], int(self.neighbours_.indptr[1])
        if k > width and width < n - 1:
            raise ValueError(f"k={k} exceeds the k={width} this model was fitted with")
        twin = copy.copy(self)
        twin.k = k
        twin._use_neighbours(_prefix(self.neighbours_, int(k)))
        return twin


class UserKNN(KNNRecommender):
    """User-based cosine k-nearest-neighbours (docs/experiments/e1.md).

    sim(u, v) = r_u·r_v / (‖r_u‖ ‖r_v‖); N_k(u) = the ``k`` users v ≠ u with the
    largest sim(u, v) (ties by smaller id); score(u, i) = Σ_{v ∈ N_k(u), v rated i}
    sim(u, v)·r_vi (a similarity-weighted sum, not normalised): the user's own k
    nearest neighbours each vote, as in RankSys's UserNeighborhoodRecommender,
    which [SAC20] used, so UserKNN has no direction to choose. If there are
    fewer than k other users, all of them are neighbours. ``fit`` stores the
    user × user matrix ``neighbours_`` (row u holds N_k(u) best first with its
    similarities; memory O(n_users·k)); a score is one sparse product with it.
    """

    name = "userknn"
    _by_users = True

    def _score(self, users: np.ndarray) -> np.ndarray:
        return (self.neighbours_[users] @ self.train_).toarray()


DIRECTIONS = ("rated_to_candidate", "candidate_to_rated")
"""ItemKNN's ``direction`` values: whose neighbourhood links a rated item to a candidate."""


class ItemKNN(KNNRecommender):
    """Item-based cosine k-nearest-neighbours (docs/experiments/e1.md).

    sim(i, j) = r_·i·r_·j / (‖r_·i‖ ‖r_·j‖) over users; N_k(j) = the ``k`` items
    i ≠ j with the largest sim(i, j) (ties by smaller id). ``direction`` says
    whose neighbourhood links a rated item j ∈ I_u to a candidate i:

    - ``rated_to_candidate`` (default, RankSys's ItemNeighborhoodRecommender,
      which [SAC20] used): each rated item votes for its own k nearest
      neighbours, score(u, i) = Σ_{j ∈ I_u, i ∈ N_k(j)} sim(i, j)·r_uj;
    - ``candidate_to_rated``: a candidate collects the votes of the rated items
      among its own k nearest neighbours, score(u, i) = Σ_{j ∈ I_u ∩ N_k(i)}
      sim(i, j)·r_uj.

    Neither sum is normalised. ``fit`` stores the best-first lists
    ``neighbours_``, the sparse item × item top-k matrix ``similarity_`` (row j
    holds N_k(j); zero similarities are dropped since they add nothing to a
    score) and ``weights_``, the matrix W with scores R·W: ``similarity_``
    itself for ``rated_to_candidate``, its transpose for ``candidate_to_rated``.
    """

    name = "itemknn"
    _by_users = False

    def __init__(self, *, k: int = 50, direction: str = "rated_to_candidate") -> None:
        super().__init__(k=k)
        self.direction = direction

    def validate_params(self) -> None:
        super().validate_params()
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {self.direction!r}")

    def _use_neighbours(self, lists: sp.csr_matrix) -> None:
        self.neighbours_ = lists
        self.similarity_ = lists.copy()
        self.similarity_.eliminate_zeros()
        if self.direction == "rated_to_candidate":
            self.weights_ = self.similarity_
        else:
            self.weights_ = sp.csr_matrix(self.similarity_.T)

    def _score(self, users: np.ndarray) -> np.ndarray:
        return (self.train_[users] @ self.weights_).toarray()
