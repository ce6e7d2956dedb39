"""A plugin recommender in the whole workflow: imported by the jobs from the working directory,
rows identical to the built-in it re-implements; a code edit of the plugin or of a helper module
of one's own that it imports reruns its jobs only, an edit of comments or docstrings nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import make_workdir
from test_plugins import MY_POP

from debiaseval.recommenders.registry import PLUGIN_PATHS_ENV

pytestmark = pytest.mark.slow

CONFIG = {
    "experiments": ["e1", "e5", "e2"],
    "datasets": ["synthetic"],
    "seeds": 2,
    "synthetic": {"n_users": 60, "n_items": 80, "density": 0.1, "n_mar": 10, "rank": 4, "seed": 0},
    "e1": {
        "ks": [5, 10],
        "testsets": {"REG": {"strategy": "reg"}, "WTD": {"strategy": "wtd"}},
        "recommenders": {
            "PosPop": {"algorithm": "pospop"},
            "Mine": {"algorithm": "mymodels:MyPop"},
            "ItemKNN": {"algorithm": "itemknn", "grid": {"k": [5]}},
        },
    },
    "e5": {
        "ks": [5],
        "exposure": {"train_fraction": 0.2, "n_exposed": 10},
        "models": {"pospop": {"algorithm": "pospop"}, "mine": {"algorithm": "mymodels:MyPop"}},
    },
    "e2": {
        "seeds": 1,
        "n_asked": 10,
        "strategies": ["RND", "HP"],
        "mf": {"algorithm": "mymodels:MyPop"},
    },
}

# MY_POP with its counts from a helper package of one's own (mylib), next to the plugin.
PLUGIN = MY_POP.replace(
    "import numpy as np\n", "import numpy as np\n\nfrom mylib.counting import positive_of\n"
).replace(
    "positive = (train.data > self.positive_threshold).astype(np.float64)",
    "positive = positive_of(train, self.positive_threshold)",
)
HELPERS = {
    "mylib/__init__.py": '"""Helpers of my own."""\n',
    "mylib/counting.py": (
        "import numpy as np\n\n\n"
        "def positive_of(train, threshold):\n"
        '    """1.0 for each positive training rating, else 0.0."""\n'
        "    return (train.data > threshold).astype(np.float64)\n"
    ),
}

# The jobs that use the plugin, by rule: E1's tune of Mine per seed (its grid is one chunk: one
# job trains and selects it; then evaluate, truth and aggregate, whose inputs change), E5's
# evaluate of mine per seed (then aggregate), and every E2 job that trains E2's model (train,
# and elicit and evaluate of the seed's strategies; then aggregate).
PLUGIN_JOBS = {
    "e1_tune": 2,
    "e1_evaluate": 2,
    "e1_truth": 2,
    "e1_aggregate": 1,
    "e5_evaluate": 2,
    "e5_aggregate": 1,
    "e2_train": 1,
    "e2_elicit": 1,
    "e2_evaluate": 1,
    "e2_aggregate": 1,
    "all": 1,
}


def snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "plugins.yaml", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
        # plugin folders that in-process tests added must not reach this run
        env={k: v for k, v in os.environ.items() if k != PLUGIN_PATHS_ENV},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {args} failed:\n{result.stdout}\n{result.stderr}")
    return result


def job_counts(dry_run: str) -> dict[str, int]:
    """The dry run's "Job stats" table: rule -> number of jobs."""
    table = dry_run.split("Job stats:", 1)[1].split("total", 1)[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def jobs(dry_run: str) -> list[tuple[str, str, str]]:
    """(rule, reason, wildcards) of every job a dry run lists."""
    out = []
    for block in re.split(r"^rule ", dry_run, flags=re.M)[1:]:
        rule = block.split(":", 1)[0]
        reason = re.search(r"^\s+reason: (.*)$", block, re.M)
        wildcards = re.search(r"^\s+wildcards: (.*)$", block, re.M)
        out.append(
            (rule, reason.group(1) if reason else "", wildcards.group(1) if wildcards else "")
        )
    return out


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory) -> Path:
    workdir = make_workdir(tmp_path_factory.mktemp("plugin") / "run")
    (workdir / "plugins.yaml").write_text(yaml.safe_dump(CONFIG))
    (workdir / "mymodels.py").write_text(PLUGIN)  # next to the config: plugin_paths ["."]
    for name, text in HELPERS.items():
        (workdir / name).parent.mkdir(exist_ok=True)
        (workdir / name).write_text(text)
    snakemake(workdir, "--cores", "2")
    return workdir


def test_a_plugin_gives_the_builtin_rows_in_the_workflow(plugin_run):
    summary = pd.read_parquet(plugin_run / "results/plugins/e1/synthetic/summary.parquet")
    mine = summary[summary["recommender"] == "Mine"].drop(columns="recommender")
    builtin = summary[summary["recommender"] == "PosPop"].drop(columns="recommender")
    # gt, REG, WTD and synthetic's exact TRUE x ks x metrics, the two default estimators' recall
    assert len(mine) == 4 * 2 * 5 + 2 * 2
    pd.testing.assert_frame_equal(mine.reset_index(drop=True), builtin.reset_index(drop=True))
    estimates = pd.read_parquet(plugin_run / "results/plugins/e5/synthetic/estimates.parquet")
    columns = ["k", "true_recall", "traditional_recall", "ure"]
    pd.testing.assert_frame_equal(
        estimates.loc[estimates["model"] == "mine", columns].reset_index(drop=True),
        estimates.loc[estimates["model"] == "pospop", columns].reset_index(drop=True),
    )
    assert (plugin_run / "results/plugins/e2/synthetic/summary.parquet").is_file()
    kendall = pd.read_parquet(plugin_run / "results/plugins/e1/synthetic/kendall.parquet")
    assert kendall["n_recommenders"].max() == 3


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_comment_and_docstring_edits_of_the_plugin_and_its_helper_rerun_nothing(
    plugin_run, tmp_path
):
    workdir = tmp_path / "commented"
    shutil.copytree(plugin_run, workdir, symlinks=True)  # results and Snakemake's records
    edit(workdir / "mymodels.py", "class MyPop", "# a comment\n\n\nclass MyPop")
    edit(workdir / "mymodels.py", '"""PosPop written again', '"""Popularity, written again')
    edit(workdir / "mylib/counting.py", "    return", "    # a comment\n\n    return")
    edit(workdir / "mylib/counting.py", '"""1.0 for each', '"""One for each')
    assert "Nothing to be done" in snakemake(workdir, "-n", "--cores", "1").stdout


def test_editing_a_helper_of_the_plugin_reruns_its_jobs_and_only_those(plugin_run, tmp_path):
    workdir = tmp_path / "edited"
    shutil.copytree(plugin_run, workdir, symlinks=True)  # results and Snakemake's records
    assert "Nothing to be done" in snakemake(workdir, "-n", "--cores", "1").stdout
    edit(workdir / "mylib/counting.py", "(train.data > threshold)", "(threshold < train.data)")
    dry_run = snakemake(workdir, "-n", "--cores", "1").stdout
    assert job_counts(dry_run) == PLUGIN_JOBS
    listed = jobs(dry_run)
    rerun = {(rule, wildcards) for rule, _, wildcards in listed}
    seeds = (0, 1)
    assert {(r, w) for r, w in rerun if r in ("e1_tune", "e5_evaluate")} == {
        *(("e1_tune", f"dataset=synthetic, seed={s}, recommender=Mine") for s in seeds),
        *(("e5_evaluate", f"dataset=synthetic, seed={s}, model=mine") for s in seeds),
    }
    # the first jobs of each chain rerun for their params (the plugin's hash), the rest follow
    by_params = {(r, w) for r, reason, w in listed if reason.startswith("Params have changed")}
    assert by_params == {
        *(("e1_tune", f"dataset=synthetic, seed={s}, recommender=Mine") for s in seeds),
        *(("e5_evaluate", f"dataset=synthetic, seed={s}, model=mine") for s in seeds),
        ("e2_train", "dataset=synthetic, seed=0"),
    }


def test_a_missing_plugin_stops_before_any_job_with_one_line(plugin_run, tmp_path):
    workdir = tmp_path / "missing"
    workdir.mkdir()
    for name in ("Snakefile", "workflow", "config", "profiles", "plugins.yaml"):
        source = plugin_run / name
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, workdir / name)
    result = snakemake(workdir, "-n", "--cores", "1", check=False)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "config error" in line]
    assert len(lines) == 1 and lines[0].startswith(
        "config error at 'e1.recommenders.Mine.algorithm': cannot import 'mymodels:MyPop': "
        "No module named 'mymodels' (looked in the installed packages and in the plugin folders: "
    ), lines
    assert lines[0].endswith(
        "put mymodels.py in one of them, or its folder in the config key plugin_paths"
    )
    assert not (workdir / "results").exists()
