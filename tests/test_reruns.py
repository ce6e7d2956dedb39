"""What reruns when (docs/getting-started.md#what-reruns-when): a job's params carry only what
its dataset reads, and its code stamp only the code its step runs, so that a config change
of another dataset's block, or a docstring edit in a module or a script, reruns nothing, and a
code edit in E3's figures or E3's aggregate script reruns E3's figure jobs only."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, snakemake

from debiaseval.workflow.provenance import (
    config_hash,
    dataset_config,
    dataset_record,
    experiment_config,
)

CONFIG = {
    "datasets": ["synthetic", "coat"],
    "synthetic": {"n_users": 60, "seed": 0},
    "semireal": {"seed": 1},
    "semisynthetic": {"alpha": 0.5},
    "sources": {
        "coat": {"path": None},
        "jester5k": {"path": None},
        "yahoo-r3": {"path": None},
    },
    "e1": {"rho": 0.5},
    "e2": {"n_asked": 10},
    "min_users": 2,
}


def test_a_dataset_s_config_leaves_out_the_blocks_and_sources_of_the_others():
    assert dataset_config(CONFIG, "coat") == {
        "datasets": ["synthetic", "coat"],
        "sources": {"coat": {"path": None}},
        "e1": {"rho": 0.5},
        "e2": {"n_asked": 10},
        "min_users": 2,
    }
    synthetic = dataset_config(CONFIG, "synthetic")
    assert synthetic["synthetic"] == CONFIG["synthetic"] and synthetic["sources"] == {}
    semi = dataset_config(CONFIG, "jester5k-semi")  # built from Jester5k's files
    assert semi["semireal"] == {"seed": 1} and semi["sources"] == {"jester5k": {"path": None}}
    assert "synthetic" not in semi and "semisynthetic" not in semi


def test_changing_synthetic_changes_coat_s_record_not():
    changed = {**CONFIG, "synthetic": {"n_users": 99, "seed": 0}}
    for experiment in ("e1", "e2"):
        coat = [experiment_config(c, experiment, "coat") for c in (CONFIG, changed)]
        assert config_hash(coat[0]) == config_hash(coat[1])
        synthetic = [experiment_config(c, experiment, "synthetic") for c in (CONFIG, changed)]
        assert config_hash(synthetic[0]) != config_hash(synthetic[1])
    # without a dataset, the experiment's record keeps every dataset's blocks, as before
    assert experiment_config(CONFIG, "e1")["synthetic"] == CONFIG["synthetic"]
    record = {"experiment": "e1", "config_sha256": "x", "config": experiment_config(CONFIG, "e1")}
    narrowed = dataset_record(record, "coat")
    assert narrowed["config"] == experiment_config(CONFIG, "e1", "coat")
    assert narrowed["config_sha256"] == config_hash(narrowed["config"])
    assert list(narrowed) == list(record)  # the record's keys in their order


def planned(workdir: Path, *args: str) -> dict[str, int]:
    """Rule -> number of jobs ``snakemake -n`` plans in ``workdir`` (none: {})."""
    out = snakemake(workdir, "-n", "--quiet", "rules", *args)
    text = out.stdout + out.stderr
    jobs = {}
    for line in text.split("Job stats:", 1)[-1].splitlines() if "Job stats:" in text else []:
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if match and match.group(1) != "total":
            jobs[match.group(1)] = int(match.group(2))
    return jobs


@pytest.mark.slow
def test_a_docstring_edit_reruns_nothing_and_a_code_edit_only_its_importers(
    tiny_workflow, tmp_path, monkeypatch
):
    workdir = tmp_path / "work"
    shutil.copytree(tiny_workflow, workdir, symlinks=True)  # a finished tiny study
    source = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "debiaseval", source / "debiaseval")
    monkeypatch.setenv("PYTHONPATH", str(source))  # the jobs' and the planner's package
    figures = source / "debiaseval" / "figures" / "e3.py"
    assert planned(workdir) == {}

    text = figures.read_text()
    figures.write_text(text.replace('"""', '"""Edited. ', 1) + "\n# a comment\n")
    assert planned(workdir) == {}

    figures.write_text(figures.read_text() + "\nEDITED = True\n")
    assert planned(workdir) == {"all": 1, "e3_aggregate": 1}


@pytest.mark.slow
def test_a_script_s_docstring_edit_reruns_nothing_and_its_code_edit_its_rule(
    tiny_workflow, tmp_path
):
    """The default profile leaves out Snakemake's code trigger (a script newer than its outputs):
    the code stamp covers the script by its syntax tree."""
    workdir = tmp_path / "work"
    shutil.copytree(tiny_workflow, workdir, symlinks=True)
    script = workdir / "workflow" / "scripts" / "e3_aggregate.py"
    script.touch()  # newer than every output: Snakemake's code trigger would rerun e3_aggregate
    assert planned(workdir) == {}

    script.write_text(script.read_text().replace('"""', '"""Edited. ', 1) + "\n# a comment\n")
    assert planned(workdir) == {}

    script.write_text(script.read_text() + "\nEDITED = True\n")
    assert planned(workdir) == {"all": 1, "e3_aggregate": 1}
