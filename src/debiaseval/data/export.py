"""A seed's splits in raw ids, so that another framework trains on exactly the same data.

``results/<study>/e1/<dataset>/export/seed<s>/train.parquet`` (and ``.csv``) is E1's
training part of seed s, ``val`` its MAR validation part; E5 exports its training
sets. Columns ``user``, ``item`` (the dataset's raw ids, as in its files: see
:mod:`debiaseval.data.ids`), ``rating`` and ``timestamp`` where the dataset has one;
rows in the project's (user, item) order, which is the raw ids' order. Lists made
from them come back through :mod:`debiaseval.evaluation.external_lists`
(docs/own-recommender.md).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from debiaseval.data.ids import raw_ids, to_raw

__all__ = ["EXPORT_COLUMNS", "export_parts", "raw_part"]

EXPORT_COLUMNS = ("user", "item", "rating", "timestamp")
"""The columns of an exported part (``timestamp`` only where the dataset has one)."""


def raw_part(
    frame: pd.DataFrame,
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    *,
    n_users: int,
    n_items: int,
) -> pd.DataFrame:
    """The pairs of ``frame`` (project ids) in raw ids, sorted by (user, item).

    ``users``/``items``: the dataset's id tables (None: the raw ids are the project's).
    Keeps ``rating`` and, when present, ``timestamp``; drops every other column.
    """
    rows = frame.sort_values(["user", "item"], kind="stable").reset_index(drop=True)
    out = pd.DataFrame(
        {
            "user": to_raw(rows["user"].to_numpy(), raw_ids(users, "user", n_users)),
            "item": to_raw(rows["item"].to_numpy(), raw_ids(items, "item", n_items)),
        }
    )
    for column in EXPORT_COLUMNS[2:]:
        if column in rows.columns:
            out[column] = rows[column].to_numpy()
    return out


def export_parts(
    split: pd.DataFrame,
    parts: Mapping[str, str],
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    *,
    n_users: int,
    n_items: int,
) -> dict[str, pd.DataFrame]:
    """The parts of a labelled ``split`` (a ``part`` column) in raw ids, by export name.

    ``parts`` maps an export name (``train``, ``val``) to the split's part label;
    a part with no rows is an error (an export would silently hold nothing).
    """
    out = {}
    for name, label in parts.items():
        rows = split[split["part"] == label]
        if rows.empty:
            raise ValueError(f"the split has no {label!r} part to export as {name}")
        out[name] = raw_part(rows, users, items, n_users=n_users, n_items=n_items)
    return out
