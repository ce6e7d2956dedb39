"""``python -m debiaseval.benchmark`` runs end to end at a tiny size (no timing is asserted)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from debiaseval.benchmarks import main, reference_topk_metrics, script_imports
from debiaseval.data.interactions import rating_matrix
from debiaseval.evaluation.metrics import evaluate_topk, summarise
from debiaseval.recommenders import make_recommender
from debiaseval.recommenders.ranking import top_k


def test_reference_metrics_equal_the_project_path() -> None:
    rng = np.random.default_rng(0)
    n_users, n_items = 80, 50
    keys = rng.choice(n_users * n_items, 1500, replace=False)
    user, item = keys // n_items, keys % n_items
    rating = rng.uniform(1, 5, keys.size)  # continuous scores below: no ties
    frame = pd.DataFrame({"user": user, "item": item, "rating": rating})
    train_df, test_df = frame.iloc[:1000], frame.iloc[1000:]
    train = rating_matrix(train_df, n_users, n_items)
    rel = test_df[test_df["rating"] > 3]
    relevant = sp.csr_matrix(
        (np.ones(len(rel), dtype=bool), (rel["user"], rel["item"])), shape=train.shape
    )
    model = make_recommender("userknn", k=10).fit(train)
    expected = summarise(
        evaluate_topk(
            top_k(model, train, 5),
            test_df,
            [5],
            n_items=n_items,
            metrics=["precision", "recall", "ndcg"],
        )
    )
    got = reference_topk_metrics(model, train, relevant, 5, batch_size=7)
    for metric, value in zip(expected["metric"], expected["value"], strict=True):
        assert got[metric] == pytest.approx(value, rel=1e-12)


@pytest.mark.slow
def test_benchmark_runs_at_a_tiny_size() -> None:
    rows = main(
        [
            "--quick",
            "--users",
            "300",
            "--items",
            "120",
            "--density",
            "0.05",
            "--recommenders",
            "pospop",
            "userknn",
            "--shape",
            "200",
            "150",
            "3000",
            "2000",
            "--knn-grid",
            "2",
            "5",
            "--mf-epochs",
            "1",
            "--batch-recommenders",
            "2",
        ]
    )
    assert all(np.isfinite(v) and v > 0 for v in rows.values())
    for name in (
        "stage fit userknn [s]",
        "scores->P/R/NDCG@10: project / numpy reference",
        "scores->P/R@10: LightFM evaluation / project",
        "train_overlap_mask: before / after",
        "userknn grid: refit per k / one fit",
        "itemknn grid: refit per k / one fit",
        "job: package imports [s]",
        "evaluate: 2 jobs / one batched job",
    ):
        assert name in rows


def test_e4_section_runs_at_a_tiny_size() -> None:
    """``--sections e4``: the reference and the new solver, one ratio per shape, d and loss."""
    rows = main(
        [
            "--sections",
            "e4",
            "--e4-scale",
            "0.05",
            "--e4-factors",
            "4",
            "12",
            "--e4-sweeps",
            "2",
            "--repeat",
            "1",
        ]
    )
    for shape in ("coat", "yahoo-r3"):
        for d in (4, 12):
            for loss in ("squared", "absolute"):
                label = f"e4 {shape} d={d} {loss}"
                assert rows[f"{label}: reference / new"] > 0
                assert rows[f"{label}: objective rel. diff"] < 1e-9


def test_script_imports_are_the_module_level_imports(tmp_path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        '"""Doc."""\n\nimport json\nfrom pathlib import Path\n\n'
        "with open('x') as f:\n    import yaml\n\nprint(json, Path)\n",
        encoding="utf-8",
    )
    assert script_imports(script) == "import json\nfrom pathlib import Path"


@pytest.mark.slow
def test_startup_section_measures_every_workflow_script() -> None:
    rows = main(["--sections", "startup", "--repeat", "1"])
    assert all(np.isfinite(v) for v in rows.values())
    for name in ("e1_intervene", "e2_elicit", "e5_evaluate", "preprocess"):
        assert f"startup: {name} [s]" in rows
        assert f"startup: {name} cpu [s]" in rows


@pytest.mark.slow
def test_scale_section_runs_each_size_in_a_child_at_tiny_sizes(capsys) -> None:
    from debiaseval.benchmarks.scale import scale_shape

    assert scale_shape(20) == (138_493, 26_744, pytest.approx(20e6 / (138_493 * 26_744)))
    assert scale_shape(5)[:2] == (69_246, 13_372)  # ML-20M's aspect and density
    rows = main(
        [
            "--sections",
            "scale",
            "--scale-sizes",
            "0.004,0.002",
            "--scale-e6-users",
            "40",
            "--scale-mf-epochs",
            "1",
        ]
    )
    for size in ("0.002M", "0.004M"):
        assert rows[f"scale {size} peak RSS [GB]"] > 0
        for stage in (
            "generate",
            "E1 tune+rank UserKNN",
            "E1 evaluate",
            "E1 evaluate+estimators",
            "E5 score+URE ItemKNN",
            "E6 KL weights + LOO",
        ):
            assert np.isfinite(rows[f"scale {size} {stage} [s]"])
        assert rows[f"scale {size} estimators / evaluate"] > 0
    assert np.isfinite(rows["scale exponent 0.002M->0.004M total"])
    out = capsys.readouterr().out
    assert "| stage | 0.002M: wall (cpu) [s] | 0.004M: wall (cpu) [s] | exponent 0.002→0.004M" in (
        out
    )
    with pytest.raises(ValueError, match="--scale-recommenders"):
        main(["--sections", "scale", "--scale-recommenders", "Nope"])
    with pytest.raises(ValueError, match="--scale-stages"):
        main(["--sections", "scale", "--scale-stages", "e1,e9"])
    with pytest.raises(ValueError, match="--scale-evaluate-repeat: expected at least 1"):
        main(["--sections", "scale", "--scale-evaluate-repeat", "0"])


def test_scale_best_of_keeps_each_stages_smallest_times() -> None:
    """--scale-evaluate-repeat: a stage run several times keeps its smallest wall and CPU
    times, each on its own, and its largest peak, at its first position."""
    from debiaseval.benchmarks.scale import _best_of

    rows = [
        {"stage": "a", "seconds": 3.0, "cpu_seconds": 2.0, "peak_gb": 1.0},
        {"stage": "b", "seconds": 5.0, "cpu_seconds": 5.0, "peak_gb": 1.0},
        {"stage": "a", "seconds": 2.0, "cpu_seconds": 2.5, "peak_gb": 1.5},
    ]
    assert _best_of(rows) == [
        {"stage": "a", "seconds": 2.0, "cpu_seconds": 2.0, "peak_gb": 1.5},
        {"stage": "b", "seconds": 5.0, "cpu_seconds": 5.0, "peak_gb": 1.0},
    ]


@pytest.mark.slow
def test_scale_section_runs_e1s_stages_alone() -> None:
    rows = main(
        [
            "--sections",
            "scale",
            "--scale-sizes",
            "0.002",
            "--scale-stages",
            "e1",
            "--scale-recommenders",
            "Random,PosPop",
            "--scale-evaluate-repeat",
            "2",
        ]
    )
    stages = {key[len("scale 0.002M ") : -len(" [s]")] for key in rows if key.endswith(" [s]")}
    assert {"E1 evaluate", "E1 evaluate+estimators", "E1 tune+rank PosPop"} <= stages
    assert not any(stage.startswith(("E5", "E6")) for stage in stages)
    assert rows["scale 0.002M estimators / evaluate (cpu)"] > 0
    assert rows["scale 0.002M E1 evaluate / means only (cpu)"] > 0


@pytest.mark.slow
def test_ranking_section_runs_at_a_tiny_size() -> None:
    """``--sections ranking``: the project, the bare product and implicit (when installed),
    on 1 and 2 threads, with the same lists as implicit's, and PosPop's tune+rank."""
    rows = main(
        [
            "--sections",
            "ranking",
            "--ranking-shapes",
            "ML-1M",
            "--ranking-scale",
            "0.05",
            "--repeat",
            "1",
            "--ranking-threads",
            "1",
            "2",
        ]
    )
    for label in ("ML-1M 1 thread", "ML-1M 2 threads"):
        assert rows[f"ranking {label}: debiaseval / product"] > 0
        assert rows[f"ranking {label}: E1 tune+rank PosPop cpu [s]"] > 0
        if f"ranking {label}: implicit cpu [s]" in rows:
            assert rows[f"ranking {label}: lists agree with implicit"] == 1.0


def test_the_command_offers_every_section() -> None:
    """``python -m debiaseval.benchmark`` is the command; the sections live in benchmarks/."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "debiaseval.benchmark", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.startswith("usage: ")
    assert "Stage timings and speed ratios" in run.stdout
    for section in ("stages", "ratios", "batching", "startup", "scale", "e4", "ranking", "knn"):
        assert section in run.stdout.split("--sections", 1)[1].split("\n", 1)[0]
