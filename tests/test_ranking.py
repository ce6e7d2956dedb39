"""Top-N lists over the candidate set: ties, exclusion, batching, dtypes.

See docs/own-recommender.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from debiaseval.io.errors import ContractError
from debiaseval.recommenders import ItemKNN, PosPop, Recommender
from debiaseval.recommenders.ranking import top_k, top_k_indices


class FixedScores(Recommender):
    """Test double: returns a given score matrix."""

    name = "fixed"

    def __init__(self, *, table: np.ndarray | None = None) -> None:
        self.table = table

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        assert self.table is not None and self.table.shape == train.shape

    def _score(self, users: np.ndarray) -> np.ndarray:
        return np.array(self.table[users], dtype=np.float64)


SCORES = np.array(
    [
        [0.5, 0.9, 0.5, 0.5, 0.1, 0.9],  # tie 0/2/3 at the k = 3 boundary
        [0.3, 0.2, 0.1, 0.0, -5.0, 7.0],  # only items 4 and 5 are candidates
        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],  # all tied
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],  # no candidates at all
    ]
)
TRAIN = sp.csr_matrix(
    (np.full(11, 4.0), ([0, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3], [1, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5])),
    shape=SCORES.shape,
)


def fixed_model() -> FixedScores:
    return FixedScores(table=SCORES).fit(TRAIN)


def test_hand_computed_lists() -> None:
    got = top_k(fixed_model(), TRAIN, 3)
    expected = pd.DataFrame(
        {
            "user": np.array([0, 0, 0, 1, 1, 2, 2, 2], np.int32),
            "item": np.array([5, 0, 2, 5, 4, 0, 1, 2], np.int32),
            "rank": np.array([1, 2, 3, 1, 2, 1, 2, 3], np.int16),
            "score": np.array([0.9, 0.5, 0.5, 7.0, -5.0, 1, 1, 1], np.float32),
        }
    )
    pd.testing.assert_frame_equal(got, expected)


def test_without_exclusion_training_items_compete() -> None:
    got = top_k(fixed_model(), TRAIN, 2, exclude_train=False)
    assert got["item"].tolist() == [1, 5, 5, 0, 0, 1, 5, 4]
    assert got["rank"].tolist() == [1, 2] * 4


def test_training_items_never_returned_and_k_larger_than_items() -> None:
    got = top_k(fixed_model(), TRAIN, 50)
    pairs = set(zip(*TRAIN.nonzero(), strict=True))
    assert not pairs & set(zip(got["user"], got["item"], strict=True))
    assert got.groupby("user").size().to_dict() == {0: 5, 1: 2, 2: 6}
    assert np.isfinite(got["score"]).all()


def test_users_subset_sorted_and_deduplicated() -> None:
    got = top_k(fixed_model(), TRAIN, 3, users=np.array([2, 0, 2]))
    assert got["user"].tolist() == [0, 0, 0, 2, 2, 2]
    empty = top_k(fixed_model(), TRAIN, 3, users=np.array([3]))
    assert empty.empty and dict(empty.dtypes) == dict(top_k(fixed_model(), TRAIN, 3).dtypes)


def test_dtypes() -> None:
    got = top_k(fixed_model(), TRAIN, 3)
    assert dict(got.dtypes) == {
        "user": np.dtype(np.int32),
        "item": np.dtype(np.int32),
        "rank": np.dtype(np.int16),
        "score": np.dtype(np.float32),
    }


def test_batch_size_independence_with_many_ties() -> None:
    rng = np.random.default_rng(3)
    mask = rng.random((60, 40)) < 0.2
    train = sp.csr_matrix(np.where(mask, rng.integers(1, 6, mask.shape), 0).astype(float))
    for model in (PosPop().fit(train), ItemKNN(k=5).fit(train)):  # integer counts: ties
        one = top_k(model, train, 10, batch_size=1)
        many = top_k(model, train, 10, batch_size=1000)
        pd.testing.assert_frame_equal(one, many)
        assert (one.groupby("user")["rank"].max() == 10).all()


def brute_top_k(s: np.ndarray, k: int) -> np.ndarray:
    return np.array([np.lexsort((np.arange(row.size), -row))[:k] for row in s])


@pytest.mark.parametrize("seed", range(5))
def test_top_k_indices_against_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 4, (50, 30)).astype(float)  # heavy ties
    s[rng.random(s.shape) < 0.2] = -np.inf
    for k in (1, 2, 7, 29, 30, 31):
        got = top_k_indices(s, k)
        assert got.dtype == np.int64 and got.shape == (50, min(k, 30))
        np.testing.assert_array_equal(got, brute_top_k(s, k))


def test_errors() -> None:
    model = fixed_model()
    with pytest.raises(ValueError, match="k must be"):
        top_k(model, TRAIN, 0)
    with pytest.raises(ValueError, match="shape"):
        top_k(model, sp.csr_matrix((4, 7)), 3)
    nan = SCORES.copy()
    nan[2, 2] = np.nan
    with pytest.raises(ContractError, match="NaN"):
        top_k(FixedScores(table=nan).fit(TRAIN), TRAIN, 3)
