"""KL-optimised item weights of the classic evaluation protocol ([MYT14]; docs/experiments/e6.md).

A. de Myttenaere, B. Golden, B. Le Grand, F. Rossi, *Reducing offline evaluation
bias in recommendation systems* (Benelearn 2014) and *Study of a bias in the
offline evaluation of a recommendation algorithm* (2015).

The classic protocol draws a user uniformly, then an item of the user's profile
I_u. With item weights ω > 0 the item is drawn with P(i|u,ω) = ω_i 1[i∈I_u] /
Σ_{j∈I_u} ω_j, so the item marginal is P(i|ω) = (1/|U|) Σ_u P(i|u,ω) (U = the
users with a non-empty profile). The weights minimise

    D(ω) = Σ_i P_ref(i) log(P_ref(i) / P(i|ω)),

the divergence from a reference marginal P_ref (the marginal at an earlier time
t0, or a MAR/uniform target). With s = Xω the profile sums of the binary
users × items matrix X and r_i = P_ref(i)/P(i|ω), the gradient is

    ∂D/∂ω_k = (1/|U|) Σ_u X_uk a_u / s_u − P_ref(k)/ω_k,   a_u = Σ_i X_ui ω_i r_i / s_u,

the paper's Σ_i P_ref(i)/(ω_k P(i|ω)) (P(i,k|ω) − δ_ik P(k|ω)) written with four
sparse products, so one evaluation costs O(nnz). The fit runs L-BFGS-B on
θ = log ω (so ω > 0) within [``min_weight``, ``max_weight``], moving only the p
items whose marginal changes most, |P(i|1) − P_ref(i)|; the others stay at 1.

Items no user holds have P(i|ω) = 0 for every ω and cannot be matched: P_ref is
restricted to the items present (the support) and renormalised there. D is
invariant to scaling ω; the gradient in θ sums to 0, so a fit of every item
keeps Σ log ω = 0 (geometric mean 1) unless a bound is hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

__all__ = [
    "KLFit",
    "active_items",
    "fit_kl_weight_path",
    "fit_kl_weights",
    "item_marginal",
    "kl_objective",
    "pair_weights",
    "profile_matrix",
]


def profile_matrix(
    users: np.ndarray, items: np.ndarray, n_users: int, n_items: int
) -> sp.csr_matrix:
    """Binary users × items CSR matrix of the profiles I_u (duplicate pairs counted once)."""
    u = np.asarray(users)
    i = np.asarray(items)
    if u.shape != i.shape or u.ndim != 1:
        raise ValueError(f"users and items must be 1-D of equal length, got {u.shape}, {i.shape}")
    for name, ids, n in (("users", u, n_users), ("items", i, n_items)):
        if ids.size and (
            not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= n
        ):
            raise ValueError(f"{name} must be integer ids in [0, {n})")
    x = sp.csr_matrix(
        (np.ones(u.size), (u.astype(np.int64), i.astype(np.int64))), shape=(n_users, n_items)
    )
    x.sum_duplicates()
    x.data[:] = 1.0
    x.sort_indices()
    return x


def _check_profiles(profiles: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    if not sp.issparse(profiles) or profiles.ndim != 2:
        raise ValueError("profiles must be a 2-D scipy sparse users x items matrix")
    x = sp.csr_matrix(profiles, dtype=np.float64)
    x.sum_duplicates()
    x.eliminate_zeros()
    if x.nnz == 0:
        raise ValueError("profiles are empty: no user holds any item")
    if np.any(x.data != 1.0):
        x = x.copy()
        x.data[:] = 1.0
    x.sort_indices()
    return x


def _check_weights(weights: np.ndarray | None, n_items: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_items)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_items,):
        raise ValueError(f"weights must have shape ({n_items},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite and > 0")
    return w


class _Problem:
    """The sparse pieces of D(ω), computed once per profile matrix and reference."""

    def __init__(self, profiles: sp.spmatrix | sp.sparray, p_ref: np.ndarray | None) -> None:
        x = _check_profiles(profiles)
        rows = np.diff(x.indptr) > 0
        self.x = x[rows] if not rows.all() else x  # U = users with a non-empty profile
        self.xt = sp.csr_matrix(self.x.T)
        self.n_users = self.x.shape[0]
        self.n_items = self.x.shape[1]
        self.support = np.diff(self.xt.indptr) > 0
        if p_ref is None:
            return
        ref = np.asarray(p_ref, dtype=np.float64)
        if ref.shape != (self.n_items,):
            raise ValueError(f"p_ref must have shape ({self.n_items},), got {ref.shape}")
        if not np.all(np.isfinite(ref)) or np.any(ref < 0):
            raise ValueError("p_ref must be finite and >= 0")
        ref = np.where(self.support, ref, 0.0)
        total = ref.sum()
        if total <= 0:
            raise ValueError("p_ref puts no mass on the items present in the profiles")
        self.p_ref = ref / total
        self.ref_pos = self.p_ref > 0

    def marginal(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(P(i|ω), s) with s = Xω the profile sums."""
        s = self.x @ w
        return w * (self.xt @ (1.0 / s)) / self.n_users, s

    def value_grad(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """D(ω) and ∂D/∂ω (module docstring), in O(nnz)."""
        p, s = self.marginal(w)
        pos = self.ref_pos
        value = float(np.sum(self.p_ref[pos] * np.log(self.p_ref[pos] / p[pos])))
        r = np.zeros(self.n_items)
        r[pos] = self.p_ref[pos] / p[pos]
        a = (self.x @ (r * w)) / s
        grad = (self.xt @ (a / s)) / self.n_users - self.p_ref / w
        return value, grad


def item_marginal(
    profiles: sp.spmatrix | sp.sparray, weights: np.ndarray | None = None
) -> np.ndarray:
    """P(i|ω) = (1/|U|) Σ_u ω_i 1[i∈I_u] / Σ_{j∈I_u} ω_j ([MYT14]; docs/experiments/e6.md).

    ``weights`` None means ω = 1, the classic protocol's marginal. U holds the
    users with a non-empty profile.
    """
    problem = _Problem(profiles, None)
    return problem.marginal(_check_weights(weights, problem.n_items))[0]


def kl_objective(
    profiles: sp.spmatrix | sp.sparray, p_ref: np.ndarray, weights: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """D(ω) = KL(P_ref ‖ P(·|ω)) and its analytic gradient ∂D/∂ω ([MYT14]; docs/experiments/e6.md).

    P_ref is restricted to the items present in ``profiles`` and renormalised.
    """
    problem = _Problem(profiles, p_ref)
    return problem.value_grad(_check_weights(weights, problem.n_items))


def pair_weights(profiles: sp.spmatrix | sp.sparray, weights: np.ndarray) -> sp.csr_matrix:
    """P(i|u,ω) = ω_i / Σ_{j∈I_u} ω_j on every stored pair of ``profiles`` (same structure).

    The importance weights of the weighted leave-one-out protocol: each
    non-empty row sums to 1.
    """
    x = _check_profiles(profiles)
    w = _check_weights(weights, x.shape[1])
    s = x @ w
    counts = np.diff(x.indptr)
    out = x.copy()
    out.data = w[x.indices] / np.repeat(s, counts)
    return out


def active_items(
    profiles: sp.spmatrix | sp.sparray, p_ref: np.ndarray, p: int | None
) -> np.ndarray:
    """The ``p`` items present in ``profiles`` whose marginal changes most ([MYT14]).

    Change = |P(i|1) − P_ref(i)| with P_ref renormalised on the support; ties go
    to the smaller item id. ``p`` None (or ≥ the support size) means every
    present item. Returned sorted by item id.
    """
    problem = _Problem(profiles, p_ref)
    return _active(problem, p)


def _active(problem: _Problem, p: int | None) -> np.ndarray:
    present = np.flatnonzero(problem.support)
    if p is None or p >= present.size:
        return present
    if isinstance(p, bool) or not isinstance(p, int | np.integer) or p < 0:
        raise ValueError(f"p (number of active items) must be an int >= 0 or None, got {p!r}")
    change = np.abs(problem.marginal(np.ones(problem.n_items))[0] - problem.p_ref)[present]
    order = np.lexsort((present, -change))  # largest change first, then smaller id
    return np.sort(present[order[:p]])


@dataclass(frozen=True)
class KLFit:
    """The result of :func:`fit_kl_weights`."""

    weights: np.ndarray
    """ω for every item (1 outside the active set)."""
    divergence: float
    """D(ω) at the returned weights."""
    initial_divergence: float
    """D at the starting weights (ω = 1 unless warm-started)."""
    active: np.ndarray
    """The items allowed to move (sorted ids)."""
    n_iterations: int
    """L-BFGS-B iterations."""
    converged: bool
    """Whether L-BFGS-B reported convergence (always True when nothing moves)."""


def _fit(
    problem: _Problem,
    active: np.ndarray,
    init: np.ndarray,
    *,
    min_weight: float,
    max_weight: float,
    max_iter: int,
    tol: float,
) -> KLFit:
    start_value = problem.value_grad(init)[0]
    if active.size == 0:
        return KLFit(init.copy(), start_value, start_value, active, 0, True)
    theta0 = np.clip(np.log(init[active]), np.log(min_weight), np.log(max_weight))
    base = init.copy()

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = base.copy()
        w[active] = np.exp(theta)
        value, grad = problem.value_grad(w)
        return value, grad[active] * w[active]  # chain rule: ∂D/∂θ = ω ∂D/∂ω

    import scipy.optimize  # lazy: 0.3 s of every job importing the interventions

    # L-BFGS-B's small dense BLAS calls only slow down with several threads
    with threadpool_limits(limits=1, user_api="blas"):
        result = scipy.optimize.minimize(
            fun,
            theta0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(np.log(min_weight), np.log(max_weight))] * active.size,
            options={"maxiter": max_iter, "ftol": tol, "gtol": tol * 1e-2, "maxcor": 20},
        )
    w = base.copy()
    w[active] = np.exp(result.x)
    value = problem.value_grad(w)[0]
    if value > start_value:  # never worse than the start (keeps warm-started paths monotone)
        w, value = init.copy(), start_value
    return KLFit(w, value, start_value, active, int(result.nit), bool(result.success))


def _check_fit_options(min_weight: float, max_weight: float, max_iter: int, tol: float) -> None:
    if not (0 < min_weight <= 1 <= max_weight < np.inf):
        raise ValueError(
            f"weight bounds must satisfy 0 < min_weight <= 1 <= max_weight < inf, "
            f"got [{min_weight}, {max_weight}]"
        )
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be finite and > 0, got {tol!r}")


def fit_kl_weights(
    profiles: sp.spmatrix | sp.sparray,
    p_ref: np.ndarray,
    *,
    p: int | None = None,
    init: np.ndarray | None = None,
    min_weight: float = 1e-6,
    max_weight: float = 1e6,
    max_iter: int = 2000,
    tol: float = 1e-10,
) -> KLFit:
    """Item weights ω minimising D(ω) with only ``p`` active items ([MYT14]).

    See docs/experiments/e6.md.

    L-BFGS-B on θ = log ω of the active items (:func:`active_items`), the other
    weights held at their ``init`` value (default 1), ω within
    [``min_weight``, ``max_weight``]. ``tol`` is L-BFGS-B's relative tolerance on D.
    """
    _check_fit_options(min_weight, max_weight, max_iter, tol)
    problem = _Problem(profiles, p_ref)
    start = _check_weights(init, problem.n_items)
    return _fit(
        problem,
        _active(problem, p),
        start,
        min_weight=min_weight,
        max_weight=max_weight,
        max_iter=max_iter,
        tol=tol,
    )


def fit_kl_weight_path(
    profiles: sp.spmatrix | sp.sparray,
    p_ref: np.ndarray,
    ps: Sequence[int | None],
    *,
    min_weight: float = 1e-6,
    max_weight: float = 1e6,
    max_iter: int = 2000,
    tol: float = 1e-10,
) -> list[KLFit]:
    """:func:`fit_kl_weights` for every p of ``ps`` (None = all), returned in the order of ``ps``.

    Fits run by increasing p, each warm-started from the previous optimum: the
    active sets are nested (top-p by marginal change), so the previous optimum is
    feasible and the optimal D never increases with p.
    """
    _check_fit_options(min_weight, max_weight, max_iter, tol)
    problem = _Problem(profiles, p_ref)
    n_present = int(problem.support.sum())
    size = [n_present if q is None else min(int(q), n_present) for q in ps]
    for q in ps:
        if q is not None:
            _active(problem, q)  # validates q
    fits: dict[int, KLFit] = {}
    current = np.ones(problem.n_items)
    for q in sorted(set(size)):
        fit = _fit(
            problem,
            _active(problem, q),
            current,
            min_weight=min_weight,
            max_weight=max_weight,
            max_iter=max_iter,
            tol=tol,
        )
        fits[q] = fit
        current = fit.weights
    return [fits[q] for q in size]
