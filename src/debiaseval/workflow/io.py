"""Parquet I/O at the edges: deterministic bytes, atomic writes, unreadable files named."""

from __future__ import annotations

import base64
import json
import os
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "UnreadableFileError",
    "atomic_path",
    "current_umask",
    "index_sizes",
    "is_readable_parquet",
    "read_parquet",
    "remove_unreadable_parquet",
    "write_csv",
    "write_parquet",
    "write_text",
]

_MAGIC = b"PAR1"


class UnreadableFileError(OSError):
    """A Parquet file a job reads is damaged (truncated, overwritten, not Parquet)."""


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


def _producing_rule(path: Path) -> str | None:
    """The rule Snakemake recorded as the writer of ``path`` (its ``.snakemake/metadata``), if any.

    Best effort: the record is looked up in the current working directory, the
    workflow's; ``None`` when there is none or it cannot be read.
    """
    name = base64.urlsafe_b64encode(os.fspath(path).encode()).decode()
    record = Path(".snakemake", "metadata", name)
    try:
        rule = json.loads(record.read_text(encoding="utf-8")).get("rule")
    except (OSError, ValueError, AttributeError):
        return None
    return rule if isinstance(rule, str) else None


def _unreadable(path: Path, error: Exception) -> UnreadableFileError:
    reason = " ".join(str(error).split()).rstrip(".")
    rule = _producing_rule(path)
    force = f"snakemake --forcerun {rule}" if rule else f"snakemake --forcerun {path}"
    return UnreadableFileError(
        f"{path} is not a readable Parquet file ({reason}); rerun the job that writes it: "
        f"{force} (or delete the file and run again)"
    )


def read_parquet(path: str | os.PathLike[str], columns: list[str] | None = None) -> pd.DataFrame:
    """Read a Parquet file written by :func:`write_parquet`.

    A damaged file raises :class:`UnreadableFileError` naming it and the
    ``--forcerun`` that rebuilds it; a missing one raises ``FileNotFoundError``.
    """
    path = Path(path)
    try:
        table = pq.read_table(path, columns=columns)
    except FileNotFoundError:
        raise
    except (pa.ArrowInvalid, OSError) as error:
        if is_readable_parquet(path):
            raise  # a readable file: the error is another (a missing column, say)
        raise _unreadable(path, error) from error
    return table.to_pandas()


def index_sizes(
    user_index: str | os.PathLike[str], item_index: str | os.PathLike[str]
) -> dict[str, int]:
    """``n_users`` and ``n_items``: the lengths of a dataset's users and items tables."""
    return {
        "n_users": len(read_parquet(user_index, columns=["user"])),
        "n_items": len(read_parquet(item_index, columns=["item"])),
    }


def is_readable_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` starts and ends with Parquet's magic bytes and its footer parses."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(0, os.SEEK_END)
            if fh.tell() < 12:
                return False
            fh.seek(-4, os.SEEK_END)
            tail = fh.read(4)
        if head != _MAGIC or tail != _MAGIC:
            return False
        pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError):
        return False
    return True


def remove_unreadable_parquet(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete every ``*.parquet`` under ``folder`` that is not readable; return their paths.

    Run at the start of the workflow: Snakemake then sees the files missing and
    reruns the jobs that write them (a damaged intermediate would otherwise make
    every later job fail with "Parquet magic bytes not found"). Temporary files
    of writes in progress (``.name.*.tmp``) are not ``*.parquet`` and are left alone.
    """
    removed = []
    root = Path(folder)
    if not root.is_dir():
        return removed
    for path in sorted(root.rglob("*.parquet")):
        if path.is_file() and not is_readable_parquet(path):
            path.unlink()
            removed.append(path)
    return removed


def write_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_csv(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``df`` (without its index) as CSV atomically, byte-identical for identical frames."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, lineterminator="\n")
