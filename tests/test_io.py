"""Atomic writes keep the umask's mode; unreadable Parquet files are named or removed."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from debiaseval.workflow import io


@pytest.fixture
def umask():
    """Set a umask for the test, restore the old one afterwards."""
    old = os.umask(0o022)
    os.umask(old)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomic_writes_follow_umask(tmp_path, umask, mask, mode):
    umask(mask)
    io.write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "x.parquet")
    io.write_text("hello\n", tmp_path / "x.md")
    for name in ("x.parquet", "x.md"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert io.current_umask() == mask


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "y.txt"
    with pytest.raises(RuntimeError), io.atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def _table(path):
    io.write_parquet(pd.DataFrame({"a": range(100)}), path)
    return path


def test_unreadable_parquet_is_named_with_the_forcerun_that_rebuilds_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = Path("results/e1/synthetic/seed0/split.parquet")
    _table(path)
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)
    with pytest.raises(io.UnreadableFileError) as error:
        io.read_parquet(path)
    message = str(error.value)
    assert message.startswith(f"{path} is not a readable Parquet file (")
    assert message.endswith(f"snakemake --forcerun {path} (or delete the file and run again)")
    # Where Snakemake recorded the producing rule, the message names the rule.
    record = Path(".snakemake/metadata") / base64.urlsafe_b64encode(str(path).encode()).decode()
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"rule": "e1_split"}))
    with pytest.raises(io.UnreadableFileError, match="snakemake --forcerun e1_split "):
        io.read_parquet(path)


def test_other_read_errors_are_not_reported_as_unreadable(tmp_path):
    path = _table(tmp_path / "ok.parquet")
    with pytest.raises(FileNotFoundError):
        io.read_parquet(tmp_path / "missing.parquet")
    with pytest.raises(Exception) as error:
        io.read_parquet(path, columns=["nope"])
    assert not isinstance(error.value, io.UnreadableFileError)


def test_output_damage_finds_damaged_files_and_changes_nothing(tmp_path):
    good = _table(tmp_path / "a" / "good.parquet")
    truncated = _table(tmp_path / "a" / "truncated.parquet")
    truncated.write_bytes(truncated.read_bytes()[:-10])
    headless = _table(tmp_path / "b" / "headless.parquet")
    headless.write_bytes(b"XXXX" + headless.read_bytes()[4:])
    empty = tmp_path / "b" / "empty.parquet"
    empty.write_bytes(b"")
    other = tmp_path / "b" / ".x.parquet.abc.tmp"
    other.write_bytes(b"partial")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    found = io.output_damage(tmp_path)
    assert [p for p, _ in found.damaged] == [truncated, empty, headless]  # sorted by path
    assert found.unreadable == []
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert io.is_readable_parquet(good) and not io.is_readable_parquet(truncated)
    assert io.output_damage(tmp_path / "none").damaged == []


def _record(output: str, inputs: list[str]) -> None:
    name = base64.urlsafe_b64encode(output.encode()).decode()
    path = Path(".snakemake/metadata") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rule": "r", "input": inputs}))


def test_a_damaged_output_goes_with_everything_made_from_it_except_in_a_dry_run(
    tmp_path, monkeypatch
):
    """split -> test set -> metrics -> figures/ (a folder output); other is unrelated."""
    monkeypatch.chdir(tmp_path)
    split, testset, metrics = (
        _table(Path(f"results/e1/{name}.parquet")) for name in ("split", "testset", "metrics")
    )
    figures = Path("results/e1/figures")
    figures.mkdir()
    (figures / "f.svg").write_text("<svg></svg>\n")
    other = _table(Path("results/e1/other.parquet"))
    _record(str(testset), [str(split), "results/data/users.parquet"])
    _record(str(metrics), [str(testset)])
    _record(str(figures), [str(metrics)])
    _record(str(other), ["results/data/users.parquet"])
    split.write_bytes(split.read_bytes()[:-1])
    before = {p: p.read_bytes() for p in Path("results").rglob("*") if p.is_file()}
    lines, stop = io.rebuild_damaged("results", dry_run=True)
    assert stop is None
    assert lines == [
        f"debiaseval: {split} is damaged (Parquet magic bytes not found at the end (truncated?))",
        "debiaseval: a run (not -n) removes 4 output(s), the damaged ones and those made from "
        f"them, so that their jobs run again: {figures}, {metrics}, {split}, {testset}",
    ]
    assert {p: p.read_bytes() for p in Path("results").rglob("*") if p.is_file()} == before
    lines, stop = io.rebuild_damaged("results", dry_run=False)
    assert stop is None and lines[-1].startswith("debiaseval: removed 4 output(s)")
    assert sorted(p for p in Path("results").rglob("*")) == [Path("results/e1"), other]
    # a damaged figure inside a folder output takes the whole folder (Snakemake's output)
    figures.mkdir()
    (figures / "f.svg").write_text("<svg>")
    assert io.rerun_target(figures / "f.svg") == str(figures)
    io.rebuild_damaged("results", dry_run=False)
    assert not figures.exists() and other.exists()


def test_the_damage_check_of_a_study_leaves_other_studies_alone(tmp_path, monkeypatch):
    """The workflow checks results/<study>/ only (docs/getting-started.md#studies): a damaged
    file of another study is neither reported nor removed."""
    monkeypatch.chdir(tmp_path)
    mine, theirs = (_table(Path(f"results/{s}/e1/split.parquet")) for s in ("a", "b"))
    for path in (mine, theirs):
        path.write_bytes(path.read_bytes()[:-1])
    damaged = theirs.read_bytes()
    lines, stop = io.rebuild_damaged("results/a", dry_run=False)
    assert stop is None and lines[0].startswith(f"debiaseval: {mine} is damaged")
    assert not any(str(theirs) in line for line in lines)
    assert not mine.exists() and theirs.read_bytes() == damaged
