"""Which config made a study: two files of the same name are never one study, and results
copied in from another config are never taken for current.

A study named after its config file's stem (``--configfile cfg/t1.yaml`` is the study ``t1``,
docs/getting-started.md#studies) records that file in ``results/<study>/study.json`` on its
first run that runs jobs. A later run whose last config file has the same stem but is another
file (``cfg2/t1.yaml``) would silently replace the study's results; it is refused before any
job, in one line naming both files and ``study=`` as the way out. A study named by the key
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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from debiaseval.io.files import FOREIGN, made_outputs, move_outputs, write_text
from debiaseval.workflow.provenance import (
    canonical_json,
    config_hash,
    experiment_config,
    read_provenance,
    result_config,
)

__all__ = [
    "NOTICE_KEYS",
    "NOTICE_VALUE",
    "ORIGIN",
    "RECORDED_CONFIG",
    "config_changes",
    "config_notice",
    "origin_conflict",
    "record_origin",
    "set_aside_foreign",
]

ORIGIN = "study.json"
"""The file in ``results/<study>/`` naming the config file the study was named after."""

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
        said.append(f"the jobs that use the changed keys run again and replace their results in "
                    f"{folder}/")  # fmt: skip
    if "added" in kinds:
        said.append(f"the jobs of the datasets added run and write beside the results in "
                    f"{folder}/, replacing none")  # fmt: skip
    if "removed" in kinds:
        said.append(f"the results of the datasets left out stay in {folder}/ as they are")
    keep = "; to keep both studies, give this run a study of its own: --config study=NAME"
    lines.append(f"debiaseval: {'; '.join(said)}{keep if 'changed' in kinds else ''}")
    return "\n".join(lines)


def _kinds(key: str, old: Any, new: Any) -> set[str]:
    """What a change does to the study's results: a datasets list ``added`` and ``removed``
    datasets (an added one's jobs write new files and replace none; a reordering nothing),
    any other key ``changed`` them."""
    if (key == "datasets" or key.endswith(".datasets")) and isinstance(old, list) and isinstance(
        new, list
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
