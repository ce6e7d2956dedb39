"""Elicitation strategies ([FLAIRS20] §3 and the active-learning literature) on hand-made data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval.active_learning.elicitation import (
    STRATEGIES,
    ElicitationContext,
    ask,
    elicit,
    uniform_hash,
)
from debiaseval.data.interactions import rating_matrix
from debiaseval.recommenders.mf import LightFMRanker
from debiaseval.recommenders.ranking import top_k_indices

# 4 users x 6 items; item 0 rated by 3 users, item 1 by 2, item 2 by 1, items 3-5 by nobody
KNOWN = pd.DataFrame(
    {
        "user": [0, 1, 2, 0, 3, 1],
        "item": [0, 0, 0, 1, 1, 2],
        "rating": [5.0, 1.0, 3.0, 4.0, 4.0, 2.0],
    }
)
N_USERS, N_ITEMS = 4, 6


def _ctx(known: pd.DataFrame = KNOWN, **kwargs) -> ElicitationContext:
    n_users = max(N_USERS, int(known["user"].max()) + 1)
    n_items = max(N_ITEMS, int(known["item"].max()) + 1)
    return ElicitationContext(rating_matrix(known, n_users, n_items), **kwargs)


def _known_pairs(known: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(known["user"], known["item"], strict=True))


def test_pop_asks_the_most_popular_unknown_items():
    asked = ask(_ctx(), "POP", np.arange(N_USERS), n=2)
    lists = asked.groupby("user")["item"].apply(list).to_dict()
    assert lists[0] == [2, 3]  # 0 and 1 known; then 2 (1 rating), then 3 (ties: smaller id)
    assert lists[1] == [1, 3]
    assert lists[2] == [1, 2]
    assert lists[3] == [0, 2]


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_never_asks_known_items_and_at_most_n(strategy):
    rng = np.random.default_rng(0)
    known = pd.DataFrame(
        {"user": rng.integers(0, 30, 300), "item": rng.integers(0, 40, 300)}
    ).drop_duplicates()
    known["rating"] = rng.integers(1, 6, len(known)).astype(np.float32)
    ctx = _ctx(known, seed=3, mf_params={"factors": 4, "epochs": 3})
    asked = ask(ctx, strategy, np.arange(30), n=7)
    assert not _known_pairs(asked) & _known_pairs(known)
    assert asked.groupby("user").size().max() == 7
    assert not asked.duplicated(["user", "item"]).any()


def test_a_user_with_few_unknown_items_gets_fewer():
    known = pd.DataFrame({"user": [0] * 5, "item": range(5), "rating": [4.0] * 5})
    asked = ask(_ctx(known), "RND", np.array([0]), n=50)
    assert sorted(asked["item"]) == [5]


def test_hp_equals_the_mf_top_n():
    rng = np.random.default_rng(1)
    known = pd.DataFrame(
        {"user": rng.integers(0, 25, 400), "item": rng.integers(0, 50, 400)}
    ).drop_duplicates()
    known["rating"] = rng.integers(1, 6, len(known)).astype(np.float32)
    params = {"factors": 6, "epochs": 5}
    ctx = _ctx(known, seed=7, mf_params=params)
    users = np.array([2, 5, 11])
    asked = ask(ctx, "HP", users, n=10)
    model = LightFMRanker(**params).fit(ctx.known, seed=7)
    scores = model.score(users)
    scores[np.asarray(ctx.known[users].todense()) != 0] = -np.inf
    expected = top_k_indices(scores, 10)
    got = asked.pivot(index="user", columns="rank", values="item").to_numpy()
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_vectorised_equals_the_per_user_reference(strategy):
    """Batched asking == a plain per-user argsort of the strategy's scores (ties: smaller id)."""
    rng = np.random.default_rng(2)
    known = pd.DataFrame(
        {"user": rng.integers(0, 20, 200), "item": rng.integers(0, 30, 200)}
    ).drop_duplicates()
    known["rating"] = rng.integers(1, 6, len(known)).astype(np.float32)
    ctx = _ctx(known, seed=5, mf_params={"factors": 4, "epochs": 3})
    users = np.arange(20)
    batched = ask(ctx, strategy, users, n=5, batch_size=7)
    for user in users:
        scores = STRATEGIES[strategy](ctx, np.array([user]))[0]
        unknown = np.setdiff1d(np.arange(ctx.n_items), ctx.known[user].indices)
        order = unknown[np.lexsort((unknown, -scores[unknown]))][:5]
        got = batched.loc[batched["user"] == user].sort_values("rank")["item"].to_numpy()
        np.testing.assert_array_equal(got, order)


def test_non_personalised_scores_by_hand():
    ctx = _ctx()
    assert STRATEGIES["POP"](ctx, np.array([0]))[0].tolist() == [3, 2, 1, 0, 0, 0]
    var = STRATEGIES["VAR"](ctx, np.array([0]))[0]
    np.testing.assert_allclose(var, [np.var([5, 1, 3]), 0.0, 0, 0, 0, 0])  # item 1: 4, 4
    popent = STRATEGIES["POPENT"](ctx, np.array([1]))[0]
    np.testing.assert_allclose(popent[:3], [np.log10(3) * np.log2(3), 0.0, 0.0])


def test_rnd_is_uniform_and_fixed_per_pair():
    ctx = _ctx(seed=4)
    first = STRATEGIES["RND"](ctx, np.array([0, 1, 2, 3]))
    np.testing.assert_array_equal(first[2], STRATEGIES["RND"](ctx, np.array([2]))[0])
    values = uniform_hash(9, np.arange(200)[:, None], np.arange(300)[None, :]).ravel()
    assert 0 <= values.min() and values.max() < 1
    assert abs(values.mean() - 0.5) < 0.01 and np.unique(values).size == values.size
    assert not np.array_equal(uniform_hash(1, [0], [1]), uniform_hash(2, [0], [1]))


def test_rnd_elicits_its_expected_share_of_h():
    """RND asks n of U unknown items at random: E[elicited] = n · |H_u| / |unknown_u|."""
    rng = np.random.default_rng(3)
    n_users, n_items, n = 400, 200, 20
    hidden_items = np.stack([rng.choice(n_items, 30, replace=False) for _ in range(n_users)])
    hidden = pd.DataFrame(
        {"user": np.repeat(np.arange(n_users), 30), "item": hidden_items.ravel(), "rating": 4.0}
    )
    known = pd.DataFrame({"user": [0], "item": [hidden_items[0, 0] + 0], "rating": [3.0]})
    known = known[~known["item"].isin(hidden_items[0])]  # nobody knows anything in H
    ctx = ElicitationContext(rating_matrix(known, n_users, n_items), seed=11)
    got = elicit(ask(ctx, "RND", np.arange(n_users), n=n), hidden)
    expected = n_users * n * 30 / n_items
    sd = np.sqrt(expected)
    assert abs(len(got) - expected) < 4 * sd


def test_elicit_is_asked_intersect_h():
    asked = pd.DataFrame({"user": [0, 0, 1, 2], "item": [3, 4, 3, 5], "rank": [1, 2, 1, 1]})
    hidden = pd.DataFrame(
        {"user": [0, 1, 1, 2, 3], "item": [4, 3, 5, 1, 3], "rating": [2.0, 5.0, 1.0, 3.0, 4.0]}
    )
    got = elicit(asked, hidden)
    assert list(zip(got["user"], got["item"], got["rating"], strict=True)) == [
        (0, 4, 2.0),
        (1, 3, 5.0),
    ]


def test_unknown_strategy_is_an_error():
    with pytest.raises(ValueError, match="unknown strategy"):
        ask(_ctx(), "NOPE", np.array([0]))
