"""The ``e4`` section of ``python -m debiaseval.benchmark`` (docs/experiments/e4.md).

E4's weighted ALS (:class:`~debiaseval.recommenders.rating_mf.WeightedMF`, compiled
ridge half-steps) against the former Gram builder (:class:`ReferenceWeightedMF`) at
Coat's, Yahoo! R3's and ML-100K's shapes, per d and loss, in CPU seconds of a fit of
``--e4-sweeps`` sweeps.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from debiaseval.benchmarks.common import best, ratio
from debiaseval.recommenders.rating_mf import WeightedMF, normalise_weights
from debiaseval.recommenders.ridge import RowGroups

__all__ = ["E4_SHAPES", "ReferenceWeightedMF", "reference_ridge_rows", "run"]


_REFERENCE_BLOCK = 4_000_000
"""Upper bound on (pairs × (d+1)²) floats the reference holds while building Gram matrices."""


def _reference_ridge(
    weight: sp.csr_matrix, weighted_target: sp.csr_matrix, x: np.ndarray, ridge: np.ndarray
) -> np.ndarray:
    """Normal equations (Xᵀ Ω_r X + Λ) θ_r = Xᵀ Ω_r t_r of every row r of ``weight`` (Ω), as
    E4 solved them at commit 65cf481: the Gram matrices of a block of rows are the sparse
    product Ω_block @ [vec(x_j x_jᵀ)]_j (pairs × (d+1)² work outside BLAS), solved with
    batched ``numpy.linalg.solve``; ``ridge`` is the diagonal Λ. Rows without pairs get
    θ = 0 (with Λ singular, an empty row's system is singular: its θ is set to 0)."""
    n_rows, n_cols = weight.shape
    k = x.shape[1]
    rhs = weighted_target @ x
    out = np.empty((n_rows, k))
    lam = np.diag(ridge)
    chunk = max(1, _REFERENCE_BLOCK // (k * k))
    empty = np.diff(weight.indptr) == 0
    for r0 in range(0, n_rows, chunk):
        rows = weight[r0 : r0 + chunk]
        gram = np.zeros((rows.shape[0], k * k))
        if n_cols > chunk:
            rows = rows.tocsc()
        for c0 in range(0, n_cols, chunk):
            xc = x[c0 : c0 + chunk]
            outer = (xc[:, :, None] * xc[:, None, :]).reshape(len(xc), k * k)
            gram += (rows if n_cols <= chunk else rows[:, c0 : c0 + chunk]) @ outer
        gram = gram.reshape(-1, k, k) + lam
        gram[empty[r0 : r0 + chunk]] = np.eye(k)
        out[r0 : r0 + chunk] = np.linalg.solve(gram, rhs[r0 : r0 + chunk, :, None])[:, :, 0]
    return out


def reference_ridge_rows(
    groups: RowGroups,
    omega: np.ndarray,
    target: np.ndarray,
    x: np.ndarray,
    l2: float,
    *,
    free_last: bool = False,
) -> np.ndarray:
    """E4's half-step as at commit 65cf481, the yardstick of :meth:`RowGroups.solve` (same
    arguments; ``free_last``: no λ on the last coefficient)."""
    order = np.lexsort(
        (groups.sorted_cols, np.repeat(np.arange(groups.n_rows), np.diff(groups.ptr)))
    )
    pairs = groups.order[order]
    cols, w = groups.sorted_cols[order], omega[pairs]
    shape = (groups.n_rows, groups.n_cols)
    weight = sp.csr_matrix((w, cols, groups.ptr), shape=shape)
    weighted_target = sp.csr_matrix((w * target[pairs], cols, groups.ptr), shape=shape)
    ridge = np.full(x.shape[1], float(l2))
    if free_last:
        ridge[-1] = 0.0
    return _reference_ridge(weight, weighted_target, x, ridge)


class _ReferenceLayout:
    """The observed pairs in CSR order by user and by item (commit 65cf481's layout)."""

    def __init__(self, users: np.ndarray, items: np.ndarray, n_users: int, n_items: int):
        self.by_user = np.lexsort((items, users))
        self.by_item = np.lexsort((users, items))
        self.user_cols = items[self.by_user]
        self.item_cols = users[self.by_item]
        self.user_ptr = np.searchsorted(users[self.by_user], np.arange(n_users + 1))
        self.item_ptr = np.searchsorted(items[self.by_item], np.arange(n_items + 1))
        self.shape = (n_users, n_items)

    def matrices(self, values: np.ndarray, target: np.ndarray, *, by_user: bool):
        """CSR (Ω, Ω∘T) with users (``by_user``) or items as rows."""
        if by_user:
            order, cols, ptr, shape = self.by_user, self.user_cols, self.user_ptr, self.shape
        else:
            order, cols, ptr = self.by_item, self.item_cols, self.item_ptr
            shape = self.shape[::-1]
        w = values[order]
        return (
            sp.csr_matrix((w, cols, ptr), shape=shape),
            sp.csr_matrix((w * target[order], cols, ptr), shape=shape),
        )


class ReferenceWeightedMF(WeightedMF):
    """:class:`WeightedMF` fitted as at commit 65cf481 (the benchmark's yardstick): the same
    start, its layout, its Gram-builder half-steps (:func:`_reference_ridge`), and its
    unchunked ``predict`` for every residual it needed (twice per sweep, four times for the
    absolute error). ``penalise_biases`` is honoured (65cf481 always penalised them)."""

    def predict(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        u = np.asarray(users, dtype=np.int64)
        i = np.asarray(items, dtype=np.int64)
        out = np.einsum("nd,nd->n", self.user_factors_[u], self.item_factors_[i])
        out += self.user_bias_[u] + self.item_bias_[i] + self.offset_
        return out

    def fit(self, users, items, ratings, *, n_users, n_items, weights=None, rng, init=None):  # type: ignore[no-untyped-def]
        self.validate_params()
        u = np.asarray(users).astype(np.int64)
        i = np.asarray(items).astype(np.int64)
        y = np.asarray(ratings, dtype=np.float64)
        w = normalise_weights(weights, y.size)
        layout = _ReferenceLayout(u, i, int(n_users), int(n_items))
        d = int(self.factors)
        self.n_users_, self.n_items_ = int(n_users), int(n_items)
        self.user_factors_ = self.init_scale * rng.standard_normal((n_users, d))
        self.item_factors_ = self.init_scale * rng.standard_normal((n_items, d))
        self.user_bias_ = np.zeros(n_users)
        self.item_bias_ = np.zeros(n_items)
        self.offset_ = float(np.dot(w, y) / w.sum())
        objective = [self._objective(w, y - self.predict(u, i))]
        for _ in range(int(self.max_iter)):
            self._reference_sweep(u, i, y, w, layout)
            objective.append(self._objective(w, y - self.predict(u, i)))
            if objective[-2] - objective[-1] <= self.tol * abs(objective[-2]):
                break
        self.objective_ = np.asarray(objective)
        return self

    def _reference_sweep(self, u, i, y, w, layout: _ReferenceLayout) -> None:  # type: ignore[no-untyped-def]
        scale = self.l2 if self.loss == "squared" else 2.0 * self.l2
        ridge = np.full(self.factors + 1, float(scale))
        if not self.penalise_biases:
            ridge[-1] = 0.0

        def omega(residual=None):  # type: ignore[no-untyped-def]
            if self.loss == "squared":
                return w
            if residual is None:
                residual = y - self.predict(u, i)
            return self._irls(w, residual)

        x = np.hstack([self.item_factors_, np.ones((self.n_items_, 1))])
        target = y - self.offset_ - self.item_bias_[i]
        theta = _reference_ridge(*layout.matrices(omega(), target, by_user=True), x, ridge)
        self.user_factors_, self.user_bias_ = theta[:, :-1], theta[:, -1].copy()
        x = np.hstack([self.user_factors_, np.ones((self.n_users_, 1))])
        target = y - self.offset_ - self.user_bias_[u]
        theta = _reference_ridge(*layout.matrices(omega(), target, by_user=False), x, ridge)
        self.item_factors_, self.item_bias_ = theta[:, :-1], theta[:, -1].copy()
        residual = y - self.predict(u, i)
        weight = omega(residual)
        self.offset_ += float(np.dot(weight, residual) / weight.sum())


E4_SHAPES = {
    "coat": (290, 300, 6_960),
    "yahoo-r3": (15_400, 1_000, 311_704),
    "ml-100k-semi": (943, 1_682, 78_990),
}
"""E4's training data shapes: users, items, MNAR ratings (ml-100k-semi: the pairs drawn at
α = 0.25 in seed 0)."""


def e4_problem(n_users: int, n_items: int, n_pairs: int, seed: int) -> dict[str, Any]:
    """Distinct pairs drawn with popularity-skewed item probabilities, ratings 1–5, 1/P weights:
    the keyword arguments of :meth:`WeightedMF.fit`."""
    rng = np.random.default_rng(seed)
    popularity = rng.pareto(1.5, n_items) + 0.05
    p_item = popularity / popularity.sum()
    keys = np.unique(
        rng.integers(0, n_users, 2 * n_pairs) * n_items + rng.choice(n_items, 2 * n_pairs, p=p_item)
    )
    keys = rng.permutation(keys)[:n_pairs]
    items = keys % n_items
    return {
        "users": keys // n_items,
        "items": items,
        "ratings": rng.integers(1, 6, keys.size).astype(np.float64),
        "weights": 1.0 / np.clip(p_item[items] * n_items / 10, 0.01, 1.0),
        "n_users": n_users,
        "n_items": n_items,
    }


def _e4_fit(cls: type[WeightedMF], problem: dict[str, Any], params: dict[str, Any]) -> WeightedMF:
    return cls(**params).fit(**problem, rng=np.random.default_rng(0))


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """Time E4's ALS fits, new against reference, per shape, d and loss; add their ratios."""
    print(
        f"\n== E4 weighted ALS: former Gram builder (reference) vs compiled ridge solver, "
        f"{args.e4_sweeps} sweeps per fit, CPU seconds"
    )
    for name in args.e4_shapes:
        shape = [max(4, round(v * args.e4_scale)) for v in E4_SHAPES[name]]
        problem = e4_problem(*shape, seed=0)
        print(f"  {name} shape: {shape[0]:,} x {shape[1]:,}, {problem['users'].size:,} ratings")
        for d in args.e4_factors:
            for loss in args.e4_losses:
                params = {
                    "factors": d,
                    "l2": 10.0,
                    "loss": loss,
                    "max_iter": args.e4_sweeps,
                    "tol": 0.0,
                }
                seconds, out = best(
                    args.repeat,
                    time.process_time,
                    reference=lambda p=params, q=problem: _e4_fit(ReferenceWeightedMF, q, p),
                    new=lambda p=params, q=problem: _e4_fit(WeightedMF, q, p),
                )
                ref, new = out["reference"].objective_[-1], out["new"].objective_[-1]
                label = f"{name} d={d} {loss}"
                rows[f"e4 {label}: reference fit [s]"] = seconds["reference"]
                rows[f"e4 {label}: new fit [s]"] = seconds["new"]
                gap = rows[f"e4 {label}: objective rel. diff"] = abs(new - ref) / abs(ref)
                print(
                    f"  {label:<24} reference {seconds['reference']:8.3f} s, new "
                    f"{seconds['new']:8.3f} s; objective rel. diff {gap:.1e}"
                )
                ratio(
                    rows,
                    f"e4 {label}: reference / new",
                    seconds["reference"],
                    seconds["new"],
                    "target >= 5 at d = 40",
                )
