"""Jester5k as the R package recommenderlab ships it: its R data file read into ratings
(docs/datasets.md, "Jester5k").

Jester5k is a sample of 5,000 users of Jester dataset 1 (Goldberg, Roeder, Gupta & Perkins,
*Eigentaste*, Information Retrieval 4(2), 2001): ratings of 100 jokes on a continuous scale
[-10, 10] in steps of 0.01. recommenderlab (Hahsler) stores it in ``data/Jester5k.rda``, an
xz-compressed R data file holding the S4 ``realRatingMatrix`` ``Jester5k``, whose slot ``data``
is a ``dgCMatrix`` of the Matrix package (compressed sparse columns: slots ``i``, ``p``, ``x``,
``Dim``, ``Dimnames``; rows are users ``u<n>``, columns jokes ``j<n>``), and ``JesterJokes``,
the jokes' texts. A sparse matrix cannot hold an explicit 0, so recommenderlab stores a rating
of exactly 0.00 as R's ``.Machine$double.xmin`` (2.2250738585072014e-308): every
``|x| < 1e-300`` is read back as 0.

The file is read with the PyPI package ``rdata``, the optional extra ``jester``
(``pip install -e '.[jester]'``); without it, or with a malformed file, the error is one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.data.raw import RawDataset
from debiaseval.data.semireal import FullBlock, full_block
from debiaseval.io.errors import DatasetError

__all__ = [
    "JESTER5K_FILE",
    "JESTER_SCALE",
    "R_DOUBLE_XMIN",
    "ZERO_BELOW",
    "SparseRatings",
    "dgcmatrix_constructor",
    "jester5k_block",
    "load_jester5k",
    "read_jester5k",
]

JESTER5K_FILE = "Jester5k.rda"
"""The dataset's one file (the registry's ``jester5k`` entry)."""

JESTER_SCALE = (-10.0, 10.0)
"""The rating scale of Jester's jokes (Goldberg et al. 2001)."""

R_DOUBLE_XMIN = 2.2250738585072014e-308
"""R's ``.Machine$double.xmin``, which recommenderlab stores for a rating of exactly 0.00."""

ZERO_BELOW = 1e-300
"""A stored value whose magnitude is below this is a rating of 0.00."""

EXTRA_HINT = "pip install -e '.[jester]'"
_USER_ID = re.compile(r"u([0-9]+)")
_JOKE_ID = re.compile(r"j([0-9]+)")


@dataclass(frozen=True)
class SparseRatings:
    """A ``dgCMatrix`` as read: ``matrix`` (users × items, CSC, float64 as stored) and the
    row and column names (``Dimnames``; ``None`` where R stores none)."""

    matrix: sp.csc_matrix
    row_names: np.ndarray | None
    col_names: np.ndarray | None


def _names(value: Any) -> np.ndarray | None:
    return None if value is None else np.asarray(value, dtype=str)


def dgcmatrix_constructor(obj: Any, attrs: dict[str, Any]) -> SparseRatings:
    """The ``rdata`` constructor of the Matrix package's ``dgCMatrix`` (its slots arrive as
    ``attrs``): a :class:`SparseRatings`. Raises ``ValueError`` when the slots do not make a
    compressed-sparse-column matrix (read as a malformed file)."""
    try:
        n_rows, n_cols = (int(v) for v in np.asarray(attrs["Dim"]).ravel())
        rows = np.asarray(attrs["i"], dtype=np.int64)
        starts = np.asarray(attrs["p"], dtype=np.int64)
        values = np.asarray(attrs["x"], dtype=np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"a dgCMatrix without its slots Dim, i, p, x ({exc})") from None
    if starts.shape != (n_cols + 1,) or starts[0] != 0 or np.any(np.diff(starts) < 0):
        raise ValueError(f"slot p is not {n_cols + 1} non-decreasing column starts from 0")
    if rows.shape != values.shape or starts[-1] != rows.size:
        raise ValueError("slots i and x do not have the length slot p ends at")
    if rows.size and (rows.min() < 0 or rows.max() >= n_rows):
        raise ValueError(f"slot i has a row index outside 0..{n_rows - 1}")
    within = np.ones(rows.size, dtype=bool)
    within[starts[1:-1][starts[1:-1] < rows.size]] = False  # a column's first entry
    if np.any(np.diff(rows)[within[1:]] <= 0):
        raise ValueError("slot i is not strictly increasing within a column (a repeated cell)")
    names = attrs.get("Dimnames") or [None, None]
    matrix = sp.csc_matrix((values, rows, starts), shape=(n_rows, n_cols))
    return SparseRatings(matrix, _names(names[0]), _names(names[1]))


def _real_rating_matrix(obj: Any, attrs: dict[str, Any]) -> Any:
    """recommenderlab's ``realRatingMatrix``: its slot ``data`` (already converted)."""
    return attrs.get("data")


def _parse_ids(names: np.ndarray | None, pattern: re.Pattern[str], what: str, path: Path):
    """Raw ids from R names such as ``u7452`` / ``j1``: int64, unique."""
    if names is None:
        raise DatasetError(
            f"{path}: the rating matrix has no {what} names; expected the file recommenderlab ships"
        )
    found = pd.Series(names).str.fullmatch(pattern.pattern)
    if not found.all():
        bad = str(names[int(np.flatnonzero(~found.to_numpy())[0])])
        raise DatasetError(
            f"{path}: {what} name {bad!r} is not of the form "
            f"{pattern.pattern.replace('([0-9]+)', '<n>')}"
        )
    ids = pd.Series(names).str.slice(1).astype(np.int64).to_numpy()
    if len(np.unique(ids)) != len(ids):
        raise DatasetError(f"{path}: a {what} name occurs twice; expected each once")
    return ids


def read_jester5k(path: str | Path) -> tuple[SparseRatings, np.ndarray | None]:
    """The rating matrix ``Jester5k`` of recommenderlab's R data file ``path``, as stored
    (before the 0.00 quirk is undone), and the joke texts ``JesterJokes`` (None if absent).

    Raises a one-line :class:`DatasetError` naming the file when ``rdata`` is not installed,
    when the file is not a readable R data file, or when ``Jester5k`` is not a
    ``realRatingMatrix`` over a ``dgCMatrix``.
    """
    path = Path(path)
    try:
        import rdata
    except ImportError:
        raise DatasetError(
            f"{path}: reading Jester5k's R data file needs the rdata package: {EXTRA_HINT}"
        ) from None
    if not path.is_file():
        raise DatasetError(f"{path}: file not found (expected recommenderlab's Jester5k.rda)")
    constructors = {
        **rdata.conversion.DEFAULT_CLASS_MAP,
        "dgCMatrix": dgcmatrix_constructor,
        "realRatingMatrix": _real_rating_matrix,
    }
    try:
        objects = rdata.read_rda(path, constructor_dict=constructors)
    except Exception as exc:  # a third-party parser of untrusted bytes: any failure is the file's
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise DatasetError(
            f"{path}: not a readable R data file ({reason}); replace it with recommenderlab's "
            "Jester5k.rda"
        ) from None
    ratings = objects.get("Jester5k") if isinstance(objects, dict) else None
    if not isinstance(ratings, SparseRatings):
        raise DatasetError(
            f"{path}: expected an object Jester5k of class realRatingMatrix holding a "
            "dgCMatrix, as recommenderlab ships it"
        )
    jokes = objects.get("JesterJokes")
    return ratings, None if jokes is None else np.asarray(jokes, dtype=str)


def load_jester5k(folder: str | Path) -> RawDataset:
    """Jester5k (Goldberg et al. 2001, as recommenderlab ships it): every rating as the MNAR
    part, raw ids the numbers of the names ``u<n>`` / ``j<n>``.

    Ratings of exactly 0.00 (stored as ``.Machine$double.xmin``, :data:`ZERO_BELOW`) are read
    back as 0.0; every rating must lie in :data:`JESTER_SCALE`. ``users`` marks with
    ``full_block`` the users who rated every joke (the fully observed block: 1,473 users of the
    canonical file); ``items`` holds each joke's ``text`` when the file has ``JesterJokes``.
    """
    path = Path(folder) / JESTER5K_FILE
    stored, jokes = read_jester5k(path)
    matrix = stored.matrix.tocoo()
    users = _parse_ids(stored.row_names, _USER_ID, "user", path)
    items = _parse_ids(stored.col_names, _JOKE_ID, "joke", path)
    rating = np.where(np.abs(matrix.data) < ZERO_BELOW, 0.0, matrix.data)
    low, high = JESTER_SCALE
    outside = ~np.isfinite(rating) | (rating < low) | (rating > high)
    if outside.any():
        at = int(np.flatnonzero(outside)[0])
        raise DatasetError(
            f"{path}: rating {float(rating[at])!r} of user u{users[matrix.row[at]]}, joke "
            f"j{items[matrix.col[at]]} is outside [{low:g}, {high:g}]"
        )
    counts = np.bincount(matrix.row, minlength=matrix.shape[0])
    item_frame = pd.DataFrame({"item": items})
    if jokes is not None and len(jokes) == len(items):
        item_frame["text"] = jokes
    return RawDataset(
        mnar=pd.DataFrame(
            {
                "user": users[matrix.row],
                "item": items[matrix.col],
                "rating": rating.astype(np.float64),
            }
        ),
        users=pd.DataFrame({"user": users, "full_block": counts == matrix.shape[1]}),
        items=item_frame,
        name="jester5k",
    )


def jester5k_block(folder: str | Path) -> FullBlock:
    """Jester5k's fully observed block: the users who rated every joke (1,473 × 100 in the
    canonical file; :func:`~debiaseval.data.semireal.full_block`)."""
    return full_block(load_jester5k(folder), scale=JESTER_SCALE)
