"""The real-data tests say why they skip: without ``DEBIASEVAL_MIRROR`` (a local copy of the
datasets) they skip, and the run's last line counts them as "skipped without
DEBIASEVAL_MIRROR", with a section above it listing each reason and what to set."""

from __future__ import annotations

import os
from collections import Counter

import pytest

from debiaseval.data.download import MIRROR_ENV

UNMIRRORED = f"skipped without {MIRROR_ENV}"
"""The summary line's category of a real-data test that skipped."""


def _real_data_skip(report: pytest.TestReport) -> bool:
    """A skipped test marked ``realdata``, or one whose skip reason names the mirror."""
    return report.skipped and not hasattr(report, "wasxfail") and (
        "realdata" in report.keywords or MIRROR_ENV in str(report.longrepr)
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
