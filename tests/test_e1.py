"""E1 glue: evaluation counts train-overlap pairs."""

import numpy as np
import pandas as pd

from debiaseval.datasets.preprocess import build_interactions
from debiaseval.datasets.synthetic import generate_synthetic
from debiaseval.experiments.e1 import evaluate_on_testsets
from debiaseval.interactions import rating_matrix
from debiaseval.ranking import top_k
from debiaseval.recommenders import make_recommender
from debiaseval.splits import run_rng, split_e1


def _split():
    interactions, users, items = build_interactions(
        generate_synthetic(n_users=80, n_items=60, density=0.15, n_mar=10, seed=3).to_raw()
    )
    split = split_e1(
        interactions,
        mnar_split={"train": 0.6, "heldout": 0.4},
        mar_split={"weights": 0.15, "val": 0.15, "gt": 0.7},
        rng=run_rng(0, "test"),
    )
    return {part: frame for part, frame in split.groupby("part")}, len(users), len(items)


def test_evaluate_counts_and_optionally_drops_train_overlap():
    parts, n_users, n_items = _split()
    train = parts["train"]
    gt = parts["gt"]
    extra = train.head(20).assign(rating=5.0)  # pairs also in train: never hit
    test = pd.concat([gt, extra], ignore_index=True)
    matrix = rating_matrix(train, n_users, n_items)
    recs = top_k(make_recommender("pospop").fit(matrix), matrix, 10)
    kwargs = dict(n_items=n_items, ks=[10], metrics=["recall"], positive_threshold=3.0)
    kept = evaluate_on_testsets(recs, {"gt": test}, train, drop_train_overlap=False, **kwargs)
    dropped = evaluate_on_testsets(recs, {"gt": test}, train, drop_train_overlap=True, **kwargs)
    assert kept["n_train_overlap"].iloc[0] >= 20
    assert dropped["n_test_pairs"].iloc[0] == len(test) - kept["n_train_overlap"].iloc[0]
    assert dropped["value"].iloc[0] > kept["value"].iloc[0]
    assert np.isfinite(kept["value"]).all()
