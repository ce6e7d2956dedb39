"""Where each real dataset comes from and how its files are verified (docs/datasets.md).

The registry is data: ``debiaseval/resources/datasets.yaml`` (also reachable as
``resources/datasets.yaml`` at the repository root) lists, per dataset, its canonical
URL, the SHA-256 values its archive and files may have, its licence and its citation.
It is read through :mod:`importlib.resources`, so an installed package finds it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

__all__ = ["REGISTRY_FILE", "SOURCES", "DatasetSource", "load_sources"]

REGISTRY_FILE = "resources/datasets.yaml"
"""The registry's path inside the ``debiaseval`` package."""


@dataclass(frozen=True)
class DatasetSource:
    """A real dataset's canonical origin, its verified files and its terms of use.

    ``files`` maps a path relative to the dataset folder to the accepted SHA-256
    values; ``()`` means the file is required but its content is not verified.
    ``url`` is ``None`` for datasets that can only be obtained by hand, in which
    case ``manual_instructions`` says what to obtain and where to put it. ``archive`` is
    false when ``url`` is the dataset's one file itself (no archive to extract): the download
    is saved under that file's name.
    """

    name: str
    url: str | None
    archive_sha256: str | None
    archive_root: str
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    manual_instructions: str | None = None
    licence: str = ""
    citation: str = ""
    archive: bool = True


_KEYS = frozenset(
    {
        "url",
        "archive_sha256",
        "archive_root",
        "archive",
        "files",
        "manual_instructions",
        "licence",
        "citation",
    }
)


def _source(name: str, entry: Mapping[str, Any]) -> DatasetSource:
    unknown = set(entry) - _KEYS
    if unknown:
        raise ValueError(f"{REGISTRY_FILE}: {name}: unknown keys {', '.join(sorted(unknown))}")
    files = {path: tuple(values or ()) for path, values in entry["files"].items()}
    archive = bool(entry.get("archive", True))
    if not archive and len(files) != 1:
        raise ValueError(f"{REGISTRY_FILE}: {name}: archive: false needs exactly one file")
    return DatasetSource(
        name=name,
        url=entry["url"],
        archive_sha256=entry["archive_sha256"],
        archive_root=entry["archive_root"],
        files=files,
        manual_instructions=entry.get("manual_instructions"),
        licence=entry.get("licence", ""),
        citation=entry.get("citation", ""),
        archive=archive,
    )


def load_sources(text: str | None = None) -> dict[str, DatasetSource]:
    """Parse the registry (``text``, default the packaged ``datasets.yaml``), in file order."""
    if text is None:
        text = resources.files("debiaseval").joinpath(REGISTRY_FILE).read_text(encoding="utf-8")
    return {name: _source(name, entry) for name, entry in yaml.safe_load(text).items()}


SOURCES: dict[str, DatasetSource] = load_sources()
"""Every real dataset by name: coat, yahoo-r3, ml-100k, ml-1m, librarything, jester5k."""
