"""Tuning: best usable grid point, chunks, early stopping, degenerate models never selected."""

import json

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.interactions import rating_matrix
from debiaseval.data.preprocess import build_interactions
from debiaseval.data.splits import run_rng, split_e1
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.recommenders import RECOMMENDERS, Recommender, make_recommender
from debiaseval.recommenders.ranking import top_k
from debiaseval.selection.tuning import (
    EarlyStopping,
    grid_chunks,
    merge_chunks,
    recommender_params,
    select_point,
    tune_points,
    tune_recommender,
)


@pytest.fixture(scope="module")
def parts():
    interactions, users, items = build_interactions(
        generate_synthetic(n_users=200, n_items=300, density=0.05, n_mar=20, seed=3).to_raw()
    )
    split = split_e1(
        interactions,
        mnar_split={"train": 0.6, "heldout": 0.4},
        mar_split={"weights": 0.15, "val": 0.15, "gt": 0.7},
        rng=run_rng(0, "test"),
    )
    frames = {part: frame for part, frame in split.groupby("part")}
    return frames, len(users), len(items)


COMMON = dict(metric="recall", k=10, positive_threshold=3.0, batch_size=64, seed=1)


def test_tune_points_selects_the_best_point_and_ranks_with_it(parts):
    frames, n_users, n_items = parts
    matrix = rating_matrix(frames["train"], n_users, n_items)
    points = [{"positive_threshold": 10.0}, {"positive_threshold": 3.0}]
    table, recs = tune_points(
        matrix, frames["val"], points, algorithm="pospop", params={}, depth=5, **COMMON
    )
    assert list(table.columns) == ["params", "metric", "k", "value", "epochs", "status"]
    assert (table["status"] == "ok").all() and (table["epochs"] == 0).all()
    best = select_point(table)
    assert best == 1 and table["value"].iloc[1] > table["value"].iloc[0]  # nothing > 10
    model = make_recommender("pospop", **json.loads(table["params"].iloc[best]))
    expected = top_k(model.fit(matrix, seed=1), matrix, 5)
    pd.testing.assert_frame_equal(recs, expected)


def test_a_degenerate_point_is_never_selected(parts):
    frames, n_users, n_items = parts
    grid = {"factors": [8], "alpha": [0.6, 0.06, 1e-5]}  # diverges, collapses, learns
    stop = EarlyStopping(max_epochs=30, eval_every=10, patience=1)
    selected, table = tune_recommender(
        frames["train"],
        frames["val"],
        n_users=n_users,
        n_items=n_items,
        algorithm="mf",
        params={},
        grid=grid,
        early_stopping=stop,
        **COMMON,
    )
    assert table["status"].iloc[0].startswith("diverged"), table
    assert table["status"].iloc[1].startswith("collapsed"), table
    assert table["status"].iloc[2] == "ok" and table["selected"].iloc[2]
    assert np.isnan(table["value"].iloc[:2]).all()
    assert selected["alpha"] == 1e-5 and 10 <= selected["epochs"] <= 30


def test_no_usable_point_is_an_error_naming_every_reason():
    table = pd.DataFrame(
        {
            "params": ['{"alpha": 1}', '{"alpha": 2}'],
            "value": [np.nan, np.nan],
            "status": ["collapsed: x", "diverged: y"],
        }
    )
    with pytest.raises(ValueError, match=r"no usable model in MF.*collapsed: x.*diverged: y"):
        select_point(table, "MF")


class PeakingRanker(Recommender):
    """Ranks every val-relevant item first up to ``peak`` epochs, last after (a test double,
    trained by epochs: an ``epochs`` hyperparameter and ``_fit_partial``)."""

    name = "peaking"

    def __init__(self, *, peak: int = 10, epochs: int = 1, good: np.ndarray | None = None) -> None:
        self.peak = peak
        self.epochs = epochs
        self.good = good

    def _fit(self, train, seed):
        self.trained_ = self.epochs

    def _fit_partial(self, train, epochs):
        self.trained_ += epochs

    def _score(self, users):
        sign = 1.0 if self.trained_ <= self.peak else -1.0
        return sign * self.good[users].astype(np.float64)


def test_early_stopping_keeps_the_epochs_where_val_peaks(parts, monkeypatch):
    frames, n_users, n_items = parts
    val = frames["val"]
    good = np.zeros((n_users, n_items))
    relevant = val[val["rating"] > 3]
    good[relevant["user"], relevant["item"]] = 1.0
    monkeypatch.setitem(RECOMMENDERS, "peaking", PeakingRanker)
    matrix = rating_matrix(frames["train"], n_users, n_items)
    table, _ = tune_points(
        matrix,
        val,
        [{"peak": 10}, {"peak": 25}],
        algorithm="peaking",
        params={"good": good},
        depth=None,
        early_stopping=EarlyStopping(max_epochs=60, eval_every=5, patience=2),
        **COMMON,
    )
    assert table["epochs"].tolist() == [5, 5]  # the earliest of the equal best evaluations
    strict = EarlyStopping(max_epochs=60, eval_every=5, patience=2)
    model = PeakingRanker(peak=12, good=good).set_params(epochs=strict.max_epochs)
    done = list(model.iter_epochs(matrix, step=strict.eval_every))
    assert done[-1] == 60  # without early stopping it would train to the maximum


def test_early_stopping_stops_after_patience_and_returns_the_peak(parts, monkeypatch):
    frames, n_users, n_items = parts
    val = frames["val"]
    relevant = val[val["rating"] > 3]
    good = np.zeros((n_users, n_items))
    # item scores improve until epoch 15 (more relevant items ranked first), then degrade
    order = np.random.default_rng(0).permutation(len(relevant))
    good[relevant["user"].to_numpy()[order], relevant["item"].to_numpy()[order]] = np.arange(
        1, len(relevant) + 1
    )

    class Ramp(PeakingRanker):
        name = "ramp"

        def _score(self, users):
            level = self.trained_ if self.trained_ <= self.peak else 2 * self.peak - self.trained_
            cut = np.quantile(good[good > 0], 1.0 - level / 60.0)
            return (self.good[users] >= cut).astype(np.float64) * (self.good[users] > 0)

    monkeypatch.setitem(RECOMMENDERS, "ramp", Ramp)
    calls = []
    original = Ramp.iter_epochs

    def counting(self, train, *, seed=0, step=1):
        for done in original(self, train, seed=seed, step=step):
            calls.append(done)
            yield done

    monkeypatch.setattr(Ramp, "iter_epochs", counting)
    table, _ = tune_points(
        rating_matrix(frames["train"], n_users, n_items),
        val,
        [{"peak": 15}],
        algorithm="ramp",
        params={"good": good},
        depth=None,
        early_stopping=EarlyStopping(max_epochs=60, eval_every=5, patience=2),
        **COMMON,
    )
    assert table["epochs"].iloc[0] == 15
    assert calls == [5, 10, 15, 20, 25]  # two evaluations without improvement, then stop


def test_grid_chunks_and_merge_find_the_selected_chunk():
    chunks = grid_chunks({"a": [1, 2, 3], "b": [0, 1]}, 4)
    assert [len(c) for c in chunks] == [4, 2]
    assert chunks[1] == [{"a": 3, "b": 0}, {"a": 3, "b": 1}]
    tables = [
        pd.DataFrame({"params": ["p0", "p1"], "value": [0.1, 0.3], "status": ["ok", "ok"]}),
        pd.DataFrame({"params": ["p2", "p3"], "value": [0.5, 0.5], "status": ["ok", "ok"]}),
    ]
    merged, chunk = merge_chunks(tables)
    assert chunk == 1 and merged["selected"].tolist() == [False, False, True, False]


def test_positive_threshold_reaches_the_recommenders_that_use_one():
    assert recommender_params("pospop", {}, 4.0) == {"positive_threshold": 4.0}
    assert recommender_params("mf", {"factors": 8}, 4.0)["positive_threshold"] == 4.0
    assert recommender_params("mf", {"positive_threshold": 2.0}, 4.0)["positive_threshold"] == 2.0
    assert recommender_params("itemknn", {}, 4.0) == {}
