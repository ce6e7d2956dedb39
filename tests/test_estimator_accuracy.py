"""The estimator arena's scoreboard on hand-computed tables."""

import numpy as np
import pandas as pd
import pytest
from debiaseval.evaluation.estimator_accuracy import (
    ACCURACY_COLUMNS,
    TRUE,
    estimator_accuracy,
    estimator_accuracy_markdown,
    truth_of,
)

NAN = np.nan


def _table(rows):
    cols = ["recommender", "seed", "testset", "value", "boot_low", "boot_high"]
    frame = pd.DataFrame(rows, columns=cols)
    frame.insert(3, "metric", "recall")
    frame.insert(4, "k", np.int16(10))
    return frame


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


def test_hand_computed_scoreboard():
    out = estimator_accuracy(_table(ROWS))
    assert list(out.columns) == ACCURACY_COLUMNS
    assert len(out) == 1
    row = out.iloc[0]
    assert row["testset"] == "X" and row["truth"] == "gt"
    assert row["n_pairs"] == 6 and row["n_seeds"] == 2 and row["n_recommenders"] == 3
    assert row["bias"] == pytest.approx(0.4 / 6)
    assert row["rmse"] == pytest.approx(np.sqrt(0.08 / 6))
    assert row["tau"] == pytest.approx((1 / 3 + 1) / 2)
    assert row["n_tau_seeds"] == 2
    assert row["n_intervals"] == 5
    assert row["coverage"] == pytest.approx(3 / 5)


def test_excluded_recommenders_leave_tau_only():
    # Random is last on both sides in seed 0 and first on X in seed 1.
    extra = [
        ("Random", 0, "gt", 0.0, 0.0, 0.0), ("Random", 0, "X", 0.0, 0.0, 0.0),
        ("Random", 1, "gt", 0.0, 0.0, 0.0), ("Random", 1, "X", 0.9, 0.8, 1.0),
    ]  # fmt: skip
    out = estimator_accuracy(_table(ROWS + extra), excluded=["Random"]).iloc[0]
    assert out["tau"] == pytest.approx((1 / 3 + 1) / 2)
    assert out["n_pairs"] == 8
    assert out["bias"] == pytest.approx((0.4 + 0.9) / 8)
    assert out["n_intervals"] == 7 and out["coverage"] == pytest.approx(4 / 7)


def test_true_is_the_truth_and_gt_is_scored():
    rows = ROWS + [
        (r, s, TRUE, v, NAN, NAN) for s in (0, 1) for r, v in (("A", 0.3), ("B", 0.2), ("C", 0.1))
    ]
    table = _table(rows)
    assert truth_of(table["testset"]) == TRUE
    out = estimator_accuracy(table)
    assert list(out["testset"]) == ["gt", "X"]
    gt = out.iloc[0]
    assert gt["truth"] == TRUE
    assert gt["bias"] == 0 and gt["rmse"] == 0 and gt["tau"] == 1
    assert gt["coverage"] == 1 and gt["n_intervals"] == 6


def test_undefined_tau_and_no_bounds():
    rows = [
        ("A", 0, "gt", 0.3, NAN, NAN), ("B", 0, "gt", 0.2, NAN, NAN),
        ("A", 0, "X", 0.1, NAN, NAN), ("B", 0, "X", 0.1, NAN, NAN),  # a tie: tau undefined
    ]  # fmt: skip
    table = _table(rows).drop(columns=["boot_low", "boot_high"])
    out = estimator_accuracy(table).iloc[0]
    assert np.isnan(out["tau"]) and out["n_tau_seeds"] == 0
    assert np.isnan(out["coverage"]) and out["n_intervals"] == 0
    assert out["bias"] == pytest.approx(-0.15)


def test_markdown_names_the_truth():
    text = estimator_accuracy_markdown(estimator_accuracy(_table(ROWS)), "coat")
    assert "## recall@10" in text and "| X |" in text
    assert "MAR ground truth `gt`" in text


def test_aggregate_adds_true_and_scores_against_it():
    from debiaseval.experiments.e1 import aggregate_step
    from debiaseval.workflow.config import validate_config

    table = _table(ROWS).assign(n_users=np.int64(50), n_short_lists=np.int64(0))
    metrics = [table[table["seed"] == s] for s in (0, 1)]
    truth = [
        _table([(r, s, TRUE, v, NAN, NAN) for r, v in (("A", 0.3), ("B", 0.25), ("C", 0.1))])
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
    out = aggregate_step(metrics, [diagnostics], interactions, block, dataset="toy", truth=truth)
    assert TRUE in set(out["summary"]["testset"])
    accuracy = out["estimator_accuracy"]
    assert list(accuracy["testset"]) == ["gt", "X"] and set(accuracy["truth"]) == {TRUE}
    assert accuracy.iloc[0]["bias"] == pytest.approx(-0.05 / 3)
    assert "# E1 on toy: the estimator arena's scoreboard" in out["estimator_accuracy_md"]


def test_accuracy_figure_draws():
    from debiaseval.figures import e1 as e1_figures

    accuracy = estimator_accuracy(_table(ROWS))
    summary = pd.DataFrame({"metric": ["recall"], "k": [10]})
    fig = e1_figures.draw("accuracy", {"estimator_accuracy": accuracy, "summary": summary}, "toy")
    assert len(fig.axes) == 2


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
