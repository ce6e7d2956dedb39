"""Imputations r̂_ui ≈ P(y_ui = 1) of a candidate pair for the doubly robust estimator
(docs/estimators.md, Imputations).

DR (:mod:`debiaseval.estimation.ranking_estimators`) needs r̂ at a few pairs (the held-out pairs and
the top-K lists) and, per user, its sum over the user's candidate items C_u (every item
without a training pair). r̂ must be the relevance of a *candidate* pair under full exposure,
what u would answer about i if asked at random: the MAR relevance, not the share of
positives among rated pairs. An :class:`Imputation` gives both; :data:`IMPUTATIONS` is the
registry of the models a config can name, each fitted on the training part with the
inclusion probabilities π of its pairs:

- ``candidate_rate`` (the default): an item's relevance rate among its candidate pairs, a
  Horvitz–Thompson estimate from the training part; O(pairs + items);
- ``item_rate``: the item's propensity-weighted, self-normalised share of positives among its
  *rated* pairs. It estimates the rate among rated pairs, not among candidates: with
  item-only propensities the weights cancel and it is the plain rated-pair share (on
  Yahoo! R3 a mean of 0.36 against a MAR positive rate of 0.09). Kept for comparison;
- ``logistic_mf``: an IPS-weighted logistic matrix factorisation, P(y = 1) =
  σ(c + a_u + b_i + p_uᵀq_i) fitted on the training pairs with weights 1/π (Schnabel et al.
  ICML 2016's IPS risk; as Wang et al. ICML 2019's imputation model): probabilities, never
  0/1. Fitted once per seed by its own rule (``e1_impute``); its candidate mass scores every
  user × item in blocks of users.

:func:`calibrate` recalibrates any of them on a MAR sample (E1's ``weights`` part): Platt's
logistic link r̂' = σ(a + b·logit r̂) fitted on the MAR pairs that are candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
import pandas as pd

__all__ = [
    "DEFAULT_IMPUTATION",
    "IMPUTATIONS",
    "Imputation",
    "ItemRate",
    "LogisticMF",
    "Predicted",
    "build_imputation",
    "calibrate",
    "candidate_rate",
    "item_rate",
    "logistic_mf",
    "platt",
]

DEFAULT_IMPUTATION = "candidate_rate"
"""The imputation of a DR estimator that names none: the item-level Horvitz–Thompson rate."""

_P_EPS = 1e-6


class Imputation(Protocol):
    """r̂ at given pairs, and its per-user sum over the candidate items."""

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """r̂_ui of the pairs (float64)."""
        ...

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        """Σ_{i∈C_u} r̂_ui per user (length ``n_users``), C_u = items without a training pair."""
        ...


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, _P_EPS, 1.0 - _P_EPS)
    return np.log(q) - np.log1p(-q)


@dataclass(frozen=True)
class ItemRate:
    """An item-level imputation r̂_ui = ``rates[i]``."""

    rates: np.ndarray

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.rates[np.asarray(items, dtype=np.int64)].astype(np.float64)

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        # integer ids of any width index and count as they are: no widened copies
        seen = np.bincount(train_users, weights=self.rates[train_items], minlength=n_users)
        return float(self.rates.sum()) - seen


@dataclass(frozen=True)
class Predicted:
    """r̂_ui = ``transform``(score of (u, i)) of a model scoring pairs and rows of users.

    ``score_pairs(users, items)`` scores pairs, ``score_rows(users)`` every item of
    the users (a dense len(users) × items block); the candidate mass is summed over
    blocks of ``batch_size`` users.
    """

    score_pairs: Callable[[np.ndarray, np.ndarray], np.ndarray]
    score_rows: Callable[[np.ndarray], np.ndarray]
    transform: Callable[[np.ndarray], np.ndarray]
    batch_size: int = 1024

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.transform(self.score_pairs(users, items)).astype(np.float64)

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        out = np.empty(n_users)
        for start in range(0, n_users, self.batch_size):
            users = np.arange(start, min(start + self.batch_size, n_users))
            out[users] = self.transform(self.score_rows(users)).sum(axis=1)
        u = np.asarray(train_users, dtype=np.int64)
        return out - np.bincount(u, weights=self.pairs(u, train_items), minlength=n_users)


@dataclass(frozen=True)
class LogisticMF:
    """r̂_ui = σ(intercept + slope · s_ui), s_ui = offset + user_bias[u] + item_bias[i] +
    user_factors[u] · item_factors[i] (:func:`logistic_mf`; the link is Platt's
    recalibration, identity by default)."""

    offset: float
    user_bias: np.ndarray
    item_bias: np.ndarray
    user_factors: np.ndarray
    item_factors: np.ndarray
    intercept: float = 0.0
    slope: float = 1.0
    batch_size: int = 1024

    def scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        u = np.asarray(users, dtype=np.int64)
        i = np.asarray(items, dtype=np.int64)
        out = self.offset + self.user_bias[u] + self.item_bias[i]
        for start in range(0, u.size, 1 << 18):  # gathered factors in chunks
            end = start + (1 << 18)
            out[start:end] += np.einsum(
                "nd,nd->n", self.user_factors[u[start:end]], self.item_factors[i[start:end]]
            )
        return out

    def pairs(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return _sigmoid(self.intercept + self.slope * self.scores(users, items))

    def candidate_mass(
        self, train_users: np.ndarray, train_items: np.ndarray, n_users: int
    ) -> np.ndarray:
        out = np.empty(n_users)
        base = self.offset + self.item_bias
        for start in range(0, n_users, self.batch_size):
            users = np.arange(start, min(start + self.batch_size, n_users))
            s = self.user_factors[users] @ self.item_factors.T + base
            s += self.user_bias[users, None]
            out[users] = _sigmoid(self.intercept + self.slope * s).sum(axis=1)
        u = np.asarray(train_users, dtype=np.int64)
        return out - np.bincount(u, weights=self.pairs(u, train_items), minlength=n_users)

    def to_frame(self) -> pd.DataFrame:
        """One row per user, then per item: ``kind``, ``id``, ``bias``, ``f0``… (and the
        offset and link in every row), for Parquet (:meth:`from_frame` reads it back)."""
        n_users, n_items = self.user_bias.size, self.item_bias.size
        factors = np.vstack([self.user_factors, self.item_factors])
        frame = pd.DataFrame(
            {
                "kind": pd.Series(["user"] * n_users + ["item"] * n_items, dtype=str),
                "id": np.concatenate([np.arange(n_users), np.arange(n_items)]).astype(np.int32),
                "bias": np.concatenate([self.user_bias, self.item_bias]),
                **{f"f{j}": factors[:, j] for j in range(factors.shape[1])},
            }
        )
        return frame.assign(offset=self.offset, intercept=self.intercept, slope=self.slope)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> LogisticMF:
        users = frame[frame["kind"] == "user"].sort_values("id")
        items = frame[frame["kind"] == "item"].sort_values("id")
        columns = [c for c in frame.columns if c.startswith("f") and c[1:].isdigit()]
        columns.sort(key=lambda c: int(c[1:]))
        first = frame.iloc[0] if len(frame) else None
        return cls(
            offset=float(first["offset"]) if first is not None else 0.0,
            user_bias=users["bias"].to_numpy(np.float64),
            item_bias=items["bias"].to_numpy(np.float64),
            user_factors=users[columns].to_numpy(np.float64).reshape(len(users), len(columns)),
            item_factors=items[columns].to_numpy(np.float64).reshape(len(items), len(columns)),
            intercept=float(first["intercept"]) if first is not None else 0.0,
            slope=float(first["slope"]) if first is not None else 1.0,
        )


def _labels(train: pd.DataFrame, positive_threshold: float) -> np.ndarray:
    return (train["rating"].to_numpy() > positive_threshold).astype(np.float64)


def item_rate(
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    prior: float = 1.0,
) -> ItemRate:
    """Items' shares of positives among their rated pairs, weighted by 1/π
    (docs/estimators.md).

    r̂_i = (Σ_{u∈T_i} y_ui / π_ui + m·w̄·r̄) / (Σ_{u∈T_i} 1 / π_ui + m·w̄): the
    self-normalised IPS estimate of item i's share of positive *rated* pairs, shrunk toward
    the overall rate r̄ = Σ y/π ÷ Σ 1/π by ``prior`` m pseudo-pairs of the mean weight w̄
    (an item without training pairs gets r̄). With propensities that depend on the item only,
    the weights cancel: it is then the plain share of positives among the item's ratings, not
    the relevance of a candidate pair. O(pairs + items).
    """
    w = 1.0 / np.asarray(propensities, dtype=np.float64)
    y = _labels(train, positive_threshold)
    if w.size == 0:
        raise ValueError("the item_rate imputation needs training pairs")
    items = train["item"].to_numpy().astype(np.int64)
    overall = float(w @ y / w.sum())
    pseudo = prior * float(w.mean())
    num = np.bincount(items, weights=w * y, minlength=n_items) + pseudo * overall
    den = np.bincount(items, weights=w, minlength=n_items) + pseudo
    return ItemRate(num / den)


def candidate_rate(
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    prior: float = 10.0,
) -> ItemRate:
    """Items' relevance rates among their candidate pairs, by Horvitz–Thompson
    (docs/estimators.md).

    With π_ui = P((u, i) in the training part) (``propensities``: absolute probabilities of
    the training pairs, in their order), Σ_{u∈T_i} y_ui (1 − π_ui) / π_ui is unbiased for the
    number of positive pairs of item i *outside* the training part, and n_users − |T_i| is
    the number of those pairs. r̂_i = (that sum + m·r̄) / (n_users − |T_i| + m), shrunk toward
    the overall rate r̄ by ``prior`` m pseudo-candidates and clipped to [0, 1]: an estimate of
    P(y = 1) of the item's candidate pairs, whose sum over C_u estimates the user's relevant
    candidates. O(pairs + items).
    """
    pi = np.asarray(propensities, dtype=np.float64)
    if pi.size == 0:
        raise ValueError("the candidate_rate imputation needs training pairs")
    if not np.all((pi > 0) & (pi <= 1)):
        raise ValueError(
            "candidate_rate needs the training pairs' inclusion probabilities in (0, 1]"
        )
    if prior < 0:
        raise ValueError(f"the candidate_rate prior must be >= 0, got {prior}")
    y = _labels(train, positive_threshold)
    items = train["item"].to_numpy().astype(np.int64)
    num = np.bincount(items, weights=y * (1.0 - pi) / pi, minlength=n_items)
    den = n_users - np.bincount(items, minlength=n_items).astype(np.float64)
    overall = float(num.sum() / max(den.sum(), 1.0))
    return ItemRate(np.clip((num + prior * overall) / np.maximum(den + prior, 1e-12), 0.0, 1.0))


def logistic_mf(
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    factors: int = 10,
    l2: float = 10.0,
    max_iter: int = 200,
    batch_size: int = 1024,
) -> LogisticMF:
    """An IPS-weighted logistic MF of the training pairs' relevance (docs/estimators.md).

    Minimises Σ_{T} w_ui ℓ(y_ui, σ(s_ui)) + (l2/2)(‖p‖² + ‖q‖² + ‖a‖² + ‖b‖²), ℓ the log
    loss, s_ui = c + a_u + b_i + p_uᵀq_i, w = 1/π normalised to mean 1: with the right π the
    weighted loss is unbiased for the loss over every pair (Schnabel et al., ICML 2016, §4),
    so σ(s) estimates P(y = 1) of a pair under full exposure. Full-batch L-BFGS (scipy) from
    factors drawn N(0, 0.1²) with ``seed``; the gradients of p and q are sparse products.
    """
    import scipy.optimize
    import scipy.sparse as sp

    u = train["user"].to_numpy().astype(np.int64)
    i = train["item"].to_numpy().astype(np.int64)
    if u.size == 0:
        raise ValueError("the logistic_mf imputation needs training pairs")
    y = _labels(train, positive_threshold)
    w = 1.0 / np.asarray(propensities, dtype=np.float64)
    w = w / w.mean()
    d = int(factors)
    rng = np.random.default_rng(seed)
    rate = float(np.clip(w @ y / w.sum(), 1e-3, 1 - 1e-3))
    x0 = np.concatenate(
        [
            [np.log(rate / (1 - rate))],
            np.zeros(n_users + n_items),
            rng.normal(scale=0.1, size=(n_users + n_items) * d),
        ]
    )
    structure = sp.csr_matrix(
        (np.arange(u.size, dtype=np.float64) + 1, (u, i)), shape=(n_users, n_items)
    )
    order = structure.data.astype(np.int64) - 1  # pair index of every stored entry

    def unpack(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        bu = x[1 : 1 + n_users]
        bi = x[1 + n_users : 1 + n_users + n_items]
        f = x[1 + n_users + n_items :].reshape(n_users + n_items, d)
        return x[0], bu, bi, f[:n_users], f[n_users:]

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        c, bu, bi, p, q = unpack(x)
        s = c + bu[u] + bi[i] + np.einsum("nd,nd->n", p[u], q[i])
        loss = float(w @ (np.logaddexp(0.0, s) - y * s))
        loss += 0.5 * l2 * float(bu @ bu + bi @ bi + np.sum(p * p) + np.sum(q * q))
        g = w * (_sigmoid(s) - y)
        residual = sp.csr_matrix(
            (g[order], structure.indices, structure.indptr), shape=structure.shape
        )
        grad = np.concatenate(
            [
                [g.sum()],
                np.bincount(u, weights=g, minlength=n_users) + l2 * bu,
                np.bincount(i, weights=g, minlength=n_items) + l2 * bi,
                (residual @ q + l2 * p).ravel(),
                (residual.T @ p + l2 * q).ravel(),
            ]
        )
        return loss, grad

    from threadpoolctl import threadpool_limits

    # L-BFGS-B's level-1 BLAS calls on vectors of (users + items) · factors gain nothing from a
    # thread pool and lose much to its spinning on a busy machine (5× the CPU time measured).
    with threadpool_limits(limits=1, user_api="blas"):
        result = scipy.optimize.minimize(
            objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": int(max_iter)}
        )
    c, bu, bi, p, q = unpack(result.x)
    return LogisticMF(float(c), bu.copy(), bi.copy(), p.copy(), q.copy(), batch_size=batch_size)


IMPUTATIONS: dict[str, Callable[..., Imputation]] = {
    "candidate_rate": candidate_rate,
    "item_rate": item_rate,
    "logistic_mf": logistic_mf,
}
"""The registry of imputation models: name -> builder(train, propensities, *, n_users,
n_items, positive_threshold, seed, **params)."""


def build_imputation(
    name: str,
    train: pd.DataFrame,
    propensities: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    seed: int = 0,
    params: dict[str, object] | None = None,
) -> Imputation:
    """The imputation model ``name`` of :data:`IMPUTATIONS` fitted on ``train``."""
    if name not in IMPUTATIONS:
        raise ValueError(f"unknown imputation {name!r}; known: {', '.join(IMPUTATIONS)}")
    return IMPUTATIONS[name](
        train,
        propensities,
        n_users=n_users,
        n_items=n_items,
        positive_threshold=positive_threshold,
        seed=seed,
        **(params or {}),
    )


def platt(
    predicted: np.ndarray, labels: np.ndarray, *, slope_prior: float = 1.0
) -> tuple[float, float]:
    """Platt's link (a, b) maximising the likelihood of ``labels`` under σ(a + b·logit r̂),
    with the slope shrunk toward 1 by a Gaussian prior of precision ``slope_prior`` (an
    imputation whose logits barely vary, such as an item rate, leaves the slope otherwise
    unidentified); r̂ is taken within [10⁻⁴, 1 − 10⁻⁴]. L-BFGS on the two parameters (scipy).
    (0, 1), the identity, when the labels are all equal or there are none."""
    import scipy.optimize

    y = np.asarray(labels, dtype=np.float64)
    if y.size == 0 or y.min() == y.max():
        return 0.0, 1.0
    z = _logit(np.clip(np.asarray(predicted, dtype=np.float64), 1e-4, 1 - 1e-4))

    def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
        s = beta[0] + beta[1] * z
        loss = float(np.sum(np.logaddexp(0.0, s) - y * s)) + 0.5 * slope_prior * (beta[1] - 1) ** 2
        g = _sigmoid(s) - y
        return loss, np.array([g.sum(), g @ z + slope_prior * (beta[1] - 1)])

    result = scipy.optimize.minimize(objective, np.array([0.0, 1.0]), jac=True, method="L-BFGS-B")
    return float(result.x[0]), float(result.x[1])


def calibrate(
    imputation: Imputation, users: np.ndarray, items: np.ndarray, labels: np.ndarray
) -> Imputation:
    """``imputation`` recalibrated by Platt's link (:func:`platt`) on MAR pairs (``users``,
    ``items``, their 0/1 ``labels``): the candidate pairs of a random sample."""
    a, b = platt(imputation.pairs(users, items), labels)
    if isinstance(imputation, ItemRate):
        return ItemRate(_sigmoid(a + b * _logit(imputation.rates)))
    if isinstance(imputation, LogisticMF):
        return replace(
            imputation, intercept=a + b * imputation.intercept, slope=b * imputation.slope
        )
    base = imputation
    return Predicted(
        score_pairs=base.pairs,
        score_rows=lambda rows: _rows_of(base, rows),
        transform=lambda r: _sigmoid(a + b * _logit(r)),
    )


def _rows_of(imputation: Imputation, users: np.ndarray) -> np.ndarray:
    if isinstance(imputation, Predicted):
        return imputation.transform(imputation.score_rows(users))
    raise TypeError(f"cannot score rows of users with {type(imputation).__name__}")
