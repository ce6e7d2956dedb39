"""Loaders on tiny fixtures written in the real formats, and on malformed variants."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from debiaseval.data import (
    LOADERS,
    DatasetError,
    RawDataset,
    load_coat,
    load_ml_1m,
    load_ml_100k,
    load_raw,
    load_yahoo_r3,
)

YAHOO = "ydata-ymusic-rating-study-v1_0"


def _matrix_text(mat: np.ndarray, fmt: str = "{:g}", newline: str = "\r\n") -> str:
    return newline.join(" ".join(fmt.format(v) for v in row) for row in mat) + newline


def _coat_matrices() -> tuple[np.ndarray, np.ndarray]:
    train = np.zeros((290, 300), dtype=int)
    test = np.zeros((290, 300), dtype=int)
    train[0, 1], train[0, 5], train[3, 299], train[289, 0] = 5, 1, 3, 2
    test[0, 2], test[3, 299], test[100, 7] = 4, 2, 1
    return train, test


def _write_coat(folder: Path) -> Path:
    train, test = _coat_matrices()
    (folder / "user_item_features").mkdir(parents=True)
    (folder / "train.ascii").write_bytes(_matrix_text(train).encode())
    (folder / "test.ascii").write_bytes(_matrix_text(test).encode())
    props = np.full((290, 300), 0.05)
    props[0, 1] = 0.5
    (folder / "propensities.ascii").write_text(_matrix_text(props, "{:.8e}", "\n"))
    ufeat = np.zeros((290, 2), dtype=int)
    ufeat[:, 0] = 1
    ifeat = np.eye(300, 3, dtype=int)
    base = folder / "user_item_features"
    (base / "user_features.ascii").write_bytes(_matrix_text(ufeat).encode())
    (base / "item_features.ascii").write_bytes(_matrix_text(ifeat).encode())
    (base / "user_features_map.txt").write_bytes(b"gender:men\r\ngender:women")
    (base / "item_features_map.txt").write_bytes(b"color:red\r\ncolor:blue\r\ncolor:green")
    return folder


def _write_yahoo(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{YAHOO}-train.txt").write_text("1\t14\t5\n1\t35\t1\n2\t14\t3\n3\t7\t2\n")
    (folder / f"{YAHOO}-test.txt").write_text("1\t49\t1\n2\t14\t4\n")
    return folder


def _write_ml100k(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.data").write_text("196\t242\t3\t881250949\n186\t302\t3\t891717742\n")
    flags = ["0"] * 19
    flags[5] = "1"  # Comedy
    items = [
        "242|Kolya (1996)|24-Jan-1997||http://us.imdb.com/M/title-exact?Kolya%20(1996)|",
        "302|L.A. Confidential (1997)|01-Jan-1997||http://x|",
        "303|Misérables, Les (1995)|01-Jan-1995||http://y|",
    ]
    text = "\n".join(line + "|".join(flags) for line in items) + "\n"
    (folder / "u.item").write_bytes(text.encode("latin-1"))
    (folder / "u.user").write_text("186|39|F|executive|00000\n196|49|M|writer|55105\n")
    return folder


def _write_ml1m(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ratings.dat").write_text("1::1193::5::978300760\n1::661::3::978302109\n")
    movies = "661::James and the Giant Peach (1996)::Animation|Children's|Musical\n"
    movies += "1193::One Flew Over the Cuckoo's Nest (1975)::Drama\n"
    movies += "2000::Astérix (1999)::Comedy\n"
    (folder / "movies.dat").write_bytes(movies.encode("latin-1"))
    (folder / "users.dat").write_text("1::F::1::10::48067\n")
    return folder


def _assert_raw_dtypes(df: pd.DataFrame) -> None:
    assert df["user"].dtype == np.int64 and df["item"].dtype == np.int64
    assert df["rating"].dtype == np.float64
    if "timestamp" in df:
        assert df["timestamp"].dtype == np.int64


def _error(func, *args) -> str:
    with pytest.raises(DatasetError) as err:
        func(*args)
    msg = str(err.value)
    assert "\n" not in msg
    return msg


# --------------------------------------------------------------------------- valid fixtures


def test_load_coat(tmp_path: Path) -> None:
    raw = load_coat(_write_coat(tmp_path / "coat"))
    assert isinstance(raw, RawDataset) and raw.name == "coat"
    _assert_raw_dtypes(raw.mnar)
    assert raw.mnar.values.tolist() == [[0, 1, 5], [0, 5, 1], [3, 299, 3], [289, 0, 2]]
    assert raw.mar is not None
    assert raw.mar.values.tolist() == [[0, 2, 4], [3, 299, 2], [100, 7, 1]]
    assert raw.propensities is not None and len(raw.propensities) == 290 * 300
    row = raw.propensities.query("user == 0 and item == 1")
    assert row["propensity"].item() == pytest.approx(0.5)
    assert raw.users is not None
    assert list(raw.users.columns) == ["user", "gender:men", "gender:women"]
    assert raw.users["gender:men"].sum() == 290
    assert raw.items is not None and raw.items.shape == (300, 4)
    assert raw.items.loc[2, "color:green"] == 1


def test_load_coat_without_side_files(tmp_path: Path) -> None:
    folder = tmp_path / "coat"
    folder.mkdir()
    train, test = _coat_matrices()
    (folder / "train.ascii").write_text(_matrix_text(train, newline="\n"))
    (folder / "test.ascii").write_text(_matrix_text(test, newline="\n"))
    raw = load_coat(folder)
    assert raw.users is None and raw.items is None and raw.propensities is None
    assert len(raw.mnar) == 4


def test_load_yahoo(tmp_path: Path) -> None:
    raw = load_yahoo_r3(_write_yahoo(tmp_path / "y"))
    _assert_raw_dtypes(raw.mnar)
    assert raw.mnar.values.tolist() == [[1, 14, 5], [1, 35, 1], [2, 14, 3], [3, 7, 2]]
    assert raw.mar is not None and raw.mar.values.tolist() == [[1, 49, 1], [2, 14, 4]]
    assert raw.users is None and raw.items is None and raw.propensities is None


def test_yahoo_tolerates_crlf_and_trailing_blanks(tmp_path: Path) -> None:
    folder = _write_yahoo(tmp_path / "y")
    (folder / f"{YAHOO}-test.txt").write_bytes(b"1\t49\t1 \r\n2\t14\t4\r\n\r\n\n")
    raw = load_yahoo_r3(folder)
    assert raw.mar is not None and raw.mar.values.tolist() == [[1, 49, 1], [2, 14, 4]]


def test_load_ml100k(tmp_path: Path) -> None:
    raw = load_ml_100k(_write_ml100k(tmp_path / "ml"))
    _assert_raw_dtypes(raw.mnar)
    assert raw.mnar.values.tolist() == [[196, 242, 3, 881250949], [186, 302, 3, 891717742]]
    assert raw.mar is None
    assert raw.items is not None and raw.items["title"].tolist()[2] == "Misérables, Les (1995)"
    assert raw.items["genre_Comedy"].tolist() == [1, 1, 1]
    assert raw.items["genre_Drama"].sum() == 0
    assert raw.users is not None and raw.users["zip_code"].tolist() == ["00000", "55105"]
    assert raw.users["age"].tolist() == [39, 49]


def test_load_ml1m(tmp_path: Path) -> None:
    raw = load_ml_1m(_write_ml1m(tmp_path / "ml"))
    _assert_raw_dtypes(raw.mnar)
    assert raw.mnar.values.tolist() == [[1, 1193, 5, 978300760], [1, 661, 3, 978302109]]
    assert raw.items is not None
    assert raw.items["title"].tolist()[2] == "Astérix (1999)"
    assert raw.items["genre_Children's"].tolist() == [1, 0, 0]
    assert raw.users is not None and raw.users.iloc[0].tolist() == [1, "F", 1, 10, "48067"]


def test_load_raw_dispatches(tmp_path: Path) -> None:
    assert set(LOADERS) == {"coat", "yahoo-r3", "ml-100k", "ml-1m", "librarything", "jester5k"}
    raw = load_raw("yahoo-r3", _write_yahoo(tmp_path / "y"))
    assert raw.name == "yahoo-r3" and len(raw.mnar) == 4
    assert "no loader" in _error(load_raw, "nope", tmp_path)


# --------------------------------------------------------------------------- malformed


def _replace_line(path: Path, lineno: int, text: str, *, newline: str = "\n") -> None:
    lines = path.read_bytes().decode("latin-1").split(newline)
    lines[lineno - 1] = text
    path.write_bytes(newline.join(lines).encode("latin-1"))


@pytest.mark.parametrize(
    ("line", "text", "expect"),
    [
        (2, "1\t35", "expected 3"),
        (3, "2\tabc\t3", "item id"),
        (4, "3\t7\t6", "rating in 1..5"),
        (4, '3\t7\t"2"', "rating in 1..5"),
        (4, "3\t7\t0", "rating in 1..5"),
        (3, "2\t14\t2.5", "rating in 1..5"),
        (2, "0\t35\t1", "user id"),
        (3, "1\t14\t2", "duplicate (user, item) pair (1, 14) first seen on line 1"),
    ],
)
def test_yahoo_malformed(tmp_path: Path, line: int, text: str, expect: str) -> None:
    folder = _write_yahoo(tmp_path / "y")
    _replace_line(folder / f"{YAHOO}-train.txt", line, text)
    msg = _error(load_yahoo_r3, folder)
    assert f"{YAHOO}-train.txt: line {line}:" in msg and expect in msg


def test_yahoo_missing_and_empty(tmp_path: Path) -> None:
    folder = _write_yahoo(tmp_path / "y")
    (folder / f"{YAHOO}-test.txt").unlink()
    msg = _error(load_yahoo_r3, folder)
    assert f"{YAHOO}-test.txt" in msg and "not found" in msg
    (folder / f"{YAHOO}-test.txt").write_text("\n")
    msg = _error(load_yahoo_r3, folder)
    assert f"{YAHOO}-test.txt: line 1: empty file" in msg


@pytest.mark.parametrize(
    ("line", "values", "expect"),
    [
        (7, "1 " * 299, "expected 300 whitespace-separated fields"),
        (9, "x" + " 0" * 299, "ratings 0..5"),
        (11, "7" + " 0" * 299, "ratings 0..5"),
        (13, "-1" + " 0" * 299, "ratings 0..5"),
    ],
)
def test_coat_malformed(tmp_path: Path, line: int, values: str, expect: str) -> None:
    folder = _write_coat(tmp_path / "coat")
    _replace_line(folder / "train.ascii", line, values.strip(), newline="\r\n")
    msg = _error(load_coat, folder)
    assert f"train.ascii: line {line}:" in msg and expect in msg


def test_coat_wrong_shape_and_bad_propensity(tmp_path: Path) -> None:
    folder = _write_coat(tmp_path / "coat")
    lines = (folder / "test.ascii").read_bytes().split(b"\r\n")
    (folder / "test.ascii").write_bytes(b"\r\n".join(lines[:200]))
    msg = _error(load_coat, folder)
    assert "test.ascii: line 201:" in msg and "290 rows" in msg
    folder = _write_coat(tmp_path / "coat2")
    _replace_line(folder / "propensities.ascii", 5, "0" + " 0.5" * 299)
    msg = _error(load_coat, folder)
    assert "propensities.ascii: line 5:" in msg and "propensity in (0, 1]" in msg


def test_coat_feature_map_mismatch(tmp_path: Path) -> None:
    folder = _write_coat(tmp_path / "coat")
    (folder / "user_item_features" / "user_features_map.txt").write_text("gender:men\n")
    msg = _error(load_coat, folder)
    assert "user_features_map.txt: line 2:" in msg and "expected 2 feature names" in msg


@pytest.mark.parametrize(
    ("line", "text", "expect"),
    [
        (1, "196\t242\t3", "expected 4"),
        (2, "186\t302\t3\tyesterday", "integer timestamp"),
        (2, "186\t302\t9\t891717742", "rating in 1..5"),
        (2, "196\t242\t4\t891717742", "duplicate (user, item) pair (196, 242)"),
    ],
)
def test_ml100k_malformed(tmp_path: Path, line: int, text: str, expect: str) -> None:
    folder = _write_ml100k(tmp_path / "ml")
    _replace_line(folder / "u.data", line, text)
    msg = _error(load_ml_100k, folder)
    assert f"u.data: line {line}:" in msg and expect in msg


def test_ml100k_malformed_metadata(tmp_path: Path) -> None:
    folder = _write_ml100k(tmp_path / "ml")
    _replace_line(folder / "u.item", 2, "302|L.A. Confidential (1997)|01-Jan-1997")
    msg = _error(load_ml_100k, folder)
    assert "u.item: line 2:" in msg and "expected 24 '|'-separated fields" in msg
    folder = _write_ml100k(tmp_path / "ml2")
    _replace_line(folder / "u.user", 2, "186|49|M|writer|55105")
    assert "u.user: line 2: duplicate user id 186" in _error(load_ml_100k, folder)
    (folder / "u.data").unlink()
    assert "u.data: file not found" in _error(load_ml_100k, folder)


@pytest.mark.parametrize(
    ("line", "text", "expect"),
    [
        (2, "1::661::3", "expected 4 '::'-separated fields"),
        (1, "1::1193::5::978300760::x", "expected 4 '::'-separated fields"),
        (2, "1,661,3,978302109", "expected 4 '::'-separated fields"),
        (2, "one::661::3::978302109", "user id"),
        (1, "1::1193::6::978300760", "rating in 1..5"),
    ],
)
def test_ml1m_malformed(tmp_path: Path, line: int, text: str, expect: str) -> None:
    folder = _write_ml1m(tmp_path / "ml")
    _replace_line(folder / "ratings.dat", line, text)
    msg = _error(load_ml_1m, folder)
    assert f"ratings.dat: line {line}:" in msg and expect in msg


def test_ml1m_empty_ratings(tmp_path: Path) -> None:
    folder = _write_ml1m(tmp_path / "ml")
    (folder / "ratings.dat").write_text("")
    assert "ratings.dat: line 1: empty file" in _error(load_ml_1m, folder)
