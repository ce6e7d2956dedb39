"""Simulated exposure on fully exposed data: a biased training set and a random one ([URE24]).

See docs/experiments/e5.md. From a fully exposed dataset (every user's value of every available
item is known: KuaiRec's small matrix, or ``synthetic``'s full matrix), each
user u is *exposed*, as a logging recommender would, to a training set drawn
without replacement by successive sampling with item weights w_i (the
Efraimidis–Spirakis keys of :mod:`debiaseval.debiasing.sampling`, one draw per user):

- ``by="popularity"``: w_i = max(pop_i, 1)^γ, pop_i = # positive pairs of i in
  the full data (the logging system shows what is liked in general);
- ``by="attribute"``: w_i = exp(γ·z_i), z_i = an item attribute standardised to
  mean 0 and standard deviation 1;
- ``by="inverse_attribute"``: w_i = a_i^(−γ), a_i > 0 an item attribute: exposure
  inversely proportional to it for γ = 1, as [URE24]'s KuaiRec exposure is to the video
  duration;

with strength γ ≥ 0; γ = 0 is uniform exposure. The user's training set has
round(``train_fraction`` · #available items) items. Then the randomly exposed
set R_u is ``n_exposed`` items drawn uniformly from the user's other items (all
of them when fewer remain), and the full matrix stays the truth.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = [
    "EXPOSURE_PARTS",
    "attribute_weights",
    "inverse_attribute_weights",
    "item_popularity",
    "popularity_weights",
    "simulate_exposure",
]

EXPOSURE_PARTS = ("train", "exposed", "unexposed")
"""Labels of :func:`simulate_exposure`: biased training set, random set R, the rest."""


def _check_strength(strength: float) -> float:
    if isinstance(strength, bool) or not np.isfinite(strength) or strength < 0:
        raise ValueError(f"exposure strength must be a finite number >= 0, got {strength!r}")
    return float(strength)


def item_popularity(full: pd.DataFrame, n_items: int, *, positive_threshold: float) -> np.ndarray:
    """Number of positive pairs (rating > ``positive_threshold``) of every item, float64."""
    positive = full["rating"].to_numpy() > positive_threshold
    return np.bincount(full["item"].to_numpy(np.int64)[positive], minlength=n_items).astype(
        np.float64
    )


def popularity_weights(popularity: np.ndarray, strength: float) -> np.ndarray:
    """Exposure weights w_i = max(pop_i, 1)^strength (strength 0: all 1)."""
    pop = np.asarray(popularity, dtype=np.float64)
    return np.maximum(pop, 1.0) ** _check_strength(strength)


def attribute_weights(values: np.ndarray, strength: float) -> np.ndarray:
    """Exposure weights w_i = exp(strength · z_i), z = ``values`` standardised (mean 0, sd 1).

    A constant attribute gives z = 0 (uniform); NaN values raise ``ValueError``.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or not np.isfinite(v).all():
        raise ValueError("the exposure attribute must be a 1-D array of finite numbers")
    sd = v.std()
    z = (v - v.mean()) / sd if sd > 0 else np.zeros_like(v)
    return np.exp(_check_strength(strength) * z)


def inverse_attribute_weights(values: np.ndarray, strength: float) -> np.ndarray:
    """Exposure weights w_i = a_i^(−strength) of a positive attribute a ([URE24]: exposure
    inverse to the video duration is strength 1). Strength 0: all 1; a value that is not a
    finite number > 0 raises ``ValueError``."""
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or not (np.isfinite(a).all() and (a > 0).all()):
        raise ValueError("an inverse exposure attribute must be a 1-D array of finite numbers > 0")
    return a ** -_check_strength(strength)


_BLOCK_CELLS = 1 << 22  # dense cells per block of users (32 MiB of float64)


def _smallest_per_user(users: np.ndarray, keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Mask of the pairs whose key is among the ``counts[u]`` smallest keys of their user u.

    Keys are continuous random variates (no ties). The pairs of a block of users
    are laid out densely (row = user, column = position among the user's pairs,
    +inf padding) and each row is sorted once; a pair is chosen when its key is
    at most its row's counts[u]-th smallest key. O(n log(max pairs per user)).
    """
    order = np.argsort(users, kind="stable")
    sorted_users = users[order]
    sorted_keys = keys[order]
    bounds = np.searchsorted(sorted_users, np.arange(counts.size + 1))
    width = int(np.diff(bounds).max()) if users.size else 0
    position = np.arange(users.size) - bounds[sorted_users]  # position within the user's pairs
    chosen_sorted = np.zeros(users.size, dtype=bool)
    step = max(1, _BLOCK_CELLS // max(width, 1))
    for start in range(0, counts.size, step):
        stop = min(start + step, counts.size)
        lo, hi = bounds[start], bounds[stop]
        if lo == hi:
            continue
        rows = sorted_users[lo:hi] - start
        dense = np.full((stop - start) * width, np.inf)
        dense[rows * width + position[lo:hi]] = sorted_keys[lo:hi]
        dense = dense.reshape(stop - start, width)
        dense.sort(axis=1)
        n = np.minimum(counts[start:stop], width)
        kth = np.where(n > 0, dense[np.arange(stop - start), np.maximum(n - 1, 0)], -np.inf)
        chosen_sorted[lo:hi] = sorted_keys[lo:hi] <= kth[rows]
    chosen = np.empty(users.size, dtype=bool)
    chosen[order] = chosen_sorted
    return chosen


def simulate_exposure(
    full: pd.DataFrame,
    item_weights: np.ndarray,
    *,
    train_fraction: float,
    n_exposed: int,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Label every pair of fully exposed data ``train``, ``exposed`` or ``unexposed``.

    ``full``: one row per available (user, item) pair with its ``rating``
    (0-based ids). ``item_weights``: w_i > 0 of every item
    (:func:`popularity_weights`, :func:`attribute_weights`,
    :func:`inverse_attribute_weights`). Per user, the
    training set is a successive weighted sample without replacement of
    round(``train_fraction`` · #pairs) items (keys log(E)/… as in
    :func:`debiaseval.debiasing.sampling.weighted_sample_without_replacement`), and the
    exposed set a uniform sample of ``n_exposed`` of the remaining items.
    Vectorised over blocks of users (a row sort each). Returns ``full`` with a
    categorical ``part`` column, in the input's row order.
    """
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction!r}")
    if isinstance(n_exposed, bool) or not isinstance(n_exposed, int | np.integer) or n_exposed < 1:
        raise ValueError(f"n_exposed must be a positive integer, got {n_exposed!r}")
    w = np.asarray(item_weights, dtype=np.float64)
    items = full["item"].to_numpy(np.int64)
    users = full["user"].to_numpy(np.int64)
    if items.size and items.max() >= w.size:
        raise ValueError(f"item_weights has {w.size} entries but items go up to {items.max()}")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("item_weights must be finite and > 0")
    keys = np.log(rng.standard_exponential(users.size)) - np.log(w[items])
    per_user = np.bincount(users, minlength=int(users.max()) + 1 if users.size else 0)
    train = _smallest_per_user(users, keys, np.rint(train_fraction * per_user).astype(np.int64))
    uniform = rng.random(users.size)
    uniform[train] = np.inf  # training pairs are never among the smallest: R is drawn from the rest
    n_rest = per_user - np.bincount(users[train], minlength=per_user.size)
    exposed = _smallest_per_user(users, uniform, np.minimum(n_exposed, n_rest))
    if users.size and (train | exposed).all():
        from debiaseval.io.errors import ConfigError  # a config error, in the job's line

        raise ConfigError(
            f"config error at 'e5.exposure.n_exposed': {n_exposed} leaves no pair unexposed (a "
            f"user has at most {int(n_rest.max())} items besides the training ones), so the true "
            f"recall is undefined; expected at most {int(n_rest.max()) - 1}"
        )
    part = pd.Categorical.from_codes(
        np.where(train, 0, np.where(exposed, 1, 2)).astype(np.int8), categories=EXPOSURE_PARTS
    )
    out = full.copy()
    out["part"] = part
    return out
