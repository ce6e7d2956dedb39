"""E1 glue: evaluation counts train-overlap pairs; empty test sets and short lists are caught."""

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from debiaseval.api import run_e1 as run
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.preprocess import build_interactions
from debiaseval.data.splits import run_rng, split_e1
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.evaluation.testsets import (
    check_testset,
    evaluate_on_testsets,
    short_list_warnings,
)
from debiaseval.experiments.e1 import (
    E1Data,
    E1Evaluate,
    E1Intervene,
    EmptyTestSetError,
    data_step,
    evaluate_step,
)
from debiaseval.experiments.e1 import testset_step as draw_testset
from debiaseval.io.errors import ConfigError
from debiaseval.recommenders import make_recommender
from debiaseval.recommenders.ranking import top_k


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


def _full_split():
    interactions, _, _ = build_interactions(
        generate_synthetic(n_users=80, n_items=60, density=0.15, n_mar=10, seed=3).to_raw()
    )
    split = split_e1(
        interactions,
        mnar_split={"train": 0.6, "heldout": 0.4},
        mar_split={"weights": 0.15, "val": 0.15, "gt": 0.7},
        rng=run_rng(0, "test"),
    )
    return interactions, split


def test_check_testset_names_dataset_seed_testset_rho_and_heldout_size():
    empty = pd.DataFrame({"user": [], "item": [], "rating": []})
    where = dict(dataset="synthetic", seed=0, rho=0.0001, n_heldout=2424, positive_threshold=3.0)
    with pytest.raises(EmptyTestSetError) as error:
        check_testset(empty, "WTD", **where)
    assert str(error.value) == (
        "E1 on synthetic, seed 0: test set WTD has no pair: rho = 0.0001 of 2,424 held-out "
        "pairs gives 0; raise e1.rho, or set e1.allow_empty_testsets: true to report it as empty"
    )
    negatives = pd.DataFrame({"user": [0, 1], "item": [2, 3], "rating": [1.0, 3.0]})
    with pytest.raises(EmptyTestSetError, match=r"REG has no relevant pair \(rating > 3\) "):
        check_testset(negatives, "REG", **where)
    assert check_testset(negatives, "REG", allow_empty=True, **where) is True
    assert check_testset(negatives.assign(rating=4.0), "REG", **where) is False


def test_intervene_step_stops_on_an_empty_test_set():
    _, split = _full_split()
    n_heldout = int((split["part"] == "heldout").sum())
    kwargs = dict(dataset="toy", seed=1, n_users=80, n_items=60)
    step = E1Intervene({"WTD": {"strategy": "wtd"}}, rho=0.0001, positive_threshold=3.0)
    with pytest.raises(EmptyTestSetError, match=rf"of {n_heldout:,} held-out pairs gives 0"):
        draw_testset(split, "WTD", step, **kwargs)
    empty = dataclasses.replace(step, allow_empty_testsets=True)
    sample, diagnostics = draw_testset(split, "WTD", empty, **kwargs)
    assert len(sample) == 0 and diagnostics["n_pairs"].iloc[0] == 0
    sample, _ = draw_testset(split, "WTD", dataclasses.replace(step, rho=0.5), **kwargs)
    assert len(sample) == round(0.5 * n_heldout)


def test_allowed_empty_testsets_show_as_empty_in_the_markdown():
    interactions, _ = _full_split()
    config = {
        "e1": {
            "seeds": 1,
            "rho": 0.0001,
            "allow_empty_testsets": True,
            "testsets": {"FULL": {"strategy": "full"}, "REG": {"strategy": "reg"}},
            "estimators": {},
            "recommenders": {
                "PosPop": {"algorithm": "pospop"},
                "AvgRating": {"algorithm": "avgrating"},
                "Random": {"algorithm": "random"},
            },
            "kendall_exclude": [],
        }
    }
    out = run(interactions, config, dataset="toy")
    assert "REG" not in set(out["summary"]["testset"])  # no value to aggregate
    header = next(line for line in out["summary_md"].splitlines() if line.startswith("| recomm"))
    assert header == "| recommender | gt | FULL | REG |"
    assert "| empty |" in out["summary_md"]
    reg = [line for line in out["kendall_md"].splitlines() if line.startswith("| REG |")]
    assert reg and all("| empty | empty |" in line for line in reg)
    with pytest.raises(EmptyTestSetError, match="test set REG has no pair"):
        run(interactions, {"e1": {**config["e1"], "allow_empty_testsets": False}}, dataset="toy")


def test_k_beyond_the_candidate_items_warns():
    train = pd.DataFrame({"user": [0, 0, 1], "item": [0, 1, 2]})
    (message,) = short_list_warnings(train, n_items=6, ks=[3, 5])
    assert message.startswith("k = 5 exceeds the number of candidate items of 1 user(s)")
    assert "as few as 4 of 6 items" in message
    assert short_list_warnings(train, n_items=6, ks=[10])[0].startswith(
        "k = 10 exceeds the number of candidate items of every user"
    )
    assert short_list_warnings(train, n_items=60, ks=[10]) == []


def test_short_lists_count_distinct_items_whatever_the_order_of_the_pairs():
    from debiaseval.evaluation.testsets import _distinct_items_per_user

    rng = np.random.default_rng(4)
    train = pd.DataFrame({"user": rng.integers(0, 40, 500), "item": rng.integers(0, 30, 500)})
    expected = train.groupby("user")["item"].nunique().to_numpy()
    sorted_pairs = train.sort_values(["user", "item"])  # as a split's parts are, duplicates too
    for pairs in (train, sorted_pairs, sorted_pairs.drop_duplicates()):
        np.testing.assert_array_equal(_distinct_items_per_user(pairs), expected)
    assert _distinct_items_per_user(train.head(0)).size == 0
    messages = short_list_warnings(train, n_items=30, ks=[5, 40])
    assert len(messages) == 1 and "k = 40" in messages[0]


def test_short_lists_bound_by_a_users_rows_then_count_distinct_items():
    from debiaseval.evaluation.testsets import _most_rows_of_a_user

    rng = np.random.default_rng(5)
    train = pd.DataFrame({"user": rng.integers(0, 40, 500), "item": rng.integers(0, 30, 500)})
    most = int(train["user"].value_counts().max())
    for pairs in (train, train.sort_values(["user", "item"]), train.head(0)):
        assert _most_rows_of_a_user(pairs) == (most if len(pairs) else 0)
    # five rows of one item: the rows alone would leave 1 candidate, the distinct items leave 5
    repeated = pd.DataFrame({"user": [0] * 5, "item": [2] * 5})
    assert short_list_warnings(repeated, n_items=6, ks=[3, 5]) == []
    assert short_list_warnings(repeated, n_items=6, ks=[6])[0].startswith("k = 6 exceeds")


def test_evaluate_step_warns_when_k_exceeds_the_candidates():
    _, split = _full_split()
    gt = split[split["part"] == "gt"]
    recs = {"PosPop": pd.DataFrame({"user": [], "item": [], "rank": [], "score": []})}
    step = E1Evaluate(
        ks=[100], metrics=["hitrate"], positive_threshold=3.0, drop_train_overlap=False
    )
    with pytest.warns(UserWarning, match=r"seed 0: k = 100 exceeds the number of candidate"):
        evaluate_step(split, recs, {}, step, seed=0, n_items=60)
    assert len(gt)


def test_run_takes_e1s_data_step_reports_it_and_warns_past_half_a_part():
    """E1 keeps the users and items of both parts ([SAC20]): MNAR-only users added to a dataset
    change nothing but the report, which warns when they are more than half of the MNAR part."""
    interactions, users, _ = build_interactions(
        generate_synthetic(n_users=40, n_items=30, density=0.3, n_mar=8, seed=1).to_raw()
    )
    mnar = interactions[interactions["part"] == "mnar"]
    extra = pd.concat(
        [mnar.assign(user=mnar["user"] + (k + 1) * len(users)) for k in range(2)],
        ignore_index=True,
    )  # two copies of the MNAR part by users without MAR ratings: 2/3 of the MNAR ratings
    extra = extra.astype({"user": np.int32})
    grown = pd.concat([interactions, extra], ignore_index=True)
    config = {"e1": {"recommenders": {"PosPop": {"algorithm": "pospop"}}, "ks": [5]}}
    with pytest.warns(UserWarning, match=r"common_users_items drops [\d,]+ of the .* of part mnar"):
        out = run(grown, config, seeds=1, dataset="d")
    dropped = out["dropped"].set_index("part")
    assert dropped.loc["mnar", "users_dropped"] == 2 * len(users)
    assert dropped.loc["mnar", "ratings_dropped"] == len(extra)
    assert dropped.loc["mar", "ratings_dropped"] == 0
    assert "| common_users_items | mnar |" in out["dropped_md"]
    kept = data_step(grown, step=E1Data(common_users_items=True), dataset="d").interactions
    same = run(kept, config, seeds=1, dataset="d")
    pd.testing.assert_frame_equal(out["summary"], same["summary"])
    every = run(grown, {"e1": {**config["e1"], "common_users_items": False}}, seeds=1, dataset="d")
    assert (every["dropped"]["ratings_dropped"] == 0).all()
    assert not every["summary"].equals(out["summary"])


def _evaluated(resamples=200):
    _, split = _full_split()
    train = split[split["part"] == "train"]
    matrix = rating_matrix(train, 80, 60)
    recs = {
        name: top_k(make_recommender(name).fit(matrix), matrix, 10)
        for name in ("pospop", "random", "avgrating")
    }
    heldout = split[split["part"] == "heldout"]
    step = E1Evaluate(
        ks=[5, 10],
        metrics=["recall", "ndcg"],
        positive_threshold=3.0,
        drop_train_overlap=False,
        resamples=resamples,
    )
    return evaluate_step(split, recs, {"ALL": heldout}, step, seed=4, n_items=60)


def test_per_user_values_average_to_the_metrics_exactly():
    out = _evaluated()
    per_user, metrics = out["metrics_per_user"], out["metrics"]
    keys = ["recommender", "seed", "testset", "metric", "k"]
    assert list(per_user.columns) == [
        "recommender",
        "seed",
        "testset",
        "user",
        "metric",
        "k",
        "value",
    ]
    # recommender and testset are categoricals (docs/experiments/e1.md, Outputs)
    assert list(per_user["recommender"].cat.categories) == ["pospop", "random", "avgrating"]
    assert list(per_user["testset"].cat.categories) == ["gt", "ALL"]
    assert per_user["metric"].dtype == metrics["metric"].dtype
    assert per_user["recommender"].cat.codes.dtype == np.int8 and per_user["seed"].dtype == np.int64
    means = per_user.groupby(keys, sort=False)["value"].agg(["mean", "size"]).reset_index()
    both = metrics.merge(means, on=keys, validate="one_to_one")
    assert len(both) == len(metrics) == 3 * 2 * 2 * 2
    assert (both["value"] == both["mean"]).all() and (both["n_users"] == both["size"]).all()
    assert (metrics["boot_low"] <= metrics["value"]).all()
    assert (metrics["value"] <= metrics["boot_high"]).all()
    assert (metrics["boot_low"] < metrics["boot_high"]).any()


def test_comparisons_pair_users_and_are_holm_adjusted_per_block():
    from scipy.stats import ttest_rel

    from debiaseval.evaluation.uncertainty import holm

    out = _evaluated(resamples=0)
    assert out["metrics"]["boot_low"].isna().all()
    tests, per_user = out["comparisons"], out["metrics_per_user"]
    assert len(tests) == 2 * 2 * 2 * 3  # test sets x metrics x ks x pairs of 3 recommenders
    row = tests[(tests["testset"] == "gt") & (tests["metric"] == "recall") & (tests["k"] == 10)]
    row = row[(row["recommender_a"] == "pospop") & (row["recommender_b"] == "random")].iloc[0]
    block = per_user[
        (per_user["testset"] == "gt") & (per_user["metric"] == "recall") & (per_user["k"] == 10)
    ]
    # shuffle one side: the test must pair by user id, as the per-user table does
    a = block[block["recommender"] == "pospop"].set_index("user")["value"]
    b = block[block["recommender"] == "random"].sample(frac=1, random_state=0)
    b = b.set_index("user")["value"].reindex(a.index)
    assert row["p_value"] == pytest.approx(ttest_rel(a, b).pvalue, rel=1e-9)
    for _, group in tests.groupby(["testset", "metric", "k"]):
        np.testing.assert_allclose(group["p_holm"], holm(group["p_value"].to_numpy()))


def test_run_gives_intervals_per_user_values_and_comparisons():
    interactions, _ = _full_split()
    config = {
        "e1": {
            "seeds": 2,
            "ks": [5],
            "metrics": ["recall"],
            "bootstrap": {"resamples": 50},
            "testsets": {"FULL": {"strategy": "full"}},
            "estimators": {},
            "recommenders": {"PosPop": {"algorithm": "pospop"}, "Random": {"algorithm": "random"}},
        }
    }
    out = run(interactions, config, dataset="toy")
    summary = out["summary"]
    assert {"ci_low", "ci_high", "boot_low", "boot_high"} <= set(summary.columns)
    assert (summary["ci_low"] <= summary["mean"]).all()
    assert (summary["mean"] <= summary["ci_high"]).all()
    comparisons = out["comparisons"]
    assert len(comparisons) == 2  # gt and REG, one pair
    assert (comparisons["n_seeds"] == 2).all()
    assert set(out["metrics_per_user"]["seed"]) == {0, 1}


def test_significance_matrix_counts_the_seeds_each_way():
    from debiaseval.figures.e1 import draw

    summary = pd.DataFrame(
        {
            "recommender": ["A", "B", "C"],
            "testset": "gt",
            "metric": "recall",
            "k": 10,
            "mean": [0.3, 0.2, 0.1],
        }
    )
    comparisons = pd.DataFrame(
        {
            "testset": "gt",
            "metric": "recall",
            "k": 10,
            "recommender_a": ["A", "A", "B"],
            "recommender_b": ["B", "C", "C"],
            "n_seeds": 3,
            "n_a_better": [2, 3, 0],
            "n_b_better": [0, 0, 1],
        }
    )
    fig = draw("significance", {"summary": summary, "comparisons": comparisons}, "toy")
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert texts == {"2/3", "0/3", "3/3", "1/3"}
    image = fig.axes[0].images[0].get_array()
    assert image[0, 1] == pytest.approx(2 / 3) and image[2, 1] == pytest.approx(1 / 3)


# -- weighting estimators as rows of E1 (docs/experiments/e1.md) ---------------------------------

ESTIMATORS = {
    "SNIPS_WTD": {"estimator": "snips", "propensity": "wtd"},
    "SNIPS_KNOWN": {"estimator": "snips", "propensity": "known", "clip": 0.01},
    "DR_POP": {
        "estimator": "dr",
        "propensity": "popularity",
        "imputation": "item_rate",
        "gamma": 0.5,
    },
    "DR_NB": {
        "estimator": "dr",
        "propensity": "naive_bayes",
        "imputation": "logistic_mf",
        "imputation_params": {"max_iter": 20},
    },
    "DR_RATIO": {
        "estimator": "dr",
        "propensity": "popularity",
        "form": "ratio",
        "weight_control": {"method": "shrink"},
        "calibrate": True,
    },
    "DR_SCALED": {"estimator": "dr", "propensity": "popularity_nb", "form": "scaled"},
}


def test_estimators_are_rows_beside_the_test_sets_for_their_metrics_only():
    config = {
        "synthetic": {"n_users": 80, "n_items": 60, "density": 0.15, "n_mar": 10},
        "e1": {
            "seeds": 2,
            "ks": [5],
            "metrics": ["recall", "avgdcg", "ndcg"],
            "bootstrap": {"resamples": 20},
            "estimators": ESTIMATORS,
            "testsets": {"FULL": {"strategy": "full"}},
            "recommenders": {
                "PosPop": {"algorithm": "pospop"},
                "AvgRating": {"algorithm": "avgrating"},
                "Random": {"algorithm": "random"},
            },
        },
    }
    out = run("synthetic", config)
    summary = out["summary"]
    rows = summary[summary["testset"].isin(list(ESTIMATORS))]
    assert set(rows["testset"]) == set(ESTIMATORS)
    assert set(rows["metric"]) == {"recall", "avgdcg"}  # ndcg is not estimated by weighting
    assert rows["pct_diff_vs_gt"].notna().all() and rows["boot_low"].notna().all()
    assert set(out["kendall"]["testset"]) >= set(ESTIMATORS)
    assert all(
        f"| {name} |" in out["summary_md"] or name in out["summary_md"] for name in ESTIMATORS
    )
    per_user = out["metrics_per_user"]
    assert set(per_user["testset"]) >= set(ESTIMATORS) and set(per_user["seed"]) == {0, 1}
    # the seeds' and the estimators' rows keep the categoricals, over the union of names
    assert list(per_user["testset"].cat.categories) == ["gt", "FULL", *ESTIMATORS]
    assert isinstance(per_user["recommender"].dtype, pd.CategoricalDtype)
    # every recommender is estimated over the same users of an estimator
    users = per_user[per_user["testset"] == "DR_POP"].groupby("recommender")["user"].apply(set)
    assert all(u == users.iloc[0] for u in users)
    diagnostics = out["estimators_diagnostics"]
    assert set(diagnostics["estimator"]) == set(ESTIMATORS)
    assert (diagnostics["ess_min"] >= 1 - 1e-9).all()
    assert diagnostics["top1pct_weight_share"].between(0, 1).all()
    scales = diagnostics.set_index("estimator")["imputation_scale"]
    assert scales["DR_SCALED"].between(0, 1).all() and scales.drop("DR_SCALED").isna().all()
    # the naive estimator is the FULL test set
    naive = run(
        "synthetic",
        {**config, "e1": {**config["e1"], "estimators": {"NAIVE": {"estimator": "naive"}}}},
    )["summary"]
    a = naive[naive["testset"] == "NAIVE"].set_index(["recommender", "metric"])["mean"]
    b = naive[naive["testset"] == "FULL"].set_index(["recommender", "metric"])["mean"]
    pd.testing.assert_series_equal(a, b.loc[a.index], check_names=False)


def test_estimator_config_errors_name_the_key():
    from debiaseval.workflow.config import validate_config

    base = {"datasets": ["coat"], "e1": {"estimators": {}}}
    cases = {
        "e1.estimators.X.weight_control": {
            "X": {
                "estimator": "snips",
                "propensity": "popularity",
                "weight_control": {"method": "clip"},
            }
        },
        "e1.estimators.Y.imputation": {"Y": {"estimator": "snips", "imputation": "item_rate"}},
        "e1.estimators.S.scale": {"S": {"estimator": "dr", "scale": 0.5}},
        "e1.estimators.W.weight_control": {
            "W": {"estimator": "dr", "form": "scaled", "weight_control": {"method": "clip"}}
        },
        "e1.estimators.V.weight_control": {
            "V": {
                "estimator": "dr",
                "weight_control": {"method": "shrink", "value": 4.0, "quantile": 0.5},
            }
        },
        "e1.estimators.K.propensity": {"K": {"estimator": "snips", "propensity": "known"}},
        "e1.estimators.FULL": {"FULL": {"estimator": "snips"}},
    }
    for key, estimators in cases.items():
        config = {**base, "e1": {"estimators": estimators}}
        with pytest.raises(ConfigError, match=re.escape(f"config error at '{key}'")):
            validate_config(config, "e1")
    reserved = {**base, "e1": {"estimators": {"CONSTANT": {"estimator": "snips"}}}}
    message = "invalid name 'CONSTANT'.*'GT_HALVES' are reserved"
    with pytest.raises(ConfigError, match=message):
        validate_config(reserved, "e1")
    # a dr row without an imputation gets the item-level default (candidate_rate)
    validate_config({**base, "e1": {"estimators": {"D": {"estimator": "dr"}}}}, "e1")
    yahoo = {
        "datasets": ["yahoo-r3"],
        "e1": {"estimators": {"L": {"estimator": "snips", "propensity": "logistic"}}},
    }
    with pytest.raises(ConfigError, match=r"e1\.estimators\.L\.propensity.*features"):
        validate_config(yahoo, "e1")
    coat = {
        "datasets": ["coat"],
        "e1": {"estimators": {"L": {"estimator": "snips", "propensity": "logistic"}}},
    }
    validate_config(coat, "e1")


def test_seed_uncertainty_refuses_recommenders_in_other_blocks():
    """The paired tests and the bootstrap pair two recommenders' values block by block: values
    of one test set in different (metric, k) blocks are refused in one line."""
    from debiaseval.evaluation.metrics import BlockValues
    from debiaseval.evaluation.per_user import seed_uncertainty

    users = np.arange(4, dtype=np.int32)
    per_user = {
        "a": {"gt": BlockValues(users, np.zeros((1, 4)), (("recall", 10),))},
        "b": {"gt": BlockValues(users, np.zeros((1, 4)), (("ndcg", 10),))},
    }
    metrics = pd.DataFrame(
        {
            "recommender": ["a", "b"],
            "testset": "gt",
            "metric": "recall",
            "k": np.int16(10),
            "value": 0.0,
        }
    )
    with pytest.raises(ValueError, match=r"^gt: the recommenders' values are not in the same"):
        seed_uncertainty(metrics, per_user, seed=0, resamples=10, confidence=0.95)
