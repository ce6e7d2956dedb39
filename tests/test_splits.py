"""Seeded splits: exact sizes, uniformity, independence of labels."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.splits import assign_parts, run_rng, split_e1


def test_assign_parts_sizes_add_up():
    labels = assign_parts(101, {"a": 0.6, "b": 0.4}, np.random.default_rng(0))
    assert (labels == "a").sum() == 61 and (labels == "b").sum() == 40
    labels = assign_parts(1000, {"w": 0.15, "v": 0.15, "g": 0.7}, np.random.default_rng(0))
    assert [(labels == x).sum() for x in "wvg"] == [150, 150, 700]


def test_assign_parts_is_uniform_over_positions():
    hits = np.zeros(10)
    for seed in range(2000):
        hits += assign_parts(10, {"a": 0.3, "b": 0.7}, np.random.default_rng(seed)) == "a"
    np.testing.assert_allclose(hits / 2000, 0.3, atol=0.05)


def test_run_rng_depends_on_seed_and_labels_only():
    a = run_rng(3, "coat", "split").integers(1 << 30, size=4)
    assert np.array_equal(a, run_rng(3, "coat", "split").integers(1 << 30, size=4))
    assert not np.array_equal(a, run_rng(4, "coat", "split").integers(1 << 30, size=4))
    assert not np.array_equal(a, run_rng(3, "yahoo", "split").integers(1 << 30, size=4))


def test_split_e1():
    frame = pd.DataFrame(
        {
            "user": np.arange(200) % 20,
            "item": np.arange(200),
            "rating": 3.0,
            "part": ["mnar"] * 100 + ["mar"] * 100,
        }
    )
    out = split_e1(
        frame,
        mnar_split={"train": 0.6, "heldout": 0.4},
        mar_split={"weights": 0.15, "val": 0.15, "gt": 0.7},
        rng=run_rng(0, "x"),
    )
    counts = out["part"].value_counts().to_dict()
    assert counts == {"train": 60, "heldout": 40, "weights": 15, "val": 15, "gt": 70}
    assert set(out.loc[out["part"].isin(["train", "heldout"]), "item"]) == set(range(100))
    with pytest.raises(ValueError, match="'mar' part"):
        split_e1(
            frame[frame["part"] == "mnar"],
            mnar_split={"train": 1.0},
            mar_split={"gt": 1.0},
            rng=run_rng(0),
        )
