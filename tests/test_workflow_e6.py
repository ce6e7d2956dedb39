"""Whole-workflow run of E6 on the tiny config: outputs, columns, byte-identity across --cores."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "configs" / "tiny.yaml"

pytestmark = pytest.mark.slow


def run_e6(workdir: Path, cores: int) -> str:
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", workdir / "Snakefile")
    shutil.copytree(ROOT / "workflow", workdir / "workflow")
    shutil.copytree(ROOT / "config", workdir / "config")
    shutil.copy(TINY, workdir / "tiny.yaml")
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "tiny.yaml",
         "--config", "experiments=[e6]", "--cores", str(cores)],
        cwd=workdir, capture_output=True, text=True, timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},  # this checkout's package
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    first = tmp_path_factory.mktemp("e6cores2")
    (first / "run.out").write_text(run_e6(first, 2))
    second = tmp_path_factory.mktemp("e6cores1")
    run_e6(second, 1)
    return first, second


def test_outputs_and_columns(two_runs) -> None:
    workdir = two_runs[0]
    folder = workdir / "results/e6/synthetic"
    scores = pd.read_parquet(folder / "scores.parquet")
    assert list(scores.columns) == [
        "seed", "t", "recommender", "weighting", "p", "score", "ci_low", "ci_high", "kl_divergence",
    ]  # fmt: skip
    assert set(scores["seed"]) == {0, 1} and set(scores["t"]) == {0, 1, 2}
    assert set(scores["recommender"]) == {"g1", "g2", "cosine_cf", "naive_cf"}
    assert set(zip(scores["weighting"], scores["p"], strict=True)) == {
        ("none", 0), ("kl", 10), ("kl", 80),
    }  # fmt: skip
    assert scores["score"].between(0, 1).all()
    weights = pd.read_parquet(folder / "weights.parquet")
    assert list(weights.columns) == ["seed", "t", "p", "item", "weight"]
    assert (weights["weight"] != 1).all() and (weights["weight"] > 0).all()
    snapshots = pd.read_parquet(folder / "snapshots.parquet")
    assert len(snapshots) == 2 * 3
    assert (folder / "scores.md").read_text().startswith("# E6 on synthetic")
    for name in ("seed0/scores.parquet", "seed1/lists.parquet", "tables/scores.html"):
        assert (folder / name).exists()
    assert (folder / "figures/scores.svg").read_text().lstrip().startswith("<?xml")
    assert (workdir / "logs/e6/synthetic/seed0/evaluate.log").exists()
    assert (workdir / "benchmarks/e6/synthetic/seed1/evaluate.tsv").exists()
    assert "E6 on synthetic: results/e6/synthetic/scores.md" in (workdir / "run.out").read_text()


def test_byte_identical_whatever_the_cores(two_runs) -> None:
    first, second = two_runs
    files = [
        p.relative_to(first)
        for p in sorted((first / "results/e6").rglob("*"))
        if p.suffix in {".parquet", ".svg", ".png", ".html", ".md"}
    ]
    assert len(files) >= 14
    assert [f for f in files if (first / f).read_bytes() != (second / f).read_bytes()] == []
