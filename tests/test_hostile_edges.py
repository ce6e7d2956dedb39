"""Hostile inputs and faults of the third audit (issue 43, cases 1-7 and 14): each ends in one
line naming the file or key and what to do, in bounded memory and time, and nothing a user made
is moved or lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from debiaseval.data.preprocess import build_interactions
from debiaseval.data.user_logs import MAX_ID_LENGTH, load_user_log
from debiaseval.io.errors import ConfigError, DatasetError
from debiaseval.recommenders import registry
from debiaseval.workflow.config import validate_config


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
    config = {"sources": {"mylog": {"ratings": str(path), "columns": {
        "user": "uid", "item": "iid", "rating": "stars"}}}}  # fmt: skip
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
    frame = pd.DataFrame({"uid": users, "iid": [f"i{i // 1000}" for i in range(n)],
                          "stars": np.arange(n) % 5 + 1})  # fmt: skip
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
