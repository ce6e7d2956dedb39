"""A user's own rating log as a dataset (docs/own-data.md): loader, config checks,
the experiments' part checks and the dataset's positive threshold, the whole workflow on the
CSV fixture tests/data/mylog/ (string ids), and Coat exported as such a CSV."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from debiaseval import api
from debiaseval.data import DATA_ENV, DATASET_NAMES, DatasetError, dropped_warnings
from debiaseval.data.catalog import positive_threshold_of
from debiaseval.data.user_logs import load_user_log, missing_file
from debiaseval.experiments import e1, e4
from debiaseval.io.errors import ConfigError
from debiaseval.workflow.config import validate_config

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "mylog"
OWN_CONFIG = ROOT / "tests" / "configs" / "own_data.yaml"
COLUMNS = {"user": "uid", "item": "iid", "rating": "stars"}


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _spec(ratings: str, **extra) -> dict:
    return {"ratings": ratings, "columns": dict(COLUMNS), **extra}


def _load(spec: dict, name: str = "mylog"):
    return api.load_dataset(name, config={"sources": {name: spec}})


# --------------------------------------------------------------------------- loader


def test_hand_computed_log_with_a_mar_part(tmp_path):
    """Every rating of both files is kept, re-indexed in raw-id order; E1 alone keeps the users
    and items of both parts [SAC20], re-indexed again."""
    ratings = _write(tmp_path / "r.csv", "uid,iid,stars\nb,x,4\na,y,2\nc,x,5\na,x,1\n")
    mar = _write(tmp_path / "m.csv", "uid,iid,stars\na,x,3\nb,z,4\nd,x,2\nb,x,5\n")
    interactions, users, items = _load(_spec(ratings, mar=mar))
    expected = pd.DataFrame(
        {
            "user": np.array([0, 0, 1, 2, 0, 1, 1, 3], dtype=np.int32),
            "item": np.array([0, 1, 0, 0, 0, 0, 2, 0], dtype=np.int32),
            "rating": np.array([1, 2, 4, 5, 3, 5, 4, 2], dtype=np.float32),
            "part": ["mnar"] * 4 + ["mar"] * 4,
        }
    )
    pd.testing.assert_frame_equal(interactions, expected, check_dtype=False)
    assert interactions[["user", "item"]].dtypes.tolist() == [np.int32, np.int32]
    assert users["raw_user"].tolist() == ["a", "b", "c", "d"]
    assert items["raw_item"].tolist() == ["x", "y", "z"]

    kept = e1.data_step(interactions, users, items, step=e1.E1Data(True), dataset="mylog")
    expected = pd.DataFrame(
        {
            "user": np.array([0, 1, 0, 1], dtype=np.int32),
            "item": np.zeros(4, dtype=np.int32),
            "rating": np.array([1, 4, 3, 5], dtype=np.float32),
            "part": ["mnar", "mnar", "mar", "mar"],
        }
    )
    pd.testing.assert_frame_equal(kept.interactions, expected, check_dtype=False)
    assert kept.users["raw_user"].tolist() == ["a", "b"]
    assert kept.items["raw_item"].tolist() == ["x"]
    # MNAR loses user c and item y with their 2 ratings; MAR user d and item z, 2 ratings.
    assert kept.dropped[["part", "users_dropped", "items_dropped", "ratings_dropped"]].to_dict(
        "list"
    ) == {
        "part": ["mnar", "mar"],
        "users_dropped": [1, 1],
        "items_dropped": [1, 1],
        "ratings_dropped": [2, 2],
    }


def test_a_small_mar_file_cuts_nothing_but_e1(tmp_path):
    """A large log with a 20-row MAR file: the dataset, and so E2, E4, E5 and E6, keep every
    logged rating; E1's filter drops what its protocol asks, reports it per part and warns
    that it took more than half of the log."""
    rng = np.random.default_rng(0)
    pairs = rng.choice(400 * 300, size=20_000, replace=False)
    log = pd.DataFrame(
        {"uid": pairs // 300, "iid": pairs % 300, "stars": rng.integers(1, 6, size=len(pairs))}
    )
    ratings = tmp_path / "r.csv"
    log.to_csv(ratings, index=False)
    mar = log.iloc[:20].assign(stars=3)  # 20 random pairs of 20 users (any 20 rows would do)
    mar.to_csv(tmp_path / "m.csv", index=False)
    interactions, users, items = _load(_spec(str(ratings), mar=str(tmp_path / "m.csv")))
    parts = interactions["part"].value_counts().to_dict()
    assert parts == {"mnar": 20_000, "mar": 20}
    assert len(users) == log["uid"].nunique() and len(items) == log["iid"].nunique()

    kept = e1.data_step(interactions, users, items, step=e1.E1Data(True), dataset="mylog")
    common_users = set(mar["uid"]) & set(log["uid"])
    common_items = set(mar["iid"]) & set(log["iid"])
    in_both = log["uid"].isin(common_users) & log["iid"].isin(common_items)
    report = kept.dropped.set_index("part")
    assert report.loc["mnar", "ratings"] == 20_000
    assert report.loc["mnar", "ratings_dropped"] == 20_000 - in_both.sum() > 19_000
    assert report.loc["mnar", "users_dropped"] == log["uid"].nunique() - len(common_users)
    assert report.loc["mar", "ratings_dropped"] == 0
    assert (kept.interactions["part"] == "mnar").sum() == in_both.sum() == 88  # docs/own-data.md
    (warning,) = dropped_warnings(kept.dropped)
    assert warning.startswith(f"filter common_users_items drops {20_000 - in_both.sum():,} of")
    assert "of part mnar" in warning
    text = e1.dropped_text(kept.dropped, "mylog")
    assert "| common_users_items | mnar |" in text and "Warning: filter common_users_items" in text
    # Without the filter, E1 takes every rating and reports nothing dropped.
    every = e1.data_step(interactions, users, items, step=e1.E1Data(False), dataset="mylog")
    assert len(every.interactions) == 20_020 and (every.dropped["ratings_dropped"] == 0).all()
    assert dropped_warnings(every.dropped) == []


def test_disjoint_files_are_a_dataset_but_give_e1_nothing(tmp_path):
    ratings = _write(tmp_path / "r.csv", "uid,iid,stars\na,x,4\n")
    mar = _write(tmp_path / "m.csv", "uid,iid,stars\nz,q,4\n")
    interactions, users, items = _load(_spec(ratings, mar=mar))
    assert interactions["part"].tolist() == ["mnar", "mar"]
    with pytest.raises(
        DatasetError,
        match=r"^E1 on mylog is empty after filter common_users_items: no mnar/mar interactions",
    ):
        e1.data_step(interactions, users, items, step=e1.E1Data(True), dataset="mylog")


def test_fixture_round_trips_through_the_raw_ids():
    spec = {**_spec(str(FIXTURE / "ratings.csv")), "columns": {**COLUMNS, "timestamp": "ts"}}
    interactions, users, items = _load(spec)
    log = pd.read_csv(FIXTURE / "ratings.csv", dtype=str)
    assert len(interactions) == len(log) == 346
    back = pd.DataFrame(
        {
            "uid": users["raw_user"].to_numpy()[interactions["user"]],
            "iid": items["raw_item"].to_numpy()[interactions["item"]],
            "stars": interactions["rating"].astype(int).astype(str).to_numpy(),
            "ts": pd.to_datetime(interactions["timestamp"], unit="s").dt.strftime(
                "%Y-%m-%d %H:%M:%S"
            ),
        }
    )
    key = ["uid", "iid"]
    pd.testing.assert_frame_equal(
        back.sort_values(key, ignore_index=True),
        log.sort_values(key, ignore_index=True),
        check_dtype=False,
    )
    # item ids mix "tt0123456" and "4711": the column is read as strings, sorted as strings
    assert items["raw_item"].tolist() == sorted(items["raw_item"])
    assert any(i.isdigit() for i in items["raw_item"]) and any(
        i[:2] == "tt" for i in items["raw_item"]
    )


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        (["10", "9", "100"], [9, 10, 100]),  # integers: int64, numeric order
        (["-3", "0", "2"], [-3, 0, 2]),
        (["7", "u7", "10"], ["10", "7", "u7"]),  # mixed: every id a string
        (["007", "7", "8"], ["007", "7", "8"]),  # a leading zero is not an integer's spelling
    ],
)
def test_id_columns_are_integers_only_when_every_id_is(tmp_path, ids, expected):
    lines = [f"{u},i{k},4" for k, u in enumerate(ids)]
    ratings = _write(tmp_path / "r.csv", "uid,iid,stars\n" + "\n".join(lines) + "\n")
    _, users, _ = _load(_spec(ratings))
    assert users["raw_user"].tolist() == expected
    kind = "i" if isinstance(expected[0], int) else "O"
    assert users["raw_user"].to_numpy().dtype.kind == kind


def test_parquet_gives_the_csv_frames(tmp_path):
    csv = _write(tmp_path / "r.csv", "uid;iid;stars\n3;10;4\n1;10;2\n3;11;5\n")
    frame = pd.DataFrame({"uid": [3, 1, 3], "iid": [10, 10, 11], "stars": [4.0, 2.0, 5.0]})
    parquet = tmp_path / "r.parquet"
    frame.to_parquet(parquet)
    from_csv, from_parquet = _load(_spec(csv)), _load(_spec(str(parquet)))
    for a, b in zip(from_csv, from_parquet, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert from_csv[1]["raw_user"].tolist() == [1, 3]


@pytest.mark.parametrize(
    ("header_sep", "sep"), [("\t", None), ("|", None), (";", None), ("::", "::"), ("||", "||")]
)
def test_delimiters(tmp_path, header_sep, sep):
    rows = [["uid", "iid", "stars"], ["a", "x", "4"], ["b", "x", "1"]]
    text = "\n".join(header_sep.join(r) for r in rows) + "\n"
    interactions, _, _ = _load(_spec(_write(tmp_path / "r.txt", text), sep=sep))
    assert interactions["rating"].tolist() == [4.0, 1.0]


def test_spaces_quotes_and_other_columns(tmp_path):
    text = 'note, uid , iid,stars\n"a, b", u1 , x,4\n"c",u2,"y, z", 5 \n'
    interactions, users, items = _load(_spec(_write(tmp_path / "r.csv", text)))
    assert users["raw_user"].tolist() == ["u1", "u2"]
    assert items["raw_item"].tolist() == ["x", "y, z"]
    assert interactions["rating"].tolist() == [4.0, 5.0]


def test_timestamps_integer_or_iso(tmp_path):
    text = "uid,iid,stars,ts\na,x,4,2021-01-01\na,y,4,2021-01-01T01:00:00+01:00\n"
    text += "b,x,3,2021-01-02 00:00:05\n"
    spec = {**_spec(_write(tmp_path / "r.csv", text)), "columns": {**COLUMNS, "timestamp": "ts"}}
    interactions, _, _ = _load(spec)
    day = 1609459200  # 2021-01-01T00:00:00Z
    assert interactions["timestamp"].tolist() == [day, day, day + 86405]
    _write(tmp_path / "r.csv", "uid,iid,stars,ts\na,x,4,17\nb,x,3,5\n")
    assert _load(spec)[0]["timestamp"].tolist() == [17, 5]


def test_duplicates_last_keeps_the_latest_rating(tmp_path):
    text = "uid,iid,stars,ts\na,x,1,30\na,x,5,10\nb,x,2,7\na,x,3,30\n"
    spec = {
        **_spec(_write(tmp_path / "r.csv", text)),
        "columns": {**COLUMNS, "timestamp": "ts"},
        "duplicates": "last",
    }
    interactions, _, _ = _load(spec)
    assert interactions[["user", "rating", "timestamp"]].values.tolist() == [[0, 3, 30], [1, 2, 7]]


def test_propensity_column_gives_e4_provided_propensities(tmp_path):
    ratings = _write(tmp_path / "r.csv", "uid,iid,stars,p\na,x,4,0.5\nb,y,2,0.25\nb,x,1,1\n")
    mar = _write(tmp_path / "m.csv", "uid,iid,stars\na,y,3\nb,x,5\na,x,2\n")
    spec = {**_spec(ratings, mar=mar), "columns": {**COLUMNS, "propensity": "p"}}
    raw = load_user_log("mylog", spec)
    assert raw.propensities["propensity"].tolist() == [0.5, 0.25, 1.0]
    config = {"sources": {"mylog": spec}, "e4": {"propensities": {"mylog": ["provided"]}}}
    data = api.learning_data("mylog", *_load(spec))
    assert data.mnar["propensity"].tolist() == [0.5, 1.0, 0.25]  # sorted by user, item
    block = validate_config(config, "e4")["e4"]
    pairs = e4.prepare(data, e4.E4Propensities.of({"e4": block}, data.name), 0)
    train = pairs[pairs["part"] == "train"]
    assert train["propensity_provided"].tolist() == [0.5, 1.0, 0.25]


@pytest.mark.parametrize(
    ("ratings", "extra", "message"),
    [
        (None, {}, r"nope\.csv: file not found \(expected the ratings file\)"),
        (
            "uid,iid,rating\na,x,4\n",
            {},
            r"r\.csv: missing column 'stars' \(sources\.mylog\.columns\.rating\); "
            r"the file has 'uid', 'iid', 'rating'",
        ),
        (
            "uid,iid,stars\na,x,4\nb,x,good\n",
            {},
            r"r\.csv: line 3: expected a numeric rating in "
            r"column 'stars', got 'good'",
        ),
        ("uid,iid,stars\na,x,4\nb,x,\n", {}, r"line 3: expected a numeric rating .*got ''"),
        ("uid,iid,stars\na,x,NaN\n", {}, r"line 2: expected a numeric rating .*got 'NaN'"),
        (
            "uid,iid,stars\na,x,4\nb,x,3.0000001\n",
            {},
            r"line 3: expected a rating that float32, the type ratings are stored in, keeps on "
            r"its side of the positive_threshold 3 in column 'stars' \(round it\), got 3\.0000001",
        ),
        (
            "uid,iid,stars\na,x,4\nb,x,-1e39\n",
            {},
            r"line 3: expected a rating of at most 3\.403e\+38 in absolute value \(ratings are "
            r"stored as float32\) in column 'stars', got -1e\+39",
        ),
        ("uid,iid,stars\na,x,4\n,y,4\n", {}, r"line 3: expected a user id in column 'uid'"),
        (
            "uid,iid,stars\na,x,4\n\nb,x,6\n",
            {"rating_scale": [1, 5]},
            r"line 4: expected a rating in \[1, 5\] \(rating_scale\) in column 'stars', got 6",
        ),
        (
            "uid,iid,stars\na,x,4\nb,x,3\na,x,5\n",
            {},
            r"line 4: duplicate \(user, item\) pair \('a', 'x'\) first seen on line 2",
        ),
        ("uid,iid,stars\n", {}, r"r\.csv: no ratings"),
        ("", {}, r"r\.csv: line 1: empty, expected a header row"),
        (
            "uid,iid,stars\na,x,4,9\n",
            {},
            r"r\.csv: .*Expected 3 fields|r\.csv: .*more fields|"
            r"r\.csv: .*Length of header",
        ),
        (
            "uid iid stars\na x 4\n",
            {},
            r"line 1: cannot tell the delimiter .*set the dataset's sep",
        ),
    ],
)
def test_bad_files_fail_with_one_line(tmp_path, ratings, extra, message):
    path = tmp_path / "nope.csv" if ratings is None else Path(_write(tmp_path / "r.csv", ratings))
    with pytest.raises(DatasetError, match=message) as info:
        _load(_spec(str(path), **extra))
    assert "\n" not in str(info.value)


def test_a_directory_given_as_the_ratings_file_is_named_as_one(tmp_path):
    (tmp_path / "r.csv").mkdir()
    with pytest.raises(DatasetError, match=r"r\.csv: is a directory \(expected the ratings file\)"):
        _load(_spec(str(tmp_path / "r.csv")))
    assert missing_file("mylog", _spec(str(tmp_path / "r.csv"))) == (
        f"config error at 'sources.mylog.ratings': {tmp_path / 'r.csv'} is a directory; expected "
        "the ratings file itself (a .csv, .tsv, .txt or .parquet file)"
    )


def test_bad_parquet_values(tmp_path):
    path = tmp_path / "r.parquet"
    pd.DataFrame({"uid": [1.0, 2.0], "iid": [1, 2], "stars": [4.0, 3.0]}).to_parquet(path)
    with pytest.raises(DatasetError, match=r"column 'uid' holds float64 values"):
        _load(_spec(str(path)))
    pd.DataFrame({"uid": [1, 2], "iid": [1, 2], "stars": [4.0, np.nan]}).to_parquet(path)
    with pytest.raises(DatasetError, match=r"r\.parquet: row 2: expected a numeric rating"):
        _load(_spec(str(path)))
    path.write_text("not parquet")
    with pytest.raises(DatasetError, match=r"r\.parquet: not a readable Parquet file"):
        _load(_spec(str(path)))


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"sources": {"coat": _spec("r.csv")}}, r"'sources\.coat': 'coat' is a built-in dataset"),
        ({"sources": {"synthetic": _spec("r.csv")}}, r"'sources\.synthetic': 'synthetic' is a "),
        ({"sources": {"my log": _spec("r.csv")}}, r"'sources\.my log': invalid dataset name"),
        ({"sources": {"mylog": _spec("r.json")}}, r"'sources\.mylog\.ratings': 'r\.json' is not"),
        ({"sources": {"mylog": _spec("r.csv", mar="m.xlsx")}}, r"'sources\.mylog\.mar'"),
        (
            {"sources": {"mylog": {"ratings": "r.csv"}}},
            r"'sources\.mylog': 'columns' is a required",
        ),
        (
            {"sources": {"mylog": {**_spec("r.csv"), "columns": {"user": "u", "item": "i"}}}},
            r"'sources\.mylog\.columns': 'rating' is a required property",
        ),
        (
            {"sources": {"mylog": _spec("r.csv", delimiter=",")}},
            r"'sources\.mylog\.delimiter': unknown key",
        ),
        ({"sources": {"mylog": _spec("r.csv", rating_scale=[5, 1])}}, r"lo < hi, got \[5, 1\]"),
        (
            {"sources": {"mylog": _spec("r.csv", rating_scale=[1, 5], positive_threshold=5)}},
            r"'sources\.mylog\.positive_threshold': 5 leaves no rating",
        ),
        (
            {"sources": {"mylog": _spec("r.csv", duplicates="last")}},
            r"'sources\.mylog\.duplicates': 'last' .* map columns\.timestamp",
        ),
        (
            {"datasets": ["mylogg"], "sources": {"mylog": _spec("r.csv")}},
            r"'datasets\.0': unknown dataset 'mylogg'; known: .*, mylog \(declare your own under "
            r"sources\.mylogg\)",
        ),
        (
            {
                "datasets": ["mylog"],
                "e1": {"datasets": ["mylog"]},
                "sources": {"mylog": _spec("r.csv")},
            },
            r"'e1\.datasets\.0': E1 cannot run on 'mylog', which lacks a MAR part \(set "
            r"sources\.mylog\.mar to a randomly sampled log\); E1 needs an MNAR part and a MAR "
            r"part$",
        ),
        (
            {"e6": {"datasets": ["mylog"]}, "sources": {"mylog": _spec("r.csv")}},
            r"'e6\.datasets\.0': E6 cannot run on 'mylog', which lacks timestamps \(map "
            r"sources\.mylog\.columns\.timestamp\)",
        ),
        (
            {"e3": {"datasets": ["mylog"]}, "sources": {"mylog": _spec("r.csv", mar="m.csv")}},
            r"E3 cannot run on 'mylog', which lacks a full rating matrix with its observation",
        ),
        (
            {"e4": {"datasets": ["mylog"]}, "sources": {"mylog": _spec("r.csv")}},
            r"E4 cannot run on 'mylog', which lacks a MAR part",
        ),
        (
            {"e5": {"datasets": ["mylog"]}, "sources": {"mylog": _spec("r.csv")}},
            r"E5 cannot run on 'mylog', which lacks a MAR part .*or fully exposed data",
        ),
        (
            {
                "e4": {"propensities": {"mylog": ["provided"]}},
                "sources": {"mylog": _spec("r.csv", mar="m.csv")},
            },
            r"'e4\.propensities\.mylog\.0': mylog has no 'provided' propensities \(available: "
            r"naive_bayes\); it lacks propensities \(map sources\.mylog\.columns\.propensity\)",
        ),
        (
            {"e4": {"propensities": {"nope": ["known"]}}},
            r"'e4\.propensities\.nope': unknown dataset",
        ),
    ],
)
def test_config_errors(config, message):
    with pytest.raises(ConfigError, match=message) as info:
        validate_config(config)
    assert "\n" not in str(info.value)


def test_null_datasets_pick_the_experiments_that_can_run():
    sources = {
        "withmar": _spec("r.csv", mar="m.csv"),
        "timed": {**_spec("r.csv"), "columns": {**COLUMNS, "timestamp": "t"}},
        "plain": _spec("r.csv"),
    }
    config = validate_config({"datasets": ["plain", "timed", "withmar"], "sources": sources})
    got = {name: config[name]["datasets"] for name in config["experiments"]}
    assert got == {
        "e1": ["withmar"],
        "e2": ["plain", "timed", "withmar"],
        "e3": [],
        "e4": ["withmar"],
        "e5": ["withmar"],
        "e6": ["timed"],
    }


def test_built_in_datasets_keep_their_experiments():
    """The parts the built-ins declare select exactly the datasets each experiment ran on."""
    before = {
        "e1": ["synthetic", "coat", "yahoo-r3", "jester5k-semi"],
        "e2": [
            "synthetic",
            "coat",
            "yahoo-r3",
            "ml-100k",
            "ml-1m",
            "librarything",
            "jester5k",
            "jester5k-semi",
        ],
        "e3": ["synthetic", "ml-100k-semi"],
        "e4": ["synthetic", "ml-100k-semi", "coat", "yahoo-r3", "jester5k-semi"],
        "e5": ["synthetic", "yahoo-r3", "coat", "jester5k-semi", "jester5k"],  # the block
        "e6": ["synthetic", "ml-100k", "ml-1m"],
    }
    config = validate_config({"datasets": list(DATASET_NAMES)})
    for name, datasets in before.items():
        assert sorted(config[name]["datasets"]) == sorted(datasets), name


def test_positive_threshold_convention():
    sources = {"mylog": _spec("r.csv", positive_threshold=7.5), "other": _spec("r.csv")}
    assert positive_threshold_of("mylog", None, sources) == 7.5
    assert positive_threshold_of("mylog", 2.0, sources) == 2.0
    assert positive_threshold_of("other", None, sources) == 3.0
    assert positive_threshold_of("coat", None, sources) == 3.0
    assert positive_threshold_of("kuairec", None) == 2.0
    defaults = validate_config({})
    assert defaults["e1"]["positive_threshold"] is None  # the dataset's: 3 on every built-in
    assert defaults["e2"]["positive_threshold"] is None


@pytest.mark.slow
def test_the_dataset_threshold_reaches_e1(tmp_path, monkeypatch):
    """e1.positive_threshold null takes sources.<name>.positive_threshold: the same results as
    setting e1's to that value, other than with the default 3."""
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURE, tmp_path / "mylog")
    own = yaml.safe_load(OWN_CONFIG.read_text())["sources"]["mylog"]
    e1 = {"recommenders": {"PosPop": {"algorithm": "pospop"}}, "ks": [10], "seeds": 1}

    def summary(threshold_of_dataset, threshold_of_e1):
        spec = {**own, "positive_threshold": threshold_of_dataset}
        config = {"sources": {"mylog": spec}, "e1": {**e1, "positive_threshold": threshold_of_e1}}
        return api.run_e1("mylog", config)["summary"]

    by_dataset = summary(4.0, None)
    pd.testing.assert_frame_equal(by_dataset, summary(None, 4.0))
    assert not by_dataset.equals(summary(None, None))
    assert (
        "positive = rating > 4.0"
        in api.run_e1(
            "mylog", {"sources": {"mylog": {**own, "positive_threshold": 4.0}}, "e1": e1}
        )["summary_md"]
    )


def _docs_section() -> str:
    """docs/own-data.md: its config is the first YAML block, its API example the first Python."""
    return (ROOT / "docs" / "own-data.md").read_text()


def test_readme_example_runs_as_written(monkeypatch):
    """The own-data page's config validates and loads; its Python example runs."""
    section = _docs_section()
    monkeypatch.chdir(ROOT)
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    full = validate_config(config)
    assert {e: full[e]["datasets"] for e in full["experiments"]} == {
        "e1": ["mylog"],
        "e2": ["mylog"],
        "e3": [],
        "e4": ["mylog"],
        "e5": ["mylog"],
        "e6": ["mylog"],
    }
    interactions, _, _ = api.load_dataset("mylog", config=config)
    assert interactions["part"].value_counts().to_dict() == {"mnar": 346, "mar": 500}
    namespace: dict = {}
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/own-data.md", "exec"), namespace)
    assert namespace["users"]["raw_user"].head(3).tolist() == ["user-104", "user-132", "user-139"]
    assert set(namespace["out"]["summary"]["recommender"]) == {"PosPop", "ItemKNN"}


# --------------------------------------------------------------------------- workflow


@pytest.fixture(scope="module")
def own_run(tmp_path_factory) -> Path:
    """tests/configs/own_data.yaml run on the fixture: E1, E4, E5 on mylog; E2, E6 on mylog_mnar."""
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path_factory.mktemp("own"))
    shutil.copytree(FIXTURE, workdir / "mylog")
    shutil.copy(OWN_CONFIG, workdir / "own_data.yaml")
    snakemake(workdir, "--cores", "2", configfiles=("own_data.yaml",))
    return workdir


@pytest.mark.slow
def test_workflow_runs_every_experiment_that_can(own_run):
    results = own_run / "results/own_data"
    assert sorted(p.name for p in (results / "data").iterdir()) == ["mylog", "mylog_mnar"]
    ran = {e: sorted(p.name for p in (results / e).iterdir()) for e in ("e1", "e2", "e4", "e5")}
    assert ran == {"e1": ["mylog"], "e2": ["mylog_mnar"], "e4": ["mylog"], "e5": ["mylog"]}
    assert sorted(p.name for p in (results / "e6").iterdir()) == ["mylog_mnar"]
    users = pd.read_parquet(results / "data/mylog/users.parquet")
    assert users["raw_user"].str.startswith("user-").all() and users["user"].is_monotonic_increasing
    summary = pd.read_parquet(results / "e1/mylog/summary.parquet")
    assert set(summary["recommender"]) == {"Random", "PosPop", "ItemKNN", "MF"}
    assert summary["mean"].notna().all()
    e4 = pd.read_parquet(results / "e4/mylog/summary.parquet")
    assert set(e4["propensity"]) == {"none", "naive_bayes"}
    scores = pd.read_parquet(results / "e6/mylog_mnar/scores.parquet")
    assert scores["t"].nunique() == 5


@pytest.mark.slow
def test_workflow_and_api_agree_on_own_data(own_run, tmp_path, monkeypatch):
    """E1 and E2 by name through the API (files read from the config) give the workflow's bytes;
    E2 runs on mylog_mnar with its own positive_threshold 2.5, not the default 3."""
    from snakemake.utils import update_config

    from debiaseval.workflow.provenance import read_provenance, write_table

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())  # as Snakemake merges
    update_config(config, yaml.safe_load(OWN_CONFIG.read_text()))
    monkeypatch.chdir(own_run)
    for experiment, dataset, stems in (
        ("e1", "mylog", ("summary", "kendall", "testsets")),
        ("e2", "mylog_mnar", ("summary", "elicited", "wilcoxon")),
    ):
        out = getattr(api, f"run_{experiment}")(dataset, config)
        for stem in stems:
            written = own_run / f"results/own_data/{experiment}/{dataset}/{stem}.parquet"
            record = read_provenance(written)  # the workflow's, to compare bytes
            write_table(out[stem], tmp_path / f"{stem}.parquet", record)
            assert (tmp_path / f"{stem}.parquet").read_bytes() == written.read_bytes(), stem
    at_3 = api.run_e2("mylog_mnar", {**config, "e2": {**config["e2"], "positive_threshold": 3}})
    assert not at_3["summary"].equals(out["summary"])


@pytest.mark.slow
def test_editing_a_file_reruns_its_dataset_only(own_run):
    from conftest import snakemake

    dry_run = ("-n", "--cores", "1")
    assert (
        "Nothing to be done" in snakemake(own_run, *dry_run, configfiles=("own_data.yaml",)).stdout
    )
    mar = own_run / "mylog" / "random.tsv"
    original = mar.read_text()
    lines = original.splitlines()
    fields = lines[1].split("\t")
    fields[2] = "5" if fields[2] != "5" else "4"
    mar.write_text("\n".join([lines[0], "\t".join(fields), *lines[2:]]) + "\n")
    try:
        planned = snakemake(own_run, *dry_run, configfiles=("own_data.yaml",)).stdout
    finally:
        mar.write_text(original)
    assert "rule preprocess:" in planned and re.search(r"dataset=mylog\b(?!_)", planned)
    assert "dataset=mylog_mnar" not in planned


@pytest.mark.slow
def test_bad_file_fails_with_one_line_and_writes_nothing(tmp_path):
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path / "bad")
    shutil.copytree(FIXTURE, workdir / "mylog")
    shutil.copy(OWN_CONFIG, workdir / "own_data.yaml")
    ratings = workdir / "mylog" / "ratings.csv"
    lines = ratings.read_text().splitlines()
    lines[5] = lines[5].rsplit(",", 2)[0] + ",five," + lines[5].rsplit(",", 1)[1]
    ratings.write_text("\n".join(lines) + "\n")
    target = "results/own_data/data/mylog_mnar/interactions.parquet"
    result = snakemake(workdir, "--cores", "1", target, configfiles=("own_data.yaml",), check=False)
    assert result.returncode != 0
    assert (
        "DatasetError: mylog/ratings.csv: line 6: expected a numeric rating in column 'stars', "
        "got 'five' (traceback in logs/own_data/data/mylog_mnar/preprocess.log)"
    ) in result.stderr
    assert not list((workdir / "results").rglob("*.parquet"))
    ratings.unlink()
    result = snakemake(workdir, "--cores", "1", configfiles=("own_data.yaml",), check=False)
    assert result.returncode != 0
    assert "config error at 'sources.mylog.ratings': file not found: mylog/ratings.csv" in (
        result.stdout + result.stderr
    )


# --------------------------------------------------------------------------- real data


def _coat() -> pd.DataFrame:
    """Coat's interactions (fetched from the mirror into the API's cache, $DEBIASEVAL_DATA),
    with the propensities of its MNAR pairs only (on the MAR rows too): what an exported
    ratings file carries."""
    mirror = os.environ.get("DEBIASEVAL_MIRROR", "").strip()
    if not mirror or not (Path(mirror) / "coat").is_dir():
        pytest.skip("DEBIASEVAL_MIRROR not set or without coat")
    coat = api.load_dataset("coat", config={"mirror": mirror})[0]
    pair = coat["user"].astype(np.int64) * 300 + coat["item"]
    logged = pair.isin(pair[coat["part"] == "mnar"])
    return coat.assign(propensity=coat["propensity"].where(logged))


def _export(interactions: pd.DataFrame, folder: Path, user_ids, item_ids) -> dict:
    """Coat's parts as CSV files with the given string ids (and the provided propensities)."""
    folder.mkdir()
    frame = pd.DataFrame(
        {
            "uid": np.asarray(user_ids)[interactions["user"]],
            "iid": np.asarray(item_ids)[interactions["item"]],
            "stars": interactions["rating"].astype(int),
            "p": interactions["propensity"],
            "part": interactions["part"],
        }
    ).sample(frac=1.0, random_state=0)  # any row order
    mnar, mar = frame[frame["part"] == "mnar"], frame[frame["part"] == "mar"]
    mnar.drop(columns="part").to_csv(folder / "train.csv", index=False)
    mar.drop(columns=["part", "p"]).to_csv(folder / "test.csv", index=False)
    return {
        "ratings": str(folder / "train.csv"),
        "mar": str(folder / "test.csv"),
        "columns": {**COLUMNS, "propensity": "p"},
        "rating_scale": [1, 5],
    }


@pytest.mark.realdata
def test_coat_as_a_csv_with_shuffled_string_ids(tmp_path, monkeypatch):
    """Coat exported with string ids in another order: the same ratings, parts and propensities
    once mapped back through users.parquet / items.parquet."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "cache"))
    coat = _coat()
    rng = np.random.default_rng(0)
    user_ids = [f"shopper-{k}" for k in rng.permutation(290)]
    item_ids = [f"coat:{k}" for k in rng.permutation(300)]
    spec = _export(coat, tmp_path / "export", user_ids, item_ids)
    own, users, items = _load(spec, "coatcsv")
    assert own["part"].value_counts().to_dict() == {"mnar": 6960, "mar": 4640}
    back = own.assign(
        user=pd.Series(user_ids)
        .reset_index()
        .set_index(0)
        .loc[users["raw_user"], "index"]
        .to_numpy()[own["user"]],
        item=pd.Series(item_ids)
        .reset_index()
        .set_index(0)
        .loc[items["raw_item"], "index"]
        .to_numpy()[own["item"]],
    )
    cols = ["part", "user", "item", "rating", "propensity"]
    pd.testing.assert_frame_equal(
        back[cols].sort_values(cols[:3], ignore_index=True),
        coat[cols].sort_values(cols[:3], ignore_index=True),
        check_dtype=False,
    )


@pytest.mark.realdata
@pytest.mark.slow
def test_coat_as_a_csv_gives_coats_e1_summary(tmp_path, monkeypatch):
    """With string ids in Coat's own order, the interactions are Coat's; E1 under the name
    "coat" (the name seeds the random streams) gives the built-in summary exactly."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "cache"))
    coat = _coat()
    spec = _export(
        coat,
        tmp_path / "export",
        [f"u{k:03d}" for k in range(290)],
        [f"i{k:03d}" for k in range(300)],
    )
    own, _, _ = _load(spec, "coatcsv")
    pd.testing.assert_frame_equal(own, coat, check_dtype=False)
    config = {
        "mirror": os.environ["DEBIASEVAL_MIRROR"],
        "sources": {"coatcsv": spec},
        "e1": {
            "recommenders": {
                "PosPop": {"algorithm": "pospop"},
                "ItemKNN": {"algorithm": "itemknn", "grid": {"k": [20]}},
            }
        },
    }
    builtin = api.run_e1("coat", config, seeds=1)
    exported = api.run_e1(
        api.load_dataset("coatcsv", config=config)[0], config, seeds=1, dataset="coat"
    )
    for stem in ("summary", "kendall", "testsets"):
        pd.testing.assert_frame_equal(exported[stem], builtin[stem])


# --------------------------------------------------------------------------- MAR without times


def _without_times(tmp_path: Path) -> tuple[dict, dict]:
    """The fixture's sources as own_data.yaml maps them, and the same with a MAR file that has
    no timestamp column (a random-exposure sample rarely has one)."""
    shutil.copytree(FIXTURE, tmp_path / "mylog")
    random = pd.read_csv(tmp_path / "mylog" / "random.tsv", sep="\t").drop(columns="ts")
    random.to_csv(tmp_path / "mylog" / "random_untimed.tsv", sep="\t", index=False)
    own = yaml.safe_load(OWN_CONFIG.read_text())
    timed = {**own["sources"]["mylog"]}
    return timed, {**timed, "mar": "mylog/random_untimed.tsv"}


def test_a_mar_file_may_omit_timestamps(tmp_path, monkeypatch):
    """The MNAR part keeps its times, the MAR part has none (<NA> in a nullable Int64 column);
    every other column is that of the timed files, whose column stays int64 (unchanged)."""
    monkeypatch.chdir(tmp_path)
    timed, untimed = _without_times(tmp_path)
    with_times, _, _ = _load(timed)
    without, _, _ = _load(untimed)
    assert with_times["timestamp"].dtype == np.int64
    assert str(without["timestamp"].dtype) == "Int64"
    mar = (without["part"] == "mar").to_numpy()
    assert without["timestamp"][mar].isna().all() and without["timestamp"][~mar].notna().all()
    assert without["timestamp"][~mar].to_numpy(np.int64).tolist() == (
        with_times["timestamp"][~mar].tolist()
    )
    pd.testing.assert_frame_equal(
        without.drop(columns="timestamp"), with_times.drop(columns="timestamp")
    )
    validate_config({"sources": {"mylog": untimed}, "datasets": ["mylog"]})


@pytest.mark.slow
def test_no_experiment_uses_the_mar_part_s_times(tmp_path, monkeypatch):
    """E1, E4, E5 (which use the MAR part) and E6 (the MNAR part's times) give the same tables
    whether or not the MAR file has timestamps."""
    monkeypatch.chdir(tmp_path)
    timed, untimed = _without_times(tmp_path)
    own = yaml.safe_load(OWN_CONFIG.read_text())
    models = {
        "PosPop": {"algorithm": "pospop"},
        "KNN": {"algorithm": "itemknn", "grid": {"k": [5]}},
    }
    blocks = {
        "e1": {**own["e1"], "recommenders": models},
        "e4": own["e4"],
        "e5": own["e5"],
        "e6": own["e6"] | {"datasets": ["mylog"]},
    }
    for experiment, block in blocks.items():
        outs = [
            api.run(experiment, "mylog", {"sources": {"mylog": spec}, experiment: block}, seeds=1)
            for spec in (timed, untimed)
        ]
        tables = [name for name, value in outs[0].items() if isinstance(value, pd.DataFrame)]
        assert tables, experiment
        for name in tables:
            pd.testing.assert_frame_equal(outs[0][name], outs[1][name], obj=f"{experiment} {name}")


def test_duplicates_last_in_a_mar_file_without_timestamps_is_one_line(tmp_path):
    ratings = _write(tmp_path / "r.csv", "uid,iid,stars,ts\na,x,4,1\nb,x,2,2\n")
    mar = _write(tmp_path / "m.csv", "uid,iid,stars\na,x,3\nb,y,4\na,x,5\n")
    spec = {
        **_spec(ratings, mar=mar),
        "columns": {**COLUMNS, "timestamp": "ts"},
        "duplicates": "last",
    }
    with pytest.raises(DatasetError) as error:
        load_user_log("mylog", spec)
    assert str(error.value) == (
        f"{mar}: line 4: duplicate (user, item) pair ('a', 'x') first seen on line 2; expected "
        "each pair once (duplicates: last picks by timestamp, and the file has no column 'ts')"
    )
    _write(tmp_path / "m.csv", "uid,iid,stars\na,x,3\nb,y,4\n")  # no duplicate: it loads
    assert load_user_log("mylog", spec).mar["rating"].tolist() == [3.0, 4.0]
    _write(tmp_path / "r.csv", "uid,iid,stars\na,x,4\n")  # the ratings file needs its column
    with pytest.raises(
        DatasetError, match=r"missing column 'ts' \(sources.mylog.columns.timestamp\)"
    ):
        load_user_log("mylog", spec)
