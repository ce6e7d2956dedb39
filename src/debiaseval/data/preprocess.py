"""Turn a :class:`RawDataset` into the canonical interactions/users/items frames (docs/datasets.md).

With both an MNAR and a MAR part, only users and items present in both parts are kept
([SAC20] §4), then ids are re-indexed to contiguous 0-based ids in increasing raw-id
order (numeric for integer raw ids, lexicographic for strings, as a user's own log may
have: :mod:`debiaseval.data.user_logs`). User filters such as "100-500 ratings"
([FLAIRS20]) are applied separately by :func:`filter_users_by_count`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from debiaseval.data.download import DatasetError
from debiaseval.data.loaders import RawDataset

__all__ = ["PARTS", "build_interactions", "filter_users_by_count"]

PARTS = ("mnar", "mar")


def _label(name: str) -> str:
    return f"dataset {name!r}" if name else "dataset"


def _restrict_to_common(mnar: pd.DataFrame, mar: pd.DataFrame) -> list[pd.DataFrame]:
    """Keep only users and items that occur in both parts [SAC20]."""
    users = np.intersect1d(_id_values(mnar["user"]), _id_values(mar["user"]))
    items = np.intersect1d(_id_values(mnar["item"]), _id_values(mar["item"]))
    return [df[df["user"].isin(users) & df["item"].isin(items)] for df in (mnar, mar)]


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered by part ("mnar" first), user, item."""
    part_rank = pd.Categorical(frame["part"], categories=PARTS).codes
    order = np.lexsort((frame["item"].to_numpy(), frame["user"].to_numpy(), part_rank))
    return frame.iloc[order].reset_index(drop=True)


def _id_values(ids: pd.Series) -> np.ndarray:
    """Raw ids as a NumPy array that sorts fast: integers as they are, strings as ``str_``."""
    values = ids.to_numpy()
    return values if np.issubdtype(values.dtype, np.integer) else values.astype(str)


def _raw(ids: np.ndarray) -> np.ndarray:
    """Raw ids as stored: int64 when they are integers, else strings."""
    return ids.astype(np.int64) if np.issubdtype(ids.dtype, np.integer) else ids.astype(str)


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

    ``interactions``: ``user``/``item`` int32 (contiguous, in raw-id order), ``rating``
    float32, ``timestamp`` int64 (only if every part has it), ``part`` ("mnar"/"mar"),
    ``propensity`` float32 (only if the raw data has propensities; NaN for a pair without
    one). Sorted by part, user, item. ``users``/``items`` map new ids to raw ids
    (``raw_user``/``raw_item``: int64, or strings) plus features.
    """
    parts = [raw.mnar] if raw.mar is None else _restrict_to_common(raw.mnar, raw.mar)
    has_ts = all("timestamp" in p.columns for p in parts)
    cols = ["user", "item", "rating"] + (["timestamp"] if has_ts else [])
    frame = pd.concat(
        [p[cols].assign(part=label) for p, label in zip(parts, PARTS, strict=False)],
        ignore_index=True,
    )
    empty = [label for p, label in zip(parts, PARTS, strict=False) if p.empty]
    if empty:
        raise DatasetError(
            f"{_label(raw.name)} is empty after filtering: no {'/'.join(empty)} "
            "interactions left (users and items must occur in both parts)"
        )
    if raw.propensities is not None:
        props = raw.propensities[["user", "item", "propensity"]]
        frame = frame.merge(props, on=["user", "item"], how="left", validate="many_to_one")
    raw_users, raw_items = _id_values(frame["user"]), _id_values(frame["item"])
    user_ids, item_ids = np.unique(raw_users), np.unique(raw_items)
    out = pd.DataFrame(
        {
            "user": np.searchsorted(user_ids, raw_users).astype(np.int32),
            "item": np.searchsorted(item_ids, raw_items).astype(np.int32),
            "rating": frame["rating"].to_numpy(dtype=np.float32),
        }
    )
    if has_ts:
        out["timestamp"] = frame["timestamp"].to_numpy(dtype=np.int64)
    out["part"] = frame["part"].astype(str).to_numpy()
    if "propensity" in frame.columns:
        out["propensity"] = frame["propensity"].to_numpy(dtype=np.float32)
    return (
        _sorted(out),
        _id_frame(user_ids, "user", raw.users),
        _id_frame(item_ids, "item", raw.items),
    )


def _in_range(counts: pd.Series, lo: int | None, hi: int | None) -> pd.Series:
    keep = pd.Series(True, index=counts.index)
    if lo is not None:
        keep &= counts >= lo
    if hi is not None:
        keep &= counts <= hi
    return keep


def _reindex(ids: np.ndarray, kind: str, mapping: pd.DataFrame | None) -> pd.DataFrame:
    """New id frame for the kept old ids, composing with ``mapping`` when given."""
    if mapping is None:
        return pd.DataFrame(
            {kind: np.arange(len(ids), dtype=np.int32), f"raw_{kind}": ids.astype(np.int64)}
        )
    kept = mapping.set_index(kind).loc[ids].reset_index(drop=True)
    kept.insert(0, kind, np.arange(len(ids), dtype=np.int32))
    return kept


def filter_users_by_count(
    interactions: pd.DataFrame,
    min_count: int | None,
    max_count: int | None,
    part: str = "mnar",
    *,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Keep users with ``min_count <= #ratings in part <= max_count``, then re-index.

    [FLAIRS20] keeps ML-1M users with 100-500 ratings. A bound of ``None`` is open; the
    count is taken in ``part`` (all rows if there is no ``part`` column) and the kept
    users keep their rows in every part. Items left without rows are dropped. Returns
    ``(interactions, users, items)``; ``users``/``items`` carry ``raw_user``/``raw_item``
    from the given mappings, or the input ids when no mapping is given.
    """
    in_part = (
        interactions if "part" not in interactions else interactions[interactions["part"] == part]
    )
    all_users = np.unique(interactions["user"].to_numpy())
    counts = in_part.groupby("user").size().reindex(all_users, fill_value=0)
    keep_users = counts.index.to_numpy()[_in_range(counts, min_count, max_count).to_numpy()]
    kept = interactions[interactions["user"].isin(keep_users)]
    if kept.empty:
        raise DatasetError(
            f"dataset is empty after filtering users by count in part {part!r} "
            f"(min {min_count}, max {max_count})"
        )
    user_ids = np.unique(kept["user"].to_numpy())
    item_ids = np.unique(kept["item"].to_numpy())
    out = kept.reset_index(drop=True).copy()
    out["user"] = np.searchsorted(user_ids, out["user"].to_numpy()).astype(np.int32)
    out["item"] = np.searchsorted(item_ids, out["item"].to_numpy()).astype(np.int32)
    return out, _reindex(user_ids, "user", users), _reindex(item_ids, "item", items)
