"""E3 ([ICML16] §3.4): prediction matrices, simulation over draws of O, Table 1, RMSE tables."""

import numpy as np
import pandas as pd
import pytest

from debiaseval import api
from debiaseval.data.splits import run_rng
from debiaseval.evaluation.prediction_matrices import PREDICTION_MATRICES, prediction_matrix
from debiaseval.experiments import e3

SMALL = {"n_users": 80, "n_items": 60, "density": 0.1, "alpha": 0.25, "n_mar": 5, "seed": 3}


def test_prediction_matrices_follow_their_definitions():
    rng = np.random.default_rng(0)
    y = rng.choice(np.arange(1.0, 6.0), size=(50, 40), p=[0.5, 0.2, 0.15, 0.1, 0.05])
    n5 = int((y == 5).sum())
    ones = prediction_matrix("REC_ONES", y, rng)
    changed = ones != y
    assert changed.sum() == n5 and np.all(y[changed] == 1) and np.all(ones[changed] == 5)
    fours = prediction_matrix("REC_FOURS", y, rng)
    changed = fours != y
    assert changed.sum() == n5 and np.all(y[changed] == 4) and np.all(fours[changed] == 5)
    rot = prediction_matrix("ROTATE", y, rng)
    assert np.all(rot[y == 1] == 5) and np.all(rot[y > 1] == y[y > 1] - 1)
    coarse = prediction_matrix("COARSENED", y, rng)
    assert np.all(coarse == np.where(y <= 3, 3, 4))
    big = np.repeat(np.arange(1.0, 6.0), 20_000).reshape(1, -1)
    skew = prediction_matrix("SKEWED", big, rng)
    assert skew.min() >= 0 and skew.max() <= 6
    for r in (1, 5):  # unclipped mean of N(r, (6 - r)/2) would be r; clipping shifts it
        z = skew[big == r]
        assert abs(np.median(z) - r) < 0.05
    assert skew[big == 5].std() == pytest.approx(0.5, abs=0.02)
    assert list(PREDICTION_MATRICES) == ["REC_ONES", "REC_FOURS", "ROTATE", "SKEWED", "COARSENED"]


def test_prediction_matrix_bad_input():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown prediction matrix"):
        prediction_matrix("REC_TWOS", np.ones((2, 2)), rng)
    with pytest.raises(ValueError, match=r"integers 1\.\.5"):
        prediction_matrix("ROTATE", np.array([[1.0, np.nan]]), rng)
    with pytest.raises(ValueError, match="only 1 true 1s"):
        prediction_matrix("REC_ONES", np.array([[1.0, 5.0, 5.0]]), rng)


def _simulate(seed=0, **kw):
    truth = e3.synthetic_truth(SMALL)
    args = {"n_draws": 20, "alphas": [0.5, 1.0], "mar_sizes": [200, 4000]} | kw
    draws, _ = e3.simulate(
        truth,
        seed=seed,
        rng_predictions=run_rng(seed, "synthetic", "e3", "predictions"),
        rng_draws=run_rng(seed, "synthetic", "e3", "draws"),
        **args,
    )
    return draws


def test_simulate_rows_truth_and_determinism():
    draws = _simulate()
    # 20 draws x (3 alphas + 2 MAR sizes) x 5 matrices x 2 metrics x 3 estimators
    assert len(draws) == 20 * 5 * 5 * 2 * 3
    assert list(draws.columns) == [
        "seed",
        "draw",
        "propensity",
        "alpha",
        "mar_size",
        "matrix",
        "metric",
        "estimator",
        "value",
        "true_value",
        "n_observed",
    ]
    assert sorted(draws["alpha"].unique()) == [0.25, 0.5, 1.0]
    assert set(draws.loc[draws["propensity"] == "naive_bayes", "alpha"]) == {0.25}
    y = e3.synthetic_truth(SMALL).ratings.astype(float)
    truth = draws.groupby(["matrix", "metric"])["true_value"].unique()
    assert truth[("COARSENED", "mae")] == pytest.approx(np.abs(y - np.where(y <= 3, 3, 4)).mean())
    rot = np.where(y >= 2, y - 1, 5)
    assert truth[("ROTATE", "mae")] == pytest.approx(np.abs(y - rot).mean())
    # with alpha = 1 the synthetic model is MCAR: uniform propensities, SNIPS = Naive exactly
    mcar = draws[draws["alpha"] == 1.0].pivot_table(
        index=["draw", "matrix", "metric"], columns="estimator", values="value"
    )
    np.testing.assert_allclose(mcar["snips"], mcar["naive"], rtol=1e-9)
    again = _simulate()
    pd.testing.assert_frame_equal(draws, again)
    assert not _simulate(seed=1)["value"].equals(draws["value"])


def test_naive_bayes_tables_approach_the_true_marginal_propensities():
    truth = e3.synthetic_truth(SMALL)
    _, nb = e3.simulate(
        truth,
        seed=0,
        n_draws=30,
        alphas=[],
        mar_sizes=[100, 4800],
        rng_predictions=run_rng(0, "synthetic", "e3", "predictions"),
        rng_draws=run_rng(0, "synthetic", "e3", "draws"),
    )
    assert list(nb.columns) == [
        "seed",
        "draw",
        "mar_size",
        "rating",
        "propensity",
        "true_propensity",
        "p_rating_observed",
        "p_rating",
    ]
    assert len(nb) == 30 * 2 * 5
    p = truth.propensities(0.25)
    y = truth.ratings
    np.testing.assert_allclose(
        nb["true_propensity"].iloc[:5], [p[y == r].mean() for r in range(1, 6)], rtol=1e-6
    )
    # the whole matrix as MAR sample: only O's randomness is left, the mean is near the truth;
    # a 100-rating MAR sample errs more
    err = (nb["propensity"] / nb["true_propensity"] - 1).abs().groupby(nb["mar_size"]).mean()
    assert err[4800] < 0.1 and err[100] > 2 * err[4800]


def test_summaries_and_table1():
    draws = pd.concat([_simulate(0), _simulate(1)], ignore_index=True)
    est = e3.summarise_estimates(draws, alpha=0.25)
    assert list(est.columns) == [
        "matrix",
        "metric",
        "estimator",
        "true_value",
        "mean",
        "sd",
        "ci_low",
        "ci_high",
        "n_draws",
        "flags",
    ]
    assert len(est) == 5 * 2 * 3 and set(est["n_draws"]) == {40}
    assert est["matrix"].iloc[0] == "REC_ONES" and est["estimator"].iloc[:3].tolist() == [
        "naive",
        "ips",
        "snips",
    ]
    row = est[(est["matrix"] == "ROTATE") & (est["metric"] == "mae") & (est["estimator"] == "ips")]
    sub = draws[
        (draws["propensity"] == "known")
        & (draws["alpha"] == 0.25)
        & (draws["matrix"] == "ROTATE")
        & (draws["metric"] == "mae")
        & (draws["estimator"] == "ips")
    ]
    assert row["mean"].item() == pytest.approx(sub["value"].mean())
    assert row["sd"].item() == pytest.approx(sub["value"].std(ddof=1))
    # the interval of the mean over the 40 draws: on the log scale of [0, inf), so within it
    # and asymmetric around the mean, and close to the symmetric t interval (many draws)
    from scipy.stats import t as student_t

    half = student_t.ppf(0.975, 39) * sub["value"].std(ddof=1) / np.sqrt(40)
    low, high, mean = row["ci_low"].item(), row["ci_high"].item(), row["mean"].item()
    assert 0 <= low < mean < high and high - mean > mean - low
    assert low == pytest.approx(mean - half, rel=0.05)
    assert high == pytest.approx(mean + half, rel=0.05)
    assert (est["ci_low"] >= 0).all() and (est["ci_low"] <= est["mean"]).all()

    by_alpha = e3.rmse_table(draws, propensity="known", by="alpha")
    assert len(by_alpha) == 5 * 2 * 3 * 3
    sel = sub["value"] - sub["true_value"]
    got = by_alpha[
        (by_alpha["matrix"] == "ROTATE")
        & (by_alpha["metric"] == "mae")
        & (by_alpha["estimator"] == "ips")
        & (by_alpha["alpha"] == 0.25)
    ]
    assert got["rmse"].item() == pytest.approx(np.sqrt((sel**2).mean()))
    # Naive's bias shrinks as the selection bias vanishes (alpha -> 1)
    naive = by_alpha[(by_alpha["estimator"] == "naive") & (by_alpha["metric"] == "mae")]
    bias = naive.groupby("alpha")["bias"].apply(lambda b: b.abs().mean())
    assert (bias.diff().dropna() < 0).all()
    by_mar = e3.rmse_table(draws, propensity="naive_bayes", by="mar_size")
    assert sorted(by_mar["mar_size"].unique()) == [200, 4000]

    text = e3.table1_markdown(est, title="synthetic")
    lines = text.splitlines()
    assert lines[2] == "| metric | | REC_ONES | REC_FOURS | ROTATE | SKEWED | COARSENED |"
    assert lines[4].startswith("| MAE | True | ") and lines[5].startswith("| | Naive | ")
    assert lines[8].startswith("| DCG@50 | True | ") and "±" not in text
    cell = f"{row['mean'].item():.3f} [{low:.3f}, {high:.3f}] (sd {row['sd'].item():.3f})"
    assert cell in lines[6]  # MAE, IPS
    assert "40 draws" in lines[-1] and "t interval (fixed: E3 has no level key)" in lines[-1]


def test_rmse_averaged_over_matrices_as_figures_2_and_4():
    draws = _simulate(n_draws=4, metrics=["mae", "mse", "dcg@50"])
    block = {"alpha": 0.25, "table_metrics": ["mae", "dcg@50"], "curve_metrics": ["mse", "dcg@50"]}
    tables = e3.aggregate(draws, e3.E3Aggregate(**block))
    assert list(dict.fromkeys(tables["estimates"]["metric"])) == ["mae", "dcg@50"]  # Table 1
    for name in ("rmse_vs_alpha", "rmse_vs_mar", "rmse_vs_alpha_mean", "rmse_vs_mar_mean"):
        assert list(dict.fromkeys(tables[name]["metric"])) == ["mse", "dcg@50"], name
    mean = tables["rmse_vs_alpha_mean"]
    assert list(mean.columns) == [
        "metric",
        "estimator",
        "alpha",
        "mar_size",
        "rmse",
        "abs_bias",
        "sd",
        "n_matrices",
    ]
    assert len(mean) == 2 * 3 * 3 and (mean["n_matrices"] == 5).all()
    # by hand: the mean over the five matrices of each matrix's RMSE over the draws
    cell = draws[
        (draws["propensity"] == "known")
        & (draws["alpha"] == 0.5)
        & (draws["metric"] == "mse")
        & (draws["estimator"] == "naive")
    ]
    per_matrix = cell.groupby("matrix").apply(
        lambda g: np.sqrt(((g["value"] - g["true_value"]) ** 2).mean()), include_groups=False
    )
    got = mean[(mean["metric"] == "mse") & (mean["estimator"] == "naive") & (mean["alpha"] == 0.5)]
    assert got["rmse"].item() == pytest.approx(per_matrix.mean())
    assert sorted(tables["rmse_vs_mar_mean"]["mar_size"].unique()) == [200, 4000]
    everything = e3.aggregate(draws, e3.E3Aggregate(0.25))  # no selection: every metric
    assert set(everything["estimates"]["metric"]) == {"mae", "mse", "dcg@50"}


def test_rotate_dcg_is_the_papers_when_every_user_has_50_true_ones():
    # ICML16 Table 1: ROTATE's true DCG@50 is 12.90 = sum over r <= 50 of 1/log2(1 + r): every
    # user's top 50 are true 1s (Y-hat = 5, gain 1), whatever the tie order
    rng = np.random.default_rng(4)
    y = np.where(rng.random((30, 200)) < 0.5, 1.0, rng.integers(2, 6, (30, 200)).astype(float))
    y[:, :60] = 1.0  # at least 60 true 1s per user
    paper = float(np.sum(1.0 / np.log2(1.0 + np.arange(1, 51))))
    assert paper == pytest.approx(12.898, abs=1e-3)
    for seed in (0, 1):
        cells, _ = e3.true_losses(
            y, matrices=["ROTATE"], metrics=["dcg@50"], rng=np.random.default_rng(seed)
        )
        assert cells["true_value"].item() == pytest.approx(paper)
    # a user with 10 true 1s gets true 5s (Y-hat = 4, gain 5) into the top 50: the truth rises,
    # as it does for the 23 such users of the completed ML-100K (docs/experiments/e3.md)
    y[0] = np.where(np.arange(200) < 10, 1.0, 5.0)
    cells, _ = e3.true_losses(y, matrices=["ROTATE"], metrics=["dcg@50"], rng=rng)
    assert cells["true_value"].item() > paper + 1.0


def test_simulate_bad_input():
    with pytest.raises(ValueError, match="MAR sample sizes"):
        _simulate(mar_sizes=[10**9])
    with pytest.raises(ValueError, match="unknown metric"):
        _simulate(metrics=["ndcg@5"])
    with pytest.raises(ValueError, match=r"clip must lie in \(0, 1\]"):
        _simulate(clip=0.0)


def test_figures_draw_every_panel():
    """Every figure draws its panels, each estimator in its one colour of the run."""
    from matplotlib.colors import to_hex

    from debiaseval.figures import e3 as figures
    from debiaseval.figures import row_colours

    tables = e3.aggregate(_simulate(n_draws=3), e3.E3Aggregate(0.25))
    assert set(figures.TABLES) <= set(tables)
    panels = {"rmse_vs_alpha": 2, "rmse_vs_mar": 2, "rmse_vs_alpha_by_matrix": 5 * 2}
    assert set(panels) == set(figures.FIGURES)
    for name, n_panels in panels.items():
        fig = figures.draw(name, tables, "synthetic")
        assert len(fig.axes) == n_panels  # metrics (averaged over matrices), or matrices x metrics
        assert fig.axes[0].get_yscale() == "log"
        lines = [line for ax in fig.axes for line in ax.get_lines()]
        seen = {(line.get_label(), to_hex(line.get_color())) for line in lines}
        assert seen == {(n, to_hex(c)) for n, c in row_colours(["Naive", "IPS", "SNIPS"]).items()}
    with pytest.raises(ValueError, match="no figure"):
        figures.draw("bias", tables, "synthetic")


def test_run_api_and_config_checks():
    from debiaseval.io.errors import ConfigError

    config = {
        "synthetic": SMALL,
        "e3": {"seeds": 2, "n_draws": 3, "alphas": [1.0], "mar_sizes": [50]},
    }
    out = api.run_e3("synthetic", config)
    assert set(out) == {
        "draws",
        "naive_bayes",
        "estimates",
        "rmse_vs_alpha",
        "rmse_vs_mar",
        "rmse_vs_alpha_mean",
        "rmse_vs_mar_mean",
        "verdict",
        "verdict_md",
    }
    assert set(out["estimates"]["n_draws"]) == {6}
    # the same as the workflow's steps: simulate_seed per seed on the seed's own draw of
    # synthetic (e3_simulate's params: draw_block), then aggregate
    from debiaseval.data.draws import seed_block
    from debiaseval.workflow.config import validate_config

    full = validate_config(config)
    summary = e3.E3Aggregate.of(full, "synthetic")
    truths = [e3.synthetic_truth(seed_block(full, "synthetic", s)) for s in (0, 1)]
    assert not np.array_equal(truths[0].ratings, truths[1].ratings)
    step = e3.E3Simulate.of(full, "synthetic")
    runs = [e3.simulate_seed(truth, step, s) for s, truth in enumerate(truths)]
    draws = pd.concat([d for d, _ in runs], ignore_index=True)
    pd.testing.assert_frame_equal(out["draws"], draws)
    pd.testing.assert_frame_equal(
        out["naive_bayes"], pd.concat([nb for _, nb in runs], ignore_index=True)
    )
    pd.testing.assert_frame_equal(out["estimates"], e3.aggregate(draws, summary)["estimates"])
    one = api.run_e3("synthetic", config, seeds=[1])
    assert set(one["draws"]["seed"]) == {1}
    lacks = r"'e3.datasets.0': E3 cannot run on 'coat', which lacks a full rating matrix"
    with pytest.raises(ConfigError, match=lacks):
        validate_config({"e3": {"datasets": ["coat"]}})
    with pytest.raises(ConfigError, match=r"'e3.mar_sizes': \[5000\] exceed the 4800 pairs"):
        validate_config({"synthetic": SMALL, "e3": {"mar_sizes": [100, 5000]}})
    with pytest.raises(ConfigError, match=r"'e3.metrics.0'"):
        validate_config({"e3": {"metrics": ["ndcg@10"]}})
    with pytest.raises(ConfigError, match=r"'e3.curve_metrics.1': 'mse' is not one of the metrics"):
        validate_config({"e3": {"metrics": ["mae", "dcg@50"], "curve_metrics": ["mae", "mse"]}})


def test_each_seed_draws_its_own_truth_unless_per_seed_is_false():
    """On synthetic every seed of E3 has its own full matrix Y and propensities P (so its own
    mean P over the pairs rated r, ``true_propensity``); with ``synthetic.per_seed: false``
    every seed has the one draw at ``synthetic.seed``."""
    block = {"seeds": 2, "n_draws": 2, "alphas": [0.25], "mar_sizes": [50], "metrics": ["mae"]}
    for per_seed in (True, False):
        config = {"synthetic": {**SMALL, "per_seed": per_seed}, "e3": block}
        nb = api.run_e3("synthetic", config)["naive_bayes"]
        true = nb.drop_duplicates(["seed", "rating"]).pivot(
            index="rating", columns="seed", values="true_propensity"
        )
        assert bool((true[0] != true[1]).any()) is per_seed
    y = e3.synthetic_truth(SMALL).ratings  # the one draw at synthetic.seed
    p = e3.synthetic_truth(SMALL).propensities(0.25)
    expected = [p[y == r].mean() for r in range(1, 6)]
    np.testing.assert_allclose(true[1].to_numpy(), expected, rtol=1e-6)  # P in float32


def test_full_truth_from_a_full_part():
    from debiaseval.datasets.semisynthetic import (
        SemiSynthetic,
        observation_propensities,
        semisynthetic_frames,
    )

    rng = np.random.default_rng(7)
    y = rng.choice(np.arange(1, 6), size=(30, 40), p=[0.5, 0.2, 0.15, 0.1, 0.05]).astype(np.int8)
    p = observation_propensities(y, alpha=0.25, density=0.05)
    data = SemiSynthetic(y, p, rng.random(y.shape) < p, pd.DataFrame())
    frame = semisynthetic_frames(data)
    truth = e3.full_truth(frame, "ml-100k-semi")
    np.testing.assert_array_equal(truth.ratings, y)
    np.testing.assert_allclose(truth.propensities(0.25), p, rtol=1e-5)
    np.testing.assert_allclose(truth.propensities(1.0), 0.05)
    with pytest.raises(ValueError, match="'full' part"):
        e3.full_truth(frame[frame["part"] == "mnar"], "ml-100k-semi")
    with pytest.raises(ValueError, match="expected every pair"):
        e3.full_truth(frame.iloc[:-1], "ml-100k-semi")


def test_estimates_with_undefined_draws_are_flagged_and_marked():
    from debiaseval.evaluation.flags import FLAGS

    draws = _simulate(n_draws=4, metrics=["mae"])
    est = e3.summarise_estimates(draws, alpha=0.25)
    assert (est["flags"] == "").all()
    # one draw of SNIPS on ROTATE observed nothing: its estimate is NaN
    hole = (
        (draws["propensity"] == "known")
        & (draws["matrix"] == "ROTATE")
        & (draws["estimator"] == "snips")
        & np.isclose(draws["alpha"], 0.25)
    )
    draws.loc[draws.index[hole][0], "value"] = np.nan
    est = e3.summarise_estimates(draws, alpha=0.25)
    flagged = est[est["flags"] != ""]
    assert flagged[["matrix", "estimator"]].values.tolist() == [["ROTATE", "snips"]]
    assert flagged["flags"].item() == "undefined_draws" and flagged["n_draws"].item() == 4
    assert flagged["mean"].item() == pytest.approx(draws.loc[hole, "value"].mean())
    text = e3.table1_markdown(est, title="synthetic")
    mark = FLAGS["undefined_draws"][0]
    assert text.count(mark) == 2 and "`undefined_draws`" in text  # the cell and the legend
