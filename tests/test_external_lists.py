"""Precomputed lists: id mapping, checks (unknown ids, duplicates, leakage, rank vs score),
order, truncation, short-list warning, E5's depth and traditional-recall rules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.ids import raw_ids, to_internal, to_raw
from debiaseval.data.interactions import rating_matrix
from debiaseval.evaluation.external_lists import (
    ListScores,
    ListsError,
    check_depth,
    check_template,
    lists_path,
    prepare_lists,
    read_lists,
    short_lists_warning,
    traditional_decided,
)
from debiaseval.recommenders import make_recommender
from debiaseval.recommenders.ranking import top_k

# 3 users with string raw ids (in the order preprocessing numbers them), 5 items with int ids
USERS = pd.DataFrame({"user": np.arange(3, dtype=np.int32), "raw_user": ["a7", "b 2", "u10"]})
ITEMS = pd.DataFrame({"item": np.arange(5, dtype=np.int32), "raw_item": [3, 8, 20, 41, 100]})
TRAIN = pd.DataFrame({"user": [0, 0, 2], "item": [0, 1, 4], "rating": [4.0, 2.0, 5.0]})


def prepare(lists: pd.DataFrame, **options):
    kwargs = {
        "train": TRAIN,
        "n_users": 3,
        "n_items": 5,
        "users": USERS,
        "items": ITEMS,
        "source": "lists.csv",
    }
    return prepare_lists(lists, **{**kwargs, **options})


def test_raw_ids_map_both_ways_whatever_their_type():
    users = raw_ids(USERS, "user", 3)
    items = raw_ids(ITEMS, "item", 5)
    assert list(to_raw([2, 0], users)) == ["u10", "a7"]
    # text read from a CSV matches integer raw ids; mixed types never raise
    got = to_internal(pd.Series(["41", " 3", "3.5", "x", "008", 100, 20.0], dtype=object), items)
    assert list(got) == [3, 0, -1, -1, 1, 4, 2]
    # an integer matches the string raw id with the same text
    strings = np.array(["7", "10", "u1"], dtype=object)
    assert list(to_internal(pd.Series([10, "u1", 7, "07"], dtype=object), strings)) == [
        1,
        2,
        0,
        -1,
    ]
    assert list(raw_ids(None, "user", 3)) == [0, 1, 2]


def test_scores_order_the_lists_with_ties_by_item_and_are_cut_at_depth():
    lists = pd.DataFrame(
        {
            "user": ["u10", "u10", "u10", "a7", "a7", "a7"],
            "item": [3, 41, 8, 100, 41, 20],
            "score": [0.5, 0.9, 0.5, 0.1, 0.3, 0.3],
        }
    )
    recs, notes = prepare(lists, depth=2)
    assert notes == []
    assert recs.dtypes.astype(str).tolist() == ["int32", "int32", "int16", "float32"]
    # user 0 = a7: items 2 (20) and 3 (41) tie at 0.3 -> smaller id first; 4 cut at depth 2
    # user 2 = u10: 3 (41) at 0.9, then 0 (3) and 1 (8) tie at 0.5 -> 0 first
    assert recs[["user", "item", "rank"]].values.tolist() == [
        [0, 2, 1],
        [0, 3, 2],
        [2, 3, 1],
        [2, 0, 2],
    ]
    assert recs["score"].tolist() == np.array([0.3, 0.3, 0.9, 0.5], dtype=np.float32).tolist()


def test_ranks_alone_give_scores_minus_rank_and_renumber_from_one():
    lists = pd.DataFrame({"user": ["b 2"] * 3, "item": ["41", "3", "8"], "rank": ["7", "4", "3"]})
    recs, _ = prepare(lists)
    # ranks 3, 4, 7 (8 -> item 1, 3 -> item 0): renumbered 1, 2, 3
    assert recs[["user", "item", "rank"]].values.tolist() == [[1, 1, 1], [1, 0, 2], [1, 3, 3]]
    assert recs["score"].tolist() == [-1.0, -2.0, -3.0]


def test_rank_and_score_must_agree_and_the_rank_decides_ties_of_score():
    ok = pd.DataFrame(
        {"user": ["a7"] * 3, "item": [20, 41, 100], "rank": [2, 1, 3], "score": [0.5, 0.5, 0.1]}
    )
    recs, _ = prepare(ok)
    assert recs["item"].tolist() == [3, 2, 4]  # rank 1 = 41 although 20 ties on score
    bad = ok.assign(score=[0.5, 0.2, 0.1])
    with pytest.raises(ListsError, match=r"lists.csv: rank and score order the items of 1 user"):
        prepare(bad)


def test_unknown_ids_fail_with_counts_and_examples():
    lists = pd.DataFrame(
        {"user": ["a7", "zz", "zz", "u10"], "item": [20, 20, 41, 999], "score": [1, 1, 1, 1]}
    )
    with pytest.raises(ListsError) as err:
        prepare(lists)
    message = str(err.value)
    assert message.startswith("lists.csv: of 4 rows, 2 with an unknown user (e.g. zz) and 1 ")
    assert "unknown item (e.g. 999)" in message and "users such as a7, 'b 2', u10" in message
    assert "\n" not in message
    with pytest.raises(ListsError, match=r"with ids: internal, users are 0 \.\. 2"):
        prepare(pd.DataFrame({"user": [3], "item": [0], "score": [1.0]}), ids="internal")


def test_duplicated_pairs_fail():
    lists = pd.DataFrame({"user": ["a7", "a7", "a7"], "item": [20, "20", 41], "rank": [1, 2, 3]})
    with pytest.raises(ListsError, match=r"1 duplicated \(user, item\) pair.*user a7 item 20"):
        prepare(lists)


def test_a_training_item_fails_naming_the_file_user_and_item_or_is_dropped():
    lists = pd.DataFrame(
        {"user": ["a7", "a7", "u10", "u10"], "item": [8, 20, 100, 41], "score": [4, 3, 2, 1]}
    )
    with pytest.raises(ListsError) as err:
        prepare(lists, where="e1.recommenders.ALS")
    message = str(err.value)
    assert message.startswith("lists.csv: 2 listed pair(s) of 2 user(s) are in the user's own")
    assert "e.g. user a7 item 8, user u10 item 100" in message
    assert "on_train_items: drop (at e1.recommenders.ALS)" in message
    recs, notes = prepare(lists, on_train_items="drop")
    assert recs[["user", "item", "rank"]].values.tolist() == [[0, 2, 1], [2, 3, 1]]
    assert notes == [
        "lists.csv: dropped 2 listed pair(s) of 2 user(s) that are in the user's "
        "own training part (on_train_items: drop)"
    ]


def test_bad_values_and_missing_columns_fail():
    with pytest.raises(ListsError, match=r"column score has 2 value\(s\) that are not finite"):
        prepare(pd.DataFrame({"user": ["a7", "a7"], "item": [3, 8], "score": ["", "nan"]}))
    with pytest.raises(ListsError, match=r"lack column\(s\) score or rank"):
        prepare(pd.DataFrame({"user": ["a7"], "item": [3]}))


def test_short_lists_warn_with_how_many_users_are_short():
    recs = pd.DataFrame({"user": [0, 0, 0, 2], "item": [2, 3, 4, 0], "rank": [1, 2, 3, 1]})
    # candidates: user 0 has 3, user 1 has 5, user 2 has 4; k = 3
    message = short_lists_warning(recs, TRAIN, n_users=3, n_items=5, k=3, source="x.csv")
    assert message == (
        "x.csv: the lists of 2 of 3 users are shorter than k = 3 (1 user(s) have no list; the "
        "shortest list has 1 item(s)): their missing ranks count as misses in metrics@3"
    )
    full = pd.DataFrame({"user": [0, 0, 0, 1, 1, 2, 2], "item": [2, 3, 4, 0, 1, 0, 1]})
    assert short_lists_warning(full, TRAIN, n_users=3, n_items=5, k=2, source="x") is None


def test_e5_refuses_a_k_beyond_the_lists():
    recs = pd.DataFrame({"user": [0, 0, 1, 1, 1], "item": [2, 3, 0, 1, 2], "rank": [1, 2, 1, 2, 3]})
    check_depth(recs, TRAIN, np.array([0, 1]), [1, 2], n_users=3, n_items=5, source="x")
    # user 0 has 3 candidates, lists 2 of them: K = 3 is undefined
    refused = r"x: Recall@3 needs every evaluated user's top 3, but the lists of 1 of 2 evaluated"
    with pytest.raises(ListsError, match=refused):
        check_depth(recs, TRAIN, np.array([0, 1]), [2, 3], n_users=3, n_items=5, source="x")
    # user 2 (no list) is not evaluated: nothing refused
    check_depth(recs, TRAIN, np.array([1]), [3], n_users=3, n_items=5, source="x")


def test_traditional_recall_is_decided_only_by_enough_listed_exposed_items():
    recs = pd.DataFrame({"user": [1, 1], "item": [0, 4], "rank": [1, 2]})
    exposed = pd.DataFrame({"user": [0, 0, 0, 1, 1, 1, 1], "item": [1, 2, 3, 0, 2, 3, 4]})
    got = traditional_decided(recs, TRAIN, exposed, [1, 2, 3], n_items=5)
    # user 0: R = {2, 3} (item 1 is a training item), none listed: only K >= |R| = 2 decides
    # user 1: R = {0, 2, 3, 4}, 2 listed: K <= 2 decided, K = 3 needs a third listed item
    assert got.pivot(index="user", columns="k", values="decided").values.tolist() == [
        [False, True, True],
        [True, True, False],
    ]


def test_list_scores_rank_listed_items_above_the_rest():
    recs = pd.DataFrame({"user": [0, 0, 2], "item": [4, 1, 3], "rank": [1, 2, 1]})
    scores = ListScores(recs, 3, 5).score(np.array([0, 1, 2]))
    assert scores.tolist() == [[0, 1, 0, 0, 2], [0] * 5, [0, 0, 0, 2, 0]]


def test_files_templates_and_formats(tmp_path):
    frame = pd.DataFrame({"user": ["007", "u1"], "item": ["1", "2"], "score": ["0.5", "1"]})
    frame.to_csv(tmp_path / "l.csv", index=False)
    back = read_lists(tmp_path / "l.csv")
    assert back["user"].tolist() == ["007", "u1"]  # ids stay text
    frame.to_parquet(tmp_path / "l.parquet")
    assert read_lists(tmp_path / "l.parquet").equals(frame)
    with pytest.raises(ListsError, match=r"no such lists file"):
        read_lists(tmp_path / "none.csv")
    with pytest.raises(ListsError, match=r"must be a Parquet \(.parquet\) or CSV"):
        read_lists(tmp_path / "l.json")
    assert lists_path("out/{dataset}/s{seed}.csv", dataset="coat", seed=1) == "out/coat/s1.csv"
    check_template("lists/{dataset}/seed{seed}.csv.gz")
    with pytest.raises(ValueError, match=r"placeholder\(s\) \{model\}"):
        check_template("lists/{model}/{seed}.csv")
    with pytest.raises(ValueError, match=r"must end in .parquet or .csv"):
        check_template("lists/{dataset}.txt")


def _e5_data():
    from debiaseval.data.splits import run_rng
    from debiaseval.experiments.e5 import expose, full_data

    full = full_data({"n_users": 40, "n_items": 50, "density": 0.2, "n_mar": 5, "rank": 3})
    labelled = expose(
        full,
        n_items=50,
        exposure={"by": "popularity", "strength": 1.0, "train_fraction": 0.2, "n_exposed": 8},
        positive_threshold=3.0,
        rng=run_rng(0, "test", "e5_expose"),
    )
    return labelled, rating_matrix(labelled[labelled["part"] == "train"], 40, 50)


def test_e5_lists_of_every_candidate_give_the_models_estimates_and_short_ones_are_refused():
    from debiaseval.experiments.e5 import E5Evaluate, evaluate_lists, evaluate_models

    labelled, train = _e5_data()
    shared = {"n_users": 40, "n_items": 50}
    spec = {
        "algorithm": "pospop",
        "params": {},
        "grid": {},
        "ids": "internal",
        "on_train_items": "error",
    }
    step = E5Evaluate(
        model="m", spec=spec, ks=[3, 10], positive_threshold=3.0, ties="rank", batch_size=7
    )
    expected = evaluate_models(labelled, step, seed=0, **shared)
    model = make_recommender("pospop").fit(train, seed=0)
    options = {"users": None, "items": None, "source": "pospop.csv"}
    got, notes = evaluate_lists(labelled, top_k(model, train, 50), step, **options, **shared)
    pd.testing.assert_frame_equal(got, expected)
    assert notes == []
    # a list of 5 cannot say which items are in anyone's top 10
    with pytest.raises(ListsError, match=r"pospop.csv: Recall@10 needs every evaluated user's"):
        evaluate_lists(labelled, top_k(model, train, 5), step, **options, **shared)
    # with ks within the lists: true recall and URE are the model's, traditional needs R_u
    short, notes = evaluate_lists(
        labelled, top_k(model, train, 5), dataclasses.replace(step, ks=[3]), **options, **shared
    )
    row = expected[expected["k"] == 3].reset_index(drop=True)
    pd.testing.assert_series_equal(short["ure"], row["ure"])
    assert np.isnan(short["traditional_recall"]).all() and "Recall@3 is undefined" in notes[0]
