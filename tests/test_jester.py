"""Jester5k: recommenderlab's R data file read into ratings (debiaseval.data.jester), its
0.00 quirk, the errors of a missing extra and a malformed file, and its download as one file.

The R data files are tiny ones the tests write themselves (tests/jester_rda.py), never Jester's.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest
from jester_rda import R_DOUBLE_XMIN, S4, dgcmatrix, write_jester, write_rda

from debiaseval.data import SOURCES, DatasetSource, build_interactions, fetch_dataset, load_raw
from debiaseval.data.catalog import positive_threshold_of
from debiaseval.data.jester import JESTER5K_FILE, dgcmatrix_constructor, read_jester5k
from debiaseval.io.errors import DatasetError

NAN = np.nan
# 4 users x 3 jokes; users u10 and u12 rated every joke (the block); three exact 0.00 ratings
TINY = np.array(
    [
        [1.5, 0.0, -9.95],
        [NAN, 2.0, 9.9],
        [0.0, 0.0, 5.0],
        [3.0, NAN, NAN],
    ]
)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    folder = tmp_path / "jester5k"
    folder.mkdir()
    write_jester(folder / JESTER5K_FILE, TINY)
    return folder


def test_zero_ratings_are_read_back_as_zero(tiny: Path) -> None:
    stored, jokes = read_jester5k(tiny / JESTER5K_FILE)
    assert (stored.matrix.data == R_DOUBLE_XMIN).sum() == 3  # as recommenderlab stores 0.00
    raw = load_raw("jester5k", tiny)
    got = raw.mnar.sort_values(["user", "item"])
    assert got["user"].tolist() == [10, 10, 10, 11, 11, 12, 12, 12, 13]
    assert got["item"].tolist() == [1, 2, 3, 2, 3, 1, 2, 3, 1]
    assert got["rating"].tolist() == [1.5, 0.0, -9.95, 2.0, 9.9, 0.0, 0.0, 5.0, 3.0]
    assert (got["rating"] == 0.0).sum() == 3 and got["rating"].abs().min() == 0.0
    assert raw.users.set_index("user")["full_block"].to_dict() == {
        10: True,
        11: False,
        12: True,
        13: False,
    }
    assert raw.items["text"].tolist() == ["joke j1", "joke j2", "joke j3"]
    assert jokes is not None and len(jokes) == 3


def test_preprocessed_jester_keeps_every_rating_and_marks_the_block(tiny: Path) -> None:
    interactions, users, items = build_interactions(load_raw("jester5k", tiny))
    assert len(interactions) == 9 and set(interactions["part"]) == {"mnar"}
    assert users.columns.tolist() == ["user", "raw_user", "full_block"]
    assert users["raw_user"].tolist() == [10, 11, 12, 13]
    assert users["full_block"].tolist() == [True, False, True, False]
    assert items["raw_item"].tolist() == [1, 2, 3]
    assert interactions["rating"].dtype == np.float32
    assert positive_threshold_of("jester5k", None) == 5.0


def test_without_rdata_the_error_names_the_extra(tiny: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "rdata", None)  # import rdata now raises ImportError
    with pytest.raises(DatasetError) as error:
        load_raw("jester5k", tiny)
    message = str(error.value)
    assert "\n" not in message and "rdata" in message
    assert "pip install -e '.[jester]'" in message and JESTER5K_FILE in message


def test_a_malformed_file_is_one_line_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "jester5k"
    folder.mkdir()
    (folder / JESTER5K_FILE).write_bytes(b"RDX3\nnot an R data file at all")
    with pytest.raises(DatasetError, match="not a readable R data file") as error:
        load_raw("jester5k", folder)
    assert str(folder / JESTER5K_FILE) in str(error.value) and "\n" not in str(error.value)
    write_rda(folder / JESTER5K_FILE, {"Jester5k": np.array([1.0, 2.0])})  # no rating matrix
    with pytest.raises(DatasetError, match="realRatingMatrix holding a dgCMatrix"):
        load_raw("jester5k", folder)
    with pytest.raises(DatasetError, match="file not found"):
        load_raw("jester5k", tmp_path / "nowhere")


def test_bad_names_and_ratings_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "jester5k"
    folder.mkdir()
    matrix = S4("realRatingMatrix", {"data": dgcmatrix(TINY[:1], ["user7"], ["j1", "j2", "j3"])})
    write_rda(folder / JESTER5K_FILE, {"Jester5k": matrix})
    with pytest.raises(DatasetError, match=r"user name 'user7' is not of the form u<n>"):
        load_raw("jester5k", folder)
    write_jester(folder / JESTER5K_FILE, np.array([[1.0, 12.5]]))
    with pytest.raises(DatasetError, match=r"rating 12.5 of user u10, joke j2 is outside"):
        load_raw("jester5k", folder)


def test_dgcmatrix_constructor_checks_the_slots() -> None:
    slots = {
        "i": np.array([0, 1, 0]),
        "p": np.array([0, 2, 3]),
        "x": np.array([1.0, 2.0, 3.0]),
        "Dim": np.array([2, 2]),
        "Dimnames": [np.array(["u1", "u2"]), None],
    }
    read = dgcmatrix_constructor(None, slots)
    assert read.matrix.toarray().tolist() == [[1.0, 3.0], [2.0, 0.0]]
    assert read.row_names.tolist() == ["u1", "u2"] and read.col_names is None
    for bad, match in [
        ({"p": np.array([0, 3, 2])}, "non-decreasing column starts"),
        ({"i": np.array([0, 1])}, "do not have the length"),
        ({"i": np.array([0, 2, 0])}, "outside 0..1"),
        ({"i": np.array([1, 0, 0])}, "strictly increasing within a column"),
        ({"Dim": None}, "without its slots"),
    ]:
        with pytest.raises(ValueError, match=match):
            dgcmatrix_constructor(None, {**slots, **bad})


# --------------------------------------------------------------------------- download


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def single_file(tmp_path: Path, monkeypatch) -> tuple[DatasetSource, Path]:
    """The registry's ``jester5k`` entry pointed at a tiny file of the test's own."""
    file = write_jester(tmp_path / "served.rda", TINY)
    source = DatasetSource(
        name="jester5k",
        url=file.as_uri(),
        archive_sha256=_sha(file),
        archive_root="",
        files={JESTER5K_FILE: (_sha(file),)},
        licence="test",
        citation="test",
        archive=False,
    )
    monkeypatch.setitem(SOURCES, "jester5k", source)
    monkeypatch.delenv("DEBIASEVAL_MIRROR", raising=False)
    return source, file


def test_the_registry_pins_jester5k() -> None:
    source = SOURCES["jester5k"]
    assert not source.archive and list(source.files) == [JESTER5K_FILE]
    assert source.url is not None and "0af29f648646b5d7383989ab5dd1ce2d67732e00" in source.url
    sha = "9266775e16958212359c777fcb5812dd520f1ca222913af7724c5ed54c4958f1"
    assert source.archive_sha256 == sha and source.files[JESTER5K_FILE] == (sha,)


def test_a_single_file_download_is_verified_and_kept_under_its_name(single_file, tmp_path):
    _, served = single_file
    dest = fetch_dataset("jester5k", tmp_path / "raw" / "jester5k")
    assert sorted(p.name for p in dest.iterdir()) == [JESTER5K_FILE]
    assert (dest / JESTER5K_FILE).read_bytes() == served.read_bytes()
    assert not (dest / JESTER5K_FILE).is_symlink()
    assert len(load_raw("jester5k", dest).mnar) == 9
    # the file itself given as sources.jester5k.path
    again = fetch_dataset("jester5k", tmp_path / "other", path=served)
    assert (again / JESTER5K_FILE).read_bytes() == served.read_bytes()


def test_a_single_file_with_another_checksum_is_refused(single_file, tmp_path):
    _, served = single_file
    other = write_jester(tmp_path / "other.rda", TINY[:2])
    with pytest.raises(DatasetError, match="checksum") as error:
        fetch_dataset("jester5k", tmp_path / "raw" / "jester5k", url=other.as_uri())
    assert "\n" not in str(error.value)
    assert not (tmp_path / "raw" / "jester5k").exists()
    with pytest.raises(DatasetError, match=f"checksum mismatch for {JESTER5K_FILE}"):
        fetch_dataset("jester5k", tmp_path / "raw" / "jester5k", path=other)
    assert served.is_file() and other.is_file()  # the user's files are left alone
