"""Turn a :class:`RawDataset` into the canonical interactions/users/items frames (docs/datasets.md).

A dataset holds every rating of every part (MNAR, MAR): ids are re-indexed to contiguous
0-based ids in increasing raw-id order (numeric for integer raw ids, lexicographic for
strings, as a user's own log may have: :mod:`debiaseval.data.user_logs`). Keeping only
some users or items is a step of an experiment's protocol, not of the dataset
(:mod:`debiaseval.data.filters`): the users and items present in both parts in E1
([SAC20]), users with 100-500 ratings in E2 ([FLAIRS20],
:func:`~debiaseval.data.filters.users_by_count`; re-indexed by :func:`filter_users_by_count`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from debiaseval.data.filters import Filtered, apply_filter, users_by_count
from debiaseval.data.raw import RawDataset
from debiaseval.io.errors import DatasetError

__all__ = ["PARTS", "build_interactions", "filter_users_by_count"]

PARTS = ("mnar", "mar")


def _label(name: str) -> str:
    return f"dataset {name!r}" if name else "dataset"


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered by part ("mnar" first), user, item."""
    part_rank = pd.Categorical(frame["part"], categories=PARTS).codes
    order = np.lexsort((frame["item"].to_numpy(), frame["user"].to_numpy(), part_rank))
    return frame.iloc[order].reset_index(drop=True)


def _id_codes(ids: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The 0-based id of every row in raw-id order, and the distinct raw ids in that order.

    Integers are sorted as they are; strings are dictionary-encoded (each distinct id stored
    once, as a Python string), so that memory follows the data: a fixed-width ``str_`` array
    would cost the longest id × rows × 4 bytes (issue 43: a 2 MB id took 13 GB).
    """
    values = ids.to_numpy()
    if np.issubdtype(values.dtype, np.integer):
        distinct = np.unique(values)
        return np.searchsorted(distinct, values).astype(np.int32), distinct
    encoded = pd.Categorical(ids.astype(str))  # categories sorted by code point, as numpy's
    return encoded.codes.astype(np.int32), encoded.categories.to_numpy(dtype=object)


def _raw(ids: np.ndarray) -> np.ndarray:
    """Raw ids as stored: int64 when they are integers, else strings (an object array)."""
    return ids.astype(np.int64) if np.issubdtype(ids.dtype, np.integer) else ids.astype(object)


def _id_frame(raw_ids: np.ndarray, kind: str, features: pd.DataFrame | None) -> pd.DataFrame:
    """``kind`` (new int32 id), ``raw_<kind>`` (int64, or str) and the raw frame's features."""
    frame = pd.DataFrame(
        {
            kind: np.arange(len(raw_ids), dtype=np.int32),
            f"raw_{kind}": _raw(raw_ids),
        }
    )
    if features is None:
        return frame
    feats = features.rename(columns={kind: f"raw_{kind}"})
    feats = feats.astype({f"raw_{kind}": np.int64}).drop_duplicates(f"raw_{kind}")
    return frame.merge(feats, on=f"raw_{kind}", how="left", validate="one_to_one")


def build_interactions(raw: RawDataset) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Canonical ``(interactions, users, items)`` of a raw dataset.

    Every rating of every part is kept. ``interactions``: ``user``/``item`` int32
    (contiguous, in raw-id order), ``rating`` float32, ``timestamp`` (only if the MNAR
    part has it: int64 when every part has it, else pandas' nullable ``Int64``, missing on
    the rows of a MAR part without times, which no experiment uses), ``part`` ("mnar"/"mar"),
    ``propensity`` float32 (only if the raw data has propensities; NaN for a pair without
    one). Sorted by part, user, item. ``users``/``items`` map new ids to raw ids
    (``raw_user``/``raw_item``: int64, or strings) plus features.
    """
    parts = [raw.mnar] if raw.mar is None else [raw.mnar, raw.mar]
    has_ts = "timestamp" in raw.mnar.columns
    every_ts = all("timestamp" in p.columns for p in parts)
    cols = ["user", "item", "rating"] + (["timestamp"] if has_ts else [])
    if has_ts and not every_ts:  # missing times as <NA>, never as a float that rounds them
        parts = [
            p.assign(timestamp=pd.array(p["timestamp"], dtype="Int64"))
            if "timestamp" in p.columns
            else p.assign(timestamp=pd.array([pd.NA] * len(p), dtype="Int64"))
            for p in parts
        ]
    frame = pd.concat(
        [p[cols].assign(part=label) for p, label in zip(parts, PARTS, strict=False)],
        ignore_index=True,
    )
    empty = [label for p, label in zip(parts, PARTS, strict=False) if p.empty]
    if empty:
        raise DatasetError(
            f"{_label(raw.name)} has no {'/'.join(empty)} interactions: expected at least "
            "one rating in every part"
        )
    if raw.propensities is not None:
        props = raw.propensities[["user", "item", "propensity"]]
        frame = frame.merge(props, on=["user", "item"], how="left", validate="many_to_one")
    (users, user_ids), (items, item_ids) = _id_codes(frame["user"]), _id_codes(frame["item"])
    out = pd.DataFrame(
        {
            "user": users,
            "item": items,
            "rating": frame["rating"].to_numpy(dtype=np.float32),
        }
    )
    if every_ts:
        out["timestamp"] = frame["timestamp"].to_numpy(dtype=np.int64)
    elif has_ts:  # a MAR part without times (docs/own-data.md)
        out["timestamp"] = frame["timestamp"].array
    out["part"] = frame["part"].astype(str).to_numpy()
    if "propensity" in frame.columns:
        out["propensity"] = frame["propensity"].to_numpy(dtype=np.float32)
    return (
        _sorted(out),
        _id_frame(user_ids, "user", raw.users),
        _id_frame(item_ids, "item", raw.items),
    )


def _identity(ids: np.ndarray, kind: str) -> pd.DataFrame:
    """An id table mapping the ids ``0..max`` to themselves as raw ids."""
    n = int(ids.max()) + 1 if len(ids) else 0
    return pd.DataFrame({kind: np.arange(n, dtype=np.int32), f"raw_{kind}": np.arange(n)})


def filter_users_by_count(
    interactions: pd.DataFrame,
    min_count: int | None,
    max_count: int | None,
    part: str = "mnar",
    *,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
) -> Filtered:
    """Keep users with ``min_count <= #ratings in part <= max_count``, then re-index.

    [FLAIRS20] keeps ML-1M users with 100-500 ratings. A bound of ``None`` is open; the
    count is taken in ``part`` (all rows if there is no ``part`` column) and the kept
    users keep their rows in every part. Items left without rows are dropped. Returns
    :class:`~debiaseval.data.filters.Filtered`: ``(interactions, users, items, dropped)``;
    ``users``/``items`` carry ``raw_user``/``raw_item`` from the given mappings, or the
    input ids when no mapping is given; ``dropped`` is the filter's report
    (:func:`~debiaseval.data.filters.dropped_report`, filter ``users_by_count``).
    """
    user = interactions["user"].to_numpy(np.int64)
    item = interactions["item"].to_numpy(np.int64)
    return apply_filter(
        interactions,
        users_by_count(interactions, min_count, max_count, part),
        name="users_by_count",
        where=f"dataset (users with {min_count} to {max_count} ratings in part {part!r})",
        users=_identity(user, "user") if users is None else users,
        items=_identity(item, "item") if items is None else items,
    )
