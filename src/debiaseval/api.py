"""The Python API: every experiment and its building blocks, without Snakemake.

For notebooks and scripts. :func:`run` runs any experiment in-process and returns
the tables the workflow writes to ``results/eN/<dataset>/`` (for the same config
and seeds, the same values; for E1 and E2 byte-identical Parquet when written with
:func:`debiaseval.io.files.write_parquet`); ``run_e1`` ... ``run_e6`` are its
aliases, with the same arguments. :func:`register_recommender` makes a class of
one's own usable by its name in the configs given to :func:`run`;
:func:`evaluate_lists` evaluates recommendation lists made elsewhere. The building
blocks are re-exported under stable names::

    from debiaseval import api

    interactions, users, items = api.load_dataset("synthetic")
    out = api.run("e1", "synthetic", {"seeds": 1})
    out["summary"].query("metric == 'recall'")
    estimates = api.run_e5("coat", {"e5": {"ks": [10]}}, seeds=2)["estimates"]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from debiaseval.active_learning.elicitation import STRATEGIES as ELICITATION_STRATEGIES
from debiaseval.active_learning.elicitation import ElicitationContext, ask, elicit
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import assign_parts, run_rng, split_e1, split_e2
from debiaseval.datasets.load import load_dataset
from debiaseval.debiasing.interventions import TestSetSpec, intervene, sampling_weights
from debiaseval.evaluation.loss_estimators import ips, naive, snips
from debiaseval.evaluation.metrics import TOPK_METRICS, evaluate_topk, summarise
from debiaseval.experiments import Data
from debiaseval.experiments.e4 import learning_data
from debiaseval.io.progress import reporting, stage
from debiaseval.io.schema import experiment_names
from debiaseval.recommenders import (
    RECOMMENDERS,
    Recommender,
    check_recommender,
    make_recommender,
    register_recommender,
    resolve_recommender,
)
from debiaseval.recommenders.ranking import top_k
from debiaseval.recommenders.registry import EXTERNAL
from debiaseval.selection.tuning import EarlyStopping, tune_recommender
from debiaseval.workflow.config import validate_config

__all__ = [
    "ELICITATION_STRATEGIES",
    "RECOMMENDERS",
    "TOPK_METRICS",
    "EarlyStopping",
    "ElicitationContext",
    "Recommender",
    "TestSetSpec",
    "ask",
    "assign_parts",
    "check_recommender",
    "elicit",
    "evaluate_lists",
    "evaluate_topk",
    "intervene",
    "ips",
    "learning_data",
    "load_dataset",
    "make_recommender",
    "naive",
    "rating_matrix",
    "register_recommender",
    "resolve_recommender",
    "run",
    "run_e1",
    "run_e2",
    "run_e3",
    "run_e4",
    "run_e5",
    "run_e6",
    "run_rng",
    "sampling_weights",
    "snips",
    "split_e1",
    "split_e2",
    "summarise",
    "top_k",
    "tune_recommender",
]


def run(
    experiment: str,
    data: Data | Any,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run ``experiment`` (``"e1"`` ... ``"e6"``) in-process: the tables the workflow writes.

    The same arguments for every experiment:

    - ``data``: a dataset name (loaded and prepared as the workflow does, once the
      experiment is known to run on it), or in-memory data: an interactions frame, or
      ``(interactions, users, items)`` as :func:`load_dataset` returns them (E3 and E4
      also take their prepared ``Truth`` / ``LearningData``);
    - ``config``: the whole workflow config, e.g. ``{"e5": {"ks": [10]}, "seeds": 2}``
      (validated, defaults filled; plugin recommenders imported and checked);
    - ``seeds``: a number of runs n (seeds 0..n-1) or the seed ids; default the
      experiment block's ``seeds``;
    - ``dataset``: the name of in-memory data (default "data"); it seeds the random
      streams, so give the workflow's name to reproduce its files;
    - ``progress``: one line on stderr per stage (the config check, each seed, each model
      trained, the aggregation) with the time since the start (:mod:`debiaseval.io.progress`);
      ``False`` for none.

    Returns the experiment's tables by name (E1: ``summary``, ``kendall``, ...).
    """
    names = experiment_names()
    if experiment not in names:
        raise ValueError(f"unknown experiment {experiment!r}; known: {', '.join(names)}")
    with reporting(_label(experiment, data, dataset), enabled=progress):
        module, full = _validated(experiment, data, config)
        return module.run(data, full, seeds=seeds, dataset=dataset)


def _label(experiment: str, data: Data | Any, dataset: str | None) -> str:
    """``e1 on coat``: what a run's progress lines name."""
    return f"{experiment} on {dataset or (data if isinstance(data, str) else 'data')}"


def _validated(
    experiment: str, data: Data | Any, config: Mapping[str, Any] | None
) -> tuple[Any, dict[str, Any]]:
    """The experiment's module and ``config`` validated as a run of that experiment alone
    (:func:`debiaseval.workflow.config.validate_config`), after the module's
    ``in_process_config(data, config)`` where it has one (E1: the dataset run alone)."""
    stage("checking the config")
    module = importlib.import_module(f"debiaseval.experiments.{experiment}")
    adapt = getattr(module, "in_process_config", None)
    given = adapt(data, config) if adapt is not None else dict(config or {})
    return module, validate_config(given, experiment)


_LIST_ENTRIES = {"e1": "recommenders", "e5": "models"}
"""The experiments that evaluate recommendation lists, and the config key of their models."""


def evaluate_lists(
    experiment: str,
    data: Data,
    lists: Mapping[str, Mapping[int, pd.DataFrame]],
    config: Mapping[str, Any] | None = None,
    *,
    ids: str = "raw",
    on_train_items: str = "error",
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Evaluate recommendation lists made elsewhere, held in memory, as :func:`run` does.

    ``lists``: name -> seed -> a frame with columns ``user``, ``item`` and ``score``
    and/or ``rank``, one per seed of the run (the lists a model trained on that seed's
    exported training part made). They enter ``experiment`` (``"e1"`` or ``"e5"``) as
    entries of algorithm ``external`` with ``ids`` and ``on_train_items``, beside the
    models that ``config`` names in ``e1.recommenders`` / ``e5.models`` (only the lists if
    it names none), and are checked as the workflow checks a lists file: unknown ids,
    duplicated pairs, training items, lists too short (docs: "Evaluate your own
    recommender"). ``seeds`` defaults to the seeds the lists have (the same for every
    name); ``progress`` as :func:`run`'s. Returns :func:`run`'s tables.
    """
    entry = _LIST_ENTRIES.get(experiment)
    if entry is None:
        raise ValueError(
            f"recommendation lists are evaluated by {' and '.join(_LIST_ENTRIES)}, "
            f"not {experiment!r}"
        )
    if not lists:
        raise ValueError("evaluate_lists needs lists: {name: {seed: frame}}")
    given = {name: sorted(int(s) for s in by_seed) for name, by_seed in lists.items()}
    first, *others = given.items()
    for name, seed_list in others:
        if seed_list != first[1]:
            raise ValueError(
                f"lists[{name!r}] have seeds {seed_list}, lists[{first[0]!r}] {first[1]}: "
                "give every name the same seeds"
            )
    config = dict(config or {})
    block = dict(config.get(experiment) or {})
    models = dict(block.get(entry) or {})
    taken = sorted(set(models) & set(lists))
    if taken:
        raise ValueError(f"{experiment}.{entry} already names {taken}: rename the lists")
    for name in lists:
        # lists given in memory are never read from `recs`; the entry needs one to validate
        models[name] = {
            "algorithm": EXTERNAL,
            "recs": "in-memory.parquet",
            "ids": ids,
            "on_train_items": on_train_items,
        }
    config[experiment] = {**block, entry: models}
    by_seed = {name: {int(s): frame for s, frame in sets.items()} for name, sets in lists.items()}
    with reporting(_label(experiment, data, dataset), enabled=progress):
        module, full = _validated(experiment, data, config)
        return module.run(
            data,
            full,
            seeds=first[1] if seeds is None else seeds,
            dataset=dataset,
            lists=by_seed,
        )


def _alias(experiment: str) -> Callable[..., dict[str, Any]]:
    def run_experiment(
        data: Data | Any,
        config: Mapping[str, Any] | None = None,
        *,
        seeds: int | Sequence[int] | None = None,
        dataset: str | None = None,
        progress: bool = True,
    ) -> dict[str, Any]:
        return run(experiment, data, config, seeds=seeds, dataset=dataset, progress=progress)

    run_experiment.__name__ = run_experiment.__qualname__ = f"run_{experiment}"
    run_experiment.__doc__ = f"``run({experiment!r}, ...)``: see :func:`run`."
    return run_experiment


run_e1 = _alias("e1")
run_e2 = _alias("e2")
run_e3 = _alias("e3")
run_e4 = _alias("e4")
run_e5 = _alias("e5")
run_e6 = _alias("e6")
