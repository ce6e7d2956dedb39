"""Experiments E1–E6 of SPEC §7: each module composes the library's methods for one study.

An experiment module holds no method of its own: splits, interventions,
recommenders, metrics and estimators live in their own modules and are usable
without Snakemake; ``experiments/eN.py`` only wires them into the study's
steps, which the workflow's ``eN_*`` rules call one at a time.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import pandas as pd


class RunData(NamedTuple):
    """What an in-process ``run`` works on: the named data, its sizes and the seeds."""

    dataset: str
    interactions: pd.DataFrame
    n_users: int
    n_items: int
    seed_ids: list[int]


def unsupported(
    experiment: str, dataset: str, sources: Mapping[str, Any] | None = None
) -> str | None:
    """Why ``experiment`` cannot run on ``dataset`` (one sentence), or ``None`` if it can.

    From the parts the experiment module ``NEEDS`` and those the dataset has
    (:func:`debiaseval.data.catalog.dataset_parts`: a built-in's declared ones, or
    those the config's ``sources`` give a user's own dataset), so the config check
    and the Python API say the same thing, naming the missing part.
    """
    from debiaseval.data.catalog import (
        dataset_names,
        dataset_parts,
        missing_parts,
        missing_text,
        needs_text,
    )

    known = dataset_names(sources)
    if dataset not in known:
        return f"unknown dataset {dataset!r}; known: {', '.join(known)}"
    needs = importlib.import_module(f"debiaseval.experiments.{experiment}").NEEDS
    missing = missing_parts(needs, dataset_parts(dataset, sources))
    if not missing:
        return None
    label = experiment.upper()
    return (
        f"{label} cannot run on {dataset!r}, which lacks {missing_text(dataset, missing, sources)}"
        f"; {label} needs {needs_text(needs)}"
    )


def run_data(
    data: str | pd.DataFrame,
    config: Mapping[str, Any] | None,
    dataset: str | None,
    seeds: int | Sequence[int] | None,
    configured_seeds: int,
    *,
    experiment: str,
) -> RunData:
    """Resolve a ``run``'s arguments: a dataset name is loaded as the workflow loads it
    (:func:`debiaseval.api.load_dataset`), once ``experiment`` is known to run on it (a
    one-line ``ValueError`` otherwise, before anything is loaded); a frame is sized from its
    largest ids and named ``dataset`` (default "data"); ``seeds`` (a count or the ids)
    defaults to the config's."""
    if isinstance(data, str):
        from debiaseval.api import load_dataset

        reason = unsupported(experiment, data, (config or {}).get("sources"))
        if reason is not None:
            raise ValueError(reason)
        interactions, users, items = load_dataset(data, config=config)
        n_users, n_items = len(users), len(items)
        name = dataset or data
    else:
        interactions = data
        n_users = int(interactions["user"].max()) + 1
        n_items = int(interactions["item"].max()) + 1
        name = dataset or "data"
    if seeds is None:
        seeds = configured_seeds
    seed_ids = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    return RunData(name, interactions, n_users, n_items, seed_ids)
