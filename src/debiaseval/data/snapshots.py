"""Successive snapshots t0 < t1 < … of a time-stamped dataset ([MYT14]; docs/experiments/e6.md).

The data at time t are all interactions logged before t (cumulative snapshots, as
a live system's evaluation database grows). A snapshot is given by its cut: it
holds the interactions with ``timestamp < cut``. Cuts come from the config, either
as a number n of snapshots holding about 1/n, 2/n, …, all of the interactions
(:func:`count_cuts`), or as dates (:func:`date_cuts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["count_cuts", "date_cuts", "snapshot_masks"]


def _timestamps(timestamps: np.ndarray) -> np.ndarray:
    ts = np.asarray(timestamps)
    if ts.ndim != 1 or ts.size == 0 or not np.issubdtype(ts.dtype, np.integer):
        raise ValueError("timestamps must be a non-empty 1-D integer array")
    return ts.astype(np.int64)


def count_cuts(timestamps: np.ndarray, n: int) -> np.ndarray:
    """Cuts of ``n`` snapshots holding about k/n of the interactions, k = 1..n.

    Cut k is one past the timestamp of the ⌈k·N/n⌉-th interaction in time order,
    so every interaction at that timestamp is in; the last cut takes everything.
    Cuts are strictly increasing (raises ``ValueError`` when timestamps are too
    coarse for ``n`` distinct snapshots).
    """
    ts = np.sort(_timestamps(timestamps))
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"the number of snapshots must be an int >= 2, got {n!r}")
    positions = np.ceil(np.arange(1, n + 1) * ts.size / n).astype(np.int64) - 1
    cuts = ts[positions] + 1
    if np.any(np.diff(cuts) <= 0):
        raise ValueError(f"timestamps take too few distinct values for {n} distinct snapshots")
    return cuts


def date_cuts(dates: Sequence[str], timestamps: np.ndarray) -> np.ndarray:
    """Cuts at the given ISO dates (UTC midnight, Unix seconds), increasing, each keeping data.

    Raises ``ValueError`` for unparsable or non-increasing dates and for a first
    snapshot without interactions.
    """
    ts = _timestamps(timestamps)
    if len(dates) < 2:
        raise ValueError(
            f"give at least two snapshot dates (t0 and a later time), got {list(dates)}"
        )
    try:
        stamps = pd.to_datetime(list(dates), format="ISO8601", utc=True)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"snapshot dates must be ISO dates such as 1998-01-01: {exc}") from None
    cuts = (stamps.as_unit("s").asi8).astype(np.int64)
    if np.any(np.diff(cuts) <= 0):
        raise ValueError(f"snapshot dates must be strictly increasing, got {list(dates)}")
    if not np.any(ts < cuts[0]):
        raise ValueError(f"no interaction before the first snapshot date {dates[0]}")
    return cuts


def snapshot_masks(timestamps: np.ndarray, cuts: np.ndarray) -> list[np.ndarray]:
    """Boolean row masks of the snapshots: rows with ``timestamp < cut``, one per cut."""
    ts = _timestamps(timestamps)
    return [ts < cut for cut in np.asarray(cuts, dtype=np.int64)]
