"""A user's own rating log as a dataset, declared by configuration alone (docs/own-data.md).

``sources.<name>`` names a ``ratings`` file (the logged, MNAR ratings) and optionally a ``mar``
file (ratings of randomly sampled pairs), each CSV or Parquet by extension, and ``columns``,
the names of the user, item, rating and optional timestamp and propensity columns. Raw ids
of any type are kept as given: a column whose every id (in both files) is an integer is read
as int64, any other as strings. The result is a :class:`RawDataset`, preprocessed like the
built-in datasets (:func:`debiaseval.data.preprocess.build_interactions`: with a MAR part,
only users and items present in both parts are kept [SAC20], then ids are re-indexed).

Every malformed value fails with a one-line :class:`DatasetError` naming the file, the line
(CSV, the header being line 1) or row (Parquet), the column and what was expected.
"""

from __future__ import annotations

import csv
import itertools
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from debiaseval.data.catalog import DEFAULT_POSITIVE_THRESHOLD
from debiaseval.data.loaders import _show
from debiaseval.data.raw import RawDataset
from debiaseval.io.errors import DatasetError

__all__ = [
    "DELIMITERS",
    "LOAD_KEYS",
    "MAX_ID_LENGTH",
    "file_format",
    "load_user_log",
    "log_files",
    "missing_file",
    "read_log",
    "sniff_delimiter",
]

TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")
DELIMITERS = (",", "\t", ";", "|")
"""The delimiters a CSV header line is sniffed for (``sep`` null)."""
LOAD_KEYS = ("ratings", "mar", "columns", "sep", "rating_scale", "duplicates")
"""The keys of ``sources.<name>`` that shape the preprocessed data (the others do not)."""
MAX_ID_LENGTH = 1024
"""The longest user or item id a log may hold, in characters (checked when it is read)."""
FLOAT32_MAX = float(np.finfo(np.float32).max)
"""The largest rating magnitude float32 (the stored type) holds; beyond it a rating becomes inf."""

_INTEGER = r"0|-?[1-9][0-9]{0,17}"  # written as int64 would print it: no sign, no leading zero


def file_format(path: str | Path) -> str | None:
    """``"csv"`` or ``"parquet"`` by the file's extension; ``None`` for any other."""
    suffix = Path(path).suffix.lower()
    if suffix in TEXT_SUFFIXES:
        return "csv"
    if suffix in PARQUET_SUFFIXES:
        return "parquet"
    return None


def log_files(spec: Mapping[str, Any]) -> dict[str, str]:
    """The files of a user dataset: ``ratings`` and, if given, ``mar``."""
    return {key: spec[key] for key in ("ratings", "mar") if spec.get(key)}


def missing_file(name: str, spec: Mapping[str, Any]) -> str | None:
    """One line naming the first file of user dataset ``name`` that does not exist, or None."""
    for key, path in log_files(spec).items():
        if Path(path).is_dir():
            return (
                f"config error at 'sources.{name}.{key}': {path} is a directory; expected the "
                f"{key} file itself (a .csv, .tsv, .txt or .parquet file)"
            )
        if not Path(path).is_file():
            return (
                f"config error at 'sources.{name}.{key}': file not found: {path} (relative "
                f"paths are taken from the working directory, {Path.cwd()})"
            )
    return None


def sniff_delimiter(header: str, path: Path) -> str:
    """The one of :data:`DELIMITERS` found most often in the header line (no tie allowed)."""
    counts = {sep: header.count(sep) for sep in DELIMITERS}
    best = max(counts.values())
    found = [sep for sep, n in counts.items() if n == best]
    if best == 0 or len(found) > 1:
        raise DatasetError(
            f"{path}: line 1: cannot tell the delimiter of the header {_show(header)} "
            f"(looked for {', '.join(map(repr, DELIMITERS))}); set the dataset's sep"
        )
    return found[0]


class _Table:
    """A file's wanted columns (as read) and the record number of every row: its 1-based row
    (Parquet), or its 0-based record after the header (CSV), whose line is found on demand."""

    def __init__(
        self, path: Path, frame: pd.DataFrame, numbers: np.ndarray, unit: str, sep: str = ""
    ) -> None:
        self.path, self.frame, self.numbers, self.unit = path, frame, numbers, unit
        self.sep = sep

    def where(self, position: int) -> int:
        """The row (Parquet) or first line (CSV) of record ``position`` of the frame."""
        number = int(self.numbers[position])
        return number if self.unit == "row" else _csv_line(self.path, self.sep, number)

    def fail(self, position: int, message: str) -> DatasetError:
        return DatasetError(f"{self.path}: {self.unit} {self.where(position)}: {message}")


def _csv_line(path: Path, sep: str, record: int) -> int:
    """The line on which data record ``record`` (0-based, after the header) of a CSV file starts.

    A quoted field may hold line breaks, so records and lines differ after one; read only for
    an error message, up to the record named.
    """
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        reader = csv.reader(fh, delimiter=sep[0] if sep else ",")
        next(reader, None)  # the header
        end = reader.line_num
        for _ in itertools.islice(reader, record):
            end = reader.line_num
        return end + 1


def _missing_columns(
    path: Path,
    present: Sequence[str],
    wanted: Mapping[str, str],
    where: str,
    optional: Sequence[str] = (),
) -> dict[str, str]:
    """``wanted`` without the ``optional`` keys whose column the file lacks; any other missing
    column is a one-line :class:`DatasetError` naming the config key."""
    found = {key: column for key, column in wanted.items() if column in present}
    for key, column in wanted.items():
        if column not in present and key not in optional:
            raise DatasetError(
                f"{path}: missing column {column!r} ({where}.columns.{key}); the file has "
                f"{', '.join(map(repr, present)) or 'no columns'}"
            )
    return found


def _read_csv(
    path: Path,
    wanted: Mapping[str, str],
    sep: str | None,
    where: str,
    optional: Sequence[str] = (),
) -> _Table:
    with open(path, encoding="utf-8-sig", errors="replace") as fh:
        header = fh.readline().rstrip("\r\n")
    if not header.strip():
        raise DatasetError(f"{path}: line 1: empty, expected a header row naming the columns")
    sep = sep or sniff_delimiter(header, path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path,
                sep=sep if len(sep) == 1 else re.escape(sep),  # a longer one is read as a regex
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                skip_blank_lines=False,
                index_col=False,
                encoding="utf-8-sig",
                engine="c" if len(sep) == 1 else "python",
            )
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: expected UTF-8 text ({exc.reason})") from None
    except (pd.errors.ParserError, pd.errors.ParserWarning) as exc:
        reason = " ".join(str(exc).split())
        raise DatasetError(f"{path}: {reason}; expected one field per header column") from None
    frame.columns = [str(name).strip() for name in frame.columns]
    wanted = _missing_columns(path, list(frame.columns), wanted, where, optional)
    frame = frame[list(dict.fromkeys(wanted.values()))]
    records = np.arange(len(frame), dtype=np.int64)  # lines are found from them on demand
    blank = (frame == "").all(axis=1).to_numpy()
    return _Table(path, frame[~blank].reset_index(drop=True), records[~blank], "line", sep)


def _read_parquet(
    path: Path, wanted: Mapping[str, str], where: str, optional: Sequence[str] = ()
) -> _Table:
    try:
        names = pq.read_schema(path).names
        wanted = _missing_columns(path, names, wanted, where, optional)
        frame = pq.read_table(path, columns=list(dict.fromkeys(wanted.values()))).to_pandas()
    except (pa.ArrowInvalid, OSError) as exc:
        reason = " ".join(str(exc).split())
        raise DatasetError(f"{path}: not a readable Parquet file ({reason})") from None
    return _Table(path, frame, np.arange(len(frame), dtype=np.int64) + 1, "row")


def _value(value: object) -> str:
    """A bad value as a message shows it: NaN and ±inf as such, not ``np.float64(nan)``."""
    if isinstance(value, float | np.floating) and not np.isfinite(value):
        return "NaN" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or value is pd.NA:
        return "none"
    return _show(value)


def _text(values: pd.Series) -> pd.Series:
    """Values as stripped strings (non-strings converted, missing values empty)."""
    out = values.astype(object).where(values.notna(), "")
    return out.astype(str).str.strip()


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _ids(tables: Sequence[_Table], column: str, key: str) -> list[np.ndarray]:
    """The ``key`` ids of every table: int64 if every id (of all tables) is an integer, else
    strings (an object array); an id longer than :data:`MAX_ID_LENGTH` characters fails."""
    series = [t.frame[column] for t in tables]
    if all(pd.api.types.is_integer_dtype(s.dtype) for s in series):
        return [s.to_numpy(np.int64) for s in series]
    texts = []
    for table, values in zip(tables, series, strict=True):
        if pd.api.types.is_float_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
            raise DatasetError(
                f"{table.path}: column {column!r} holds {values.dtype} values; expected {key} "
                "ids as integers or strings"
            )
        text = _text(values)
        empty = (text == "").to_numpy()
        if empty.any():
            raise table.fail(_first(empty), f"expected a {key} id in column {column!r}, got none")
        texts.append(text)
    for table, text in zip(tables, texts, strict=True):
        long = (text.str.len() > MAX_ID_LENGTH).to_numpy()
        if long.any():
            i = _first(long)
            raise table.fail(
                i,
                f"a {key} id of {len(text.iat[i]):,} characters in column {column!r}; expected "
                f"at most {MAX_ID_LENGTH:,} (an id names a {key}: check columns and sep)",
            )
    if all(t.str.fullmatch(_INTEGER).all() for t in texts):
        return [t.astype(np.int64).to_numpy() for t in texts]
    # Python strings, each stored once per row: a fixed-width str_ array would cost the
    # longest id × rows × 4 bytes
    return [t.to_numpy(dtype=object) for t in texts]


def _numbers(table: _Table, column: str, what: str) -> np.ndarray:
    """A numeric column as float64; the first missing, non-numeric or infinite value fails."""
    values = table.frame[column]
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        numbers = values.to_numpy(np.float64, na_value=np.nan)
    else:
        numbers = pd.to_numeric(_text(values).replace("", "nan"), errors="coerce").to_numpy(
            np.float64, na_value=np.nan
        )
    bad = ~np.isfinite(numbers)
    if bad.any():
        i = _first(bad)
        raise table.fail(i, f"expected {what} in column {column!r}, got {_value(values.iloc[i])}")
    return numbers


def _timestamps(table: _Table, column: str) -> np.ndarray:
    """Integer timestamps as given, or ISO 8601 dates/times as Unix seconds (UTC if unzoned)."""
    values = table.frame[column]
    what = f"an integer timestamp or an ISO 8601 date in column {column!r}"
    if pd.api.types.is_integer_dtype(values.dtype):
        return values.to_numpy(np.int64)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        stamps = values.dt.tz_localize("UTC") if values.dt.tz is None else values
    else:
        text = _text(values)
        integer = text.str.fullmatch(_INTEGER).to_numpy()
        if integer.all():
            return text.astype(np.int64).to_numpy()
        stamps = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
        if integer.any():
            i = _first(integer)
            raise table.fail(
                i,
                f"column {column!r} mixes integer timestamps and dates (line-by-line kinds "
                f"must agree), got {_show(values.iloc[i])} among dates",
            )
    bad = stamps.isna().to_numpy()
    if bad.any():
        i = _first(bad)
        raise table.fail(i, f"expected {what}, got {_show(values.iloc[i])}")
    return stamps.dt.as_unit("s").astype(np.int64).to_numpy()


def _deduplicate(frame: pd.DataFrame, table: _Table, keep: str, hint: str = "") -> pd.DataFrame:
    """Each (user, item) once: the latest rating by timestamp (``keep`` "last"), or an error
    naming both lines (``keep`` "error"; ``hint``, in parentheses, says what to do)."""
    if keep == "last":
        if "timestamp" not in frame.columns:
            raise ValueError("duplicates: last keeps the latest rating and needs a timestamp")
        order = np.lexsort((table.numbers, frame["timestamp"].to_numpy()))
        return frame.iloc[order].drop_duplicates(["user", "item"], keep="last").sort_index()
    dup = frame.duplicated(["user", "item"]).to_numpy()
    if dup.any():
        i = _first(dup)
        user, item = frame["user"].iat[i], frame["item"].iat[i]
        same = (frame["user"] == user).to_numpy() & (frame["item"] == item).to_numpy()
        first = table.where(_first(same))
        raise table.fail(
            i,
            f"duplicate (user, item) pair ({user!r}, {item!r}) first seen on {table.unit} {first}; "
            f"expected each pair once{f' ({hint})' if hint else ''}",
        )
    return frame


def read_log(
    path: str | Path,
    columns: Mapping[str, str],
    *,
    sep: str | None = None,
    what: str = "ratings",
    where: str = "sources.<name>",
    optional: Sequence[str] = (),
) -> _Table:
    """The columns ``columns`` (key -> column name) of a CSV or Parquet file, as read.

    ``where`` is the config key of the dataset, for the messages. A column of the keys in
    ``optional`` may be absent from the file (it is then not read); any other is required.

    CSV: UTF-8 (a byte-order mark is dropped) with a header row naming the columns, fields
    separated by ``sep`` (any string), else by the delimiter sniffed from the header line
    (:func:`sniff_delimiter`), double-quoted where they hold it; blank lines are skipped and
    names and values stripped of surrounding spaces.
    """
    path = Path(path)
    kind = file_format(path)
    if kind is None:
        raise DatasetError(
            f"{path}: expected a .csv, .tsv, .txt or .parquet file of {what} (by extension)"
        )
    if path.is_dir():
        raise DatasetError(f"{path}: is a directory (expected the {what} file)")
    if not path.is_file():
        raise DatasetError(f"{path}: file not found (expected the {what} file)")
    wanted = {key: name for key, name in columns.items() if name}
    if kind == "csv":
        table = _read_csv(path, wanted, sep, where, optional)
    else:
        table = _read_parquet(path, wanted, where, optional)
    if table.frame.empty:
        raise DatasetError(f"{path}: no ratings (expected one {what} record per row)")
    return table


def _part(
    table: _Table,
    users: np.ndarray,
    items: np.ndarray,
    spec: Mapping[str, Any],
    *,
    propensity: bool,
) -> pd.DataFrame:
    columns = spec["columns"]
    rating = _numbers(table, columns["rating"], "a numeric rating")
    where = f"in column {columns['rating']!r}"
    # stored as float32: beyond its range a rating would become inf
    _refuse(
        table,
        rating,
        np.abs(rating) > FLOAT32_MAX,
        f"a rating of at most {FLOAT32_MAX:.4g} in absolute value (ratings are stored as "
        f"float32) {where}",
    )
    # positivity (rating > threshold) is decided on the stored float32: a cast may not flip it
    threshold = spec.get("positive_threshold")
    threshold = DEFAULT_POSITIVE_THRESHOLD if threshold is None else float(threshold)
    stored = rating.astype(np.float32).astype(np.float64)
    flips = (rating > threshold) != (stored > threshold)
    _refuse(
        table,
        rating,
        flips,
        f"a rating that float32, the type ratings are stored in, keeps "
        f"on its side of the positive_threshold {threshold:g} {where} (round it)",
    )
    if spec.get("rating_scale") is not None:
        lo, hi = spec["rating_scale"]
        _refuse(
            table,
            rating,
            (rating < lo) | (rating > hi),
            f"a rating in [{lo:g}, {hi:g}] (rating_scale) {where}",
        )
    frame = pd.DataFrame({"user": users, "item": items, "rating": rating})
    if columns.get("timestamp") in table.frame.columns:  # a MAR file may leave it out
        frame["timestamp"] = _timestamps(table, columns["timestamp"])
    if propensity and columns.get("propensity"):
        p = _numbers(table, columns["propensity"], "a propensity in (0, 1]")
        _refuse(
            table,
            p,
            (p <= 0) | (p > 1),
            f"a propensity in (0, 1] in column {columns['propensity']!r}",
        )
        frame["propensity"] = p
    keep, hint = spec.get("duplicates") or "error", "or set the dataset's duplicates: last"
    if keep == "last" and "timestamp" not in frame.columns:  # a MAR file without timestamps
        keep = "error"
        column = columns["timestamp"]
        hint = f"duplicates: last picks by timestamp, and the file has no column {column!r}"
    return _deduplicate(frame, table, keep, hint)


def _refuse(table: _Table, values: np.ndarray, bad: np.ndarray, expected: str) -> None:
    """Fail at the first row of ``bad``: "expected <expected>, got <its value>"."""
    if bad.any():
        i = _first(bad)
        raise table.fail(i, f"expected {expected}, got {values[i]:.10g}")


def load_user_log(name: str, spec: Mapping[str, Any]) -> RawDataset:
    """The :class:`RawDataset` of user dataset ``name`` from its ``sources.<name>`` block.

    Relative paths are taken from the current working directory (the workflow's). The MNAR
    part is the ``ratings`` file, the MAR part the ``mar`` file (optional); both need the
    user, item and rating columns, and the ratings file the timestamp column when one is
    mapped; the
    propensity column (the MNAR pairs' P(O = 1), for E4's ``provided`` model) is read from the
    ratings file only. The MAR file may leave the timestamp column out (a random-exposure
    sample rarely has one, and no experiment uses the MAR part's times): its ratings then have
    none. A pair twice in one file is an error, unless ``duplicates: last`` keeps its rating
    with the latest timestamp (the later line on a tie), which needs the file's timestamps.
    """
    columns = spec["columns"]
    wanted = {key: columns.get(key) for key in ("user", "item", "rating", "timestamp")}
    where, sep = f"sources.{name}", spec.get("sep")
    tables = [
        read_log(
            spec["ratings"],
            {**wanted, "propensity": columns.get("propensity")},
            sep=sep,
            what="ratings",
            where=where,
        )
    ]
    if spec.get("mar"):
        tables.append(
            read_log(
                spec["mar"],
                wanted,
                sep=sep,
                what="MAR ratings",
                where=where,
                optional=("timestamp",),
            )
        )
    users = _ids(tables, columns["user"], "user")
    items = _ids(tables, columns["item"], "item")
    parts = [
        _part(table, u, i, spec, propensity=position == 0)
        for position, (table, u, i) in enumerate(zip(tables, users, items, strict=True))
    ]
    mnar = parts[0]
    propensities = None
    if "propensity" in mnar.columns:
        propensities = mnar[["user", "item", "propensity"]]
        mnar = mnar.drop(columns="propensity")
    return RawDataset(
        mnar=mnar.reset_index(drop=True),
        mar=parts[1].reset_index(drop=True) if len(parts) > 1 else None,
        propensities=propensities,
        name=name,
    )
