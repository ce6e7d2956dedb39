"""Precomputed lists and exported splits in the whole workflow (tiny synthetic study): the
round trip export -> lists -> evaluation gives a built-in model's own numbers, edits rerun only
what reads the lists, and bad lists stop the run with one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from debiaseval.data.ids import raw_ids, to_internal, to_raw
from debiaseval.data.interactions import rating_matrix
from debiaseval.recommenders import make_recommender
from debiaseval.recommenders.ranking import top_k

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
E1 = Path("results/lists/e1/synthetic")
E5 = Path("results/lists/e5/synthetic")
CONFIG = {
    "experiments": ["e1", "e5"],
    "datasets": ["synthetic"],
    "seeds": 2,
    # one draw for every seed, as a log of one's own is: give_raw_ids rewrites its id tables
    "synthetic": {
        "n_users": 60,
        "n_items": 80,
        "density": 0.1,
        "n_mar": 10,
        "rank": 4,
        "seed": 0,
        "per_seed": False,
    },
    "e1": {
        "ks": [5, 10],
        # the data get raw ids unlike the generator's (give_raw_ids): no exact TRUE row
        "truth": False,
        "tuning": {"points_per_job": 1},
        "recommenders": {
            "Random": {"algorithm": "random"},
            "PosPop": {"algorithm": "pospop"},
            "ItemKNN": {"algorithm": "itemknn", "grid": {"k": [5, 10]}},
        },
    },
    "e5": {
        "ks": [3, 10],
        "exposure": {"train_fraction": 0.2, "n_exposed": 10},
        "models": {"PosPop": {"algorithm": "pospop"}, "ItemKNN": {"algorithm": "itemknn"}},
    },
}
EXTERNAL = {
    "e1": {"Lists": {"algorithm": "external", "recs": "lists/e1/{dataset}/seed{seed}.csv"}},
    "e5": {
        "Full": {"algorithm": "external", "recs": "lists/e5/{dataset}/full{seed}.parquet"},
        "Top10": {"algorithm": "external", "recs": "lists/e5/{dataset}/top10_{seed}.csv"},
    },
}


def _config(with_lists: bool) -> dict:
    config = yaml.safe_load(yaml.safe_dump(CONFIG))
    if with_lists:
        config["e1"]["recommenders"].update(EXTERNAL["e1"])
        config["e5"]["models"].update(EXTERNAL["e5"])
    return config


def raw_lists(recs: pd.DataFrame, folder: Path, seed: int) -> pd.DataFrame:
    """``recs`` (project ids) in the raw ids of ``folder``'s users/items tables, rows shuffled
    (a file from elsewhere need not be sorted): user, item, score."""
    users = pd.read_parquet(folder / "users.parquet")
    items = pd.read_parquet(folder / "items.parquet")
    out = pd.DataFrame(
        {
            "user": to_raw(recs["user"], raw_ids(users, "user", len(users))),
            "item": to_raw(recs["item"], raw_ids(items, "item", len(items))),
            "score": recs["score"].to_numpy(),
        }
    )
    return out.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def e5_lists(workdir: Path, seed: int, depth: int | None) -> pd.DataFrame:
    """ItemKNN (E5's default parameters) trained on the seed's exported E5 training set, its
    top ``depth`` (None: every candidate) in raw ids, as another framework would write it."""
    users = pd.read_parquet(workdir / E5 / "users.parquet")
    items = pd.read_parquet(workdir / E5 / "items.parquet")
    train = pd.read_csv(workdir / E5 / f"export/seed{seed}/train.csv")
    train["user"] = to_internal(train["user"], raw_ids(users, "user", len(users)))
    train["item"] = to_internal(train["item"], raw_ids(items, "item", len(items)))
    matrix = rating_matrix(train, len(users), len(items))
    model = make_recommender("itemknn").fit(matrix, seed=0)
    recs = top_k(model, matrix, depth or len(items))
    return raw_lists(recs, workdir / E5, seed)


def give_raw_ids(workdir: Path) -> None:
    """Preprocess, then give the synthetic data raw ids unlike its project ids, as a log of
    one's own has: E1's users become strings ``u1000, u1007, ...``, its items 3, 8, 13, ...;
    E5's items strings ``v00, v01, ...`` (every later job reads these tables)."""
    tables = [
        workdir / f"results/lists/{e}/synthetic/{t}.parquet"
        for e in ("data", "e5")
        for t in ("users", "items")
    ]
    snakemake(workdir, "--cores", "2", *(str(t.relative_to(workdir)) for t in tables))
    users, items, _, e5_items = (pd.read_parquet(path) for path in tables)
    users["raw_user"] = [f"u{1000 + 7 * i}" for i in users["user"]]
    items["raw_item"] = 5 * items["item"].to_numpy(np.int64) + 3
    e5_items["raw_item"] = [f"v{i:02d}" for i in e5_items["item"]]
    for frame, path in ((users, tables[0]), (items, tables[1]), (e5_items, tables[3])):
        frame.to_parquet(path)


def snakemake(workdir: Path, *args: str, check: bool = True):
    from conftest import snakemake as run

    return run(workdir, *args, check=check, configfiles=("lists.yaml",))


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory) -> Path:
    """Export, run the built-in models, write lists from them, run again with the lists."""
    from conftest import make_workdir

    workdir = make_workdir(tmp_path_factory.mktemp("lists"))
    (workdir / "lists.yaml").write_text(yaml.safe_dump(_config(False)))
    give_raw_ids(workdir)
    exported = snakemake(workdir, "--cores", "2", "export")
    (workdir / "export.out").write_text(exported.stdout + exported.stderr)
    snakemake(workdir, "--cores", "2")
    for seed in (0, 1):
        recs = pd.read_parquet(workdir / E1 / f"seed{seed}/recs/ItemKNN.parquet")
        folder = workdir / "lists/e1/synthetic"
        folder.mkdir(parents=True, exist_ok=True)
        raw_lists(recs, workdir / E1 / "data", seed).to_csv(folder / f"seed{seed}.csv", index=False)
        folder = workdir / "lists/e5/synthetic"
        folder.mkdir(parents=True, exist_ok=True)
        e5_lists(workdir, seed, None).to_parquet(folder / f"full{seed}.parquet")
        e5_lists(workdir, seed, 10).to_csv(folder / f"top10_{seed}.csv", index=False)
    (workdir / "lists.yaml").write_text(yaml.safe_dump(_config(True)))
    run = snakemake(workdir, "--cores", "2")
    (workdir / "lists.out").write_text(run.stdout + run.stderr)
    return workdir


def test_export_has_raw_ids_and_reproduces_each_seeds_split(round_trip):
    workdir = round_trip
    users = pd.read_parquet(workdir / E1 / "data/users.parquet")  # E1's ids (e1_data)
    items = pd.read_parquet(workdir / E1 / "data/items.parquet")
    assert users["raw_user"].iloc[:2].tolist() == ["u1000", "u1007"]  # give_raw_ids
    for seed in (0, 1):
        split = pd.read_parquet(workdir / E1 / f"seed{seed}/split.parquet")
        for part in ("train", "val"):
            folder = workdir / E1 / f"export/seed{seed}"
            parquet = pd.read_parquet(folder / f"{part}.parquet")
            csv = pd.read_csv(folder / f"{part}.csv")
            assert list(parquet.columns) == ["user", "item", "rating"]
            pd.testing.assert_frame_equal(csv, parquet, check_dtype=False)
            assert parquet["user"].str.startswith("u").all() and (parquet["item"] % 5 == 3).all()
            back = pd.DataFrame(
                {
                    "user": to_internal(parquet["user"], raw_ids(users, "user", len(users))),
                    "item": to_internal(parquet["item"], raw_ids(items, "item", len(items))),
                    "rating": parquet["rating"],
                }
            )
            expected = split[split["part"] == part][["user", "item", "rating"]]
            expected = expected.sort_values(["user", "item"]).reset_index(drop=True)
            pd.testing.assert_frame_equal(back, expected, check_dtype=False)
        exposure = pd.read_parquet(workdir / E5 / f"seed{seed}/exposure.parquet")
        train = pd.read_parquet(workdir / E5 / f"export/seed{seed}/train.parquet")
        assert train["item"].str.fullmatch(r"v\d\d").all()
        train["item"] = train["item"].str[1:].astype(np.int32)
        expected = exposure[exposure["part"] == "train"][["user", "item", "rating"]]
        pd.testing.assert_frame_equal(
            train, expected.sort_values(["user", "item"]).reset_index(drop=True), check_dtype=False
        )
    out = (workdir / "export.out").read_text()
    assert "results/lists/e1/synthetic/export/ (seeds 0, 1)" in out
    assert "results/lists/e5/synthetic/export/ (seeds 0, 1)" in out


def test_lists_of_a_built_in_model_give_its_metrics(round_trip):
    workdir = round_trip
    for seed in (0, 1):
        lists = pd.read_parquet(workdir / E1 / f"seed{seed}/recs/Lists.parquet")
        model = pd.read_parquet(workdir / E1 / f"seed{seed}/recs/ItemKNN.parquet")
        pd.testing.assert_frame_equal(lists, model)  # the same lists, the same dtypes
    summary = pd.read_parquet(workdir / E1 / "summary.parquet")
    ours = summary[summary["recommender"] == "ItemKNN"].drop(columns="recommender")
    theirs = summary[summary["recommender"] == "Lists"].drop(columns="recommender")
    # gt and five test sets x 5 metrics x 2 ks, and the two default estimators' recall
    assert len(ours) == 6 * 5 * 2 + 2 * 1 * 2
    pd.testing.assert_frame_equal(ours.reset_index(drop=True), theirs.reset_index(drop=True))
    kendall = pd.read_parquet(workdir / E1 / "kendall.parquet")
    assert kendall["n_recommenders"].max() == 3  # PosPop, ItemKNN and Lists (Random excluded)
    assert "precomputed lists: Lists" in (workdir / E1 / "summary.md").read_text()


def test_e5_lists_give_the_models_estimates_where_defined(round_trip):
    estimates = pd.read_parquet(round_trip / E5 / "estimates.parquet").set_index(["model", "k"])
    columns = ["true_recall", "traditional_recall", "ure"]
    model = estimates.loc["ItemKNN", columns]
    pd.testing.assert_frame_equal(estimates.loc["Full", columns], model)
    top10 = estimates.loc["Top10", columns]
    pd.testing.assert_frame_equal(top10[["true_recall", "ure"]], model[["true_recall", "ure"]])
    # R_u holds 10 items: at K = 3 a top-10 list leaves their order open (NaN); at K = 10 the
    # top 10 of R_u is all of it, whatever the order (the model's value)
    assert np.isnan(top10.loc[3, "traditional_recall"])
    assert top10.loc[10, "traditional_recall"] == model.loc[10, "traditional_recall"] == 1.0
    out = (round_trip / "lists.out").read_text()
    assert "warning: lists/e5/synthetic/top10_0.csv: traditional Recall@3 is undefined" in out
    assert "Recall@10 is undefined" not in out


def test_editing_a_lists_file_reruns_only_what_reads_it(round_trip):
    workdir = round_trip
    assert "Nothing to be done" in snakemake(workdir, "-n", "--cores", "1").stdout
    edited = workdir / "lists/e1/synthetic/seed1.csv"
    pd.read_csv(edited).iloc[::-1].to_csv(edited, index=False)  # the same lists, rows reversed
    jobs = snakemake(workdir, "-n", "--cores", "1").stdout.split("Job stats:")[1]
    jobs = dict(line.split() for line in jobs.split("total")[0].splitlines()[3:] if line.strip())
    assert jobs == {"e1_external": "1", "e1_evaluate": "1", "e1_aggregate": "1", "all": "1"}


def test_bad_lists_stop_the_run_with_one_line(round_trip, tmp_path):
    from conftest import make_workdir

    workdir = make_workdir(tmp_path / "bad")
    shutil.copytree(round_trip / "results", workdir / "results")
    shutil.copytree(round_trip / "lists", workdir / "lists")
    (workdir / "lists.yaml").write_text(yaml.safe_dump(_config(True)))
    # seed 0's lists given for seed 1: made from another training part
    leaked = workdir / "lists/e1/synthetic/seed1.csv"
    shutil.copy(workdir / "lists/e1/synthetic/seed0.csv", leaked)
    result = snakemake(workdir, "--cores", "1", E1 / "summary.parquet", check=False)
    line = next(x for x in result.stderr.splitlines() if x.startswith("ListsError"))
    assert (
        line.startswith(f"ListsError: {leaked.relative_to(workdir)}: ")
        and "are in the user's own training part (leakage" in line
    )
    assert "e.g. user " in line and " item " in line and "on_train_items: drop" in line
    assert not (workdir / E1 / "seed1/recs/Lists.parquet").exists()
    # a missing seed file: the run stops before any job, naming it; export still runs
    leaked.unlink()
    result = snakemake(workdir, "--cores", "1", check=False)
    assert result.returncode == 1
    assert (
        "e1.recommenders.Lists: 1 of 2 lists files are missing: lists/e1/synthetic/seed1.csv"
        in result.stderr
    )
    assert "Exception" not in result.stderr
    assert snakemake(workdir, "--cores", "1", "export").returncode == 0


@pytest.mark.realdata
def test_coat_round_trip_from_the_mirror(tmp_path):
    """On Coat: export, lists written from ItemKNN's own top-k in raw ids (CSV), back in E1
    and E5: the same rows as the model's."""
    import os

    from conftest import make_workdir

    if not os.environ.get("DEBIASEVAL_MIRROR"):
        pytest.skip("DEBIASEVAL_MIRROR not set: no local copy of the Coat dataset")
    workdir = make_workdir(tmp_path / "coat")
    config = {
        "experiments": ["e1", "e5"],
        "datasets": ["coat"],
        "seeds": 1,
        "e1": {
            "recommenders": {
                "PosPop": {"algorithm": "pospop"},
                "ItemKNN": {"algorithm": "itemknn", "grid": {"k": [20, 50]}},
            }
        },
        "e5": {"ks": [5, 10], "models": {"ItemKNN": {"algorithm": "itemknn"}}},
    }
    (workdir / "lists.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir, "--cores", "2", "export")
    train = pd.read_csv(workdir / "results/lists/e1/coat/export/seed0/train.csv")
    assert len(train) == 4176 and list(train.columns) == ["user", "item", "rating"]
    snakemake(workdir, "--cores", "2")
    recs = pd.read_parquet(workdir / "results/lists/e1/coat/seed0/recs/ItemKNN.parquet")
    (workdir / "lists").mkdir()
    e1_ids = workdir / "results/lists/e1/coat/data"  # E1's own id tables (e1_data)
    raw_lists(recs, e1_ids, 0).to_csv(workdir / "lists/e1.csv", index=False)
    exposure = pd.read_parquet(workdir / "results/lists/e5/coat/seed0/exposure.parquet")
    matrix = rating_matrix(exposure[exposure["part"] == "train"], 290, 300)
    every = top_k(make_recommender("itemknn").fit(matrix, seed=0), matrix, 300)
    raw_lists(every, workdir / "results/lists/data/coat", 0).to_csv(
        workdir / "lists/e5.csv", index=False
    )
    config["e1"]["recommenders"]["Lists"] = {"algorithm": "external", "recs": "lists/e1.csv"}
    config["e5"]["models"]["Lists"] = {"algorithm": "external", "recs": "lists/e5.csv"}
    (workdir / "lists.yaml").write_text(yaml.safe_dump(config))
    snakemake(workdir, "--cores", "2")
    summary = pd.read_parquet(workdir / "results/lists/e1/coat/summary.parquet")
    rows = {
        name: summary[summary["recommender"] == name].drop(columns="recommender")
        for name in ("ItemKNN", "Lists")
    }
    assert len(rows["Lists"]) == 6 * 5 + 2  # and the two default estimators' Recall@10
    pd.testing.assert_frame_equal(*(r.reset_index(drop=True) for r in rows.values()))
    estimates = pd.read_parquet(workdir / "results/lists/e5/coat/estimates.parquet")
    values = estimates.set_index(["model", "k"])[["traditional_recall", "ure"]]
    pd.testing.assert_frame_equal(values.loc["Lists"], values.loc["ItemKNN"])
