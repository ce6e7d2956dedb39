"""Parquet I/O at the edges: deterministic bytes, atomic writes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["atomic_path", "current_umask", "read_parquet", "write_parquet", "write_text"]


def current_umask() -> int:
    """The process's umask (read by setting it and restoring it at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class atomic_path:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    Nothing partial is ever left at ``path``: on an exception the temporary file
    is removed and ``path`` is untouched. The file gets the mode the umask
    gives a newly created file (0666 & ~umask), not mkstemp's 0600.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.tmp: Path | None = None

    def __enter__(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(
            prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
        )
        os.close(fd)
        self.tmp = Path(name)
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self.tmp is not None
        if exc_type is None:
            # mkstemp creates the file with mode 0600: give it the mode a plain open() would.
            os.chmod(self.tmp, 0o666 & ~current_umask())
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def write_parquet(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``df`` (without its index) atomically, byte-identical for identical frames."""
    table = pa.Table.from_pandas(df.reset_index(drop=True), preserve_index=False)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=True, write_statistics=True)


def read_parquet(path: str | os.PathLike[str], columns: list[str] | None = None) -> pd.DataFrame:
    """Read a Parquet file written by :func:`write_parquet`."""
    return pq.read_table(path, columns=columns).to_pandas()


def write_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
