"""Lists made elsewhere through the Python API: api.evaluate_lists and external entries of
api.run, on in-memory data with string raw ids, against the built-in model that made them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval import api
from debiaseval.data.draws import seed_block
from debiaseval.data.ids import raw_ids, to_raw
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import run_rng
from debiaseval.evaluation.external_lists import ListsError
from debiaseval.experiments.e1 import E1Split, split_step
from debiaseval.experiments.e5 import expose, full_data, positive_threshold_of
from debiaseval.recommenders.ranking import top_k
from debiaseval.workflow.config import validate_config

CONFIG = {
    "synthetic": {"n_users": 80, "n_items": 60, "density": 0.15, "n_mar": 12, "rank": 4, "seed": 3},
    "e1": {
        "ks": [5, 10],
        "testsets": {"REG": {"strategy": "reg"}, "WTD": {"strategy": "wtd"}},
        "recommenders": {"PosPop": {"algorithm": "pospop"}, "Random": {"algorithm": "random"}},
    },
}
SEEDS = [0, 1]


@pytest.fixture(scope="module")
def data():
    """Synthetic frames whose users and items have string raw ids ("u…", "i…")."""
    interactions, users, items = api.load_dataset("synthetic", config=CONFIG)
    users = users.assign(raw_user=[f"u{u:03d}" for u in users["user"]])
    items = items.assign(raw_item=[f"i{i:03d}" for i in items["item"]])
    return interactions, users, items


def seed_split(data, seed: int) -> pd.DataFrame:
    """The seed's E1 split, as the run makes it."""
    step = E1Split.of(validate_config(CONFIG, "e1"), "synthetic")
    return split_step(data[0], step, dataset="synthetic", seed=seed)


def pospop_lists(data, seed: int, depth: int = 10) -> pd.DataFrame:
    """PosPop's own top-``depth`` lists of one seed, in raw ids: what another framework,
    trained on the seed's exported training part, would hand back."""
    _, users, items = data
    split = seed_split(data, seed)
    train = rating_matrix(split[split["part"] == "train"], len(users), len(items))
    model = api.make_recommender("pospop", positive_threshold=3.0).fit(train, seed=0)
    recs = top_k(model, train, depth)
    return pd.DataFrame(
        {
            "user": to_raw(recs["user"].to_numpy(), raw_ids(users, "user", len(users))),
            "item": to_raw(recs["item"].to_numpy(), raw_ids(items, "item", len(items))),
            "rank": recs["rank"].to_numpy(),
        }
    )


def test_lists_of_a_model_give_that_models_rows(data):
    reference = api.run("e1", data, CONFIG, seeds=SEEDS, dataset="synthetic")
    lists = {"Mine": {s: pospop_lists(data, s) for s in SEEDS}}
    out = api.evaluate_lists("e1", data, lists, CONFIG, dataset="synthetic")
    summary = out["summary"]
    assert set(summary["recommender"]) == {"PosPop", "Random", "Mine"}
    ours = summary[summary["recommender"] == "Mine"].drop(columns="recommender")
    theirs = summary[summary["recommender"] == "PosPop"].drop(columns="recommender")
    pd.testing.assert_frame_equal(ours.reset_index(drop=True), theirs.reset_index(drop=True))
    # the default weighting estimators estimate the lists with no extra config
    assert {"SNIPS_WTD", "DR_POP"} <= set(ours["testset"])
    expected = reference["summary"]
    expected = expected[expected["recommender"] == "PosPop"].drop(columns="recommender")
    pd.testing.assert_frame_equal(theirs.reset_index(drop=True), expected.reset_index(drop=True))


def test_a_training_item_is_named_with_its_user_and_seed(data):
    lists = pospop_lists(data, 0)
    split = seed_split(data, 0)
    pair = split[split["part"] == "train"].iloc[0]
    user, item = f"u{int(pair['user']):03d}", f"i{int(pair['item']):03d}"
    leaked = pd.concat([lists, pd.DataFrame({"user": [user], "item": [item], "rank": [99]})])
    with pytest.raises(ListsError, match=rf"lists\['Mine'\]\[0\].*{user}.*{item}"):
        api.evaluate_lists("e1", data, {"Mine": {0: leaked}}, CONFIG, dataset="synthetic")
    with pytest.warns(UserWarning, match="dropped"):
        out = api.evaluate_lists(
            "e1",
            data,
            {"Mine": {0: leaked}},
            CONFIG,
            dataset="synthetic",
            on_train_items="drop",
        )
    assert "Mine" in set(out["summary"]["recommender"])


def test_short_lists_warn_and_bad_calls_are_one_line(data):
    short = {"Mine": {0: pospop_lists(data, 0, depth=5)}}
    with pytest.warns(UserWarning, match="shorter than"):
        api.evaluate_lists("e1", data, short, CONFIG, dataset="synthetic")
    with pytest.raises(ValueError, match="evaluated by e1 and e5, not 'e2'"):
        api.evaluate_lists("e2", data, short, CONFIG)
    with pytest.raises(ValueError, match="already names \\['PosPop'\\]"):
        api.evaluate_lists("e1", data, {"PosPop": {0: short["Mine"][0]}}, CONFIG)
    with pytest.raises(ValueError, match="same seeds"):
        api.evaluate_lists("e1", data, {"A": {0: short["Mine"][0]}, "B": {1: short["Mine"][0]}})
    with pytest.raises(ListsError, match="no lists for seed 1"):
        api.evaluate_lists("e1", data, short, CONFIG, seeds=[0, 1], dataset="synthetic")


def test_e5_lists_of_every_candidate_give_the_models_estimates():
    config = {
        "synthetic": CONFIG["synthetic"],
        "e5": {
            "ks": [5],
            "exposure": {"train_fraction": 0.3, "n_exposed": 12},
            "models": {"PosPop": {"algorithm": "pospop"}},
        },
    }
    reference = api.run("e5", "synthetic", config, seeds=[0])
    full = validate_config(config, "e5")
    pairs = full_data(seed_block(full, "synthetic", 0))  # seed 0's own draw (per_seed)
    n_users, n_items = int(pairs["user"].max()) + 1, int(pairs["item"].max()) + 1
    labelled = expose(
        pairs,
        n_items=n_items,
        exposure=full["e5"]["exposure"],
        positive_threshold=positive_threshold_of("synthetic", full["e5"]["positive_threshold"]),
        rng=run_rng(0, "synthetic", "e5_expose"),
    )
    train = rating_matrix(labelled[labelled["part"] == "train"], n_users, n_items)
    model = api.make_recommender("pospop").fit(train, seed=0)
    lists = top_k(model, train, n_items)[["user", "item", "score"]]
    out = api.evaluate_lists("e5", "synthetic", {"Mine": {0: lists}}, config, ids="internal")
    est = out["per_seed"].set_index(["model", "k"])
    cols = ["true_recall", "traditional_recall", "ure", "n_users_true", "n_users_exposed"]
    ref = reference["per_seed"].set_index(["model", "k"])
    np.testing.assert_allclose(
        est.loc["Mine", cols].to_numpy(float), ref.loc["PosPop", cols].to_numpy(float)
    )
