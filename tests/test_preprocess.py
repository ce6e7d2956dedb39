"""Preprocessing (every rating kept, re-indexing), E1's common users/items filter and the
user-count filter on hand-made data, with what the filters drop."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from debiaseval.data import (
    DatasetError,
    RawDataset,
    build_interactions,
    common_users_items,
    dropped_warnings,
    filter_users_by_count,
)
from debiaseval.data.filters import users_by_count
from debiaseval.data.splits import filter_users


def _frame(rows: list[tuple[int, int, float]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["user", "item", "rating"])
    return df.astype({"user": np.int64, "item": np.int64, "rating": np.float64})


def _raw() -> RawDataset:
    # MNAR users {10, 20, 30}, items {5, 7, 9}; MAR users {20, 30, 40}, items {7, 9, 11}.
    mnar = _frame([(30, 9, 5), (10, 5, 1), (20, 7, 4), (30, 7, 2), (20, 5, 3)])
    mar = _frame([(40, 7, 1), (30, 9, 3), (20, 11, 2), (20, 9, 5)])
    users = pd.DataFrame({"user": [40, 30, 20, 10], "age": [4, 3, 2, 1]})
    items = pd.DataFrame({"item": [11, 9, 7, 5], "colour": ["k", "b", "g", "r"]})
    props = pd.DataFrame(
        [(u, i, (u + i) / 100) for u in (10, 20, 30, 40) for i in (5, 7, 9, 11)],
        columns=["user", "item", "propensity"],
    )
    return RawDataset(mnar=mnar, mar=mar, users=users, items=items, propensities=props, name="t")


def test_every_rating_of_every_part_is_kept_and_reindexed() -> None:
    inter, users, items = build_interactions(_raw())
    # Users 10, 20, 30, 40 -> 0..3; items 5, 7, 9, 11 -> 0..3; nothing dropped.
    expected = pd.DataFrame(
        {
            "user": np.array([0, 1, 1, 2, 2, 1, 1, 2, 3], dtype=np.int32),
            "item": np.array([0, 0, 1, 1, 2, 2, 3, 2, 1], dtype=np.int32),
            "rating": np.array([1, 3, 4, 2, 5, 5, 2, 3, 1], dtype=np.float32),
            "part": ["mnar"] * 5 + ["mar"] * 4,
            "propensity": np.array(
                [0.15, 0.25, 0.27, 0.37, 0.39, 0.29, 0.31, 0.39, 0.47], dtype=np.float32
            ),
        }
    )
    pd.testing.assert_frame_equal(inter, expected, check_dtype=False)
    assert [str(t) for t in inter.dtypes[["user", "item", "rating", "propensity"]]] == [
        "int32",
        "int32",
        "float32",
        "float32",
    ]
    assert users["user"].dtype == np.int32 and users["raw_user"].dtype == np.int64
    assert users.to_dict("list") == {
        "user": [0, 1, 2, 3],
        "raw_user": [10, 20, 30, 40],
        "age": [1, 2, 3, 4],
    }
    assert items.to_dict("list") == {
        "item": [0, 1, 2, 3],
        "raw_item": [5, 7, 9, 11],
        "colour": ["r", "g", "b", "k"],
    }


def test_common_users_items_is_the_former_preprocessing() -> None:
    # E1's filter on the whole dataset gives what preprocessing kept before ([SAC20]).
    kept = common_users_items(*build_interactions(_raw()))
    # Kept: users 20 -> 0, 30 -> 1; items 7 -> 0, 9 -> 1.
    expected = pd.DataFrame(
        {
            "user": np.array([0, 1, 1, 0, 1], dtype=np.int32),
            "item": np.array([0, 0, 1, 1, 1], dtype=np.int32),
            "rating": np.array([4, 2, 5, 5, 3], dtype=np.float32),
            "part": ["mnar", "mnar", "mnar", "mar", "mar"],
            "propensity": np.array([0.27, 0.37, 0.39, 0.29, 0.39], dtype=np.float32),
        }
    )
    pd.testing.assert_frame_equal(kept.interactions, expected, check_dtype=False)
    assert kept.interactions["user"].dtype == np.int32
    assert kept.users.to_dict("list") == {"user": [0, 1], "raw_user": [20, 30], "age": [2, 3]}
    assert kept.items.to_dict("list") == {"item": [0, 1], "raw_item": [7, 9], "colour": ["g", "b"]}
    report = kept.dropped.set_index("part")
    # MNAR: users 10 (and its 1 rating), item 5 (2 ratings: (10,5), (20,5)); MAR: user 40, item 11.
    assert report.loc["mnar", ["users_dropped", "items_dropped", "ratings_dropped"]].tolist() == [
        1,
        1,
        2,
    ]
    # MAR: (40, 7) and (20, 11) go, so user 40 and items 7 and 11 leave the part.
    assert report.loc["mar", ["users_dropped", "items_dropped", "ratings_dropped"]].tolist() == [
        1,
        2,
        2,
    ]
    assert report.loc["mnar", "share_dropped"] == pytest.approx(2 / 5)
    assert report.loc["mar", "share_dropped"] == pytest.approx(2 / 4)
    assert dropped_warnings(kept.dropped) == []  # half is not more than half


def test_timestamps_only_when_present_and_no_mar() -> None:
    mnar = _frame([(5, 3, 4), (2, 8, 1), (5, 1, 2)]).assign(timestamp=np.array([30, 10, 20]))
    inter, users, items = build_interactions(RawDataset(mnar=mnar))
    assert list(inter.columns) == ["user", "item", "rating", "timestamp", "part"]
    assert inter["timestamp"].dtype == np.int64
    got = inter[["user", "item", "timestamp"]].values.tolist()
    assert got == [[0, 2, 10], [1, 0, 20], [1, 1, 30]]
    assert set(inter["part"]) == {"mnar"}
    assert users["raw_user"].tolist() == [2, 5] and items["raw_item"].tolist() == [1, 3, 8]
    assert list(users.columns) == ["user", "raw_user"]
    raw = _raw()
    # the MAR part has none: the MNAR times stay, the MAR rows' are missing (nullable Int64)
    big = 2**62 + 1  # a nanosecond-scale time that a float64 column would round
    raw.mnar = raw.mnar.assign(timestamp=np.arange(len(raw.mnar), dtype=np.int64) + big)
    inter = build_interactions(raw)[0]
    assert str(inter["timestamp"].dtype) == "Int64"
    mnar = (inter["part"] == "mnar").to_numpy()
    assert inter["timestamp"][~mnar].isna().all()
    assert sorted(inter["timestamp"][mnar].to_numpy(np.int64)) == (
        (np.arange(len(raw.mnar)) + big).tolist()
    )
    raw.mar = raw.mar.assign(timestamp=7)  # both timed: int64, as before
    assert build_interactions(raw)[0]["timestamp"].dtype == np.int64
    raw.mnar = raw.mnar.drop(columns="timestamp")  # an untimed MNAR part: no timestamp column
    assert "timestamp" not in build_interactions(raw)[0].columns


def test_disjoint_parts_are_a_dataset_but_empty_for_e1() -> None:
    raw = RawDataset(mnar=_frame([(1, 1, 3)]), mar=_frame([(2, 2, 3)]), name="tiny")
    inter, users, items = build_interactions(raw)
    assert len(inter) == 2 and len(users) == 2 and len(items) == 2
    with pytest.raises(DatasetError, match="E1 on tiny is empty after filter common_users_items"):
        common_users_items(inter, users, items, where="E1 on tiny")


def test_empty_part_names_dataset() -> None:
    raw = RawDataset(mnar=_frame([(1, 1, 3)]), mar=_frame([]), name="tiny")
    with pytest.raises(DatasetError, match="'tiny' has no mar interactions"):
        build_interactions(raw)


def _interactions() -> pd.DataFrame:
    # user 0: 3 MNAR ratings, user 1: 1, user 2: 2 (+1 MAR), user 3: only MAR.
    rows = [(0, 0, "mnar"), (0, 1, "mnar"), (0, 2, "mnar"), (1, 3, "mnar")]
    rows += [(2, 1, "mnar"), (2, 3, "mnar"), (2, 4, "mar"), (3, 5, "mar")]
    df = pd.DataFrame(rows, columns=["user", "item", "part"])
    return df.assign(rating=np.float32(3)).astype({"user": np.int32, "item": np.int32})


def test_filter_users_by_count() -> None:
    users = pd.DataFrame({"user": np.arange(4, dtype=np.int32), "raw_user": [10, 11, 12, 13]})
    inter, new_users, new_items, dropped = filter_users_by_count(_interactions(), 2, 3, users=users)
    # Users 0 and 2 kept (3 and 2 MNAR ratings), with their MAR row; items 0,1,2,3,4 remain.
    assert inter[["user", "item", "part"]].values.tolist() == [
        [0, 0, "mnar"],
        [0, 1, "mnar"],
        [0, 2, "mnar"],
        [1, 1, "mnar"],
        [1, 3, "mnar"],
        [1, 4, "mar"],
    ]
    assert inter["user"].dtype == np.int32 and inter["item"].dtype == np.int32
    assert new_users.to_dict("list") == {"user": [0, 1], "raw_user": [10, 12]}
    assert new_items.to_dict("list") == {"item": [0, 1, 2, 3, 4], "raw_item": [0, 1, 2, 3, 4]}
    # Dropped: user 1 (1 MNAR rating, item 3 stays with user 2); user 3 and item 5 from MAR.
    assert dropped[["filter", "part", "users_dropped", "items_dropped", "ratings_dropped"]].to_dict(
        "list"
    ) == {
        "filter": ["users_by_count"] * 2,
        "part": ["mnar", "mar"],
        "users_dropped": [1, 1],
        "items_dropped": [0, 1],
        "ratings_dropped": [1, 1],
    }
    assert dropped_warnings(dropped) == []  # 1 of 2 MAR ratings: not more than half


def test_filter_users_by_count_open_bounds_and_items_dropped() -> None:
    inter, users, items, _ = filter_users_by_count(_interactions(), None, 1)
    # MNAR counts: 0 -> 3, 1 -> 1, 2 -> 2, 3 -> 0: users 1 and 3 kept.
    assert users["raw_user"].tolist() == [1, 3]
    assert items["raw_item"].tolist() == [3, 5]
    assert inter[["user", "item"]].values.tolist() == [[0, 0], [1, 1]]
    inter, users, _, _ = filter_users_by_count(_interactions(), 1, None, part="mar")
    assert users["raw_user"].tolist() == [2, 3]
    with pytest.raises(DatasetError, match="empty after filter users_by_count"):
        filter_users_by_count(_interactions(), 100, 500)


def test_e2s_user_filter_logs_what_it_drops_and_warns_past_half(caplog) -> None:
    rows = _interactions()
    mnar = rows[rows["part"] == "mnar"].reset_index(drop=True)
    with caplog.at_level(logging.INFO, logger="debiaseval.data.filters"):
        kept = filter_users(mnar, min_ratings=3)  # user 0 only: 3 of the 6 MNAR ratings
    assert kept["user"].unique().tolist() == [0]  # ids kept, not re-indexed
    assert "users with 3 to None ratings: dropped by its filters" in caplog.text
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]  # half: no warning
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="debiaseval.data.filters"):
        filter_users(mnar, max_ratings=1)  # user 1 only: 1 of 6
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning == (
        "users with None to 1 ratings: filter users_by_count drops 5 of the 6 ratings (83.3%) "
        "of part mnar, and 2 of its 3 users and 3 of its 4 items"
    )
    mask = users_by_count(rows, 2, None, part="mnar")  # users 0 and 2, their MAR row too
    assert rows.loc[mask, "user"].unique().tolist() == [0, 2]
    assert mask.sum() == 6
