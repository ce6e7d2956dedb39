"""Snakemake's file locks, kept whole when runs overlap in one folder.

Snakemake 9 (``snakemake.persistence.file.FilePersistence``) keeps the locks of every run in
``.snakemake/locks/`` and, when a run ends, removes that whole folder: the locks of the runs
still going go with it, and a run taking its locks at that moment dies with Snakemake's own
``FileNotFoundError`` on ``.snakemake/locks/0.input.lock`` (a third concurrent run, issue 43).
:func:`guard_locks` makes every run of this workflow remove only its own lock files (and the
folder once empty), create the folder again when another run removed it, and skip a lock
file that vanishes while it is read (its run has ended); should the folder vanish every time it
is tried (:data:`ATTEMPTS`), the run stops with one line. ``snakemake --unlock`` still removes
every lock, as it should after a killed run.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["ATTEMPTS", "guard_locks"]

ATTEMPTS = 5
"""How often reading or writing the locks is tried while another run removes them."""

_GUARDED = "_debiaseval_guarded"


def _retried(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` tried again while a lock file or folder vanishes under it (another run's
    end); a generator's items are gathered, so that a retry starts over."""

    def attempt(self: Any, *args: Any) -> Any:
        for _ in range(ATTEMPTS):
            try:
                os.makedirs(self._lockdir, exist_ok=True)
                result = method(self, *args)
                return list(result) if isinstance(result, Iterable) else result
            except FileNotFoundError:
                continue
        from snakemake.exceptions import WorkflowError

        raise WorkflowError(
            f"debiaseval: {self._lockdir}/ was removed {ATTEMPTS} times while this run took its "
            "locks (other Snakemake runs in this folder ending): nothing was run; run again"
        )

    return attempt


def _delete_own_locks(self: Any) -> None:
    """Remove this run's lock files, and the folder only when no other run has locks in it."""
    for lockfile in self._lockfile.values():
        with contextlib.suppress(FileNotFoundError):
            os.remove(lockfile)
    self._lockfile.clear()
    with contextlib.suppress(OSError):  # not empty: another run's locks
        os.rmdir(self._lockdir)


def guard_locks() -> bool:
    """Make Snakemake's file persistence in this process keep other runs' locks (see the
    module); once per process. False when this Snakemake has no such class or methods (then it
    is left as it is)."""
    try:
        from snakemake.persistence.file import FilePersistence
    except ImportError:
        return False
    methods = ("_read_locks", "_write_locks", "_delete_locks", "cleanup_locks")
    if not all(hasattr(FilePersistence, name) for name in methods):
        return False
    if getattr(FilePersistence, _GUARDED, False):
        return True
    delete_all = FilePersistence._delete_locks

    def cleanup_locks(self: Any) -> None:  # --unlock: every lock, as Snakemake does
        delete_all(self)

    FilePersistence._read_locks = _retried(FilePersistence._read_locks)
    FilePersistence._write_locks = _retried(FilePersistence._write_locks)
    FilePersistence._delete_locks = _delete_own_locks
    FilePersistence.cleanup_locks = cleanup_locks
    setattr(FilePersistence, _GUARDED, True)
    return True
