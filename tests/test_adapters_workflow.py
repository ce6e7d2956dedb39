"""The adapters in the whole workflow: named by their entry-point short names in
e1.recommenders, tuned (implicit's epochs early-stopped), evaluated and summarised, with the
same numbers as the Python API gives for the same config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import make_workdir

from debiaseval import api

pytestmark = pytest.mark.slow
pytest.importorskip("implicit", reason="the implicit extra is not installed")
pytest.importorskip("cornac", reason="the cornac extra is not installed")

CONFIG = {
    "experiments": ["e1"],
    "datasets": ["synthetic"],
    "seeds": 1,
    "synthetic": {"n_users": 60, "n_items": 80, "density": 0.1, "n_mar": 10, "rank": 4, "seed": 0},
    "e1": {
        "ks": [5, 10],
        "testsets": {"REG": {"strategy": "reg"}},
        "tuning": {"early_stopping": {"max_epochs": 10, "eval_every": 2}},
        "recommenders": {
            "PosPop": {"algorithm": "pospop"},
            "ALS": {
                "algorithm": "implicit_als",
                "params": {"factors": 4},
                "grid": {"alpha": [0, 5]},
            },
            "BPR": {"algorithm": "implicit_bpr", "params": {"factors": 4, "learning_rate": 0.1}},
            "EASE": {"algorithm": "cornac_ease", "grid": {"regularization": [10.0, 100.0]}},
            "HPF": {"algorithm": "cornac_hpf", "params": {"factors": 4, "iterations": 20}},
        },
        "kendall_groups": {"MF": ["ALS", "BPR", "HPF"]},
    },
}
ADAPTED = ["ALS", "BPR", "EASE", "HPF"]


@pytest.fixture(scope="module")
def adapter_run(tmp_path_factory) -> Path:
    workdir = make_workdir(tmp_path_factory.mktemp("adapters") / "run")
    (workdir / "adapters.yaml").write_text(yaml.safe_dump(CONFIG))
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "adapters.yaml", "--cores", "2"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return workdir


def test_adapters_run_in_the_workflow_as_the_api_runs_them(adapter_run):
    results = adapter_run / "results/adapters/e1/synthetic"
    summary = pd.read_parquet(results / "summary.parquet")
    assert set(summary["recommender"]) == {"PosPop", *ADAPTED}
    # gt, REG and synthetic's exact TRUE x ks x metrics, and the two default estimators' recall
    assert len(summary[summary["recommender"] == "ALS"]) == 3 * 2 * 5 + 2 * 2
    for name in ("ALS", "BPR"):  # implicit's models train by epochs: early-stopped
        tuning = pd.read_parquet(results / f"seed0/tuning/{name}.parquet")
        assert set(tuning["epochs"]) <= {2, 4, 6, 8, 10} and tuning["selected"].sum() == 1
    assert set(pd.read_parquet(results / "seed0/tuning/EASE.parquet")["epochs"]) == {0}
    kendall = pd.read_parquet(results / "kendall.parquet")
    assert set(kendall["group"]) == {"MF"}
    out = api.run("e1", "synthetic", CONFIG)
    pd.testing.assert_frame_equal(
        summary.reset_index(drop=True), out["summary"].reset_index(drop=True)
    )
    assert "| ALS |" in (results / "summary.md").read_text()
