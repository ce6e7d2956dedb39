"""Job runtime helpers for the workflow's scripts: logging, thread limits, one-line errors."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from threadpoolctl import threadpool_limits

from debiaseval.io import errors
from debiaseval.io.terminal import inert_terminal
from debiaseval.workflow.repair import name_the_rule

__all__ = ["USER_ERRORS", "job", "one_line", "warn"]

USER_ERRORS: tuple[type[Exception], ...] = tuple(getattr(errors, name) for name in errors.__all__)
"""Errors the user fixes (config, data, files), every class of :mod:`debiaseval.io.errors`: one
line on the console, no traceback."""


def one_line(error: BaseException, log_path: str | os.PathLike[str]) -> str:
    """``Name: message (traceback in <log>)``, the message's whitespace, line breaks included,
    folded to one line, then its other control characters escaped
    (:func:`~debiaseval.io.terminal.inert_terminal`). The message is folded before the error's
    own escaping (``BaseException.__str__``), so a message written on several lines reads as
    one, not with its breaks shown as ``\n``."""
    message = inert_terminal(" ".join(BaseException.__str__(error).split()))
    return f"{type(error).__name__}: {message} (traceback in {os.fspath(log_path)})"


def warn(logger: logging.Logger, message: str) -> None:
    """Log a warning and print it on stderr too, where it shows beside Snakemake's output
    (the log alone would hide it): ``warning: <message>`` on one line, inert for a terminal."""
    logger.warning(message)
    print(f"warning: {inert_terminal(' '.join(message.split()))}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def job(log_path: str | os.PathLike[str], threads: int = 1) -> Iterator[logging.Logger]:
    """Run a job body with logging to ``log_path`` and BLAS/OpenMP pools capped at ``threads``.

    numba's pool, which ranks users in parallel (:func:`debiaseval.recommenders.ranking.top_k`),
    gets ``threads`` threads too (``NUMBA_NUM_THREADS``; numba is imported later, lazily).

    Warnings and tracebacks go to the log. A user error (:data:`USER_ERRORS`)
    prints one line on stderr naming the log and exits with status 1; any other
    exception is re-raised with its traceback. Outputs are written atomically,
    so a failed job leaves none behind.
    """
    handler = logging.FileHandler(log_path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    # numba's pool (the ranking kernel's threads) reads this when numba is first imported
    os.environ["NUMBA_NUM_THREADS"] = str(max(1, int(threads)))
    logger = logging.getLogger("debiaseval")
    user_error: BaseException | None = None
    try:
        with threadpool_limits(limits=threads):
            yield logger
    except USER_ERRORS as error:
        logger.exception("job failed")
        user_error = name_the_rule(error)
    except BaseException:
        logger.exception("job failed")
        raise
    finally:
        root.removeHandler(handler)
        handler.close()
        sys.stderr.flush()
    if user_error is not None:
        print(one_line(user_error, log_path), file=sys.stderr, flush=True)
        raise SystemExit(1)
