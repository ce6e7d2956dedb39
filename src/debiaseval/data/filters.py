"""Filters that drop ratings of a dataset for an experiment's protocol, and what they drop.

A dataset as loaded holds every rating of every part (:mod:`debiaseval.data.preprocess`).
Keeping only some users or items is a step of an experiment's protocol: the users and
items present in both the MNAR and the MAR part in E1 ([SAC20],
:func:`common_users_items`), users by their number of ratings in E2 ([FLAIRS20] §4,
:func:`users_by_count`). Every such filter reports per part the users, items and ratings
it dropped (:func:`dropped_report`), with a warning for every part that lost more than
half of its ratings (:func:`dropped_warnings`, :func:`log_dropped`); :func:`apply_filter`
keeps the rows of a mask, re-indexes users and items to contiguous ids in the order of the
old ones, and reports. See docs/datasets.md.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from debiaseval.io.errors import DatasetError

__all__ = [
    "DROPPED_COLUMNS",
    "WARN_SHARE",
    "Filtered",
    "apply_filter",
    "common_users_items",
    "dropped_markdown",
    "dropped_report",
    "dropped_warnings",
    "log_dropped",
    "part_sizes",
    "reindex",
    "users_by_count",
]

DROPPED_COLUMNS = (
    "filter",
    "part",
    "users",
    "items",
    "ratings",
    "users_dropped",
    "items_dropped",
    "ratings_dropped",
    "share_dropped",
)
"""Columns of a dropped-data report: per filter and part, the users, items and ratings the
part held before the filter, how many of each it dropped, and the share of its ratings
dropped."""

WARN_SHARE = 0.5
"""A filter that drops more than this share of a part's ratings is warned about."""

_ALL = "all"
"""The part name of a frame without a ``part`` column."""


class Filtered(NamedTuple):
    """What a filter gives: the kept rows re-indexed, their id tables, and what it dropped."""

    interactions: pd.DataFrame
    users: pd.DataFrame | None
    items: pd.DataFrame | None
    dropped: pd.DataFrame


def _parts(interactions: pd.DataFrame) -> np.ndarray:
    if "part" not in interactions:
        return np.full(len(interactions), _ALL, dtype=object)
    return interactions["part"].to_numpy()


def _part_order(names: np.ndarray) -> list[str]:
    """Part names in the order of the parts' first rows (MNAR before MAR, as datasets store)."""
    _, first = np.unique(names.astype(str), return_index=True)
    return [str(names[i]) for i in np.sort(first)]


def part_sizes(interactions: pd.DataFrame) -> pd.DataFrame:
    """Per part (in the order the parts first occur): its ``users``, ``items`` and ``ratings``."""
    parts = _parts(interactions)
    rows = []
    for name in _part_order(parts):
        rows_of = interactions[parts == name]
        rows.append(
            {
                "part": name,
                "users": np.int64(rows_of["user"].nunique()),
                "items": np.int64(rows_of["item"].nunique()),
                "ratings": np.int64(len(rows_of)),
            }
        )
    return pd.DataFrame(rows, columns=["part", "users", "items", "ratings"])


def dropped_report(before: pd.DataFrame, keep: np.ndarray, *, name: str) -> pd.DataFrame:
    """What filter ``name`` drops when it keeps the rows ``keep`` (a boolean mask) of ``before``.

    One row per part of ``before`` (``all`` when it has no ``part`` column), with the
    columns :data:`DROPPED_COLUMNS`: a user (item) is dropped from a part when it had
    rows in the part before and has none after.
    """
    keep = np.asarray(keep, dtype=bool)
    sizes = part_sizes(before)
    kept = part_sizes(before[keep]).set_index("part").reindex(sizes["part"], fill_value=0)
    out = sizes.copy()
    out.insert(0, "filter", name)
    for what in ("users", "items", "ratings"):
        out[f"{what}_dropped"] = (sizes[what].to_numpy() - kept[what].to_numpy()).astype(np.int64)
    total = out["ratings"].to_numpy(np.float64)
    out["share_dropped"] = np.divide(
        out["ratings_dropped"].to_numpy(np.float64), total, out=np.zeros(len(out)), where=total > 0
    )
    return out[list(DROPPED_COLUMNS)].reset_index(drop=True)


def dropped_warnings(report: pd.DataFrame, *, limit: float = WARN_SHARE) -> list[str]:
    """One line per part of ``report`` that lost more than ``limit`` of its ratings."""
    return [
        f"filter {row.filter} drops {row.ratings_dropped:,} of the {row.ratings:,} ratings "
        f"({row.share_dropped:.1%}) of part {row.part}, and {row.users_dropped:,} of its "
        f"{row.users:,} users and {row.items_dropped:,} of its {row.items:,} items"
        for row in report.itertuples(index=False)
        if row.share_dropped > limit
    ]


def log_dropped(report: pd.DataFrame, where: str, logger: logging.Logger | None = None) -> None:
    """Log ``report`` (info) and its :func:`dropped_warnings` (warning), prefixed by ``where``.

    A workflow job logs to its log file (``debiaseval.workflow.runtime.job``).
    """
    logger = logger or logging.getLogger(__name__)
    logger.info("%s: dropped by its filters:\n%s", where, report.to_string(index=False))
    for line in dropped_warnings(report):
        logger.warning("%s: %s", where, line)


def users_by_count(
    interactions: pd.DataFrame,
    min_count: int | None,
    max_count: int | None,
    part: str | None = None,
) -> np.ndarray:
    """The mask of the rows of users with ``min_count <= #ratings <= max_count`` (None = open).

    Ratings are counted in ``part`` (every row when None, or without a ``part`` column);
    a kept user keeps its rows in every part. [FLAIRS20] §4 keeps the users with 100-500
    ratings of ml-1m and LibraryThing.
    """
    user = interactions["user"].to_numpy(np.int64)
    counted = np.ones(len(user), dtype=bool)
    if part is not None and "part" in interactions:
        counted = interactions["part"].to_numpy() == part
    counts = np.bincount(user[counted], minlength=int(user.max()) + 1 if len(user) else 0)
    keep = np.ones(len(counts), dtype=bool)
    if min_count is not None:
        keep &= counts >= min_count
    if max_count is not None:
        keep &= counts <= max_count
    return keep[user]


def dropped_markdown(report: pd.DataFrame, title: str) -> str:
    """``report`` as a Markdown section: a heading, a table, and the warnings if any."""
    header = "| filter | part | users dropped | items dropped | ratings dropped | share |"
    lines = [f"# {title}", "", header, "|---|---|---|---|---|---|"]
    for row in report.itertuples(index=False):
        lines.append(
            f"| {row.filter} | {row.part} | {row.users_dropped:,} of {row.users:,} | "
            f"{row.items_dropped:,} of {row.items:,} | {row.ratings_dropped:,} of "
            f"{row.ratings:,} | {row.share_dropped:.1%} |"
        )
    if report.empty:
        lines.append("| none | | | | | |")
    warnings = dropped_warnings(report)
    if warnings:
        lines += ["", *[f"Warning: {line}." for line in warnings]]
    return "\n".join(lines) + "\n"


def _id_table(kept_ids: np.ndarray, kind: str, table: pd.DataFrame | None) -> pd.DataFrame | None:
    """The rows of ``table`` (``kind`` -> raw ids, features) of ``kept_ids``, renumbered 0.."""
    if table is None:
        return None
    kept = table.set_index(kind).loc[kept_ids].reset_index(drop=True)
    kept.insert(0, kind, np.arange(len(kept_ids), dtype=np.int32))
    return kept


def reindex(
    interactions: pd.DataFrame,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]:
    """Users and items of ``interactions`` re-indexed 0.. in the order of their old ids.

    The id tables keep the rows (raw ids, features) of the ids that remain, renumbered;
    ``None`` stays ``None``. Rows keep their order, so a dataset's sorting survives.
    """
    out = interactions.reset_index(drop=True).copy()
    new = {}
    for kind, table in (("user", users), ("item", items)):
        old = out[kind].to_numpy()
        kept_ids = np.unique(old)
        out[kind] = np.searchsorted(kept_ids, old).astype(np.int32)
        new[kind] = _id_table(kept_ids, kind, table)
    return out, new["user"], new["item"]


def apply_filter(
    interactions: pd.DataFrame,
    keep: np.ndarray,
    *,
    name: str,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    where: str = "dataset",
) -> Filtered:
    """Keep the rows ``keep`` of ``interactions``, re-index, and report what filter ``name`` drops.

    Raises a one-line :class:`~debiaseval.io.errors.DatasetError` naming ``where``
    and the filter when it drops every row.
    """
    keep = np.asarray(keep, dtype=bool)
    report = dropped_report(interactions, keep, name=name)
    if not keep.any():
        raise DatasetError(
            f"{where} is empty after filter {name}: no {'/'.join(report['part'])} interactions left"
        )
    kept, new_users, new_items = reindex(interactions[keep], users, items)
    return Filtered(kept, new_users, new_items, report)


def common_users_items(
    interactions: pd.DataFrame,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    *,
    parts: Sequence[str] = ("mnar", "mar"),
    where: str = "dataset",
) -> Filtered:
    """The rows of the users and items that occur in every one of ``parts`` ([SAC20]).

    [SAC20] evaluates on the users and items present in both the MNAR and the MAR part
    (E1's ``e1.common_users_items``); rows of other parts are kept if their user and item
    pass. Re-indexed and reported by :func:`apply_filter` (filter ``common_users_items``).
    """
    part = _parts(interactions)
    user, item = interactions["user"].to_numpy(), interactions["item"].to_numpy()
    common_users, common_items = None, None
    for name in parts:
        in_part = part == name
        u, i = np.unique(user[in_part]), np.unique(item[in_part])
        common_users = u if common_users is None else np.intersect1d(common_users, u)
        common_items = i if common_items is None else np.intersect1d(common_items, i)
    keep = np.isin(user, common_users) & np.isin(item, common_items)
    return apply_filter(
        interactions, keep, name="common_users_items", users=users, items=items, where=where
    )
