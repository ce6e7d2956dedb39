"""Provenance of every result: what made a summary, recorded in it (docs/report.md#provenance).

:func:`gather` builds the record once per run, from the resolved config: the debiaseval
version, a SHA-256 of the config (canonical JSON) and the config itself, the raw input files
with their SHA-256, the seeds, and the versions of Python, the libraries and any plugin
recommender's package. That record is *stable*: the same config, data and installation give
the same record, so it rides in the aggregate jobs' ``params:`` and in the summaries'
bytes without breaking their byte-identity. What changes from run to run (the date, the git
commit and whether the checkout has uncommitted changes) is added by :func:`run_fields` only
to ``provenance.json``, the one file beside the summaries that is not meant to be identical.

The aggregate jobs write through one mechanism: :func:`write_table` (Parquet key-value
metadata ``debiaseval.provenance``, JSON), :func:`write_markdown` (a short header block under
the Markdown's title) and :func:`write_record` (``provenance.json``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from debiaseval._version import __version__
from debiaseval.data.draws import DRAW_BLOCKS
from debiaseval.datasets.build import SOURCE_OF
from debiaseval.io.files import atomic_path, sha256_file, write_text
from debiaseval.io.markup import code_span, inert_markdown
from debiaseval.io.processes import run_bounded

__all__ = [
    "CHECKSUM_CACHE",
    "DATASET_BLOCKS",
    "LIBRARIES",
    "METADATA_KEY",
    "PLACEMENT",
    "RUN_SELECTION",
    "canonical_json",
    "config_hash",
    "dataset_config",
    "dataset_record",
    "experiment_config",
    "file_checksums",
    "gather",
    "git_state",
    "input_files",
    "library_versions",
    "markdown_header",
    "plugin_versions",
    "read_provenance",
    "record_run",
    "result_config",
    "run_fields",
    "with_checksums",
    "with_header",
    "without_placement",
    "write_markdown",
    "write_record",
    "write_table",
]

METADATA_KEY = b"debiaseval.provenance"
"""The Parquet key-value metadata key of the record (its value: the record as JSON)."""

LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "snakemake", "lightfm")
"""The distributions whose versions the record names (absent ones as ``null``)."""

RUN_SELECTION = ("experiments", "resources", "download")
"""Top-level keys that choose what a run does and how, not what a result is: left out of an
experiment's config, so that adding an experiment to a run, more memory for a job or other
download limits do not rerun the others (``results/<study>/config.yaml`` holds them)."""

PLACEMENT = ("study", "mirror", "plugin_paths", "sources.*.path", "sources.*.url")
"""Keys that only choose where files go or are read from, never what a result is; dotted
paths, ``*`` standing for every named entry. :func:`config_hash` and :func:`experiment_config`
leave them out, so two studies of the same science share one hash (docs/report.md#provenance).

- ``study``: the folder a run's files go under (``results/<study>/``, ...);
- ``mirror``, ``sources.<dataset>.path``, ``sources.<dataset>.url``: where a built-in
  dataset's raw files come from. What was read is recorded separately, as the SHA-256 of every
  raw file (the record's ``data``), which the report shows;
- ``plugin_paths``: the folders a plugin module is looked for in. The code found is recorded
  separately (the record's ``plugins``: package and version, or the hash of its source) and its
  hash rides in the params of the jobs that run it.

A dataset of one's own keeps its files (``sources.<name>.ratings``, ``.mar``): they name the
dataset, as a built-in dataset's name does."""

CHECKSUM_CACHE = ".snakemake/debiaseval/sha256.json"
"""Where the workflow's jobs cache the raw files' SHA-256 by (path, size, mtime)."""


def canonical_json(value: Any) -> str:
    """``value`` as canonical JSON: sorted keys, no spaces, UTF-8 kept; the bytes a hash reads."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _without(value: Any, path: list[str]) -> Any:
    """``value`` without the key at ``path`` (``*``: every key of that level); copies only the
    mappings on the way, leaves ``value`` itself untouched."""
    if not isinstance(value, Mapping) or not path:
        return value
    head, rest = path[0], path[1:]
    if not rest:
        return {k: v for k, v in value.items() if head != "*" and k != head}
    return {k: _without(v, rest) if head in ("*", k) else v for k, v in value.items()}


def without_placement(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without the keys that only choose where files go (:data:`PLACEMENT`)."""
    done: Any = dict(config)
    for key in PLACEMENT:
        done = _without(done, key.split("."))
    return done


def config_hash(config: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of ``config``'s canonical JSON (:func:`canonical_json`), the keys that
    only choose where files go (:data:`PLACEMENT`) left out: two studies of the same science,
    or the same study read from another mirror, have one hash."""
    return hashlib.sha256(canonical_json(without_placement(config)).encode("utf-8")).hexdigest()


DATASET_BLOCKS: dict[str, str] = {
    **{block: dataset for dataset, block in DRAW_BLOCKS.items()},
    "semisynthetic": "ml-100k-semi",
}
"""Top-level config blocks that one dataset alone reads (the block that generates it) -> that
dataset."""


def dataset_config(config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """``config`` as results on ``dataset`` read it: without the blocks of
    :data:`DATASET_BLOCKS` that generate another dataset, and with only the ``sources`` entries
    of ``dataset`` and of the dataset it is built from (``jester5k`` for ``jester5k-semi``)."""
    done = {k: v for k, v in config.items() if DATASET_BLOCKS.get(k, dataset) == dataset}
    sources = done.get("sources")
    if isinstance(sources, Mapping):
        own = {dataset, SOURCE_OF.get(dataset, dataset)}
        done["sources"] = {name: entry for name, entry in sources.items() if name in own}
    return done


def experiment_config(
    config: Mapping[str, Any], experiment: str, dataset: str | None = None
) -> dict[str, Any]:
    """The part of the resolved ``config`` that ``experiment``'s results (on ``dataset``, when
    given) depend on: every key but the other experiments' blocks, the run's selection
    (:data:`RUN_SELECTION`), the keys that only choose where files go (:data:`PLACEMENT`) and
    what only other datasets read (:func:`dataset_config`).

    A change of E2's block thus leaves E1's record (and E1's jobs) alone, and a change of
    ``synthetic`` leaves Coat's, while a change of a shared key reaches every experiment; two
    studies of the same science record the same config, and their tables the same bytes.
    """
    from debiaseval.io.schema import experiment_names

    others = set(experiment_names()) - {experiment}
    own = {k: v for k, v in result_config(config).items() if k not in others}
    return own if dataset is None else dataset_config(own, dataset)


def result_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``config`` that results depend on: every key but the run's selection
    (:data:`RUN_SELECTION`) and the keys that only choose where files go (:data:`PLACEMENT`);
    :func:`experiment_config` is one experiment's share of it."""
    return without_placement({k: v for k, v in config.items() if k not in RUN_SELECTION})


def input_files(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Every file under ``paths`` (files, or folders walked recursively), sorted, as POSIX
    paths; hidden files (dot-names) and paths that do not exist are left out."""
    found: set[str] = set()
    for path in map(Path, paths):
        if path.is_file():
            found.add(path.as_posix())
        elif path.is_dir():
            found.update(
                p.as_posix()
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
    return sorted(found)


def file_checksums(
    paths: Iterable[str | os.PathLike[str]], cache: str | os.PathLike[str] | None = None
) -> dict[str, str]:
    """SHA-256 of each file under ``paths`` (:func:`input_files`), by path.

    With ``cache`` (a JSON file), a file whose (path, size, mtime) is recorded there is not
    read again; the cache is rewritten atomically when it learnt something, so concurrent
    jobs at worst hash a file twice.
    """
    files = input_files(paths)
    known: dict[str, list[Any]] = {}
    if cache is not None and Path(cache).is_file():
        try:
            known = json.loads(Path(cache).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
    sums: dict[str, str] = {}
    learnt = False
    for name in files:
        stat = os.stat(name)
        key = [stat.st_size, stat.st_mtime_ns]
        entry = known.get(name)
        if isinstance(entry, list) and len(entry) == 3 and entry[:2] == key:
            sums[name] = entry[2]
            continue
        sums[name] = sha256_file(name)
        known[name] = [*key, sums[name]]
        learnt = True
    if cache is not None and learnt:
        with atomic_path(cache) as tmp:
            tmp.write_text(json.dumps(known, sort_keys=True, indent=0), encoding="utf-8")
    return sums


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def library_versions() -> dict[str, str | None]:
    """Python's version and those of :data:`LIBRARIES` (``null`` for one not installed)."""
    return {"python": platform.python_version(), **{n: _version(n) for n in LIBRARIES}}


def _algorithms(value: Any) -> list[str]:
    """Every ``algorithm`` string of the config, wherever it sits (E1's recommenders, E5's
    models, ...)."""
    if isinstance(value, Mapping):
        own = [value["algorithm"]] if isinstance(value.get("algorithm"), str) else []
        return own + [a for v in value.values() for a in _algorithms(v)]
    if isinstance(value, list):
        return [a for v in value for a in _algorithms(v)]
    return []


@functools.cache
def _module_owners() -> Mapping[str, list[str]]:
    """Top-level module -> the installed distributions that hold it, read once per process and
    only when a plugin is named: it reads every installed package's metadata (0.5 s), and the
    workflow gathers a provenance record per experiment and dataset at parse time."""
    return metadata.packages_distributions()


def plugin_versions(config: Mapping[str, Any]) -> dict[str, str]:
    """For each plugin recommender the config names (not a built-in, not ``external``): its
    package and version (``"name==1.2"``), or, for a module of one's own that no installed
    package holds, ``"source sha256:<16 hex>"`` of its code (docs/own-recommender.md)."""
    from debiaseval.recommenders.registry import (
        EXTERNAL,
        RECOMMENDERS,
        plugin_source_hash,
        resolve_recommender,
    )

    found: dict[str, str] = {}
    for algorithm in sorted(set(_algorithms(config))):
        if algorithm in RECOMMENDERS or algorithm == EXTERNAL:
            continue
        module = resolve_recommender(algorithm).__module__
        if module.split(".")[0] == "debiaseval":
            continue
        names = _module_owners().get(module.split(".")[0], [])
        if names:
            found[algorithm] = f"{names[0]}=={_version(names[0])}"
        else:
            found[algorithm] = f"source sha256:{plugin_source_hash(algorithm)}"
    return found


def gather(
    config: Mapping[str, Any],
    experiment: str | None = None,
    inputs: Iterable[str | os.PathLike[str]] = (),
    *,
    dataset: str | None = None,
) -> dict[str, Any]:
    """The stable provenance record of ``experiment``'s results under ``config`` (the whole
    config for ``None``), on ``dataset`` when given (:func:`experiment_config`), naming the raw
    ``inputs`` (files or folders) the results read.

    Keys: ``debiaseval`` (version), ``experiment``, ``config_sha256``, ``config``, ``seeds``,
    ``inputs``, ``versions`` (Python and libraries), ``plugins``. Nothing in it changes
    between two runs of the same config on the same installation, so the workflow gathers it
    once per run and passes it to the aggregate jobs in ``params:``; each job then takes the
    inputs' checksums (:func:`record_run`), after any download.
    """
    own = dict(config) if experiment is None else experiment_config(config, experiment)
    seeds = config["seeds"] if experiment is None else config[experiment].get("seeds")
    record = {
        "debiaseval": __version__,
        "experiment": experiment,
        "config_sha256": config_hash(own),
        "config": own,
        "seeds": seeds,
        "inputs": sorted(Path(p).as_posix() for p in inputs),
        "versions": library_versions(),
        "plugins": plugin_versions(own),
    }
    return record if dataset is None else dataset_record(record, dataset)


def dataset_record(record: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """An experiment's record (:func:`gather`) narrowed to its results on ``dataset``: its
    ``config`` without what only other datasets read (:func:`dataset_config`), and that
    config's hash; the rest (versions, plugins) as it is, so it is gathered once per run."""
    own = dataset_config(record["config"], dataset)
    return {**record, "config_sha256": config_hash(own), "config": own}


def with_checksums(
    record: Mapping[str, Any], cache: str | os.PathLike[str] | None = CHECKSUM_CACHE
) -> dict[str, Any]:
    """``record`` with ``data`` (path -> SHA-256 of every file under its ``inputs``,
    :func:`file_checksums`) in place of ``inputs``."""
    done = {k: v for k, v in record.items() if k != "inputs"}
    done["data"] = file_checksums(record.get("inputs", ()), cache)
    return done


def record_run(
    record: Mapping[str, Any],
    path: str | os.PathLike[str],
    cache: str | os.PathLike[str] | None = CHECKSUM_CACHE,
) -> dict[str, Any]:
    """What an aggregate job does first: complete the ``record`` of its ``params`` with the
    inputs' checksums (:func:`with_checksums`), write it with the run's date, commit and dirty
    flag to ``path`` (``provenance.json``, :func:`write_record`) and return the stable record
    that :func:`write_table` and :func:`write_markdown` put into the summaries."""
    done = with_checksums(record, cache)
    write_record(done, path)
    return done


def git_state(folder: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """``commit`` and ``dirty`` (uncommitted changes to tracked files) of the git checkout
    holding ``folder``; both ``None`` outside a checkout or without git."""
    try:
        commit = run_bounded(["git", "rev-parse", "HEAD"], cwd=folder, deadline=30)
        if commit.returncode != 0:
            return {"commit": None, "dirty": None}
        status = run_bounded(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder, deadline=30
        )
    except OSError:
        return {"commit": None, "dirty": None}
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return {"commit": commit.stdout.decode(errors="replace").strip(), "dirty": dirty}


def run_fields(folder: str | os.PathLike[str] = ".") -> dict[str, Any]:
    """What differs between two runs of the same config: ``date`` (UTC, ISO 8601) and the git
    ``commit`` and ``dirty`` flag of the checkout the run started in."""
    date = datetime.now(UTC).replace(microsecond=0).isoformat()
    return {"date": date, **git_state(folder)}


def write_table(
    frame: pd.DataFrame, path: str | os.PathLike[str], provenance: Mapping[str, Any]
) -> None:
    """Write ``frame`` as :func:`debiaseval.io.files.write_parquet` does, with the record
    ``provenance`` as key-value metadata :data:`METADATA_KEY` (canonical JSON): atomic, and
    byte-identical for identical frames and records."""
    table = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[METADATA_KEY] = canonical_json(dict(provenance)).encode("utf-8")
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd", use_dictionary=True, write_statistics=True)


def read_provenance(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record a summary Parquet file carries (``None`` for a file without one)."""
    meta = pq.read_metadata(path).metadata or {}
    raw = meta.get(METADATA_KEY)
    return None if raw is None else json.loads(raw.decode("utf-8"))


def markdown_header(provenance: Mapping[str, Any]) -> str:
    """A short Markdown block naming the record's version, config hash, seeds, data and
    library versions (the full record is in the Parquet files' metadata); the same for the
    same record whatever the order of its keys (a record read back from a file has them
    sorted). File names and plugins are shown as written, never read as Markdown or HTML
    (:mod:`debiaseval.io.markup`)."""
    versions = provenance.get("versions", {})
    order = [*("python", *LIBRARIES), *sorted(set(versions) - {"python", *LIBRARIES})]
    libraries = ", ".join(f"{k} {versions[k]}" for k in order if versions.get(k) is not None)
    data = provenance.get("data", {})
    files = (
        "; ".join(f"{code_span(Path(p).name)} {inert_markdown(data[p][:12])}" for p in sorted(data))
        or "generated"
    )
    lines = [
        f"> debiaseval {inert_markdown(provenance.get('debiaseval'))} · config sha256 "
        f"{code_span(str(provenance.get('config_sha256'))[:16])} · seeds "
        f"{inert_markdown(provenance.get('seeds'))}  ",
        f"> data (sha256): {files}  ",
        f"> {inert_markdown(libraries)}",
    ]
    plugins = provenance.get("plugins") or {}
    if plugins:
        lines[-1] += "  "
        shown = "; ".join(f"{k}: {plugins[k]}" for k in sorted(plugins))
        lines.append("> plugins: " + inert_markdown(shown))
    return "\n".join(lines) + "\n"


def with_header(text: str, provenance: Mapping[str, Any]) -> str:
    """``text`` with :func:`markdown_header` under its first line when that is a ``#`` title,
    else above it."""
    header = markdown_header(provenance)
    if text.startswith("# "):
        title, _, rest = text.partition("\n")
        return f"{title}\n\n{header}\n{rest.lstrip(chr(10))}"
    return f"{header}\n{text}"


def write_markdown(text: str, path: str | os.PathLike[str], provenance: Mapping[str, Any]) -> None:
    """Write the Markdown ``text`` atomically with the provenance header (:func:`with_header`)."""
    write_text(with_header(text, provenance), path)


def write_record(
    provenance: Mapping[str, Any],
    path: str | os.PathLike[str],
    folder: str | os.PathLike[str] = ".",
) -> None:
    """Write ``provenance.json``: the stable record plus :func:`run_fields` (date, commit,
    dirty flag), the one provenance file that is new on every run."""
    record = {**run_fields(folder), **provenance}
    write_text(json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n", path)
