"""Which config made a study: two files of the same name are never one study, and results
copied in from another config are never taken for current.

A study named after its config file's stem (``--configfile cfg/t1.yaml`` is the study ``t1``,
docs/getting-started.md#studies) records that file in ``results/<study>/study.json`` on its
first run that runs jobs. A later run whose last config file has the same stem but is another
file (``cfg2/t1.yaml``) would silently replace the study's results; it is refused before any
job, in one line naming both files and ``study=`` as the way out. A study named by the key
``study`` is the user's explicit choice and is neither checked nor recorded.

Results whose provenance record names another config than the run's are made again
(:func:`set_aside_foreign`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from debiaseval.workflow.io import FOREIGN, made_outputs, move_outputs, write_text
from debiaseval.workflow.provenance import config_hash, experiment_config, read_provenance

__all__ = ["ORIGIN", "origin_conflict", "record_origin", "set_aside_foreign"]

ORIGIN = "study.json"
"""The file in ``results/<study>/`` naming the config file the study was named after."""


def _as_given(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute;
    normalised, so that ``./cfg/t1.yaml`` and ``cfg/t1.yaml`` are one file."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def _recorded(folder: Path) -> str | None:
    try:
        record = json.loads((folder / ORIGIN).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, or not ours to trust: recorded again by the next run
    configfile = record.get("configfile") if isinstance(record, dict) else None
    return configfile if isinstance(configfile, str) else None


def origin_conflict(
    folder: str | os.PathLike[str], study: str, configfiles: Sequence[str | os.PathLike[str]]
) -> str | None:
    """One line when the study ``study`` (its folder ``folder``), named after the stem of the
    last of ``configfiles``, holds the results of another file of that name; else None."""
    if not configfiles:
        return None
    recorded, given = _recorded(Path(folder)), _as_given(configfiles[-1])
    if recorded is None or recorded == given:
        return None
    return (
        f"debiaseval: study {study!r} ({folder}/) holds the results of {recorded}, and {given} "
        f"has the same name: give this run a study of its own (--config study=<name>, or the "
        f"key study in {given}), or run {recorded}"
    )


def record_origin(
    folder: str | os.PathLike[str], study: str, configfiles: Sequence[str | os.PathLike[str]]
) -> None:
    """Record in ``folder/study.json`` the last of ``configfiles``, which named the study
    ``study``, unless a file is recorded already."""
    folder = Path(folder)
    if not configfiles or _recorded(folder) is not None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    record = {"study": study, "configfile": _as_given(configfiles[-1])}
    write_text(json.dumps(record, indent=2) + "\n", folder / ORIGIN)


def set_aside_foreign(
    folder: str | os.PathLike[str],
    tables: Iterable[str | os.PathLike[str]],
    config: Mapping[str, Any],
    *,
    metadata: str | os.PathLike[str] = ".snakemake/metadata",
    stamp: str | None = None,
) -> list[str]:
    """Make results of another config rebuild; return the lines that name them.

    ``tables``: the aggregate tables of the run, each carrying the record of the config that
    made it (:func:`debiaseval.workflow.provenance.read_provenance`). One whose record names
    another config than this run's part for its experiment is
    - with Snakemake's record (``metadata``): a result of a replaced config, whose jobs
      Snakemake reruns since their params changed; it is named;
    - without one (copied in from another machine or folder, which Snakemake would take for
      current): every file of its experiment's folder (``<eN>/<dataset>/``) that Snakemake
      has no record of is moved into ``folder/.foreign/<stamp>/`` at its relative path, so
      that this config's jobs make them again. Nothing is deleted.
    """
    import time

    made = {os.path.normpath(p) for p in made_outputs(metadata)}
    lines, foreign = [], []
    for table in map(Path, tables):
        if not table.is_file():
            continue
        record = read_provenance(table)
        if record is None:
            continue  # the report refuses it (debiaseval.workflow.report.config_mismatch)
        own = config_hash(experiment_config(config, record["experiment"]))
        if record["config_sha256"] == own:
            continue
        other = f"made by config sha256 {record['config_sha256'][:16]}, not this run's ({own[:16]})"
        if os.path.normpath(table) in made:
            lines.append(f"debiaseval: {table} was {other}: its jobs run again")
        elif table.parent not in foreign:
            foreign.append(table.parent)
            lines.append(
                f"debiaseval: {table} was {other}, and Snakemake has no record of it (copied "
                "in?): its folder's unrecorded files are set aside"
            )
    paths = [
        str(p) for parent in foreign for p in sorted(parent.rglob("*"))
        if p.is_file() and not any(os.path.normpath(q) in made for q in (p, *p.parents))
    ]  # fmt: skip
    if paths:
        stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        place, moved = move_outputs(paths, folder, stamp=stamp, aside=FOREIGN)
        lines.append(
            f"debiaseval: moved {len(moved)} file(s) to {place}/ so that this config's jobs make "
            "them again"
        )
    return lines
