"""Whole-workflow run of E5 alone on the tiny config: outputs, columns, --cores determinism."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
FOLDER = "results/e5/synthetic"

pytestmark = pytest.mark.slow


def _workdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", path / "Snakefile")
    shutil.copytree(ROOT / "workflow", path / "workflow")
    shutil.copytree(ROOT / "config", path / "config")
    shutil.copy(TINY, path / "tiny.yaml")
    (path / "e5.yaml").write_text("experiments: [e5]\n")
    return path


def _snakemake(workdir: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", *args, "--configfile", "tiny.yaml", "e5.yaml"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, f"snakemake {args} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def _bytes(workdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(workdir)): p.read_bytes()
        for p in sorted((workdir / "results").rglob("*"))
        if p.suffix in {".parquet", ".svg", ".png", ".html", ".md"}
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    first = _workdir(tmp_path_factory.mktemp("e5cores2"))
    _snakemake(first, "--cores", "2")
    second = _workdir(tmp_path_factory.mktemp("e5cores1"))
    _snakemake(second, "--cores", "1")
    return first, second


def test_outputs_and_columns(runs):
    workdir, _ = runs
    est = pd.read_parquet(workdir / FOLDER / "estimates.parquet")
    assert list(est.columns) == [
        "model", "params", "k", "true_recall", "traditional_recall", "ure", "n_seeds",
        "rank_true", "rank_traditional", "rank_ure",
    ]  # fmt: skip
    assert set(est["model"]) == {"Random", "PosPop", "ItemKNN", "WARP", "IPS"}
    assert len(est) == 7 * 2 and set(est["k"]) == {3, 10} and (est["n_seeds"] == 2).all()
    assert {json.loads(p).get("max_sampled") for p in est["params"]} == {None, 1, 10}
    agr = pd.read_parquet(workdir / FOLDER / "agreement.parquet")
    assert list(agr.columns) == [
        "k", "estimator", "reference", "kendall_tau", "pearson_r", "mean_bias", "n_models",
    ]  # fmt: skip
    assert set(agr["estimator"]) == {"traditional", "ure"} and (agr["n_models"] == 7).all()
    exposure = pd.read_parquet(workdir / FOLDER / "seed0/exposure.parquet")
    assert set(exposure["part"]) == {"train", "exposed", "unexposed"}
    assert (exposure.groupby("user")["part"].apply(lambda p: (p == "exposed").sum()) == 10).all()
    per_seed = pd.read_parquet(workdir / FOLDER / "seed1/estimates/WARP.parquet")
    assert set(per_seed["seed"]) == {1}
    assert (workdir / FOLDER / "agreement.md").read_text().startswith("# E5 on synthetic")
    assert (workdir / "logs/e5/synthetic/seed0/evaluate/IPS.log").exists()
    assert (workdir / "benchmarks/e5/synthetic/seed0/evaluate/IPS.tsv").exists()
    for figure in ("correlation", "scatter"):
        assert (workdir / FOLDER / f"figures/{figure}.svg").read_text().lstrip().startswith("<?xml")
    assert (workdir / FOLDER / "tables/estimates.html").exists()


def test_byte_identical_whatever_the_cores(runs):
    a, b = (_bytes(w) for w in runs)
    assert a.keys() == b.keys() and len(a) > 10
    assert [name for name in a if a[name] != b[name]] == []


def test_api_gives_the_workflow_values(runs):
    import yaml

    from debiaseval.experiments.e5 import full_data, run

    config = yaml.safe_load(TINY.read_text())
    out = run(full_data(config["synthetic"]), config["e5"], seeds=2, dataset="synthetic")
    written = pd.read_parquet(runs[0] / FOLDER / "estimates.parquet")
    pd.testing.assert_frame_equal(out["estimates"], written, check_dtype=False)
