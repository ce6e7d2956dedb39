"""Interventions: intervened test sets drawn from a sampling space (docs/experiments/e1.md).

[SAC20] D. Carraro, D. Bridge, *Debiased offline evaluation of recommender
systems: a weighted-sampling approach*, ACM SAC 2020, §3–4; [FLAIRS20] the same
authors, *Debiased offline evaluation of active learning in recommender
systems*, FLAIRS-33 2020.

An intervention draws O^S from a space (a held-out MNAR part) without
replacement with per-pair probability proportional to P_S(u, i), independent
of the ratings. Strategies (one :class:`TestSetSpec` each, one entry point
:func:`intervene`):

- FULL: the whole space; REG: a uniform ρ-sample;
- SKEW: P_S ∝ 1/pop(i), pop from the training part ([SAC20], after Liang et al.);
- WTD: P_S ∝ w_u^a · w_i^b, w_x = P_mar(x|O)/P_mnar(x|O) ([SAC20] §3.2), with
  P_mar from the MAR ``weights`` part, or the uniform hypothesis (WTD_H);
- KL: P_S ∝ ω_i / Σ_{j∈I_u} ω_j, KL-optimised item weights ([MYT14]; docs/experiments/e6.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from debiaseval.debiasing.kl_weights import fit_kl_weights, pair_weights, profile_matrix
from debiaseval.debiasing.sampling import weighted_sample_without_replacement

__all__ = [
    "DEFAULT_TESTSETS",
    "STRATEGIES",
    "VARIANT_TESTSETS",
    "TestSetSpec",
    "intervene",
    "kl_pair_weights",
    "kl_to_uniform",
    "marginal_kl",
    "posteriors",
    "sampling_weights",
    "skew_weights",
    "wtd_factors",
    "wtd_weights",
]

STRATEGIES: tuple[str, ...] = ("full", "reg", "skew", "wtd", "kl")
MAR_POSTERIORS: tuple[str, ...] = ("weights", "uniform")
REFERENCES: tuple[str, ...] = ("train", "space")


def _ids(ids: np.ndarray, n: int, what: str) -> np.ndarray:
    """Validate an array of 0-based ids below ``n``; return it as int64."""
    a = np.asarray(ids)
    if a.ndim != 1:
        raise ValueError(f"{what} must be 1-D, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{what} must be integer ids, got dtype {a.dtype}")
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or a.max() >= n):
        raise ValueError(f"{what} must be in [0, {n}), got range [{a.min()}, {a.max()}]")
    return a


def posteriors(ids: np.ndarray, n: int, *, smoothing: float = 0.0) -> np.ndarray:
    """Posteriors P(x|O) = (|O_x| + s) / (|O| + s·n) for x = 0..n-1 ([SAC20] §3.2).

    See docs/datasets.md.

    ``ids`` lists the user (or item) id of every pair of O; ``smoothing`` s ≥ 0 is
    additive (Laplace) smoothing, 0 gives the paper's plain relative frequencies.
    """
    if not (math.isfinite(smoothing) and smoothing >= 0):
        raise ValueError(f"smoothing must be finite and >= 0, got {smoothing!r}")
    a = _ids(ids, n, "ids")
    denom = a.size + smoothing * n
    if denom <= 0:
        raise ValueError("posteriors of an empty set are undefined (use smoothing > 0)")
    return (np.bincount(a, minlength=n) + smoothing) / denom


def wtd_weights(
    space_users: np.ndarray,
    space_items: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    reference_users: np.ndarray,
    reference_items: np.ndarray,
    mar_users: np.ndarray | None = None,
    mar_items: np.ndarray | None = None,
    user_exponent: float = 1.0,
    item_exponent: float = 2.0,
    smoothing: float = 0.0,
) -> np.ndarray:
    """Per-pair WTD weights w_u^a · w_i^b ([SAC20] §3.2; docs/experiments/e1.md).

    The product of :func:`wtd_factors` (which defines the weights and documents their
    decisions) at the space's pairs.
    """
    users = _ids(space_users, n_users, "space_users")
    items = _ids(space_items, n_items, "space_items")
    if users.size != items.size:
        raise ValueError(f"space_users/items differ in length: {users.size} != {items.size}")
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
    return w_u[users] * w_i[items]


def wtd_factors(
    *,
    n_users: int,
    n_items: int,
    reference_users: np.ndarray,
    reference_items: np.ndarray,
    mar_users: np.ndarray | None = None,
    mar_items: np.ndarray | None = None,
    user_exponent: float = 1.0,
    item_exponent: float = 2.0,
    smoothing: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The WTD weights' factors: w_u^a per user and w_i^b per item ([SAC20] §3.2).

    w_u = P_mar(u|O) / P_mnar(u|O) and w_i = P_mar(i|O) / P_mnar(i|O) with
    P(x|O) = |O_x| / |O| (:func:`posteriors`).

    - P_mnar: posteriors of the reference set (``reference_users/items``: the MNAR
      training part in [SAC20], the space being sampled in [FLAIRS20]).
    - P_mar: posteriors of the MAR set when ``mar_users``/``mar_items`` are given
      (WTD), else the uniform hypothesis 1/n_users and 1/n_items (WTD_H).
    - Exponents a = ``user_exponent`` (default 1) and b = ``item_exponent``
      (default 2, the variant both papers state); (1, 1) is the plain product of
      the authors' public notebook.

    Decisions (docs/experiments/e1.md):

    - A user or item absent from the reference set has its reference count
      floored at 1 — treated as seen once — so P_mnar = 1/|O_ref| instead of 0:
      no division by zero, no NaN; the denominator stays |O_ref|, so every
      present user/item gets exactly the paper's weight.
    - A user or item absent from the MAR set has P_mar = 0, hence weight 0 (its
      pairs are drawn only after every positive-weight pair, see
      :func:`~debiaseval.debiasing.sampling.weighted_sample_without_replacement`), unless
      ``smoothing`` > 0: additive smoothing of the MAR posteriors only (the
      reference posteriors are never smoothed; WTD_H ignores it).
    """
    ref_u = _ids(reference_users, n_users, "reference_users")
    ref_i = _ids(reference_items, n_items, "reference_items")
    if ref_u.size == 0 or ref_u.size != ref_i.size:
        raise ValueError("reference_users/items must be non-empty and of equal length")
    if (mar_users is None) != (mar_items is None):
        raise ValueError("give both mar_users and mar_items, or neither (uniform hypothesis)")
    for name, val in (("user_exponent", user_exponent), ("item_exponent", item_exponent)):
        if not math.isfinite(val):
            raise ValueError(f"{name} must be finite, got {val!r}")

    p_mnar_u = np.maximum(np.bincount(ref_u, minlength=n_users), 1) / ref_u.size
    p_mnar_i = np.maximum(np.bincount(ref_i, minlength=n_items), 1) / ref_i.size
    if mar_users is None:
        p_mar_u = np.full(n_users, 1.0 / n_users)
        p_mar_i = np.full(n_items, 1.0 / n_items)
    else:
        mu = _ids(mar_users, n_users, "mar_users")
        mi = _ids(mar_items, n_items, "mar_items")
        if mu.size != mi.size:
            raise ValueError(f"mar_users and mar_items differ in length: {mu.size} != {mi.size}")
        p_mar_u = posteriors(mu, n_users, smoothing=smoothing)
        p_mar_i = posteriors(mi, n_items, smoothing=smoothing)
    w_u = p_mar_u / p_mnar_u
    w_i = p_mar_i / p_mnar_i
    return w_u**user_exponent, w_i**item_exponent


def skew_weights(
    space_items: np.ndarray, train_items: np.ndarray, n_items: int, *, min_pop: float = 1.0
) -> np.ndarray:
    """Per-pair SKEW weights 1 / max(pop(i), min_pop) ([SAC20] §3.1, after Liang et al. 2016).

    pop(i) = number of interactions of i in the training part; ``min_pop`` > 0
    (default 1) keeps items unseen in training finite (weight 1/min_pop).
    """
    if not (math.isfinite(min_pop) and min_pop > 0):
        raise ValueError(f"min_pop must be finite and > 0, got {min_pop!r}")
    items = _ids(space_items, n_items, "space_items")
    pop = np.bincount(_ids(train_items, n_items, "train_items"), minlength=n_items)
    return 1.0 / np.maximum(pop, min_pop)[items]


def kl_pair_weights(
    space_users: np.ndarray,
    space_items: np.ndarray,
    *,
    n_users: int,
    n_items: int,
    mar_items: np.ndarray | None = None,
    active_items: int | None = None,
) -> np.ndarray:
    """Per-pair KL weights ω_i / Σ_{j∈I_u} ω_j ([MYT14]; docs/experiments/e1.md).

    I_u = u's items in the space; ω minimises KL(P_ref ‖ P(·|ω)) of the space's
    classic-protocol marginal (:func:`debiaseval.debiasing.kl_weights.fit_kl_weights`) with
    P_ref the item posteriors of ``mar_items`` (the MAR weights part), or the
    uniform 1/n_items when None; ``active_items`` = p (None = every item). Each
    user's pairs sum to 1, so users weigh uniformly.
    """
    users = _ids(space_users, n_users, "space_users")
    items = _ids(space_items, n_items, "space_items")
    if users.size != items.size:
        raise ValueError(f"space_users/items differ in length: {users.size} != {items.size}")
    if mar_items is None:
        p_ref = np.full(n_items, 1.0 / n_items)
    else:
        p_ref = posteriors(_ids(mar_items, n_items, "mar_items"), n_items)
    profiles = profile_matrix(users, items, n_users, n_items)
    fit = fit_kl_weights(profiles, p_ref, p=active_items)
    per_pair = pair_weights(profiles, fit.weights)
    return np.asarray(per_pair[users, items]).ravel()


@dataclass(frozen=True)
class TestSetSpec:
    """How to draw one intervened test set (docs/experiments/e1.md, [SAC20] Table 1).

    ``strategy``: "full" | "reg" | "skew" | "wtd" | "kl".
    ``mar_posterior`` (wtd, kl): "weights" = posteriors of the MAR weights part (WTD),
    "uniform" = hypothesised uniform posteriors (WTD_H); for kl the reference P_ref.
    ``reference`` (wtd): "train" = the MNAR training part [SAC20], "space" = the
    space being sampled [FLAIRS20].
    ``user_exponent``/``item_exponent``/``smoothing``: see :func:`wtd_weights`;
    ``min_pop``: see :func:`skew_weights`; ``active_items`` (kl): p, None = every
    item (:func:`kl_pair_weights`).
    """

    __test__ = False  # not a pytest test class despite the name

    name: str
    strategy: str
    mar_posterior: str = "weights"
    reference: str = "train"
    user_exponent: float = 1.0
    item_exponent: float = 2.0
    smoothing: float = 0.0
    min_pop: float = 1.0
    active_items: int | None = None

    def __post_init__(self) -> None:
        _check_choice("strategy", self.strategy, STRATEGIES)
        _check_choice("mar_posterior", self.mar_posterior, MAR_POSTERIORS)
        _check_choice("reference", self.reference, REFERENCES)
        for name in ("user_exponent", "item_exponent"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {getattr(self, name)!r}")
        if not (math.isfinite(self.smoothing) and self.smoothing >= 0):
            raise ValueError(f"smoothing must be finite and >= 0, got {self.smoothing!r}")
        if not (math.isfinite(self.min_pop) and self.min_pop > 0):
            raise ValueError(f"min_pop must be finite and > 0, got {self.min_pop!r}")
        p = self.active_items
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or p < 0):
            raise ValueError(f"active_items must be an int >= 0 or None, got {p!r}")


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(allowed)}")


DEFAULT_TESTSETS: dict[str, TestSetSpec] = {
    "FULL": TestSetSpec("FULL", "full"),
    "REG": TestSetSpec("REG", "reg"),
    "SKEW": TestSetSpec("SKEW", "skew"),
    "WTD": TestSetSpec("WTD", "wtd", mar_posterior="weights"),
    "WTD_H": TestSetSpec("WTD_H", "wtd", mar_posterior="uniform"),
}
"""The five test sets of [SAC20] (docs/experiments/e1.md)."""

VARIANT_TESTSETS: dict[str, TestSetSpec] = {
    "WTD_PLAIN": TestSetSpec("WTD_PLAIN", "wtd", mar_posterior="weights", item_exponent=1.0),
}
"""Named variants: WTD_PLAIN = WTD with exponents (1, 1) (the authors' public notebook)."""


def _frame_ids(df: pd.DataFrame, what: str) -> tuple[np.ndarray, np.ndarray]:
    missing = {"user", "item"} - set(df.columns)
    if missing:
        raise ValueError(f"{what} lacks column(s) {sorted(missing)}")
    return df["user"].to_numpy(), df["item"].to_numpy()


def sampling_weights(
    space: pd.DataFrame,
    spec: TestSetSpec,
    *,
    n_users: int,
    n_items: int,
    train: pd.DataFrame | None = None,
    mar_weights: pd.DataFrame | None = None,
) -> np.ndarray:
    """Per-pair sampling weight P_S(u, i) (unnormalised) of ``spec`` over ``space``.

    See docs/experiments/e1.md.

    "full" and "reg" weigh every pair 1. ``train`` is needed by "skew" and by
    "wtd" with reference "train"; ``mar_weights`` (the MAR weights part O^w) by
    "wtd" and "kl" with mar_posterior "weights".
    """
    _check_choice("strategy", spec.strategy, STRATEGIES)
    users, items = _frame_ids(space, "space")
    users = _ids(users, n_users, "space users")
    items = _ids(items, n_items, "space items")
    if spec.strategy in ("full", "reg"):
        return np.ones(len(space))
    if spec.strategy == "skew":
        if train is None:
            raise ValueError(f"test set {spec.name!r} (skew) needs the training part (train=None)")
        return skew_weights(items, _frame_ids(train, "train")[1], n_items, min_pop=spec.min_pop)
    if spec.strategy == "kl":
        mar_i = None
        if spec.mar_posterior == "weights":
            if mar_weights is None:
                raise ValueError(f"test set {spec.name!r} uses MAR posteriors but mar_weights=None")
            mar_i = _frame_ids(mar_weights, "mar_weights")[1]
        return kl_pair_weights(
            users,
            items,
            n_users=n_users,
            n_items=n_items,
            mar_items=mar_i,
            active_items=spec.active_items,
        )
    if spec.reference == "train":
        if train is None:
            raise ValueError(f"test set {spec.name!r} uses reference 'train' but train=None")
        ref_u, ref_i = _frame_ids(train, "train")
    else:
        ref_u, ref_i = users, items
    mar_u = mar_i = None
    if spec.mar_posterior == "weights":
        if mar_weights is None:
            raise ValueError(f"test set {spec.name!r} uses MAR posteriors but mar_weights=None")
        mar_u, mar_i = _frame_ids(mar_weights, "mar_weights")
    return wtd_weights(
        users,
        items,
        n_users=n_users,
        n_items=n_items,
        reference_users=ref_u,
        reference_items=ref_i,
        mar_users=mar_u,
        mar_items=mar_i,
        user_exponent=spec.user_exponent,
        item_exponent=spec.item_exponent,
        smoothing=spec.smoothing,
    )


def intervene(
    space: pd.DataFrame,
    spec: TestSetSpec,
    *,
    rho: float,
    rng: np.random.Generator,
    n_users: int,
    n_items: int,
    train: pd.DataFrame | None = None,
    mar_weights: pd.DataFrame | None = None,
    weights: np.ndarray | None = None,
) -> pd.DataFrame:
    """Draw the intervened test set O^S of ``spec`` from ``space`` ([SAC20] §3).

    See docs/experiments/e1.md.

    Returns the sampled rows of ``space`` (all its columns and dtypes, original
    row order, index reset). Sample size is ``round(rho * len(space))`` (Python
    rounding, ties to even), drawn without replacement with probability
    proportional to the strategy's per-pair weight (:func:`sampling_weights`,
    or ``weights`` when the caller computed them already); "full" returns a
    copy of the whole space for any valid ``rho``. Ids are 0-based and below
    ``n_users``/``n_items``.
    """
    if isinstance(rho, bool) or not isinstance(rho, int | float | np.integer | np.floating):
        raise ValueError(f"rho must be a number in (0, 1], got {rho!r}")
    if not (0 < rho <= 1):
        raise ValueError(f"rho must be in (0, 1], got {rho!r}")
    if weights is None:
        weights = sampling_weights(
            space, spec, n_users=n_users, n_items=n_items, train=train, mar_weights=mar_weights
        )
    elif len(weights) != len(space):
        raise ValueError(f"weights has {len(weights)} entries for {len(space)} pairs")
    if spec.strategy == "full":
        return space.reset_index(drop=True)
    idx = weighted_sample_without_replacement(weights, round(rho * len(space)), rng)
    return space.iloc[idx].reset_index(drop=True)


def marginal_kl(
    ids: np.ndarray, reference_ids: np.ndarray, n: int, *, smoothing: float = 1.0
) -> float:
    """KL(p̂ ‖ q̂) in nats between the marginals of ``ids`` and ``reference_ids`` over 0..n-1.

    Both are Laplace-smoothed posteriors (:func:`posteriors` with ``smoothing``
    pseudo-counts each, so the divergence is finite when one set misses an id).
    E1's test-set diagnostics compare each test set's user and item marginals
    with those of the MAR ground truth: 0 means MAR-like.
    """
    p = posteriors(ids, n, smoothing=smoothing)
    q = posteriors(reference_ids, n, smoothing=smoothing)
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))


def kl_to_uniform(ids: np.ndarray, n: int) -> float:
    """KL(p̂ ‖ uniform) in nats, p̂ the empirical distribution of ``ids`` over 0..n-1.

    Σ_x p̂(x) log(n · p̂(x)); 0 iff every id occurs equally often, log(n) at most.
    """
    p = posteriors(ids, n)
    p = p[p > 0]
    return float(np.sum(p * np.log(n * p)))
