"""Before any job runs: the datasets a run needs that nothing can fetch.

A real dataset's files come from ``resources/raw/<name>/``, the mirror
(``<mirror>/<name>/``), ``sources.<name>.path``, or a download. Some datasets
cannot be downloaded (Yahoo! R3 and LibraryThing: by request or unverifiable,
``url: null`` in ``resources/datasets.yaml``); when a run needs one of those and
none of the local places holds it, the workflow stops before its first job with
one message naming every such dataset, where to put it, and the ``--config``
that runs the study without them (see docs/datasets.md).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from debiaseval.data.download import MIRROR_ENV
from debiaseval.data.registry import SOURCES

__all__ = ["drop_datasets", "missing_data_message", "unobtainable"]


def unobtainable(
    names: Iterable[str],
    *,
    raw_root: str | os.PathLike[str],
    mirror: str | os.PathLike[str] | None,
    sources: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """The datasets of ``names`` (registry names) that cannot be had: no files in
    ``raw_root/<name>``, no ``<mirror>/<name>`` folder, no existing
    ``sources.<name>.path`` and no URL to download them from (the registry's or
    ``sources.<name>.url``). In the order given, each once."""
    missing = []
    for name in dict.fromkeys(names):
        source = SOURCES.get(name)
        if source is None:
            continue  # generated (synthetic) or unknown: not fetched
        settings = sources.get(name) or {}
        if source.url is not None or settings.get("url"):
            continue  # downloadable
        path = settings.get("path")
        if (Path(raw_root) / name).is_dir() or (path and Path(path).exists()):
            continue
        if mirror is not None and (Path(mirror) / name).is_dir():
            continue
        missing.append(name)
    return missing


def _supported(experiment: str) -> Sequence[str] | None:
    module = importlib.import_module(f"debiaseval.experiments.{experiment}")
    return getattr(module, "DATASETS", None)


def drop_datasets(config: Mapping[str, Any], drop: Iterable[str]) -> list[str]:
    """The ``--config`` settings that run the resolved ``config`` without the datasets ``drop``.

    The top-level ``datasets`` list narrows every experiment whose own list derives
    from it; an experiment with a list of its own gets ``eN={datasets: [...]}``; one
    left without any dataset is removed from ``experiments``. Empty when none of
    them is used.
    """
    drop = set(drop)
    top = list(config["datasets"])
    top_rest = [name for name in top if name not in drop]
    settings, kept = [], []
    for experiment in config["experiments"]:
        listed = list(config[experiment]["datasets"])
        rest = [name for name in listed if name not in drop]
        if rest or not listed:
            kept.append(experiment)
        if rest == listed or not rest:
            continue
        supported = _supported(experiment)
        derived = listed == [d for d in top if supported is None or d in supported]
        if not (derived and top_rest):
            settings.append(f"{experiment}={{datasets: [{', '.join(rest)}]}}")
    if top_rest and top_rest != top:
        settings.insert(0, f"datasets=[{', '.join(top_rest)}]")
    if kept != list(config["experiments"]):
        settings.append(f"experiments=[{', '.join(kept)}]")
    return settings


def missing_data_message(config: Mapping[str, Any], missing: Sequence[str]) -> str:
    """One message for every dataset of ``missing``: how to obtain it, where to put it, and
    how to run without them (``config``: the run's resolved configuration)."""
    count = f"{len(missing)} dataset{'s' if len(missing) > 1 else ''}"
    lines = [
        f"debiaseval: {count} of this run cannot be downloaded and no local copy was found "
        "(nothing was run):"
    ]
    for name in missing:
        how = SOURCES[name].manual_instructions or f"obtain the {name} dataset's files"
        lines.append(
            f"  {name}: {' '.join(how.split())} Places read: resources/raw/{name}/, "
            f"<mirror>/{name}/ (mirror: the config key `mirror` or ${MIRROR_ENV}), "
            f"sources.{name}.path."
        )
    settings = drop_datasets(config, missing)
    if "experiments=[]" in settings:
        lines.append("Every experiment of this run needs one of them.")
    else:
        quoted = " ".join(f"'{setting}'" for setting in settings)
        lines.append(f"Or run without them: snakemake ... --config {quoted}")
    return "\n".join(lines)
