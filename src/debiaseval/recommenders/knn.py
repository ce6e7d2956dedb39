"""Neighbourhood recommenders of SPEC §5 ([SAC20] §4): cosine UserKNN and ItemKNN.

Similarities are plain cosines of the raw rating vectors (unrated = 0, no mean
centring). Neighbourhoods are the k most similar *other* users or items, ties
broken by the smaller index. Nothing of size n_users × n_users (or
n_items × n_items, dense) is ever built: similarities are computed for blocks
of rows with sparse products, sized to about ``_BLOCK_CELLS`` dense cells.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from debiaseval.ranking import top_k_indices
from debiaseval.recommenders.base import Recommender, check_int

__all__ = ["ItemKNN", "UserKNN"]

_BLOCK_CELLS = 1 << 22  # dense cells per similarity block (32 MiB of float64)


def _row_normalize(x: sp.csr_matrix) -> sp.csr_matrix:
    """Rows scaled to unit L2 norm (all-zero rows stay zero)."""
    norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
    inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(inv) @ x)


def _top_k_neighbours(sims: np.ndarray, rows: np.ndarray, k: int) -> sp.csr_matrix:
    """Keep each row's ``k`` largest similarities, excluding column ``rows[r]`` (itself)."""
    sims[np.arange(rows.size), rows] = -np.inf
    cols = top_k_indices(sims, k)
    vals = np.take_along_axis(sims, cols, axis=1)
    indptr = np.arange(0, cols.size + 1, k, dtype=np.int64)
    return sp.csr_matrix((vals.ravel(), cols.ravel(), indptr), shape=sims.shape)


class UserKNN(Recommender):
    """User-based cosine k-nearest-neighbours (SPEC §5).

    sim(u, v) = r_u·r_v / (‖r_u‖ ‖r_v‖); N_k(u) = the ``k`` users v ≠ u with the
    largest sim(u, v) (ties by smaller id); score(u, i) = Σ_{v ∈ N_k(u), v rated i}
    sim(u, v)·r_vi (a similarity-weighted sum, not normalised). If there are
    fewer than k other users, all of them are neighbours. Neighbourhoods are
    computed at scoring time, for blocks of users.
    """

    name = "userknn"

    def __init__(self, *, k: int = 50) -> None:
        self.k = k

    def validate_params(self) -> None:
        check_int("k", self.k)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        self.train_ = train
        self.normalized_ = _row_normalize(train)
        self.normalized_t_ = sp.csr_matrix(self.normalized_.T)

    def _score(self, users: np.ndarray) -> np.ndarray:
        out = np.zeros((users.size, self.n_items_), dtype=np.float64)
        k = min(int(self.k), self.n_users_ - 1)
        if k == 0:
            return out
        step = max(1, _BLOCK_CELLS // self.n_users_)
        for start in range(0, users.size, step):
            block = users[start : start + step]
            sims = (self.normalized_[block] @ self.normalized_t_).toarray()
            weights = _top_k_neighbours(sims, block, k)
            out[start : start + block.size] = (weights @ self.train_).toarray()
        return out


class ItemKNN(Recommender):
    """Item-based cosine k-nearest-neighbours (SPEC §5).

    sim(i, j) = r_·i·r_·j / (‖r_·i‖ ‖r_·j‖) over users; N_k(i) = the ``k`` items
    j ≠ i with the largest sim(i, j) (ties by smaller id); score(u, i) =
    Σ_{j ∈ I_u ∩ N_k(i)} sim(i, j)·r_uj (not normalised). ``fit`` stores the
    sparse item × item top-k matrix ``similarity_`` (row i holds N_k(i);
    zero similarities are dropped since they add nothing to a score).
    """

    name = "itemknn"

    def __init__(self, *, k: int = 50) -> None:
        self.k = k

    def validate_params(self) -> None:
        check_int("k", self.k)

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        k = min(int(self.k), self.n_items_ - 1)
        self.train_ = train
        if k == 0:
            self.similarity_ = sp.csr_matrix((self.n_items_, self.n_items_))
        else:
            items_t = _row_normalize(sp.csr_matrix(train.T))  # items × users, unit rows
            items = sp.csr_matrix(items_t.T)  # users × items, unit columns
            step = max(1, _BLOCK_CELLS // self.n_items_)
            blocks = []
            for start in range(0, self.n_items_, step):
                block = np.arange(start, min(start + step, self.n_items_))
                sims = (items_t[block] @ items).toarray()
                blocks.append(_top_k_neighbours(sims, block, k))
            self.similarity_ = sp.csr_matrix(sp.vstack(blocks, format="csr"))
            self.similarity_.eliminate_zeros()
        self.similarity_t_ = sp.csr_matrix(self.similarity_.T)

    def _score(self, users: np.ndarray) -> np.ndarray:
        return (self.train_[users] @ self.similarity_t_).toarray()
