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


def unsupported(experiment: str, dataset: str) -> str | None:
    """Why ``experiment`` cannot run on ``dataset`` (one sentence), or ``None`` if it can.

    From the experiment module's ``DATASETS`` (those it can run on) and ``NEEDS``
    (what the others lack, e.g. "a MAR part"), so the config check and the Python
    API say the same thing.
    """
    module = importlib.import_module(f"debiaseval.experiments.{experiment}")
    supported = getattr(module, "DATASETS", None)
    if supported is None or dataset in supported:
        return None
    label, needs = experiment.upper(), getattr(module, "NEEDS", None)
    if needs:
        reason = f"{label} needs {needs}, which {dataset!r} lacks"
    else:
        reason = f"{label} cannot run on {dataset!r}"
    return f"{reason} ({label} datasets: {', '.join(supported)})"


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

        reason = unsupported(experiment, data)
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
