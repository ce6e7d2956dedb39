"""The project's integer ids and a dataset's raw ids, both ways.

Preprocessing numbers a dataset's users and items 0, 1, ... in raw-id order and
keeps the mapping in ``results/<study>/data/<dataset>/users.parquet`` and ``items.parquet``
(columns ``user``/``raw_user`` and ``item``/``raw_item``; raw ids are int64, or
strings for a log whose ids are not integers). Exported splits carry raw ids
(:func:`to_raw`); lists made elsewhere come back in raw ids (:func:`to_internal`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["format_ids", "raw_ids", "to_internal", "to_raw"]

_INTEGER = r"\s*[+-]?\d{1,18}\s*"  # int64 holds any 18-digit integer


def raw_ids(table: pd.DataFrame | None, kind: str, n: int) -> np.ndarray:
    """The raw ids of ``kind`` ("user" or "item") indexed by the project's id.

    ``table`` is a users or items table (``kind`` and ``raw_<kind>`` columns);
    without one (in-memory frames), the raw ids are the project's: ``0 .. n-1``.
    """
    if table is None:
        return np.arange(n, dtype=np.int64)
    raw_column = f"raw_{kind}"
    missing = [c for c in (kind, raw_column) if c not in table.columns]
    if missing:
        raise ValueError(f"the {kind}s table lacks column(s) {missing}")
    ids = table[kind].to_numpy(np.int64)
    if len(ids) != n or not np.array_equal(np.sort(ids), np.arange(n)):
        raise ValueError(f"the {kind}s table must number its {n:,} {kind}s 0 .. {n - 1}")
    values = table[raw_column].to_numpy()
    out = np.empty(n, dtype=values.dtype)
    out[ids] = values
    return out


def to_raw(ids: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """The raw ids of the project's ids ``ids`` (``raw`` from :func:`raw_ids`)."""
    return raw[np.asarray(ids, dtype=np.int64)]


def to_internal(values: pd.Series | np.ndarray, raw: np.ndarray) -> np.ndarray:
    """The project's ids of the raw ids ``values``: int64, -1 where a value is unknown.

    Values are compared by type of the dataset's raw ids, so a file read as text
    matches integer raw ids: with integer raw ids, a value counts when it is an
    integer (``7``, ``"7"``, ``" 7"``, ``7.0``); with string raw ids, its text must
    equal one (an integer ``7`` matches the raw id ``"7"``). Hash lookups, no sort,
    so mixed types never raise; each distinct value is converted once.
    """
    codes, distinct = pd.factorize(pd.Series(values).reset_index(drop=True))
    found = np.full(len(distinct) + 1, -1, dtype=np.int64)  # the last slot: missing values
    if len(distinct) and len(raw):
        distinct = pd.Series(distinct)
        if np.issubdtype(raw.dtype, np.integer):
            keys, known = _integer_keys(distinct)
            found[:-1][known] = pd.Index(raw.astype(np.int64)).get_indexer(keys)
        else:
            index = pd.Index(pd.Series(raw, dtype=object).astype(str))  # no fixed width
            if index.has_duplicates:
                raise ValueError("raw ids must be distinct")
            found[:-1] = index.get_indexer(distinct.astype(str))
    return found[codes]


def _integer_keys(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The integer values of ``series`` (int64, exact for any width) and where they are."""
    if pd.api.types.is_integer_dtype(series.dtype):
        return series.to_numpy(np.int64), np.ones(len(series), dtype=bool)
    values = pd.to_numeric(series, errors="coerce").to_numpy(np.float64)
    # floats hold integers exactly up to 2**53; longer ones count only as integer text
    known = np.isfinite(values) & (np.floor(values) == values) & (np.abs(values) < 2.0**53)
    keys = np.zeros(len(series), dtype=np.int64)
    keys[known] = values[known].astype(np.int64)
    if not pd.api.types.is_float_dtype(series.dtype):
        text = series.astype(str)
        exact = text.str.fullmatch(_INTEGER).to_numpy(dtype=bool)
        if exact.any():
            keys[exact] = text[exact].str.strip().astype(np.int64).to_numpy()
        known |= exact
    return keys[known], known


def format_ids(values: np.ndarray | pd.Series, limit: int = 3) -> str:
    """At most ``limit`` distinct ids for a message: ``u7, 'a b', 12`` (quoted when they hold
    spaces or are empty), in order of appearance."""
    shown = []
    for value in pd.unique(pd.Series(values))[:limit]:
        text = str(value)
        shown.append(repr(text) if not text or text != text.strip() or " " in text else text)
    return ", ".join(shown)
