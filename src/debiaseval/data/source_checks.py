"""The config's ``sources`` checked: built-in names kept, the user's own datasets well
formed, dataset names known (docs/own-data.md).

Here, in ``data``, so that :func:`debiaseval.datasets.load.load_dataset` checks a config as the
workflow does without importing the workflow's glue; :mod:`debiaseval.workflow.config` calls
the same functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from debiaseval.data.catalog import RESERVED_NAMES, dataset_names, is_user_source, user_sources
from debiaseval.data.user_logs import file_format
from debiaseval.io.errors import ConfigError

__all__ = ["check_dataset_names", "check_own_datasets", "check_reserved_sources"]


def check_dataset_names(where: str, names: Iterable[str], sources: Mapping[str, Any]) -> None:
    """Every dataset of ``names`` (the config key ``where``) is built in or one of ``sources``."""
    known = dataset_names(sources)
    for position, name in enumerate(names):
        if name not in known:
            raise ConfigError(
                f"config error at '{where}.{position}': unknown dataset {name!r}; "
                f"known: {', '.join(known)} (declare your own under sources.{name})"
            )


_OWN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def check_reserved_sources(sources: Any) -> None:
    """A built-in name under ``sources`` takes path/url only (before the schema's message)."""
    if not isinstance(sources, Mapping):
        return
    for name, entry in sources.items():
        if name in RESERVED_NAMES and is_user_source(entry):
            raise ConfigError(
                f"config error at 'sources.{name}': {name!r} is a built-in dataset; "
                "give your own data another name"
            )


def check_own_datasets(sources: Mapping[str, Any]) -> None:
    """Cross-field checks of the user datasets under ``sources`` (docs/own-data.md)."""
    for name, spec in user_sources(sources).items():
        where = f"sources.{name}"
        if not _OWN_NAME.fullmatch(name):
            raise ConfigError(
                f"config error at '{where}': invalid dataset name {name!r} (a letter or digit "
                "then letters, digits, '_', '.' or '-')"
            )
        for key in ("ratings", "mar"):
            if spec[key] is not None and file_format(spec[key]) is None:
                raise ConfigError(
                    f"config error at '{where}.{key}': {spec[key]!r} is not a .csv, .tsv, .txt "
                    "or .parquet file"
                )
        scale, threshold = spec["rating_scale"], spec["positive_threshold"]
        if scale is not None and not scale[0] < scale[1]:
            raise ConfigError(
                f"config error at '{where}.rating_scale': expected [lo, hi] with lo < hi, "
                f"got {scale}"
            )
        if scale is not None and threshold is not None and not scale[0] <= threshold < scale[1]:
            raise ConfigError(
                f"config error at '{where}.positive_threshold': {threshold} leaves no rating or "
                f"every rating of the scale {scale} positive"
            )
        if spec["duplicates"] == "last" and not spec["columns"]["timestamp"]:
            raise ConfigError(
                f"config error at '{where}.duplicates': 'last' keeps the latest rating by "
                "timestamp; map columns.timestamp"
            )
