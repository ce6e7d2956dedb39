"""k-NN models: ItemKNN's two neighbourhood directions on a hand-computed case
(docs/experiments/e1.md), and the compiled neighbour lists against the blockwise dense
reference they replaced, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from debiaseval.benchmarks import reference_neighbour_lists
from debiaseval.recommenders import ItemKNN, UserKNN, fit_grid, knn, make_recommender

# users × items, binary: item vectors over users i0 = (1,1,0), i1 = (1,1,1), i2 = (0,0,1),
# i3 = (0,1,1). Cosines: (0,1) = (1,3) = 2/√6 = a, (2,3) = 1/√2 = b, (1,2) = 1/√3, (0,3) = 1/2,
# (0,2) = 0. With k = 1: N(0) = {1}, N(1) = {0} (tied with 3: the smaller id), N(2) = {3},
# N(3) = {1}.
R = sp.csr_matrix(np.array([[1.0, 1, 0, 0], [1, 1, 0, 1], [0, 1, 1, 1]]))
A, B = 2 / np.sqrt(6), 1 / np.sqrt(2)

# RankSys: each rated item j adds sim(i, j)·r_uj to the i in N(j).
#   user 0 rated {0, 1}: 0 votes for 1, 1 for 0;
#   user 1 rated {0, 1, 3}: 0 votes for 1, 1 for 0, 3 for 1;
#   user 2 rated {1, 2, 3}: 1 votes for 0, 2 for 3, 3 for 1.
RATED_TO_CANDIDATE = np.array([[A, A, 0, 0], [A, 2 * A, 0, 0], [A, A, 0, B]])
# The other direction: candidate i adds sim(i, j)·r_uj for the rated j in N(i).
#   user 0: N(0) = 1 rated, N(1) = 0 rated, N(2) = 3 not rated, N(3) = 1 rated;
#   user 1: all four neighbours rated; user 2: N(1) = 0 not rated, the others rated.
CANDIDATE_TO_RATED = np.array([[A, A, 0, A], [A, A, B, A], [A, 0, B, A]])


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, RATED_TO_CANDIDATE),  # the default is RankSys's direction
        ({"direction": "rated_to_candidate"}, RATED_TO_CANDIDATE),
        ({"direction": "candidate_to_rated"}, CANDIDATE_TO_RATED),
    ],
)
def test_itemknn_directions_on_a_hand_computed_case(params, expected) -> None:
    model = ItemKNN(k=1, **params).fit(R)
    np.testing.assert_allclose(model.score(np.arange(3)), expected, rtol=1e-15, atol=0)
    # the same from a wider fit cut to k = 1
    wide = ItemKNN(k=3, **params).fit(R).with_k(1)
    np.testing.assert_array_equal(wide.score(np.arange(3)), model.score(np.arange(3)))


def test_itemknn_directions_differ_on_candidates() -> None:
    # user 0's candidates are items 2 and 3: only the other direction reaches item 3, through
    # N(3) = {1}; user 1's candidate item 2 is reached only through N(2) = {3}
    default = ItemKNN(k=1).fit(R).score(np.arange(3))
    other = ItemKNN(k=1, direction="candidate_to_rated").fit(R).score(np.arange(3))
    assert default[0, 3] == 0 and other[0, 3] > 0
    assert default[1, 2] == 0 and other[1, 2] > 0


def test_itemknn_with_every_neighbour_the_directions_agree() -> None:
    # k = n_items - 1: every item is every other's neighbour and the cosine is symmetric
    a = ItemKNN(k=3).fit(R).score(np.arange(3))
    b = ItemKNN(k=3, direction="candidate_to_rated").fit(R).score(np.arange(3))
    np.testing.assert_allclose(a, b, rtol=1e-15)


def test_itemknn_direction_is_checked_and_gridded() -> None:
    with pytest.raises(ValueError, match="direction must be one of") as err:
        make_recommender("itemknn", direction="both").fit(R)
    assert "\n" not in str(err.value)
    points = [{"k": 1, "direction": d} for d in ("candidate_to_rated", "rated_to_candidate")]
    fits = fit_grid("itemknn", {}, points, R, seed=0)
    got = {point["direction"]: model.score(np.arange(3)) for point, model in fits}
    np.testing.assert_allclose(got["rated_to_candidate"], RATED_TO_CANDIDATE, rtol=1e-15)
    np.testing.assert_allclose(got["candidate_to_rated"], CANDIDATE_TO_RATED, rtol=1e-15)


# -- the compiled neighbour lists ---------------------------------------------------------


def tied_ratings(
    n_rows: int, n_cols: int, *, seed: int, signed: bool = False, density: float = 0.15
) -> sp.csr_matrix:
    """Sparse rows of few distinct values (many tied cosines), an empty row and a row that
    repeats another; ``signed``: values of both signs, so similarities may be negative or
    cancel to exactly zero."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n_rows, n_cols)) < density
    values = rng.choice([-1.0, 1.0, 2.0], mask.sum()) if signed else rng.integers(1, 3, mask.sum())
    dense = np.zeros((n_rows, n_cols))
    dense[mask] = values
    dense[2] = 0  # no ratings: every similarity 0
    dense[5] = dense[1]  # a duplicate: similarity 1 with row 1
    return sp.csr_matrix(dense)


def assert_same_lists(got: sp.csr_matrix, expected: tuple[np.ndarray, np.ndarray]) -> None:
    n, k = expected[0].shape
    np.testing.assert_array_equal(got.indices.reshape(n, k), expected[0])
    # bit for bit: the same floats, not merely close ones (0.0 and -0.0 told apart)
    np.testing.assert_array_equal(got.data.reshape(n, k).view(np.int64), expected[1].view(np.int64))


# dense: every row's product touches most rows (sums without bookkeeping, all rows scanned);
# sparse: rows touch few others (only the touched rows are scanned)
@pytest.mark.parametrize(("shape", "density"), [((90, 40), 0.15), ((400, 300), 0.006)])
@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lists_equal_the_blockwise_reference_bit_for_bit(
    seed: int, signed: bool, shape: tuple[int, int], density: float
) -> None:
    x = tied_ratings(*shape, seed=seed, signed=signed, density=density)
    for unit in (knn._row_normalize(x), knn._row_normalize(sp.csr_matrix(x.T))):
        n = unit.shape[0]
        for k in (1, 3, 17, n - 1):  # n - 1: every other row, zeros and negatives included
            expected = reference_neighbour_lists(unit, k)
            for threads in (1, 2, 3):
                assert_same_lists(knn._neighbour_lists(unit, k, threads), expected)


def test_lists_follow_the_stored_order_of_the_sums() -> None:
    # scipy sums a product row in its stored (here reversed) order; so does the kernel
    x = knn._row_normalize(tied_ratings(60, 50, seed=4))
    flipped = x.copy()
    for r in range(x.shape[0]):
        a, b = x.indptr[r], x.indptr[r + 1]
        flipped.indices[a:b] = x.indices[a:b][::-1]
        flipped.data[a:b] = x.data[a:b][::-1]
    flipped.has_sorted_indices = False
    for unit in (x, flipped):
        assert_same_lists(knn._neighbour_lists(unit, 8, 2), reference_neighbour_lists(unit, 8))


def test_lists_of_random_real_ratings_and_models() -> None:
    rng = np.random.default_rng(5)
    x = sp.random(300, 120, 0.05, format="csr", random_state=rng)
    for cls, rows in ((UserKNN, x), (ItemKNN, sp.csr_matrix(x.T))):
        model = cls(k=25).fit(x)
        assert_same_lists(
            model.neighbours_, reference_neighbour_lists(knn._row_normalize(rows), 25)
        )


def test_kernel_threads_follow_the_blas_limit() -> None:
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        assert knn.kernel_threads() == 1
    assert knn.kernel_threads() >= 1


def test_benchmark_knn_section_runs_at_a_tiny_size() -> None:
    from debiaseval.benchmarks import main

    tiny = ["--knn-shape", "300", "80", "3000", "--knn-user-shape", "200", "60", "2000"]
    rows = main(["--sections", "knn", *tiny, "--knn-k", "10", "--repeat", "1"])
    for label in ("itemknn", "userknn"):
        assert rows[f"knn {label}: former lists / kernel"] > 0
        assert rows[f"knn {label}: kernel 1 / 2 threads (wall)"] > 0
    assert rows["knn itemknn: implicit fit / ItemKNN.fit"] > 0  # implicit is in the test extra
