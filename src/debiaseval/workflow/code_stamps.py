"""The code stamp of a rule: the code its jobs run, so that a job reruns when that code changes,
and only then (docs/getting-started.md#what-reruns-when).

Snakemake's code trigger sees a rule's script file by its time, not the package the script
imports, so the default profile leaves it out (``rerun-triggers`` in
``profiles/default/config.yaml``) and every rule carries ``code=<stamp>`` in its params
instead: :func:`code_stamps` gives the stamp of each script of ``workflow/scripts/``, SHA-256
(16 hex digits) of

- the code of the script and of its **import closure** within ``debiaseval``
  (:func:`debiaseval.io.source_hash.file_closure`): every module of the package it imports,
  directly or not, at module level or inside a function, with the ``__init__`` of every
  package on the way. A computed import of an experiment's module
  (``import_module(f"debiaseval.figures.{experiment}")``) is resolved with the script's own
  experiment (its name's ``eN_``); a script of no experiment (``run_config``) counts every
  module such an import could load;
- each module by its syntax tree without docstrings or positions, so that a comment,
  docstring or layout edit changes no stamp, and any code edit does;
- the package data its modules read (:data:`PACKAGE_DATA`), by its parsed content.

Parsing the package takes a second or two; the parses are kept, by file content, in
``.snakemake/debiaseval/parsed.json`` (:func:`debiaseval.io.source_hash.save_parsed`), so a later
run parses only the files that changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from debiaseval.io.source_hash import closure_hash, file_closure, load_parsed, save_parsed

__all__ = ["PACKAGE", "PACKAGE_DATA", "PARSED_CACHE", "code_stamp", "code_stamps", "experiment_of"]

PACKAGE = "debiaseval"

PACKAGE_DATA: dict[str, tuple[str, ...]] = {
    "debiaseval.io.schema": ("schemas",),
    "debiaseval.data.registry": ("resources/datasets.yaml",),
}
"""Module -> the package data it reads (files or folders inside ``debiaseval``), which joins the
stamp of every script whose closure holds the module."""

PARSED_CACHE = ".snakemake/debiaseval/parsed.json"
"""Where a run keeps the package's parses for the next one (relative to the working folder)."""

_EXPERIMENT = re.compile(r"(e\d+)_")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def experiment_of(script: str | Path) -> str | None:
    """The experiment of a script named ``eN_<step>.py`` (``e3``), else None."""
    match = _EXPERIMENT.match(Path(script).name)
    return match.group(1) if match else None


def _data_digest(package: str, relative: str) -> str:
    """SHA-256 of data ``relative`` of ``package`` (a file, or every file of a folder, by name):
    a YAML file by its parsed content (comments and layout left out), another by its bytes."""
    digest = hashlib.sha256()
    root = resources.files(package).joinpath(relative)
    files = sorted(root.iterdir(), key=lambda f: f.name) if root.is_dir() else [root]
    for item in files:
        data = item.read_bytes()
        if item.name.endswith((".yaml", ".yml")):
            data = json.dumps(yaml.load(data, Loader=_LOADER), sort_keys=True, default=str).encode()
        digest.update(f"{item.name}\0".encode() + hashlib.sha256(data).digest())
    return digest.hexdigest()


def code_stamp(
    script: str | Path,
    *,
    package: str = PACKAGE,
    package_data: Mapping[str, tuple[str, ...]] = PACKAGE_DATA,
    memo: dict[str, dict[str, Any]] | None = None,
) -> str:
    """The code stamp of ``script`` (see the module docstring): its code, that of its import
    closure within ``package`` and the data of ``package_data`` its modules read. ``memo``,
    shared by the calls of one run, finds each module and digests each data once."""
    memo = {} if memo is None else memo
    experiment = experiment_of(script)
    bindings = {"experiment": experiment} if experiment else {}
    located = memo.setdefault("located", {})
    closure = file_closure(script, within=package, bindings=bindings, located=located)
    digests = memo.setdefault("data", {})
    data = []
    for module in closure:
        for relative in package_data.get(module, ()):
            if relative not in digests:
                digests[relative] = _data_digest(package, relative)
            data.append(f"{relative}\0{digests[relative]}")
    whole = closure_hash({"<script>": Path(script), **closure})
    return hashlib.sha256("\0".join([whole, *data]).encode()).hexdigest()[:16]


def code_stamps(
    folder: str | Path, *, cache: str | Path | None = PARSED_CACHE
) -> Mapping[str, str]:
    """Script name (its stem, ``e1_split``) -> code stamp of every ``*.py`` script of
    ``folder``, with the parses kept in ``cache`` (None: none kept)."""
    if cache is not None:
        load_parsed(cache)
    memo: dict[str, dict[str, Any]] = {}
    stamps = {path.stem: code_stamp(path, memo=memo) for path in sorted(Path(folder).glob("*.py"))}
    if cache is not None:
        save_parsed(cache)
    return stamps
