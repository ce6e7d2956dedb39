"""LibraryThing (Zhao, McAuley & King, CIKM 2015): the reviews.txt loader, manual-only fetch, E2.

The fixture ``tests/data/librarything/reviews.txt`` is in the original file's layout: a header
line, then ``reviews[(work, user)] = {...}`` Python dict literals, 0.5-step ``stars``, some
reviews without ``stars``, and a comment quoting ``'stars': 5.0``.
"""

from __future__ import annotations

import ast
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from debiaseval import api
from debiaseval.data import (
    MIRROR_ENV,
    SOURCES,
    DatasetError,
    build_interactions,
    fetch_dataset,
    load_librarything,
    load_raw,
)
from debiaseval.experiments import e2
from debiaseval.workflow.config import validate_config

FIXTURE = Path(__file__).parent / "data" / "librarything"


def _reference(path: Path) -> pd.DataFrame:
    """The rated reviews of ``path``, parsed line by line with ``ast`` (not the loader)."""
    rows = []
    for line in path.read_text().splitlines()[1:]:
        record = ast.literal_eval(line.split(" = ", 1)[1])
        if record.get("stars") is not None:
            rows.append((record["user"], record["work"], record["stars"], record["unixtime"]))
    return pd.DataFrame(rows, columns=["username", "work", "rating", "timestamp"])


def _named(raw) -> pd.DataFrame:
    """The loader's MNAR part with user and work names instead of codes."""
    out = raw.mnar.merge(raw.users, on="user").merge(raw.items, on="item")
    return out[["username", "work", "rating", "timestamp"]]


def _write(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reviews.txt").write_text("\n".join(lines) + "\n")
    return folder


def _record(work: str, user: str, stars: object = 4.0, comment: str = "ok", **extra) -> dict:
    record = {"comment": comment, "nhelpful": 0, "unixtime": 1194393600, "work": work}
    record.update({"flags": [], "user": user, "stars": stars, "time": "Nov 7, 2007", **extra})
    if stars is ...:
        del record["stars"]
    return record


def _line(work: str, user: str, stars: object = 4.0, **kw) -> str:
    return f"reviews[({work!r}, {user!r})] = {_record(work, user, stars, **kw)!r}"


# --------------------------------------------------------------------------- parsing


def test_fixture_matches_a_line_by_line_parse():
    raw = load_librarything(FIXTURE)
    got = _named(raw).sort_values(["username", "work"]).reset_index(drop=True)
    want = _reference(FIXTURE / "reviews.txt").sort_values(["username", "work"])
    pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)
    assert len(raw.mnar) == 26  # 29 reviews, 3 without stars
    assert raw.mar is None and raw.name == "librarything"
    assert list(raw.mnar.columns) == ["user", "item", "rating", "timestamp"]
    assert raw.mnar["rating"].dtype == np.float64 and raw.mnar["timestamp"].dtype == np.int64
    assert raw.users["username"].tolist() == sorted(raw.users["username"])
    assert raw.items["work"].tolist()[:2] == ["1023", "2047"]


def test_fixture_values_and_half_steps_survive_preprocessing():
    raw = load_raw("librarything", FIXTURE)
    named = _named(raw).set_index(["username", "work"])
    assert named.loc[("alice", "1023"), "rating"] == 4.5
    assert named.loc[("alice", "1023"), "timestamp"] == 1194393600
    # the comment of this review quotes "'stars': 5.0"; the rating is the dict's own 0.5
    assert named.loc[("bob", "1023"), "rating"] == 0.5
    assert ("bob", "2047") not in named.index  # a review without stars is skipped
    interactions, users, items = build_interactions(raw)
    assert set(interactions["part"]) == {"mnar"}
    halves = {0.5, 1.5, 2.5, 3.5, 4.5}
    assert halves <= set(interactions["rating"].tolist())
    assert np.all(interactions["rating"].to_numpy() * 2 == np.round(interactions["rating"] * 2))
    assert users.columns.tolist() == ["user", "raw_user", "username"]
    assert items.set_index("item").loc[0, "work"] == "1023"


def test_bare_dict_layout_and_fields_hidden_in_comments(tmp_path):
    records = [
        _record("12", "ann", 3.5),
        _record("13", "ann", ..., comment="I'd give it 'stars': 4.0, 'user': 'zed'"),
        _record("12", "o_brien", None),
        _record("14", "b\u00e9a", 5.0, comment='say "hi"\\n'),
    ]
    lines = [repr(r) for r in records]
    raw = load_librarything(_write(tmp_path / "lt", lines))
    named = _named(raw)
    assert named[["username", "work", "rating"]].values.tolist() == [
        ["ann", "12", 3.5],
        ["b\u00e9a", "14", 5.0],
    ]


def test_timestamp_dropped_when_a_rated_review_has_none(tmp_path):
    record = _record("2", "bo", 2.0)
    del record["unixtime"]
    raw = load_librarything(
        _write(tmp_path / "lt", ["reviews = {}", _line("1", "al"), repr(record)])
    )
    assert "timestamp" not in raw.mnar.columns and len(raw.mnar) == 2


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("reviews[('9', 'x')] = not a dict", "expected a review dict"),
        (_line("9", "x", 4.25), "expected a rating in 0.5..5 by 0.5, got '4.25'"),
        (_line("9", "x", 0.0), "expected a rating in 0.5..5 by 0.5, got '0.0'"),
        (_line("9", "x", "4"), "expected a rating in 0.5..5 by 0.5"),
        (repr({"work": "9", "stars": 4.0}), "expected the key 'user' with a readable value"),
        (_line("1", "al", 3.0), "duplicate review of work '1' by user 'al' first seen on line 2"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, bad, message):
    folder = _write(tmp_path / "lt", ["reviews = {}", _line("1", "al"), _line("2", "al"), bad])
    with pytest.raises(DatasetError) as err:
        load_librarything(folder)
    text = str(err.value)
    assert text.startswith(f"{folder / 'reviews.txt'}: line 4: ") and message in text
    assert "\n" not in text


def test_missing_file_names_it(tmp_path):
    with pytest.raises(DatasetError, match=r"reviews\.txt: file not found"):
        load_librarything(tmp_path)


# --------------------------------------------------------------------------- fetching


def test_manual_only_error_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    source = SOURCES["librarything"]
    assert source.url is None and source.archive_sha256 is None
    assert source.files == {"reviews.txt": ()}
    (tmp_path / "mirror").mkdir()
    with pytest.raises(DatasetError) as err:
        fetch_dataset("librarything", tmp_path / "raw", mirror=tmp_path / "mirror")
    text = str(err.value)
    assert text.startswith("librarything: no local copy found. LibraryThing is not downloaded")
    assert "lthing_data.tar.gz" in text and "<mirror>/librarything/" in text
    assert "reviews.txt" in text and "\n" not in text
    assert not (tmp_path / "raw").exists()


def test_fetch_from_mirror_and_from_archive(tmp_path, monkeypatch):
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    mirror = tmp_path / "mirror"
    _write(mirror / "librarything", (FIXTURE / "reviews.txt").read_text().splitlines())
    got = fetch_dataset("librarything", tmp_path / "a", mirror=mirror)
    assert len(load_raw("librarything", got).mnar) == 26
    archive = tmp_path / "lthing_data.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(FIXTURE / "reviews.txt", arcname="lthing_data/reviews.txt")
    got = fetch_dataset("librarything", tmp_path / "b", path=archive)
    assert (got / "reviews.txt").read_bytes() == (FIXTURE / "reviews.txt").read_bytes()


# --------------------------------------------------------------------------- E2


def test_e2_split_on_the_fixture():
    interactions, _, _ = build_interactions(load_librarything(FIXTURE))
    full = validate_config(
        {"e2": {"datasets": ["librarything"], "user_filter": {"librarything": {"min_ratings": 4}}}},
        "e2",
    )
    block = full["e2"]
    assert block["datasets"] == ["librarything"]
    step = e2.E2Split.of(full, "librarything")
    assert step.user_filter == block["user_filter"]["librarything"]
    split, active = e2.split_step(interactions, step, dataset="librarything", seed=0)
    counts = interactions.groupby("user").size()
    # alice, carol, erin, frank and gwen have 4 ratings; bob and dave_99 have 3
    assert len(split) == counts[counts >= 4].sum() == 20
    assert set(split["part"]) == {"known", "hidden_pool", "test_pool"}
    assert (split["part"] == "known").sum() >= len(split) // 2
    assert len(active) >= 1 and active["user"].isin(split["user"]).all()
    assert set(split["rating"].tolist()) & {0.5, 1.5, 4.5}


def test_paper_config_filters_librarything_as_the_paper():
    import yaml

    paper = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())
    block = validate_config(paper, "e2")["e2"]
    assert block["user_filter"]["librarything"] == {"min_ratings": 100, "max_ratings": 500}
    assert "librarything" not in block["datasets"]  # the file is obtained by hand
    default = validate_config({}, "e2")["e2"]["user_filter"]
    assert default["librarything"] == {"min_ratings": 100, "max_ratings": 500}


@pytest.mark.slow
def test_e2_runs_on_a_librarything_file(tmp_path, monkeypatch):
    """run_e2 by name: the file is fetched from sources.librarything.path and loaded."""
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    rng = np.random.default_rng(0)
    lines = ["reviews = {}"]
    for u in range(60):
        for w in np.flatnonzero(rng.random(50) < 0.25 + 0.5 * (np.arange(50) < 10)):
            stars = float(rng.integers(1, 11)) / 2 if rng.random() < 0.9 else None
            lines.append(_line(str(1000 + w), f"user{u}", stars))
    folder = _write(tmp_path / "mine", lines)
    monkeypatch.chdir(tmp_path)
    config = {
        "sources": {"librarything": {"path": str(folder)}},
        "e2": {
            "datasets": ["librarything"],
            "seeds": 1,
            "n_asked": 5,
            "strategies": ["RND", "POP"],
            "user_filter": {"librarything": {"min_ratings": 10, "max_ratings": 40}},
            "mf": {"algorithm": "mf", "grid": {"factors": [4]}},
            "tuning": {"early_stopping": None},
        },
    }
    monkeypatch.setenv("DEBIASEVAL_DATA", str(tmp_path / "cache"))
    out = api.run_e2("librarything", config)
    assert (tmp_path / "cache" / "librarything" / "reviews.txt").is_file()
    assert not (tmp_path / "resources").exists()
    elicited = out["elicited"]
    assert set(elicited["strategy"]) == {"RND", "POP"} and (elicited["n_seeds"] == 1).all()
    assert set(out["summary"]["method"]) == {"CLASSIC", "INT_T", "INT_HT"}
    assert (elicited["mean"] > 0).any()
