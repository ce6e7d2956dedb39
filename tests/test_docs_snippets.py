"""The docs' Python snippets that read results run against a finished run, so that a stale
path (one from before studies, ``results/e1/coat/...``) fails a test (docs/contributing.md).

A snippet is a fenced ``python`` block of README.md or docs/ that mentions ``results/``. It
runs in a folder whose ``results/<study>/`` is, for every study the snippet names, the tiny
run's ``results/tiny/`` (the synthetic dataset). A snippet that cannot run there (it needs
another dataset, a package that is not a dependency, or an export) carries the line
``<!-- snippet: not run: <why> -->`` right above its fence; the reason is required.

The run against the tiny whole-workflow run is ``test_the_docs_snippets_read_the_tiny_run``
in tests/test_workflow.py (it reuses that module's run); here, the snippets are found and
run against a results tree made by hand.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = re.compile(r"<!--\s*snippet:\s*not run(?::\s*(?P<why>.*?))?\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```", re.S | re.M)
STUDY = re.compile(r"results/([A-Za-z0-9][A-Za-z0-9._-]*)/")


@dataclass(frozen=True)
class Snippet:
    """A fenced Python block of the docs that mentions ``results/``."""

    path: str  # relative to the repository
    line: int  # of the opening fence
    code: str
    not_run: str | None  # the reason of its `<!-- snippet: not run: ... -->` marker

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def docs_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def snippets() -> list[Snippet]:
    """Every fenced ``python`` block of the docs that mentions ``results/``."""
    found = []
    for path in docs_files():
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group("lang") not in ("python", "py") or "results/" not in match["code"]:
                continue
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = NOT_RUN.search(before)
            reason = None if marker is None else (marker.group("why") or "").strip()
            found.append(
                Snippet(
                    str(path.relative_to(ROOT)),
                    text.count("\n", 0, match.start()) + 1,
                    match.group("code"),
                    reason,
                )
            )
    return found


def run_snippet(snippet: Snippet, results: Path, folder: Path) -> subprocess.CompletedProcess:
    """Run ``snippet`` in ``folder``, where ``results/<study>/`` is ``results`` (a finished
    study's folder) for every study the snippet names."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results").mkdir(exist_ok=True)
    for study in sorted(set(STUDY.findall(snippet.code))):
        link = folder / "results" / study
        if not link.exists():
            link.symlink_to(results.resolve(), target_is_directory=True)
    return subprocess.run(
        [sys.executable, "-c", snippet.code],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )


def check_snippets(results: Path, folder: Path) -> list[str]:
    """Run every runnable snippet against ``results``; the failures, one line each."""
    failures = []
    for n, snippet in enumerate(s for s in snippets() if s.not_run is None):
        done = run_snippet(snippet, results, folder / f"snippet{n}")
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            failures.append(f"{snippet.where}: {last}")
    return failures


def test_the_snippets_that_read_results_are_found_and_every_skip_says_why() -> None:
    found = snippets()
    assert any(s.path == "docs/report.md" and s.not_run is None for s in found)
    assert all(s.not_run for s in found if s.not_run is not None), [
        s.where for s in found if s.not_run == ""
    ]
    for snippet in found:  # the paths of a study-less layout are gone from every snippet
        assert not re.search(r"results/(e\d|config\.yaml|data/)", snippet.code), snippet.where


def _tiny_results(folder: Path) -> Path:
    """A results folder holding E1's synthetic summary, with a provenance record."""
    from debiaseval.workflow.provenance import write_table

    table = folder / "e1" / "synthetic" / "summary.parquet"
    table.parent.mkdir(parents=True)
    record = {"experiment": "e1", "config_sha256": "ab" * 32, "data": {}, "seeds": 2}
    record["versions"] = {"python": "3"}
    write_table(pd.DataFrame({"value": [0.5]}), table, record)
    return folder


def test_the_snippets_run_against_a_results_tree(tmp_path: Path) -> None:
    results = _tiny_results(tmp_path / "tiny")
    assert check_snippets(results, tmp_path / "run") == []


def test_a_stale_path_fails(tmp_path: Path) -> None:
    results = _tiny_results(tmp_path / "tiny")
    stale = Snippet(
        "x.md", 1, 'import pandas as pd\npd.read_parquet("results/e1/coat/summary.parquet")\n', None
    )
    done = run_snippet(stale, results, tmp_path / "run")
    assert done.returncode != 0 and "summary.parquet" in done.stderr


@pytest.mark.parametrize(
    "line, reason",
    [
        ("<!-- snippet: not run: needs implicit -->", "needs implicit"),
        ("<!-- snippet: not run -->", ""),
        ("text", None),
    ],
)
def test_the_not_run_marker(line: str, reason: str | None) -> None:
    marker = NOT_RUN.search(line)
    assert (None if marker is None else (marker.group("why") or "").strip()) == reason
