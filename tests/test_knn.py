"""ItemKNN's two neighbourhood directions on a hand-computed case (docs/experiments/e1.md)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from debiaseval.recommenders import ItemKNN, fit_grid, make_recommender

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
