"""KuaiRec: a fully exposed video-watching matrix (Gao et al., CIKM 2022); see docs/datasets.md.

The official release (``KuaiRec.zip``, "KuaiRec 2.0" on Zenodo) holds, in its
``data/`` folder, ``small_matrix.csv`` (1,411 users × 3,327 videos, 4,676,570
rows: 99.6% of all pairs, the rest blocked by the users), ``big_matrix.csv``
(7,176 × 10,729, 12,530,806 rows, an ordinary sparse log) and
``item_categories.csv`` (``video_id``, ``feat`` = a list of tag ids such as
``[27, 9]``). The interaction files are comma-separated with the header
``user_id,video_id,play_duration,video_duration,time,date,timestamp,watch_ratio``;
``time``, ``date`` and ``timestamp`` are empty on some rows.

The interaction value is ``watch_ratio`` (play / video duration); a pair is
positive when watch_ratio > 2 ([URE24]; the release's own suggestion), which is
the experiments' ``positive_threshold``. A pair logged more than once (the big
matrix has repeated views) keeps its largest watch ratio (positive if any view
was) and its earliest timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from debiaseval.data.registry import DatasetSource
from debiaseval.io.errors import DatasetError

__all__ = [
    "KUAIREC_ARCHIVE_BYTES",
    "KUAIREC_ARCHIVE_MD5",
    "KUAIREC_COLUMNS",
    "KUAIREC_POSITIVE_THRESHOLD",
    "KUAIREC_SOURCE",
    "KuaiRec",
    "fully_exposed_frame",
    "load_kuairec",
    "read_item_categories",
    "read_kuairec_matrix",
    "read_video_durations",
]

KUAIREC_COLUMNS = (
    "user_id",
    "video_id",
    "play_duration",
    "video_duration",
    "time",
    "date",
    "timestamp",
    "watch_ratio",
)
KUAIREC_POSITIVE_THRESHOLD = 2.0
"""watch_ratio > 2 is positive ([URE24]; the KuaiRec README's example "like" signal)."""

KUAIREC_ARCHIVE_MD5 = "261550d472c48eff4990fb13c0e5bcf7"
"""The MD5 Zenodo publishes for ``KuaiRec.zip`` of record 18164998 (no SHA-256 is published)."""
KUAIREC_ARCHIVE_BYTES = 432_000_000
"""Approximate size of ``KuaiRec.zip`` (about 432 MB as Zenodo lists it)."""

KUAIREC_SOURCE = DatasetSource(
    name="kuairec",
    url="https://zenodo.org/records/18164998/files/KuaiRec.zip",
    # The authors and Zenodo publish only an MD5 (KUAIREC_ARCHIVE_MD5), which the download
    # stage cannot check: no SHA-256 is recorded until one is computed on a verified copy.
    archive_sha256=None,
    archive_root="KuaiRec 2.0/data",
    files={"small_matrix.csv": (), "big_matrix.csv": (), "item_categories.csv": ()},
    manual_instructions=(
        "Download KuaiRec.zip from https://zenodo.org/records/18164998 (about 432 MB, MD5 "
        f"{KUAIREC_ARCHIVE_MD5}), unzip it and put small_matrix.csv, big_matrix.csv and "
        "item_categories.csv from its 'KuaiRec 2.0/data/' folder in <mirror>/kuairec/."
    ),
    licence="CC BY-SA 4.0 (https://github.com/chongminggao/KuaiRec).",
    citation=(
        "C. Gao, S. Li, W. Lei, J. Chen, B. Li, P. Jiang, X. He, J. Mao, T.-S. Chua. KuaiRec: a "
        "fully-observed dataset and insights for evaluating recommender systems. CIKM 2022."
    ),
)
"""The registry entry of KuaiRec (the form of :data:`debiaseval.data.registry.SOURCES`)."""

_NUMERIC = ("user_id", "video_id", "timestamp", "watch_ratio")


@dataclass
class KuaiRec:
    """KuaiRec's files with raw ids: ``small`` (fully exposed), ``big`` and ``items``.

    ``small``/``big``: columns ``user``, ``item`` (int64 raw ids), ``rating``
    (float64 watch ratio), ``timestamp`` (float64 Unix seconds, NaN where the
    file has none); one row per pair. ``items``: ``item``, ``video_duration`` (median over
    the small matrix's rows, milliseconds; [URE24] exposes videos inversely to it) and, with
    ``item_categories.csv``, ``first_category``, ``n_categories`` (int64).
    """

    small: pd.DataFrame
    big: pd.DataFrame | None = None
    items: pd.DataFrame | None = None


def _fail(path: Path, line: int, message: str) -> DatasetError:
    return DatasetError(f"{path}: line {line}: {message}")


def _check_header(path: Path, expected: tuple[str, ...]) -> None:
    if not path.is_file():
        raise DatasetError(f"{path}: file not found (expected a KuaiRec CSV file)")
    with open(path, encoding="utf-8-sig") as fh:
        header = fh.readline().strip()
    if tuple(header.split(",")) != expected:
        raise _fail(path, 1, f"expected the header {','.join(expected)}, got {header[:80]!r}")


def _numbers(raw: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Columns of ``raw`` (read as text) as float64; raise at the first non-number."""
    out = {}
    for col in raw.columns:
        text = raw[col]
        num = pd.to_numeric(text, errors="coerce")
        bad = num.isna().to_numpy() & text.notna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _fail(path, i + 2, f"expected a number in column {col}, got {text.iat[i]!r}")
        out[col] = num.to_numpy(np.float64)
    return pd.DataFrame(out)


def read_kuairec_matrix(path: str | Path) -> pd.DataFrame:
    """One KuaiRec interaction file (``small_matrix.csv`` or ``big_matrix.csv``).

    Checks the header, that ``user_id``/``video_id`` are integers ≥ 0 and
    ``watch_ratio`` a finite number ≥ 0 on every row (a one-line
    :class:`DatasetError` names the file and line otherwise); ``timestamp`` may
    be empty. Returns ``user``, ``item``, ``rating`` (watch ratio), ``timestamp``
    with one row per pair (duplicates: largest ratio, earliest timestamp),
    sorted by user, item.
    """
    path = Path(path)
    _check_header(path, KUAIREC_COLUMNS)
    try:
        raw = pd.read_csv(
            path,
            usecols=list(_NUMERIC),
            dtype=dict.fromkeys(_NUMERIC, np.float64),
            engine="c",
            encoding="utf-8-sig",
        )
    except ValueError:  # a non-numeric field: re-read as text to name the line
        raw = _numbers(
            pd.read_csv(path, usecols=list(_NUMERIC), dtype=str, encoding="utf-8-sig"), path
        )
    if raw.empty:
        raise _fail(path, 2, "no interactions after the header")
    for col, what in (("user_id", "a user id"), ("video_id", "a video id")):
        v = raw[col].to_numpy()
        bad = ~((v >= 0) & (v == np.floor(v)) & (v < 2**53))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _fail(path, i + 2, f"expected {what} (integer >= 0) in column {col}, got {v[i]}")
    ratio = raw["watch_ratio"].to_numpy()
    bad = ~(np.isfinite(ratio) & (ratio >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(path, i + 2, f"expected a watch_ratio >= 0, got {ratio[i]}")
    frame = pd.DataFrame(
        {
            "user": raw["user_id"].to_numpy().astype(np.int64),
            "item": raw["video_id"].to_numpy().astype(np.int64),
            "rating": ratio,
            "timestamp": raw["timestamp"].to_numpy(),
        }
    )
    out = frame.groupby(["user", "item"], sort=True).agg(
        rating=("rating", "max"), timestamp=("timestamp", "min")
    )
    return out.reset_index()


def read_item_categories(path: str | Path) -> pd.DataFrame:
    """``item_categories.csv``: ``item``, ``first_category`` and ``n_categories`` per video."""
    path = Path(path)
    _check_header(path, ("video_id", "feat"))
    raw = pd.read_csv(path, dtype=str, encoding="utf-8-sig", keep_default_na=False)
    ids = _numbers(raw[["video_id"]], path)["video_id"].to_numpy()
    tags = raw["feat"].str.strip().str.strip("[]").str.split(",")
    first = pd.to_numeric(tags.str[0].str.strip(), errors="coerce").to_numpy()
    bad = np.isnan(first) | np.isnan(ids)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(path, i + 2, f'expected video_id,"[tag, ...]", got {raw["feat"].iat[i]!r}')
    return pd.DataFrame(
        {
            "item": ids.astype(np.int64),
            "first_category": first.astype(np.int64),
            "n_categories": tags.str.len().to_numpy().astype(np.int64),
        }
    )


def read_video_durations(path: str | Path) -> pd.DataFrame:
    """``item`` and ``video_duration`` (float64 ms, the median over the file's rows of the
    video) of a KuaiRec interaction file; a duration that is not a number > 0 raises."""
    path = Path(path)
    _check_header(path, KUAIREC_COLUMNS)
    cols = ["video_id", "video_duration"]
    raw = _numbers(pd.read_csv(path, usecols=cols, dtype=str, encoding="utf-8-sig"), path)
    duration = raw["video_duration"].to_numpy()
    bad = ~(np.isfinite(duration) & (duration > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(path, i + 2, f"expected a video_duration > 0, got {duration[i]}")
    out = raw.groupby("video_id", sort=True)["video_duration"].median().reset_index()
    return pd.DataFrame(
        {
            "item": out["video_id"].to_numpy().astype(np.int64),
            "video_duration": out["video_duration"].to_numpy(np.float64),
        }
    )


def load_kuairec(folder: str | Path, *, big: bool = False) -> KuaiRec:
    """KuaiRec from a folder holding the release's ``data/`` files.

    ``small_matrix.csv`` is required (its pairs and its videos' durations);
    ``big_matrix.csv`` (large) is read only when ``big``; ``item_categories.csv`` when
    present.
    """
    folder = Path(folder)
    cats = folder / "item_categories.csv"
    items = read_video_durations(folder / "small_matrix.csv")
    if cats.is_file():
        items = items.merge(read_item_categories(cats), on="item", how="left")
    return KuaiRec(
        small=read_kuairec_matrix(folder / "small_matrix.csv"),
        big=read_kuairec_matrix(folder / "big_matrix.csv") if big else None,
        items=items,
    )


def fully_exposed_frame(
    data: KuaiRec,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The small matrix with contiguous ids: ``(interactions, users, items)``.

    ``interactions``: ``user``, ``item`` (int32, in raw-id order), ``rating``
    (float32 watch ratio), ``part`` = ``"full"``; pairs missing from the small
    matrix (blocked videos) are absent. ``users``/``items`` map the new ids to
    ``raw_user``/``raw_item`` (``items`` with the categories when known).
    """
    small = data.small
    user_ids = np.unique(small["user"].to_numpy())
    item_ids = np.unique(small["item"].to_numpy())
    interactions = pd.DataFrame(
        {
            "user": np.searchsorted(user_ids, small["user"].to_numpy()).astype(np.int32),
            "item": np.searchsorted(item_ids, small["item"].to_numpy()).astype(np.int32),
            "rating": small["rating"].to_numpy(np.float32),
            "part": "full",
        }
    )
    users = pd.DataFrame(
        {"user": np.arange(user_ids.size, dtype=np.int32), "raw_user": user_ids.astype(np.int64)}
    )
    items = pd.DataFrame(
        {"item": np.arange(item_ids.size, dtype=np.int32), "raw_item": item_ids.astype(np.int64)}
    )
    if data.items is not None:
        feats = data.items.rename(columns={"item": "raw_item"}).drop_duplicates("raw_item")
        items = items.merge(feats, on="raw_item", how="left", validate="one_to_one")
    return interactions, users, items
