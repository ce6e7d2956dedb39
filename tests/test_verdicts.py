"""The verdicts of E2..E6 (debiaseval.experiments.verdicts): computed from the tables, plain
sentences with their numbers, inert names, and the first section of every main summary (E1's:
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


def test_e2_verdict_names_the_strategies_that_differ():
    wilcoxon = pd.DataFrame(
        {
            "method": "CLASSIC", "scope": ["user", "user", "system"], "metric": "recall",
            "k": 10, "strategy_a": ["RND", "RND", "RND"], "strategy_b": ["POP", "HP", "POP"],
            "n_seeds": 5, "n_significant": [4, 0, 0], "share_significant": [0.8, 0, 0],
            "median_p": [0.01, 0.5, 0.4], "combined_p": [0.02, 1.0, 0.8],
            "mean_users": 30.0, "mean_difference": [-0.05, 0.0, 0.01],
        }
    )  # fmt: skip
    out = v.e2_verdict(wilcoxon, {"alpha": 0.05, "metrics": ["recall"], "ks": [10]}, dataset="d")
    assert out[0].startswith("On d, CLASSIC, active users, Recall@10 over 5 seeds: 1 of 2")
    assert "POP gains more than RND (significant in 4 of 5 seeds, combined p = 0.02" in out[0]
    assert "by 0.0500 on average" in out[0]
    assert "no two of the strategies differ" in out[1] and "0.8" in out[1]


def test_e3_verdict_gives_each_estimator_s_rmse_and_the_closest():
    rmse = pd.DataFrame(
        {
            "metric": "mae", "estimator": ["naive", "ips", "snips", "naive"],
            "alpha": [0.25, 0.25, 0.25, 1.0], "mar_size": 0, "rmse": [0.5, 0.2, 0.1, 0.0],
            "abs_bias": [0.5, 0.02, 0.03, 0.0], "sd": [0.01, 0.2, 0.1, 0.0], "n_matrices": 5,
        }
    )  # fmt: skip
    (out,) = v.e3_verdict(rmse, {"alpha": 0.25, "n_draws": 50}, dataset="d", n_seeds=3)
    assert "over 3 seeds × 50 draws of O and 5 prediction matrices" in out
    assert "Naive 0.5000" in out and "SNIPS 0.1000" in out and out.endswith("SNIPS comes closest.")


def test_e4_verdict_compares_mf_ips_with_mf_naive_per_seed():
    summary = pd.DataFrame(
        {
            "model": ["MF-Naive", "MF-IPS"], "propensity": ["none", "known"], "metric": "mse",
            "alpha": 0.25, "mar_size": np.nan, "mean": [2.8, 2.1], "sd": [0.1, 0.2],
            "n_seeds": 2, "p_value": [np.nan, 0.03], "flags": "",
        }
    )  # fmt: skip
    tests = pd.DataFrame(
        {
            "model": "MF-IPS", "propensity": "known", "metric": "mse", "alpha": 0.25,
            "seed": [0, 1], "n_pairs": 100, "mean_diff": [-0.7, -0.6], "t": -5.0,
            "p_value": [1e-4, 0.2],
        }
    )  # fmt: skip
    (out,) = v.e4_verdict(summary, tests, dataset="d", alpha=0.25)
    assert "MF-IPS (known propensities) has a test MSE of 2.100 against" in out
    assert "MF-Naive's 2.800 (means over seeds; fewer than 3 seeds give no interval)" in out
    assert "lower by 0.700" in out and "p = 0.03" in out and "±" not in out
    assert "better in 1 and worse in 0 of 2 seeds" in out
    three = summary.assign(n_seeds=3, ci_low=[2.6, 1.8], ci_high=[3.0, 2.5])
    (out,) = v.e4_verdict(three, tests, dataset="d", alpha=0.25)
    assert "MSE of 2.100 [1.800, 2.500] against MF-Naive's 2.800 [2.600, 3.000]" in out
    assert "(mean [95% t interval over seeds, within [0, ∞)])" in out


def test_e5_verdict_gives_tau_of_ure_and_of_recall():
    agreement = pd.DataFrame(
        {
            "k": [5, 10, 5, 10], "estimator": ["traditional"] * 2 + ["ure"] * 2,
            "reference": "true_recall", "kendall_tau": [0.4, np.nan, 1.0, 0.9],
            "pearson_r": 0.5, "mean_bias": [0.1, 0.2, 0.0, -0.01], "n_models": 5,
            "flags": ["", "degenerate_k,constant", "", ""],
        }
    )  # fmt: skip
    estimates = pd.DataFrame({"n_seeds": [3, 3]})
    out = v.e5_verdict(agreement, estimates, dataset="d")
    assert "by traditional recall against the true recall: 0.40 at K = 5" in out[0]
    assert "undefined (every model scores the same) at K = 10" in out[0]
    assert "over 3 seeds and 5 models" in out[0]
    agreement.loc[1, "flags"] = ""  # undefined for another reason: no reason given
    assert "undefined at K = 10" in v.e5_verdict(agreement, estimates, dataset="d")[0]
    assert "by URE against the true recall: 1.00 at K = 5" in out[1]


def test_e6_verdict_gives_the_constant_recommenders_drift():
    rows = []
    for seed, (t, weighting, p, score) in itertools.product(
        (0, 1),
        [(0, "none", 0, 0.10), (2, "none", 0, 0.30), (0, "kl", 10, 0.10), (2, "kl", 10, 0.12)],
    ):
        rows.append((seed, t, "g1", weighting, p, score, score - 0.01, score + 0.01))
    scores = pd.DataFrame(
        rows, columns=["seed", "t", "recommender", "weighting", "p", "score", "ci_low", "ci_high"]
    )
    (out,) = v.e6_verdict(scores, dataset="d")
    assert "over 2 seeds, the constant recommender g1" in out and "from t0 to t2" in out
    assert out.index("unweighted: +0.2000") < out.index("KL weights with p = 10: +0.0200")
    assert "the weights shrink the drift" in out


@pytest.mark.parametrize(
    ("experiment", "summary"), [("e3", None), ("e5", None), ("e6", None), ("e2", "summary_md")]
)
def test_api_run_returns_the_verdict(experiment, summary):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = api.run(experiment, "synthetic", TINY)
    assert out["verdict_md"].startswith("## Verdict\n\n- On synthetic")
    assert out["verdict"] == v.verdict_sentences(out["verdict_md"]) and out["verdict"]
    if summary:
        lines = out[summary].splitlines()
        assert lines[0].startswith("# ") and lines[2] == "## Verdict"
