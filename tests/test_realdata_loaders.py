"""Real datasets from the local mirror ($DEBIASEVAL_MIRROR): verified copy, statistics, sizes.

Expected statistics are those recorded in the mirror's SOURCES.md (coat: [ICML16];
Yahoo! R3: Marlin & Zemel 2009; ML-100K: GroupLens u.info).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from debiaseval import api
from debiaseval.data import (
    MIRROR_ENV,
    build_interactions,
    dropped_warnings,
    fetch_dataset,
    load_raw,
)
from debiaseval.experiments.e1 import E1Data, E1Split, data_step, split_step

pytestmark = pytest.mark.realdata


@pytest.fixture
def mirror() -> Path:
    value = os.environ.get(MIRROR_ENV, "").strip()
    if not value:
        pytest.skip(f"{MIRROR_ENV} not set: the real-data tests read the local dataset mirror")
    return Path(value)


def _fetch(mirror: Path, name: str, tmp_path: Path) -> Path:
    if not (mirror / name).is_dir():
        pytest.skip(f"{name} is not in the mirror {mirror}")
    return fetch_dataset(name, tmp_path / name, mirror=mirror)


def _counts(values: np.ndarray) -> dict[int, int]:
    keys, counts = np.unique(values, return_counts=True)
    return dict(zip(keys.astype(int).tolist(), counts.tolist(), strict=True))


def test_coat(mirror: Path, tmp_path: Path) -> None:
    raw = load_raw("coat", _fetch(mirror, "coat", tmp_path))
    assert raw.mar is not None and raw.propensities is not None
    assert len(raw.mnar) == 6960 and len(raw.mar) == 4640
    assert _counts(raw.mnar["rating"].to_numpy()) == {1: 1901, 2: 1437, 3: 1717, 4: 1275, 5: 630}
    assert _counts(raw.mar["rating"].to_numpy()) == {1: 1879, 2: 899, 3: 1002, 4: 641, 5: 219}
    assert (raw.mnar.groupby("user").size() == 24).all()
    assert (raw.mar.groupby("user").size() == 16).all()
    props = raw.propensities["propensity"]
    assert len(props) == 290 * 300
    assert props.min() == pytest.approx(0.002527, abs=1e-6)
    assert props.max() == pytest.approx(0.690255, abs=1e-6)
    assert raw.users is not None and raw.users.shape == (290, 15)
    assert raw.items is not None and raw.items.shape == (300, 34)

    inter, users, items = build_interactions(raw)
    assert len(users) == 290 and len(items) == 300
    assert inter["part"].value_counts().to_dict() == {"mnar": 6960, "mar": 4640}
    assert inter["propensity"].notna().all()
    # Coat has 366 MAR pairs the user also rated in the MNAR part (docs/experiments/e1.md).
    mnar = inter[inter["part"] == "mnar"]
    mar = inter[inter["part"] == "mar"]
    assert len(mar.merge(mnar, on=["user", "item"])) == 366


def test_yahoo_r3(mirror: Path, tmp_path: Path) -> None:
    raw = load_raw("yahoo-r3", _fetch(mirror, "yahoo-r3", tmp_path))
    assert raw.mar is not None
    assert len(raw.mnar) == 311_704 and len(raw.mar) == 54_000
    assert raw.mnar["user"].nunique() == 15_400 and raw.mnar["item"].nunique() == 1_000
    assert raw.mar["user"].nunique() == 5_400 and (raw.mar.groupby("user").size() == 10).all()
    assert _counts(raw.mnar["rating"].to_numpy()) == {
        1: 97844,
        2: 39652,
        3: 49131,
        4: 48480,
        5: 76597,
    }
    assert raw.mnar.iloc[0].tolist() == [1, 14, 5]
    assert raw.mar.iloc[0].tolist() == [1, 49, 1]

    # The dataset holds every rating of both parts ([ICML16] §6.5 and [URE24] train on all of
    # them), as the workflow's preprocess rule and the Python API load it.
    inter, users, items = api.load_dataset("yahoo-r3", raw=tmp_path / "yahoo-r3")
    mnar = inter[inter["part"] == "mnar"]
    assert len(users) == 15_400 and len(items) == 1_000
    assert len(mnar) == 311_704 and mnar["user"].nunique() == 15_400
    assert (inter["part"] == "mar").sum() == 54_000
    assert users["raw_user"].tolist() == list(range(1, 15_401))

    # E1's split holds the users and items of both parts ([SAC20]), re-indexed, and its report
    # says what the filter dropped: 10,000 MNAR-only users and their 182,525 ratings.
    kept = data_step(inter, users, items, step=E1Data(True), dataset="yahoo-r3")
    split = split_step(
        kept.interactions,
        E1Split({"train": 0.6, "heldout": 0.4}, {"weights": 0.15, "val": 0.15, "gt": 0.7}),
        dataset="yahoo-r3",
        seed=0,
    )
    mar_users = np.unique(raw.mar["user"])
    assert split["user"].nunique() == 5_400 and split["item"].nunique() == 1_000
    assert kept.users["raw_user"].tolist() == mar_users.tolist() == list(range(1, 5_401))
    in_mnar = split["part"].isin(["train", "heldout"])
    assert in_mnar.sum() == raw.mnar["user"].isin(mar_users).sum() == 129_179
    assert (~in_mnar).sum() == 54_000
    report = kept.dropped.set_index("part")
    assert report.loc["mnar", ["users_dropped", "items_dropped", "ratings_dropped"]].tolist() == [
        10_000,
        0,
        182_525,
    ]
    assert report.loc["mar", "ratings_dropped"] == 0
    (warning,) = dropped_warnings(kept.dropped)
    assert "182,525 of the 311,704 ratings (58.6%) of part mnar" in warning


def test_ml_100k(mirror: Path, tmp_path: Path) -> None:
    raw = load_raw("ml-100k", _fetch(mirror, "ml-100k", tmp_path))
    assert raw.mar is None
    assert len(raw.mnar) == 100_000
    assert raw.mnar["user"].nunique() == 943 and raw.mnar["item"].nunique() == 1_682
    assert _counts(raw.mnar["rating"].to_numpy()) == {
        1: 6110,
        2: 11370,
        3: 27145,
        4: 34174,
        5: 21201,
    }
    assert raw.items is not None and len(raw.items) == 1_682
    assert raw.users is not None and len(raw.users) == 943
    assert raw.items["title"].str.contains("é").any()  # latin-1 decoded

    inter, users, items = build_interactions(raw)
    assert len(inter) == 100_000 and len(users) == 943 and len(items) == 1_682
    assert inter["timestamp"].dtype == np.int64
    assert (inter.groupby("user").size() >= 20).all()


def test_jester5k(mirror: Path, tmp_path: Path) -> None:
    """SOURCES.md's figures: 5,000 users x 100 jokes, 363,209 ratings in [-9.95, 9.90], 1,025
    zeros (stored as R's double.xmin), 1,473 users who rated every joke, 423 zeros among them."""
    raw = load_raw("jester5k", _fetch(mirror, "jester5k", tmp_path))
    ratings = raw.mnar["rating"].to_numpy()
    assert len(raw.mnar) == 363_209
    assert raw.mnar["user"].nunique() == 5_000 and raw.mnar["item"].nunique() == 100
    assert ratings.min() == -9.95 and ratings.max() == 9.90
    assert (ratings == 0.0).sum() == 1_025 and np.abs(ratings[ratings != 0]).min() >= 0.01
    assert raw.mnar.groupby("user").size().min() == 36
    block = raw.users.loc[raw.users["full_block"], "user"]
    assert len(block) == 1_473
    in_block = raw.mnar[raw.mnar["user"].isin(block)]
    assert len(in_block) == 147_300 and (in_block["rating"] == 0.0).sum() == 423
    assert (in_block["rating"] > 5.0).mean() == pytest.approx(0.2725, abs=1e-4)  # positives
    assert raw.items["item"].tolist() == list(range(1, 101)) and raw.items["text"].str.len().min()

    inter, users, items = api.load_dataset("jester5k", raw=tmp_path / "jester5k")
    assert len(inter) == 363_209 and set(inter["part"]) == {"mnar"}
    assert len(users) == 5_000 and users["full_block"].sum() == 1_473 and len(items) == 100
