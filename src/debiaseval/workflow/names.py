"""Names and paths of a config checked, before any job, against what the file system and
Snakemake accept (docs/troubleshooting.md).

- :func:`check_name_limits`: a name the config gives (a dataset of one's own, a recommender, a
  test set, an estimator, an E2 method, an E5 model) becomes a file or folder name under
  ``results/<study>/``; one longer than the file system allows (NAME_MAX, 255 bytes on most)
  would pass the dry run and stop the run at its first job that writes it, with
  ``OSError [Errno 36]``. The paths those names make are checked against PATH_MAX too.
- :func:`check_workflow_paths`: a file of one's own (``sources.<name>.ratings``, ``mar``, the
  ``recs`` of precomputed lists) reaches Snakemake as a rule's input. Snakemake reads ``{b}``
  in a path as a wildcard and ``<b>`` as a path variable, with no way to escape either, and
  prints the path in its job lines as it is, control characters included. Such a path is
  refused in one line that says how to name the file instead.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from debiaseval.data.catalog import user_sources
from debiaseval.io.errors import ConfigError
from debiaseval.io.terminal import inert_terminal, terminal_active

__all__ = ["NAMED", "NAME_MARGIN", "check_name_limits", "check_workflow_paths"]

NAMED = ("sources", "e1.recommenders", "e1.testsets", "e1.estimators", "e2.methods", "e5.models")
"""The config's mappings whose keys become file or folder names under ``results/<study>/``."""

NAME_MARGIN = 32
"""Bytes a file name adds to the name it is made of: the longest suffix (``.parquet``) and the
temporary name an atomic write takes beside it (``.<name>.XXXXXXXX.tmp``)."""

PATH_FIXED = 128
"""Bytes of the longest output path that are not names: ``results/``, ``/e1/``, ``/seed999``,
``/tuning/``, ``/chunk9999.recs.parquet`` and the temporary name's additions."""

_PATHVAR = re.compile(r"<[a-z][a-z0-9_]*>")
"""Snakemake's path variables (``snakemake.pathvars.PATHVAR_REGEX``)."""


def _limit(name: str, folder: str) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return {"PC_NAME_MAX": 255, "PC_PATH_MAX": 4096}[name]


def _named(config: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(config key, name) of every name that becomes a path component, of the experiments the
    config runs and of its own datasets."""
    for where in NAMED:
        block, _, key = where.partition(".")
        if block == "sources":
            names = user_sources(config.get("sources"))
        elif block in config.get("experiments", ()):
            names = (config.get(block) or {}).get(key) or {}
        else:
            continue
        for name in names:
            yield where, str(name)


def _short(name: str) -> str:
    return name if len(name) <= 24 else name[:23] + "…"


def check_name_limits(config: Mapping[str, Any], folder: str | os.PathLike[str] = ".") -> None:
    """Refuse a name of ``config`` (:data:`NAMED`) whose file names would exceed the file
    system's NAME_MAX at ``folder`` (the working directory), or whose paths under
    ``results/<study>/`` would exceed its PATH_MAX. Raises :class:`ConfigError` in one line."""
    folder = os.fspath(folder)
    name_max = _limit("PC_NAME_MAX", folder) - NAME_MARGIN
    longest: tuple[int, str] = (0, "study")
    for where, name in _named(config):
        size = len(os.fsencode(name))
        if size > name_max:
            raise ConfigError(
                f"config error at '{where}.{_short(name)}': the name is {size:,} bytes, and it "
                f"becomes a file name under results/<study>/ (with its suffix), which this file "
                f"system allows {name_max + NAME_MARGIN} bytes; expected a name of at most "
                f"{name_max} bytes"
            )
        if where != "sources":
            longest = max(longest, (size, f"{where}.{_short(name)}"))
    experiments = config.get("experiments", ())
    datasets = [d for e in experiments for d in (config.get(e) or {}).get("datasets") or ()]
    dataset = max((len(os.fsencode(str(d))) for d in datasets), default=0)
    study = len(os.fsencode(str(config.get("study") or "default")))
    base = len(os.fsencode(os.path.abspath(folder)))
    total = base + study + dataset + longest[0] + PATH_FIXED
    path_max = _limit("PC_PATH_MAX", folder)
    if total > path_max:
        raise ConfigError(
            f"config error at '{longest[1]}': the longest output path would be about "
            f"{total:,} bytes (the working directory's {base:,}, the study's, a dataset's and "
            f"this name's), more than this file system's {path_max:,}; expected shorter names, "
            "or a working directory nearer the root"
        )


def _snakemake_problem(path: str) -> str | None:
    """What Snakemake would do with ``path`` that it must not, or None."""
    active = terminal_active(path)
    if active is not None:
        return (
            f"holds {active}, a control character that a terminal would act on when Snakemake "
            "prints its job lines"
        )
    found = _PATHVAR.search(path)
    if found is not None:
        return f"holds {found.group()!r}, which Snakemake reads as a path variable"
    brace = next((char for char in path if char in "{}"), None)
    if brace is not None:
        return f"holds {brace!r}, which Snakemake reads as part of a wildcard"
    return None


def _own_files(config: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(config key, path, the part of it to check) of the files of one's own that rules take as
    inputs: the files of the datasets the experiments use, and the precomputed lists' files
    (their ``recs`` template, whose ``{dataset}`` and ``{seed}`` are filled in before)."""
    experiments = config.get("experiments", ())
    used = {d for e in experiments for d in (config.get(e) or {}).get("datasets") or ()}
    for name, spec in user_sources(config.get("sources")).items():
        if name in used:
            for key in ("ratings", "mar"):
                if spec.get(key):
                    yield f"sources.{name}.{key}", str(spec[key]), str(spec[key])
    for where in ("e1.recommenders", "e5.models"):
        block, _, key = where.partition(".")
        if block not in experiments:
            continue
        for name, spec in ((config.get(block) or {}).get(key) or {}).items():
            recs = spec.get("recs") if isinstance(spec, Mapping) else None
            if isinstance(recs, str):
                filled = recs.replace("{dataset}", "").replace("{seed}", "")
                yield f"{where}.{name}.recs", recs, filled


def check_workflow_paths(config: Mapping[str, Any]) -> None:
    """Refuse a file of one's own whose path Snakemake would misread or print raw
    (see the module). Raises :class:`ConfigError` in one line naming the key."""
    for where, path, checked in _own_files(config):
        problem = _snakemake_problem(checked)
        if problem is not None:
            raise ConfigError(
                f"config error at '{where}': {inert_terminal(path)} {problem}; rename the file, "
                "or link to it under a name without '<', '>', '{', '}' or control characters, "
                "and give that name"
            )
