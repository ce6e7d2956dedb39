"""E4 ([ICML16] §6.3-6.5): MF-IPS vs MF-Naive, propensity models, paired t-tests, summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval import api
from debiaseval.data import build_interactions
from debiaseval.data.draws import seed_block
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.experiments import e4
from debiaseval.experiments.e4 import tables as le
from debiaseval.io.errors import ConfigError
from debiaseval.recommenders.rating_mf import WeightedMF
from debiaseval.workflow.config import validate_config

SMALL = {"n_users": 80, "n_items": 100, "density": 0.1, "n_mar": 10, "rank": 4, "seed": 0}
FAST = {"grid": {"factors": [4], "l2": [3.0, 30.0]}, "n_folds": 2, "model": {"max_iter": 20}}


@pytest.fixture(scope="module")
def coat_like() -> e4.LearningData:
    """Synthetic MNAR/MAR parts dressed as Coat: true propensities as the provided ones,
    random binary user/item features (so every propensity model of Coat can run)."""
    data = generate_synthetic(n_users=150, n_items=200, alpha=0.1, density=0.1, n_mar=20, seed=4)
    interactions, users, items = build_interactions(data.to_raw())
    rng = np.random.default_rng(0)
    users = users.assign(**{f"u{j}": rng.integers(0, 2, len(users)) for j in range(3)})
    items = items.assign(**{f"i{j}": rng.integers(0, 2, len(items)) for j in range(2)})
    return e4.learning_data("coat", interactions, users, items)


def _block(**extra) -> dict:
    config = {"e4": {**FAST, **extra}}
    return validate_config(config, "e4")["e4"]


def _prepare(data, block, seed):
    """:func:`e4.prepare` with the step config of ``block`` for ``data``'s dataset."""
    return e4.prepare(data, e4.E4Propensities.of({"e4": block}, data.name), seed)


def _fit(data, pairs, block, seed, propensity):
    """:func:`e4.fit` with the step config of ``block`` for ``data``'s dataset."""
    return e4.fit(data, pairs, e4.E4Fit.of({"e4": block}, data.name), seed, propensity)


def test_ips_weights_are_inverse_propensities_with_mean_one() -> None:
    w = e4.ips_weights(np.array([0.5, 0.25, 0.1]))  # 1/p = 2, 4, 10; mean 16/3
    np.testing.assert_allclose(w, [0.375, 0.75, 1.875])
    assert w.mean() == pytest.approx(1.0)
    for bad in ([0.5, 0.0], [0.5, 1.5], [0.5, np.nan]):
        with pytest.raises(ValueError, match=r"must lie in \(0, 1\]"):
            e4.ips_weights(np.array(bad))


@pytest.mark.slow
def test_prepare_parts_and_propensity_models(coat_like) -> None:
    block = _block(propensities={"coat": ["provided", "logistic", "naive_bayes"]})
    pairs = _prepare(coat_like, block, seed=0)
    parts = pairs["part"].value_counts()
    n_mar = len(coat_like.mar)
    assert parts["mar_sample"] == round(0.05 * n_mar)
    assert parts["test"] == n_mar - parts["mar_sample"]
    assert parts["train"] == len(coat_like.mnar)
    train = pairs["part"] == "train"
    for model in ("provided", "logistic", "naive_bayes"):
        col = pairs[f"propensity_{model}"]
        assert col[train].between(0, 1, inclusive="right").all(), model
        assert col[~train].isna().all(), model
    # provided = the true propensities; Naive Bayes is one value per rating level
    np.testing.assert_allclose(
        pairs.loc[train, "propensity_provided"], coat_like.mnar["propensity"], rtol=1e-6
    )
    nb = pairs[train].groupby("rating")["propensity_naive_bayes"].nunique()
    assert (nb == 1).all()
    # the MAR sample differs by seed; the same seed gives the same pairs
    pd.testing.assert_frame_equal(pairs, _prepare(coat_like, block, seed=0))
    other = _prepare(coat_like, block, seed=1)
    assert not other[other["part"] == "test"]["user"].equals(pairs[pairs["part"] == "test"]["user"])
    # without naive_bayes every MAR rating is in the test
    plain = _prepare(coat_like, _block(), seed=0)
    assert (plain["part"] == "test").sum() == n_mar


def test_mf_ips_beats_mf_naive_on_the_mar_test_over_seeds(coat_like) -> None:
    """Strong selection bias (alpha = 0.1), known propensities: lower MAR test MSE, every seed."""
    block = _block(propensities={"coat": ["provided"]}, metrics=["mse"])
    errors = []
    for seed in range(3):
        pairs = _prepare(coat_like, block, seed)
        for model in ("none", "provided"):
            errors.append(_fit(coat_like, pairs, block, seed, model)[0])
    table = pd.concat(errors, ignore_index=True)
    wide = table.pivot(index="seed", columns="model", values="value")
    assert (wide["MF-IPS"] < wide["MF-Naive"]).all(), wide
    summary = le.summarise(table)
    ips = summary[summary["model"] == "MF-IPS"].iloc[0]
    assert ips["n_seeds"] == 3 and ips["p_value"] < 0.05


def test_paired_t_test_on_hand_values() -> None:
    # differences naive - ips = 0.2, 0.1, 0.2: mean 1/6, sd 1/sqrt(300), t = 5 with 2 df;
    # two-sided p = 1 - t/sqrt(2 + t^2) = 1 - 5/sqrt(27) for the t distribution with 2 df
    rows = []
    for seed, (naive, ips) in enumerate([(1.0, 0.8), (1.2, 1.1), (1.1, 0.9)]):
        for propensity, value in (("none", naive), ("known", ips)):
            rows.append(
                {
                    "seed": seed,
                    "alpha": np.nan,
                    "model": le.model_name(propensity),
                    "propensity": propensity,
                    "metric": "mse",
                    "value": value,
                }
            )
    summary = le.summarise(pd.DataFrame(rows))
    assert list(summary.columns) == list(le.SUMMARY_COLUMNS)
    assert list(summary["model"]) == ["MF-Naive", "MF-IPS"]
    ips = summary.iloc[1]
    assert ips["mean"] == pytest.approx(2.8 / 3)
    assert ips["sd"] == pytest.approx(np.std([0.8, 1.1, 0.9], ddof=1))
    assert ips["p_value"] == pytest.approx(1 - 5 / np.sqrt(27))
    assert np.isnan(summary.iloc[0]["p_value"])


def _seed_table(changes: dict | None = None) -> pd.DataFrame:
    """Hand-made per-seed errors: MF-Naive, MF-IPS (known), MF-IPS (provided), 3 seeds."""
    rows = [
        {
            "seed": seed,
            "alpha": np.nan,
            "mar_size": np.nan,
            "model": le.model_name(prop),
            "propensity": prop,
            "metric": "mse",
            "value": 1.0 + 0.1 * seed,
            "factors": 4,
            "l2": 3.0,
            "n_test": 100,
            "converged": True,
            "factor_rms": 0.1,
        }
        for seed in range(3)
        for prop in ("none", "known", "provided")
    ]
    table = pd.DataFrame(rows)
    for (prop, seed, column), value in (changes or {}).items():
        table.loc[(table["propensity"] == prop) & (table["seed"] == seed), column] = value
    return table


def test_summary_flags_grid_edge_unconverged_and_few_pairs() -> None:
    """One seed choosing an end of the grid flags ``grid_edge``; one reported fit that hit
    ``max_iter`` flags ``not_converged``; the other rows get ""; a one-value grid axis is no
    edge; fewer test pairs than ``min_users`` flags ``few_pairs``."""
    from debiaseval.evaluation.flags import FLAGS

    grid = {"factors": [4], "l2": [1.0, 3.0, 10.0]}
    table = _seed_table({("known", 1, "l2"): 10.0, ("none", 2, "converged"): False})
    summary = le.summarise(table, grid=grid)
    assert list(summary.columns) == list(le.SUMMARY_COLUMNS)
    flags = summary.set_index("propensity")["flags"]
    assert flags.to_dict() == {"none": "not_converged", "known": "grid_edge", "provided": ""}
    low = _seed_table({("provided", 0, "l2"): 1.0})
    assert list(le.summarise(low, grid=grid)["flags"]) == ["", "", "grid_edge"]
    assert list(le.summarise(low)["flags"]) == [
        "",
        "",
        "",
    ]  # no grid given: not checked
    few = le.summarise(_seed_table({("known", 2, "n_test"): 20}), grid=grid, min_users=30)
    assert list(few["flags"]) == ["", "few_pairs", ""]
    both = le.summarise(table.assign(n_test=10), grid=grid, min_users=30)
    assert both["flags"].iloc[1] == "grid_edge,few_pairs"
    md = le.summary_markdown(summary, title="t")
    naive_row = next(line for line in md.splitlines() if line.startswith("| MF-Naive"))
    known_row = next(line for line in md.splitlines() if "| known |" in line)
    provided_row = next(line for line in md.splitlines() if "| provided |" in line)
    assert f"{FLAGS['not_converged'][0]} |" in naive_row
    assert f"{FLAGS['grid_edge'][0]} |" in known_row
    assert not any(FLAGS[code][0] in provided_row for code in FLAGS)
    assert "Flags:" in md and "`grid_edge`" in md and "`not_converged`" in md
    assert "`few_pairs`" not in md
    assert "Flags:" not in le.summary_markdown(le.summarise(_seed_table(), grid=grid))


def test_summary_flags_bias_only_instead_of_grid_edge() -> None:
    """A reported model whose factors vanished (``factor_rms`` below BIAS_ONLY_RMS) is flagged
    ``bias_only``, and its λ at the top of the grid is no ``grid_edge``: every larger λ gives
    the same bias-only model."""
    grid = {"factors": [4], "l2": [1.0, 3.0, 10.0]}
    table = _seed_table(
        {("known", 1, "l2"): 10.0, ("known", 1, "factor_rms"): 1e-5, ("provided", 0, "l2"): 10.0}
    )
    flags = le.summarise(table, grid=grid).set_index("propensity")["flags"]
    assert flags.to_dict() == {"none": "", "known": "bias_only", "provided": "grid_edge"}
    md = le.summary_markdown(le.summarise(table, grid=grid), title="t")
    assert "`bias_only`" in md and "`grid_edge`" in md
    # without the column (an errors table of an older run) nothing is flagged bias_only
    old = le.summarise(table.drop(columns="factor_rms"), grid=grid)
    assert list(old["flags"]) == ["", "grid_edge", "grid_edge"]


@pytest.mark.slow
def test_factor_rms_vanishes_under_a_large_penalty(coat_like) -> None:
    """``factor_rms`` is what the factors add to the biases: clearly positive at a small λ,
    below BIAS_ONLY_RMS when λ shrinks V and W to zero (the biases stay unpenalised)."""
    pairs = _prepare(coat_like, _block(), 0)
    train = pairs[pairs["part"] == "train"]
    u, i = train["user"].to_numpy(np.int64), train["item"].to_numpy(np.int64)
    y = train["rating"].to_numpy(np.float64)
    sizes = {"n_users": coat_like.n_users, "n_items": coat_like.n_items}
    rms = {}
    for l2 in (0.1, 1e6):
        model = WeightedMF(factors=4, l2=l2, max_iter=50).fit(
            u, i, y, **sizes, rng=np.random.default_rng(0)
        )
        rms[l2] = e4.factor_rms(model, u, i)
        term = np.einsum("nd,nd->n", model.user_factors_[u], model.item_factors_[i])
        assert rms[l2] == pytest.approx(np.sqrt(np.mean(term**2)))
    assert rms[0.1] > 0.1 and rms[1e6] < le.BIAS_ONLY_RMS


@pytest.mark.slow
def test_fit_records_whether_the_reported_model_converged(coat_like) -> None:
    """``converged`` is False when the refit stopped at ``max_iter`` before meeting ``tol``,
    and the summary flags it; the errors themselves do not depend on recording it."""
    capped = _block(model={"max_iter": 1, "tol": 1e-12})
    pairs = _prepare(coat_like, capped, 0)
    errors = _fit(coat_like, pairs, capped, 0, "none")[0]
    assert list(errors.columns) == list(e4.ERROR_COLUMNS)
    assert (errors["sweeps"] == 1).all() and not errors["converged"].any()
    # (one sweep at l2 = 30 also shrinks some models to their biases: bias_only beside it)
    assert le.summarise(errors)["flags"].str.contains("not_converged").all()
    loose = _block(model={"max_iter": 20, "tol": 1.0})
    errors = _fit(coat_like, pairs, loose, 0, "none")[0]
    assert (errors["sweeps"] == 1).all() and errors["converged"].all()
    assert not le.summarise(errors)["flags"].str.contains("not_converged").any()


def test_pair_test_pairs_the_two_models_per_test_rating() -> None:
    """[ICML16]'s test: within a seed, MF-IPS's and MF-Naive's losses on the same test pair
    are one pair (matched by ``pair``, not by row order); hand-computed t."""
    naive, ips = [1.0, 2.0, 3.0, 4.0, 2.5], [0.5, 1.5, 3.5, 3.0, 2.0]
    rows = []
    for seed, shift in ((0, 0.0), (1, 0.1)):
        for propensity, values in (("none", naive), ("known", ips)):
            for pair, v in enumerate(values):
                rows.append(
                    {
                        "seed": seed,
                        "alpha": np.nan,
                        "propensity": propensity,
                        "metric": "mse",
                        "pair": pair,
                        "value": v + shift,
                    }
                )
    losses = pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # any row order
    tests = le.pair_tests(losses)
    assert list(tests.columns) == list(le.PAIR_TEST_COLUMNS)
    assert list(tests["seed"]) == [0, 1] and (tests["n_pairs"] == 5).all()
    d = np.array(ips) - np.array(naive)  # -0.5, -0.5, 0.5, -1, -0.5
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    np.testing.assert_allclose(tests["t"], [t, t])
    np.testing.assert_allclose(tests["mean_diff"], [d.mean()] * 2)
    from scipy.stats import t as student

    np.testing.assert_allclose(tests["p_value"], 2 * student.sf(abs(t), d.size - 1))
    # a pair present for one model only is an error, not a silent mismatch
    with pytest.raises(pd.errors.MergeError):
        le.pair_tests(pd.concat([losses, losses.iloc[:1]]))


def test_naive_selection_uses_the_ips_estimate(coat_like) -> None:
    """MF-Naive's validation error is the IPS estimate by default ([ICML16] §6.1): with a
    constant propensity c, IPS = (1/(U·I)) Σ δ k/c = Naive mean × n_val k / (c U I)."""
    mnar = coat_like.mnar.assign(propensity=0.05)
    data = e4.LearningData(
        "coat", coat_like.n_users, coat_like.n_items, mnar=mnar, mar=coat_like.mar
    )
    values = {}
    for how in ("ips", "naive"):
        block = _block(propensities={"coat": ["provided"]}, metrics=["mse"], naive_selection=how)
        pairs = _prepare(data, block, 0)
        errors, cv, losses = _fit(data, pairs, block, 0, "none")
        values[how] = cv["value"].to_numpy()
        folds = cv["fold"].to_numpy()
        assert len(losses) == errors["n_test"].iloc[0] == (pairs["part"] == "test").sum()
    n_val = np.where(folds == 0, (len(mnar) + 1) // 2, len(mnar) // 2)  # fold sizes
    scale = n_val * 2 / (0.05 * data.n_users * data.n_items)
    np.testing.assert_allclose(values["ips"], values["naive"] * scale, rtol=1e-12)


def test_run_alpha_sweep_summary_and_workflow_steps() -> None:
    config = {
        "synthetic": SMALL,
        "e4": {
            **FAST,
            "alpha_sweep": {"alphas": [0.25, 1.0], "grid": {"factors": [4], "l2": [3.0, 30.0]}},
        },
    }
    out = api.run_e4("synthetic", config, seeds=2)
    errors, summary = out["errors"], out["summary"]
    assert list(errors.columns) == list(e4.ERROR_COLUMNS)
    assert set(errors["alpha"]) == {0.25, 1.0} and set(errors["metric"]) == {"mse"}
    assert set(errors["n_test"]) == {80 * 100}  # the full matrix
    assert len(summary) == 2 * 2  # models x alphas
    at = summary[summary["alpha"] == 0.25].set_index("model")["mean"]
    assert at["MF-IPS"] < at["MF-Naive"]
    # alpha = 1 is MCAR: uniform propensities, so MF-IPS is MF-Naive exactly
    mcar = errors[errors["alpha"] == 1.0].pivot(index="seed", columns="model", values="value")
    np.testing.assert_array_equal(mcar["MF-IPS"], mcar["MF-Naive"])
    assert out["summary_md"].startswith("# E4 on synthetic")
    assert "alpha = 0.25" in out["summary_md"]
    assert out["cv"]["selected"].any()
    # the same as the workflow's steps: prepare per seed on the seed's own draw of synthetic
    # (the rules' params: draw_block), fit per model, aggregate
    cfg = validate_config(config, "e4")
    parts = []
    for seed in (0, 1):
        data = e4.learning_data("synthetic", synthetic=seed_block(cfg, "synthetic", seed))
        pairs = _prepare(data, cfg["e4"], seed)
        parts += [_fit(data, pairs, cfg["e4"], seed, m)[0] for m in ("none", "known")]
    aggregated = le.aggregate(parts, (), e4.E4Aggregate.of(cfg, "synthetic"))["summary"]
    pd.testing.assert_frame_equal(aggregated, summary)
    # factors [4] is no edge (one value); l2 [3, 30] has two, so every choice is an edge,
    # unless the chosen model is bias-only (then no larger l2 could differ)
    flagged = summary["flags"].str.split(",")
    assert flagged.map(lambda f: "grid_edge" in f or "bias_only" in f).all()


@pytest.mark.parametrize("per_seed", [True, False])
def test_each_seed_learns_from_its_own_draw_unless_per_seed_is_false(per_seed) -> None:
    """On synthetic each seed of E4 draws O from its own truth: a pair observed in both seeds
    has another rating or true propensity; with ``per_seed: false`` the same truth."""
    sweep = {"alphas": [0.25], "grid": {"factors": [4], "l2": [3.0]}}
    config = {"synthetic": {**SMALL, "per_seed": per_seed}, "e4": {**FAST, "alpha_sweep": sweep}}
    pairs = api.run_e4("synthetic", config, seeds=2)["propensities"]
    seeds = [pairs[pairs["seed"] == s].drop(columns="seed") for s in (0, 1)]
    both = seeds[0].merge(seeds[1], on=["alpha", "part", "user", "item"])
    assert len(both) > 50
    same = (both["rating_x"] == both["rating_y"]) & (
        both["propensity_known_x"] == both["propensity_known_y"]
    )
    assert bool(same.all()) is not per_seed and bool(same.mean() < 0.5) is per_seed


def test_mf_ips_nb_on_the_sweep_per_mcar_sample_size() -> None:
    """[ICML16] Figure 3 (right): Naive-Bayes propensities from MCAR samples of each size,
    at alpha_sweep.alpha only, one MF-IPS-NB fit per size sharing MF-Naive's stream."""
    config = {
        "synthetic": SMALL,
        "e4": {
            **FAST,
            "propensities": {"synthetic": ["known", "naive_bayes"]},
            "alpha_sweep": {
                "alphas": [0.25, 1.0],
                "mar_sizes": [50, 4000],
                "grid": {"factors": [4], "l2": [3.0, 30.0]},
            },
        },
    }
    cfg = validate_config(config, "e4")
    data = e4.learning_data("synthetic", synthetic=cfg["synthetic"])
    pairs = _prepare(data, cfg["e4"], 0)
    train = pairs["part"] == "train"
    for size in (50, 4000):
        col = pairs[f"propensity_naive_bayes_mar{size}"]
        assert col[train & (pairs["alpha"] == 0.25)].notna().all()
        assert col[pairs["alpha"] == 1.0].isna().all()
        # one propensity per rating level: P(Y=r|O=1) P(O=1) / P(Y=r)
        at = pairs[train & (pairs["alpha"] == 0.25)]
        assert (at.groupby("rating")[col.name].nunique() == 1).all()
    # the larger sample's P(Y=r) is closer to the full matrix's, so its propensities too
    from debiaseval.debiasing import propensities as prop

    full = prop.naive_bayes(
        at["rating"],
        data.truth.ratings.ravel(),
        n_users=data.n_users,
        n_items=data.n_items,
        levels=np.unique(data.truth.ratings),
    )
    exact = prop.lookup(full, at[["rating"]])
    err = {
        s: np.abs(np.log(at[f"propensity_naive_bayes_mar{s}"] / exact)).mean() for s in (50, 4000)
    }
    assert err[4000] < 0.5 * err[50]
    errors, cv, losses = _fit(data, pairs, cfg["e4"], 0, "naive_bayes")
    assert list(errors["mar_size"]) == [50.0, 4000.0] and set(errors["alpha"]) == {0.25}
    assert losses.empty and set(cv["mar_size"]) == {50.0, 4000.0}
    naive = _fit(data, pairs, cfg["e4"], 0, "none")[0]
    assert naive["mar_size"].isna().all()
    summary = le.summarise(pd.concat([naive, errors]))
    assert summary["mar_size"].notna().sum() == 2
    md = le.summary_markdown(summary, alpha=0.25)
    assert "naive_bayes (MCAR sample 4,000)" in md
    from debiaseval.figures import e4 as figures

    assert len(figures.draw("test_error", {"summary": summary}, "synthetic").axes) == 3
    with pytest.raises(ConfigError, match=r"alpha_sweep\.mar_sizes"):
        validate_config({"e4": {"propensities": {"synthetic": ["known", "naive_bayes"]}}})


def test_figure_draws_bars_and_the_alpha_curve() -> None:
    from debiaseval.figures import e4 as figures

    summary = le.summarise(
        pd.DataFrame(
            {
                "seed": [0, 0, 1, 1] * 2,
                "alpha": [0.25] * 4 + [1.0] * 4,
                "model": ["MF-Naive", "MF-IPS"] * 4,
                "propensity": ["none", "known"] * 4,
                "metric": "mse",
                "value": [2.0, 1.0, 2.2, 1.1, 0.7, 0.7, 0.72, 0.72],
            }
        )
    )
    fig = figures.draw("test_error", {"summary": summary}, "synthetic")
    assert len(fig.axes) == 2  # bars at the table's alpha, MSE vs alpha
    flat = summary[summary["alpha"] == 0.25].assign(alpha=np.nan)
    assert len(figures.draw("test_error", {"summary": flat}, "coat").axes) == 1
    with pytest.raises(ValueError, match="no figure"):
        figures.draw("nope", {"summary": summary}, "coat")


def test_dataset_seeds_give_the_sweep_its_own_trials() -> None:
    block = validate_config({"seeds": 4, "e4": {"alpha_sweep": {"seeds": 30}}}, "e4")["e4"]
    assert e4.dataset_seeds(block, "ml-100k-semi") == e4.dataset_seeds(block, "synthetic") == 30
    assert e4.dataset_seeds(block, "coat") == e4.dataset_seeds(block, "yahoo-r3") == 4
    block = validate_config({"seeds": 4}, "e4")["e4"]
    assert e4.dataset_seeds(block, "ml-100k-semi") == 4


def test_config_checks() -> None:
    with pytest.raises(ConfigError, match=r"'e4.datasets.0': E4 cannot run on 'ml-1m'"):
        validate_config({"e4": {"datasets": ["ml-1m"]}})
    with pytest.raises(ConfigError, match=r"'e4.propensities.coat.0'"):
        validate_config({"e4": {"propensities": {"coat": ["known"]}}})
    with pytest.raises(ConfigError, match=r"'e4.alpha_sweep.alpha': 0.5 is not in"):
        validate_config({"e4": {"alpha_sweep": {"alpha": 0.5, "alphas": [0.25]}}})
    with pytest.raises(ConfigError, match=r"'e4.metrics.0'"):
        validate_config({"e4": {"metrics": ["rmse"]}})
    # a config that does not run E4 is not checked for it
    validate_config({"experiments": ["e3"], "e4": {"datasets": ["ml-1m"]}})
    block = validate_config({"datasets": ["coat", "ml-1m", "synthetic"]})["e4"]
    assert block["datasets"] == ["coat", "synthetic"]


def test_learning_data_bad_input(coat_like) -> None:
    with pytest.raises(ValueError, match="E4 cannot run on 'ml-1m'"):
        e4.learning_data("ml-1m")
    with pytest.raises(ValueError, match="needs the dataset's interactions"):
        e4.learning_data("coat")
    block = _block(propensities={"coat": ["provided"]})
    pairs = _prepare(coat_like, block, 0)
    with pytest.raises(ValueError, match="no 'logistic' propensities"):
        _fit(coat_like, pairs, block, 0, "logistic")
    mnar = coat_like.mnar.drop(columns="propensity")
    n_users, n_items = coat_like.n_users, coat_like.n_items
    bare = e4.LearningData("coat", n_users, n_items, mnar=mnar, mar=coat_like.mar)
    with pytest.raises(ValueError, match="no provided propensities"):
        _prepare(bare, block, 0)
    with pytest.raises(ValueError, match="no user and item features"):
        _prepare(bare, _block(propensities={"coat": ["logistic"]}), 0)


@pytest.mark.parametrize("n_seeds", [2, 3])
def test_the_summary_prints_and_the_figure_draws_an_interval_that_stays_above_zero(n_seeds):
    from debiaseval.evaluation.uncertainty import t_interval
    from debiaseval.figures import e4 as figures

    # MF-IPS's MSE near 0 with a wide spread: the symmetric t interval reaches below 0
    ips_values = [0.02, 0.3, 0.05][:n_seeds]
    rows = []
    for seed, (naive, ips) in enumerate(zip([1.0, 1.2, 1.1], ips_values, strict=False)):
        for propensity, value in (("none", naive), ("known", ips)):
            rows.append(
                {
                    "seed": seed,
                    "alpha": np.nan,
                    "model": le.model_name(propensity),
                    "propensity": propensity,
                    "metric": "mse",
                    "value": value,
                }
            )
    summary = le.summarise(pd.DataFrame(rows))
    ips = summary.iloc[1]
    assert t_interval(np.array(ips_values))[1] < 0  # the interval a ± sd table implied
    assert 0 < ips["ci_low"] < ips["mean"] < ips["ci_high"]
    md = le.summary_markdown(summary, title="t")
    cell = f"{ips['mean']:.3f} [{ips['ci_low']:.3f}, {ips['ci_high']:.3f}]"
    assert (cell in md) == (n_seeds >= 3) and "±" not in md
    assert ("In square brackets, the 0.95 t interval" in md) == (n_seeds >= 3)
    assert ("without an interval" in md) == (n_seeds < 3)
    fig = figures.draw("test_error", {"summary": summary}, "synthetic")
    bars = [c for c in fig.axes[0].containers if hasattr(c, "patches")]
    drawn = [s[:, 1] for b in bars for s in b.errorbar.lines[2][0].get_segments() if len(s)]
    caps = [
        np.isfinite(np.asarray(cap.get_ydata(), dtype=float)).sum()
        for b in bars
        for cap in b.errorbar.lines[1]
    ]
    if n_seeds >= 3:
        assert np.allclose(drawn, [(r["ci_low"], r["ci_high"]) for _, r in summary.iterrows()])
    else:  # no interval printed, no whisker drawn: neither a line nor its caps
        assert drawn == [] and sum(caps) == 0
    # the test across seeds follows the interval: a p from 3 seeds on, none (nor a label) below
    assert np.isfinite(ips["p_value"]) == (n_seeds >= 3)
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_text().startswith("p=")]
    assert len(labels) == (n_seeds >= 3)
    row = next(line for line in md.splitlines() if line.startswith("| MF-IPS"))
    p_cell = f"{ips['p_value']:.3g}" if n_seeds >= 3 else ""
    assert row.endswith(f" | {p_cell} |") and "from 3 seeds on as the interval" in md
