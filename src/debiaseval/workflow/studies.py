"""Which config made a study: two files of the same name are never one study, and results
copied in from another config are never taken for current.

A study named after its config file's stem (``--configfile cfg/t1.yaml`` is the study ``t1``,
docs/getting-started.md#studies) records that file in ``results/<study>/study.json`` and in
``.snakemake/debiaseval/studies/<study>.json`` on its first run that runs jobs; either record
alone keeps the check, and one that is unusable (a folder, not JSON) stops the run in one line.
A later run whose last config file has the same stem but is another file (``cfg2/t1.yaml``)
would silently replace the study's results; it is refused before any job, in one line naming
both files and ``study=`` as the way out. A study named by the key
``study`` is the user's explicit choice and is neither checked nor recorded.

A run whose config differs from the one recorded for its study (``results/<study>/
config.yaml``, written by the run that made the study's results) says so before its first
job: which keys changed, old -> new, in a few lines, and how to keep both studies
(``--config study=NAME``); then it proceeds as Snakemake does (:func:`config_notice`).

Results whose provenance record names another config than the run's are made again
(:func:`set_aside_foreign`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from debiaseval.io.files import FOREIGN, move_outputs, write_text
from debiaseval.workflow.provenance import (
    canonical_json,
    config_hash,
    experiment_config,
    read_provenance,
    result_config,
)
from debiaseval.workflow.repair import made_outputs

__all__ = [
    "NOTICE_KEYS",
    "NOTICE_VALUE",
    "ORIGIN",
    "RECORDED_CONFIG",
    "RECORDS",
    "config_changes",
    "config_notice",
    "origin_conflict",
    "record_origin",
    "set_aside_foreign",
]

ORIGIN = "study.json"
"""The file in ``results/<study>/`` naming the config file the study was named after."""

RECORDS = ".snakemake/debiaseval/studies"
"""The folder (of the working directory) holding a copy of every study's :data:`ORIGIN`, as
``<study>.json``: deleting one of the two records leaves the check in place."""

RECORDED_CONFIG = "config.yaml"
"""The file in ``results/<study>/`` holding the resolved config of the study's last run."""

NOTICE_KEYS = 5
"""Changed keys :func:`config_notice` names one per line; more are counted on one line."""

NOTICE_VALUE = 40
"""Characters of a value :func:`config_notice` shows; a longer one is cut with ``…``."""

_ABSENT = object()


def _as_given(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute;
    normalised, so that ``./cfg/t1.yaml`` and ``cfg/t1.yaml`` are one file."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def _printable(text: str) -> str:
    """``text`` inert on a terminal: control and format characters (ESC, a line break, U+202E)
    shown as escapes, never sent raw."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _record_files(folder: str | os.PathLike[str], study: str, records: str) -> list[Path]:
    """The two records of the study ``study``: ``folder/study.json`` and its copy in
    ``records``, so that losing one file never removes the check."""
    return [Path(folder) / ORIGIN, Path(records) / f"{study}.json"]


def _read_record(path: Path) -> tuple[str | None, str | None]:
    """The config file ``path`` records and None, or None and why the record is unusable; both
    None when there is no record."""
    if not (path.exists() or path.is_symlink()):
        return None, None
    if path.is_dir():
        return None, "a folder"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        return None, " ".join((error.strerror or str(error)).split())
    except ValueError:
        return None, "not JSON"
    configfile = record.get("configfile") if isinstance(record, dict) else None
    if not isinstance(configfile, str) or not configfile:
        return None, "no configfile in it"
    return configfile, None


def _recorded(
    folder: str | os.PathLike[str], study: str, records: str
) -> tuple[str | None, str | None]:
    """The config file the study's records name and None, or None and the line that stops the
    run (a record unusable, or the two naming different files)."""
    files = _record_files(folder, study, records)
    read = [_read_record(path) for path in files]
    for path, other, (_, problem), (kept, _) in zip(
        files, files[::-1], read, read[::-1], strict=True
    ):
        if problem is not None:
            then = (
                f"the run copies back {other}, which names {_printable(kept)}"
                if kept
                else "the run then records its own config file"
            )
            return None, (
                f"debiaseval: {path}, the record of the config file that made study {study!r}, "
                f"is unusable ({problem}); move it away and run again ({then})"
            )
    named = {configfile for configfile, _ in read if configfile is not None}
    if len(named) > 1:
        first, second = (_printable(configfile or "") for configfile, _ in read)
        return None, (
            f"debiaseval: the records of study {study!r} disagree: {files[0]} names {first}, "
            f"{files[1]} names {second}; move away the one that is wrong and run again"
        )
    return next(iter(named), None), None


def origin_conflict(
    folder: str | os.PathLike[str],
    study: str,
    configfiles: Sequence[str | os.PathLike[str]],
    *,
    records: str = RECORDS,
) -> str | None:
    """One line when the study ``study`` (its folder ``folder``), named after the stem of the
    last of ``configfiles``, holds the results of another file of that name, or when its
    records (``folder/study.json`` and its copy in ``records``) are unusable or disagree;
    else None. Recorded names are shown inert (:func:`_printable`)."""
    if not configfiles:
        return None
    (recorded, stop), given = _recorded(folder, study, records), _as_given(configfiles[-1])
    if stop is not None or recorded is None or recorded == given:
        return stop
    recorded, given = _printable(recorded), _printable(given)
    return (
        f"debiaseval: study {study!r} ({folder}/) holds the results of {recorded}, and {given} "
        f"has the same name: give this run a study of its own (--config study=<name>, or the "
        f"key study in {given}), or run {recorded}"
    )


def record_origin(
    folder: str | os.PathLike[str],
    study: str,
    configfiles: Sequence[str | os.PathLike[str]],
    *,
    records: str = RECORDS,
) -> None:
    """Record the last of ``configfiles``, which named the study ``study``, in
    ``folder/study.json`` and its copy in ``records``, unless a file is recorded already;
    a record lost since is written again from the other. Records that are unusable or
    disagree are left alone (:func:`origin_conflict` stops the run on them)."""
    if not configfiles:
        return
    recorded, stop = _recorded(folder, study, records)
    if stop is not None:
        return
    record = {"study": study, "configfile": recorded or _as_given(configfiles[-1])}
    for path in _record_files(folder, study, records):
        if _read_record(path) == (None, None):
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text(json.dumps(record, indent=2) + "\n", path)


def config_changes(
    recorded: Mapping[str, Any], current: Mapping[str, Any], prefix: str = ""
) -> list[tuple[str, Any, Any]]:
    """The keys whose values differ between the configs ``recorded`` and ``current``, as
    (dotted key path, old value, new value), in ``current``'s key order and then the keys only
    ``recorded`` has. Mappings are compared key by key, anything else (lists included) whole;
    a key one side lacks has the value :data:`_ABSENT` there."""
    changes: list[tuple[str, Any, Any]] = []
    for key in [*current, *(k for k in recorded if k not in current)]:
        old, new = recorded.get(key, _ABSENT), current.get(key, _ABSENT)
        path = f"{prefix}{key}"
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            changes += config_changes(old, new, f"{path}.")
        elif old is _ABSENT or new is _ABSENT or not _same(old, new):
            changes.append((path, old, new))
    return changes


def _same(a: Any, b: Any) -> bool:
    """Equal as canonical JSON: ``1`` is not ``1.0`` nor ``True``, a tuple is its list."""
    return canonical_json(a) == canonical_json(b)


def _short(value: Any) -> str:
    """``value`` as YAML flow text on one line, at most :data:`NOTICE_VALUE` characters."""
    if value is _ABSENT:
        return "(absent)"
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16, allow_unicode=True)
    text = " ".join(text.removesuffix("...\n").split())
    return text if len(text) <= NOTICE_VALUE else text[: NOTICE_VALUE - 1] + "…"


def config_notice(
    folder: str | os.PathLike[str], study: str, config: Mapping[str, Any]
) -> str | None:
    """The lines a run prints before its first job when its resolved ``config`` differs from
    the one recorded for its study ``study`` (``folder/config.yaml``, :data:`RECORDED_CONFIG`);
    None when they agree, or when nothing is recorded (a new study) or readable.

    Only keys that change results are named: those that choose what a run does or where its
    files go (:data:`debiaseval.workflow.provenance.RUN_SELECTION`, ``PLACEMENT``) are left
    out. At most :data:`NOTICE_KEYS` keys are named, each on one line as ``key: old -> new``
    (values cut at :data:`NOTICE_VALUE` characters), whatever the size of the blocks.
    """
    recorded_file = Path(folder) / RECORDED_CONFIG
    try:
        recorded = yaml.safe_load(recorded_file.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    if not isinstance(recorded, Mapping):
        return None
    changes = config_changes(result_config(recorded), result_config(config))
    if not changes:
        return None
    lines = [
        f"debiaseval: this config differs from the one recorded for study {study!r} "
        f"({recorded_file}):"
    ]
    lines += [
        f"  {key}: {_short(old)} -> {_short(new)}{_derived(key, new, config)}"
        for key, old, new in changes[:NOTICE_KEYS]
    ]
    if len(changes) > NOTICE_KEYS:
        lines.append(f"  ... and {len(changes) - NOTICE_KEYS} more key(s)")
    kinds = set().union(*(_kinds(key, old, new) for key, old, new in changes))
    said = []
    if "changed" in kinds or not kinds:  # not kinds: a list reordered
        said.append(
            f"the jobs that use the changed keys run again and replace their results in {folder}/"
        )
    if "added" in kinds:
        said.append(
            f"the jobs of the datasets added run and write beside the results in "
            f"{folder}/, replacing none"
        )
    if "removed" in kinds:
        said.append(f"the results of the datasets left out stay in {folder}/ as they are")
    keep = "; to keep both studies, give this run a study of its own: --config study=NAME"
    lines.append(f"debiaseval: {'; '.join(said)}{keep if 'changed' in kinds else ''}")
    return "\n".join(lines)


def _kinds(key: str, old: Any, new: Any) -> set[str]:
    """What a change does to the study's results: a datasets list ``added`` and ``removed``
    datasets (an added one's jobs write new files and replace none; a reordering nothing),
    any other key ``changed`` them."""
    if (
        (key == "datasets" or key.endswith(".datasets"))
        and isinstance(old, list)
        and isinstance(new, list)
    ):
        added, removed = set(new) - set(old), set(old) - set(new)
        return {kind for kind, names in (("added", added), ("removed", removed)) if names}
    return {"changed"}


def _derived(key: str, new: Any, config: Mapping[str, Any]) -> str:
    """Why an experiment's ``datasets`` (null: derived from the top-level ``datasets``) holds
    fewer datasets than the top level: the parts the experiment needs; "" otherwise."""
    import importlib

    from debiaseval.data.catalog import dataset_parts, missing_parts, needs_text

    experiment, _, rest = key.partition(".")
    top = config.get("datasets")
    if rest != "datasets" or not isinstance(new, list) or not isinstance(top, list):
        return ""
    try:
        needs = importlib.import_module(f"debiaseval.experiments.{experiment}").NEEDS
    except (ImportError, AttributeError):
        return ""
    sources = config.get("sources")
    kept = [d for d in top if not missing_parts(needs, dataset_parts(d, sources))]
    if new != kept or new == top:
        return ""
    which = "none of them has" if not new else "the others lack"
    return (
        f" (from datasets {_short(top)}: {which} what {experiment.upper()} needs, "
        f"{needs_text(needs)})"
    )


def set_aside_foreign(
    folder: str | os.PathLike[str],
    tables: Iterable[str | os.PathLike[str]],
    config: Mapping[str, Any],
    *,
    is_output: Callable[[str], bool],
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
      has no record of and that the workflow makes (``is_output`` of it, or of a folder above
      it, is true: a rule's output pattern matches) is moved into ``folder/.foreign/<stamp>/``
      at its relative path, so that this config's jobs make them again. A file of one's own
      (notes, a draft) stays where it is. Nothing is deleted.
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
        own = config_hash(experiment_config(config, record["experiment"], record.get("dataset")))
        if record["config_sha256"] == own:
            continue
        other = f"made by config sha256 {record['config_sha256'][:16]}, not this run's ({own[:16]})"
        if os.path.normpath(table) in made:
            lines.append(f"debiaseval: {table} was {other}: its jobs run again")
        elif table.parent not in foreign:
            foreign.append(table.parent)
            lines.append(
                f"debiaseval: {table} was {other}, and Snakemake has no record of it (copied "
                "in?): its folder's unrecorded outputs are set aside (files of one's own stay)"
            )
    paths = [
        str(p)
        for parent in foreign
        for p in sorted(parent.rglob("*"))
        if p.is_file()
        and not any(os.path.normpath(q) in made for q in (p, *p.parents))
        and any(is_output(q.as_posix()) for q in (p, *p.parents) if q.is_relative_to(parent))
    ]
    if paths:
        stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        place, moved = move_outputs(paths, folder, stamp=stamp, aside=FOREIGN)
        lines.append(
            f"debiaseval: moved {len(moved)} file(s) to {place}/ so that this config's jobs make "
            "them again"
        )
    return lines
