"""Parquet I/O at the edges: deterministic bytes, atomic writes, damaged outputs found."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from debiaseval.io.errors import UnreadableFileError

__all__ = [
    "DAMAGED",
    "DAMAGE_CHECKED",
    "FOREIGN",
    "SET_ASIDE",
    "MoveFailed",
    "OutputDamage",
    "atomic_path",
    "current_umask",
    "damage_of",
    "index_sizes",
    "is_readable_parquet",
    "move_across",
    "move_outputs",
    "output_damage",
    "read_only_message",
    "read_parquet",
    "sha256_file",
    "write_csv",
    "write_parquet",
    "write_text",
]

_MAGIC = b"PAR1"


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


def _unreadable(path: Path, error: Exception) -> UnreadableFileError:
    """The error for damaged Parquet file ``path``, which it carries (a workflow
    job names the rule that writes it instead: debiaseval.workflow.repair.name_the_rule)."""
    reason = " ".join(str(error).split()).rstrip(".")
    unreadable = UnreadableFileError(
        f"{path} is not a readable Parquet file ({reason}); rerun the job that writes it: "
        f"snakemake --forcerun {path} (or delete the file and run again)"
    )
    unreadable.path = os.fspath(path)
    return unreadable


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
            return _parquet_damage(fh, os.fstat(fh.fileno()).st_size, path) is None
    except OSError:
        return False


_PNG_HEAD = b"\x89PNG\r\n\x1a\n"
_PNG_TAIL = b"\x00\x00\x00\x00IEND\xaeB`\x82"
DAMAGE_CHECKED = (".parquet", ".png", ".svg", ".html", ".md")
"""The outputs whose damage :func:`damage_of` can prove, by file name suffix."""


def _io_error(error: Exception) -> bool:
    """An error of the file system (permission, I/O, ...), not of the bytes: it has an errno."""
    return isinstance(error, OSError) and error.errno is not None


def _parquet_damage(fh: BinaryIO, size: int, path: str | os.PathLike[str]) -> str | None:
    head = fh.read(4)
    if size < 12:
        return f"{size} bytes, shorter than any Parquet file"
    fh.seek(-8, os.SEEK_END)
    footer = fh.read(8)
    if head != _MAGIC:
        return "Parquet magic bytes not found at the start"
    if footer[4:] != _MAGIC:
        return "Parquet magic bytes not found at the end (truncated?)"
    length = int.from_bytes(footer[:4], "little")
    if length + 12 > size:
        return f"footer of {length} bytes in a file of {size} bytes"
    try:
        pq.read_metadata(path)
    except Exception as error:  # pyarrow raises several kinds for bad bytes
        if _io_error(error):
            raise
        return "footer does not parse: " + " ".join(str(error).split()).rstrip(".")
    return None


def _text_damage(data: bytes, end: bytes | None) -> str | None:
    if not data:
        return "empty"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (byte {error.start})"
    if end is not None and not text.rstrip().endswith(end.decode()):
        return f"does not end with {end.decode()} (truncated?)"
    if end is None and not text.endswith("\n"):
        return "does not end with a line break (truncated?)"
    return None


def damage_of(path: str | os.PathLike[str]) -> str | None:
    """Why the output ``path`` is provably damaged, or None when it looks whole.

    By suffix (:data:`DAMAGE_CHECKED`): Parquet, the magic bytes at both ends and a
    footer that parses; PNG, its signature and final IEND chunk; SVG and HTML, UTF-8
    text ending with ``</svg>`` / ``</html>``; Markdown, non-empty UTF-8 text ending with
    a line break. Other files are never called damaged. An ``OSError`` of the file
    system (permission denied, an I/O error) is raised, never taken for damage.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in DAMAGE_CHECKED:
        return None
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if suffix == ".parquet":
            return _parquet_damage(fh, size, path)
        if suffix == ".png":
            head = fh.read(8)
            fh.seek(max(size - 12, 0))
            tail = fh.read(12)
            if head != _PNG_HEAD:
                return "PNG signature not found"
            return (
                None if tail == _PNG_TAIL else "PNG does not end with its IEND chunk (truncated?)"
            )
        data = fh.read()
    return _text_damage(data, {".svg": b"</svg>", ".html": b"</html>"}.get(suffix))


@dataclass
class OutputDamage:
    """What :func:`output_damage` found: damaged files, and files it could not read."""

    damaged: list[tuple[Path, str]] = field(default_factory=list)
    unreadable: list[tuple[Path, str]] = field(default_factory=list)


def _reason(error: OSError) -> str:
    name = errno.errorcode.get(error.errno or 0, "")
    text = error.strerror or " ".join(str(error).split())
    return f"{text} [{name}]" if name else text


def output_damage(
    folder: str | os.PathLike[str], *, made: Iterable[str] | None = None
) -> OutputDamage:
    """Check every output under ``folder`` that :func:`damage_of` can judge; change nothing.

    ``made``: the outputs the workflow's rules made (Snakemake's records,
    :func:`made_outputs`); when given, a file that is none of them, nor inside one of them
    (a ``directory()`` output), is a user's own and never judged. Files under ``.damaged/`` and
    ``.foreign/`` (:data:`SET_ASIDE`) and temporary files of writes in progress
    (``.name.*.tmp``) are skipped. Symlinked folders are followed, never in a loop nor out of
    ``folder`` to a folder above it (:func:`_walk`). A file the file system does not let us read
    (permission denied, an I/O error) is reported, never taken for damage, and so is a folder
    holding recorded outputs that cannot be listed.
    """
    found = OutputDamage()
    root = Path(folder)
    if not root.is_dir():
        return found
    recorded = None if made is None else {os.path.normpath(p) for p in made}
    files, unlisted = _walk(root)
    # a folder of one's own that cannot be listed is none of our business
    found.unreadable += [
        (path, reason)
        for path, reason in unlisted
        if recorded is None or any(_under(output, path) for output in recorded)
    ]
    candidates = (p for p in files if p.suffix.lower() in DAMAGE_CHECKED)
    for path in sorted(candidates):
        if recorded is not None and not _made_by_a_rule(path, recorded):
            continue
        try:
            if not path.is_file():
                continue
            reason = damage_of(path)
        except OSError as error:
            found.unreadable.append((path, _reason(error)))
            continue
        if reason is not None:
            found.damaged.append((path, reason))
    return found


def _walk(root: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files under ``root`` at their paths through it, and the folders that could not be
    listed (with the reason), but what lies in :data:`SET_ASIDE` folders.

    Symlinked folders are followed (``results/<study>/e1`` may be a link to another disk), each
    real folder once and by its own name first (the folders that are no link are walked before
    any link), and never into a folder that holds ``root`` itself (a link back into the study
    or out of it to a folder above: a loop).
    """
    top = root.resolve()
    seen: set[Path] = set()
    files: list[Path] = []
    unlisted: list[tuple[Path, str]] = []
    plain, linked = [root], []
    while plain or linked:
        folder = plain.pop() if plain else linked.pop()
        real = folder.resolve()
        if real in seen or (folder != root and top.is_relative_to(real)):
            continue
        seen.add(real)
        try:
            with os.scandir(folder) as entries:
                listed = [(e.name, e.is_dir(), e.is_file(), e.is_symlink()) for e in entries]
        except OSError as error:
            unlisted.append((folder, _reason(error)))
            continue
        for name, is_dir, is_file, is_link in listed:
            if is_dir and name not in SET_ASIDE:
                (linked if is_link else plain).append(folder / name)
            elif is_file:
                files.append(folder / name)
    return files, unlisted


DAMAGED = ".damaged"
"""The folder of a study's results where damaged outputs are set aside, never deleted."""
FOREIGN = ".foreign"
"""The folder of a study's results where results copied in from another config are set aside
(:func:`debiaseval.workflow.studies.set_aside_foreign`)."""
SET_ASIDE = (DAMAGED, FOREIGN)
"""The folders of what the workflow set aside: never judged, never read."""


def _under(output: str, folder: Path) -> bool:
    """Whether the recorded ``output`` is ``folder`` or lies inside it (by name)."""
    name = os.path.normpath(folder)
    return output == name or output.startswith(name + os.sep)


def _made_by_a_rule(path: Path, recorded: set[str]) -> bool:
    """Whether ``path`` or a folder above it is an output the workflow recorded."""
    return any(os.path.normpath(p) in recorded for p in (path, *path.parents))


def move_outputs(
    paths: Iterable[str], folder: str | os.PathLike[str], *, stamp: str, aside: str = DAMAGED
) -> tuple[Path, list[str]]:
    """Move the files and folders of ``paths`` that lie under ``folder`` into
    ``folder/<aside>/<stamp>/`` (one of :data:`SET_ASIDE`), each at its path relative to
    ``folder``; return that place and what was moved. A path lies under ``folder`` by its
    name (``results/<study>/e1/...`` through a symlinked ``e1`` does) or its real path; a move
    to another file system copies, checks the copy, then removes the original
    (:func:`move_across`). Nothing is unlinked: a symlink moves as the link it is. A move that
    fails raises :class:`MoveFailed`, which says what was moved before it."""
    root = Path(folder)
    base = Path(os.path.normpath(os.path.abspath(root)))
    place = root / aside / stamp
    for n in range(1, 1000):  # never into an earlier run's place
        if not place.exists():
            break
        place = root / aside / f"{stamp}-{n}"
    moved: list[str] = []
    for path in paths:
        target = Path(path)
        if not (target.exists() or target.is_symlink()):
            continue
        relative = _inside(target, base)
        if relative is None:
            continue
        destination = place / relative
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            move_across(target, destination)
        except OSError as error:
            raise MoveFailed(path, place, moved, error) from error
        moved.append(path)
    return place, moved


def _inside(path: Path, base: Path) -> Path | None:
    """``path`` relative to the folder ``base`` (absolute, normalised) when it lies inside it:
    by name (through a symlinked folder inside ``base``), or by the real path of its folder
    (``base`` itself a link); else None. ``path`` itself is never resolved (a link is one)."""
    named = Path(os.path.normpath(os.path.abspath(path)))
    if base in named.parents:
        return named.relative_to(base)
    real, real_base = path.parent.resolve() / path.name, base.resolve()
    return real.relative_to(real_base) if real_base in real.parents else None


class MoveFailed(OSError):
    """:func:`move_outputs` could not move ``path`` into ``place``; ``moved`` went before it."""

    def __init__(self, path: str, place: Path, moved: list[str], error: OSError) -> None:
        super().__init__(error.errno, f"cannot move {path} to {place}/ ({_reason(error)})")
        self.path, self.place, self.moved = path, place, moved


def move_across(source: Path, destination: Path) -> None:
    """Rename ``source`` to ``destination``; across file systems (``EXDEV``), copy it beside
    ``destination`` under a temporary name, check that every byte arrived, rename the copy into
    place, and only then remove ``source`` (a symlink is copied as the link it is)."""
    try:
        os.replace(source, destination)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    copy = destination.with_name(f".{destination.name}.{os.getpid()}.moving")
    try:
        if source.is_symlink():
            os.symlink(os.readlink(source), copy)
        elif source.is_dir():
            shutil.copytree(source, copy, symlinks=True)
        else:
            shutil.copy2(source, copy)
        if _contents(source) != _contents(copy):
            raise OSError(errno.EIO, f"the copy of {source} on the other file system differs")
        os.replace(copy, destination)
    except BaseException:
        if copy.is_dir() and not copy.is_symlink():
            shutil.rmtree(copy, ignore_errors=True)
        elif copy.exists() or copy.is_symlink():
            copy.unlink()
        raise
    if source.is_dir() and not source.is_symlink():
        shutil.rmtree(source)
    else:
        source.unlink()


def _contents(path: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file under ``path`` (itself, for a file), the target
    of every symlink: what a copy must reproduce."""
    if path.is_symlink():
        return {".": "-> " + os.readlink(path)}
    if not path.is_dir():
        return {".": sha256_file(path)}
    found = {}
    for folder, folders, names in os.walk(path):
        for name in sorted([*folders, *names]):
            item = Path(folder, name)
            key = str(item.relative_to(path))
            if item.is_symlink():
                found[key] = "-> " + os.readlink(item)
            elif item.is_file():
                found[key] = sha256_file(item)
    return found


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_only_message(folder: str | os.PathLike[str]) -> str | None:
    """One line when ``folder`` exists but this process may not write in it, else None."""
    folder = Path(folder)
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK, effective_ids=True):
        return (
            f"debiaseval: {folder}/ is read-only for this user: no job can write its outputs "
            f"(nothing was run); make {folder}/ writable, or run in a copy of the workflow"
        )
    return None


def write_text(text: str, path: str | os.PathLike[str]) -> None:
    """Write a text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_csv(df: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write ``df`` (without its index) as CSV atomically, byte-identical for identical frames."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, lineterminator="\n")
