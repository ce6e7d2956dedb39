"""Tests of top-k and rating metrics against hand-computed values (docs/experiments/e1.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from debiaseval.evaluation.metrics import (
    TOPK_METRICS,
    BlockValues,
    accuracy,
    evaluate_topk,
    hit_matrix,
    mae,
    mse,
    rmse,
    stack_block_values,
    summarise,
    topk_blocks,
    train_overlap_mask,
)

N_ITEMS = 10
L2 = math.log2

# user 0: relevant {1, 3, 5} (item 7 has rating 3.0: not relevant, strictly greater)
# user 1: relevant {4}, short list of 2
# user 2: only a rating of exactly 3 -> no relevant pair -> not evaluated
# user 3: relevant {8}, no recommendation list at all -> evaluated with zero hits
# user 4: recommendations but no test pairs -> not evaluated
TEST = pd.DataFrame(
    {
        "user": [0, 0, 0, 0, 0, 1, 2, 3],
        "item": [1, 3, 5, 7, 9, 4, 6, 8],
        "rating": [5.0, 4.0, 4.0, 3.0, 2.0, 5.0, 3.0, 3.5],
    }
)
RECS = pd.DataFrame(
    {
        "user": [0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 4],
        "item": [1, 2, 3, 7, 5, 9, 0, 4, 6, 1, 3],
        "rank": [1, 2, 3, 4, 5, 6, 1, 2, 1, 2, 1],
    }
)
# user 0 hits: [1, 0, 1, 0, 1] (rank 6 beyond k = 5); user 1: [0, 1]; user 3: none

IDCG3 = 1 + 1 / L2(3) + 1 / L2(4)
EXPECTED = {  # (metric, k) -> values for users 0, 1, 3
    ("precision", 1): [1.0, 0.0, 0.0],
    ("precision", 3): [2 / 3, 1 / 3, 0.0],
    ("precision", 5): [3 / 5, 1 / 5, 0.0],
    ("recall", 1): [1 / 3, 0.0, 0.0],
    ("recall", 3): [2 / 3, 1.0, 0.0],
    ("recall", 5): [1.0, 1.0, 0.0],
    ("map", 1): [1.0 / 1, 0.0, 0.0],
    ("map", 3): [(1 / 1 + 2 / 3) / 3, (1 / 2) / 1, 0.0],
    ("map", 5): [(1 / 1 + 2 / 3 + 3 / 5) / 3, (1 / 2) / 1, 0.0],
    ("ndcg", 1): [1.0, 0.0, 0.0],
    ("ndcg", 3): [(1 + 1 / L2(4)) / IDCG3, (1 / L2(3)) / 1, 0.0],
    ("ndcg", 5): [(1 + 1 / L2(4) + 1 / L2(6)) / IDCG3, (1 / L2(3)) / 1, 0.0],
    ("hitrate", 1): [1.0, 0.0, 0.0],
    ("hitrate", 3): [1.0, 1.0, 0.0],
    ("hitrate", 5): [1.0, 1.0, 0.0],
    ("avgdcg", 1): [1 / 3, 0.0, 0.0],
    ("avgdcg", 3): [(1 + 1 / L2(4)) / 3, 1 / L2(3), 0.0],
    ("avgdcg", 5): [(1 + 1 / L2(4) + 1 / L2(6)) / 3, 1 / L2(3), 0.0],
}


def test_registry_names():
    assert list(TOPK_METRICS) == ["precision", "recall", "map", "ndcg", "hitrate", "avgdcg"]


def test_hit_matrix_hand_computed():
    users, hits, n_rel = hit_matrix(RECS, TEST, 5, n_items=N_ITEMS)
    np.testing.assert_array_equal(users, [0, 1, 3])
    np.testing.assert_array_equal(n_rel, [3, 1, 1])
    expected = np.array(
        [[1, 0, 1, 0, 1], [0, 1, 0, 0, 0], [0, 0, 0, 0, 0]],
        dtype=bool,
    )
    np.testing.assert_array_equal(hits, expected)
    # row order of recs does not matter
    shuffled = RECS.sample(frac=1.0, random_state=0)
    _, hits2, _ = hit_matrix(shuffled, TEST, 5, n_items=N_ITEMS)
    np.testing.assert_array_equal(hits2, expected)


def test_hit_matrix_threshold_is_strict_and_configurable():
    users, hits, n_rel = hit_matrix(RECS, TEST, 5, n_items=N_ITEMS, positive_threshold=2.9)
    # ratings of exactly 3 become relevant: user 0 gets item 7 (rank 4), user 2 gets item 6
    np.testing.assert_array_equal(users, [0, 1, 2, 3])
    np.testing.assert_array_equal(n_rel, [4, 1, 1, 1])
    np.testing.assert_array_equal(hits[0], [1, 0, 1, 1, 1])
    np.testing.assert_array_equal(hits[2], [1, 0, 0, 0, 0])


def test_hit_matrix_dedupes_relevant_pairs_and_handles_empty():
    dup = pd.concat([TEST, TEST.iloc[[0]]], ignore_index=True)
    _, _, n_rel = hit_matrix(RECS, dup, 3, n_items=N_ITEMS)
    np.testing.assert_array_equal(n_rel, [3, 1, 1])
    users, hits, n_rel = hit_matrix(RECS, TEST, 3, n_items=N_ITEMS, positive_threshold=5.0)
    assert users.size == 0 and hits.shape == (0, 3) and n_rel.size == 0
    users, hits, _ = hit_matrix(RECS.iloc[:0], TEST, 2, n_items=N_ITEMS)
    assert hits.shape == (3, 2) and not hits.any()


@pytest.mark.parametrize(("metric", "k"), list(EXPECTED))
def test_each_metric_hand_computed(metric, k):
    _, hits, n_rel = hit_matrix(RECS, TEST, k, n_items=N_ITEMS)
    np.testing.assert_allclose(TOPK_METRICS[metric](hits, n_rel), EXPECTED[(metric, k)])


def test_evaluate_topk_tidy_frame_and_summary():
    per_user = evaluate_topk(RECS, TEST, [1, 3, 5], n_items=N_ITEMS)
    assert list(per_user.columns) == ["user", "metric", "k", "value"]
    assert per_user["user"].dtype == np.int32
    assert per_user["k"].dtype == np.int16
    assert per_user["value"].dtype == np.float64
    assert pd.api.types.is_string_dtype(per_user["metric"])
    assert len(per_user) == len(TOPK_METRICS) * 3 * 3
    assert set(per_user["user"]) == {0, 1, 3}  # users 2 and 4 excluded
    for (metric, k), values in EXPECTED.items():
        got = per_user[(per_user["metric"] == metric) & (per_user["k"] == k)]
        np.testing.assert_array_equal(got["user"], [0, 1, 3])
        np.testing.assert_allclose(got["value"], values)

    summary = summarise(per_user)
    assert list(summary.columns) == ["metric", "k", "value", "n_users"]
    assert len(summary) == len(EXPECTED)
    for (metric, k), values in EXPECTED.items():
        row = summary[(summary["metric"] == metric) & (summary["k"] == k)]
        assert row["n_users"].item() == 3
        assert row["value"].item() == pytest.approx(np.mean(values))


def test_block_values_keep_evaluate_topks_frame() -> None:
    """BlockValues (8 bytes a row) gives evaluate_topk's tidy frame back exactly, alone and
    stacked with others (as E1's per-user table stacks them); blocks must divide the rows."""
    ks, metrics = [5, 1, 5], ["ndcg", "recall", "map"]
    blocks = topk_blocks(metrics, ks)
    assert blocks == [(m, k) for m in metrics for k in (5, 1)]
    first = evaluate_topk(RECS, TEST, ks, n_items=N_ITEMS, metrics=metrics)
    compact = BlockValues.of(first, blocks)
    assert compact.values.shape == (len(blocks), 3) and compact.users.tolist() == [0, 1, 3]
    assert len(compact) == len(first)
    pd.testing.assert_frame_equal(compact.frame(), first)
    second = evaluate_topk(RECS, TEST.iloc[:3], [2], n_items=N_ITEMS, metrics=["hitrate"])
    both = stack_block_values([compact, BlockValues.of(second, topk_blocks(["hitrate"], [2]))])
    pd.testing.assert_frame_equal(both, pd.concat([first, second], ignore_index=True))
    with pytest.raises(ValueError, match="equal blocks"):
        BlockValues.of(first.iloc[:-1], blocks)


def test_block_columns_are_stack_block_values_columns_in_their_dtypes() -> None:
    """block_columns gives the columns of the stacked frame, each its own fresh array in the
    final dtype (a frame may take them without a copy); parts without users or at all work."""
    from debiaseval.evaluation.metrics import block_columns

    first = BlockValues.of(
        evaluate_topk(RECS, TEST, [5, 1], n_items=N_ITEMS, metrics=["ndcg", "map"]),
        topk_blocks(["ndcg", "map"], [5, 1]),
    )
    nobody = BlockValues(np.empty(0, np.int32), np.empty((1, 0)), (("recall", 3),))
    second = BlockValues(np.array([7, 2], np.int32), np.array([[0.5, 1.0]]), (("recall", 3),))
    parts = [first, nobody, second]
    columns = block_columns(parts)
    frame = pd.DataFrame(columns, copy=False)
    rows = [
        (m, k, u, v)
        for p in parts
        for (m, k), vs in zip(p.blocks, p.values, strict=True)
        for u, v in zip(p.users, vs, strict=True)
    ]
    expected = pd.DataFrame(
        {
            "user": np.array([r[2] for r in rows], dtype=np.int32),
            "metric": pd.Series([r[0] for r in rows], dtype=str),
            "k": np.array([r[1] for r in rows], dtype=np.int16),
            "value": np.array([r[3] for r in rows], dtype=np.float64),
        }
    )
    pd.testing.assert_frame_equal(frame, expected)
    pd.testing.assert_frame_equal(stack_block_values(parts), expected)
    assert frame["user"].tolist()[-2:] == [7, 2] and len(frame) == 4 * 3 + 2
    for part in parts:
        assert not np.shares_memory(columns["value"], part.values)
        assert not np.shares_memory(columns["user"], part.users)
    empty = pd.DataFrame(block_columns([]))
    assert len(empty) == 0 and list(empty.columns) == ["user", "metric", "k", "value"]


def test_evaluate_topk_subset_and_unknown_metric():
    per_user = evaluate_topk(RECS, TEST, [3], n_items=N_ITEMS, metrics=["recall"])
    np.testing.assert_allclose(per_user["value"], EXPECTED[("recall", 3)])
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_topk(RECS, TEST, [3], n_items=N_ITEMS, metrics=["auc"])
    with pytest.raises(ValueError, match="k"):
        evaluate_topk(RECS, TEST, [0], n_items=N_ITEMS)
    empty = evaluate_topk(RECS, TEST, [3], n_items=N_ITEMS, positive_threshold=5.0)
    assert len(empty) == 0 and list(empty.columns) == ["user", "metric", "k", "value"]


def test_rating_metrics_hand_computed():
    y = np.array([1, 2, 3, 4, 3])
    p = np.array([1.5, 2.0, 2.4, 5.0, 2.5])
    assert mae(y, p) == pytest.approx((0.5 + 0 + 0.6 + 1 + 0.5) / 5)
    assert mse(y, p) == pytest.approx((0.25 + 0 + 0.36 + 1 + 0.25) / 5)
    assert rmse(y, p) == pytest.approx(math.sqrt(1.86 / 5))
    # rounded half up: 2, 2, 2, 5, 3 -> the second and the fifth are right
    assert accuracy(y, p) == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="shape"):
        mae(y, p[:3])
    with pytest.raises(ValueError, match="empty"):
        rmse(np.array([]), np.array([]))


def test_train_overlap_mask():
    train = pd.DataFrame({"user": [0, 0, 1, 3], "item": [1, 2, 4, 12]})
    mask = train_overlap_mask(TEST, train)
    np.testing.assert_array_equal(mask, [True, False, False, False, False, True, False, False])
    assert mask.dtype == bool


def test_labels_of_codes_are_the_column_pandas_makes_of_the_strings():
    from debiaseval.evaluation.metrics import labels_of_codes

    for labels, count in ((["recall", "ndcg", "map"], 4), (["hitrate"], 0), ([], 3)):
        expected = pd.Series(np.repeat(np.asarray(labels, dtype=object), count), dtype=str)
        codes = np.repeat(np.arange(len(labels), dtype=np.int32), count)
        pd.testing.assert_series_equal(labels_of_codes(labels, codes), expected)
