"""Seeded random splits of interactions into named parts (docs/experiments/e2.md)."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping

import numpy as np
import pandas as pd

from debiaseval.data.filters import dropped_report, log_dropped, users_by_count
from debiaseval.io.errors import ConfigError

__all__ = ["assign_parts", "check_fractions", "filter_users", "run_rng", "split_e1", "split_e2"]


def check_fractions(parts: Mapping[str, float], where: str) -> None:
    """Refuse, in one line naming the config key ``where``, split fractions that do not sum
    to 1."""
    total = sum(parts.values())
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise ConfigError(
            f"config error at '{where}': fractions {dict(parts)} sum to {total:g}, expected 1"
        )


def run_rng(seed: int, *labels: str) -> np.random.Generator:
    """Generator for run ``seed`` of a named stage, independent across labels.

    Labels (dataset, stage, recommender, ...) are hashed with CRC-32, so the
    stream depends only on the seed and the names, never on job order or cores.
    """
    keys = [zlib.crc32(label.encode()) for label in labels]
    return np.random.default_rng([seed, *keys])


def assign_parts(n: int, fractions: Mapping[str, float], rng: np.random.Generator) -> np.ndarray:
    """Label ``n`` rows with part names, uniformly at random, in the given fractions.

    Part sizes are the differences of round(cumulative fraction * n), so they
    add up to ``n`` exactly and differ from fraction * n by less than one.
    """
    names = list(fractions)
    weights = np.array([fractions[name] for name in names], dtype=np.float64)
    bounds = np.rint(np.cumsum(weights) / weights.sum() * n).astype(np.int64)
    sizes = np.diff(bounds, prepend=0)
    labels = np.repeat(np.array(names, dtype=object), sizes)
    return labels[rng.permutation(n)]


def split_e1(
    interactions: pd.DataFrame,
    *,
    mnar_split: Mapping[str, float],
    mar_split: Mapping[str, float],
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Split MNAR into train/heldout and MAR into weights/val/gt ([SAC20] section 4).

    ``interactions`` has a ``part`` column with values ``mnar`` and ``mar``;
    the result keeps every column and replaces ``part`` with the split label.
    """
    frames = []
    for source, fractions in (("mnar", mnar_split), ("mar", mar_split)):
        rows = interactions[interactions["part"] == source].copy()
        if rows.empty:
            raise ValueError(f"the interactions have no '{source}' part, which E1 needs")
        rows["part"] = assign_parts(len(rows), fractions, rng)
        frames.append(rows)
    out = pd.concat(frames, ignore_index=True)
    out["part"] = out["part"].astype(str)
    return out


def filter_users(
    interactions: pd.DataFrame, *, min_ratings: int | None = None, max_ratings: int | None = None
) -> pd.DataFrame:
    """Rows of the users whose number of rows lies in [min_ratings, max_ratings] (None = open).

    [FLAIRS20] §4 keeps the users with 100–500 ratings of ml-1m and LibraryThing.
    User ids are kept (no re-indexing): dropped users simply have no rows. What it drops
    is logged per part (:func:`~debiaseval.data.filters.log_dropped`: in the job's log,
    with a warning when more than half of a part goes).
    """
    keep = users_by_count(interactions, min_ratings, max_ratings)
    report = dropped_report(interactions, keep, name="users_by_count")
    log_dropped(report, f"users with {min_ratings} to {max_ratings} ratings")
    return interactions[keep].reset_index(drop=True)


def split_e2(
    interactions: pd.DataFrame,
    *,
    fractions: Mapping[str, float],
    rng: np.random.Generator,
    min_ratings: int | None = None,
    max_ratings: int | None = None,
) -> pd.DataFrame:
    """Split the MNAR part into known / hidden_pool / test_pool ([FLAIRS20] §4).

    See docs/experiments/e2.md.

    The MNAR rows (``part == "mnar"``; MAR parts are not used) of the users kept by
    :func:`filter_users` are labelled uniformly at random in ``fractions``
    (default study: known 60% = K_before, hidden_pool 20% = H_he, test_pool 20% = T_he).
    """
    rows = interactions[interactions["part"] == "mnar"]
    if rows.empty:
        raise ValueError("the interactions have no 'mnar' part, which E2 needs")
    rows = filter_users(
        rows.reset_index(drop=True), min_ratings=min_ratings, max_ratings=max_ratings
    )
    if rows.empty:
        raise ValueError(
            f"no user has between {min_ratings} and {max_ratings} MNAR ratings (E2's user filter)"
        )
    out = rows.copy()
    out["part"] = assign_parts(len(out), fractions, rng).astype(str)
    return out
