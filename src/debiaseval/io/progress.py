"""Stage-level progress of an in-process run (the Python API), as RecBole and Cornac give it.

:func:`debiaseval.api.run` opens :func:`reporting` (``progress=True``, the default); the
experiments' ``run`` functions mark their stages with :func:`stage` and iterate their seeds
through :func:`staged`. Each stage is one line on stderr, with the time since the run
started::

    debiaseval: e1 on synthetic: seed 0 (1 of 2) [0.0 s]
    debiaseval: e1 on synthetic: seed 0: training ItemKNN [1.2 s]
    debiaseval: e1 on synthetic: aggregating [9.8 s]
    debiaseval: e1 on synthetic: done [10.4 s]

Outside :func:`reporting` (the workflow's jobs, ``progress=False``) the marks do nothing.
User-given names are inert for the terminal (:func:`~debiaseval.io.terminal.inert_terminal`).
The ground floor: imports nothing of the package but :mod:`debiaseval.io.terminal`.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TextIO, TypeVar

from debiaseval.io.terminal import inert_terminal

__all__ = ["reporting", "stage", "staged"]

_REPORT: ContextVar[Callable[[str], None] | None] = ContextVar("debiaseval_progress", default=None)

T = TypeVar("T")


@contextlib.contextmanager
def reporting(label: str, *, enabled: bool = True, stream: TextIO | None = None) -> Iterator[None]:
    """Report the stages marked inside the block as ``debiaseval: <label>: <stage> [<s> s]``
    lines on ``stream`` (default stderr), and ``done`` at its end; nothing when not
    ``enabled``. Nested, the inner block reports under the outer one's label."""
    if not enabled or _REPORT.get() is not None:
        yield
        return
    start = time.monotonic()
    shown = inert_terminal(label)

    def report(text: str) -> None:
        line = f"debiaseval: {shown}: {inert_terminal(text)} [{time.monotonic() - start:.1f} s]"
        print(line, file=stream or sys.stderr, flush=True)

    token = _REPORT.set(report)
    try:
        yield
        report("done")
    finally:
        _REPORT.reset(token)


def stage(text: str) -> None:
    """Mark the start of a stage (a no-op outside :func:`reporting`)."""
    report = _REPORT.get()
    if report is not None:
        report(text)


def staged(seeds: Iterable[T]) -> Iterator[T]:
    """``seeds``, each marked as a stage: ``seed <s> (<i> of <n>)``."""
    items = list(seeds)
    for position, seed in enumerate(items, 1):
        stage(f"seed {seed} ({position} of {len(items)})")
        yield seed
