"""Propensity models P(O_{u,i} = 1) for the IPS and SNIPS estimators (docs/experiments/e3.md).

[ICML16] T. Schnabel et al., *Recommendations as treatments: debiasing learning
and evaluation*, ICML 2016, §5. Every model returns a *propensity table*: a
DataFrame keyed by some of the columns ``user``, ``item`` (int32) and
``rating`` (float32) with a ``propensity`` column (float64 in (0, 1]), written
as Parquet like any other stage output. :func:`lookup` maps any set of pairs to
their propensities by joining on the table's key columns:

- :func:`naive_bayes`: keyed by ``rating``, P(O=1 | Y=r) ([ICML16] §5.1);
- :func:`logistic`: keyed by ``user``, ``item`` (every pair), σ(wᵀx + β_i + γ_u), its
  L2 weight chosen by :func:`logistic_cv`;
- :func:`popularity`: keyed by ``item``, the share of users who rated the item;
- :func:`known`: keyed by ``user``, ``item``, the true propensities of a
  synthetic dataset.

:func:`clip` floors propensities at a chosen value (applied to an array or a table).

The weighting estimators of ranking metrics (:mod:`debiaseval.evaluation.weighting`,
docs/experiments/e1.md) need a propensity for every candidate pair of every user, if
only through their sum: a :class:`PropensityModel` holds a model in the factorised
form P_ui = f_u · g_i · h(y_ui) · M_ui (any factor may be absent), which gives the
propensities of any pairs and the candidate mass Σ_{u, i∈C_u} P_ui without a dense
users × items array unless the model is one (M). :func:`as_model` turns any of the
tables above into one; :func:`wtd` builds the inverse of [SAC20]'s WTD weights;
:func:`scaled` gives a model's propensities of held-out pairs given that they are candidates
(conditioned on the random train/held-out split, or scaled so that the candidate mass equals
the number of pairs weighted, [SAC20]/Yang et al., RecSys 2018), then floors them;
:func:`observation` gives them on the absolute scale of the whole MNAR sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = [
    "KEY_COLUMNS",
    "PropensityModel",
    "as_model",
    "check_propensities",
    "clip",
    "known",
    "logistic",
    "logistic_cv",
    "lookup",
    "naive_bayes",
    "observation",
    "popularity",
    "scaled",
    "wtd",
]

KEY_COLUMNS = ("user", "item", "rating")
"""Columns a propensity table may be keyed by, in this order."""


def check_propensities(p: np.ndarray, what: str = "propensities") -> np.ndarray:
    """``p`` as float64 after checking every value lies in (0, 1]; else ``ValueError``."""
    arr = np.asarray(p, dtype=np.float64)
    bad = ~((arr > 0) & (arr <= 1))  # NaN fails both comparisons
    if bad.any():
        first = arr.ravel()[int(np.flatnonzero(bad.ravel())[0])]
        raise ValueError(
            f"{what} must lie in (0, 1]: {int(bad.sum())} value(s) do not, e.g. {first!r}"
        )
    return arr


def _ratings(values: np.ndarray | pd.Series, levels: np.ndarray, what: str) -> np.ndarray:
    """Indices into ``levels`` of the ratings ``values``; ValueError for NaN or unknown values."""
    r = np.asarray(values, dtype=np.float64).ravel()
    if np.isnan(r).any():
        raise ValueError(f"{what} contain NaN ratings")
    idx = np.searchsorted(levels, r)
    idx_ok = np.minimum(idx, levels.size - 1)
    bad = levels[idx_ok] != r
    if bad.any():
        raise ValueError(f"{what} contain rating {r[bad][0]:g}, expected one of {levels.tolist()}")
    return idx_ok


def _smoothed_marginal(idx: np.ndarray, n_levels: int, smoothing: float) -> np.ndarray:
    counts = np.bincount(idx, minlength=n_levels).astype(np.float64)
    total = counts.sum() + smoothing * n_levels
    if total <= 0:
        raise ValueError("cannot estimate a rating marginal from no ratings without smoothing")
    return (counts + smoothing) / total


def naive_bayes(
    mnar_ratings: np.ndarray | pd.Series,
    mar_ratings: np.ndarray | pd.Series,
    *,
    n_users: int,
    n_items: int,
    levels: Sequence[float] = (1.0, 2.0, 3.0, 4.0, 5.0),
    smoothing: float = 1.0,
) -> pd.DataFrame:
    """Naive-Bayes propensities P(O=1 | Y=r) per rating level ([ICML16] §5.1).

    P(O=1 | Y=r) = P(Y=r | O=1) · P(O=1) / P(Y=r), with P(Y=r | O=1) the rating
    marginal of the observed MNAR ratings, P(O=1) = |MNAR| / (n_users · n_items)
    and P(Y=r) the marginal of a MAR sample. Both marginals are Laplace-smoothed
    with ``smoothing`` pseudo-counts per level (so no level gets propensity 0);
    a quotient above 1 (possible with a tiny MAR sample) is capped at 1.

    Returns a table with columns ``rating`` (float32), ``propensity`` (float64),
    ``p_rating_observed`` = P(Y=r | O=1) and ``p_rating`` = P(Y=r).
    """
    lv = np.asarray(levels, dtype=np.float64)
    if lv.ndim != 1 or lv.size == 0 or np.any(np.diff(lv) <= 0):
        raise ValueError(f"levels must be strictly increasing, got {list(levels)}")
    if smoothing < 0 or not np.isfinite(smoothing):
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing}")
    if n_users < 1 or n_items < 1:
        raise ValueError(f"n_users and n_items must be >= 1, got {n_users}, {n_items}")
    mnar = _ratings(mnar_ratings, lv, "MNAR ratings")
    mar = _ratings(mar_ratings, lv, "MAR ratings")
    if mnar.size == 0 or mnar.size > n_users * n_items:
        raise ValueError(f"need between 1 and n_users * n_items MNAR ratings, got {mnar.size}")
    p_observed = mnar.size / (n_users * n_items)
    p_r_obs = _smoothed_marginal(mnar, lv.size, smoothing)
    p_r = _smoothed_marginal(mar, lv.size, smoothing)
    with np.errstate(divide="ignore"):
        prop = np.minimum(1.0, p_r_obs * p_observed / p_r)
    return pd.DataFrame(
        {
            "rating": lv.astype(np.float32),
            "propensity": check_propensities(prop, "Naive-Bayes propensities"),
            "p_rating_observed": p_r_obs,
            "p_rating": p_r,
        }
    )


def popularity(
    pairs: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
    smoothing: float = 1.0,
    exponent: float = 1.0,
) -> pd.DataFrame:
    """Item-popularity propensities P(O=1 | i) = ((n_i + s) / (n_users + 2s))^γ.

    n_i is the number of observed (MNAR) pairs of item i; with ``smoothing`` s = 0
    and ``exponent`` γ = 1 this is the maximum-likelihood estimate of an observation
    model that depends on the item only, s > 0 adds s observed and s unobserved
    pseudo-pairs per item (so an unrated item gets a positive propensity). γ ≠ 1 is
    the power law P ∝ n_i^γ of the weighting estimators (docs/experiments/e1.md,
    after Yang et al., RecSys 2018). Returns ``item``, ``propensity``.
    """
    if smoothing < 0 or not np.isfinite(smoothing):
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing}")
    if exponent < 0 or not np.isfinite(exponent):
        raise ValueError(f"the popularity exponent must be a finite number >= 0, got {exponent}")
    items = _ids(pairs, "item", n_items)
    _ids(pairs, "user", n_users)
    counts = np.bincount(items, minlength=n_items).astype(np.float64)
    if counts.max(initial=0) > n_users:
        raise ValueError("pairs hold an item observed more often than there are users")
    prop = ((counts + smoothing) / (n_users + 2.0 * smoothing)) ** exponent
    return pd.DataFrame(
        {
            "item": np.arange(n_items, dtype=np.int32),
            "propensity": check_propensities(
                prop, "popularity propensities (use smoothing > 0 for unrated items)"
            ),
        }
    )


def known(pairs: pd.DataFrame) -> pd.DataFrame:
    """The true propensities carried by a dataset's ``propensity`` column (synthetic data).

    Returns ``user``, ``item``, ``propensity`` for the pairs, sorted by user and item;
    a missing (NaN) or out-of-range propensity raises ``ValueError``.
    """
    for col in ("user", "item", "propensity"):
        if col not in pairs.columns:
            raise ValueError(f"pairs lack the column '{col}' needed for known propensities")
    out = pd.DataFrame(
        {
            "user": pairs["user"].to_numpy(np.int32),
            "item": pairs["item"].to_numpy(np.int32),
            "propensity": check_propensities(pairs["propensity"], "known propensities"),
        }
    )
    if out.duplicated(["user", "item"]).any():
        raise ValueError("pairs hold a (user, item) pair twice with known propensities")
    return out.sort_values(["user", "item"], ignore_index=True)


def _ids(pairs: pd.DataFrame, col: str, n: int) -> np.ndarray:
    if col not in pairs.columns:
        raise ValueError(f"pairs lack the column '{col}'")
    ids = pairs[col].to_numpy()
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"pairs' {col} ids must lie in [0, {n})")
    return ids.astype(np.int64)


def _features(x: np.ndarray | pd.DataFrame, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{what} must be a 2-D array (one row per id), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contain NaN or infinite values")
    return arr


def logistic(
    pairs: pd.DataFrame,
    user_features: np.ndarray | pd.DataFrame,
    item_features: np.ndarray | pd.DataFrame,
    *,
    l2: float = 1.0,
    cross: bool = True,
    max_iter: int = 1000,
    tol: float = 1e-4,
) -> pd.DataFrame:
    """Logistic-regression propensities σ(wᵀx_{u,i} + β_i + γ_u + c) ([ICML16] §5, §6.4).

    Fitted on **all** n_users × n_items pairs with the label O_{u,i} = 1 for the
    observed ``pairs`` (the MNAR data) and 0 otherwise. x_{u,i} holds the user's
    features, the item's features and, with ``cross``, their products
    x_u ⊗ x_i (features of the user alone are otherwise absorbed by the user
    offsets γ_u, those of the item by β_i). The objective is the summed log-loss
    plus (``l2``/2)·(‖w‖² + ‖β‖² + ‖γ‖²) (the intercept c is not penalised),
    minimised by L-BFGS on the exact gradient, computed with dense U × I matrix
    products (no loop over pairs), until every gradient entry is below ``tol``
    (in units of pairs: the intercept's entry is Σ P̂ − |O|). :func:`logistic_cv`
    chooses ``l2`` by cross-validation.

    ``user_features`` / ``item_features``: arrays (or frames of feature columns
    only) with one row per contiguous user / item id. Returns ``user``, ``item``,
    ``propensity`` for every pair, sorted by user and item.
    """
    from scipy.special import expit

    problem = _LogisticProblem(pairs, user_features, item_features, cross=cross)
    prop = expit(problem.fit(l2, None, max_iter=max_iter, tol=tol)[0])
    n_users, n_items = prop.shape
    return pd.DataFrame(
        {
            "user": np.repeat(np.arange(n_users, dtype=np.int32), n_items),
            "item": np.tile(np.arange(n_items, dtype=np.int32), n_users),
            "propensity": check_propensities(prop.ravel(), "logistic propensities"),
        }
    )


def logistic_cv(
    pairs: pd.DataFrame,
    user_features: np.ndarray | pd.DataFrame,
    item_features: np.ndarray | pd.DataFrame,
    *,
    l2: Sequence[float],
    n_folds: int,
    rng: np.random.Generator,
    cross: bool = True,
    max_iter: int = 1000,
    tol: float = 1e-2,
) -> tuple[float, pd.DataFrame]:
    """The L2 weight of :func:`logistic` chosen by k-fold cross-validation ([ICML16] §6.4).

    The n_users × n_items pairs (observed or not: the labels O) are dealt uniformly at
    random into ``n_folds`` folds; for every candidate of ``l2`` and every fold the model
    is fitted on the other folds' pairs and scored by the mean log-loss of the fold's
    pairs. Returns the candidate with the lowest mean over the folds (the first wins
    ties) and one row per candidate and fold: ``l2``, ``fold``, ``log_loss``, ``selected``.
    Each fold's fits run from the largest ``l2`` down, each starting from the previous
    solution (the objective is convex, so the start changes the iterations, not the fit),
    to a looser ``tol`` than the final fit's: on Coat the held-out log-losses agree with
    those at 1e-4 to six digits, in half the time.
    """
    grid = [float(v) for v in l2]
    if not grid:
        raise ValueError("the logistic l2 grid is empty")
    problem = _LogisticProblem(pairs, user_features, item_features, cross=cross)
    n_users, n_items = problem.obs.shape
    if not 2 <= n_folds <= n_users * n_items:
        raise ValueError(f"n_folds must be in [2, {n_users * n_items}], got {n_folds}")
    folds = np.empty(n_users * n_items, dtype=np.int64)
    folds[rng.permutation(folds.size)] = np.arange(folds.size) % n_folds
    folds = folds.reshape(n_users, n_items)
    rows = []
    for fold in range(n_folds):
        held = folds == fold
        theta = None
        for value in sorted(grid, reverse=True):
            z, theta = problem.fit(value, ~held, max_iter=max_iter, tol=tol, start=theta)
            obs = problem.obs[held]
            loss = float(np.mean(np.logaddexp(0.0, z[held]) - z[held] * obs))
            rows.append({"l2": value, "fold": fold, "log_loss": loss})
    order = {value: j for j, value in enumerate(grid)}
    table = pd.DataFrame(rows)
    table = table.sort_values(
        ["l2", "fold"], key=lambda c: c.map(order) if c.name == "l2" else c, ignore_index=True
    )
    means = table.groupby("l2", sort=False)["log_loss"].mean()
    best = float(means.index[int(np.argmin(means.to_numpy()))])
    table["selected"] = table["l2"] == best
    return best, table


class _LogisticProblem:
    """The data of :func:`logistic`: labels O (dense U × I) and features, fitted by L-BFGS."""

    def __init__(self, pairs, user_features, item_features, *, cross: bool) -> None:  # type: ignore[no-untyped-def]
        self.xu = _features(user_features, "user features")
        self.xi = _features(item_features, "item features")
        self.cross = cross
        n_users, n_items = self.xu.shape[0], self.xi.shape[0]
        users, items = _ids(pairs, "user", n_users), _ids(pairs, "item", n_items)
        observed = sp.csr_matrix((np.ones(users.size), (users, items)), shape=(n_users, n_items))
        observed.sum_duplicates()
        if observed.nnz != users.size:
            raise ValueError("pairs hold a (user, item) pair more than once")
        self.obs = observed.toarray()
        du, di = self.xu.shape[1], self.xi.shape[1]
        self.sizes = [1, du, di, du * di if cross else 0, n_users, n_items]
        self.bounds = np.cumsum([0, *self.sizes])

    def _unpack(self, theta: np.ndarray) -> list[np.ndarray]:
        b = self.bounds
        return [theta[b[j] : b[j + 1]] for j in range(len(self.sizes))]

    def logits(self, theta: np.ndarray) -> np.ndarray:
        """The U × I matrix of wᵀx_{u,i} + β_i + γ_u + c."""
        xu, xi = self.xu, self.xi
        c, wu, wi, wx, gamma, beta = self._unpack(theta)
        lin = c[0] + (xu @ wu + gamma)[:, None] + (xi @ wi + beta)[None, :]
        if self.cross:
            lin = lin + (xu @ wx.reshape(xu.shape[1], xi.shape[1])) @ xi.T
        return lin

    def fit(
        self,
        l2: float,
        mask: np.ndarray | None,
        *,
        max_iter: int,
        tol: float,
        start: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Logits of every pair after fitting on the pairs of ``mask`` (all when None), and
        the parameters; ``start`` is the first iterate (default: the intercept alone)."""
        import scipy.optimize  # lazy: 0.3 s of every job importing this module
        from scipy.special import expit

        if not np.isfinite(l2) or l2 < 0:
            raise ValueError(f"l2 must be a finite number >= 0, got {l2}")
        xu, xi, obs = self.xu, self.xi, self.obs
        m = np.ones_like(obs) if mask is None else mask.astype(np.float64)

        def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
            z = self.logits(theta)
            loss = float(np.sum(m * (np.logaddexp(0.0, z) - z * obs)))
            resid = m * (expit(z) - obs)
            ru, ri = resid.sum(axis=1), resid.sum(axis=0)
            parts = [np.array([ru.sum()]), xu.T @ ru, xi.T @ ri]
            parts.append((xu.T @ resid @ xi).ravel() if self.cross else np.empty(0))
            parts += [ru, ri]
            grad = np.concatenate(parts)
            penalised = theta[1:]
            loss += 0.5 * l2 * float(penalised @ penalised)
            grad[1:] += l2 * penalised
            return loss, grad

        theta0 = np.zeros(self.bounds[-1])
        rate = (float(np.sum(m * obs)) + 0.5) / (float(m.sum()) + 1.0)
        theta0[0] = np.log(rate / (1.0 - rate))
        if start is not None:
            theta0 = start
        result = scipy.optimize.minimize(
            objective,
            theta0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": 1e-14, "gtol": tol},
        )
        return self.logits(result.x), result.x


def clip(p: np.ndarray | pd.DataFrame, low: float) -> np.ndarray | pd.DataFrame:
    """Floor propensities at ``low`` (in (0, 1]); an array or a table's ``propensity`` column.

    Clipping bounds the IPS weights 1/P by 1/``low`` at the price of a bias
    ([ICML16] §5 discusses the variance of small propensities).
    """
    if not 0 < low <= 1:
        raise ValueError(f"the clipping floor must lie in (0, 1], got {low}")
    if isinstance(p, pd.DataFrame):
        if "propensity" not in p.columns:
            raise ValueError("a propensity table needs a 'propensity' column")
        out = p.copy()
        out["propensity"] = np.maximum(check_propensities(out["propensity"]), low)
        return out
    return np.maximum(check_propensities(p), low)


def lookup(table: pd.DataFrame, pairs: pd.DataFrame) -> np.ndarray:
    """Propensities of ``pairs`` (float64, in their order) from a propensity ``table``.

    The join is on the table's key columns (those of ``user``, ``item``,
    ``rating`` it has); ``pairs`` must have them too. A pair the table has no
    propensity for raises ``ValueError`` naming how many are missing.
    """
    keys = [c for c in KEY_COLUMNS if c in table.columns]
    if not keys or "propensity" not in table.columns:
        raise ValueError(
            f"a propensity table needs a 'propensity' column and key column(s) {KEY_COLUMNS}"
        )
    missing_cols = [c for c in keys if c not in pairs.columns]
    if missing_cols:
        raise ValueError(f"pairs lack the column(s) {missing_cols} the propensity table uses")
    if table.duplicated(keys).any():
        raise ValueError(f"the propensity table has duplicate keys {keys}")
    if "rating" in keys and pairs["rating"].isna().any():
        raise ValueError("pairs contain NaN ratings")
    cast = {c: (np.float64 if c == "rating" else np.int64) for c in keys}
    left = pairs[keys].astype(cast)
    right = table[[*keys, "propensity"]].astype(cast)
    merged = left.merge(right, on=keys, how="left", sort=False)
    prop = merged["propensity"].to_numpy(np.float64)
    missing = np.isnan(prop)
    if missing.any():
        first = left.iloc[int(np.flatnonzero(missing)[0])].to_dict()
        raise ValueError(
            f"no propensity for {int(missing.sum())} of {len(prop)} pairs, e.g. {first}"
        )
    return check_propensities(prop)


@dataclass(frozen=True)
class PropensityModel:
    """Propensities in the form P_ui = f_u · g_i · h(y_ui) · M_ui (docs/experiments/e1.md).

    ``user`` f (n_users), ``item`` g (n_items), ``matrix`` M (n_users × n_items, for
    models that are dense anyway: known, logistic) and the rating factor h
    (``levels`` and ``rating`` values, with ``rating_prior`` P(Y=r) of a MAR sample,
    the expectation h takes over the unobserved pairs, whose rating is unknown, or
    ``item_rating_mean``, that expectation per item where the items' rating mixes differ);
    a factor left None is 1. Values are unscaled: only their ratios matter until
    :func:`scaled`.
    """

    n_users: int
    n_items: int
    user: np.ndarray | None = None
    item: np.ndarray | None = None
    levels: np.ndarray | None = None
    rating: np.ndarray | None = None
    rating_prior: np.ndarray | None = None
    matrix: np.ndarray | None = None
    item_rating_mean: np.ndarray | None = None

    def pairs(
        self, users: np.ndarray, items: np.ndarray, ratings: np.ndarray | None = None
    ) -> np.ndarray:
        """Unscaled propensities of the pairs (float64); ``ratings`` needed by a rating factor."""
        u, i = np.asarray(users), np.asarray(items)  # any integer width indexes as it is
        factors = []
        if self.user is not None:
            factors.append(lambda: self.user[u])
        if self.item is not None:
            factors.append(lambda: self.item[i])
        if self.matrix is not None:
            factors.append(lambda: self.matrix[u, i])
        if self.rating is not None:
            if ratings is None:
                raise ValueError("this propensity model depends on the rating: give the ratings")
            factors.append(lambda: self.rating[_ratings(ratings, self.levels, "pairs")])
        if not factors:
            return np.ones(u.size)
        out = np.array(factors[0](), dtype=np.float64)  # a fresh array: the factors are kept
        for factor in factors[1:]:
            out *= factor()
        return out

    def candidate_mass(self, train_users: np.ndarray, train_items: np.ndarray) -> float:
        """Σ_u Σ_{i∈C_u} P_ui, C_u = the items u has no training pair with (unscaled).

        Σ_u f_u Σ_i g_i e_i M_ui (f @ M @ (g e), or Σf · Σ g e without M) minus the
        training pairs' f_u g_i e_i M_ui, e_i = E[h(Y)] of item i (``item_rating_mean``, else
        the expectation under ``rating_prior`` for every item): O(users + items + training
        pairs) unless the model holds M.
        """
        f = np.ones(self.n_users) if self.user is None else self.user
        g = np.ones(self.n_items) if self.item is None else self.item
        if self.rating is not None:
            mean_h = self.item_rating_mean
            g = g * (float(self.rating @ self.rating_prior) if mean_h is None else mean_h)
        whole = float(f @ self.matrix @ g) if self.matrix is not None else float(f.sum() * g.sum())
        u = np.asarray(train_users, dtype=np.int64)
        i = np.asarray(train_items, dtype=np.int64)
        seen = float(f[u] @ (g[i] * (1.0 if self.matrix is None else self.matrix[u, i])))
        return whole - seen


def as_model(table: pd.DataFrame, *, n_users: int, n_items: int) -> PropensityModel:
    """A propensity table (keyed by ``rating``, ``item``, ``user`` or ``user`` and ``item``)
    as a :class:`PropensityModel`.

    A rating-keyed table (:func:`naive_bayes`) needs its ``p_rating`` column, P(Y=r);
    a table keyed by user and item (:func:`known`, :func:`logistic`) must cover every
    pair, since the candidate mass sums over all of them.
    """
    keys = tuple(c for c in KEY_COLUMNS if c in table.columns)
    prop = check_propensities(table["propensity"], "the propensity table")
    if keys == ("rating",):
        if "p_rating" not in table.columns:
            raise ValueError("a rating-keyed propensity table needs its 'p_rating' column")
        levels = table["rating"].to_numpy(np.float64)
        order = np.argsort(levels)
        return PropensityModel(
            n_users,
            n_items,
            levels=levels[order],
            rating=prop[order],
            rating_prior=table["p_rating"].to_numpy(np.float64)[order],
        )
    if keys in (("item",), ("user",)):
        n = n_items if keys == ("item",) else n_users
        ids = _ids(table, keys[0], n)
        factor = np.full(n, np.nan)
        factor[ids] = prop
        if np.isnan(factor).any():
            missing = int(np.isnan(factor).sum())
            raise ValueError(f"the propensity table lacks {missing} {keys[0]}(s)")
        return PropensityModel(n_users, n_items, **{keys[0]: factor})
    if keys == ("user", "item"):
        matrix = np.full((n_users, n_items), np.nan)
        matrix[_ids(table, "user", n_users), _ids(table, "item", n_items)] = prop
        if np.isnan(matrix).any():
            raise ValueError(
                f"the propensity table covers {len(table):,} of the {n_users * n_items:,} pairs; "
                "the weighting estimators need every pair"
            )
        return PropensityModel(n_users, n_items, matrix=matrix)
    raise ValueError(f"cannot use a propensity table keyed by {list(keys)}")


def wtd(
    *,
    n_users: int,
    n_items: int,
    reference_users: np.ndarray,
    reference_items: np.ndarray,
    mar_users: np.ndarray | None = None,
    mar_items: np.ndarray | None = None,
    user_exponent: float = 1.0,
    item_exponent: float = 2.0,
    smoothing: float = 1.0,
) -> PropensityModel:
    """P_ui ∝ 1 / (w_u^a · w_i^b), the inverse of [SAC20]'s WTD sampling weights.

    The weights are :func:`~debiaseval.debiasing.interventions.wtd_factors` (same
    arguments; P_mar from ``mar_users``/``mar_items``, the MAR ``weights`` part, or the
    uniform hypothesis when None), so that weighting and resampling with the same
    weights can be compared. A user or item absent from the MAR set would get w = 0,
    an infinite propensity: ``smoothing`` (default 1, additive on the MAR posteriors)
    keeps every weight positive, and a zero weight left raises ``ValueError``.
    """
    from debiaseval.debiasing.interventions import wtd_factors

    w_u, w_i = wtd_factors(
        n_users=n_users,
        n_items=n_items,
        reference_users=reference_users,
        reference_items=reference_items,
        mar_users=mar_users,
        mar_items=mar_items,
        user_exponent=user_exponent,
        item_exponent=item_exponent,
        smoothing=smoothing,
    )
    if not (np.all(w_u > 0) and np.all(w_i > 0)):
        raise ValueError(
            "WTD propensities need every user and item in the MAR set: use smoothing > 0"
        )
    return PropensityModel(n_users, n_items, user=1.0 / w_u, item=1.0 / w_i)


def observation(
    model: PropensityModel, pairs: pd.DataFrame, *, n_observed: int
) -> tuple[np.ndarray, float]:
    """The model's propensities of ``pairs`` on the absolute scale of the observation process.

    P(O_ui = 1) = min(1, c · P_ui) with c such that Σ over every users × items pair of
    c · P_ui = ``n_observed``, the size of the whole MNAR sample (training and held-out
    parts). These are the probabilities of a pair to be in the MNAR sample, hence (times
    the training share) in the training part. Returns them and c.
    """
    empty = np.empty(0, dtype=np.int64)
    whole = model.candidate_mass(empty, empty)
    if not (np.isfinite(whole) and whole > 0):
        raise ValueError(f"the propensity model's total mass must be positive, got {whole}")
    factor = n_observed / whole
    ratings = pairs["rating"].to_numpy() if model.rating is not None else None
    p = model.pairs(pairs["user"].to_numpy(), pairs["item"].to_numpy(), ratings) * factor
    return np.minimum(p, 1.0), float(factor)


def scaled(
    model: PropensityModel,
    pairs: pd.DataFrame,
    *,
    train: pd.DataFrame,
    n_pairs: int,
    floor: float | None = None,
    n_observed: int | None = None,
) -> tuple[np.ndarray, float]:
    """Propensities of ``pairs`` in the held-out part, given that they are candidates.

    C_u = the items u has no pair with in ``train``; ``n_pairs`` = |H|, the size of the
    part being weighted. Without ``n_observed`` the model's values are scaled so that
    Σ_{u, i∈C_u} P_ui = |H|. With ``n_observed`` (the size of the MNAR sample that was
    split at random into ``train`` and the held-out part, of share h = |H| / n_observed),
    they are conditioned on the split: a candidate is a pair *not* drawn into the
    training part, so with p = :func:`observation`'s P(O_ui = 1),

        P(o_ui = 1 in H | i ∈ C_u) = h·p / (1 − (1 − h)·p),

    which is not proportional to p where p is large (a pair observed for sure is either
    in the training part or in H); its sum over the candidates is |H| in expectation.
    ``floor`` (the clip, None = none) then bounds the weights 1/P by 1/floor. Returns the
    propensities (in the order of ``pairs``) and the scale factor.
    """
    if n_observed is not None:
        if not 0 < n_pairs <= n_observed:
            raise ValueError(
                f"the held-out part ({n_pairs} pairs) must be a non-empty part of the "
                f"MNAR sample ({n_observed} pairs)"
            )
        p_obs, factor = observation(model, pairs, n_observed=n_observed)
        h = n_pairs / n_observed
        p = h * p_obs / (1.0 - (1.0 - h) * p_obs)
    else:
        mass = model.candidate_mass(train["user"].to_numpy(), train["item"].to_numpy())
        if not (np.isfinite(mass) and mass > 0):
            raise ValueError(f"the propensity model's candidate mass must be positive, got {mass}")
        factor = n_pairs / mass
        ratings = pairs["rating"].to_numpy() if model.rating is not None else None
        p = model.pairs(pairs["user"].to_numpy(), pairs["item"].to_numpy(), ratings) * factor
    if floor is not None:
        if not (np.isfinite(floor) and floor > 0):
            raise ValueError(f"the clip floor must be a positive number, got {floor}")
        p = np.maximum(p, floor)
    if not np.all(np.isfinite(p) & (p > 0)):
        raise ValueError("scaled propensities must be finite and positive")
    return p, float(factor)
