"""E1's summary and Kendall tables: mean/sd over seeds, % difference from gt, Kendall's tau,
their Markdown."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.evaluation.agreement import kendall_variants
from debiaseval.experiments.e1.summary import (
    kendall_markdown,
    kendall_table,
    summary_markdown,
    summary_table,
)


def _per_seed():
    rows = []
    values = {  # recommender -> testset -> per-seed values
        "A": {"gt": [0.1, 0.3], "REG": [0.4, 0.6]},
        "B": {"gt": [0.2, 0.2], "REG": [0.1, 0.1]},
        "MF": {"gt": [0.5, 0.7], "REG": [0.3, 0.3]},
    }
    for rec, sets in values.items():
        for testset, vals in sets.items():
            for seed, value in enumerate(vals):
                rows.append(
                    {
                        "recommender": rec,
                        "seed": seed,
                        "testset": testset,
                        "metric": "recall",
                        "k": 10,
                        "value": value,
                    }
                )
    return pd.DataFrame(rows)


def test_summary_table_hand_computed():
    summary = summary_table(_per_seed()).set_index(["recommender", "testset"])
    assert summary.loc[("A", "gt"), "mean"] == pytest.approx(0.2)
    assert summary.loc[("A", "gt"), "sd"] == pytest.approx(np.std([0.1, 0.3], ddof=1))
    assert summary.loc[("A", "REG"), "pct_diff_vs_gt"] == pytest.approx(150.0)
    assert summary.loc[("B", "REG"), "pct_diff_vs_gt"] == pytest.approx(-50.0)
    assert summary.loc[("A", "gt"), "pct_diff_vs_gt"] == pytest.approx(0.0)
    assert (summary["n_seeds"] == 2).all()


def test_kendall_with_and_without_mf():
    kendall = kendall_table(summary_table(_per_seed()), {"MF": ["MF"]}).set_index("with_group")
    assert (kendall["group"] == "MF").all()
    # gt means: A .2, B .2, MF .6 ; REG means: A .5, B .1, MF .3
    # with MF: pairs (A,B) tie on gt, (A,MF) discordant, (B,MF) concordant -> tau_b = 0
    assert kendall.loc[True, "tau"] == pytest.approx(0.0)
    assert kendall.loc[True, "n_recommenders"] == 3
    assert kendall.loc[False, "n_recommenders"] == 2
    assert np.isnan(kendall.loc[False, "tau"])  # A and B tie on gt: tau-b undefined
    # a plain list is the group MF
    pd.testing.assert_frame_equal(
        kendall_table(summary_table(_per_seed()), ["MF"]).set_index("with_group"), kendall
    )


def test_kendall_groups_from_the_config():
    summary = summary_table(_per_seed())
    kendall = kendall_table(summary, {"MF": ["MF"], "AB": ["A", "B"], "NONE": []})
    assert list(dict.fromkeys(kendall["group"])) == ["MF", "AB", "NONE"]
    rows = kendall.set_index(["group", "with_group"])
    # every group's "with" rows rank all three recommenders: tau_b 0 as above
    for group in ("MF", "AB", "NONE"):
        assert rows.loc[(group, True), "tau"] == pytest.approx(0.0)
    # without A and B only MF is left: undefined; without nobody: all three
    assert rows.loc[("AB", False), "n_recommenders"] == 1
    assert np.isnan(rows.loc[("AB", False), "tau"])
    assert rows.loc[("NONE", False), "n_recommenders"] == 3
    labels = [label for label, _ in kendall_variants(kendall)]
    assert labels == ["with MF, AB", "without MF", "without AB"]  # NONE ranks what "with" does
    md = kendall_markdown(kendall, "toy", ["REG"])
    header = next(line for line in md.splitlines() if line.startswith("| testset"))
    assert header == (
        "| testset | tau with MF, AB (n = 3) | p with MF, AB | tau without MF (n = 2) "
        "| p without MF | tau without AB (n = 1) | p without AB |"
    )
    # the default single group keeps the paper's labels
    single = kendall_markdown(kendall_table(summary, {"MF": ["MF"]}), "toy", ["REG"])
    assert "| testset | tau with MF (n = 3) | p with MF | tau without MF (n = 2) |" in single


def test_summary_markdown():
    md = summary_markdown(summary_table(_per_seed()), "toy")
    assert "## recall@10" in md and "0.5000 ± 0.1414 (+150.0%)" in md
    one_seed = summary_table(_per_seed().query("seed == 0"))
    assert "| 0.4000 (+300.0%) |" in summary_markdown(one_seed, "toy")  # no sd for one seed


def test_summary_markdown_shows_the_intervals_when_the_summary_has_them():
    from debiaseval.evaluation.uncertainty import seed_intervals

    per_seed = _per_seed().assign(
        boot_low=lambda f: f["value"] - 0.1, boot_high=lambda f: f["value"] + 0.1
    )
    keys = ["recommender", "testset", "metric", "k"]
    summary = summary_table(per_seed).merge(
        seed_intervals(per_seed, keys, confidence=0.95), on=keys
    )
    md = summary_markdown(summary, "toy")
    assert "t interval over seeds" in md and "±" not in md
    # two seeds: the bootstrap interval over users alone, and the header says why
    assert "| 0.5000 ⟨0.4000, 0.6000⟩ (+150.0%) |" in md
    assert "with fewer than 3 seeds only the bootstrap interval is shown" in md
    # three seeds (0.4, 0.5, 0.6 on A's REG): the t interval on the logit scale,
    # logit(0.5) ± t_{0.975,2} · (0.1/√3) / (0.5 · 0.5) = ±0.99369 -> expit: [0.2702, 0.7298]
    third = per_seed[per_seed["seed"] == 0].assign(seed=2)
    row = (third["recommender"] == "A") & (third["testset"] == "REG")
    third.loc[row, ["value", "boot_low", "boot_high"]] = [0.5, 0.4, 0.6]
    per_seed = pd.concat([per_seed, third], ignore_index=True)
    summary = summary_table(per_seed).merge(
        seed_intervals(per_seed, keys, confidence=0.95), on=keys
    )
    md = summary_markdown(summary, "toy")
    assert "| 0.5000 [0.2702, 0.7298] ⟨0.4000, 0.6000⟩ (+200.0%) |" in md


def test_summary_markdown_compares_true_with_gt_only_per_relevant_item():
    """TRUE (the full matrix) against gt: a % difference at Recall and avgDCG, means over the
    relevant items; none at HitRate, Precision, MAP or NDCG, which depend on how many relevant
    items a sampled test set holds, with the line that says why under those tables only."""
    from debiaseval.experiments.e1.summary import TRUE_NOTE, compared_with_gt

    frames = []
    for metric in ("recall", "avgdcg", "hitrate", "precision", "map", "ndcg"):
        true = _per_seed().query("testset == 'REG'").assign(testset="TRUE")
        frames.append(pd.concat([_per_seed(), true]).assign(metric=metric))
    md = summary_markdown(summary_table(pd.concat(frames, ignore_index=True)), "toy")
    sections = dict(part.split("\n", 1) for part in md.split("\n## ")[1:])
    for metric in ("recall", "avgdcg"):
        row = next(x for x in sections[f"{metric}@10"].splitlines() if x.startswith("| A |"))
        assert (
            row == "| A | 0.2000 ± 0.1414 | 0.5000 ± 0.1414 (+150.0%) | 0.5000 ± 0.1414 (+150.0%) |"
        )
        assert TRUE_NOTE not in sections[f"{metric}@10"]
    for metric in ("hitrate", "precision", "map", "ndcg"):
        row = next(x for x in sections[f"{metric}@10"].splitlines() if x.startswith("| A |"))
        assert row == "| A | 0.2000 ± 0.1414 | 0.5000 ± 0.1414 (+150.0%) | 0.5000 ± 0.1414 |"
        assert sections[f"{metric}@10"].count(TRUE_NOTE) == 1
    assert "another estimand" in TRUE_NOTE
    assert compared_with_gt("REG", "ndcg") and not compared_with_gt("gt", "recall")
    # without a TRUE row, no line about it
    assert TRUE_NOTE not in summary_markdown(summary_table(_per_seed().assign(metric="ndcg")), "t")


def test_a_kendall_table_without_mf_prints_no_mf_columns():
    """Issue 43, case 19: with no MF recommender the table printed "with MF" and "without MF"
    columns, the same ranking twice."""
    per_seed = _per_seed()
    summary = summary_table(per_seed[per_seed["recommender"] != "MF"])
    kendall = kendall_table(summary, {"MF": []})  # the default group, no mf recommender
    assert [label for label, _ in kendall_variants(kendall)] == ["with all"]
    md = kendall_markdown(kendall, "toy", ["REG"])
    header = next(line for line in md.splitlines() if line.startswith("| testset"))
    assert header == "| testset | tau with all (n = 2) | p with all |"
    assert "MF" not in md
