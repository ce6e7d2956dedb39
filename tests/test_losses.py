"""Per-pair losses of [ICML16]: hand-computed cases, dense vs model scoring, bad input."""

import numpy as np
import pytest

from debiaseval.evaluation.losses import loss_matrix, pair_losses, parse_metric

Y = np.array([[5.0, 1.0, 3.0, 4.0], [2.0, 2.0, 5.0, 1.0]])
P = np.array([[4.0, 4.0, 1.0, 2.0], [1.5, 3.0, 0.2, 3.0]])


class Model:
    """A scorer backed by a dense matrix, counting how many users it was asked for."""

    def __init__(self, scores):
        self.scores = scores
        self.calls = []

    def score(self, users):
        self.calls.append(len(users))
        return self.scores[users].copy()


def test_rating_losses_hand_computed():
    np.testing.assert_allclose(loss_matrix("mae", Y, P), np.abs(Y - P))
    np.testing.assert_allclose(loss_matrix("mse", Y, P)[0], [1, 9, 4, 4])
    # round half up: 1.5 -> 2 (true 2: hit), 0.2 -> 0, 3.0 -> 3
    np.testing.assert_allclose(loss_matrix("accuracy", Y, P)[1], [1, 0, 0, 0])


def test_dcg_and_precision_hand_computed():
    # user 0: scores 4, 4, 1, 2 -> ties of items 0 and 1 go to item 0: ranks 1, 2, 4, 3
    # user 1: scores 1.5, 3, 0.2, 3 -> items 1, 3 tie: ranks 3, 1, 4, 2
    dcg = loss_matrix("dcg@2", Y, P)
    n = 4
    np.testing.assert_allclose(dcg[0], [n * 5 / np.log2(2), n * 1 / np.log2(3), 0, 0])
    np.testing.assert_allclose(dcg[1], [0, n * 2 / np.log2(2), 0, n * 1 / np.log2(3)])
    # mean over pairs = mean over users of DCG@2 with the ratings as gains
    assert dcg.mean() == pytest.approx(((5 + 1 / np.log2(3)) + (2 + 1 / np.log2(3))) / 2)
    # tie order reversed: item 1 before item 0, item 3 before item 1
    rev = loss_matrix("dcg@2", Y, P, tie_break=np.array([3, 2, 1, 0]))
    np.testing.assert_allclose(rev[0], [n * 5 / np.log2(3), n * 1 / np.log2(2), 0, 0])
    np.testing.assert_allclose(rev[1], [0, n * 2 / np.log2(3), 0, n * 1 / np.log2(2)])
    prec = loss_matrix("precision@2", Y, P, positive_threshold=3)
    np.testing.assert_allclose(prec, [[n / 2, 0, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize("metric", ["mae", "mse", "accuracy", "dcg@3", "precision@2"])
def test_pair_losses_match_the_full_matrix_for_dense_and_model(metric):
    rng = np.random.default_rng(0)
    y = rng.integers(1, 6, (30, 12)).astype(float)
    p = np.round(rng.normal(3, 1, (30, 12)), 1)
    tie = rng.permutation(12)
    full = loss_matrix(metric, y, p, tie_break=tie)
    users, items = np.nonzero(rng.random(y.shape) < 0.3)
    shuffle = rng.permutation(users.size)
    users, items = users[shuffle], items[shuffle]
    dense = pair_losses(metric, users, items, y[users, items], p, tie_break=tie)
    np.testing.assert_allclose(dense, full[users, items])
    model = Model(p)
    scored = pair_losses(
        metric, users, items, y[users, items], model, n_items=12, tie_break=tie, batch_size=7
    )
    np.testing.assert_array_equal(scored, dense)
    assert max(model.calls) <= 7 and sum(model.calls) == np.unique(users).size


def test_parse_metric_and_bad_input():
    assert parse_metric("mae") == ("mae", None)
    assert parse_metric("dcg@50") == ("dcg", 50)
    for bad in ("dcg", "mae@3", "ndcg@10", "precision@0", "dcg@x"):
        with pytest.raises(ValueError, match="unknown metric"):
            parse_metric(bad)
    with pytest.raises(ValueError, match="NaN"):
        pair_losses("mae", [0], [1], [np.nan], P)
    with pytest.raises(ValueError, match="NaN"):
        loss_matrix("mae", Y, np.where(P > 3.5, np.nan, P))
    with pytest.raises(ValueError, match="item < n_items=4"):
        pair_losses("mae", [0], [4], [1.0], P)
    with pytest.raises(ValueError, match="n_items is needed"):
        pair_losses("mae", [0], [1], [1.0], Model(P))
    with pytest.raises(ValueError, match="permutation"):
        loss_matrix("dcg@2", Y, P, tie_break=np.array([0, 0, 1, 2]))
