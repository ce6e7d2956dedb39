"""k-NN grids from one fit: ``with_k`` and ``fit_grid`` equal a refit at every k."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from debiaseval.recommenders import (
    ItemKNN,
    NotFittedError,
    UserKNN,
    fit_grid,
    knn,
    make_recommender,
)
from debiaseval.recommenders.ranking import top_k

GRID = [1, 2, 3, 5, 10, 20, 35, 50]


def ratings(n_users: int = 40, n_items: int = 30, *, integer: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < 0.25
    values = rng.integers(1, 6, mask.sum()) if integer else rng.uniform(1, 5, mask.sum())
    dense = np.zeros((n_users, n_items))
    dense[mask] = values
    dense[3] = 0  # a user without ratings
    dense[:, 4] = 0  # an item without ratings
    return sp.csr_matrix(dense)


@pytest.mark.parametrize("integer", [True, False])  # integer ratings: many tied similarities
@pytest.mark.parametrize("cls", [UserKNN, ItemKNN])
def test_with_k_equals_a_refit_at_every_k(cls, integer: bool) -> None:
    x = ratings(integer=integer)
    users = np.arange(x.shape[0])
    base = cls(k=max(GRID)).fit(x, seed=4)
    before = base.score(users)
    for k in GRID:
        twin = base.with_k(k)
        refit = cls(k=k).fit(x, seed=4)
        assert twin.get_params() == {**cls().get_params(), "k": k} and twin.seed_ == 4
        np.testing.assert_array_equal(twin.score(users), refit.score(users))  # bit for bit
        np.testing.assert_array_equal(
            pickle.loads(pickle.dumps(twin)).score(users), refit.score(users)
        )
    np.testing.assert_array_equal(base.score(users), before)  # the base is untouched


def test_with_k_neighbour_ties_by_smaller_index() -> None:
    # users 1 and 2 are equally similar to user 0: k=1 keeps user 1, the smaller id
    r = sp.csr_matrix(np.array([[1.0, 0, 0], [1, 1, 0], [1, 0, 1]]))
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(UserKNN(k=2).fit(r).with_k(1).score(np.array([0])), [[s, s, 0]])
    np.testing.assert_allclose(
        ItemKNN(k=2).fit(r.T.tocsr()).with_k(1).score(np.array([1])), [[s, 0, 0]]
    )


def test_with_k_errors() -> None:
    x = ratings(integer=True)
    with pytest.raises(NotFittedError):
        UserKNN(k=5).with_k(3)
    model = UserKNN(k=5).fit(x)
    with pytest.raises(ValueError, match="k=6 exceeds the k=5") as err:
        model.with_k(6)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        model.with_k(0)
    # a fit that already covers every other user serves any larger k
    everyone = UserKNN(k=500).fit(x)
    users = np.arange(x.shape[0])
    np.testing.assert_array_equal(
        everyone.with_k(1000).score(users), UserKNN(k=1000).fit(x).score(users)
    )


@pytest.mark.parametrize("name", ["userknn", "itemknn"])
def test_fit_grid_fits_a_knn_grid_once(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    x = ratings(integer=True)
    calls = []
    lists = knn._neighbour_lists
    monkeypatch.setattr(knn, "_neighbour_lists", lambda *a: calls.append(a[1]) or lists(*a))
    points = [{"k": 5}, {"k": 20}, {"k": 2}]
    got = list(fit_grid(name, {}, points, x, seed=2))
    assert calls == [20]  # one similarity computation, at the largest k
    assert [p for p, _ in got] == points
    for point, model in got:
        expected = make_recommender(name, **point).fit(x, seed=2)
        assert model.get_params() == expected.get_params()
        pd.testing.assert_frame_equal(top_k(model, x, 10), top_k(expected, x, 10))


def test_fit_grid_other_recommenders_and_params() -> None:
    x = ratings(integer=True)
    points = [{"positive_threshold": 3.0}, {"positive_threshold": 4.0}]
    for point, model in fit_grid("pospop", {}, points, x, seed=0):
        expected = make_recommender("pospop", **point).fit(x)
        np.testing.assert_array_equal(model.score(np.arange(5)), expected.score(np.arange(5)))
    # k from the fixed params, no grid: one fit with that k
    ((point, model),) = fit_grid("itemknn", {"k": 7}, [{}], x, seed=0)
    assert point == {} and model.get_params() == {"k": 7, "direction": "rated_to_candidate"}
    with pytest.raises(ValueError, match="unknown recommender"):
        list(fit_grid("svd", {}, [{}], x, seed=0))
    with pytest.raises(ValueError, match="k must be"):
        list(fit_grid("userknn", {}, [{"k": 0}], x, seed=0))


def dense_reference(x: sp.csr_matrix, k: int, *, by_users: bool) -> np.ndarray:
    """k-NN scores from the full dense similarity matrix (the layout the sparse graph avoids):
    neighbours by a stable sort on (-similarity, index), scores by dense products (ItemKNN in
    its default direction: each rated item votes for its own neighbours)."""
    rows = x if by_users else sp.csr_matrix(x.T)
    unit = knn._row_normalize(rows)
    sims = (unit @ unit.T).toarray()  # the same similarity values as the blocks
    n = sims.shape[0]
    np.fill_diagonal(sims, -np.inf)
    order = np.argsort(-sims, axis=1, kind="stable")[:, : min(k, n - 1)]  # ties: smaller index
    graph = np.zeros_like(sims)
    np.put_along_axis(graph, order, np.take_along_axis(sims, order, axis=1), axis=1)
    dense = x.toarray()
    return graph @ dense if by_users else dense @ graph


@pytest.mark.parametrize("integer", [True, False])  # integer ratings: many tied similarities
@pytest.mark.parametrize("cls", [UserKNN, ItemKNN])
def test_sparse_graph_scores_equal_the_dense_reference_at_every_k(cls, integer: bool) -> None:
    x = ratings(integer=integer, seed=3)
    n = x.shape[0] if cls is UserKNN else x.shape[1]
    fitted = cls(k=max(GRID)).fit(x)
    users = np.arange(x.shape[0])
    for k in GRID:
        model = fitted.with_k(k)
        graph = model.neighbours_
        assert sp.issparse(graph) and graph.nnz == n * min(k, n - 1)  # k neighbours per row
        expected = dense_reference(x, k, by_users=cls is UserKNN)
        np.testing.assert_allclose(model.score(users), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cls(k=k).fit(x).score(users), expected, rtol=1e-12, atol=1e-12)
