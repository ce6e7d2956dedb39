"""Hostile inputs and faults of the third audit (issue 43, cases 1-7 and 14): each ends in one
line naming the file or key and what to do, in bounded memory and time, and nothing a user made
is moved or lost."""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.preprocess import build_interactions
from debiaseval.data.user_logs import MAX_ID_LENGTH, load_user_log
from debiaseval.io.errors import ConfigError, DatasetError
from debiaseval.io.files import move_across, write_parquet
from debiaseval.recommenders import registry
from debiaseval.workflow.config import validate_config
from debiaseval.workflow.repair import rebuild_damaged
from debiaseval.workflow.studies import RECORDS, origin_conflict, record_origin, set_aside_foreign


def _one_line(error: BaseException | str, expected: str) -> None:
    text = str(error)
    assert "\n" not in text.strip(), text
    assert expected in text, text


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (to show that nothing was written or lost)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# --------------------------------------------------------------------------- own data (1)


def _own(path: Path) -> dict:
    config = {
        "sources": {
            "mylog": {
                "ratings": str(path),
                "columns": {"user": "uid", "item": "iid", "rating": "stars"},
            }
        }
    }
    return validate_config(config)["sources"]["mylog"]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_two_megabyte_id_is_one_line_naming_its_place(tmp_path, suffix):
    """Case 1: a log whose one user id is 2 MB long once peaked at 13.2 GB in preprocessing."""
    users = ["u1", "u" * 2**21, "u2"]
    frame = pd.DataFrame({"uid": users, "iid": ["a", "b", "c"], "stars": [4, 3, 5]})
    path = tmp_path / f"r.{suffix}"
    frame.to_csv(path, index=False) if suffix == "csv" else frame.to_parquet(path)
    with pytest.raises(DatasetError) as error:
        load_user_log("mylog", _own(path))
    where = "line 3" if suffix == "csv" else "row 2"
    _one_line(
        error.value,
        f"{path}: {where}: a user id of 2,097,152 characters in column 'uid'; expected at most "
        "1,024 (an id names a user: check columns and sep)",
    )


def test_string_ids_cost_what_they_hold_not_the_longest_times_the_rows(tmp_path):
    """One id of the longest length allowed among 20,000 short ones: a fixed-width array would
    hold 20,000 × 1,024 × 4 bytes (78 MiB) in reading and again in preprocessing."""
    import tracemalloc

    n = 20_000
    users = [f"u{i % 1000}" for i in range(n)]
    users[0] = "x" * MAX_ID_LENGTH
    frame = pd.DataFrame(
        {"uid": users, "iid": [f"i{i // 1000}" for i in range(n)], "stars": np.arange(n) % 5 + 1}
    )
    path = tmp_path / "r.csv"
    frame.to_csv(path, index=False)
    spec = _own(path)
    tracemalloc.start()
    try:
        raw = load_user_log("mylog", spec)
        interactions, users_table, _ = build_interactions(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 30 * 2**20, f"{peak / 2**20:.0f} MiB"
    assert users_table["raw_user"].iat[-1] == "x" * MAX_ID_LENGTH  # sorted, kept whole
    assert users_table["raw_user"].tolist() == sorted(users_table["raw_user"])
    assert interactions["user"].max() == len(users_table) - 1


# --------------------------------------------------------------------------- plugins (2, 3)


@pytest.fixture
def plugin_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(registry.PLUGIN_PATHS_ENV, raising=False)
    monkeypatch.delenv(registry.PROBED_ENV, raising=False)
    folder = tmp_path / "plugins"
    folder.mkdir()
    return folder


def _plugin_config(folder: Path, module: str) -> dict:
    return {
        "plugin_paths": [str(folder)],
        "e1": {"recommenders": {"P": {"algorithm": f"{module}:Odd"}}},
    }


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (gone, or a zombie no one reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


FORKS = """
import os, sys, time
if os.fork() == 0:  # the child sleeps, holding the parent's stdout
    with open({pidfile!r}, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(20)
    os._exit(0)
time.sleep(0.5)
"""

POPENS = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"])
with open({pidfile!r}, "w") as fh:
    fh.write(str(child.pid))
time.sleep(0.5)
"""


@pytest.mark.parametrize("source", [FORKS, POPENS], ids=["fork", "popen"])
def test_a_plugin_that_starts_a_process_at_import_is_refused_at_once(
    plugin_folder, tmp_path, source
):
    """Case 2: once `snakemake -n` waited forever for the forked child to close the probe's
    stdout; now the probe returns when the import does, refuses the module, and kills the
    child with its process group."""
    pidfile = tmp_path / "child.pid"
    (plugin_folder / "spawns.py").write_text(source.format(pidfile=str(pidfile)))
    start = time.monotonic()
    with pytest.raises(ConfigError) as error:
        validate_config(_plugin_config(plugin_folder, "spawns"))
    assert time.monotonic() - start < 15
    _one_line(
        error.value,
        "config error at 'e1.recommenders.P.algorithm': cannot import 'spawns:Odd': importing "
        "module 'spawns' started a process that was still running when the import finished; a "
        "plugin module must not start processes when imported",
    )
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)
    assert "spawns" not in sys.modules  # never imported by this process


def test_a_plugin_whose_import_never_ends_is_killed_at_the_deadline(plugin_folder, monkeypatch):
    (plugin_folder / "hangs.py").write_text("import time\ntime.sleep(60)\n")
    monkeypatch.setattr(registry, "PROBE_DEADLINE", 1.0)
    start = time.monotonic()
    with pytest.raises(ConfigError) as error:
        validate_config(_plugin_config(plugin_folder, "hangs"))
    assert time.monotonic() - start < 10
    _one_line(
        error.value,
        "cannot import 'hangs:Odd': importing module 'hangs' did not finish within 1 s; a plugin "
        "module must not wait, serve or start processes when imported",
    )


def test_a_child_process_has_a_deadline_and_its_group_is_killed():
    from debiaseval.io.processes import run_bounded

    start = time.monotonic()
    done = run_bounded(
        [sys.executable, "-c", "import os, time\nif os.fork() == 0: time.sleep(30)\nprint('ok')"],
        deadline=10,
    )
    assert (done.returncode, done.stdout.strip(), done.timed_out) == (0, b"ok", False)
    late = run_bounded([sys.executable, "-c", "import time; time.sleep(30)"], deadline=0.5)
    assert late.timed_out and late.returncode is None
    assert time.monotonic() - start < 10


def test_a_stale_probed_variable_does_not_skip_the_probe(plugin_folder):
    """Case 3: DEBIASEVAL_PROBED_PLUGINS=quits left by a notebook once skipped the probe, and a
    module calling os._exit(0) at import ended the check with status 0 and no word."""
    (plugin_folder / "quits.py").write_text("import os\nos._exit(0)\n")
    code = (
        "from debiaseval.workflow.config import validate_config\n"
        f"validate_config({_plugin_config(plugin_folder, 'quits')!r})\n"
    )
    env = {**os.environ, registry.PROBED_ENV: "quits"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert (
        "cannot import 'quits:Odd': importing module 'quits' ended the process (exit status 0) "
        "before the import finished"
    ) in result.stderr.splitlines()[-1]


def test_the_probe_is_skipped_only_for_the_code_it_vouched_for(plugin_folder, monkeypatch):
    """The variable carries each module's code digest: the same code is probed once per run
    (job processes inherit the variable), changed code again."""
    (plugin_folder / "vouched.py").write_text("x = 1\n")
    validate_config({"plugin_paths": [str(plugin_folder)]})
    registry.probe_import("vouched")
    (entry,) = os.environ[registry.PROBED_ENV].split(os.pathsep)
    assert entry.startswith("vouched=") and len(entry) == len("vouched=") + 16
    children = []
    real = registry.run_bounded
    monkeypatch.setattr(
        registry, "run_bounded", lambda *a, **k: children.append(a) or real(*a, **k)
    )
    registry.probe_import("vouched")
    assert children == []
    (plugin_folder / "vouched.py").write_text("x = 2\n")
    registry.probe_import("vouched")
    assert len(children) == 1
    assert os.environ[registry.PROBED_ENV] != entry


# --------------------------------------------------------------------------- outputs (4, 5)


def _parquet(path: Path) -> Path:
    write_parquet(pd.DataFrame({"a": range(50)}), path)
    return path


def _record(output: str, inputs: list[str]) -> None:
    """Snakemake's record of ``output`` (in the working directory's .snakemake/metadata)."""
    name = base64.urlsafe_b64encode(output.encode()).decode()
    record = Path(".snakemake/metadata", name)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"rule": "r", "input": inputs}))


def _study_with_damage(root: Path) -> tuple[str, str]:
    """``results/s/e1/seed0/split.parquet`` truncated and the metrics made from it, both
    recorded; returns their paths."""
    split, metrics = "results/s/e1/seed0/split.parquet", "results/s/e1/seed0/metrics.parquet"
    _parquet(root / split)
    _parquet(root / metrics)
    _record(split, [])
    _record(metrics, [split])
    data = (root / split).read_bytes()
    (root / split).write_bytes(data[: len(data) // 2])
    return split, metrics


def test_damage_under_a_symlinked_folder_is_found_without_loops(tmp_path, monkeypatch):
    """Case 4: results/<study>/e1 a symlink to another disk, a truncated split under it: once
    never found, so every run failed with UnreadableFileError until --forcerun. Links back into
    the study and up out of it are not followed."""
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "disk2" / "e1"
    elsewhere.mkdir(parents=True)
    Path("results/s").mkdir(parents=True)
    Path("results/s/e1").symlink_to(elsewhere, target_is_directory=True)
    split, _ = _study_with_damage(tmp_path)
    (elsewhere / "back").symlink_to(tmp_path / "results/s", target_is_directory=True)
    (elsewhere / "up").symlink_to(tmp_path, target_is_directory=True)
    (elsewhere / "self").symlink_to(elsewhere, target_is_directory=True)
    damaged = (tmp_path / split).read_bytes()
    lines, stop = rebuild_damaged("results/s", stamp="T")
    assert stop is None, stop
    assert lines[0].startswith(f"debiaseval: {split} is damaged (Parquet magic bytes not found")
    assert len(lines) == 2, lines  # found once, not again through a link
    assert lines[1].startswith(
        "debiaseval: moved 2 output(s), the damaged ones and those made "
        "from them, to results/s/.damaged/T/"
    )
    assert Path("results/s/.damaged/T/e1/seed0/split.parquet").read_bytes() == damaged
    assert not (elsewhere / "seed0/split.parquet").exists()
    assert Path("results/s/e1").is_symlink() and (elsewhere / "back").is_symlink()


def _other_file_system(tmp_path: Path) -> Path:
    """A fresh folder on another file system than ``tmp_path`` (tmpfs), or skip."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        pytest.skip("no writable /dev/shm")
    if shm.stat().st_dev == tmp_path.stat().st_dev:
        pytest.skip("/dev/shm is on the same file system as the tests' folder")
    return Path(tempfile.mkdtemp(dir=shm, prefix="debiaseval-test-"))


def test_damage_is_set_aside_on_another_file_system(tmp_path, monkeypatch):
    """Case 5: .damaged/ a mount of another file system: once an EXDEV traceback, and the
    "is damaged" line never printed. Now copied, checked, then removed."""
    monkeypatch.chdir(tmp_path)
    split, metrics = _study_with_damage(tmp_path)
    intact = {p: (tmp_path / p).read_bytes() for p in (split, metrics)}
    mount = _other_file_system(tmp_path)
    try:
        Path("results/s/.damaged").symlink_to(mount, target_is_directory=True)
        lines, stop = rebuild_damaged("results/s", stamp="T")
        assert stop is None, stop
        assert lines[0].startswith(f"debiaseval: {split} is damaged (")
        assert lines[1].startswith("debiaseval: moved 2 output(s)")
        for path, data in intact.items():
            assert (mount / "T" / Path(path).relative_to("results/s")).read_bytes() == data
            assert not (tmp_path / path).exists()
        left = sorted(p.name for p in (mount / "T/e1/seed0").iterdir())
        assert left == ["metrics.parquet", "split.parquet"]  # no temporary copy left
    finally:
        shutil.rmtree(mount)


def _cross_device(monkeypatch) -> None:
    """Make every rename between two folders fail as across file systems (EXDEV)."""
    real = os.replace

    def replace(source, destination):
        if Path(source).parent != Path(destination).parent:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        real(source, destination)

    monkeypatch.setattr(os, "replace", replace)


def test_a_move_across_file_systems_keeps_folders_and_links_whole(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "f.svg").write_text("<svg></svg>\n")
    (figures / "link.png").symlink_to("f.svg")
    link = tmp_path / "latest"
    link.symlink_to("figures")
    (tmp_path / "aside").mkdir()
    _cross_device(monkeypatch)
    move_across(figures, tmp_path / "aside/figures")
    move_across(link, tmp_path / "aside/latest")
    assert (tmp_path / "aside/figures/f.svg").read_text() == "<svg></svg>\n"
    assert os.readlink(tmp_path / "aside/figures/link.png") == "f.svg"
    assert os.readlink(tmp_path / "aside/latest") == "figures"
    assert not figures.exists() and not link.is_symlink()
    assert sorted(p.name for p in (tmp_path / "aside").iterdir()) == ["figures", "latest"]


def test_a_copy_that_differs_stops_the_run_and_deletes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    split, metrics = _study_with_damage(tmp_path)
    before = _files(tmp_path / "results")
    _cross_device(monkeypatch)

    def short_copy(source, destination):
        Path(destination).write_bytes(Path(source).read_bytes()[:-1])

    monkeypatch.setattr(shutil, "copy2", short_copy)
    lines, stop = rebuild_damaged("results/s", stamp="T")
    assert lines[0].startswith(f"debiaseval: {split} is damaged (")
    _one_line(stop, f"debiaseval: cannot move {metrics} to results/s/.damaged/T/ (the copy of ")
    assert "differs [EIO]); nothing was run and nothing deleted: fix the cause" in stop
    assert _files(tmp_path / "results") == before  # the failed copy removed, the files kept


# --------------------------------------------------------------------------- studies (6, 7)


def test_deleting_one_record_of_a_study_keeps_its_owner(tmp_path, monkeypatch):
    """Case 6: once deleting results/<study>/study.json silently removed the same-name check,
    and the next run recorded the other file as the owner."""
    monkeypatch.chdir(tmp_path)
    folder = Path("results/t1")
    record_origin(folder, "t1", ["cfg/t1.yaml"])
    (folder / "study.json").unlink()
    line = origin_conflict(folder, "t1", ["cfg2/t1.yaml"])
    _one_line(
        line,
        "study 't1' (results/t1/) holds the results of cfg/t1.yaml, and cfg2/t1.yaml "
        "has the same name",
    )
    record_origin(folder, "t1", ["cfg/t1.yaml"])  # the owner's next run restores it
    assert json.loads((folder / "study.json").read_text())["configfile"] == "cfg/t1.yaml"
    Path(RECORDS, "t1.json").unlink()  # and the other way round
    assert origin_conflict(folder, "t1", ["cfg2/t1.yaml"]) is not None
    record_origin(folder, "t1", ["cfg2/t1.yaml"])  # a refused run records nothing (onstart)
    assert json.loads(Path(RECORDS, "t1.json").read_text())["configfile"] == "cfg/t1.yaml"


@pytest.mark.parametrize(
    ("damage", "problem"),
    [("folder", "a folder"), ("{not json", "not JSON"), ('{"study": "t1"}', "no configfile in it")],
)
def test_an_unusable_study_record_is_one_line_and_stays(tmp_path, monkeypatch, damage, problem):
    """Case 6: study.json a folder once gave an IsADirectoryError traceback; corrupt, it was
    silently recorded again for whichever file ran next."""
    monkeypatch.chdir(tmp_path)
    folder = Path("results/t1")
    record_origin(folder, "t1", ["cfg/t1.yaml"])
    (folder / "study.json").unlink()
    if damage == "folder":
        (folder / "study.json").mkdir()
    else:
        (folder / "study.json").write_text(damage)
    for given in ("cfg/t1.yaml", "cfg2/t1.yaml"):
        line = origin_conflict(folder, "t1", [given])
        _one_line(
            line,
            f"debiaseval: results/t1/study.json, the record of the config file that "
            f"made study 't1', is unusable ({problem}); move it away and run again (the "
            "run copies back .snakemake/debiaseval/studies/t1.json, which names "
            "cfg/t1.yaml)",
        )
        record_origin(folder, "t1", [given])
    assert (
        (folder / "study.json").is_dir()
        if damage == "folder"
        else ((folder / "study.json").read_text() == damage)
    )


def test_a_stored_escape_is_printed_inert(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = Path("results/t1")
    folder.mkdir(parents=True)
    hostile = "cfg/\x1b[31mred\u202e\nt1.yaml"
    (folder / "study.json").write_text(json.dumps({"study": "t1", "configfile": hostile}))
    line = origin_conflict(folder, "t1", ["cfg2/t1.yaml"])
    assert line is not None and line.isprintable(), repr(line)
    assert "holds the results of cfg/\\x1b[31mred\\u202e\\nt1.yaml, and cfg2/t1.yaml" in line
    Path(RECORDS).mkdir(parents=True)
    Path(RECORDS, "t1.json").write_text(json.dumps({"configfile": "cfg/t1.yaml"}))
    disagree = origin_conflict(folder, "t1", ["cfg/t1.yaml"])
    assert disagree is not None and disagree.isprintable(), repr(disagree)
    assert "the records of study 't1' disagree" in disagree


def test_results_copied_in_leave_a_users_own_files_where_they_are(tmp_path, monkeypatch):
    """Case 7: results copied in from another config once took mynotes.md and
    seed0/mydraft.txt with them into .foreign/; only the workflow's outputs move now."""
    from debiaseval.workflow.provenance import config_hash, experiment_config, write_table

    monkeypatch.chdir(tmp_path)
    config = validate_config({"experiments": ["e3"]})
    other = validate_config({"experiments": ["e3"], "e3": {"alpha": 0.5}})
    record = {"experiment": "e3", "config_sha256": config_hash(experiment_config(other, "e3"))}
    folder = Path("results/s/e3/synthetic")
    table = folder / "estimates.parquet"
    folder.mkdir(parents=True)
    write_table(pd.DataFrame({"x": [1]}), table, record)
    (folder / "estimates.md").write_text("# E3\n")
    (folder / "seed0").mkdir()
    (folder / "seed0/errors.parquet").write_bytes(b"PAR1")
    own = {folder / "mynotes.md": b"# mine\n", folder / "seed0/mydraft.txt": b"draft"}
    for path, data in own.items():
        path.write_bytes(data)
    outputs = re.compile(r"results/s/e3/[^/]+/(estimates\.(parquet|md)|seed\d+/errors\.parquet)")
    lines = set_aside_foreign(
        "results/s", [table], config, is_output=lambda p: bool(outputs.fullmatch(p)), stamp="T"
    )
    assert lines[-1] == (
        "debiaseval: moved 3 file(s) to results/s/.foreign/T/ so that this config's jobs make "
        "them again"
    )
    assert all(path.read_bytes() == data for path, data in own.items())
    assert sorted(
        str(p.relative_to("results/s/.foreign/T"))
        for p in Path("results/s/.foreign/T").rglob("*")
        if p.is_file()
    ) == [
        "e3/synthetic/estimates.md",
        "e3/synthetic/estimates.parquet",
        "e3/synthetic/seed0/errors.parquet",
    ]


# --------------------------------------------------------------------------- runs (14)

LOCKS_SNAKEFILE = """
import os, shutil
if os.environ.get("GUARD") == "1":
    from debiaseval.workflow.locks import guard_locks
    guard_locks()


def another_run_ends(wildcards):
    # another run in this folder ends while this one builds its DAG: Snakemake removes
    # .snakemake/locks whole, the locks of the runs still going with it
    if os.environ.get("OTHER_ENDS") == "1":
        shutil.rmtree(".snakemake/locks", ignore_errors=True)
    return []


rule all:
    input: another_run_ends
    output: "out.txt"
    shell: "echo ok > {output}"
"""


def _toy_run(workdir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args],
        cwd=workdir,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("guard", ["0", "1"])
def test_a_run_whose_lock_folder_another_run_removed_still_runs(tmp_path, guard):
    """Case 14: a third concurrent run died with Snakemake's own FileNotFoundError on
    .snakemake/locks/0.input.lock when a first run ended meanwhile; guarded (as every run of
    this workflow is, common.smk), it takes its locks and runs."""
    (tmp_path / "Snakefile").write_text(LOCKS_SNAKEFILE)
    result = _toy_run(tmp_path, GUARD=guard, OTHER_ENDS="1")
    if guard == "0":  # Snakemake alone: the audit's failure, kept here to show what is guarded
        assert result.returncode != 0 and "FileNotFoundError" in result.stderr, result.stderr
        assert ".snakemake/locks/0." in result.stderr
        return
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "ok\n"


def test_a_run_that_ends_keeps_the_locks_of_runs_still_going(tmp_path):
    """What made the third run fail: the first run's end removed the second's locks too."""
    (tmp_path / "Snakefile").write_text(LOCKS_SNAKEFILE)
    locks = tmp_path / ".snakemake/locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text("elsewhere/in.txt\n")  # another run's, going on
    (locks / "0.output.lock").write_text("elsewhere/out.txt\n")
    result = _toy_run(tmp_path, GUARD="1")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in locks.iterdir()) == ["0.input.lock", "0.output.lock"]
    assert _toy_run(tmp_path, "--unlock", GUARD="1").returncode == 0  # --unlock: every lock
    assert not locks.exists() or not list(locks.iterdir())


def test_a_lock_folder_that_keeps_vanishing_is_one_line(tmp_path, monkeypatch):
    from snakemake.exceptions import WorkflowError
    from snakemake.persistence.file import FilePersistence

    from debiaseval.workflow import locks

    assert locks.guard_locks()
    persistence = FilePersistence.__new__(FilePersistence)
    persistence._lockdir, persistence._lockfile = str(tmp_path / "locks"), {}

    def vanished(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(locks.os, "makedirs", vanished)
    with pytest.raises(WorkflowError) as error:
        persistence._write_locks("input", ["a"])
    _one_line(
        error.value,
        f"debiaseval: {tmp_path}/locks/ was removed 5 times while this run "
        "took its locks (other Snakemake runs in this folder ending): nothing was run; "
        "run again",
    )
