"""Names and paths a user gives, checked before any job against what the file system, Snakemake
and a terminal accept (issue 43, cases 8, 9, 10 and 13): each is one line naming the key and
what to do, or is taken as written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from debiaseval.io.errors import ConfigError, DatasetError
from debiaseval.io.terminal import inert_terminal
from debiaseval.workflow.config import study_as_written, validate_config
from debiaseval.workflow.names import check_workflow_paths
from debiaseval.workflow.runtime import one_line

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "mylog"
COLUMNS = {"user": "uid", "item": "iid", "rating": "stars", "timestamp": "ts"}


def _workdir(path: Path) -> Path:
    path.mkdir(parents=True)
    shutil.copy(ROOT / "Snakefile", path / "Snakefile")
    for folder in ("workflow", "config", "profiles"):
        shutil.copytree(ROOT / folder, path / folder)
    shutil.copy(ROOT / "tests" / "configs" / "tiny.yaml", path / "tiny.yaml")
    return path


def _dry_run(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _own(ratings: str) -> dict:
    return {
        "datasets": ["mine"],
        "experiments": ["e2"],
        "sources": {"mine": {"ratings": ratings, "columns": COLUMNS}},
    }


# --------------------------------------------------------------------------- case 8


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("r<b>.csv", "holds '<b>', which Snakemake reads as a path variable"),
        ("r{b}.csv", "holds '{', which Snakemake reads as part of a wildcard"),
        ("r\x1b[31m.csv", "holds \\x1b, a control character that a terminal would act on"),
        ("evil\u202ecsv.exe.csv", "holds \\u202e, a control character"),
    ],
)
def test_a_file_name_snakemake_would_misread_is_refused_in_one_line(name, what):
    config = validate_config(_own(f"mylog/{name}"))
    with pytest.raises(ConfigError) as error:
        check_workflow_paths(config)
    text = str(error.value)
    assert text.startswith("config error at 'sources.mine.ratings': mylog/"), text
    assert what in text and "rename the file, or link to it" in text, text
    assert text.isprintable(), text


def test_names_snakemake_reads_as_written_pass_and_lists_templates_keep_their_fields():
    check_workflow_paths(validate_config(_own("mylog/R<B> (1) [x].csv")))  # <B>: no pathvar
    spec = {"algorithm": "external", "recs": "lists/{dataset}/seed{seed}.parquet"}
    config = validate_config({"experiments": ["e1"], "e1": {"recommenders": {"X": spec}}})
    check_workflow_paths(config)
    spec = {**spec, "recs": "lists/<run>/{dataset}/seed{seed}.parquet"}
    config = validate_config({"experiments": ["e1"], "e1": {"recommenders": {"X": spec}}})
    with pytest.raises(ConfigError, match=r"^config error at 'e1\.recommenders\.X\.recs': "):
        check_workflow_paths(config)


@pytest.mark.slow
def test_the_audit_s_r_b_csv_stops_the_dry_run_with_the_line(tmp_path):
    """The audit's repro: a data file named r<b>.csv gave UndefinedPathvarException."""
    workdir = _workdir(tmp_path / "run")
    (workdir / "mylog").mkdir()
    shutil.copy(FIXTURE / "ratings.csv", workdir / "mylog" / "r<b>.csv")
    (workdir / "own.yaml").write_text(
        "datasets: [mine]\nexperiments: [e2]\nsources:\n  mine:\n    ratings: mylog/r<b>.csv\n"
        "    columns: {user: uid, item: iid, rating: stars, timestamp: ts}\n"
    )
    result = _dry_run(workdir, "--configfile", "own.yaml")
    assert result.returncode != 0
    assert "Pathvar" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert (
        "config error at 'sources.mine.ratings': mylog/r<b>.csv holds '<b>', which Snakemake "
        "reads as a path variable; rename the file"
    ) in result.stderr, result.stderr


# --------------------------------------------------------------------------- case 9

LONG = "R" * 300


@pytest.mark.parametrize(
    ("config", "where"),
    [
        ({"e1": {"recommenders": {LONG: {"algorithm": "pospop"}}}}, "e1.recommenders"),
        ({"e5": {"models": {LONG: {"algorithm": "pospop"}}}}, "e5.models"),
        ({"e1": {"testsets": {LONG: {"strategy": "skew"}}}}, "e1.testsets"),
        (
            {
                "datasets": [LONG],
                "experiments": ["e2"],
                "sources": {LONG: {"ratings": "x.csv", "columns": COLUMNS}},
            },
            "sources",
        ),
    ],
)
def test_a_name_longer_than_the_file_system_allows_is_refused_at_config_time(config, where):
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert str(error.value) == (
        f"config error at '{where}.{'R' * 23}…': the name is 300 bytes, and it becomes a file "
        "name under results/<study>/ (with its suffix), which this file system allows 255 "
        "bytes; expected a name of at most 223 bytes"
    )


def test_names_within_the_limits_pass():
    validate_config({"e1": {"recommenders": {"R" * 223: {"algorithm": "pospop"}}}})
    with pytest.raises(ConfigError, match="the name is 224 bytes"):
        validate_config({"e1": {"recommenders": {"R" * 224: {"algorithm": "pospop"}}}})


def test_a_working_directory_too_deep_for_the_paths_is_refused(tmp_path, monkeypatch):
    import debiaseval.workflow.names as names

    limits = {"PC_NAME_MAX": 255, "PC_PATH_MAX": 300}
    monkeypatch.setattr(names, "_limit", lambda name, folder: limits[name])
    config = {"e1": {"recommenders": {"R" * 200: {"algorithm": "pospop"}}}}
    where = r"^config error at 'e1\.recommenders\.R{23}…': the longest output path would be"
    with pytest.raises(ConfigError, match=where):
        validate_config(config)


# --------------------------------------------------------------------------- case 10


@pytest.mark.parametrize(
    ("value", "argv", "expected"),
    [
        (1.5, ["--config", "study=1.5"], "1.5"),
        (float("inf"), ["--cores", "1", "--config", "x=1", "study=inf"], "inf"),
        (2024, ["--config=study=2024"], "2024"),
        (1.5, [], None),  # from a config file: below
    ],
)
def test_a_study_read_as_a_number_is_taken_as_written(value, argv, expected, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("study: 1.50\n")
    got = study_as_written(value, argv, [config])
    assert got == (expected or "1.50")
    nan = study_as_written(float("nan"), ["--config", "study=nan"])
    assert nan == "nan" and validate_config({"study": nan})["study"] == "nan"


def test_a_study_that_cannot_reach_the_jobs_as_written_says_where_to_write_it():
    with pytest.raises(ConfigError) as error:
        study_as_written(1000.0, ["--config", "study=1e3"])
    assert str(error.value) == (
        "config error at 'study': --config study=1e3 is read as the number 1000.0, and "
        "Snakemake hands it to its jobs as 1000.0; write the name in a config file (study: "
        '"1e3"), or start it with a letter'
    )
    with pytest.raises(ConfigError) as error:
        validate_config({"study": 1000.0})  # the audit's AttributeError, from Python
    assert str(error.value) == (
        "config error at 'study': 1000.0 is a number, not a folder name; give the name as text "
        '(study: "1000.0" in YAML, a str in Python)'
    )


@pytest.mark.slow
def test_number_like_studies_in_a_dry_run(tmp_path):
    workdir = _workdir(tmp_path / "run")
    (workdir / "cfg.yaml").write_text("study: 1.50\n")
    for args, folder in (
        (("--config", "study=inf"), "results/inf/"),
        (("--configfile", "tiny.yaml", "cfg.yaml"), "results/1.50/"),
    ):
        result = _dry_run(workdir, *args)
        assert result.returncode == 0, result.stderr
        assert folder in result.stdout
    result = _dry_run(workdir, "--config", "study=1e3")
    assert result.returncode != 0 and "AttributeError" not in result.stderr
    assert "config error at 'study': --config study=1e3 is read as the number" in result.stderr


# --------------------------------------------------------------------------- case 13


def test_a_newline_in_a_sources_key_keeps_the_config_error_on_one_line():
    config = {"sources": {"a\nb": {"ratings": "x.csv", "columns": COLUMNS}}}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    text = str(error.value)
    assert "\n" not in text and text.startswith("config error at 'sources.a\\nb'"), text


def test_control_characters_of_user_strings_are_escaped_in_every_message():
    payload = "r\x1b[2J\u202ecsv.exe\x07"
    assert inert_terminal(payload) == "r\\x1b[2J\\u202ecsv.exe\\x07"
    assert inert_terminal("a\nb\tc", lines=True) == "a\nb\\tc"
    assert inert_terminal("Γ* × 3 — é") == "Γ* × 3 — é"  # ordinary text unchanged
    line = one_line(DatasetError(f"{payload}: line 3: bad"), "logs/x.log")
    assert line == (
        "DatasetError: r\\x1b[2J\\u202ecsv.exe\\x07: line 3: bad (traceback in logs/x.log)"
    )
    assert str(ConfigError(payload)) == inert_terminal(payload)
    assert os.fsencode(inert_terminal(payload)).isascii()
