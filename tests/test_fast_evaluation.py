"""Evaluation at numpy speed gives the results of the plain numpy set operations it replaced."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval.evaluation import metrics
from debiaseval.evaluation.metrics import hit_matrix, train_overlap_mask
from debiaseval.evaluation.testsets import (
    evaluate_on_testsets,
    evaluate_recommenders,
    train_overlap_masks,
)
from debiaseval.recommenders.ranking import top_k_indices


@pytest.fixture(params=["table", "sorted"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through the lookup-table path and through the binary-search path."""
    if request.param == "sorted":
        monkeypatch.setattr(metrics, "_TABLE_BYTES", 0)
        monkeypatch.setattr(metrics, "_TABLE_PER_KEY", 0)
    return request.param


@pytest.mark.parametrize("span", [50, 10**12])
def test_isin_equals_numpy(path: str, span: int) -> None:
    rng = np.random.default_rng(span)
    for n_keys, n_ref in [(0, 5), (5, 0), (1, 1), (500, 300), (300, 2000)]:
        keys = rng.integers(0, span, n_keys)
        ref = rng.integers(0, span, n_ref)  # duplicates included when span is small
        ref = np.concatenate([ref, keys[: n_keys // 3]])  # some sure hits
        expected = np.isin(keys, ref)
        np.testing.assert_array_equal(metrics._isin(keys, ref), expected)
        ref_sorted = np.sort(ref)
        np.testing.assert_array_equal(metrics._isin(keys, ref_sorted, ref_sorted=True), expected)


def test_unique_sorted() -> None:
    a = np.array([5, 1, 5, 3, 1, 9], dtype=np.int64)
    np.testing.assert_array_equal(metrics._unique_sorted(a), [1, 3, 5, 9])
    assert metrics._unique_sorted(np.empty(0, np.int64)).size == 0


def frames(seed: int, n_users: int = 60, n_items: int = 40):
    rng = np.random.default_rng(seed)
    test = pd.DataFrame(
        {
            "user": rng.integers(0, n_users, 900),  # with duplicate pairs
            "item": rng.integers(0, n_items, 900),
            "rating": rng.integers(1, 6, 900).astype(np.float32),
        }
    )
    listed = rng.permutation(n_users)[: n_users - 7]  # some users have no list
    recs = pd.DataFrame(
        {
            "user": np.repeat(listed, 10),
            "item": np.concatenate([rng.permutation(n_items)[:10] for _ in listed]),
            "rank": np.tile(np.arange(1, 11), listed.size),
        }
    ).sample(frac=0.9, random_state=seed)  # short lists, shuffled rows
    train = pd.DataFrame(
        {"user": rng.integers(0, n_users, 700), "item": rng.integers(0, n_items, 700)}
    )
    return recs, test, train, n_items


def hit_matrix_with_numpy_sets(recs, test, k, n_items, threshold=3.0):
    """The former implementation: np.unique and np.isin."""
    rel = test[test["rating"] > threshold]
    keys = np.unique(rel["user"].to_numpy(np.int64) * n_items + rel["item"].to_numpy())
    users, n_rel = np.unique(keys // n_items, return_counts=True)
    hits = np.zeros((users.size, k), dtype=bool)
    for u, i, r in recs[["user", "item", "rank"]].itertuples(index=False):
        row = np.searchsorted(users, u)
        if r <= k and row < users.size and users[row] == u:
            hits[row, r - 1] = np.isin(u * n_items + i, keys)
    return users, hits, n_rel


@pytest.mark.parametrize("seed", range(3))
def test_hit_matrix_equals_numpy_sets(path: str, seed: int) -> None:
    recs, test, _, n_items = frames(seed)
    for k, threshold in [(10, 3.0), (4, 3.0), (10, 4.5), (10, 5.0)]:
        got = hit_matrix(recs, test, k, n_items=n_items, positive_threshold=threshold)
        expected = hit_matrix_with_numpy_sets(recs, test, k, n_items, threshold)
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype


@pytest.mark.parametrize("seed", range(3))
def test_train_overlap_mask_equals_numpy_isin(path: str, seed: int) -> None:
    _, test, train, n_items = frames(seed)
    keys = test["user"].to_numpy() * n_items + test["item"].to_numpy()
    expected = np.isin(keys, train["user"].to_numpy() * n_items + train["item"].to_numpy())
    assert expected.any() and not expected.all()
    np.testing.assert_array_equal(train_overlap_mask(test, train), expected)


def test_overlaps_computed_once_give_the_same_tables() -> None:
    recs, test, train, n_items = frames(0)
    testsets = {"gt": test, "half": test.iloc[::2], "empty": test.iloc[:0]}
    options = dict(
        n_items=n_items, ks=[3, 10], metrics=["precision", "recall", "ndcg"], positive_threshold=3
    )
    masks = train_overlap_masks(testsets, train)
    assert list(masks) == list(testsets)
    for drop in (False, True):
        plain = evaluate_on_testsets(recs, testsets, train, drop_train_overlap=drop, **options)
        shared = evaluate_on_testsets(
            recs, testsets, None, drop_train_overlap=drop, overlaps=masks, **options
        )
        pd.testing.assert_frame_equal(plain, shared)
        other = recs[recs["rank"] <= 5]
        both = evaluate_recommenders(
            {"A": recs, "B": other}, testsets, train, drop_train_overlap=drop, **options
        )
        single = [
            evaluate_on_testsets(lists, testsets, train, drop_train_overlap=drop, **options)
            for lists in (recs, other)
        ]
        expected = pd.concat(
            [t.assign(recommender=n) for n, t in zip("AB", single, strict=True)],
            ignore_index=True,
        )
        pd.testing.assert_frame_equal(both, expected[["recommender", *single[0].columns]])


def test_overlaps_errors() -> None:
    recs, test, _, n_items = frames(0)
    options = dict(
        n_items=n_items, ks=[3], metrics=["recall"], positive_threshold=3, drop_train_overlap=True
    )
    with pytest.raises(ValueError, match="needs train or precomputed overlaps"):
        evaluate_on_testsets(recs, {"gt": test}, None, **options)
    with pytest.raises(ValueError, match="mask of 900 rows for test set 'gt'"):
        evaluate_on_testsets(
            recs, {"gt": test}, None, overlaps={"gt": np.zeros(3, bool)}, **options
        )


def test_top_k_indices_leaves_read_only_scores_alone() -> None:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 3, (20, 15)).astype(float)  # ties straddle the cut
    s.flags.writeable = False
    got = top_k_indices(s, 4)
    expected = np.array([np.lexsort((np.arange(15), -row))[:4] for row in s])
    np.testing.assert_array_equal(got, expected)
