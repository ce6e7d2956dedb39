"""Exported splits: a seed's parts in raw ids, columns and order, CSV as Parquet."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.export import export_parts
from debiaseval.io.files import write_csv

USERS = pd.DataFrame({"user": [1, 0], "raw_user": ["zed", "amy"]})  # any row order
ITEMS = pd.DataFrame({"item": [0, 1, 2], "raw_item": [10, 20, 30]})
SPLIT = pd.DataFrame(
    {
        "user": np.array([1, 0, 0, 1, 0], dtype=np.int32),
        "item": np.array([2, 1, 0, 0, 2], dtype=np.int32),
        "rating": np.array([5, 4, 3, 2, 1], dtype=np.float32),
        "timestamp": np.array([50, 40, 30, 20, 10], dtype=np.int64),
        "propensity": np.full(5, 0.5, dtype=np.float32),
        "part": ["train", "val", "train", "train", "heldout"],
    }
)


def test_parts_in_raw_ids_sorted_with_rating_and_timestamp(tmp_path):
    parts = export_parts(
        SPLIT, {"train": "train", "val": "val"}, USERS, ITEMS, n_users=2, n_items=3
    )
    assert parts["train"].to_dict("list") == {
        "user": ["amy", "zed", "zed"],
        "item": [10, 10, 30],
        "rating": [3.0, 2.0, 5.0],
        "timestamp": [30, 20, 50],
    }
    assert parts["val"].to_dict("list") == {
        "user": ["amy"],
        "item": [20],
        "rating": [4.0],
        "timestamp": [40],
    }
    write_csv(parts["train"], tmp_path / "train.csv")
    assert (tmp_path / "train.csv").read_text() == (
        "user,item,rating,timestamp\namy,10,3.0,30\nzed,10,2.0,20\nzed,30,5.0,50\n"
    )
    without = export_parts(
        SPLIT.drop(columns="timestamp"), {"train": "train"}, None, None, n_users=2, n_items=3
    )
    assert list(without["train"].columns) == ["user", "item", "rating"]
    assert without["train"]["user"].tolist() == [0, 1, 1]  # no tables: the project's ids


def test_an_empty_part_is_an_error():
    with pytest.raises(ValueError, match=r"no 'gt' part to export as test"):
        export_parts(SPLIT, {"test": "gt"}, USERS, ITEMS, n_users=2, n_items=3)
