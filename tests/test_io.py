"""Atomic writes keep the umask's mode; unreadable files are named; damaged outputs move aside."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from debiaseval.io import files
from debiaseval.io.errors import UnreadableFileError
from debiaseval.workflow import repair


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
    files.write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "x.parquet")
    files.write_text("hello\n", tmp_path / "x.md")
    for name in ("x.parquet", "x.md"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert files.current_umask() == mask


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "y.txt"
    with pytest.raises(RuntimeError), files.atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def _table(path):
    files.write_parquet(pd.DataFrame({"a": range(100)}), path)
    return path


def test_unreadable_parquet_is_named_with_the_forcerun_that_rebuilds_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = Path("results/e1/synthetic/seed0/split.parquet")
    _table(path)
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)
    with pytest.raises(UnreadableFileError) as error:
        files.read_parquet(path)
    message = str(error.value)
    assert message.startswith(f"{path} is not a readable Parquet file (")
    assert message.endswith(f"snakemake --forcerun {path} (or delete the file and run again)")
    assert error.value.path == str(path)
    # Where Snakemake recorded the producing rule, a workflow job's message names the rule.
    record = Path(".snakemake/metadata") / base64.urlsafe_b64encode(str(path).encode()).decode()
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"rule": "e1_split"}))
    named = repair.name_the_rule(error.value)
    assert isinstance(named, UnreadableFileError) and named.path == str(path)
    assert str(named) == message.replace(f"--forcerun {path} ", "--forcerun e1_split ")
    assert repair.name_the_rule(ValueError("x")).args == ("x",)


def test_other_read_errors_are_not_reported_as_unreadable(tmp_path):
    path = _table(tmp_path / "ok.parquet")
    with pytest.raises(FileNotFoundError):
        files.read_parquet(tmp_path / "missing.parquet")
    with pytest.raises(Exception) as error:
        files.read_parquet(path, columns=["nope"])
    assert not isinstance(error.value, UnreadableFileError)


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
    found = files.output_damage(tmp_path)
    assert [p for p, _ in found.damaged] == [truncated, empty, headless]  # sorted by path
    assert found.unreadable == []
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert files.is_readable_parquet(good) and not files.is_readable_parquet(truncated)
    assert files.output_damage(tmp_path / "none").damaged == []


def _record(output: str, inputs: list[str]) -> None:
    name = base64.urlsafe_b64encode(output.encode()).decode()
    path = Path(".snakemake/metadata") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"rule": "r", "input": inputs}))


def test_a_damaged_output_moves_aside_with_everything_made_from_it(tmp_path, monkeypatch):
    """split -> test set -> metrics -> figures/ (a folder output); other is unrelated. The
    damaged split and what was made from it move to results/.damaged/<stamp>/, at their
    relative paths: nothing is deleted."""
    monkeypatch.chdir(tmp_path)
    split, testset, metrics = (
        _table(Path(f"results/e1/{name}.parquet")) for name in ("split", "testset", "metrics")
    )
    figures = Path("results/e1/figures")
    figures.mkdir()
    (figures / "f.svg").write_text("<svg></svg>\n")
    other = _table(Path("results/e1/other.parquet"))
    _record(str(split), ["results/data/interactions.parquet"])
    _record(str(testset), [str(split), "results/data/users.parquet"])
    _record(str(metrics), [str(testset)])
    _record(str(figures), [str(metrics)])
    _record(str(other), ["results/data/users.parquet"])
    split.write_bytes(split.read_bytes()[:-1])
    before = {p: p.read_bytes() for p in Path("results").rglob("*") if p.is_file()}
    lines, stop = repair.rebuild_damaged("results", stamp="T1")
    assert stop is None
    place = Path("results/.damaged/T1")
    assert lines == [
        f"debiaseval: {split} is damaged (Parquet magic bytes not found at the end (truncated?))",
        "debiaseval: moved 4 output(s), the damaged ones and those made from them, to "
        f"{place}/ so that their jobs run again: {figures}, {metrics}, {split}, {testset}",
    ]
    after = {p: p.read_bytes() for p in Path("results").rglob("*") if p.is_file()}
    moved = {place / p.relative_to("results"): b for p, b in before.items() if p != other}
    assert after == {other: before[other], **moved}  # every byte kept
    # a damaged figure inside a folder output takes the whole folder (Snakemake's output)
    figures.mkdir()
    (figures / "f.svg").write_text("<svg>")
    assert repair.rerun_target(figures / "f.svg") == str(figures)
    repair.rebuild_damaged("results", stamp="T1")  # T1 is taken: T1-1
    assert not figures.exists() and other.exists()
    assert Path("results/.damaged/T1-1/e1/figures/f.svg").read_text() == "<svg>"
    # what was set aside is never judged again
    assert repair.rebuild_damaged("results") == ([], None)


def test_move_outputs_keeps_relative_paths_whether_paths_are_absolute_or_not(tmp_path):
    """Snakemake records relative paths; the study folder may be given absolute, or through a
    symlink. A symlink output moves as the link; a path outside the folder is never moved."""
    (tmp_path / "real/e1").mkdir(parents=True)
    (tmp_path / "study").symlink_to(tmp_path / "real")
    (tmp_path / "real/e1/a.parquet").write_bytes(b"a")
    (tmp_path / "real/e1/link.parquet").symlink_to(tmp_path / "real/e1/a.parquet")
    (tmp_path / "outside.parquet").write_bytes(b"o")
    place, moved = files.move_outputs(
        [str(tmp_path / "real/e1/link.parquet"), str(tmp_path / "outside.parquet")],
        tmp_path / "study",
        stamp="T",
    )
    assert moved == [str(tmp_path / "real/e1/link.parquet")]
    assert (place / "e1/link.parquet").is_symlink()
    assert (tmp_path / "real/e1/a.parquet").read_bytes() == b"a"
    assert (tmp_path / "outside.parquet").exists()


def test_a_users_own_files_are_never_judged_or_moved(tmp_path, monkeypatch):
    """Files no rule made (no Snakemake record) are a user's: a notes.md without a final line
    break, an analysis.html ending in a comment, a PNG put in a figures/ folder, a truncated
    Parquet of one's own: none is called damaged, none is moved."""
    monkeypatch.chdir(tmp_path)
    made = _table(Path("results/t1/e1/summary.parquet"))
    _record(str(made), [])
    own = {
        Path("results/t1/notes.md"): b"# notes",
        Path("results/t1/analysis.html"): b"<html><body></body></html><!-- mine -->",
        Path("results/t1/e1/figures/mine.png"): b"not a png",
        Path("results/t1/mine.parquet"): b"PAR1 and then nothing",
    }
    for path, data in own.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    assert repair.rebuild_damaged("results/t1") == ([], None)
    assert all(path.read_bytes() == data for path, data in own.items())
    assert not Path("results/t1/.damaged").exists()


def test_a_read_only_folder_of_a_damaged_output_stops_in_one_line_and_moves_nothing(
    tmp_path, monkeypatch
):
    """A damaged output whose folder this process may not write in cannot be set aside: one
    line naming the folder, and nothing moved (not some outputs moved, then a traceback)."""
    monkeypatch.chdir(tmp_path)
    split, metrics = (_table(Path(f"results/e1/{n}/x.parquet")) for n in ("a", "b"))
    _record(str(split), [])
    _record(str(metrics), [str(split)])
    split.write_bytes(split.read_bytes()[:-1])
    real_access = os.access
    blocked = os.path.normpath("results/e1/b")

    def access(path, mode, **kwargs):
        return os.path.normpath(path) != blocked and real_access(path, mode, **kwargs)

    monkeypatch.setattr(files.os, "access", access)
    before = {p: p.read_bytes() for p in Path("results").rglob("*") if p.is_file()}
    _lines, stop = repair.rebuild_damaged("results", stamp="T")
    assert stop == (
        "debiaseval: results/e1/b/ is read-only for this user, so its damaged outputs cannot be "
        "set aside (nothing was moved or run); make it writable, then run again"
    )
    assert {p: p.read_bytes() for p in Path("results").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    ("argv", "runs"),
    [
        ([], True),
        (["--cores", "2"], True),
        (["-c1", "results/x.parquet"], True),
        (["-n"], False),
        (["-np"], False),
        (["--dry-run"], False),
        (["--list-rules"], False),
        (["-l"], False),
        (["--summary"], False),
        (["-D"], False),
        (["--lint"], False),
        (["--dag"], False),
        (["--rulegraph"], False),
        (["--unlock"], False),
        (["--report", "report.html"], False),
        (["--touch"], False),
        (["--list-changes", "code"], False),
        (["--cleanup-metadata", "x"], False),
        (["--help"], False),
    ],
)
def test_only_a_command_that_runs_jobs_checks_the_outputs(argv, runs):
    assert repair.runs_jobs(argv) is runs


def test_the_damage_check_of_a_study_leaves_other_studies_alone(tmp_path, monkeypatch):
    """The workflow checks results/<study>/ only (docs/getting-started.md#studies): a damaged
    file of another study is neither reported nor moved."""
    monkeypatch.chdir(tmp_path)
    mine, theirs = (_table(Path(f"results/{s}/e1/split.parquet")) for s in ("a", "b"))
    for path in (mine, theirs):
        _record(str(path), [])
        path.write_bytes(path.read_bytes()[:-1])
    damaged = theirs.read_bytes()
    lines, stop = repair.rebuild_damaged("results/a", stamp="T")
    assert stop is None and lines[0].startswith(f"debiaseval: {mine} is damaged")
    assert not any(str(theirs) in line for line in lines)
    assert not mine.exists() and Path("results/a/.damaged/T/e1/split.parquet").exists()
    assert theirs.read_bytes() == damaged
