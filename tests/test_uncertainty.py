"""Uncertainty: bootstrap coverage, t intervals, paired t-tests over users, Holm's correction."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.evaluation.uncertainty import (
    agreement_over_seeds,
    bootstrap_interval,
    bootstrap_means,
    compare_recommenders,
    holm,
    interval_cell,
    metric_range,
    paired_t_test,
    paired_t_tests,
    poisson_weights,
    range_t_interval,
    seed_intervals,
    shown_interval,
    t_interval,
    within_range,
)


def test_bootstrap_interval_covers_the_true_mean_at_its_nominal_rate():
    # 400 draws of 200 Bernoulli(0.3) "hits" with many zeros, like per-user recall.
    rng = np.random.default_rng(7)
    draws = rng.binomial(1, 0.3, size=(200, 400)).astype(float)
    low, high = bootstrap_interval(draws, resamples=2000, rng=np.random.default_rng(1))
    coverage = np.mean((low <= 0.3) & (0.3 <= high))
    assert abs(coverage - 0.95) <= 0.03, coverage


def test_bootstrap_covers_each_column_over_its_own_rows():
    # Columns of different samples side by side (NaN = not in the sample), as E1 lays out its
    # test sets: each column's interval still covers its true mean at the nominal rate.
    rng = np.random.default_rng(11)
    draws = rng.binomial(1, 0.3, size=(400, 400)).astype(float)
    present = rng.random((400, 400)) < np.linspace(0.2, 0.9, 400)  # 80 to 360 rows
    draws[~present] = np.nan
    low, high = bootstrap_interval(draws, resamples=2000, rng=np.random.default_rng(2))
    coverage = np.mean((low <= 0.3) & (0.3 <= high))
    assert abs(coverage - 0.95) <= 0.03, coverage


def test_poisson_weights_follow_poisson_one_and_do_not_depend_on_the_block():
    from scipy.stats import poisson

    rng = np.random.default_rng(4)
    weights = poisson_weights(rng, 400, 1001)
    assert weights.dtype == np.float32 and weights.shape == (400, 1001)
    freq = np.bincount(weights.astype(int).ravel(), minlength=6)[:6] / weights.size
    # 400,400 draws: the frequency of each count within 4 standard errors of its probability
    pmf = poisson.pmf(np.arange(6), 1.0)
    assert np.all(np.abs(freq - pmf) <= 4 * np.sqrt(pmf * (1 - pmf) / weights.size))
    again = np.random.default_rng(4)
    blocks = np.vstack([poisson_weights(again, 150, 1001), poisson_weights(again, 250, 1001)])
    np.testing.assert_array_equal(weights, blocks)


def test_poisson_counts_are_the_tables_counts_for_every_16_bit_value():
    """poisson_counts (comparisons with the table's steps) equals the gather from
    _poisson_table for all 2^16 values, in any shape; poisson_weights is that gather of the
    same slices (the counts, hence the bootstrap's bytes, as before)."""
    from debiaseval.evaluation.uncertainty import _poisson_table, poisson_counts

    table = _poisson_table()
    every = np.arange(1 << 16, dtype=np.uint16)
    counts = poisson_counts(every)
    assert counts.dtype == np.uint8
    np.testing.assert_array_equal(counts, table[every])
    assert counts.max() == 8 and np.all(np.diff(counts.astype(int)) >= 0)
    shuffled = np.random.default_rng(0).permutation(every).reshape(256, 256)
    np.testing.assert_array_equal(poisson_counts(shuffled), table[shuffled])
    rng, again = np.random.default_rng(9), np.random.default_rng(9)
    raw = again.bit_generator.random_raw(7 * 3)  # n = 10: 3 raw draws (12 slices) a row
    slices = np.ascontiguousarray(raw, dtype="<u8").view("<u2").reshape(7, 12)[:, :10]
    np.testing.assert_array_equal(poisson_weights(rng, 7, 10), table[slices])


def test_bootstrap_means_are_weighted_means_of_the_rows():
    # Values of exactly known mean 0.5 on either side: every resample lies within the values'
    # range, and a column that a resample misses entirely (a single row, count 0) is NaN.
    values = np.column_stack([np.tile([0.0, 1.0], 20), np.r_[0.25, np.full(39, np.nan)]])
    means = bootstrap_means(values, resamples=500, rng=np.random.default_rng(3))
    assert np.nanmin(means[:, 0]) >= 0.0 and np.nanmax(means[:, 0]) <= 1.0
    assert abs(np.nanmean(means[:, 0]) - 0.5) < 0.01
    missed = np.isnan(means[:, 1])
    assert 0.3 < missed.mean() < 0.45  # P(count 0) = e^-1
    np.testing.assert_allclose(means[~missed, 1], 0.25, rtol=1e-6)


def test_bootstrap_means_do_not_depend_on_the_chunk_size():
    values = np.random.default_rng(0).random((37, 3))
    values[:5, 2] = np.nan
    whole = bootstrap_means(values, resamples=50, rng=np.random.default_rng(5))
    chunked = bootstrap_means(values, resamples=50, rng=np.random.default_rng(5), chunk_cells=80)
    np.testing.assert_array_equal(whole, chunked)
    # every resample is a weighted mean of the column's values (float32 products)
    assert whole.shape == (50, 3)
    assert (whole >= np.nanmin(values, 0) - 1e-6).all()
    assert (whole <= np.nanmax(values, 0) + 1e-6).all()


def test_bootstrap_of_zero_resamples_is_nan():
    low, high = bootstrap_interval(np.ones((5, 2)), resamples=0, rng=np.random.default_rng(0))
    assert np.isnan(low).all() and np.isnan(high).all()


def test_t_interval_matches_the_hand_computed_one():
    # mean 2, sd 1, n 3: t_{0.975, 2} = 4.302653 -> half width 4.302653 / sqrt(3)
    mean, low, high = t_interval(np.array([[1.0, 2.0, 3.0], [5.0, np.nan, np.nan]]))
    assert mean[0] == 2.0 and high[0] - 2.0 == pytest.approx(4.302653 / np.sqrt(3), rel=1e-6)
    assert mean[1] == 5.0 and np.isnan(low[1]) and np.isnan(high[1])


def test_holm_against_a_hand_computed_case():
    # sorted 0.01, 0.02, 0.03, 0.04 (m = 4): 0.04, 0.06, 0.06 (monotone), 0.06 (max with 0.04)
    p = np.array([0.03, 0.01, 0.04, 0.02, np.nan])
    np.testing.assert_allclose(holm(p)[:4], [0.06, 0.04, 0.06, 0.06])
    assert np.isnan(holm(p)[4])
    np.testing.assert_allclose(holm(np.array([0.5, 0.9])), [1.0, 1.0])


def test_paired_t_test_agrees_with_scipy_and_pairs_users_not_rows():
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(3)
    a = rng.random(50)
    b = a + rng.normal(0.05, 0.1, 50)
    b[:5] = np.nan  # users only a has
    out = paired_t_test(np.column_stack([a, b]))
    ref = ttest_rel(a[5:], b[5:])
    assert out["n"][0] == 45
    assert out["p_value"][0] == pytest.approx(ref.pvalue, rel=1e-9)
    assert out["t"][0] == pytest.approx(ref.statistic, rel=1e-9)


def _scipy_paired(x: np.ndarray, y: np.ndarray) -> tuple[int, float, float]:
    """The reference: scipy's ttest_rel over the rows both have, with paired_t_test's
    documented cases (fewer than two rows: NaN; constant differences: t ±inf or 0, p 0 or 1)."""
    from scipy.stats import ttest_rel

    both = ~np.isnan(x) & ~np.isnan(y)
    n = int(both.sum())
    if n < 2:
        return n, np.nan, np.nan
    d = x[both] - y[both]
    mean = d.mean()
    if np.std(d, ddof=1) <= 1e-12 * max(abs(mean), 1.0):  # equal up to rounding
        return n, (0.0 if mean == 0 else np.sign(mean) * np.inf), (1.0 if mean == 0 else 0.0)
    ref = ttest_rel(x[both], y[both])
    return n, ref.statistic, ref.pvalue


def test_paired_t_tests_of_many_families_agree_with_scipy_pair_by_pair():
    # 7 families x 60 users x 4 recommenders with the per-user values' edge cases: many ties
    # (values on a grid of tenths), missing users, a family where two recommenders agree on
    # every user (zero variance, p 1), one where they differ by a constant (p 0), one with a
    # single common user and one with none (NaN).
    rng = np.random.default_rng(11)
    values = np.round(rng.random((7, 60, 4)), 1)
    values[rng.random(values.shape) < 0.1] = np.nan
    values[1, :, 1] = values[1, :, 0]
    values[2, :, 2] = values[2, :, 0] + 0.25
    values[3, 1:, 3] = np.nan
    values[4, :, 3] = np.nan
    values[5] = 0.0  # every value tied
    out = paired_t_tests(values)
    assert out["p_value"].shape == (7, 6)
    for f in range(7):
        single = paired_t_test(values[f])
        for j, (a, b) in enumerate(zip(out["a"], out["b"], strict=True)):
            n, t, p = _scipy_paired(values[f, :, a], values[f, :, b])
            assert out["n"][f, j] == single["n"][j] == n
            np.testing.assert_allclose(out["t"][f, j], t, rtol=1e-12, atol=0)
            np.testing.assert_allclose(out["p_value"][f, j], p, rtol=1e-12, atol=1e-300)
            assert out["p_value"][f, j] == single["p_value"][j] or np.isnan(p)
    assert out["p_value"][1, 0] == 1.0 and out["p_value"][2, 1] == 0.0
    assert np.isnan(out["p_value"][3, [2, 4, 5]]).all() and np.isnan(out["t"][4, 2])


def test_holm_adjusts_each_row_as_its_own_family():
    rng = np.random.default_rng(5)
    p = rng.random((6, 10)) ** 3
    p[0, [1, 4]] = np.nan
    p[1] = np.nan
    p[2, :4] = p[2, 4]  # ties
    rows = holm(p)
    for row, expected in zip(rows, p, strict=True):
        np.testing.assert_array_equal(row, holm(expected))
    np.testing.assert_allclose(holm(p[3]), _holm_by_definition(p[3]), rtol=1e-15)
    assert np.isnan(rows[1]).all() and holm(np.zeros((2, 0))).shape == (2, 0)


def _holm_by_definition(p: np.ndarray) -> np.ndarray:
    order = np.argsort(p)
    m = p.size
    adjusted = np.empty(m)
    for i in range(m):
        adjusted[order[i]] = max(min(1.0, (m - j) * p[order[j]]) for j in range(i + 1))
    return adjusted


def test_compare_recommenders_of_families_stacks_each_familys_table():
    values = np.round(np.random.default_rng(2).random((3, 25, 3)), 1)
    values[1, :5, 2] = np.nan
    names = ["x", "y", "z"]
    stacked = compare_recommenders(values, names)
    each = pd.concat([compare_recommenders(v, names) for v in values], ignore_index=True)
    pd.testing.assert_frame_equal(stacked, each, check_exact=True)


def test_comparison_pairs_values_by_user():
    # b = a + 0.1 for every user: a constant difference, significant when paired by user;
    # the same values shuffled between users are not.
    users = np.arange(30)
    a = np.linspace(0.0, 1.0, 30)
    per_user = pd.DataFrame(
        {
            "user": np.concatenate([users, users[::-1]]),
            "name": ["a"] * 30 + ["b"] * 30,
            "value": np.concatenate([a, (a + 0.1)[::-1]]),
        }
    )
    wide = per_user.pivot(index="user", columns="name", values="value")
    table = compare_recommenders(wide.to_numpy(), list(wide.columns))
    assert table["p_value"].iloc[0] == 0.0 and table["mean_diff"].iloc[0] == pytest.approx(-0.1)
    by_row = compare_recommenders(
        np.column_stack([a, per_user["value"].to_numpy()[30:]]), ["a", "b"]
    )
    assert by_row["p_value"].iloc[0] > 0.05


def test_identical_recommenders_have_p_one_and_holm_spans_every_pair():
    values = np.random.default_rng(0).random((40, 3))
    values[:, 1] = values[:, 0]
    table = compare_recommenders(values, ["x", "y", "z"])
    assert list(zip(table["recommender_a"], table["recommender_b"], strict=True)) == [
        ("x", "y"),
        ("x", "z"),
        ("y", "z"),
    ]
    assert table["p_value"].iloc[0] == 1.0
    np.testing.assert_allclose(table["p_holm"], holm(table["p_value"].to_numpy()))


def test_seed_intervals_and_agreement_over_seeds():
    per_seed = pd.DataFrame(
        {
            "recommender": "r",
            "testset": "gt",
            "seed": [0, 1, 2],
            "value": [1.0, 2.0, 3.0],
            "boot_low": [0.5, 1.5, 2.5],
            "boot_high": [1.5, 2.5, 3.5],
        }
    )
    out = seed_intervals(per_seed, ["recommender", "testset"], confidence=0.95)
    assert out["ci_high"].iloc[0] == pytest.approx(2 + 4.302653 / np.sqrt(3), rel=1e-6)
    assert out["boot_low"].iloc[0] == 1.5 and out["boot_high"].iloc[0] == 2.5
    tests = pd.DataFrame(
        {
            "seed": [0, 1, 2],
            "testset": "gt",
            "recommender_a": "a",
            "recommender_b": "b",
            "mean_diff": [0.1, 0.2, -0.1],
            "p_holm": [0.01, 0.2, 0.001],
        }
    )
    agree = agreement_over_seeds(tests, ["testset"], alpha=0.05).iloc[0]
    assert (agree["n_seeds"], agree["n_a_better"], agree["n_b_better"]) == (3, 1, 1)
    assert agree["max_p_holm"] == 0.2


def test_range_t_interval_matches_hand_computed_cases():
    # [0, 1]: 0.2, 0.4, 0.6: mean 0.4, se 0.2/√3; logit(0.4) = -0.405465, g' = 1/(0.4·0.6);
    # half = 4.302653 · 0.115470 · 4.166667 = 2.070093 -> expit(-2.475558), expit(1.664628)
    _, low, high = range_t_interval(np.array([0.2, 0.4, 0.6]), lower=0.0, upper=1.0)
    assert (low, high) == pytest.approx((0.0775880, 0.8408612), abs=1e-6)
    # [0, ∞): 2, 3, 4: log(3) ± 4.302653 · (1/√3) / 3 = 1.098612 ± 0.828046
    _, low, high = range_t_interval(np.array([2.0, 3.0, 4.0]), lower=0.0)
    assert (low, high) == pytest.approx((1.310707, 6.866525), abs=1e-5)
    # [-1, 1] (Fisher's z): 0.9, 0.95, 0.99, mean 0.946667, sd 0.045092
    _, low, high = range_t_interval(np.array([0.9, 0.95, 0.99]), lower=-1.0, upper=1.0)
    assert (low, high) == pytest.approx((0.616745, 0.993687), abs=1e-5)
    # unbounded: the plain t interval
    plain = t_interval(np.array([0.2, 0.4, 0.6]))
    assert np.allclose(range_t_interval(np.array([0.2, 0.4, 0.6])), plain)


def test_range_t_interval_boundary_cases_give_no_garbage(recwarn):
    values = np.array(
        [
            [1.0, 1.0],  # every seed at the upper bound: [1, 1]
            [0.0, 0.0],  # every seed at 0: [0, 0]
            [0.9, 1.0],  # near the bound: inside (0, 1), however wide
            [np.nan, 0.5],  # one seed: no interval
            [-0.1, 0.05],  # a mean outside [0, 1]: no interval in the range can hold it
            [np.nan, np.nan],  # nothing
        ]
    )
    mean, low, high = range_t_interval(values, lower=0.0, upper=1.0)
    assert low[:2].tolist() == [1.0, 0.0] and high[:2].tolist() == [1.0, 0.0]
    assert 0.0 < low[2] < mean[2] < high[2] < 1.0
    assert np.isnan(low[3:]).all() and np.isnan(high[3:]).all()
    assert not recwarn.list


@pytest.mark.parametrize(
    ("draw", "truth", "lower", "upper"),
    [
        (lambda rng, n: rng.beta(2, 8, size=(4000, n)), 0.2, 0.0, 1.0),  # recall-like
        (lambda rng, n: rng.beta(8, 2, size=(4000, n)), 0.8, 0.0, 1.0),  # hit-rate-like
        (lambda rng, n: rng.exponential(2.0, size=(4000, n)), 2.0, 0.0, np.inf),  # an error
    ],
)
@pytest.mark.parametrize("n", [3, 10])
def test_range_t_interval_covers_at_its_nominal_rate_and_stays_in_range(
    draw, truth, lower, upper, n
):
    rng = np.random.default_rng(11)
    _, low, high = range_t_interval(draw(rng, n), lower=lower, upper=upper)
    coverage = np.mean((low <= truth) & (truth <= high))
    assert 0.92 <= coverage <= 0.97, coverage  # ±3.5 se of 4000 draws around 0.93-0.96
    assert (low >= lower).all() and (high <= upper).all()


def test_within_range_cuts_bootstrap_bounds_and_drops_an_estimate_outside():
    low, high = within_range(
        np.array([0.98, 0.5, -0.02, np.nan]),
        np.array([0.93, 0.4, -0.08, np.nan]),
        np.array([1.04, 0.6, 0.03, np.nan]),
        lower=0.0,
        upper=1.0,
    )
    assert low[:2].tolist() == [0.93, 0.4] and high[:2].tolist() == [1.0, 0.6]
    assert np.isnan(low[2:]).all() and np.isnan(high[2:]).all()


def test_seed_intervals_respect_each_metrics_range():
    per_seed = pd.DataFrame(
        {
            "metric": ["hitrate"] * 2 + ["dcg"] * 2 + ["bias"] * 2,
            "seed": [0, 1] * 3,
            "value": [0.97, 1.0, 0.1, 0.3, -0.2, 0.1],
            "boot_low": [0.9, 0.95, 0.0, 0.1, -0.5, -0.1],
            "boot_high": [1.02, 1.04, 0.3, 0.5, 0.1, 0.3],
        }
    )
    out = seed_intervals(per_seed, ["metric"], confidence=0.95).set_index("metric")
    assert 0 < out.at["hitrate", "ci_low"] and out.at["hitrate", "ci_high"] < 1
    assert out.at["hitrate", "boot_high"] == 1.0  # the bootstrap bound cut to [0, 1]
    assert out.at["dcg", "ci_low"] > 0  # [0, ∞): log scale
    assert out.at["bias", "ci_low"] < -1  # unbounded: the plain t interval (1 df)
    assert metric_range("Recall") == (0.0, 1.0) and metric_range("pct_diff") == (-np.inf, np.inf)


def test_fewer_than_three_seeds_show_the_bootstrap_interval():
    assert interval_cell(0.5, 0.1, 0.9, 0.45, 0.55, 2) == "0.5000 ⟨0.4500, 0.5500⟩"
    assert interval_cell(0.5, 0.4, 0.6, 0.45, 0.55, 3) == "0.5000 [0.4000, 0.6000] ⟨0.4500, 0.5500⟩"
    assert interval_cell(0.5, np.nan, np.nan, np.nan, np.nan, 1) == "0.5000"
    low, high = shown_interval(
        np.array([0.1, 0.4]),
        np.array([0.9, 0.6]),
        np.array([0.45, 0.45]),
        np.array([0.55, 0.55]),
        np.array([2, 3]),
    )
    assert low.tolist() == [0.45, 0.4] and high.tolist() == [0.55, 0.6]


def test_seed_intervals_of_another_column_with_given_bounds_and_nan_keys():
    """E2's % change ([-100, ∞), a tuple), E3's losses (a function of the metric) and E4's
    rows whose ``alpha`` is NaN (a group of its own, not dropped)."""
    pct = pd.DataFrame({"key": ["a"] * 3, "seed": [0, 1, 2], "pct": [-95.0, -80.0, -99.0]})
    out = seed_intervals(pct, ["key"], confidence=0.95, value="pct", bounds=(-100.0, np.inf))
    mean = pct["pct"].mean()
    assert -100 < out.at[0, "ci_low"] < mean < out.at[0, "ci_high"]
    plain = seed_intervals(pct.rename(columns={"pct": "value"}), ["key"], confidence=0.95)
    assert plain.at[0, "ci_low"] < -100  # unbounded: the plain t interval crosses -100%
    losses = pd.DataFrame(
        {
            "metric": ["accuracy"] * 3 + ["precision@5"] * 3,
            "seed": [0, 1, 2] * 2,
            "value": [0.9, 0.99, 0.95, 2.0, 4.5, 0.2],
        }
    )
    ranges = {"accuracy": (0.0, 1.0), "precision@5": (0.0, np.inf)}
    out = seed_intervals(losses, ["metric"], confidence=0.95, bounds=ranges.__getitem__)
    out = out.set_index("metric")
    assert out.at["accuracy", "ci_high"] < 1 and out.at["precision@5", "ci_high"] > 1
    assert out.at["precision@5", "ci_low"] > 0
    nan_key = pd.DataFrame(
        {
            "metric": "mse",
            "alpha": [np.nan] * 3 + [0.5] * 3,
            "seed": [0, 1, 2] * 2,
            "value": [0.1, 0.5, 0.2, 1, 1.1, 1.2],
        }
    )
    out = seed_intervals(nan_key, ["metric", "alpha"], confidence=0.95)
    assert len(out) == 2 and out["alpha"].isna().sum() == 1 and (out["ci_low"] > 0).all()


def test_seed_interval_note_says_which_interval_or_why_none():
    from debiaseval.evaluation.uncertainty import seed_interval_note

    shown = seed_interval_note(4, confidence=0.9, source="level `e2.confidence`", bounds="[0, ∞)")
    assert shown.startswith("In square brackets, the 0.9 t interval (level `e2.confidence`)")
    assert "over the 4 seeds, computed on the log scale of its range [0, ∞)" in shown
    assert "logit scale" in seed_interval_note(3, confidence=0.95, source="x", bounds="[0, 1]")
    none = seed_interval_note(2, confidence=0.95, source="x", bounds="[0, ∞)", why="no bootstrap")
    assert none.startswith("Cells are means over 2 seeds, without an interval")
    assert "; no bootstrap." in none
    assert interval_cell(-95.0, -98.4, -80.1, np.nan, np.nan, 3, digits=1, sign=True) == (
        "-95.0 [-98.4, -80.1]"
    )
    assert interval_cell(12.0, 1, 30, np.nan, np.nan, 2, digits=1, sign=True) == "+12.0"
