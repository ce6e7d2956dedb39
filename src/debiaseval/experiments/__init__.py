"""Experiments E1–E6 (docs/experiments/): each package composes the library's methods for one study.

An experiment holds no method of its own: splits, interventions, recommenders,
metrics and estimators live in their own modules and are usable without Snakemake.
The package ``experiments/eN/`` holds all of one study: its steps, which the workflow's
``eN_*`` rules call one at a time (``steps.py``), its tables over seeds (``tables.py``),
its verdict (``verdict.py``) and its ``run``; it re-exports their public names. What every
experiment shares stays here (the data of a run, below) and in
:mod:`~debiaseval.experiments.verdicts`.

Each package's ``run`` chains those steps in-process on a *validated* config: the whole
config with its defaults filled and every check passed, as
:func:`debiaseval.api.run` makes it (with the workflow's whole-config check,
:func:`debiaseval.workflow.config.validate_config`). The experiments import nothing of
the workflow; :func:`validated` only refuses a config that was not validated.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import pandas as pd

from debiaseval.data.draws import per_seed_draws, seed_block, seed_config

T = TypeVar("T")


_RESOLVED_KEYS = ("experiments", "sources", "synthetic", "min_users")
"""Top-level keys every validated config has (the schema fills them)."""


def validated(config: Mapping[str, Any] | None, experiment: str) -> Mapping[str, Any]:
    """``config`` if it is a validated config for ``experiment``, else a one-line ``ValueError``.

    A validated config has every top-level key filled and the experiment's block
    resolved (its ``seeds`` and ``datasets`` no longer null);
    :func:`debiaseval.api.run` validates a partial config and then calls the module's ``run``.
    """
    given = config or {}
    block = given.get(experiment)
    missing = [key for key in _RESOLVED_KEYS if key not in given]
    if not isinstance(block, Mapping) or block.get("seeds") is None:
        missing.append(f"{experiment}.seeds")
    if missing:
        raise ValueError(
            f"{experiment}.run takes a validated config (missing {', '.join(missing)}); call "
            f"debiaseval.api.run({experiment!r}, data, config), which validates a partial one"
        )
    return given


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


Data = str | pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]
"""What every experiment's ``run`` takes: a dataset name, or its canonical frames (an
interactions frame, or ``(interactions, users, items)`` as
:func:`debiaseval.datasets.load.load_dataset` returns them); E3 and E4 also take their prepared
data (``Truth``, ``LearningData``)."""


class Frames(NamedTuple):
    """A ``run``'s data as canonical frames, named (users/items None when not given)."""

    dataset: str
    interactions: pd.DataFrame
    users: pd.DataFrame | None
    items: pd.DataFrame | None

    @property
    def n_users(self) -> int:
        """Users: the users table's length, else the largest user id + 1."""
        if self.users is not None:
            return len(self.users)
        return int(self.interactions["user"].max()) + 1

    @property
    def n_items(self) -> int:
        """Items: the items table's length, else the largest item id + 1."""
        if self.items is not None:
            return len(self.items)
        return int(self.interactions["item"].max()) + 1


def input_frames(
    data: Data, config: Mapping[str, Any] | None, dataset: str | None, *, experiment: str
) -> Frames:
    """A ``run``'s ``data`` as :class:`Frames`, the same way for every experiment.

    A dataset name is loaded as the workflow loads it (:func:`debiaseval.datasets.load.load_dataset`
    with ``config``), once ``experiment`` is known to run on it (a one-line ``ValueError``
    otherwise, before anything is loaded); in-memory frames are named ``dataset``
    (default "data"; the name seeds the random streams, so use the workflow's name to
    reproduce its files).
    """
    if isinstance(data, str):
        from debiaseval.datasets.load import load_dataset

        reason = unsupported(experiment, data, (config or {}).get("sources"))
        if reason is not None:
            raise ValueError(reason)
        interactions, users, items = load_dataset(data, config=config)
        return Frames(dataset or data, interactions, users, items)
    name = dataset or "data"
    if isinstance(data, pd.DataFrame):
        return Frames(name, data, None, None)
    if (
        isinstance(data, tuple)
        and len(data) == 3
        and all(isinstance(f, pd.DataFrame) for f in data)
    ):
        return Frames(name, *data)
    raise TypeError(
        f"{experiment.upper()} data must be a dataset name, an interactions frame or "
        f"(interactions, users, items), got {type(data).__name__}"
    )


def seed_ids(seeds: int | Sequence[int] | None, configured: int) -> list[int]:
    """The seeds of a run: a count n (seeds 0..n-1) or explicit ids; default ``configured``."""
    if seeds is None:
        seeds = configured
    return list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]


def seed_data(build: Callable[[int], T], *, drawn: bool) -> Callable[[int], T]:
    """``build`` as a function of the seed: each seed's own value where the data is ``drawn``
    per seed (the last seed's kept, so asking twice builds once), else the one value built at
    the first call, for every seed."""
    if drawn:
        return functools.lru_cache(maxsize=1)(build)
    shared = functools.cache(lambda: build(0))
    return lambda seed: shared()


def seed_frames(
    data: Data, config: Mapping[str, Any], dataset: str | None, *, experiment: str
) -> Callable[[int], Frames]:
    """The data of each seed of a ``run``: a function of the seed that gives its :class:`Frames`.

    A generated dataset drawn per seed (:func:`debiaseval.data.draws.per_seed_draws`) gives
    each seed its own draw (:func:`~debiaseval.data.draws.seed_config`), as the workflow's
    ``data/<dataset>/seed<s>/``; any other data is loaded once (:func:`input_frames`) and
    serves every seed (:func:`seed_data`).
    """
    drawn = isinstance(data, str) and per_seed_draws(config, data)
    return seed_data(
        lambda seed: input_frames(
            data,
            seed_config(config, data, seed) if drawn else config,
            dataset,
            experiment=experiment,
        ),
        drawn=drawn,
    )


def seed_generated(
    config: Mapping[str, Any], dataset: str, make: Callable[[dict[str, Any]], T]
) -> Callable[[int], T]:
    """What an experiment makes of a generated ``dataset`` (``make`` of its generator block),
    as a function of the seed: of the seed's own draw where the dataset is drawn per seed
    (:func:`~debiaseval.data.draws.seed_block`), else of the one draw, made once
    (:func:`seed_data`)."""
    return seed_data(
        lambda seed: make(seed_block(config, dataset, seed) or {}),
        drawn=per_seed_draws(config, dataset),
    )
