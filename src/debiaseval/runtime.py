"""Job runtime helpers for the workflow's scripts: logging and thread limits."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator

from threadpoolctl import threadpool_limits

__all__ = ["job"]


@contextlib.contextmanager
def job(log_path: str | os.PathLike[str], threads: int = 1) -> Iterator[logging.Logger]:
    """Run a job body with logging to ``log_path`` and BLAS/OpenMP pools capped at ``threads``.

    Warnings and tracebacks go to the log too, so a failed job explains itself
    in ``logs/`` as well as on the console (the exception is re-raised).
    """
    handler = logging.FileHandler(log_path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    logger = logging.getLogger("debiaseval")
    try:
        with threadpool_limits(limits=threads):
            yield logger
    except BaseException:
        logger.exception("job failed")
        raise
    finally:
        root.removeHandler(handler)
        handler.close()
        sys.stderr.flush()
