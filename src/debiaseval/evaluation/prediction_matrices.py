"""The five prediction matrices of [ICML16] §3.4, built from a full rating matrix.

See docs/experiments/e3.md.

T. Schnabel et al., ICML 2016, §3.4: each Ŷ is a controlled corruption of the
true ratings Y (1..5), so that its true error and DCG are known exactly:

- ``REC_ONES``: Ŷ = Y with as many randomly chosen true 1s set to 5 as there are true 5s;
- ``REC_FOURS``: the same with true 4s;
- ``ROTATE``: Ŷ = Y − 1 for Y ≥ 2 and Ŷ = 5 for Y = 1;
- ``SKEWED``: Ŷ ~ N(μ = Y, σ = (6 − Y)/2), clipped to [0, 6];
- ``COARSENED``: Ŷ = 3 if Y ≤ 3, else 4.

:data:`PREDICTION_MATRICES` is the registry; every builder takes Y and a
``numpy.random.Generator`` (used by REC_ONES, REC_FOURS and SKEWED only).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["PREDICTION_MATRICES", "prediction_matrix"]


def _flip_to_five(level: int) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    def build(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = y.copy()
        flat = out.reshape(-1)
        candidates = np.flatnonzero(flat == level)
        n_fives = int(np.count_nonzero(flat == 5))
        if n_fives > candidates.size:
            raise ValueError(
                f"Y has {n_fives} true 5s but only {candidates.size} true {level}s to flip"
            )
        flat[rng.choice(candidates, size=n_fives, replace=False)] = 5.0
        return out

    return build


def _rotate(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.where(y >= 2, y - 1.0, 5.0)


def _skewed(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.clip(rng.normal(y, (6.0 - y) / 2.0), 0.0, 6.0)


def _coarsened(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.where(y <= 3, 3.0, 4.0)


PREDICTION_MATRICES: dict[str, Callable[[np.ndarray, np.random.Generator], np.ndarray]] = {
    "REC_ONES": _flip_to_five(1),
    "REC_FOURS": _flip_to_five(4),
    "ROTATE": _rotate,
    "SKEWED": _skewed,
    "COARSENED": _coarsened,
}
"""Name → builder(Y, rng) of the prediction matrices of [ICML16] §3.4, in the paper's order."""


def prediction_matrix(name: str, ratings: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The prediction matrix ``name`` (float64, shape of ``ratings``) for true ratings 1..5."""
    if name not in PREDICTION_MATRICES:
        raise ValueError(
            f"unknown prediction matrix {name!r}, expected one of {list(PREDICTION_MATRICES)}"
        )
    y = np.asarray(ratings, dtype=np.float64)
    if y.ndim != 2 or y.size == 0:
        raise ValueError(f"ratings must be a non-empty 2-D matrix, got shape {y.shape}")
    if not np.all(np.isin(y, (1.0, 2.0, 3.0, 4.0, 5.0))):
        raise ValueError("ratings must all be integers 1..5 (a full matrix, no NaN)")
    return PREDICTION_MATRICES[name](y, rng)
