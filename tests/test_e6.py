"""Experiment E6 ([MYT14]): campaign simulation, weighted vs unweighted scores over time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval import api
from debiaseval.experiments import e6

KL = {"min_weight": 1e-6, "max_weight": 1e6, "max_iter": 2000, "tol": 1e-10}


def step(**values) -> e6.E6Evaluate:
    """E6's step config: the tests' defaults, then ``values``."""
    base = dict(
        snapshots=4,
        campaign={},
        n_boosted=8,
        recommenders=["g1"],
        k=5,
        active_items=[None],
        min_profile=2,
        cosine_neighbour_exponent=0.5,
        protocol="exact",
        n_draws=20000,
        interval="binomial",
        confidence=0.95,
        resamples=100,
        sample_users=None,
        kl=KL,
    )
    return e6.E6Evaluate(**{**base, **values})


def campaign_tables(recommenders, active_items, *, n_users=1500, n_items=150, seed=1, **extra):
    synthetic = {"n_users": n_users, "n_items": n_items, "density": 0.06, "seed": 0}
    log, cuts, boosted = e6.time_log(
        "synthetic",
        interactions=None,
        n_users=n_users,
        n_items=n_items,
        snapshots=4,
        campaign={"n_periods": 4, "n_boosted": 8, "boost": 5.0},
        synthetic=synthetic,
        seed=seed,
    )
    return e6.evaluate_over_time(
        log,
        cuts,
        step(recommenders=recommenders, active_items=active_items, **extra),
        n_users=n_users,
        n_items=n_items,
        boosted=boosted,
        dataset="synthetic",
        seed=seed,
    )


@pytest.fixture(scope="module")
def constants() -> dict[str, pd.DataFrame]:
    return campaign_tables(["g1", "g2"], [20, None])


def test_weighted_constant_scores_are_stable_and_unweighted_drift(constants) -> None:
    scores = constants["scores"]
    n_items = 150
    for name, direction in (("g1", 1), ("g2", -1)):
        plain = scores[(scores["recommender"] == name) & (scores["weighting"] == "none")]
        plain = plain.sort_values("t")
        weighted = scores[(scores["recommender"] == name) & (scores["p"] == n_items)]
        weighted = weighted.sort_values("t")
        first = plain.iloc[0]
        # unweighted: drifts monotonically in the campaign's direction, out of the t0 interval
        steps = np.diff(plain["score"].to_numpy()) * direction
        assert np.all(steps > 0), (name, plain["score"].tolist())
        last = plain.iloc[-1]["score"]
        assert (last > first["ci_high"]) if direction > 0 else (last < first["ci_low"])
        # weighted with every item active: the t0 score stays within each interval
        assert np.all(weighted["ci_low"] <= first["score"])
        assert np.all(first["score"] <= weighted["ci_high"])
        np.testing.assert_allclose(weighted["score"], first["score"], rtol=0.02)


def test_table_shapes_and_divergences(constants) -> None:
    scores, weights = constants["scores"], constants["weights"]
    assert list(scores.columns) == [
        "seed",
        "t",
        "recommender",
        "weighting",
        "p",
        "score",
        "ci_low",
        "ci_high",
        "kl_divergence",
    ]
    assert len(scores) == 4 * 2 * 3  # t × recommenders × (none, p = 20, p = all)
    assert set(scores.loc[scores["weighting"] == "none", "p"]) == {0}
    assert (scores["ci_low"] <= scores["score"]).all() and (
        scores["score"] <= scores["ci_high"]
    ).all()
    # at t0 the reference is the data: D = 0 and no weight moves
    assert np.allclose(scores.loc[scores["t"] == 0, "kl_divergence"], 0.0, atol=1e-12)
    assert (weights["t"] > 0).all() and (weights["weight"] != 1.0).all()
    # the divergence only falls as p grows, and is positive without weights after t0
    later = scores[(scores["t"] > 0) & (scores["recommender"] == "g1")].sort_values(["t", "p"])
    for _, group in later.groupby("t"):
        values = group.sort_values("p")["kl_divergence"].to_numpy()
        assert values[0] > 1e-3 and np.all(np.diff(values) <= 0)
    assert set(weights.loc[weights["p"] == 20].groupby("t").size()) <= {20}
    lists = constants["lists"]
    boosted = lists.loc[lists["list"] == "boosted", "item"].to_numpy()
    assert np.isin(lists.loc[lists["list"] == "g1", "item"], boosted).all()
    assert not np.isin(lists.loc[lists["list"] == "g2", "item"], boosted).any()


def test_cf_recommenders_and_determinism() -> None:
    a = campaign_tables(e6.RECOMMENDERS, [None], n_users=200, n_items=60)
    b = campaign_tables(e6.RECOMMENDERS, [None], n_users=200, n_items=60)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
    scores = a["scores"]
    cf = scores[scores["recommender"].isin(["cosine_cf", "naive_cf"])]
    assert len(cf) == 4 * 2 * 2 and (cf["score"] > 0).all()
    text = e6.markdown(scores, "synthetic")
    assert "| g1 | none | 0 |" in text and "| naive_cf | kl | 60 |" in text


def test_cosine_neighbour_exponent_changes_only_cosine_cf() -> None:
    def scores(exponent: float) -> pd.DataFrame:
        tables = campaign_tables(
            ["g1", "cosine_cf"], [None], n_users=200, n_items=60, cosine_neighbour_exponent=exponent
        )
        return tables["scores"].set_index(["t", "recommender", "weighting", "p"])["score"]

    cosine, by_size, counts = scores(0.5), scores(1.0), scores(0.0)
    pd.testing.assert_series_equal(
        cosine,
        campaign_tables(["g1", "cosine_cf"], [None], n_users=200, n_items=60)["scores"].set_index(
            ["t", "recommender", "weighting", "p"]
        )["score"],
    )
    for other in (by_size, counts):
        pd.testing.assert_series_equal(other.xs("g1", level=1), cosine.xs("g1", level=1))
        assert not np.allclose(other.xs("cosine_cf", level=1), cosine.xs("cosine_cf", level=1))


def test_time_log_of_a_real_dataset_and_sampled_users() -> None:
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame(
        {
            "user": rng.integers(0, 100, n).astype(np.int32),
            "item": rng.integers(0, 50, n).astype(np.int32),
            "rating": np.ones(n, np.float32),
            "timestamp": np.sort(rng.integers(0, 10_000, n)).astype(np.int64),
            "part": "mnar",
        }
    ).drop_duplicates(["user", "item"])
    log, cuts, boosted = e6.time_log(
        "ml-100k",
        interactions=frame,
        n_users=100,
        n_items=50,
        snapshots=3,
        campaign={},
        synthetic={},
        seed=1,
    )
    assert boosted is None and cuts.size == 3 and cuts[-1] > frame["timestamp"].max()
    tables = e6.evaluate_over_time(
        log,
        cuts,
        step(
            recommenders=["g1", "naive_cf"],
            active_items=[10],
            n_boosted=6,
            interval="bootstrap",
            resamples=200,
            sample_users=40,
        ),
        n_users=100,
        n_items=50,
        boosted=None,
        dataset="ml-100k",
        seed=1,
    )
    snaps = tables["snapshots"]
    assert (snaps["n_evaluated"] <= 40).all() and snaps["n_interactions"].is_monotonic_increasing
    assert (tables["lists"]["list"] == "boosted").sum() == 6
    with pytest.raises(ValueError, match="timestamp"):
        e6.time_log(
            "coat",
            interactions=frame.drop(columns="timestamp"),
            n_users=100,
            n_items=50,
            snapshots=3,
            campaign={},
            synthetic={},
            seed=1,
        )


def test_sampled_protocol_estimates_the_exact_score() -> None:
    """protocol: sampled ([MYT14]: n draws, Wald interval) scatters around the exact score."""
    exact = campaign_tables(["g2", "naive_cf"], [20], n_users=300, n_items=60)["scores"]
    log, cuts, boosted = e6.time_log(
        "synthetic",
        interactions=None,
        n_users=300,
        n_items=60,
        snapshots=4,
        campaign={"n_periods": 4, "n_boosted": 8, "boost": 5.0},
        synthetic={"n_users": 300, "n_items": 60, "density": 0.06, "seed": 0},
        seed=1,
    )
    n = 20000
    sampled = e6.evaluate_over_time(
        log,
        cuts,
        step(
            recommenders=["g2", "naive_cf"],
            active_items=[20],
            interval="wald",
            protocol="sampled",
            n_draws=n,
        ),
        n_users=300,
        n_items=60,
        boosted=boosted,
        dataset="synthetic",
        seed=1,
    )["scores"]
    merged = exact.merge(sampled, on=["t", "recommender", "weighting", "p"], suffixes=("", "_s"))
    assert len(merged) == len(exact) == 4 * 2 * 2
    se = np.sqrt(merged["score"] * (1 - merged["score"]) / n)
    assert (np.abs(merged["score_s"] - merged["score"]) < 4 * se).all()
    half = 1.959964 * np.sqrt(merged["score_s"] * (1 - merged["score_s"]) / n)
    np.testing.assert_allclose(merged["ci_high_s"] - merged["score_s"], half, rtol=1e-5)
    assert (merged["score_s"] != merged["score"]).any()  # sampled, not exact


def test_min_profile_defaults_to_every_user_with_a_profile() -> None:
    from debiaseval.workflow.config import validate_config

    block = validate_config({}, "e6")["e6"]
    assert block["min_profile"] == 1 and block["protocol"] == "exact"
    assert block["n_draws"] == 20000 and block["interval"] == "binomial"
    tables = campaign_tables(["g1", "cosine_cf", "naive_cf"], [None], n_users=200, n_items=60)
    one = e6.evaluate_over_time  # the same run with min_profile 1 evaluates more users
    log, cuts, boosted = e6.time_log(
        "synthetic",
        interactions=None,
        n_users=200,
        n_items=60,
        snapshots=4,
        campaign={"n_periods": 4, "n_boosted": 8, "boost": 5.0},
        synthetic={"n_users": 200, "n_items": 60, "density": 0.06, "seed": 0},
        seed=1,
    )
    ones = one(
        log,
        cuts,
        step(recommenders=["g1", "cosine_cf", "naive_cf"], min_profile=1),
        n_users=200,
        n_items=60,
        boosted=boosted,
        dataset="synthetic",
        seed=1,
    )
    assert (ones["snapshots"]["n_evaluated"] >= tables["snapshots"]["n_evaluated"]).all()
    assert (ones["snapshots"]["n_evaluated"] > tables["snapshots"]["n_evaluated"]).any()
    assert ones["scores"]["score"].between(0, 1).all()


def test_run_api_matches_run_seed_and_the_figure_draws() -> None:
    from debiaseval.data.draws import generator_block, seed_block
    from debiaseval.figures import figure_module
    from debiaseval.workflow.config import validate_config

    config = {
        "synthetic": {"n_users": 80, "n_items": 50, "density": 0.1, "seed": 0},
        "e6": {"campaign": {"n_periods": 3, "n_boosted": 6}, "active_items": [5, "all"]},
    }
    tables = api.run_e6("synthetic", config, seeds=[3])
    full = validate_config(config, "e6")
    step = e6.E6Evaluate.of(full, "synthetic")
    # seed 3's own draw of synthetic (e6_evaluate's params: draw_block), not the one at seed 0
    own = seed_block(full, "synthetic", 3)
    assert own != generator_block(full["synthetic"])
    direct = e6.run_seed("synthetic", 3, step, synthetic=own)
    for name in e6.TABLES:
        pd.testing.assert_frame_equal(
            tables[name].drop(columns="flags", errors="ignore"), direct[name]
        )
    # with synthetic.per_seed false, every seed simulates its campaigns on the one draw
    fixed = {**config, "synthetic": {**config["synthetic"], "per_seed": False}}
    one = api.run_e6("synthetic", fixed, seeds=[3])
    direct = e6.run_seed("synthetic", 3, step, synthetic=full["synthetic"])
    pd.testing.assert_frame_equal(one["lists"], direct["lists"])
    assert not one["lists"].equals(tables["lists"])
    assert "flags" in tables["scores"]
    assert set(tables["scores"]["p"]) == {0, 5, 50}
    module = figure_module("e6")
    assert module.TABLES == ("scores",)
    fig = module.draw("scores", tables, "synthetic")
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 4
    with pytest.raises(ValueError, match="no figure"):
        module.draw("nope", tables, "synthetic")


@pytest.mark.parametrize(
    ("block", "match"),
    [
        ({"datasets": ["coat"]}, "e6.datasets.0"),
        ({"n_boosted": 3}, "e6.n_boosted"),
        ({"campaign": {"n_boosted": 2}}, "e6.campaign.n_boosted"),
        ({"campaign": {"n_boosted": 500}}, "exceeds"),
        ({"snapshots": ["1998-02-01", "1998-01-01"]}, "e6.snapshots"),
        ({"active_items": [0]}, "e6.active_items"),
        ({"protocol": "random"}, "e6.protocol"),
        ({"n_draws": 0}, "e6.n_draws"),
        ({"cosine_neighbour_exponent": -0.5}, "e6.cosine_neighbour_exponent"),
    ],
)
def test_config_errors_name_the_key(block: dict, match: str) -> None:
    from debiaseval.io.errors import ConfigError
    from debiaseval.workflow.config import validate_config

    with pytest.raises(ConfigError, match=match) as err:
        validate_config({"e6": block})
    assert "\n" not in str(err.value)


def test_scores_over_few_users_are_flagged_and_marked(constants) -> None:
    from debiaseval.evaluation.flags import FLAGS

    evaluated = constants["snapshots"].set_index("t")["n_evaluated"]
    fewest = int(evaluated.min())
    tables = e6.aggregate([constants], e6.E6Aggregate(fewest))
    assert not tables["scores"]["flags"].str.contains("few_users").any()
    tables = e6.aggregate([constants], e6.E6Aggregate(fewest + 1))
    scores = tables["scores"]
    flagged = scores["t"].map(evaluated).to_numpy() < fewest + 1
    assert flagged.any() and scores.loc[flagged, "flags"].eq("few_users").all()
    assert scores.loc[~flagged, "flags"].eq("").all()
    text = e6.markdown(scores, "synthetic")
    assert FLAGS["few_users"][0] in text and "`few_users`" in text
