"""The verdicts of E2..E6 (``debiaseval.experiments.eN.verdict``, on the shared
``debiaseval.experiments.verdicts``): computed from the tables, plain sentences with their
numbers, inert names, and the first section of every main summary (E1's:
tests/test_e1_verdict.py)."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from debiaseval import api
from debiaseval.experiments import verdicts as v
from debiaseval.experiments.e2.verdict import e2_directions, e2_verdict
from debiaseval.experiments.e3.verdict import e3_gap, e3_verdict
from debiaseval.experiments.e4.verdict import e4_verdict
from debiaseval.experiments.e5.verdict import e5_verdict
from debiaseval.experiments.e6.verdict import e6_drifts, e6_verdict

TINY = yaml.safe_load((Path(__file__).parent / "configs" / "tiny.yaml").read_text())


def test_verdict_markdown_and_the_section_first_in_a_summary():
    md = v.verdict_markdown(["One finding.", "Two\nlines."])
    assert md == "## Verdict\n\n- One finding.\n- Two lines.\n"
    assert v.verdict_sentences(md) == ["One finding.", "Two lines."]
    summary = v.with_verdict("# Title\n\nBody.\n", md)
    assert summary.startswith("# Title\n\n## Verdict\n\n- One finding.\n") and summary.endswith(
        "\n\nBody.\n"
    )
    with pytest.raises(ValueError, match="title"):
        v.with_verdict("no title\n", md)
    assert v.verdict_entries(["A."]) == {"verdict": ["A."], "verdict_md": "## Verdict\n\n- A.\n"}


def _seed_tests(
    pairs: dict[tuple[str, str], list[tuple[float, float]]], scope: str = "user"
) -> pd.DataFrame:
    """Per-seed Wilcoxon rows (as ``wilcoxon_seeds.parquet``) of CLASSIC at Recall@10: per pair
    of strategies, one (two-sided p, mean difference a − b) per seed; the one-sided p-values
    follow the sign of the difference, as a symmetric test's do."""
    rows = [
        {
            "method": "CLASSIC",
            "scope": scope,
            "metric": "recall",
            "k": 10,
            "strategy_a": a,
            "strategy_b": b,
            "seed": seed,
            "statistic": 1.0,
            "p_value": p,
            "p_greater": p / 2 if d > 0 else 1 - p / 2,
            "p_less": p / 2 if d < 0 else 1 - p / 2,
            "n_users": 40,
            "mean_difference": d,
            "significant": p < 0.05,
        }
        for (a, b), seeds in pairs.items()
        for seed, (p, d) in enumerate(seeds)
    ]
    return pd.DataFrame(rows)


E2_BLOCK = {"confidence": 0.95, "metrics": ["recall"], "ks": [10]}


def _e2(pairs: dict[tuple[str, str], list[tuple[float, float]]]) -> list[str]:
    from debiaseval.active_learning.evaluation import combine_seeds

    return e2_verdict(combine_seeds(_seed_tests(pairs)), E2_BLOCK, dataset="d")


def test_e2_claims_a_direction_where_the_seeds_agree_in_sign():
    out = _e2(
        {
            ("RND", "POP"): [(0.001, -0.04), (0.004, -0.06)],
            ("RND", "HP"): [(0.5, 0.01)] * 2,
            ("POP", "HP"): [(0.7, 0.0), (0.9, 0.01)],
        }
    )
    assert out[0].startswith("On d, CLASSIC, active users, Recall@10 over 2 seeds: 1 of 3 ")
    # combined p = 2 · 0.001 = 0.002; Holm over the block's 3 pairs: 0.006
    assert (
        "POP gains more than RND by 0.0500 on average (Holm-adjusted combined p = 0.006; every "
        "one of the 2 seeds agrees)" in out[0]
    )
    assert out[-1] == (
        "On d, the verdict rests on 3 Wilcoxon tests (1 method × scope blocks at Recall@10, "
        "Holm-corrected within each block); 1 of them have a combined p below 0.05 before "
        "correction, where chance alone gives 0.15 on average."
    )


def test_e2_claims_no_direction_where_the_seeds_disagree():
    # the review's case: seed 0 has RND ahead (p 0.46), seed 1 POP (p 0.018); combined 0.036,
    # below 0.05 alone but not after Holm over the block's 15 pairs
    names = ["RND", "POP", "HP", "POPENT", "VAR", "BIN"]
    pairs = {pair: [(0.6, 0.01), (0.7, -0.01)] for pair in itertools.combinations(names, 2)}
    pairs[("RND", "POP")] = [(0.46, 0.02), (0.018, -0.05)]
    out = _e2(pairs)
    assert "gains more" not in " ".join(out)
    assert out[0].endswith(
        "no two strategies differ after Holm's correction over the 15 pairs (smallest adjusted "
        "combined p 0.54, unadjusted 0.036)."
    )
    assert "rests on 15 Wilcoxon tests" in out[-1] and "1 of them have a combined p" in out[-1]
    # significant in both seeds, in opposite directions: they differ, no direction is claimed
    out = _e2({("RND", "POP"): [(0.002, 0.03), (0.001, -0.05)]})
    assert (
        "RND and POP differ (Holm-adjusted combined p = 0.002) but the seeds do not settle "
        "which gains more (RND ahead in 1 of 2 seeds" in out[0]
    )
    assert "gains more than" not in out[0]


def test_e2_a_one_sided_combined_p_can_settle_a_direction_the_seeds_split_on():
    # three seeds, two strongly POP, one weakly RND: the seeds disagree in sign, but the
    # one-sided combined p towards POP (1.5 · 0.0005, doubled) is small and the other large
    from debiaseval.active_learning.evaluation import combine_seeds

    seeds = _seed_tests({("RND", "POP"): [(0.001, -0.05), (0.001, -0.04), (0.8, 0.001)]})
    tests = e2_directions(combine_seeds(seeds), 0.05).iloc[0]
    assert not tests["agree"] and tests["differs"] and tests["directed"]
    assert tests["direction_p"] == pytest.approx(2 * 1.5 * 0.0005)
    (out, _) = e2_verdict(combine_seeds(seeds), E2_BLOCK, dataset="d")
    assert "POP gains more than RND by 0.0297 on average" in out
    assert "one-sided p, doubled and adjusted, 0.0015)" in out


def test_e2_names_are_inert_and_an_empty_table_says_so():
    out = _e2({("<b>A</b>", "B|C"): [(0.001, 0.04), (0.001, 0.06)]})
    assert "<b>" not in out[0] and "&lt;b&gt;A&lt;/b&gt; gains more than B&#124;C" in out[0]
    empty = _seed_tests({}).iloc[:0]
    assert e2_verdict(empty, E2_BLOCK, dataset="d") == [
        "On d, no Wilcoxon test between strategies was run (fewer than two)."
    ]


def _e3_draws(errors: dict[str, list[float]], seeds: int = 2) -> pd.DataFrame:
    """E3's draws at α = 0.25 with the known propensities on MAE (true value 1): per
    estimator, the error of each draw, the same in every seed and both matrices."""
    rows = [
        {
            "seed": seed,
            "draw": draw,
            "propensity": "known",
            "alpha": 0.25,
            "mar_size": 0,
            "matrix": matrix,
            "metric": "mae",
            "estimator": est,
            "value": 1.0 + error,
            "true_value": 1.0,
            "n_observed": 50,
        }
        for seed in range(seeds)
        for matrix in ("ONES", "ROTATE")
        for est, per_draw in errors.items()
        for draw, error in enumerate(per_draw)
    ]
    return pd.DataFrame(rows)


def _e3(draws: pd.DataFrame) -> str:
    from debiaseval.experiments.e3 import mean_over_matrices, rmse_table

    rmse = mean_over_matrices(rmse_table(draws, propensity="known", by="alpha"))
    (out,) = e3_verdict(rmse, draws, {"alpha": 0.25}, dataset="d")
    return out


def test_e3_says_the_draws_and_names_the_closest_only_with_an_interval():
    draws = _e3_draws(
        {
            "naive": [0.5] * 5,
            "ips": [0.2, -0.3, 0.25, -0.2, 0.3],
            "snips": [0.05, -0.04, 0.06, -0.05, 0.04],
        }
    )
    out = _e3(draws)
    assert "over 2 seeds × 5 draws of O and 2 prediction matrices" in out
    assert out.index("SNIPS 0.0") < out.index("IPS 0.2") < out.index("Naive 0.5000")
    # IPS's squared error minus SNIPS's, per draw: 0.0375, 0.0884, 0.0589, 0.0375, 0.0884
    gap = np.array(
        [0.2**2 - 0.05**2, 0.3**2 - 0.04**2, 0.25**2 - 0.06**2, 0.2**2 - 0.05**2, 0.3**2 - 0.04**2]
        * 2
    )
    mean, low, high, n = e3_gap(draws, metric="mae", alpha=0.25, best="snips", runner="ips")
    assert n == 10 and mean == pytest.approx(gap.mean()) and 0 < low < mean < high
    assert out.endswith(
        f"; SNIPS comes closest: IPS's squared error, averaged over the matrices, exceeds "
        f"SNIPS's by {mean:.3g} [{low:.3g}, {high:.3g}] (95% paired t interval over the 10 "
        "draws), and every other's by an interval above 0."
    )


def test_e3_names_no_closest_when_a_worse_estimator_is_not_told_apart():
    # SNIPS leads IPS in every draw, but Naive, worse on average, is exact in 4 draws of 5:
    # SNIPS's lead over Naive holds 0, so nothing is named
    draws = _e3_draws(
        {
            "naive": [1.5, 0.0, 0.0, 0.0, 0.0],
            "ips": [0.2, -0.3, 0.25, -0.2, 0.3],
            "snips": [0.05, -0.04, 0.06, -0.05, 0.04],
        }
    )
    out = _e3(draws)
    assert out.index("SNIPS 0.0") < out.index("IPS 0.2") < out.index("Naive 0.6")
    assert "comes closest" not in out
    assert "; SNIPS and Naive are not told apart: Naive's squared error" in out


def test_e3_says_two_estimators_are_not_told_apart():
    # SNIPS ahead in RMSE by a hair, IPS closer in half the draws: the interval holds 0
    draws = _e3_draws(
        {"naive": [0.5] * 4, "ips": [0.1, -0.3, 0.1, -0.3], "snips": [0.3, -0.09, 0.3, -0.09]}
    )
    out = _e3(draws)
    assert "comes closest" not in out
    assert (
        "; SNIPS and IPS are not told apart: IPS's squared error, averaged over the matrices, "
        "minus SNIPS's is"
        in out
        and "an interval not above 0." in out
    )
    # one seed of one draw: no interval, so no closest either
    out = _e3(_e3_draws({"ips": [0.3], "snips": [0.1]}, seeds=1))
    assert "over 1 seed × 1 draw of O" in out
    assert out.endswith("; SNIPS and IPS are not told apart (1 draw gives no interval).")


def _e4_summary(n_seeds: int, p_value: float = 0.03, flags=("", "")) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["MF-Naive", "MF-IPS"],
            "propensity": ["none", "known"],
            "metric": "mse",
            "alpha": 0.25,
            "mar_size": np.nan,
            "mean": [2.8, 2.1],
            "sd": [0.1, 0.2],
            "ci_low": [2.6, 1.8],
            "ci_high": [3.0, 2.5],
            "n_seeds": n_seeds,
            "p_value": [np.nan, p_value],
            "flags": list(flags),
        }
    )


E4_TESTS = pd.DataFrame(
    {
        "model": "MF-IPS",
        "propensity": "known",
        "metric": "mse",
        "alpha": 0.25,
        "seed": [0, 1],
        "n_pairs": 100,
        "mean_diff": [-0.7, -0.6],
        "t": -5.0,
        "p_value": [1e-4, 0.2],
    }
)


def test_e4_verdict_compares_mf_ips_with_mf_naive_per_seed():
    # 2 seeds: no t interval, so no t-test across seeds either, even if a table holds its p
    (out,) = e4_verdict(_e4_summary(2), E4_TESTS, dataset="d", alpha=0.25)
    assert "MF-IPS (known propensities) has a test MSE of 2.100 against" in out
    assert (
        "MF-Naive's 2.800 (means over seeds; fewer than 3 seeds give no interval and no test "
        "across seeds)" in out
    )
    assert "lower by 0.700" in out and "±" not in out
    assert "across seeds: p" not in out and "0.03" not in out and "[1.800" not in out
    assert "better in 1 and worse in 0 of 2 seeds" in out
    assert "grid" not in out
    # 3 seeds: the interval and the test across seeds, as the summary prints them
    (out,) = e4_verdict(_e4_summary(3), E4_TESTS, dataset="d", alpha=0.25)
    assert "MSE of 2.100 [1.800, 2.500] against MF-Naive's 2.800 [2.600, 3.000]" in out
    assert "(mean [95% t interval over seeds, within [0, ∞)])" in out
    assert "lower by 0.700; paired t-test across seeds: p = 0.03; over the MAR test" in out
    # a NaN interval is no interval, a NaN p no test
    nan = _e4_summary(3, p_value=np.nan).assign(ci_low=np.nan)
    (out,) = e4_verdict(nan, E4_TESTS.iloc[:0], dataset="d", alpha=0.25)
    assert "[" not in out and "across seeds: p" not in out and "MAR test pairs" not in out


def test_e4_verdict_carries_the_grid_edge_flag():
    summary = _e4_summary(3, flags=("", "grid_edge,not_converged"))
    (out,) = e4_verdict(summary, E4_TESTS, dataset="d", alpha=0.25)
    assert out.endswith(
        "; for MF-IPS the tuning picked factors or λ at an end of the grid in some seed (flag "
        "grid_edge): the best setting may lie beyond the grid, and a wider one may change the "
        "comparison."
    )
    summary = _e4_summary(2, flags=("grid_edge", "grid_edge"))
    (out,) = e4_verdict(summary, E4_TESTS, dataset="d", alpha=0.25)
    assert "for MF-IPS and MF-Naive the tuning picked" in out


def test_e5_verdict_gives_tau_of_ure_and_of_recall():
    agreement = pd.DataFrame(
        {
            "k": [5, 10, 5, 10],
            "estimator": ["traditional"] * 2 + ["ure"] * 2,
            "reference": "true_recall",
            "kendall_tau": [0.4, np.nan, 1.0, 0.9],
            "pearson_r": 0.5,
            "mean_bias": [0.1, 0.2, 0.0, -0.01],
            "n_models": 5,
            "flags": ["", "degenerate_k,constant", "", ""],
        }
    )
    estimates = pd.DataFrame({"n_seeds": [3, 3]})
    out = e5_verdict(agreement, estimates, dataset="d")
    assert "by traditional recall against the true recall: 0.40 at K = 5" in out[0]
    assert "undefined (every model scores the same) at K = 10" in out[0]
    assert "over 3 seeds and 5 models" in out[0]
    agreement.loc[1, "flags"] = ""  # undefined for another reason: no reason given
    assert "undefined at K = 10" in e5_verdict(agreement, estimates, dataset="d")[0]
    assert "by URE against the true recall: 1.00 at K = 5" in out[1]


def _e6_tables(variants: list[tuple[int, str, int, float]], seeds=(0, 1), n_items: int = 80):
    """E6's scores (g1, each seed the same ``(t, weighting, p, score)`` rows) and snapshots
    (``n_items`` present at every t)."""
    rows = [
        (seed, t, "g1", weighting, p, score, score - 0.01, score + 0.01)
        for seed, (t, weighting, p, score) in itertools.product(seeds, variants)
    ]
    scores = pd.DataFrame(
        rows, columns=["seed", "t", "recommender", "weighting", "p", "score", "ci_low", "ci_high"]
    )
    snapshots = pd.DataFrame(
        [(seed, t, n_items) for seed in seeds for t in (0, 2)], columns=["seed", "t", "n_items"]
    )
    return scores, snapshots


def test_e6_verdict_gives_the_drift_per_p_and_leaves_out_every_item_free():
    scores, snapshots = _e6_tables(
        [
            (0, "none", 0, 0.10),
            (2, "none", 0, 0.30),
            (0, "kl", 10, 0.10),
            (2, "kl", 10, 0.12),
            (0, "kl", 80, 0.10),
            (2, "kl", 80, 0.10),
        ]
    )
    (out,) = e6_verdict(scores, snapshots, dataset="d")
    assert "over 2 seeds, the constant recommender g1" in out and "from t0 to t2" in out
    assert out.index("unweighted: +0.2000") < out.index("KL weights with p = 10: +0.0200")
    assert "the weights shrink |drift| in all 2 seeds at p = 10" in out
    # p = 80 = every item: its drift of 0 holds by construction, named and not counted
    assert "p = 80:" not in out and "+0.0000" not in out
    assert "p = 80 (every item) is left out" in out and "by construction" in out
    drifts = e6_drifts(scores, snapshots)
    assert drifts.loc[drifts["p"] == 80, "degenerate"].all()
    assert not drifts.loc[drifts["p"] < 80, "degenerate"].any()


def test_e6_verdict_says_when_only_the_degenerate_weighting_ran():
    scores, snapshots = _e6_tables(
        [(0, "none", 0, 0.10), (2, "none", 0, 0.30), (0, "kl", 60, 0.10), (2, "kl", 60, 0.10)],
        seeds=(0,),
        n_items=60,  # 60 items present at the last snapshot: p = 60 frees all
    )
    (out,) = e6_verdict(scores, snapshots, dataset="d")
    assert "shrink" not in out and "nothing here tests them" in out
    assert "p = 60 (every item) is left out" in out
    # one seed: the scores and intervals at both ends
    assert "unweighted: +0.2000 (0.1000 [0.0900, 0.1100] → 0.3000 [0.2900, 0.3100])" in out
    # a weighting that does not shrink the drift in some seed says so
    scores, snapshots = _e6_tables(
        [(0, "none", 0, 0.10), (2, "none", 0, 0.30), (0, "kl", 10, 0.10), (2, "kl", 10, 0.35)]
    )
    scores.loc[(scores["seed"] == 1) & (scores["p"] == 10) & (scores["t"] == 2), "score"] = 0.2
    (out,) = e6_verdict(scores, snapshots, dataset="d")
    assert "the weights shrink |drift| in 1 of 2 seeds at p = 10" in out
    assert "(seeds: +0.1000 to +0.2500)" in out


@pytest.mark.parametrize(
    ("experiment", "summary"), [("e3", None), ("e5", None), ("e6", None), ("e2", "summary_md")]
)
@pytest.mark.slow
def test_api_run_returns_the_verdict(experiment, summary):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = api.run(experiment, "synthetic", TINY)
    assert out["verdict_md"].startswith("## Verdict\n\n- On synthetic")
    assert out["verdict"] == v.verdict_sentences(out["verdict_md"]) and out["verdict"]
    if summary:
        lines = out[summary].splitlines()
        assert lines[0].startswith("# ") and lines[2] == "## Verdict"


def test_seed_counts_read_as_english_for_one_seed_and_for_all():
    """Issue 43, case 19: "in 1 of 1 seed", "in any of 1 seed" (and "in all 1 seed")."""
    from debiaseval.experiments.verdicts import in_any_seed, in_seeds

    assert in_seeds(3, 10) == "in 3 of 10 seeds"
    assert in_seeds(10, 10) == "in all 10 seeds"
    assert in_seeds(1, 1) == "in its one seed" and in_seeds(0, 1) == "in its one seed"
    assert in_any_seed(1) == "in its one seed" and in_any_seed(4) == "in any of 4 seeds"
    import pandas as pd

    from debiaseval.experiments.e1.verdict import pair_sentences

    pairs = pd.DataFrame(
        {
            "recommender_a": ["MF", "Pop"],
            "recommender_b": ["Pop", "Rnd"],
            "n_a_better": [1, 0],
            "n_b_better": [0, 0],
            "mean_diff": [0.1, 0.0],
            "n_seeds": [1, 1],
        }
    )
    text = pair_sentences(pairs, "Recall@10", 0.05)
    assert (
        "MF above Pop in its one seed (+0.1000 on average); no other pair differs in its "
        "one seed." in text
    )
    none = pair_sentences(pairs.assign(n_a_better=0), "Recall@10", 0.05)
    assert none.startswith("No pair differs at Recall@10 in its one seed (")
