"""The compiled ranking kernel and the models' own ``_rank`` against the plain numpy lists.

The reference is the former ``top_k``: -inf written over the training items of a dense
score copy, then :func:`top_k_indices` (argpartition, ties by the smaller item id). See
docs/own-recommender.md and docs/performance.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from debiaseval.io.errors import ContractError
from debiaseval.recommenders import AvgRating, PosPop, Recommender, check_recommender
from debiaseval.recommenders.ranking import empty_recommendations, top_k, top_k_indices


class Table(Recommender):
    """Test double: returns a given score matrix in its own dtype (float32 or float64)."""

    name = "table"

    def __init__(self, *, table: np.ndarray | None = None) -> None:
        self.table = table

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        assert self.table is not None and self.table.shape == train.shape

    def _score(self, users: np.ndarray) -> np.ndarray:
        return np.array(self.table[users])


class DenseOnly:
    """A fitted model seen through ``score`` alone (no ``_rank``, no native scores)."""

    def __init__(self, model: Recommender) -> None:
        self.model = model

    def score(self, users: np.ndarray) -> np.ndarray:
        return self.model.score(users)


def reference_top_k(
    scores: np.ndarray, train: sp.csr_matrix, k: int, users: np.ndarray, exclude: bool = True
) -> pd.DataFrame:
    """The former top_k on a dense score matrix: one -inf copy and an argpartition."""
    s = np.array(scores[users], dtype=scores.dtype)
    if exclude:
        rows = train[users]
        s[np.repeat(np.arange(users.size), np.diff(rows.indptr)), rows.indices] = -np.inf
    cols = top_k_indices(s, k)
    vals = np.take_along_axis(s, cols, axis=1)
    keep = vals > -np.inf
    rank = np.broadcast_to(np.arange(1, cols.shape[1] + 1, dtype=np.int16), cols.shape)
    if not keep.any():
        return empty_recommendations()
    return pd.DataFrame(
        {
            "user": np.broadcast_to(users[:, None], cols.shape)[keep].astype(np.int32),
            "item": cols[keep].astype(np.int32),
            "rank": rank[keep],
            "score": vals[keep].astype(np.float32),
        }
    )


def random_case(seed: int, dtype: type, n_users: int = 60, n_items: int = 40):
    """Scores with many ties (a few levels), some -inf, a user whose every item is a
    training item, users with fewer candidates than k; train with unsorted indices."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, (n_users, n_items)).astype(dtype)
    scores[rng.random(scores.shape) < 0.05] = -np.inf
    density = rng.random(n_users)[:, None]
    mask = rng.random((n_users, n_items)) < density
    mask[3] = True  # no candidate at all
    mask[4, :-2] = True  # two candidates
    rows, cols = np.nonzero(mask)
    flip = rng.permutation(rows.size)  # build from shuffled pairs: unsorted indices
    train = sp.csr_matrix(
        (np.full(rows.size, 4.0)[flip], (rows[flip], cols[flip])), shape=scores.shape
    )
    return scores, train


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 5, 39, 100])
def test_kernel_lists_equal_the_reference(dtype: type, seed: int, k: int) -> None:
    scores, train = random_case(seed, dtype)
    model = Table(table=scores).fit(train)
    users = np.arange(scores.shape[0])
    for exclude in (True, False):
        got = top_k(model, train, k, batch_size=13, exclude_train=exclude)
        expected = reference_top_k(scores, sp.csr_matrix(train), k, users, exclude)
        pd.testing.assert_frame_equal(got, expected)
    excluded = top_k(model, train, k)
    assert 3 not in set(excluded["user"])
    assert (excluded["user"] == 4).sum() <= 2


def test_float32_scores_rank_as_their_float64_cast() -> None:
    rng = np.random.default_rng(5)
    scores = rng.standard_normal((50, 300)).astype(np.float32)
    scores[:, 10] = scores[:, 11]  # ties
    _, train = random_case(5, np.float64, 50, 300)
    native = top_k(Table(table=scores).fit(train), train, 20)
    cast = top_k(Table(table=scores.astype(np.float64)).fit(train), train, 20)
    pd.testing.assert_frame_equal(native, cast)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_thread_count_and_batch_size_never_change_the_lists(dtype: type) -> None:
    scores, train = random_case(11, dtype, n_users=300, n_items=120)
    model = Table(table=scores).fit(train)
    runs = [
        top_k(model, train, 10, batch_size=batch, threads=threads)
        for threads in (1, 2, 3)
        for batch in (1, 7, 64, 1024)
    ]
    for run in runs[1:]:
        pd.testing.assert_frame_equal(run, runs[0])


def test_nan_scores_are_an_error_naming_the_model() -> None:
    scores, train = random_case(0, np.float64)
    scores[7, 5] = np.nan
    with pytest.raises(ContractError) as error:
        top_k(Table(table=scores).fit(train), train, 3)
    assert str(error.value) == (
        f"{Table.__module__}.Table._score() returned NaN scores for 1 of the {scores.shape[0]} "
        "users of a batch (the first: user 7); expected finite scores, or -inf for an item it "
        "excludes"
    )


def test_bad_threads() -> None:
    scores, train = random_case(0, np.float64)
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        top_k(Table(table=scores).fit(train), train, 3, threads=0)


def ratings_with_ties(seed: int, n_users: int = 80, n_items: int = 50) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < rng.random(n_users)[:, None] * 0.5
    mask[:, -3:] = False  # items without ratings: ties at the global mean / zero
    mask[0] = True  # a user with no candidate
    rows, cols = np.nonzero(mask)
    values = rng.integers(1, 6, rows.size).astype(np.float64)
    return sp.csr_matrix((values, (rows, cols)), shape=(n_users, n_items))


@pytest.mark.parametrize(
    "model",
    [PosPop(), PosPop(positive_threshold=1.0), AvgRating(), AvgRating(damping=5.0)],
    ids=repr,
)
@pytest.mark.parametrize("seed", [0, 1])
def test_every_builtin_rank_equals_its_dense_path(model: Recommender, seed: int) -> None:
    train = ratings_with_ties(seed)
    model.fit(train)
    assert callable(model._rank)
    users = np.array([0, 1, 5, 9, 40, 79])
    for k in (1, 10, 50, 60):
        for exclude in (True, False):
            for chosen in (None, users):
                own = top_k(model, train, k, users=chosen, batch_size=3, exclude_train=exclude)
                dense = top_k(DenseOnly(model), train, k, users=chosen, exclude_train=exclude)
                pd.testing.assert_frame_equal(own, dense)
    check_recommender(type(model), model.get_params(), train=train)


def test_check_recommender_catches_a_rank_that_differs_from_the_scores() -> None:
    class Wrong(PosPop):
        name = "wrong"

        def _rank(self, users, k, exclude):  # type: ignore[no-untyped-def]
            items, vals = super()._rank(users, k, exclude)
            return items[:, ::-1].copy(), vals[:, ::-1].copy()

    from debiaseval.recommenders import ContractError

    with pytest.raises(ContractError, match="_rank lists differ"):
        check_recommender(Wrong)


@pytest.mark.realdata
@pytest.mark.parametrize("dataset", ["coat", "ml-100k"])
def test_lists_of_every_builtin_on_real_data_equal_the_reference(dataset: str, tmp_path) -> None:
    """On a real MNAR log, every built-in model's lists (own ``_rank`` or the kernel) equal
    the former dense path's, at E1's depth and with many ties (popularity counts)."""
    import os

    from debiaseval.data import MIRROR_ENV, build_interactions, fetch_dataset, load_raw
    from debiaseval.data.interactions import rating_matrix
    from debiaseval.recommenders import make_recommender

    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror:
        pytest.skip(f"{MIRROR_ENV} not set: no local copy of the {dataset} dataset")
    if not (Path(mirror) / dataset).is_dir():
        pytest.skip(f"{dataset} is not in the mirror {mirror}")
    raw = load_raw(dataset, fetch_dataset(dataset, tmp_path / dataset, mirror=Path(mirror)))
    interactions, users, items = build_interactions(raw)
    mnar = interactions[interactions["part"] == "mnar"]
    train = rating_matrix(mnar, len(users), len(items))
    every = np.arange(train.shape[0])
    models = {
        "pospop": {},
        "avgrating": {"damping": 2.0},
        "random": {},
        "itemknn": {"k": 20},
        "userknn": {"k": 20},
        "mf": {"epochs": 2, "factors": 8},
    }
    for name, params in models.items():
        model = make_recommender(name, **params).fit(train, seed=1)
        scores = model.score(every)
        got = top_k(model, train, 100, batch_size=100)
        pd.testing.assert_frame_equal(got, reference_top_k(scores, train, 100, every), obj=name)


def test_a_job_gives_the_ranking_its_snakemake_threads(tmp_path, monkeypatch) -> None:
    """numba reads NUMBA_NUM_THREADS when a job first imports it: the job's threads."""
    import os

    from debiaseval.workflow.runtime import job

    monkeypatch.setenv("NUMBA_NUM_THREADS", "8")
    with job(tmp_path / "job.log", threads=3):
        assert os.environ["NUMBA_NUM_THREADS"] == "3"


@pytest.mark.parametrize("seed", [0, 1])
def test_ure_thresholds_equal_a_partition(seed: int) -> None:
    """E5's thresholds s_K from the compiled pass equal numpy's (K+1)-th largest entries,
    with ties, -inf entries (rows with fewer candidates than K + 1) and K beyond the items."""
    from debiaseval.evaluation.ure import kth_largest
    from debiaseval.recommenders.ranking import largest

    scores, train = random_case(seed, np.float64)
    rows, cols = train.nonzero()
    scores[rows, cols] = -np.inf
    ks = [1, 5, 10, 39, 40, 60]
    n_cols = scores.shape[1]
    expected = np.full((scores.shape[0], len(ks)), -np.inf)
    for j, k in enumerate(ks):
        if k < n_cols:
            expected[:, j] = np.sort(scores, axis=1)[:, n_cols - 1 - k]
    np.testing.assert_array_equal(kth_largest(scores, ks), expected)
    with pytest.raises(ValueError, match="NaN"):
        largest(np.array([[0.0, np.nan]]), 1)


def test_a_model_that_overrides_score_is_ranked_by_its_score() -> None:
    class Flipped(Table):
        name = "flipped"

        def score(self, users: np.ndarray) -> np.ndarray:
            return -super().score(users)

    scores, train = random_case(3, np.float32)
    got = top_k(Flipped(table=scores).fit(train), train, 5)
    expected = reference_top_k(
        -scores.astype(np.float64), sp.csr_matrix(train), 5, np.arange(scores.shape[0])
    )
    pd.testing.assert_frame_equal(got, expected)
