"""Parse the real datasets' canonical files into :class:`RawDataset` frames (docs/datasets.md).

Raw ids are kept as the files give them: Coat uses the 0-based row/column index of its
dense matrices [ICML16]; Yahoo! R3 and MovieLens use their 1-based ids; Jester5k the numbers of
its R names ``u<n>``/``j<n>`` (:mod:`debiaseval.data.jester`). Parsing is
vectorised; any malformed line raises a one-line :class:`DatasetError` naming the file,
the 1-based line number and what was expected. The rating files are required; side files
(features, propensities, metadata) are read when present.
"""

from __future__ import annotations

import ast
import csv
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from debiaseval.data.raw import RawDataset
from debiaseval.io.errors import DatasetError

__all__ = [
    "LOADERS",
    "RawDataset",
    "load_coat",
    "load_librarything",
    "load_ml_1m",
    "load_ml_100k",
    "load_raw",
    "load_yahoo_r3",
]

RATINGS_1_5 = np.arange(1.0, 6.0)
COAT_SHAPE = (290, 300)
YAHOO_PREFIX = "ydata-ymusic-rating-study-v1_0"
ML100K_GENRES = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)


# --------------------------------------------------------------------------- low level


def _fail(path: Path, line: int, message: str) -> DatasetError:
    return DatasetError(
        f"{path}: line {line}: {message}; replace the file with the dataset's canonical one"
    )


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_text(path: Path, what: str, *, encoding: str = "utf-8") -> str:
    """The decoded file with LF line ends and trailing blank lines dropped; never empty."""
    if not path.is_file():
        raise DatasetError(f"{path}: file not found (expected {what})")
    data = path.read_bytes()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        msg = f"expected {encoding} text, got byte {data[exc.start]:#x}"
        raise _fail(path, line, msg) from None
    text = text.replace("\r\n", "\n").rstrip()
    if not text:
        raise _fail(path, 1, f"empty file, expected {what}")
    return text


def _read_lines(path: Path, what: str, *, encoding: str = "utf-8") -> pd.Series:
    """The file's lines (trailing blank lines dropped) as a string Series."""
    return pd.Series(_read_text(path, what, encoding=encoding).split("\n"), dtype=object)


def _split(lines: pd.Series, path: Path, sep: str | None, n_fields: int | None, what: str):
    """Split every line on ``sep`` (whitespace if None); all lines need ``n_fields``."""
    parts = lines.str.split() if sep is None else lines.str.strip().str.split(sep, regex=False)
    counts = parts.str.len().to_numpy()
    expected = max(int(counts[0]), 1) if n_fields is None else n_fields
    bad = np.flatnonzero(counts != expected)
    if bad.size:
        i = int(bad[0])
        kind = "whitespace" if sep is None else repr(sep)
        raise _fail(
            path, i + 1, f"expected {expected} {kind}-separated fields ({what}), got {counts[i]}"
        )
    return parts


def _fast_table(text: str, sep: str | None, n_fields: int | None) -> np.ndarray | None:
    """Parse a numeric table with pandas' C reader; ``None`` if anything looks off."""
    if sep == "::":
        text, sep = text.replace("::", "\t"), "\t"
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            sep=r"\s+" if sep is None else sep,
            header=None,
            dtype=np.float64,
            engine="c",
            quoting=csv.QUOTE_NONE,
            skip_blank_lines=False,
        )
    except (ValueError, pd.errors.ParserError):
        return None
    values = frame.to_numpy(dtype=np.float64)
    n_lines = text.count("\n") + 1
    if values.shape[0] != n_lines or np.isnan(values).any():
        return None
    if n_fields is not None and values.shape[1] != n_fields:
        return None
    return values


def _slow_table(
    text: str, path: Path, sep: str | None, fields: list[str] | None, what: str
) -> np.ndarray:
    """Parse field by field to report the first malformed line precisely."""
    lines = pd.Series(text.split("\n"), dtype=object)
    parts = _split(lines, path, sep, None if fields is None else len(fields), what)
    flat = parts.explode()
    strings = flat.reset_index(drop=True)
    values = pd.to_numeric(strings, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(np.isnan(values))
    if bad.size:
        i = int(bad[0])
        n_cols = len(parts.iat[0])
        desc = what if fields is None else fields[i % n_cols]
        line = int(flat.index[i]) + 1
        raise _fail(path, line, f"expected {desc}, got {_show(strings.iat[i])}")
    return values.reshape(len(lines), -1)


def _table(
    path: Path,
    sep: str | None,
    fields: list[str] | None,
    what: str,
    *,
    encoding: str = "utf-8",
) -> np.ndarray:
    """A numeric table: one row per line, one column per field (descriptions ``fields``)."""
    text = _read_text(path, what, encoding=encoding)
    values = _fast_table(text, sep, None if fields is None else len(fields))
    return _slow_table(text, path, sep, fields, what) if values is None else values


def _check(
    values: np.ndarray, path: Path, what: str, ok: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """Raise at the first row (line) of ``values`` (1-D or 2-D) where ``ok`` is false."""
    bad = ~ok(values)
    if bad.any():
        flat = int(np.flatnonzero(bad.ravel())[0])
        line = flat // (values.shape[1] if values.ndim == 2 else 1) + 1
        raise _fail(path, line, f"expected {what}, got {values.ravel()[flat]:g}")
    return values


def _numbers(
    values: pd.Series,
    lines: np.ndarray,
    path: Path,
    what: str,
    ok: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """Parse strings ``values`` as float64 and check them with ``ok``; ``lines`` 0-based."""
    num = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        bad = np.isnan(num) | ~ok(num)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(path, int(lines[i]) + 1, f"expected {what}, got {_show(values.iloc[i])}")
    return num


def _is_id(lo: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: (x >= lo) & (x == np.floor(x)) & (x < 2**62)


def _is_rating(x: np.ndarray) -> np.ndarray:
    return np.isin(x, RATINGS_1_5)


def _check_duplicates(df: pd.DataFrame, path: Path) -> None:
    dup = df.duplicated(["user", "item"]).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        u, it = int(df["user"].iat[i]), int(df["item"].iat[i])
        first = int(np.flatnonzero((df["user"] == u).to_numpy() & (df["item"] == it).to_numpy())[0])
        raise _fail(
            path,
            i + 1,
            f"duplicate (user, item) pair ({u}, {it}) first seen on line "
            f"{first + 1}; expected each pair once",
        )


def _read_ratings(path: Path, sep: str | None, *, timestamp: bool) -> pd.DataFrame:
    """A delimited ``user item rating [timestamp]`` file with 1-based ids, ratings 1..5."""
    checks = [
        ("user", "a user id >= 1", _is_id(1)),
        ("item", "an item id >= 1", _is_id(1)),
        ("rating", "a rating in 1..5", _is_rating),
    ]
    if timestamp:
        checks.append(("timestamp", "an integer timestamp", _is_id(0)))
    what = " ".join(name for name, _, _ in checks)
    values = _table(path, sep, [desc for _, desc, _ in checks], what)
    out = pd.DataFrame(
        {name: _check(values[:, j], path, desc, ok) for j, (name, desc, ok) in enumerate(checks)}
    )
    out = out.astype({c: np.int64 for c in out.columns if c != "rating"})
    _check_duplicates(out, path)
    return out


def _read_matrix(
    path: Path,
    shape: tuple[int, int | None],
    what: str,
    ok: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """A dense whitespace-separated matrix with ``shape`` (columns free if None)."""
    fields = None if shape[1] is None else [what] * shape[1]
    values = _table(path, None, fields, f"a {shape[0]}-row matrix of {what}")
    if len(values) != shape[0]:
        line = min(len(values), shape[0]) + 1
        raise _fail(path, line, f"expected a matrix of {shape[0]} rows, got {len(values)} lines")
    return _check(values, path, what, ok)


# --------------------------------------------------------------------------- Coat


def _coat_features(folder: Path, kind: str, n_rows: int) -> pd.DataFrame | None:
    base = folder / "user_item_features"
    path = base / f"{kind}_features.ascii"
    if not path.is_file():
        return None
    mat = _read_matrix(path, (n_rows, None), "0/1 features", lambda x: np.isin(x, (0.0, 1.0)))
    map_path = base / f"{kind}_features_map.txt"
    names = [f"feature_{j}" for j in range(mat.shape[1])]
    if map_path.is_file():
        names = [s.strip() for s in _read_lines(map_path, "feature names") if s.strip()]
        if len(names) != mat.shape[1]:
            line = min(len(names), mat.shape[1]) + 1
            raise _fail(
                map_path,
                line,
                f"expected {mat.shape[1]} feature names (columns of {path.name}), got {len(names)}",
            )
    frame = pd.DataFrame(mat.astype(np.int8), columns=names)
    frame.insert(0, kind, np.arange(n_rows, dtype=np.int64))
    return frame


def _coat_part(path: Path) -> pd.DataFrame:
    mat = _read_matrix(
        path, COAT_SHAPE, "ratings 0..5 (0 = missing)", lambda x: np.isin(x, np.arange(0.0, 6.0))
    )
    users, items = np.nonzero(mat)
    return pd.DataFrame(
        {
            "user": users.astype(np.int64),
            "item": items.astype(np.int64),
            "rating": mat[users, items],
        }
    )


def _coat_propensities(folder: Path) -> pd.DataFrame | None:
    path = folder / "propensities.ascii"
    if not path.is_file():
        return None
    mat = _read_matrix(path, COAT_SHAPE, "a propensity in (0, 1]", lambda x: (x > 0) & (x <= 1))
    n_users, n_items = COAT_SHAPE
    return pd.DataFrame(
        {
            "user": np.repeat(np.arange(n_users, dtype=np.int64), n_items),
            "item": np.tile(np.arange(n_items, dtype=np.int64), n_users),
            "propensity": mat.ravel(),
        }
    )


def load_coat(folder: Path) -> RawDataset:
    """Coat [ICML16]: ``train.ascii`` = MNAR, ``test.ascii`` = MAR, 290×300, 0 = missing."""
    folder = Path(folder)
    return RawDataset(
        mnar=_coat_part(folder / "train.ascii"),
        mar=_coat_part(folder / "test.ascii"),
        users=_coat_features(folder, "user", COAT_SHAPE[0]),
        items=_coat_features(folder, "item", COAT_SHAPE[1]),
        propensities=_coat_propensities(folder),
        name="coat",
    )


# --------------------------------------------------------------------------- Yahoo! R3


def load_yahoo_r3(folder: Path) -> RawDataset:
    """Yahoo! R3 (Marlin & Zemel 2009): tab-separated ``user song rating``, 1-based ids."""
    folder = Path(folder)
    return RawDataset(
        mnar=_read_ratings(folder / f"{YAHOO_PREFIX}-train.txt", "\t", timestamp=False),
        mar=_read_ratings(folder / f"{YAHOO_PREFIX}-test.txt", "\t", timestamp=False),
        name="yahoo-r3",
    )


# --------------------------------------------------------------------------- MovieLens


def _delimited(path: Path, sep: str, columns: list[str], what: str) -> pd.DataFrame | None:
    """A latin-1 metadata file with ``len(columns)`` fields per line, all as strings."""
    if not path.is_file():
        return None
    lines = _read_lines(path, what, encoding="latin-1")
    parts = _split(lines, path, sep, len(columns), what)
    return pd.DataFrame(parts.tolist(), columns=columns)


def _ids(frame: pd.DataFrame, col: str, path: Path) -> pd.Series:
    rows = np.arange(len(frame))
    ids = _numbers(frame[col], rows, path, f"a {col} id >= 1", _is_id(1)).astype(np.int64)
    dup = pd.Series(ids).duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise _fail(path, i + 1, f"duplicate {col} id {ids[i]}; expected each id once")
    return pd.Series(ids, index=frame.index)


def _ml100k_items(folder: Path) -> pd.DataFrame | None:
    path = folder / "u.item"
    genres = [f"genre_{g}" for g in ML100K_GENRES]
    cols = ["item", "title", "release_date", "video_release_date", "imdb_url", *genres]
    raw = _delimited(path, "|", cols, "movie id|title|dates|URL|19 genre flags")
    if raw is None:
        return None
    rows = np.arange(len(raw))
    out = raw[["title", "release_date", "imdb_url"]].copy()
    out.insert(0, "item", _ids(raw, "item", path))
    for g in genres:
        out[g] = _numbers(
            raw[g], rows, path, "a 0/1 genre flag", lambda x: np.isin(x, (0.0, 1.0))
        ).astype(np.int8)
    return out


def _ml100k_users(folder: Path) -> pd.DataFrame | None:
    path = folder / "u.user"
    raw = _delimited(
        path,
        "|",
        ["user", "age", "gender", "occupation", "zip_code"],
        "user id|age|gender|occupation|zip code",
    )
    if raw is None:
        return None
    out = raw[["gender", "occupation", "zip_code"]].copy()
    out.insert(
        0,
        "age",
        _numbers(raw["age"], np.arange(len(raw)), path, "an integer age", _is_id(0)).astype(
            np.int64
        ),
    )
    out.insert(0, "user", _ids(raw, "user", path))
    return out


def load_ml_100k(folder: Path) -> RawDataset:
    """MovieLens 100K: tab-separated ``u.data`` plus latin-1 ``u.item`` and ``u.user``."""
    folder = Path(folder)
    return RawDataset(
        mnar=_read_ratings(folder / "u.data", "\t", timestamp=True),
        users=_ml100k_users(folder),
        items=_ml100k_items(folder),
        name="ml-100k",
    )


def _ml1m_items(folder: Path) -> pd.DataFrame | None:
    path = folder / "movies.dat"
    raw = _delimited(path, "::", ["item", "title", "genres"], "MovieID::Title::Genres")
    if raw is None:
        return None
    onehot = raw["genres"].str.get_dummies(sep="|").astype(np.int8).add_prefix("genre_")
    out = pd.concat([raw[["title"]], onehot], axis=1)
    out.insert(0, "item", _ids(raw, "item", path))
    return out


def _ml1m_users(folder: Path) -> pd.DataFrame | None:
    path = folder / "users.dat"
    cols = ["user", "gender", "age", "occupation", "zip_code"]
    raw = _delimited(path, "::", cols, "UserID::Gender::Age::Occupation::Zip-code")
    if raw is None:
        return None
    rows = np.arange(len(raw))
    out = raw[["gender", "zip_code"]].copy()
    out.insert(0, "user", _ids(raw, "user", path))
    out.insert(
        2, "age", _numbers(raw["age"], rows, path, "an age code", _is_id(0)).astype(np.int64)
    )
    out.insert(
        3,
        "occupation",
        _numbers(raw["occupation"], rows, path, "an occupation code", _is_id(0)).astype(np.int64),
    )
    return out


def load_ml_1m(folder: Path) -> RawDataset:
    """MovieLens 1M: ``ratings.dat`` as ``UserID::MovieID::Rating::Timestamp``."""
    folder = Path(folder)
    return RawDataset(
        mnar=_read_ratings(folder / "ratings.dat", "::", timestamp=True),
        users=_ml1m_users(folder),
        items=_ml1m_items(folder),
        name="ml-1m",
    )


# --------------------------------------------------------------------------- LibraryThing

LIBRARYTHING_FILE = "reviews.txt"
LIBRARYTHING_STARS = np.arange(1, 11) / 2.0  # 0.5, 1.0, ..., 5.0
_PY_STRING = r"""[uU]?(?:'[^'\\]*(?:\\.[^'\\]*)*'|"[^"\\]*(?:\\.[^"\\]*)*")"""
_LT_RECORD = rf"^(?:reviews\[\({_PY_STRING}, {_PY_STRING}\)\] = )?(\{{.*\}})$"
_LT_COMMENT = rf"'comment': {_PY_STRING}"


def _lt_field(body: pd.Series, key: str, value: str) -> tuple[pd.Series, np.ndarray]:
    """The raw text of ``key``'s value in every dict ``body`` (NaN if absent); its count."""
    pattern = rf"(?:\{{|, )'{key}': ({value})(?=, '|\}}$)"
    return body.str.extract(pattern, expand=False), body.str.count(rf"[{{ ]'{key}': ").to_numpy()


def _is_half_star(x: np.ndarray) -> np.ndarray:
    return np.isin(x, LIBRARYTHING_STARS)


def _lt_strings(values: pd.Series) -> pd.Series:
    """Decode Python string literals; only those with escapes go through ``ast``."""
    plain = values.str.replace(r"^[uU]", "", regex=True).str[1:-1]
    escaped = values.str.contains("\\", regex=False).to_numpy()
    if escaped.any():
        plain[escaped] = [ast.literal_eval(v) for v in values[escaped]]
    return plain


def load_librarything(folder: Path) -> RawDataset:
    """LibraryThing reviews (Zhao, McAuley & King, CIKM 2015): ``reviews.txt``, MNAR only.

    Each line is one review as a Python dict literal, either ``reviews[(work, user)] =
    {...}`` (the original ``reviews.txt``, whose first line is a header) or a bare ``{...}``
    (``reviews.json`` of the 2016 re-release); the keys used are ``'work'`` and ``'user'``
    (strings), ``'stars'`` (0.5-step rating in [0.5, 5]) and ``'unixtime'``. Lines without
    ``'stars'`` (or with ``None``) are reviews without a rating and are skipped. The comment
    text is removed before the fields are read, so it cannot fake one. Users and works are
    coded 0.. in sorted name order; ``users``/``items`` keep the names (``username``, ``work``).
    ``timestamp`` (``unixtime``) is kept when every rated line has one.
    """
    path = Path(folder) / LIBRARYTHING_FILE
    lines = _read_lines(path, "LibraryThing reviews, one Python dict literal per line")
    # the comment (free text, the only long field) goes first: nothing in it can pass for a key
    body = lines.str.replace(_LT_COMMENT, "'comment': ''", n=1, regex=True)
    body = body.str.extract(_LT_RECORD, expand=False)
    blank = lines.str.strip().eq("").to_numpy()
    skip = blank.copy()
    skip[0] |= pd.isna(body.iat[0])  # the original file's header line
    bad = np.flatnonzero(pd.isna(body).to_numpy() & ~skip)
    if bad.size:
        i = int(bad[0])
        raise _fail(
            path,
            i + 1,
            f"expected a review dict {{...}} or reviews[(...)] = {{...}}, "
            f"got {_show(lines.iat[i])}",
        )
    rows = np.flatnonzero(~skip)
    body = body.iloc[rows]
    fields = {
        "work": _lt_field(body, "work", _PY_STRING),
        "user": _lt_field(body, "user", _PY_STRING),
        "stars": _lt_field(body, "stars", r"[^,{}]+"),
        "unixtime": _lt_field(body, "unixtime", r"-?\d+"),
    }
    for key, (values, counts) in fields.items():
        unreadable = values.isna().to_numpy() & (
            counts > 0 if key in ("stars", "unixtime") else True
        )
        bad = (counts > 1) | unreadable
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "at most once" if counts[i] > 1 else "with a readable value"
            raise _fail(path, int(rows[i]) + 1, f"expected the key {key!r} {what}")
    stars = fields["stars"][0].str.strip()
    rated = (stars.notna() & stars.ne("None")).to_numpy()
    keep = rows[rated]
    rating = _numbers(stars[rated], keep, path, "a rating in 0.5..5 by 0.5", _is_half_star)
    users = _lt_strings(fields["user"][0][rated])
    works = _lt_strings(fields["work"][0][rated])
    user_names, user_codes = np.unique(users.to_numpy(dtype=str), return_inverse=True)
    work_names, work_codes = np.unique(works.to_numpy(dtype=str), return_inverse=True)
    mnar = pd.DataFrame(
        {
            "user": user_codes.astype(np.int64),
            "item": work_codes.astype(np.int64),
            "rating": rating,
        }
    )
    times = fields["unixtime"][0][rated]
    if times.notna().all():
        mnar["timestamp"] = times.astype(np.int64).to_numpy()
    dup = mnar.duplicated(["user", "item"]).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        same = (mnar["user"] == mnar["user"].iat[i]) & (mnar["item"] == mnar["item"].iat[i])
        first = int(keep[int(np.flatnonzero(same.to_numpy())[0])])
        raise _fail(
            path,
            int(keep[i]) + 1,
            f"duplicate review of work {works.iat[i]!r} by user {users.iat[i]!r} first seen on "
            f"line {first + 1}; expected each (work, user) once",
        )
    return RawDataset(
        mnar=mnar,
        users=pd.DataFrame({"user": np.arange(len(user_names)), "username": user_names}),
        items=pd.DataFrame({"item": np.arange(len(work_names)), "work": work_names}),
        name="librarything",
    )


# --------------------------------------------------------------------------- Jester5k


def _jester5k(folder: Path) -> RawDataset:
    """Jester5k's R data file (:func:`debiaseval.data.jester.load_jester5k`, which needs the
    optional extra ``jester``; imported when used)."""
    from debiaseval.data.jester import load_jester5k

    return load_jester5k(folder)


# --------------------------------------------------------------------------- dispatch

LOADERS: dict[str, Callable[[Path], RawDataset]] = {
    "coat": load_coat,
    "yahoo-r3": load_yahoo_r3,
    "ml-100k": load_ml_100k,
    "ml-1m": load_ml_1m,
    "librarything": load_librarything,
    "jester5k": _jester5k,
}


def load_raw(name: str, folder: Path) -> RawDataset:
    """Load dataset ``name`` from ``folder`` (as written by :func:`fetch_dataset`)."""
    try:
        loader = LOADERS[name]
    except KeyError:
        raise DatasetError(f"no loader for dataset {name!r}; known: {', '.join(LOADERS)}") from None
    return loader(Path(folder))
