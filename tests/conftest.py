"""What the tests share: the workflow copied into a folder, Snakemake run there, the tiny study
run once for the whole session, and the two tiers (docs/contributing.md#tests).

- ``pytest -m "not slow"``: the unit tests, the loop of every edit (no Snakemake, no docs build,
  no browser, no whole experiment);
- ``pytest``: everything, what CI runs (``.ci/run``).

A test is ``slow`` when it starts Snakemake, builds the docs, opens a browser or runs a whole
experiment. It is marked by hand (``@pytest.mark.slow``) or, here, by the fixtures it uses
(:data:`SLOW_FIXTURES`). :func:`make_workdir` and :func:`snakemake` fail in a test that is not
marked slow, so the fast tier cannot grow a workflow run unnoticed.

The helpers are imported by the test modules that run the workflow (``from conftest import
make_workdir, snakemake``); pytest puts this folder on ``sys.path``.

The real-data tests say why they skip: without ``DEBIASEVAL_MIRROR`` (a local copy of the
datasets) they skip, and the run's last line counts them as "skipped without
DEBIASEVAL_MIRROR", with a section above it listing each reason and what to set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from debiaseval.data.download import MIRROR_ENV

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "configs" / "tiny.yaml"
"""The tiny study: every experiment on the synthetic dataset, each with its smallest settings."""

SLOW_FIXTURES = frozenset({"tiny_workflow", "tiny_workflow_one_core"})
"""Fixtures that run the whole workflow: a test that uses one is marked ``slow``. A module whose
own module-scoped fixture runs the workflow marks its tests itself (``pytestmark``)."""

_current: list[pytest.Item] = []
"""The test being set up or run (one at a time): what :func:`_require_slow` asks."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses a fixture of :data:`SLOW_FIXTURES`."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _current[:] = [item]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _current.clear()


def _require_slow(what: str) -> None:
    """Fail a test not marked ``slow`` that starts the workflow: the fast tier stays fast."""
    if _current and _current[0].get_closest_marker("slow") is None:
        pytest.fail(
            f"{_current[0].nodeid} {what} but is not marked slow: mark it "
            "(@pytest.mark.slow) or use a fixture of SLOW_FIXTURES (tests/conftest.py)",
            pytrace=False,
        )


def make_workdir(path: Path) -> Path:
    """A copy of the workflow (Snakefile, rules, scripts, configs, profiles) in ``path``."""
    _require_slow("copies the workflow")
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "Snakefile", path / "Snakefile")
    shutil.copytree(ROOT / "workflow", path / "workflow")
    shutil.copytree(ROOT / "config", path / "config")
    shutil.copytree(ROOT / "profiles", path / "profiles")
    shutil.copy(TINY, path / "tiny.yaml")
    return path


def snakemake(
    workdir: Path, *args: str, check: bool = True, configfiles: tuple[str, ...] = ("tiny.yaml",)
) -> subprocess.CompletedProcess:
    """``snakemake --configfile <configfiles> <args>`` in ``workdir``; with ``check``, a failure
    raises with Snakemake's output."""
    _require_slow("runs Snakemake")
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", *configfiles, *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {args} failed:\n{result.stdout}\n{result.stderr}")
    return result


def result_bytes(workdir: Path) -> dict[str, bytes]:
    """Every Parquet table and figure under results/, by relative path."""
    return {
        str(p.relative_to(workdir)): p.read_bytes()
        for p in sorted((workdir / "results").rglob("*"))
        if p.suffix in {".parquet", ".svg", ".png", ".html"}
    }


def chromium() -> str:
    """The system's Chromium for Playwright (Playwright's own browser download needs hosts a
    build machine may not reach). With DEBIASEVAL_TEST_BROWSER=1, as root, Debian's `chromium`
    package is installed when missing, as `.ci/run` asks; otherwise the test skips."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    if os.environ.get("DEBIASEVAL_TEST_BROWSER") != "1":
        pytest.skip("no Chromium on PATH (DEBIASEVAL_TEST_BROWSER=1 installs Debian's, as root)")
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("DEBIASEVAL_TEST_BROWSER=1 installs chromium with apt-get, which needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    if subprocess.run(install, env=env, capture_output=True, timeout=900).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        subprocess.run(install, env=env, capture_output=True, timeout=900, check=True)
    return shutil.which("chromium") or pytest.fail("apt-get installed no chromium")


@pytest.fixture(scope="session")
def tiny_workflow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny study run once per session with --cores 2; ``run.out`` holds Snakemake's output.

    Tests read it and may add files beside the results (a config, a report), but a test that
    runs jobs works on a copy (``shutil.copytree(tiny_workflow, ..., symlinks=True)``)."""
    workdir = make_workdir(tmp_path_factory.mktemp("cores2"))
    run = snakemake(workdir, "--cores", "2")
    (workdir / "run.out").write_text(run.stdout + run.stderr)
    return workdir


@pytest.fixture(scope="session")
def tiny_workflow_one_core(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny study run again, in another folder, with --cores 1 (to compare bytes)."""
    workdir = make_workdir(tmp_path_factory.mktemp("cores1"))
    snakemake(workdir, "--cores", "1")
    return workdir


# --------------------------------------------------------------------------- real-data skips

UNMIRRORED = f"skipped without {MIRROR_ENV}"
"""The summary line's category of a real-data test that skipped."""


def _real_data_skip(report: pytest.TestReport) -> bool:
    """A skipped test marked ``realdata``, or one whose skip reason names the mirror."""
    return (
        report.skipped
        and not hasattr(report, "wasxfail")
        and ("realdata" in report.keywords or MIRROR_ENV in str(report.longrepr))
    )


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    if _real_data_skip(report):
        return UNMIRRORED, "s", "SKIPPED"
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = terminalreporter.stats.get(UNMIRRORED, [])
    if not skipped:
        return
    terminalreporter.write_sep("=", f"{len(skipped)} real-data test(s) {UNMIRRORED}")
    where = [report.longrepr for report in skipped if isinstance(report.longrepr, tuple)]
    reasons = Counter((path, line, why.removeprefix("Skipped: ")) for path, line, why in where)
    for (path, line, reason), count in sorted(reasons.items()):
        shown = os.path.relpath(path, terminalreporter.startpath)
        terminalreporter.write_line(f"SKIPPED [{count}] {shown}:{line}: {reason}")
    terminalreporter.write_line(
        f"{MIRROR_ENV} names the local copy of the datasets (one folder per dataset): "
        f"export {MIRROR_ENV}=/path/to/datasets, then run them again"
    )
