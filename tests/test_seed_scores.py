"""The arena's inputs of one seed and the truth's separation test (docs/estimators.md): common-user
means with joint user resamples shared by the seeds, gt's split-half reliability and its
Spearman–Brown value, the truth's paired tests, and whether the truth separates a pair."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.estimation.resampling import ResamplingPlan
from debiaseval.estimation.seed_scores import (
    SPLIT_HALVES,
    common_means,
    kendall_tau_b,
    spearman_brown_tau,
    split_half_reliability,
    truth_tests,
)
from debiaseval.estimation.separation import truth_separation
from debiaseval.evaluation.metrics import BlockValues

BLOCK = (("recall", 10),)


def test_common_means_average_a_row_and_its_truth_over_the_same_users():
    """Users 0-5: the row has 0-4, the truth 1-5, the held-out positives 0-3: the common users
    are 1-3, and the row and the truth are both averaged over them; the truth's own row is
    over all its users."""
    row = BlockValues(np.arange(5, dtype=np.int32), np.array([[0.0, 0.1, 0.2, 0.3, 0.4]]), BLOCK)
    truth = BlockValues(
        np.arange(1, 6, dtype=np.int32), np.array([[1.0, 2.0, 3.0, 4.0, 5.0]]), BLOCK
    )
    arena, reps = common_means(
        {"A": {"X": row, "gt": truth}},
        {"A": truth},
        seed=3,
        heldout_users=np.arange(4),
        n_users=6,
        truth_name="gt",
        resamples=200,
    )
    assert arena["testset"].tolist() == ["X", "gt"]
    x, own = arena.iloc[0], arena.iloc[1]
    assert x["value"] == pytest.approx(0.2) and x["truth"] == pytest.approx(2.0)
    assert x["n_users"] == 3 and x["seed"] == 3
    assert own["value"] == own["truth"] == pytest.approx(3.0) and own["n_users"] == 5
    # the row is the truth / 10 over the common users: jointly resampled, the difference of
    # every resample is −0.9 × the truth's mean, and its interval lies within [−2.7, −0.9]
    assert len(reps) == 2 * 200 and set(reps["replicate"]) == set(range(200))
    xs = reps[reps["testset"] == "X"]
    assert np.allclose(xs["value"], xs["truth"] / 10, rtol=1e-5, equal_nan=True)
    assert -2.7 - 1e-6 <= x["diff_low"] <= x["diff_high"] <= -0.9 + 1e-6
    assert x["low"] <= 0.2 <= x["high"]


def test_user_resamples_are_the_same_in_every_seed():
    """Resample r counts each user alike in every seed (one stream for all seeds): two seeds
    with the same values give the same resampled means, whatever the seed's number."""
    rng = np.random.default_rng(0)
    values = BlockValues(np.arange(50, dtype=np.int32), rng.random((1, 50)), BLOCK)
    truth = BlockValues(np.arange(50, dtype=np.int32), rng.random((1, 50)), BLOCK)
    runs = [
        common_means(
            {"A": {"X": values}},
            {"A": truth},
            seed=seed,
            heldout_users=np.arange(50),
            n_users=50,
            truth_name="gt",
            resamples=100,
        )[1]
        for seed in (0, 7)
    ]
    assert np.array_equal(runs[0]["value"], runs[1]["value"])
    assert not np.allclose(runs[0]["value"], runs[0]["value"].iloc[0])


def test_kendall_tau_b_matches_scipy():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (20, 6)).astype(float)
    y = rng.integers(0, 4, (20, 6)).astype(float)
    ours = kendall_tau_b(x, y)
    for i in range(20):
        expected = kendalltau(x[i], y[i], variant="b").statistic
        assert (np.isnan(ours[i]) and np.isnan(expected)) or ours[i] == pytest.approx(expected)


def test_spearman_brown_by_hand():
    """τ 0.5 -> r = sin(π/4) = 0.7071 -> 2r/(1+r) = 0.8284 -> τ = (2/π) asin(0.8284) = 0.6215."""
    assert float(spearman_brown_tau(0.5)) == pytest.approx(0.62153, abs=1e-4)
    assert float(spearman_brown_tau(1.0)) == pytest.approx(1.0)
    assert float(spearman_brown_tau(0.0)) == pytest.approx(0.0)
    assert np.isnan(spearman_brown_tau(-1.0)) and np.isnan(spearman_brown_tau(np.nan))


def test_split_half_reliability():
    """Well separated recommenders rank alike on every half (τ = 1); recommenders with the same
    distribution rank at random (τ near 0). Random is left out; 1,000 halvings by default."""
    rng = np.random.default_rng(0)
    users = np.arange(400, dtype=np.int32)
    apart = {f"R{j}": BlockValues(users, (j + rng.random(400))[None, :], BLOCK) for j in range(4)}
    apart["Random"] = BlockValues(users, rng.random(400)[None, :] + 10, BLOCK)
    same = {f"R{j}": BlockValues(users, rng.random(400)[None, :], BLOCK) for j in range(4)}
    high = split_half_reliability(apart, ["Random"], seed=0, rng=np.random.default_rng(1))
    low = split_half_reliability(same, [], seed=0, rng=np.random.default_rng(1))
    assert high.loc[0, "tau"] == pytest.approx(1.0) and high.loc[0, "n_recommenders"] == 4
    assert high.loc[0, "tau_full"] == pytest.approx(1.0)
    assert abs(low.loc[0, "tau"]) < 0.1 and low.loc[0, "n_splits"] == SPLIT_HALVES == 1000
    assert low.loc[0, "tau_full"] == pytest.approx(float(spearman_brown_tau(low.loc[0, "tau"])))


def test_truth_tests_are_paired_t_tests():
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(2)
    users = np.arange(30, dtype=np.int32)
    a, b = rng.random(30), rng.random(30)
    out = truth_tests(
        {"A": BlockValues(users, a[None, :], BLOCK), "B": BlockValues(users, b[None, :], BLOCK)},
        seed=4,
    )
    row = out.iloc[0]
    assert (row["recommender_a"], row["recommender_b"], row["seed"]) == ("A", "B", 4)
    assert row["p_value"] == pytest.approx(ttest_rel(a, b).pvalue)
    assert row["mean_diff"] == pytest.approx((a - b).mean())


def _tests(rows):
    return pd.DataFrame(
        [(s, "recall", 10, a, b, 100, d, np.nan, p) for s, a, b, d, p in rows],
        columns=[
            "seed",
            "metric",
            "k",
            "recommender_a",
            "recommender_b",
            "n_users",
            "mean_diff",
            "t",
            "p_value",
        ],
    ).astype({"k": np.int16})


def test_stouffer_pools_independent_draws_and_holm_corrects():
    """A ahead of B in 3 draws (p .04 each): Stouffer's Z = 3 × 2.054 / √3 = 3.56, p = 3.7e-4,
    separated; C vs D disagree in sign: Z = 0, not separated; Random is left out."""
    rows = [(s, "A", "B", 0.05, 0.04) for s in range(3)]
    rows += [(0, "C", "D", 0.05, 0.01), (1, "C", "D", -0.05, 0.01), (2, "C", "D", 0.0, 1.0)]
    rows += [(s, "A", "Random", 0.2, 1e-30) for s in range(3)]
    out = truth_separation(_tests(rows), truth="TRUE", excluded=["Random"])
    assert len(out) == 2 and set(out["method"]) == {"stouffer"}
    ab = out[out["leader"] == "A"].iloc[0]
    assert ab["p_value"] == pytest.approx(3.7e-4, rel=0.05) and ab["separated"]
    assert ab["p_holm"] == pytest.approx(2 * ab["p_value"])
    cd = out[out["other"].isin(["C", "D"])].iloc[0]
    assert cd["p_value"] == pytest.approx(1.0) and not cd["separated"]
    assert cd["n_seeds_significant"] == 2  # each seed alone finds a difference, either way


def test_fixed_data_separation_by_the_two_level_bootstrap():
    """On one fixed dataset the seeds are not independent tests: two seeds that each find A
    ahead (p 1e-10) are not pooled; the pair is separated only if the seed-averaged difference
    holds its sign under the users' resamples."""
    tests = _tests([(s, "A", "B", 0.01, 1e-10) for s in range(2)])
    reps = 100
    plan = ResamplingPlan.of(
        2, draws="fixed", resamples=1000, user_resamples=reps, rng=np.random.default_rng(0)
    )
    rng = np.random.default_rng(1)
    for spread, separated in ((0.001, True), (0.05, False)):
        shared = rng.normal(0, spread, reps)  # the users' resample, the same in both seeds
        observed, resampled = [], []
        for s in range(2):
            observed += [(s, "A", "recall", 10, 0.31), (s, "B", "recall", 10, 0.30)]
            resampled += [(s, r, "A", "recall", 10, 0.31 + shared[r]) for r in range(reps)]
            resampled += [(s, r, "B", "recall", 10, 0.30) for r in range(reps)]
        columns = ["seed", "recommender", "metric", "k", "value"]
        means = pd.DataFrame(observed, columns=columns).astype({"k": np.int16})
        replicates = pd.DataFrame(resampled, columns=["seed", "replicate", *columns[1:]])
        out = truth_separation(
            tests,
            truth="gt",
            plan=plan,
            truth_means=means,
            truth_replicates=replicates.astype({"k": np.int16}),
        )
        assert out.loc[0, "method"] == "bootstrap"
        assert bool(out.loc[0, "separated"]) is separated
        assert out.loc[0, "leader"] == "A" and out.loc[0, "mean_diff"] == pytest.approx(0.01)


def test_resampling_plan():
    rng = np.random.default_rng(0)
    fixed = ResamplingPlan.of(3, draws="fixed", resamples=10, user_resamples=4, rng=rng)
    assert fixed.counts.shape == (11, 3) and (fixed.counts[0] == 1).all()
    assert (fixed.counts[1:].sum(axis=1) == 3).all()
    assert fixed.replicate.tolist() == [0, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
    assert not fixed.gives_intervals
    free = ResamplingPlan.of(5, draws="independent", resamples=10, user_resamples=4, rng=rng)
    assert (free.replicate == 0).all() and free.gives_intervals
    with pytest.raises(ValueError, match="draws must be one of"):
        ResamplingPlan.of(5, draws="paired", resamples=1, user_resamples=0, rng=rng)
