"""E5 composition: exposure → models → estimates → agreement ([URE24])."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from debiaseval.api import run_e5 as run
from debiaseval.experiments.e5 import (
    agreement_intervals,
    check_config,
    expose,
    full_data,
    observed_data,
    positive_threshold_of,
)
from debiaseval.experiments.e5.tables import (
    INTERVAL_SUFFIXES,
    agreement_markdown,
    agreement_table,
    estimates_markdown,
)
from debiaseval.io.errors import ConfigError
from debiaseval.workflow.config import validate_config


def settings(block: dict | None = None) -> dict:
    """The ``e5`` block validated with the schema's defaults (as a run of E5 alone)."""
    return validate_config({"e5": dict(block or {})}, "e5")["e5"]


FAST_MF = {"factors": 8, "epochs": 3}
CONFIG = {
    "ks": [3, 10],
    "exposure": {"train_fraction": 0.2, "n_exposed": 10, "strength": 1.0},
    "models": {
        "random": {"algorithm": "random"},
        "pospop": {"algorithm": "pospop"},
        "userknn": {"algorithm": "userknn", "grid": {"k": [5, 20]}},
        "mf_warp": {"algorithm": "mf", "params": FAST_MF, "grid": {"max_sampled": [1, 10]}},
        "mf_ips": {"algorithm": "mf_ips", "params": FAST_MF},
    },
}


@pytest.fixture(scope="module")
def full() -> pd.DataFrame:
    return full_data({"n_users": 60, "n_items": 80, "seed": 3})


def test_full_data_is_every_pair(full):
    assert len(full) == 60 * 80 and (full["part"] == "full").all()
    assert full["user"].dtype == np.int32 and full["rating"].dtype == np.float32


def test_run_tables_and_determinism(full):
    out = run(full, {"e5": CONFIG}, seeds=2)
    est, agr = out["estimates"], out["agreement"]
    assert list(est.columns[:6]) == [
        "model",
        "params",
        "k",
        "true_recall",
        "traditional_recall",
        "ure",
    ]
    assert len(est) == 7 * 2  # 7 models (grid points) x 2 ks
    assert (est["n_seeds"] == 2).all()
    assert {json.loads(p).get("max_sampled") for p in est["params"]} == {None, 1, 10}
    assert est[["true_recall", "ure"]].notna().all().all()
    assert list(agr.columns) == [
        "k",
        "estimator",
        "reference",
        "kendall_tau",
        "tau_low",
        "tau_high",
        "pearson_r",
        "mean_bias",
        "n_models",
        "flags",
    ]
    assert set(agr["estimator"]) == {"traditional", "ure"} and (agr["n_models"] == 7).all()
    # the traditional estimate on 10 exposed items is far above the truth, URE is not
    trad = agr[agr["estimator"] == "traditional"]["mean_bias"]
    ure = agr[agr["estimator"] == "ure"]["mean_bias"]
    assert (trad > 0.2).all() and (ure.abs() < 0.1).all()
    again = run(full, {"e5": CONFIG}, seeds=2)
    pd.testing.assert_frame_equal(est, again["estimates"])
    assert "## K = 3" in estimates_markdown(est, "synthetic")
    assert "kendall_tau" in agreement_markdown(agr, "synthetic")


@pytest.mark.parametrize("per_seed", [True, False])
def test_each_seed_exposes_its_own_draw_unless_per_seed_is_false(per_seed):
    """On synthetic each seed of E5 exposes its own draw of the full matrix (the workflow's
    e5/synthetic/seed<s>/full.parquet); with ``per_seed: false`` every seed the one draw."""
    from debiaseval.data.draws import seed_block

    models = {"pospop": {"algorithm": "pospop"}}
    config = {
        "synthetic": {"n_users": 40, "n_items": 50, "seed": 3, "per_seed": per_seed},
        "e5": {**CONFIG, "ks": [3], "models": models},
    }
    full = validate_config(config, "e5")
    got = run("synthetic", config, seeds=[0, 1])["per_seed"]
    matrices = [full_data(seed_block(full, "synthetic", s)) for s in (0, 1)]
    assert matrices[0].equals(matrices[1]) is not per_seed
    assert matrices[1].equals(full_data(full["synthetic"])) is not per_seed  # the draw at seed 3
    for s, matrix in enumerate(matrices):  # each seed's estimates are those of its own matrix
        alone = run(matrix, config, seeds=[s], dataset="synthetic")["per_seed"]
        pd.testing.assert_frame_equal(got[got["seed"] == s].reset_index(drop=True), alone)


def test_without_truth_compares_traditional_with_ure(full):
    rng = np.random.default_rng(0)
    mnar = full.sample(frac=0.1, random_state=1).assign(part="mnar")
    mar = full.groupby("user").sample(n=5, random_state=2).assign(part="mar")
    data = pd.concat([mnar, mar], ignore_index=True)
    labelled = observed_data(data)
    assert set(labelled["part"]) == {"train", "exposed"} and len(labelled) == len(data)
    config = {**CONFIG, "models": {k: CONFIG["models"][k] for k in ("random", "pospop")}}
    out = run(data.sample(frac=1.0, random_state=rng.integers(99)), {"e5": config}, seeds=1)
    assert out["estimates"]["true_recall"].isna().all()
    agr = out["agreement"]
    assert set(agr["estimator"]) == {"traditional"} and set(agr["reference"]) == {"ure"}
    assert "true_recall" not in estimates_markdown(out["estimates"], "yahoo-r3")


def test_exposure_strength_zero_and_attribute(full):
    exposure = {**settings()["exposure"], "strength": 0.0}
    labelled = expose(
        full, n_items=80, exposure=exposure, positive_threshold=3.0, rng=np.random.default_rng(1)
    )
    assert set(labelled["part"]) == {"train", "exposed", "unexposed"}
    items = pd.DataFrame({"item": np.arange(80), "duration": np.linspace(1, 2, 80)})
    by_attr = {**exposure, "by": "attribute", "attribute": "duration", "strength": 3.0}
    labelled = expose(
        full,
        n_items=80,
        exposure=by_attr,
        positive_threshold=3.0,
        rng=np.random.default_rng(1),
        items=items,
    )
    train_items = labelled.loc[labelled["part"] == "train", "item"]
    assert train_items.mean() > 50  # long videos are exposed far more often
    with pytest.raises(ValueError, match="no such column"):
        expose(full, n_items=80, exposure=by_attr, positive_threshold=3.0, rng=None)
    inverse = {**by_attr, "by": "inverse_attribute", "strength": 1.0}
    labelled = expose(
        full,
        n_items=80,
        exposure=inverse,
        positive_threshold=3.0,
        rng=np.random.default_rng(1),
        items=items,
    )
    train_items = labelled.loc[labelled["part"] == "train", "item"]
    assert train_items.mean() < 39.5  # short videos are exposed more often
    zero = items.assign(duration=np.arange(80.0))
    with pytest.raises(ValueError, match=r"e5\.exposure\.attribute 'duration'.*> 0"):
        expose(
            full,
            n_items=80,
            exposure=inverse,
            positive_threshold=3.0,
            rng=np.random.default_rng(1),
            items=zero,
        )


def test_mar_test_share_and_evaluated_users(full):
    """[URE24]'s Yahoo! R3 protocol: all MNAR pairs train (users without MAR ratings too), a
    seeded 90% of the MAR pairs is the random set, the rest set aside; only users with a
    positive in the random set are evaluated."""
    mnar = full.sample(frac=0.1, random_state=1).assign(part="mnar")
    mar_users = np.arange(0, 60, 2)  # half of the users have MAR ratings
    mar = full[np.isin(full["user"], mar_users)].groupby("user").sample(n=10, random_state=2)
    data = pd.concat([mnar, mar.assign(part="mar")], ignore_index=True)
    rng = np.random.default_rng
    labelled = observed_data(data, test_fraction=0.9, rng=rng(7))
    parts = labelled["part"].value_counts()
    assert parts["train"] == len(mnar) and parts["exposed"] == round(0.9 * len(mar))
    assert parts["validation"] == len(mar) - round(0.9 * len(mar))
    assert labelled[labelled["part"] == "train"]["user"].nunique() == 60
    pd.testing.assert_frame_equal(labelled, observed_data(data, test_fraction=0.9, rng=rng(7)))
    assert not labelled.equals(observed_data(data, test_fraction=0.9, rng=rng(8)))
    kept = labelled[labelled["part"] != "train"].drop(columns="part").reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, mar[kept.columns].reset_index(drop=True))
    assert (observed_data(data)["part"] != "validation").all()  # test_fraction 1: all of MAR
    with pytest.raises(ValueError, match="needs a numpy Generator"):
        observed_data(data, test_fraction=0.5)
    config = {**CONFIG, "models": {"pospop": CONFIG["models"]["pospop"]}}
    out = run(data, {"e5": config}, seeds=1)
    assert out["per_seed"]["n_users_exposed"].max() <= mar_users.size
    assert out["per_seed"]["n_users_exposed"].min() > 0


def test_agreement_table_perfect_and_reversed():
    est = pd.DataFrame(
        {
            "model": ["a", "b", "c"],
            "params": "{}",
            "k": 5,
            "true_recall": [0.1, 0.2, 0.3],
            "traditional_recall": [0.9, 0.8, 0.7],
            "ure": [0.1, 0.2, 0.3],
        }
    )
    agr = agreement_table(est).set_index("estimator")
    assert agr.loc["ure", "kendall_tau"] == pytest.approx(1.0)
    assert agr.loc["traditional", "kendall_tau"] == pytest.approx(-1.0)
    assert agr.loc["traditional", "mean_bias"] == pytest.approx(0.6)
    assert agr.loc["ure", "mean_bias"] == pytest.approx(0.0)


def _seed_estimates(n_seeds: int, noise: float, seed: int = 0) -> pd.DataFrame:
    """Five models whose true recall is 0.1, 0.2, ... 0.5 in every seed; URE adds ``noise`` per
    seed and model, traditional recall reverses the order."""
    rng = np.random.default_rng(seed)
    true = np.tile(np.arange(1, 6) / 10, (n_seeds, 1))
    return pd.DataFrame(
        {
            "seed": np.repeat(np.arange(n_seeds), 5),
            "model": np.tile(list("abcde"), n_seeds),
            "params": "{}",
            "k": 5,
            "true_recall": true.ravel(),
            "ure": (true + rng.normal(0, noise, true.shape)).ravel(),
            "traditional_recall": (1 - true).ravel(),
        }
    )


def _intervals(per_seed: pd.DataFrame, resamples: int = 2000) -> pd.DataFrame:
    means = per_seed.groupby(["model", "params", "k"], as_index=False)[
        ["true_recall", "ure", "traditional_recall"]
    ].mean()
    return agreement_intervals(
        per_seed,
        agreement_table(means),
        confidence=0.95,
        resamples=resamples,
        rng=np.random.default_rng(1),
    ).set_index("estimator")


def test_tau_intervals_over_seeds():
    """τ's interval over seed resamples: a point where the ranking never changes, wide where
    per-seed noise reorders the models, none below 5 seeds or without the true recall."""
    exact = _intervals(_seed_estimates(10, 0.0))
    assert exact.loc["ure", ["tau_low", "tau_high"]].tolist() == [1.0, 1.0]
    assert exact.loc["traditional", ["tau_low", "tau_high"]].tolist() == [-1.0, -1.0]
    noisy = _intervals(_seed_estimates(10, 0.3))
    low, tau, high = noisy.loc["ure", ["tau_low", "kendall_tau", "tau_high"]]
    assert -1 <= low < tau <= high <= 1 and high - low > 0.3
    assert _intervals(_seed_estimates(4, 0.15))[["tau_low", "tau_high"]].isna().all().all()
    # coverage: over fresh 10-seed studies, the interval holds the τ of the models' expected
    # recall (1: the true order) ... as often as a 95% interval should, within sampling error
    hits = 0
    for draw in range(100):
        row = _intervals(_seed_estimates(10, 0.25, seed=draw), resamples=400).loc["ure"]
        hits += row["tau_high"] >= 1.0 - 1e-12
    assert hits >= 85
    no_truth = _seed_estimates(10, 0.15).assign(true_recall=np.nan)
    out = agreement_intervals(
        no_truth,
        agreement_table(
            no_truth.groupby(["model", "params", "k"], as_index=False)[
                ["true_recall", "ure", "traditional_recall"]
            ].mean()
        ),
        confidence=0.95,
        resamples=200,
        rng=np.random.default_rng(0),
    )
    assert out["tau_low"].isna().all()


def test_config_checks_inverse_attribute():
    with pytest.raises(ConfigError, match=r"e5\.exposure\.attribute.*inverse_attribute"):
        settings({"exposure": {"by": "inverse_attribute"}})
    exposure = {"by": "inverse_attribute", "attribute": "video_duration"}
    assert settings({"exposure": exposure})["exposure"]["strength"] == 1.0
    assert settings()["mar_test_fraction"] == 0.9


def test_config_checks():
    check_config({"e5": settings(CONFIG)})
    with pytest.raises(ConfigError, match=r"e5\.models\.x\.algorithm"):
        settings({**CONFIG, "models": {"x": {"algorithm": "svd"}}})
    with pytest.raises(ConfigError, match=r"e5\.models\.x"):
        settings({"models": {"x": {"algorithm": "userknn", "grid": {"k": [0]}}}})
    with pytest.raises(ConfigError, match=r"e5\.exposure\.attribute"):
        settings({"exposure": {"by": "attribute"}})
    with pytest.raises(ConfigError, match=r"e5\.datasets\.0"):
        settings({"datasets": ["ml-100k"]})
    with pytest.raises(ConfigError, match=r"e5\.ties"):
        settings({"ties": "average"})
    assert positive_threshold_of("kuairec", None) == 2.0
    assert positive_threshold_of("synthetic", None) == 3.0
    assert positive_threshold_of("kuairec", 1.5) == 1.5


def test_per_user_values_average_to_the_estimates_and_models_are_compared(full):
    out = run(full, {"e5": CONFIG}, seeds=2)
    per_user, rows = out["metrics_per_user"], out["per_seed"]
    assert list(per_user.columns) == ["seed", "model", "params", "user", "k", "metric", "value"]
    means = per_user.groupby(["seed", "model", "params", "k", "metric"])["value"].mean()
    for metric in ("true_recall", "traditional_recall", "ure"):
        expected = rows.set_index(["seed", "model", "params", "k"])[metric]
        got = means.xs(metric, level="metric").reindex(expected.index)
        np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), rtol=1e-12)
    tests, agreed = out["seed_comparisons"], out["comparisons"]
    # 7 contenders (grid points of userknn and mf_warp named with their params): 21 pairs
    assert len(tests) == 2 * 2 * 3 * 21  # seeds x ks x estimates x pairs
    assert any(name.startswith("userknn {") for name in tests["recommender_a"])
    assert "random" in set(tests["recommender_a"]) | set(tests["recommender_b"])
    assert (agreed["n_seeds"] == 2).all() and len(agreed) == 2 * 3 * 21
    # true Recall@10 tells random from pospop in both seeds
    row = agreed[
        (agreed["metric"] == "true_recall")
        & (agreed["recommender_a"] == "random")
        & (agreed["recommender_b"] == "pospop")
        & (agreed["k"] == 10)
    ]
    assert row["n_b_better"].iloc[0] == 2


def test_bootstrap_table_covers_each_estimate_at_its_nominal_rate():
    # 400 models' per-user values, Bernoulli(0.3), each over its own 150 of 300 users, like
    # estimates defined on different users: each interval covers 0.3 about 95% of the time.
    from debiaseval.experiments.e5.tables import bootstrap_table

    rng = np.random.default_rng(5)
    frames = []
    for model in range(400):
        users = np.sort(rng.choice(300, 150, replace=False))
        frames.append(
            pd.DataFrame(
                {
                    "seed": np.int32(0),
                    "model": f"m{model}",
                    "params": "{}",
                    "user": users,
                    "k": np.int16(10),
                    "metric": "true_recall",
                    "value": rng.binomial(1, 0.3, 150).astype(float),
                }
            )
        )
    per_user = pd.concat(frames, ignore_index=True)
    bounds = bootstrap_table(per_user, resamples=2000, confidence=0.95, dataset="synthetic")
    assert len(bounds) == 400 and list(bounds["model"][:2]) == ["m0", "m1"]
    coverage = np.mean((bounds["boot_low"] <= 0.3) & (0.3 <= bounds["boot_high"]))
    assert abs(coverage - 0.95) <= 0.03, coverage
    # each bound pair brackets the model's own mean
    means = per_user.groupby("model", sort=False)["value"].mean().to_numpy()
    assert ((bounds["boot_low"] <= means + 1e-6) & (means <= bounds["boot_high"] + 1e-6)).all()
    off = bootstrap_table(per_user, resamples=0, confidence=0.95, dataset="synthetic")
    assert off["boot_low"].isna().all()


def test_estimates_carry_intervals_over_seeds_and_users(full):
    from debiaseval.evaluation.uncertainty import range_t_interval

    out = run(full, {"e5": CONFIG}, seeds=3)
    est, rows = out["estimates"], out["per_seed"]
    for v in ("true_recall", "traditional_recall", "ure"):
        lo, hi = est[f"{v}_boot_low"], est[f"{v}_boot_high"]
        assert (lo <= hi).all() and (lo < hi).any()
        assert (est[f"{v}_ci_low"] <= est[v] + 1e-12).all()
        assert est[[f"{v}_{s}" for s in INTERVAL_SUFFIXES]].stack().between(0, 1).all()
    # the t interval over seeds of one row on the logit scale (Recall@K lies in [0, 1])
    row = est.iloc[0]
    seeds = rows[
        (rows["model"] == row["model"])
        & (rows["params"] == row["params"])
        & (rows["k"] == row["k"])
    ]["ure"].to_numpy()
    _, low, high = range_t_interval(seeds, lower=0.0, upper=1.0)
    assert row["ure_ci_low"] == pytest.approx(low) and row["ure_ci_high"] == pytest.approx(high)
    text = estimates_markdown(est, "synthetic")
    assert "⟨" in text and "[" in text and "t interval over seeds" in text


def _observed(full: pd.DataFrame) -> pd.DataFrame:
    mnar = full.sample(frac=0.15, random_state=1).assign(part="mnar")
    mar = full.groupby("user").sample(n=8, random_state=2).assign(part="mar")
    return pd.concat([mnar, mar], ignore_index=True)


def test_one_fit_serves_every_seed_when_the_seeds_share_their_training_set(full):
    """Without full data every seed trains on all of MNAR: by default each model is fitted once
    (fit seed independent of the seeds) and scored on each seed's random set; with
    ``train_per_seed`` every seed fits its own, as on fully exposed data."""
    from debiaseval.data.splits import run_rng
    from debiaseval.experiments.e5 import E5Evaluate, evaluate_models, fit_seed, shared_fit_seed

    data = _observed(full)
    config = {
        **CONFIG,
        "mar_test_fraction": 0.6,
        "models": {k: CONFIG["models"][k] for k in ("pospop", "mf_warp")},
    }
    once = run(data, {"e5": config}, seeds=2)["per_seed"]
    each = run(data, {"e5": {**config, "train_per_seed": True}}, seeds=2)["per_seed"]
    threshold = positive_threshold_of("data", settings()["positive_threshold"], {})
    for seed in (0, 1):
        labelled = observed_data(data, test_fraction=0.6, rng=run_rng(seed, "data", "e5_mar_test"))
        for name, spec in config["models"].items():
            kwargs = {"n_users": int(data["user"].max()) + 1}
            kwargs["n_items"] = int(data["item"].max()) + 1
            step = E5Evaluate(
                model=name,
                spec=spec,
                ks=config["ks"],
                positive_threshold=threshold,
                ties="rank",
                batch_size=1024,
            )
            for table, fit in (
                (once, shared_fit_seed("data", name)),
                (each, fit_seed(seed, "data", name)),
            ):
                got = table[(table["seed"] == seed) & (table["model"] == name)]
                expected = evaluate_models(labelled, step, seed=fit, **kwargs)
                pd.testing.assert_frame_equal(
                    got.drop(columns="seed").reset_index(drop=True), expected, check_exact=True
                )
    ure = [t[t["model"] == "mf_warp"]["ure"].to_numpy() for t in (once, each)]
    assert not np.allclose(*ure)  # other fits, other values
    # fully exposed data: every seed has its own training set, so the option changes nothing
    small = {**config, "models": {"mf_warp": config["models"]["mf_warp"]}}
    pd.testing.assert_frame_equal(
        run(full, {"e5": small}, seeds=2)["per_seed"],
        run(full, {"e5": {**small, "train_per_seed": True}}, seeds=2)["per_seed"],
    )


def test_one_fit_refuses_seeds_that_train_on_different_pairs(full):
    from debiaseval.experiments.e5 import E5Evaluate, evaluate_models_on_seeds

    exposure = {**settings()["exposure"], **CONFIG["exposure"]}
    a = expose(
        full, n_items=80, exposure=exposure, positive_threshold=3.5, rng=np.random.default_rng(0)
    )
    b = expose(
        full, n_items=80, exposure=exposure, positive_threshold=3.5, rng=np.random.default_rng(1)
    )
    with pytest.raises(ValueError, match="seeds 0 and 1 train on different pairs"):
        evaluate_models_on_seeds(
            {0: a, 1: b},
            E5Evaluate(
                model="pospop",
                spec={"algorithm": "pospop"},
                ks=[3],
                positive_threshold=3.5,
                ties="rank",
                batch_size=64,
            ),
            n_users=60,
            n_items=80,
            seed=0,
        )
