"""The report never pairs results with another run's config; its front page carries the
results' provenance (docs/report.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from debiaseval.workflow.config import validate_config
from debiaseval.workflow.provenance import (
    config_hash,
    experiment_config,
    gather,
    read_provenance,
    write_markdown,
    write_record,
    write_table,
)
from debiaseval.workflow.report import (
    config_mismatch,
    front_page,
    report_requested,
)

ROOT = Path(__file__).resolve().parents[1]
TINY = yaml.safe_load((ROOT / "tests" / "configs" / "tiny.yaml").read_text())


@pytest.fixture(scope="module")
def configs() -> tuple[dict, dict]:
    """Config A (tiny) and config B (tiny with another E3 alpha), resolved."""
    a = validate_config(TINY)
    b = validate_config({**TINY, "e3": {**TINY.get("e3", {}), "alpha": 1.0}})
    return a, b


def _results(folder: Path, config: dict, experiment: str = "e3") -> Path:
    """A summary Parquet, Markdown and provenance.json made under ``config``, as an aggregate
    job makes them (:func:`record_run`: the same record in all three)."""
    record = {**gather(config, experiment, dataset="synthetic"), "dataset": "synthetic", "data": {}}
    table = folder / "estimates.parquet"
    write_table(pd.DataFrame({"metric": ["mse"], "mean": [0.5]}), table, record)
    write_markdown(
        "# E3 on synthetic\n\n| metric | mean |\n|---|---|\n| mse | 0.5 |\n\nmore\n",
        folder / "estimates.md",
        record,
    )
    write_record(record, folder / "provenance.json")
    return table


def test_report_requested_only_for_a_report_of_existing_results() -> None:
    assert report_requested(["snakemake", "--report", "r.html"])
    assert report_requested(["snakemake", "--report=r.html", "--configfile", "a.yaml"])
    assert not report_requested(["snakemake", "--cores", "2"])
    assert not report_requested(["snakemake", "--report", "r.html", "--report-after-run"])


def test_results_of_the_same_config_pass(tmp_path: Path, configs) -> None:
    a, _ = configs
    table = _results(tmp_path, a)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(a, sort_keys=False))
    assert (
        config_mismatch(a, [table, tmp_path / "missing.parquet"], tmp_path / "config.yaml") is None
    )


def test_results_of_another_config_are_refused_in_one_line_naming_both_hashes(
    tmp_path: Path, configs
) -> None:
    a, b = configs
    table = _results(tmp_path, b)
    line = config_mismatch(a, [table])
    ha = config_hash(experiment_config(a, "e3", "synthetic"))[:16]
    hb = config_hash(experiment_config(b, "e3", "synthetic"))[:16]
    assert ha != hb
    assert line is not None and "\n" not in line
    assert hb in line and ha in line and str(tmp_path / "provenance.json") in line


def test_another_experiment_s_change_does_not_refuse(tmp_path: Path, configs) -> None:
    a, _ = configs
    table = _results(tmp_path, a)
    other = {**a, "e2": {**a["e2"], "n_asked": a["e2"]["n_asked"] + 1}}
    assert config_mismatch(other, [table]) is None


def test_a_configuration_page_of_another_run_is_refused(tmp_path: Path, configs) -> None:
    a, b = configs
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(b, sort_keys=False))
    line = config_mismatch(a, [], tmp_path / "config.yaml")
    assert line is not None and "\n" not in line
    assert config_hash(a)[:16] in line and config_hash(b)[:16] in line
    assert f"--configfile {tmp_path / 'config.yaml'}" in line


def test_results_without_a_record_are_refused(tmp_path: Path, configs) -> None:
    """Even beside a table that carries its record: the second audit re-saved summary.parquet
    without one, and the report showed it."""
    from debiaseval.io.files import write_parquet

    table = _results(tmp_path, configs[0])
    assert config_mismatch(configs[0], [table]) is None
    write_parquet(pd.DataFrame({"x": [1]}), tmp_path / "summary.parquet")
    line = config_mismatch(configs[0], [table, tmp_path / "summary.parquet"])
    assert line == (
        f"debiaseval: no report: {tmp_path / 'summary.parquet'} carries no provenance record "
        "(re-saved without it, or written before debiaseval recorded one); rerun the job that "
        f"writes it: snakemake --forcerun {tmp_path / 'summary.parquet'}"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{\n  "config": ', "is not a JSON record (Expecting value: line 2 column 13"),
        ("[1, 2]\n", "is not a JSON record (an object)"),
        (b"\xff\xfe", "is not a JSON record ("),
    ],
)
def test_a_damaged_provenance_json_is_refused_in_one_line(
    tmp_path: Path, configs, text, reason
) -> None:
    table = _results(tmp_path, configs[0])
    record = tmp_path / "provenance.json"
    if isinstance(text, bytes):
        record.write_bytes(text)
    else:
        record.write_text(text)
    line = config_mismatch(configs[0], [table])
    assert line is not None and "\n" not in line
    assert line.startswith(f"debiaseval: no report: {record} {reason}")
    assert line.endswith(f"rerun the job that writes both: snakemake --forcerun {table}")


def test_a_tampered_provenance_json_is_refused_before_the_front_page_shows_it(
    tmp_path: Path, configs
) -> None:
    table = _results(tmp_path, configs[0])
    record = tmp_path / "provenance.json"
    shown = json.loads(record.read_text())
    # its run fields differ from run to run: never compared
    record.write_text(json.dumps({**shown, "date": "1999-01-01T00:00:00+00:00", "commit": "x"}))
    assert config_mismatch(configs[0], [table]) is None
    record.write_text(json.dumps({**shown, "debiaseval": "9.9.9", "seeds": 99}))
    line = config_mismatch(configs[0], [table])
    assert line == (
        f"debiaseval: no report: {record} differs from the record {table} carries (in "
        "'debiaseval', 'seeds'): edited, or left by another run; rerun the job that writes "
        f"both: snakemake --forcerun {table}"
    )


def test_the_front_page_shows_the_provenance(tmp_path: Path, configs) -> None:
    a, _ = configs
    _results(tmp_path, a)
    page = front_page([("e3", "synthetic", tmp_path), ("e3", "other", tmp_path / "no")])
    record = json.loads((tmp_path / "provenance.json").read_text())
    assert config_hash(experiment_config(a, "e3", "synthetic"))[:16] in page
    assert record["date"] in page and (record["commit"] or "not a checkout")[:12] in page
    assert "<h3>E3 on synthetic</h3>" in page and "E3 on other" not in page
    assert "No results yet" in front_page([])


@pytest.mark.slow
def test_the_report_of_a_after_b_shows_a_s_hash_or_refuses(tmp_path: Path) -> None:
    """Run config A, then config B (another E3 alpha), then ask for A's report: it shows A's
    config hash, never B's (each study has its own folder). When a config C sends its results
    into A's study folder (``study: a``), A's report refuses in one line naming both hashes
    and writes nothing."""
    from conftest import make_workdir, snakemake

    workdir = make_workdir(tmp_path / "ab")
    (workdir / "a.yaml").write_text("experiments: [e3]\n")
    (workdir / "b.yaml").write_text("experiments: [e3]\ne3: {alpha: 1.0}\n")
    (workdir / "c.yaml").write_text("study: a\nexperiments: [e3]\ne3: {alpha: 1.0}\n")
    a_files, b_files, c_files = (("tiny.yaml", name) for name in ("a.yaml", "b.yaml", "c.yaml"))
    summary_a = workdir / "results/a/e3/synthetic/estimates.parquet"
    summary_b = workdir / "results/b/e3/synthetic/estimates.parquet"
    snakemake(workdir, "--cores", "2", configfiles=a_files)
    hash_a = read_provenance(summary_a)["config_sha256"][:16]
    snakemake(workdir, "--cores", "2", configfiles=b_files)
    hash_b = read_provenance(summary_b)["config_sha256"][:16]
    assert hash_a != hash_b and read_provenance(summary_a)["config_sha256"][:16] == hash_a
    snakemake(workdir, "--report", "a.html", configfiles=a_files)
    page = (workdir / "a.html").read_text()
    assert hash_a in page and hash_b not in page
    snakemake(workdir, "--report", "b.html", configfiles=b_files)
    page = (workdir / "b.html").read_text()
    assert hash_b in page and hash_a not in page
    # C overwrites A's study folder: A's report now refuses
    snakemake(workdir, "--cores", "2", configfiles=c_files)
    hash_c = read_provenance(summary_a)["config_sha256"][:16]
    result = snakemake(workdir, "--report", "a2.html", configfiles=a_files, check=False)
    assert result.returncode != 0 and not (workdir / "a2.html").exists()
    lines = [line for line in result.stderr.splitlines() if line.startswith("debiaseval:")]
    assert len(lines) == 1 and hash_a in lines[0] and hash_c in lines[0], result.stderr
    # B's results copied into a fresh folder (no Snakemake records), then run by another
    # config: once "Nothing to be done"; now set aside into .foreign/ and made again
    fresh = make_workdir(tmp_path / "copy")
    shutil.copytree(workdir / "results/b", fresh / "results/b")
    own = {  # a user's own files beside the copies stay where they are (issue 43, case 7)
        fresh / "results/b/e3/synthetic/mynotes.md": b"# my notes\n",
        fresh / "results/b/e3/synthetic/seed0/mydraft.txt": b"draft",
    }
    for path, data in own.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (fresh / "b.yaml").write_text("experiments: [e3]\ne3: {alpha: 0.5}\n")
    run = snakemake(fresh, "--cores", "2", configfiles=b_files)
    table = "results/b/e3/synthetic/estimates.parquet"
    hash_d = read_provenance(fresh / table)["config_sha256"][:16]
    assert hash_d != hash_b
    assert (
        f"debiaseval: {table} was made by config sha256 {hash_b}, not this run's ({hash_d}), "
        "and Snakemake has no record of it (copied in?): its folder's unrecorded outputs are "
        "set aside (files of one's own stay)"
    ) in run.stderr
    assert all(path.read_bytes() == data for path, data in own.items())
    [place] = (fresh / "results/b/.foreign").iterdir()
    assert not [p for p in place.rglob("*") if p.name in ("mynotes.md", "mydraft.txt")]
    assert read_provenance(place / "e3/synthetic/estimates.parquet")["config_sha256"][:16] == hash_b
    again = snakemake(fresh, "--cores", "2", configfiles=b_files)
    assert "debiaseval: results" not in again.stderr, again.stderr
    assert "Nothing to be done" in again.stdout + again.stderr
    # B's summary re-saved without its record, beside tables that keep theirs: refused
    table = pd.read_parquet(summary_b)
    table.to_parquet(summary_b)  # pandas' own metadata, not debiaseval's record
    result = snakemake(workdir, "--report", "b2.html", configfiles=b_files, check=False)
    assert result.returncode != 0 and not (workdir / "b2.html").exists()
    lines = [line for line in result.stderr.splitlines() if line.startswith("debiaseval:")]
    assert lines == [
        "debiaseval: no report: results/b/e3/synthetic/estimates.parquet carries no provenance "
        "record (re-saved without it, or written before debiaseval recorded one); rerun the job "
        "that writes it: snakemake --forcerun results/b/e3/synthetic/estimates.parquet"
    ], result.stderr
