"""The estimator arena's scoreboard on hand-computed tables (docs/estimators.md)."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.estimation.scoreboard import (
    CONSTANT,
    GT_HALVES,
    SCOREBOARD_COLUMNS,
    TRUE,
    common_means,
    kendall_tau_b,
    scoreboard,
    scoreboard_markdown,
    split_half_reliability,
    truth_of,
    truth_separation,
    verdict,
)
from debiaseval.evaluation.metrics import BlockValues

NAN = np.nan
FAMILIES = {"gt": "MAR sample", "X": "weighting", "Y": "resampling"}


def _per_seed(rows):
    cols = ["recommender", "seed", "testset", "value", "boot_low", "boot_high"]
    frame = pd.DataFrame(rows, columns=cols)
    frame.insert(3, "metric", "recall")
    frame.insert(4, "k", np.int16(10))
    return frame.assign(n_users=np.int64(50))


def _scored(per_seed, truth="gt"):
    """The common-user means as if every row and the truth shared their users."""
    reference = per_seed[per_seed["testset"] == truth][["recommender", "seed", "value"]]
    rows = per_seed[per_seed["testset"] != truth].merge(
        reference.rename(columns={"value": "truth"}), on=["recommender", "seed"]
    )
    return rows[["recommender", "seed", "testset", "metric", "k", "value", "truth", "n_users"]]


# Seed 0: truth A > B > C; X ranks A > C > B (tau = (2 - 1) / 3); errors +.1, -.1, +.1.
# Seed 1: X ranks as the truth (tau = 1); errors +.2, +.1, 0.
ROWS = [
    ("A", 0, "gt", 0.3, 0.2, 0.4), ("B", 0, "gt", 0.2, 0.1, 0.3), ("C", 0, "gt", 0.1, 0.0, 0.2),
    ("A", 1, "gt", 0.3, 0.2, 0.4), ("B", 1, "gt", 0.2, 0.1, 0.3), ("C", 1, "gt", 0.1, 0.0, 0.2),
    ("A", 0, "X", 0.4, 0.35, 0.45),  # misses the truth .3
    ("B", 0, "X", 0.1, 0.05, 0.25),  # holds .2
    ("C", 0, "X", 0.2, 0.1, 0.3),  # holds .1 on its lower bound
    ("A", 1, "X", 0.5, 0.4, 0.6),  # misses .3
    ("B", 1, "X", 0.3, 0.1, 0.35),  # holds .2
    ("C", 1, "X", 0.1, NAN, NAN),  # no interval: not counted
]  # fmt: skip


def _board(rows=ROWS, **kw):
    per_seed = _per_seed(rows)
    options = {"truth": "gt", "families": FAMILIES, "rng": np.random.default_rng(0), **kw}
    return scoreboard(_scored(per_seed), per_seed, **options)


def test_hand_computed_scoreboard():
    board, _pairs = _board()
    assert list(board.columns) == SCOREBOARD_COLUMNS
    assert list(board["testset"]) == ["X", CONSTANT]
    row = board.iloc[0]
    assert row["family"] == "weighting" and row["truth"] == "gt"
    assert row["n_pairs"] == 6 and row["n_seeds"] == 2 and row["n_recommenders"] == 3
    assert row["bias"] == pytest.approx(0.4 / 6)
    assert row["rmse"] == pytest.approx(np.sqrt(0.08 / 6))
    assert row["tau"] == pytest.approx((1 / 3 + 1) / 2)
    assert row["n_tau_seeds"] == 2
    assert row["n_intervals"] == 5
    assert row["coverage"] == pytest.approx(3 / 5)
    for stat in ("bias", "rmse", "tau", "coverage"):  # every point inside its seed interval
        assert row[f"{stat}_low"] <= row[stat] + 1e-12 <= row[f"{stat}_high"] + 2e-12


def test_constant_rmse_by_hand():
    """CONSTANT gives every recommender the seed's mean truth: in both seeds the truth is
    .3, .2, .1 around .2, so its errors are ±.1 and 0: RMSE = √(4 · .01 / 6), bias 0."""
    board, pairs = _board()
    constant = board[board["testset"] == CONSTANT].iloc[0]
    assert constant["family"] == "baseline"
    assert constant["bias"] == pytest.approx(0.0)
    assert constant["rmse"] == pytest.approx(np.sqrt(0.04 / 6))
    assert np.isnan(constant["tau"]) and np.isnan(constant["coverage"])
    x_vs_c = pairs[(pairs["testset_a"] == "X") & (pairs["testset_b"] == CONSTANT)].iloc[0]
    assert x_vs_c["d_rmse"] == pytest.approx(np.sqrt(0.08 / 6) - np.sqrt(0.04 / 6))


def test_the_seed_bootstrap_resamples_whole_seeds():
    """With one resample per draw, the intervals span the statistic over single seeds: the
    bias of seed 0 (+.1/3) and of seed 1 (+.1) bound the interval."""
    board, _ = _board(resamples=4000)
    row = board.iloc[0]
    assert row["bias_low"] == pytest.approx(0.1 / 3, abs=1e-9)
    assert row["bias_high"] == pytest.approx(0.1, abs=1e-9)
    assert row["tau_low"] == pytest.approx(1 / 3) and row["tau_high"] == pytest.approx(1.0)


def test_excluded_recommenders_leave_tau_only():
    # Random is last on both sides in seed 0 and first on X in seed 1.
    extra = [
        ("Random", 0, "gt", 0.0, 0.0, 0.0), ("Random", 0, "X", 0.0, 0.0, 0.0),
        ("Random", 1, "gt", 0.0, 0.0, 0.0), ("Random", 1, "X", 0.9, 0.8, 1.0),
    ]  # fmt: skip
    out = _board(ROWS + extra, excluded=["Random"])[0].iloc[0]
    assert out["tau"] == pytest.approx((1 / 3 + 1) / 2)
    assert out["n_pairs"] == 8
    assert out["bias"] == pytest.approx((0.4 + 0.9) / 8)
    assert out["n_intervals"] == 7 and out["coverage"] == pytest.approx(4 / 7)


def test_true_is_the_truth_and_gt_is_scored():
    rows = ROWS + [
        (r, s, TRUE, v, NAN, NAN) for s in (0, 1) for r, v in (("A", 0.3), ("B", 0.2), ("C", 0.1))
    ]
    per_seed = _per_seed(rows)
    assert truth_of(per_seed["testset"]) == TRUE
    board, _ = scoreboard(_scored(per_seed, TRUE), per_seed, truth=TRUE, families=FAMILIES,
                          rng=np.random.default_rng(0))  # fmt: skip
    assert list(board["testset"]) == ["gt", "X", CONSTANT]
    gt = board.iloc[0]
    assert gt["truth"] == TRUE and gt["family"] == "MAR sample"
    assert gt["bias"] == 0 and gt["rmse"] == 0 and gt["tau"] == 1
    assert gt["coverage"] == 1 and gt["n_intervals"] == 6


def test_undefined_tau_and_no_bounds():
    rows = [
        ("A", 0, "gt", 0.3, NAN, NAN), ("B", 0, "gt", 0.2, NAN, NAN),
        ("A", 0, "X", 0.1, NAN, NAN), ("B", 0, "X", 0.1, NAN, NAN),  # a tie: tau undefined
    ]  # fmt: skip
    per_seed = _per_seed(rows).drop(columns=["boot_low", "boot_high"])
    board, _ = scoreboard(_scored(per_seed), per_seed, truth="gt", families=FAMILIES,
                          rng=np.random.default_rng(0))  # fmt: skip
    out = board.iloc[0]
    assert np.isnan(out["tau"]) and out["n_tau_seeds"] == 0
    assert np.isnan(out["coverage"]) and out["n_intervals"] == 0
    assert out["bias"] == pytest.approx(-0.15)


def test_only_like_is_scored_like():
    """HitRate of a sampled test set has another estimand than the full-matrix one: no row."""
    per_seed = pd.concat([_per_seed(ROWS), _per_seed(ROWS).assign(metric="hitrate")])
    board, _ = scoreboard(_scored(per_seed), per_seed, truth="gt", families=FAMILIES,
                          rng=np.random.default_rng(0))  # fmt: skip
    assert set(board["metric"]) == {"recall"}


def test_common_means_average_a_row_and_its_truth_over_the_same_users():
    """Users 0-5: the row has 0-4, the truth 1-5, the held-out positives 0-3: the common users
    are 1-3, and the row and the truth are both averaged over them."""
    block = (("recall", 10),)
    row = BlockValues(np.arange(5, dtype=np.int32), np.array([[0.0, 0.1, 0.2, 0.3, 0.4]]), block)
    truth = BlockValues(np.arange(1, 6, dtype=np.int32), np.array([[1.0, 2.0, 3.0, 4.0, 5.0]]),
                        block)  # fmt: skip
    out = common_means({"A": {"X": row, "gt": truth}}, {"A": truth}, seed=3,
                       heldout_users=np.arange(4), n_users=6, truth_name="gt")  # fmt: skip
    assert out["testset"].tolist() == ["X"]  # the truth is not scored against itself
    assert out.loc[0, "value"] == pytest.approx(0.2)  # mean of users 1..3
    assert out.loc[0, "truth"] == pytest.approx(2.0)
    assert out.loc[0, "n_users"] == 3 and out.loc[0, "seed"] == 3


def test_kendall_tau_b_matches_scipy():
    from scipy.stats import kendalltau

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (20, 6)).astype(float)
    y = rng.integers(0, 4, (20, 6)).astype(float)
    ours = kendall_tau_b(x, y)
    for i in range(20):
        expected = kendalltau(x[i], y[i], variant="b").statistic
        assert (np.isnan(ours[i]) and np.isnan(expected)) or ours[i] == pytest.approx(expected)


def test_split_half_reliability():
    """Well separated recommenders rank alike on every half (τ = 1); recommenders with the same
    distribution rank at random (τ near 0). Random is left out."""
    rng = np.random.default_rng(0)
    users = np.arange(400, dtype=np.int32)
    block = (("recall", 10),)
    apart = {f"R{j}": BlockValues(users, (j + rng.random(400))[None, :], block) for j in range(4)}
    apart["Random"] = BlockValues(users, rng.random(400)[None, :] + 10, block)
    same = {f"R{j}": BlockValues(users, rng.random(400)[None, :], block) for j in range(4)}
    high = split_half_reliability(apart, ["Random"], seed=0, rng=np.random.default_rng(1))
    low = split_half_reliability(same, [], seed=0, rng=np.random.default_rng(1))
    assert high.loc[0, "tau"] == pytest.approx(1.0) and high.loc[0, "n_recommenders"] == 4
    assert abs(low.loc[0, "tau"]) < 0.25 and low.loc[0, "n_splits"] == 100
    board, _ = scoreboard(_scored(_per_seed(ROWS)), _per_seed(ROWS), truth="gt",
                          families=FAMILIES, reliability=high.assign(seed=0),
                          rng=np.random.default_rng(0))  # fmt: skip
    halves = board[board["testset"] == GT_HALVES].iloc[0]
    assert halves["tau"] == pytest.approx(1.0) and np.isnan(halves["rmse"])


def test_no_best_row_where_the_truth_cannot_separate_the_recommenders():
    """Three recommenders whose truth moves from seed to seed over each other: no best row is
    named. Where the truth separates them, the lowest-RMSE row is."""
    noisy = []
    for seed, (a, b, c) in enumerate([(0.3, 0.2, 0.1), (0.1, 0.3, 0.2), (0.2, 0.1, 0.3)]):
        for rec, v in (("A", a), ("B", b), ("C", c)):
            noisy += [(rec, seed, "gt", v, NAN, NAN), (rec, seed, "X", v + 0.01, NAN, NAN)]
    per_seed = _per_seed(noisy)
    board, pairs = scoreboard(_scored(per_seed), per_seed, truth="gt", families=FAMILIES,
                              rng=np.random.default_rng(0))  # fmt: skip
    separation = truth_separation(per_seed, truth="gt", rng=np.random.default_rng(0))
    assert not separation.loc[0, "separates_ranked"]
    line = verdict(board, pairs, separation.iloc[0])
    assert "cannot separate" in line and "no row is named best" in line
    assert "Lowest RMSE" not in line
    clear = _per_seed(ROWS + [(r, 2, t, v, NAN, NAN) for r, s, t, v, *_ in ROWS if s == 0])
    board, pairs = scoreboard(_scored(clear), clear, truth="gt", families=FAMILIES,
                              rng=np.random.default_rng(0))  # fmt: skip
    separation = truth_separation(clear, truth="gt", rng=np.random.default_rng(0))
    assert separation.loc[0, "separates_ranked"] and separation.loc[0, "best"] == "A"
    text = scoreboard_markdown(board, pairs, "toy", separation)
    assert "**Verdict.** Lowest RMSE: X" in text and "CONSTANT's RMSE" in text
    assert "## recall@10" in text and "| X | weighting |" in text
    assert "MAR ground truth `gt`" in text


def test_aggregate_adds_true_and_scores_against_it():
    from debiaseval.experiments.e1 import aggregate_step
    from debiaseval.workflow.config import validate_config

    table = _per_seed(ROWS).assign(n_short_lists=np.int64(0))
    metrics = [table[table["seed"] == s] for s in (0, 1)]
    truth = [
        _per_seed([(r, s, TRUE, v, NAN, NAN) for r, v in (("A", 0.3), ("B", 0.25), ("C", 0.1))])
        for s in (0, 1)
    ]
    diagnostics = pd.DataFrame(
        {
            "seed": [0], "testset": ["X"], "n_pairs": [1], "n_users": [1], "n_items": [1],
            "zero_weight_share": [0.0], "kl_users": [0.0], "kl_items": [0.0],
        }
    )  # fmt: skip
    block = validate_config({"e1": {"seeds": 2}}, "e1")["e1"]
    block = {
        **block,
        "testsets": {"X": {"strategy": "full"}},
        "recommenders": {n: {"algorithm": "pospop"} for n in "ABC"},
    }
    interactions = pd.DataFrame({"user": [0], "item": [0], "part": ["mnar"]})
    per_seed = pd.concat([*metrics, *truth])
    arena = [_scored(per_seed[per_seed["seed"] == s], TRUE) for s in (0, 1)]
    out = aggregate_step(metrics, [diagnostics], interactions, block, dataset="toy", truth=truth,
                         arena=arena)  # fmt: skip
    assert TRUE in set(out["summary"]["testset"])
    accuracy = out["estimator_accuracy"]
    assert list(accuracy["testset"]) == ["gt", "X", CONSTANT]
    assert set(accuracy["truth"]) == {TRUE}
    assert accuracy.iloc[0]["bias"] == pytest.approx(-0.05 / 3)
    assert "# E1 on toy: the estimator arena's scoreboard" in out["estimator_accuracy_md"]


def test_accuracy_figure_draws():
    from debiaseval.figures import e1 as e1_figures

    board, _ = _board()
    summary = pd.DataFrame({"metric": "recall", "k": [10, 10], "testset": ["gt", "X"]})
    fig = e1_figures.draw("accuracy", {"estimator_accuracy": board, "summary": summary}, "toy")
    assert len(fig.axes) == 4  # bias, RMSE, τ, coverage
    bars = [patch.get_facecolor() for patch in fig.axes[0].patches]
    assert bars[0] != bars[1]  # X and CONSTANT: each its own row colour


def test_arena_configs_validate():
    """config/arena.yaml over the default config, and config/arena-synthetic.yaml over both,
    as Snakemake merges --configfile files (docs/estimators.md)."""
    from pathlib import Path

    import yaml
    from snakemake.utils import update_config

    from debiaseval.experiments.e1 import check_config
    from debiaseval.workflow.config import validate_config

    root = Path(__file__).resolve().parents[1] / "config"
    config = yaml.safe_load((root / "config.yaml").read_text())
    update_config(config, yaml.safe_load((root / "arena.yaml").read_text()))
    block = validate_config(dict(config))["e1"]
    assert block["ks"] == [10] and block["metrics"] == ["recall"]
    assert {"SNIPS_WTD", "DR_POP"} <= set(block["estimators"])
    update_config(config, yaml.safe_load((root / "arena-synthetic.yaml").read_text()))
    full = validate_config(dict(config))
    check_config(full)
    assert full["datasets"] == ["synthetic"] and "DR_KNOWN" in full["e1"]["estimators"]
    assert "SNIPS_WTD" in full["e1"]["estimators"]
