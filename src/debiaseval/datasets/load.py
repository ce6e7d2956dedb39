"""A dataset by name, loaded as the workflow's download and preprocess rules load it.

:func:`load_dataset` is what the Python API (``debiaseval.api.load_dataset``) and every
experiment's in-process ``run`` call with a dataset name; it sits here, below the
experiments, so that they need not import the API (docs/datasets.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from debiaseval.data.catalog import user_sources
from debiaseval.data.download import MIRROR_ENV, cache_folder, fetch_dataset
from debiaseval.data.draws import DRAW_BLOCKS
from debiaseval.data.source_checks import check_own_datasets, check_reserved_sources
from debiaseval.datasets.build import SOURCE_OF, build_dataset
from debiaseval.io.schema import schema_checked

__all__ = ["load_dataset", "raw_folder"]


def raw_folder(
    name: str, full: Mapping[str, Any], raw: str | os.PathLike[str] | None = None
) -> Path | None:
    """The folder of the raw files dataset ``name`` is built from (its own, or its source's:
    ``SOURCE_OF``), given a validated config ``full``: ``raw`` if given, else
    ``<cache>/<source>``, fetched as the download rule does when not there yet
    (``sources.<source>.path``, the mirror, the canonical URL); None for ``synthetic``."""
    if name == "synthetic":
        return None
    source = SOURCE_OF.get(name, name)
    if raw is not None:
        return Path(raw)
    folder = cache_folder() / source
    if not folder.is_dir():
        mirror = full["mirror"] or os.environ.get(MIRROR_ENV)
        origin = "config key `mirror`" if full["mirror"] else f"${MIRROR_ENV}"
        settings = full["sources"].get(source, {})
        fetch_dataset(
            source,
            folder,
            mirror=Path(mirror) if mirror else None,
            path=Path(settings["path"]) if settings.get("path") else None,
            url=settings.get("url"),
            mirror_origin=origin,
        )
    return folder


def load_dataset(
    name: str,
    *,
    config: Mapping[str, Any] | None = None,
    raw: str | os.PathLike[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(interactions, users, items)`` of dataset ``name``, as the workflow's preprocess rule.

    A dataset of your own is read from the files of the ``config``'s ``sources.<name>``
    (relative paths from the current folder; docs/own-data.md).
    ``synthetic``, ``jester5k-semi``'s exposure and ``ml-100k-semi``'s construction follow
    the ``config``'s ``synthetic`` / ``semireal`` / ``semisynthetic`` blocks (defaults
    filled). Real datasets are read from ``raw`` if given (a folder with the canonical
    files), else fetched (:func:`raw_folder`) like the download rule does —
    ``sources.<name>.path``, the mirror (config key ``mirror`` or $DEBIASEVAL_MIRROR), then
    the canonical URL, checksums verified — into ``<cache>/<name>``, reused when already
    there. The cache is ``$DEBIASEVAL_DATA``, else the user's cache folder
    (:func:`debiaseval.data.download.cache_folder`); nothing is written to the
    current folder.
    """
    check_reserved_sources((config or {}).get("sources"))
    full = schema_checked(dict(config or {}))
    check_own_datasets(full["sources"])
    own = user_sources(full["sources"]).get(name)
    if own is not None:
        return build_dataset(name, own=own)[:3]
    interactions, users, items, _ = build_dataset(
        name,
        raw_folder(name, full, raw),
        generator=full[DRAW_BLOCKS[name]] if name in DRAW_BLOCKS else None,
        semisynthetic=full.get("semisynthetic"),
    )
    return interactions, users, items
