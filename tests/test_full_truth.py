"""The TRUE row: exact top-k metrics against synthetic's full rating matrix."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.synthetic import generate_synthetic
from debiaseval.data.synthetic_dataset import full_rating_rows
from debiaseval.data.synthetic_pairs import pair_rating_rows, sample_synthetic
from debiaseval.evaluation.full_truth import true_topk, true_topk_table

PARAMS = {"n_users": 40, "n_items": 50, "density": 0.1, "n_mar": 5, "rank": 4, "seed": 3}


def _lists(rng, n_users, n_items, depth, train):
    seen = set(zip(train["user"], train["item"], strict=True))
    rows = []
    for u in range(n_users):
        items = [i for i in rng.permutation(n_items) if (u, i) not in seen][:depth]
        rows += [(u, i, r + 1) for r, i in enumerate(items)]
    return pd.DataFrame(rows, columns=["user", "item", "rank"])


def _brute_recall(ratings, lists, train, k, threshold=3.0):
    """Recall@k by definition: every user's relevant candidates, one by one."""
    out = {}
    for u in range(ratings.shape[0]):
        seen = set(train.loc[train["user"] == u, "item"])
        rel = {i for i in range(ratings.shape[1]) if ratings[u, i] > threshold and i not in seen}
        if rel:
            top = lists[(lists["user"] == u) & (lists["rank"] <= k)]["item"]
            out[u] = len(rel & set(top)) / len(rel)
    return out


@pytest.mark.parametrize("batch_cells", [50, 7 * 50, 1 << 22])
def test_true_recall_equals_brute_force(batch_cells):
    rng = np.random.default_rng(0)
    data = generate_synthetic(**PARAMS)
    users, items = np.nonzero(data.observed)
    train = pd.DataFrame({"user": users, "item": items})
    lists = _lists(rng, 40, 50, 10, train)
    per_user, n_rel = true_topk(
        {"A": lists},
        train,
        full_rating_rows(**PARAMS),
        n_users=40,
        n_items=50,
        ks=[5, 10],
        metrics=["recall", "hitrate"],
        positive_threshold=3.0,
        batch_cells=batch_cells,
    )
    values = per_user["A"]
    assert list(dict.fromkeys(values["metric"])) == ["recall", "hitrate"]
    for k in (5, 10):
        got = values[(values["metric"] == "recall") & (values["k"] == k)]
        assert np.all(np.diff(got["user"]) > 0)
        want = _brute_recall(data.ratings, lists, train, k)
        assert dict(zip(got["user"], got["value"], strict=True)) == pytest.approx(want)
    positives = (data.ratings > 3) & ~data.observed
    assert n_rel == int(positives.sum())
    table = true_topk_table({"A": lists}, per_user, testset="TRUE", seed=7, n_relevant=n_rel)
    recall10 = table[(table["metric"] == "recall") & (table["k"] == 10)].iloc[0]
    assert recall10["value"] == pytest.approx(
        np.mean(list(_brute_recall(data.ratings, lists, train, 10).values()))
    )
    assert recall10["seed"] == 7 and recall10["testset"] == "TRUE"
    assert np.isnan(recall10["boot_low"]) and recall10["n_short_lists"] == 0


def test_raw_ids_select_rows_and_columns():
    """E1 re-indexes the users and items it keeps: the truth reads them by raw id."""
    rng = np.random.default_rng(1)
    ratings = generate_synthetic(**PARAMS).ratings
    raw_users, raw_items = np.sort(rng.choice(40, 25, replace=False)), np.arange(10, 50)
    sub = ratings[np.ix_(raw_users, raw_items)]
    train = pd.DataFrame({"user": [0, 3], "item": [1, 2]})
    lists = _lists(rng, 25, 40, 10, train)
    per_user, _ = true_topk(
        {"A": lists},
        train,
        full_rating_rows(**PARAMS),
        n_users=25,
        n_items=40,
        ks=[10],
        metrics=["recall"],
        positive_threshold=3.0,
        raw_users=raw_users,
        raw_items=raw_items,
    )
    got = dict(zip(per_user["A"]["user"], per_user["A"]["value"], strict=True))
    assert got == pytest.approx(_brute_recall(sub, lists, train, 10))


def test_pair_rows_hold_the_sampled_ratings():
    """At large shapes the truth comes from the pair sampler's model: its rows hold the very
    ratings of the MNAR and MAR samples."""
    params = {**PARAMS, "n_users": 200, "n_items": 120}
    sample = sample_synthetic(**params)
    rows = pair_rating_rows(**params)(np.arange(200))
    for frame in (sample.mnar, sample.mar):
        got = rows[frame["user"].to_numpy(), frame["item"].to_numpy()]
        assert np.mean(got == frame["rating"].to_numpy()) > 0.999
    marginal = np.bincount(rows.ravel(), minlength=6)[1:] / rows.size
    assert marginal == pytest.approx([0.526, 0.242, 0.144, 0.062, 0.026], abs=0.03)
