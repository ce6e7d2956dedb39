"""E3 through the whole workflow on the tiny config: outputs, columns, API parity, --cores."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from test_workflow import TINY, make_workdir, result_bytes, snakemake

from debiaseval.experiments import e3

pytestmark = pytest.mark.slow

ONLY_E3 = ("--config", "experiments=[e3]")


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The tiny config's E3 run with --cores 2 and, in a second folder, with --cores 1."""
    first = make_workdir(tmp_path_factory.mktemp("e3cores2"))
    snakemake(first, "--cores", "2", *ONLY_E3)
    second = make_workdir(tmp_path_factory.mktemp("e3cores1"))
    snakemake(second, "--cores", "1", *ONLY_E3)
    return first, second


def test_outputs_and_api_parity(two_runs):
    workdir, _ = two_runs
    folder = workdir / "results" / "e3" / "synthetic"
    estimates = pd.read_parquet(folder / "estimates.parquet")
    assert list(estimates.columns) == [
        "matrix", "metric", "estimator", "true_value", "mean", "sd", "n_draws"
    ]  # fmt: skip
    assert set(estimates["metric"]) == {"mae", "dcg@10"}
    assert set(estimates["estimator"]) == {"naive", "ips", "snips"}
    assert len(estimates) == 5 * 2 * 3
    by_alpha = pd.read_parquet(folder / "rmse_vs_alpha.parquet")
    assert {"matrix", "metric", "estimator", "alpha", "rmse", "bias", "sd", "n_draws"} <= set(
        by_alpha.columns
    )
    assert sorted(by_alpha["alpha"].unique()) == [0.25, 1.0]
    by_mar = pd.read_parquet(folder / "rmse_vs_mar.parquet")
    assert sorted(by_mar["mar_size"].unique()) == [100, 1000]
    assert (folder / "estimates.md").read_text().startswith("# E3 on synthetic")
    for figure in ("rmse_vs_alpha", "rmse_vs_mar"):
        assert (folder / "figures" / f"{figure}.svg").stat().st_size > 0
    assert (workdir / "logs" / "e3" / "synthetic" / "seed0" / "simulate.log").exists()
    nb = pd.read_parquet(folder / "seed1" / "naive_bayes.parquet")
    assert {"draw", "mar_size", "rating", "propensity", "true_propensity"} <= set(nb.columns)
    assert len(nb) == 5 * 2 * 5  # draws x MAR sizes x rating levels
    assert (workdir / "benchmarks" / "e3" / "synthetic" / "seed1" / "simulate.tsv").exists()

    config = yaml.safe_load(TINY.read_text())
    api = e3.run("synthetic", config)
    pd.testing.assert_frame_equal(api["estimates"], estimates)
    pd.testing.assert_frame_equal(api["rmse_vs_mar"], by_mar)


def test_cores_do_not_change_the_bytes(two_runs):
    first, second = two_runs
    a, b = result_bytes(first), result_bytes(second)
    assert any(path.startswith("results/e3/") for path in a)
    assert a == b
