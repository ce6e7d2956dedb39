"""Flags on degenerate result rows (short lists, few users, E5's degenerate K) and the
top-level seeds reaching every experiment (issue: results a researcher can defend)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from debiaseval.evaluation.flags import FLAGS, join_flags, legend, marked
from debiaseval.evaluation.testsets import evaluate_recommenders
from debiaseval.experiments.e1.summary import summary_flags, summary_markdown, summary_table
from debiaseval.workflow.config import validate_config

ROOT = Path(__file__).resolve().parents[1]

# 4 users × 6 items; every user has one training item and two relevant test items
TRAIN = pd.DataFrame({"user": [0, 1, 2, 3], "item": [0, 1, 2, 3], "rating": 5.0})
TEST = pd.DataFrame(
    {
        "user": [0, 0, 1, 1, 2, 2, 3, 3],
        "item": [4, 5, 4, 5, 4, 5, 4, 5],
        "rating": 5.0,
    }
)


def _lists(lengths: list[int]) -> pd.DataFrame:
    """Each user's list: their candidate items 5, 4, ... in that order, cut at a length."""
    rows = []
    for user, length in enumerate(lengths):
        items = [i for i in (5, 4, 3, 2, 1, 0) if i != user][:length]
        rows += [(user, item, rank) for rank, item in enumerate(items, start=1)]
    frame = pd.DataFrame(rows, columns=["user", "item", "rank"])
    return frame.assign(score=-frame["rank"].astype(float))


def _per_seed(recs: dict[str, pd.DataFrame], seeds=(0, 1)) -> pd.DataFrame:
    tables = []
    for seed in seeds:
        table = evaluate_recommenders(
            recs,
            {"gt": TEST},
            TRAIN,
            n_items=6,
            ks=[1, 3],
            metrics=["recall"],
            positive_threshold=3.0,
            drop_train_overlap=False,
        )
        table.insert(1, "seed", seed)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def test_join_flags_orders_codes_and_refuses_unknown_ones():
    got = join_flags({"few_users": [True, False, True], "short_lists": [True, False, False]})
    assert list(got) == ["short_lists,few_users", "", "few_users"]
    with pytest.raises(ValueError, match="unknown flag"):
        join_flags({"typo": [True]})
    assert marked([0.5, "x"], ["short_lists", ""]) == [f"0.5 {FLAGS['short_lists'][0]}", "x"]
    assert legend(["", ""]) == ""
    assert "`few_users`" in legend(["few_users"]) and "`short_lists`" not in legend(["few_users"])


def test_rows_on_short_lists_are_flagged_and_marked():
    """A plugin or an external file whose lists hold fewer than the largest k items: the
    rows of that recommender at that k carry short_lists, in Parquet and Markdown."""
    recs = {"Full": _lists([5, 5, 5, 5]), "Short": _lists([5, 2, 5, 5])}
    per_seed = _per_seed(recs)
    got = per_seed.set_index(["recommender", "k"])["n_short_lists"]
    assert got[("Short", 3)].tolist() == [1, 1] and got[("Short", 1)].tolist() == [0, 0]
    assert (got["Full"] == 0).all()
    summary = summary_flags(summary_table(per_seed), per_seed, min_users=1)
    flags = summary.set_index(["recommender", "k"])["flags"]
    assert flags[("Short", 3)] == "short_lists"
    assert flags[("Short", 1)] == flags[("Full", 3)] == flags[("Full", 1)] == ""
    text = summary_markdown(summary, "toy")
    mark = FLAGS["short_lists"][0]
    at_3 = text.split("## recall@3")[1]
    assert f"| Short | 1.0000 ± 0.0000 {mark} |" in at_3
    assert f"{mark} `short_lists`" in at_3
    assert mark not in text.split("## recall@3")[0]


def test_rows_over_fewer_users_than_min_users_are_flagged():
    per_seed = _per_seed({"Full": _lists([5, 5, 5, 5])})
    summary = summary_table(per_seed)
    assert (summary_flags(summary, per_seed, min_users=4)["flags"] == "").all()
    assert (summary_flags(summary, per_seed, min_users=5)["flags"] == "few_users").all()
    # one seed short of users is enough
    fewer = per_seed.assign(n_users=np.where(per_seed["seed"] == 1, 3, 4))
    assert (summary_flags(summary, fewer, min_users=4)["flags"] == "few_users").all()


def _as_snakemake_merges(own: dict) -> dict:
    from snakemake.utils import update_config

    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    update_config(config, own)
    return config


def test_top_level_seeds_reach_every_experiment_that_leaves_its_own_null():
    """A user's config file with `seeds: 3`, merged into config/config.yaml as Snakemake
    merges it, runs every experiment 3 times, E2 and E6 included."""
    config = validate_config(_as_snakemake_merges({"seeds": 3}))
    for name in ("e1", "e2", "e3", "e4", "e5", "e6"):
        assert config[name]["seeds"] == 3, name
    own = validate_config(_as_snakemake_merges({"seeds": 3, "e2": {"seeds": 1}}))
    assert own["e2"]["seeds"] == 1 and own["e6"]["seeds"] == 3


# --------------------------------------------------------------------------- E5


@pytest.fixture(scope="module")
def e5_run():
    from debiaseval.api import run_e5 as run
    from debiaseval.experiments.e5 import full_data

    full = full_data({"n_users": 60, "n_items": 80, "seed": 3})
    block = {
        "ks": [3, 10],
        "exposure": {"train_fraction": 0.2, "n_exposed": 10, "strength": 1.0},
        "models": {"random": {"algorithm": "random"}, "pospop": {"algorithm": "pospop"}},
    }
    return run(full, {"e5": block, "min_users": 10}, seeds=1)


def test_e5_degenerate_k_is_flagged_and_its_nan_tau_says_why(e5_run):
    """10 random items per user: at K = 10 the traditional Recall@K ranks every one of them,
    so it is the same for Random and PosPop; the rows say so, and so does the NaN tau."""
    from debiaseval.experiments.e5.tables import agreement_markdown, estimates_markdown

    per_seed, est, agr = e5_run["per_seed"], e5_run["estimates"], e5_run["agreement"]
    at = per_seed.set_index("k")
    assert (at.loc[10, "n_users_k_ge_exposed"] == at.loc[10, "n_users_exposed"]).all()
    assert (at.loc[3, "n_users_k_ge_exposed"] == 0).all()
    trad = est.set_index(["k", "model"])["traditional_recall"]
    assert trad[(10, "random")] == pytest.approx(trad[(10, "pospop")])
    assert (est.loc[est["k"] == 10, "flags"] == "degenerate_k").all()
    assert (est.loc[est["k"] == 3, "flags"] == "").all()
    row = agr[(agr["k"] == 10) & (agr["estimator"] == "traditional")].iloc[0]
    assert np.isnan(row["kendall_tau"]) and np.isnan(row["pearson_r"])
    assert row["flags"] == "degenerate_k,constant"
    assert (agr.loc[agr["kendall_tau"].isna(), "flags"] != "").all()
    assert (agr.loc[agr["estimator"] == "ure", "flags"] == "").all()
    mark = FLAGS["degenerate_k"][0]
    at_10 = estimates_markdown(est, "toy").split("## K = 10")[1]
    assert f"| random {mark} |" in at_10 and f"{mark} `degenerate_k`" in at_10
    assert mark not in estimates_markdown(est, "toy").split("## K = 10")[0]
    text = agreement_markdown(agr, "toy")
    assert f"traditional {mark}{FLAGS['constant'][0]}" in text and "`constant`" in text


def test_e5_few_users_and_few_models(e5_run):
    from debiaseval.experiments.e5.tables import agreement_table, estimates_table

    per_seed = e5_run["per_seed"]
    flags = estimates_table(per_seed, min_users=10_000)["flags"]
    assert flags.str.split(",").map(lambda codes: "few_users" in codes).all()
    one = estimates_table(per_seed[per_seed["model"] == "pospop"])
    agr = agreement_table(one)
    assert agr["kendall_tau"].isna().all() and (agr["flags"].str.endswith("few_models")).all()


def test_e1_lists_made_elsewhere_shorter_than_k_are_flagged_in_the_summary():
    """Lists of 10 items, minus the user's training items (dropped): shorter than k = 10 for
    many users. Their rows are flagged and marked; PosPop's full lists are not."""
    from debiaseval import api

    n_users, n_items = 60, 80
    lists = pd.DataFrame(
        {
            "user": np.repeat(np.arange(n_users), 10),
            "item": np.tile(np.arange(10), n_users),
            "rank": np.tile(np.arange(1, 11), n_users),
        }
    )
    config = {
        "synthetic": {"n_users": n_users, "n_items": n_items},
        "min_users": 1,
        "e1": {
            "ks": [5, 10],
            "common_users_items": False,  # keep the ids 0..59, 0..79
            "recommenders": {"PosPop": {"algorithm": "pospop"}},
        },
    }
    out = api.evaluate_lists(
        "e1", "synthetic", {"Ext": {0: lists}}, config, ids="internal", on_train_items="drop"
    )
    summary = out["summary"]
    short = summary["flags"].str.split(",").map(lambda codes: "short_lists" in codes)
    flags = short.groupby([summary["recommender"], summary["k"]]).agg(set)
    assert flags[("Ext", 10)] == {True}
    assert flags[("PosPop", 10)] == flags[("PosPop", 5)] == flags[("Ext", 5)] == {False}
    assert FLAGS["short_lists"][0] in out["summary_md"].split("## recall@10")[1]
