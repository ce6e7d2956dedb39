"""Experiments E1–E6 of SPEC §7: each module composes the library's methods for one study.

An experiment module holds no method of its own: splits, interventions,
recommenders, metrics and estimators live in their own modules and are usable
without Snakemake; ``experiments/eN.py`` only wires them into the study's
steps, which the workflow's ``eN_*`` rules call one at a time.
"""

from __future__ import annotations

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


def run_data(
    data: str | pd.DataFrame,
    config: Mapping[str, Any] | None,
    dataset: str | None,
    seeds: int | Sequence[int] | None,
    configured_seeds: int,
) -> RunData:
    """Resolve a ``run``'s arguments: a dataset name is loaded as the workflow loads it
    (:func:`debiaseval.api.load_dataset`), a frame is sized from its largest ids and named
    ``dataset`` (default "data"); ``seeds`` (a count or the ids) defaults to the config's."""
    if isinstance(data, str):
        from debiaseval.api import load_dataset

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
