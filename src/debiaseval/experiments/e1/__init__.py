"""Experiment E1: train, tune, rank and evaluate on intervened test sets ([SAC20]).

Carraro & Bridge, *Debiased offline evaluation of recommender systems: a
weighted-sampling approach*, ACM SAC 2020: every recommender is trained on the
MNAR ``train`` part, tuned on the MAR ``val`` part, and evaluated on the MAR
``gt`` part (ground truth) and on test sets drawn from the MNAR ``heldout`` part.

The package holds all of E1: :mod:`~debiaseval.experiments.e1.steps` (one function per rule,
``NEEDS``, ``OUTPUTS``, ``check_config``), :mod:`~debiaseval.experiments.e1.arena` (the
estimator rows: their config check, each seed's estimates and scores, the scoreboard),
:mod:`~debiaseval.experiments.e1.tables` (the tables over seeds: the aggregate step),
:mod:`~debiaseval.experiments.e1.summary` (the summary and Kendall tables and their Markdown),
:mod:`~debiaseval.experiments.e1.verdict`, and here :func:`run`, which chains the steps
in-process. Their public names are importable from here (``e1.evaluate_step``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from debiaseval.data.draws import per_seed_draws, seed_block, seed_config
from debiaseval.data.filters import Filtered, dropped_warnings
from debiaseval.data.ids import raw_ids
from debiaseval.datasets.load import raw_folder
from debiaseval.datasets.truth import full_rating_rows_of
from debiaseval.evaluation.external_lists import lists_of_seed
from debiaseval.experiments import Data, Frames, input_frames, seed_data, seed_ids, validated
from debiaseval.experiments.e1.arena import estimator_features, estimator_truth
from debiaseval.experiments.e1.steps import (
    EVALUATE_OUTPUTS,
    EXPORT,
    NEEDS,
    OUTPUTS,
    TRUTH_DATASETS,
    E1Data,
    E1Evaluate,
    E1External,
    E1Impute,
    E1Intervene,
    E1Split,
    E1Train,
    E1Truth,
    check_config,
    data_step,
    evaluate_step,
    external_recommenders,
    impute_step,
    lists_step,
    select_step,
    split_step,
    testset_step,
    truth_step,
    tune_step,
)
from debiaseval.experiments.e1.summary import kendall_excluded, kendall_groups
from debiaseval.experiments.e1.tables import (
    SEED_TABLES,
    E1Aggregate,
    aggregate_step,
    dropped_over_draws,
    dropped_text,
)
from debiaseval.io.errors import EmptyTestSetError
from debiaseval.io.progress import stage, staged
from debiaseval.recommenders.registry import EXTERNAL
from debiaseval.selection.tuning import grid_chunks, merge_chunks

__all__ = [
    "EVALUATE_OUTPUTS",
    "EXPORT",
    "NEEDS",
    "OUTPUTS",
    "SEED_TABLES",
    "TRUTH_DATASETS",
    "E1Aggregate",
    "E1Data",
    "E1Evaluate",
    "E1External",
    "E1Impute",
    "E1Intervene",
    "E1Split",
    "E1Train",
    "E1Truth",
    "EmptyTestSetError",
    "aggregate_step",
    "check_config",
    "data_step",
    "dropped_over_draws",
    "dropped_text",
    "evaluate_step",
    "external_recommenders",
    "impute_step",
    "kendall_excluded",
    "kendall_groups",
    "lists_step",
    "run",
    "select_step",
    "split_step",
    "testset_step",
    "truth_step",
    "tune_step",
]


def _e1_frames(
    data: Data, config: Mapping[str, Any] | None, dataset: str | None, step: E1Data
) -> tuple[Frames, Filtered]:
    """A run's data as E1's protocol takes it (:func:`data_step`), warning of what its filter
    drops: the frames with the kept rows, and the filter's result."""
    frames = input_frames(data, config, dataset, experiment="e1")
    kept = data_step(
        frames.interactions,
        frames.users,
        frames.items,
        step=step,
        dataset=frames.dataset,
    )
    for line in dropped_warnings(kept.dropped):
        warnings.warn(f"E1 on {frames.dataset}: {line}", stacklevel=3)
    frames = frames._replace(interactions=kept.interactions, users=kept.users, items=kept.items)
    return frames, kept


def in_process_config(data: Data, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config an in-process E1 run on ``data`` is validated as: given a dataset name,
    that dataset alone, so the estimators' needs are checked against the dataset run."""
    given = dict(config or {})
    if isinstance(data, str):
        given = {**given, "datasets": [data], "e1": {**given.get("e1", {}), "datasets": None}}
    return given


def run(
    data: Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
    lists: Mapping[str, Mapping[int, pd.DataFrame]] | None = None,
) -> dict[str, Any]:
    """Run E1 in-process: the workflow's tables for the same config and seeds.

    ``data``: a dataset name (loaded as the workflow does) or canonical frames, named
    ``dataset`` (default "data"; the name seeds the random streams, so give the workflow's to
    reproduce its files byte for byte); ``config``: a validated config
    (:func:`debiaseval.api.run` validates a partial one, as :func:`in_process_config` says);
    ``seeds``: a count or the seed ids (default: the ``e1`` block's). Recommenders with
    algorithm ``external`` are read from their ``recs`` files or from ``lists`` (name -> seed ->
    lists frame), checked as the workflow checks them, their warnings as Python warnings.
    Returns every table and Markdown text of :func:`aggregate_step` (as written to
    ``results/<study>/e1/<dataset>/``), ``dropped`` and ``dropped_md`` (:func:`data_step`; a
    filter dropping more than half of a part warns), and the per-seed ``metrics`` (with
    ``TRUE`` on synthetic), ``metrics_per_user``, ``arena``, ``reliability``,
    ``estimators_diagnostics``, ``seed_comparisons`` and ``tuning``.
    """
    full = validated(config, "e1")
    block = full["e1"]
    drawn = isinstance(data, str) and per_seed_draws(full, data)
    name = dataset or (data if isinstance(data, str) else "data")
    filtering = E1Data.of(full, name)
    frames_of = seed_data(
        lambda seed: _e1_frames(
            data, seed_config(full, data, seed) if drawn else config, dataset, filtering
        ),
        drawn=drawn,
    )  # each seed's own draw (docs/datasets.md, One draw per seed), else one dataset for all
    run_seeds = seed_ids(seeds, block["seeds"])
    dataset = frames_of(run_seeds[0])[0].dataset
    splitting, intervening = E1Split.of(full, dataset), E1Intervene.of(full, dataset)
    listing, training = E1External.of(full, dataset), E1Train.of(full, dataset)
    exact_rows, evaluate = E1Truth.of(full, dataset), E1Evaluate.of(full, dataset)
    estimators = {"estimators": evaluate.estimators}
    evaluated, diagnostics, tunings, truth, dropped = [], [], [], [], []
    known = isinstance(data, str) and dataset in TRUTH_DATASETS  # its full matrix is known
    exact = known and block["truth"]
    truth_raw = raw_folder(dataset, full) if known else None  # jester5k-semi's; synthetic: None
    described = frames_of(run_seeds[0])[0].interactions  # the summary describes the first seed's
    for seed in staged(run_seeds):
        generator = seed_block(full, dataset, seed) if isinstance(data, str) else None
        frames, kept = frames_of(seed)
        if drawn:
            dropped.append(kept.dropped.assign(seed=seed))
        interactions, n_users, n_items = frames.interactions, frames.n_users, frames.n_items
        sizes = {"dataset": dataset, "n_users": n_users, "n_items": n_items}
        split = split_step(interactions, splitting, dataset=dataset, seed=seed)
        testsets = {}
        for name in intervening.testsets:
            testsets[name], checks = testset_step(split, name, intervening, seed=seed, **sizes)
            diagnostics.append(checks)
        recs = {}
        for name, spec in block["recommenders"].items():
            if spec["algorithm"] == EXTERNAL:
                frame, source, where = lists_of_seed(
                    spec,
                    name=name,
                    dataset=dataset,
                    seed=seed,
                    where=f"e1.recommenders.{name}",
                    lists=lists,
                )
                recs[name], notes = lists_step(
                    frame,
                    split,
                    listing,
                    users=frames.users,
                    items=frames.items,
                    n_users=n_users,
                    n_items=n_items,
                    ids=spec["ids"],
                    on_train_items=spec["on_train_items"],
                    source=source,
                    where=where,
                )
                for note in notes:
                    warnings.warn(note, stacklevel=2)
                continue
            stage(f"seed {seed}: tuning and training {name}")
            n_chunks = len(grid_chunks(spec["grid"], training.tuning["points_per_job"]))
            chunks = [
                tune_step(split, name, spec, training, chunk=chunk, seed=seed, **sizes)
                for chunk in range(n_chunks)
            ]
            table, best = merge_chunks(
                [t for t, _ in chunks], f"the grid of {name} on {dataset}, seed {seed}"
            )
            recs[name] = chunks[best][1]
            tunings.append(table.assign(seed=seed, recommender=name))
        true_values = None
        if exact:
            table, true_values = truth_step(
                split,
                recs,
                exact_rows,
                rating_rows=full_rating_rows_of(dataset, generator, truth_raw),
                raw_users=raw_ids(frames.users, "user", n_users),
                raw_items=raw_ids(frames.items, "item", n_items),
                seed=seed,
            )
            truth.append(table)
        evaluated.append(
            evaluate_step(
                split,
                recs,
                testsets,
                evaluate,
                seed=seed,
                n_items=n_items,
                n_users=n_users,
                features=estimator_features(estimators, frames.users, frames.items),
                truth=estimator_truth(
                    estimators, dataset, generator, frames.users, frames.items, truth_raw
                ),
                truth_per_user=true_values,
            )
        )

    def seeds_of(stem: str) -> list[pd.DataFrame]:
        return [seed[stem] for seed in evaluated]

    stage("aggregating")
    out = aggregate_step(
        {stem: seeds_of(stem) for stem in SEED_TABLES},
        diagnostics,
        described,
        dataclasses.replace(E1Aggregate.of(full, dataset), seeds=len(run_seeds)),
        dataset=dataset,
        truth=truth,
        draws="independent" if drawn else "fixed",
    )
    for stem in (
        "metrics_per_user",
        "estimators_diagnostics",
        "arena",
        "arena_replicates",
        "reliability",
        "truth_tests",
    ):
        out[stem] = pd.concat(seeds_of(stem), ignore_index=True)
    out["seed_comparisons"] = pd.concat(seeds_of("comparisons"), ignore_index=True)
    out["dropped"] = dropped_over_draws(dropped) if drawn else frames_of(run_seeds[0])[1].dropped
    out["dropped_md"] = dropped_text(out["dropped"], dataset)
    out["metrics"] = pd.concat([*seeds_of("metrics"), *truth], ignore_index=True)
    out["tuning"] = pd.concat(tunings, ignore_index=True) if tunings else pd.DataFrame()
    return out
