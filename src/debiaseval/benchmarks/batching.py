"""The ``batching`` section of ``python -m debiaseval.benchmark`` (docs/performance.md).

The cost of a job's imports, and N evaluate jobs (one subprocess per recommender, as
the workflow runs them) vs one job evaluating the N recommenders
(:func:`debiaseval.evaluation.testsets.evaluate_recommenders`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from debiaseval.benchmarks.common import ml1m_shaped, ratio
from debiaseval.evaluation.testsets import evaluate_recommenders
from debiaseval.io.files import write_parquet

__all__ = ["run"]


_JOB = """
import json, sys
from debiaseval.evaluation.testsets import evaluate_on_testsets, evaluate_recommenders
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

root, names = sys.argv[1], sys.argv[2:]
with job(f"{root}/{names[0]}.log", 1):
    with open(f"{root}/job.json") as f:
        options = json.load(f)
    train = read_parquet(f"{root}/train.parquet")
    testsets = {
        name: read_parquet(f"{root}/testset_{name}.parquet") for name in options.pop("testsets")
    }
    recs = {name: read_parquet(f"{root}/recs_{name}.parquet") for name in names}
    if len(names) == 1:
        table = evaluate_on_testsets(recs[names[0]], testsets, train, **options)
    else:
        table = evaluate_recommenders(recs, testsets, train, **options)
    write_parquet(table, f"{root}/metrics_{'_'.join(names)}.parquet")
"""

_IMPORTS = (
    "import debiaseval.experiments.e1, debiaseval.io.files, debiaseval.workflow.runtime, "
    "debiaseval.debiasing.interventions, debiaseval.recommenders"
)


def _subprocess_seconds(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    return time.perf_counter() - start


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """Time N evaluate jobs against one batched job; add the import cost and the ratio."""
    n_users, n_items, n_train, n_test = args.shape
    n_recs = args.batch_recommenders
    print(f"\n== batching {n_recs} evaluate jobs at {n_users:,} x {n_items:,}")
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env["OMP_NUM_THREADS"] = str(args.threads)
    train_df, test_df, test_with_train = ml1m_shaped(
        n_users, n_items, n_train, n_test, n_overlap=n_test // 20, seed=1
    )
    rng = np.random.default_rng(1)
    testsets = {"gt": test_with_train}
    testsets |= {f"t{i}": test_df.sample(frac=0.5, random_state=rng) for i in range(6)}
    options = {
        "n_items": n_items,
        "ks": [1, 5, 10],
        "metrics": ["precision", "recall", "map", "ndcg", "hitrate"],
        "positive_threshold": 3.0,
        "drop_train_overlap": False,
    }
    with tempfile.TemporaryDirectory() as root:
        Path(root, "job.json").write_text(
            json.dumps({"testsets": list(testsets), **options}), encoding="utf-8"
        )
        write_parquet(train_df, f"{root}/train.parquet")
        for name, frame in testsets.items():
            write_parquet(frame, f"{root}/testset_{name}.parquet")
        recs = pd.DataFrame(
            {
                "user": np.repeat(np.arange(n_users, dtype=np.int32), 10),
                "item": rng.integers(0, n_items, n_users * 10).astype(np.int32),
                "rank": np.tile(np.arange(1, 11, dtype=np.int16), n_users),
            }
        )  # distinct items per list are not needed for timing
        names = [f"r{i}" for i in range(n_recs)]
        for name in names:
            write_parquet(recs, f"{root}/recs_{name}.parquet")
        start = time.perf_counter()
        evaluate_recommenders({"r": recs}, testsets, train_df, **options)
        work = time.perf_counter() - start
        python = [sys.executable, "-c"]
        bare = min(_subprocess_seconds([*python, "pass"], env) for _ in range(args.repeat))
        imports = min(_subprocess_seconds([*python, _IMPORTS], env) for _ in range(args.repeat))
        if importlib.util.find_spec("snakemake") is not None:  # a workflow job's own preamble
            rows["job: snakemake.script import [s]"] = (
                min(
                    _subprocess_seconds([*python, "import snakemake.script"], env)
                    for _ in range(args.repeat)
                )
                - bare
            )
        separate, batched = np.inf, np.inf
        for _ in range(args.repeat):
            separate = min(
                separate,
                sum(_subprocess_seconds([*python, _JOB, root, name], env) for name in names),
            )
            batched = min(batched, _subprocess_seconds([*python, _JOB, root, *names], env))
    rows["job: interpreter start [s]"] = bare
    rows["job: package imports [s]"] = imports - bare
    rows[f"batching: {n_recs} evaluate jobs [s]"] = separate
    rows[f"batching: one job of {n_recs} recommenders [s]"] = batched
    rows["job: evaluation of one recommender, in process [s]"] = work
    print(
        f"  interpreter start {bare:.2f} s, imports {imports - bare:.2f} s per job; "
        f"evaluation of one recommender {work:.2f} s in process"
    )
    if "job: snakemake.script import [s]" in rows:
        print(
            f"  a workflow job also imports snakemake.script: "
            f"{rows['job: snakemake.script import [s]']:.2f} s"
        )
    print(f"  {n_recs} separate jobs {separate:.2f} s, one batched job {batched:.2f} s")
    ratio(rows, f"evaluate: {n_recs} jobs / one batched job", separate, batched, "speed-up")
