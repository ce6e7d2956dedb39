"""Child processes with a deadline, ended with every process they started.

:func:`run_bounded` is how the package starts a child process (the plugin import probe, git):
the child leads a process group of its own (``start_new_session``), its output goes to
temporary files rather than pipes (so a grandchild that keeps them open cannot make the parent
wait for their end), and when the child exits, or its deadline passes, the whole group is
killed. A grandchild that leaves the group itself (``setsid``, a daemon) escapes the kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

__all__ = ["Finished", "run_bounded"]

_POLL = 0.02
"""Seconds between two looks at whether the child has exited."""


@dataclass(frozen=True)
class Finished:
    """How a child of :func:`run_bounded` ended: its return code (negative: the signal; None
    when the deadline ended it), the last bytes of its stdout and stderr, and whether it ran
    out of time."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool


def _exited(pid: int) -> bool:
    """Whether child ``pid`` has exited, leaving it unreaped (its pid, hence its group id,
    stays reserved until :meth:`subprocess.Popen.wait`)."""
    try:
        found = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return found is not None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # nothing left in the group


def _tail(fh: BinaryIO, limit: int) -> bytes:
    size = fh.seek(0, os.SEEK_END)
    fh.seek(max(size - limit, 0))
    return fh.read()


def run_bounded(
    argv: Sequence[str],
    *,
    deadline: float,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    limit: int = 1 << 20,
) -> Finished:
    """Run ``argv`` (stdin from ``/dev/null``) for at most ``deadline`` seconds; then, or once
    it exits, kill its process group with SIGKILL. Returns the last ``limit`` bytes of its
    stdout and stderr. Raises ``OSError`` when the program cannot be started."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        end = time.monotonic() + deadline
        timed_out = False
        while not _exited(child.pid):
            if time.monotonic() >= end:
                timed_out = True
                break
            time.sleep(_POLL)
        _kill_group(child.pid)  # the child leads its group; what it started goes with it
        returncode = child.wait()
        return Finished(
            None if timed_out else returncode, _tail(out, limit), _tail(err, limit), timed_out
        )
