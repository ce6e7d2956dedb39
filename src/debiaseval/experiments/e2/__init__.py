"""Experiment E2: debiased offline evaluation of active learning ([FLAIRS20]).

See docs/experiments/e2.md.

Carraro & Bridge, *Debiased offline evaluation of active learning in recommender
systems*, FLAIRS-33 2020. Per seed, after the dataset's user filter, the MNAR
part is split into K_before (``known``, 60%), H_he (``hidden_pool``, 20%) and
T_he (``test_pool``, 20%); each evaluation method draws the hidden set H and
the test set T from the pools (CLASSIC: both uniform; INT_T: T by WTD_H; INT_HT:
both by WTD_H, posteriors of the pool sampled, [FLAIRS20] eqs. 5–6); an MF tuned
on a validation part of K_before is trained on K_before; every strategy asks
``n`` items of each active user and elicits those found in H; the MF is
retrained on K_before ∪ elicited with the same hyperparameters, and both are
evaluated on T.

The package holds all of E2: :mod:`~debiaseval.experiments.e2.steps` (one function per rule,
``NEEDS``, ``OUTPUTS``, ``check_config``), :mod:`~debiaseval.experiments.e2.tables` (the tables
over seeds), :mod:`~debiaseval.experiments.e2.verdict`, and here :func:`run`, which chains the
steps in-process. Their public names are importable from here (``e2.evaluate_step``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from debiaseval.experiments import seed_frames, seed_ids, validated
from debiaseval.experiments.e2.steps import (
    NEEDS,
    OUTPUTS,
    E2Elicit,
    E2Evaluate,
    E2Sample,
    E2Split,
    E2Train,
    check_config,
    elicit_step,
    evaluate_step,
    sample_step,
    selected_params,
    split_step,
    train_step,
)
from debiaseval.experiments.e2.tables import E2Aggregate, aggregate_step, counts_frame
from debiaseval.io.progress import stage, staged

__all__ = [
    "NEEDS",
    "OUTPUTS",
    "E2Aggregate",
    "E2Elicit",
    "E2Evaluate",
    "E2Sample",
    "E2Split",
    "E2Train",
    "aggregate_step",
    "check_config",
    "elicit_step",
    "evaluate_step",
    "run",
    "sample_step",
    "selected_params",
    "split_step",
    "train_step",
]


def run(
    data: str | pd.DataFrame,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Run E2 in-process: the workflow's tables for the same config and seeds.

    ``data``: a dataset name (loaded like the workflow, see
    :func:`debiaseval.api.load_dataset`; ``synthetic`` drawn afresh for every seed unless
    ``synthetic.per_seed`` is false, docs/datasets.md) or a canonical interactions frame with an
    ``mnar`` part, named ``dataset`` (default "data"; the name seeds the random
    streams). Returns ``elicited``, ``summary``, ``wilcoxon``, ``wilcoxon_seeds`` (as
    written to ``results/<study>/e2/<dataset>/``), ``summary_md``, the verdict (``verdict``,
    ``verdict_md``), and per seed ``changes``
    (per user), ``tuning`` and ``elicited_pairs``.
    """
    full = validated(config, "e2")
    block = full["e2"]
    run_seeds = seed_ids(seeds, block["seeds"])
    # each seed's data: its own draw of a generated dataset (docs/datasets.md, One draw per seed)
    frames_of = seed_frames(data, full, dataset, experiment="e2")
    dataset = frames_of(run_seeds[0]).dataset
    splitting, sampling = E2Split.of(full, dataset), E2Sample.of(full, dataset)
    train, elicit, evaluate = (s.of(full, dataset) for s in (E2Train, E2Elicit, E2Evaluate))
    changes, counts, tunings, pairs = [], [], [], []
    for seed in staged(run_seeds):
        frames = frames_of(seed)
        interactions = frames.interactions
        sizes = {"n_users": frames.n_users, "n_items": frames.n_items}
        common = {"dataset": dataset, **sizes}
        split, active = split_step(interactions, splitting, dataset=dataset, seed=seed)
        table, before = train_step(split, train, seed=seed, **common)
        tunings.append(table.assign(seed=seed))
        drawn = {
            method: sample_step(split, method, sampling, dataset=dataset, seed=seed, **sizes)
            for method in sampling.methods
        }
        hidden = {method: pools[0] for method, pools in drawn.items()}
        test = {method: pools[1] for method, pools in drawn.items()}
        for strategy in block["strategies"]:
            got = elicit_step(
                split,
                active,
                hidden,
                table,
                strategy,
                elicit,
                seed=seed,
                **common,
            )
            for method, frame in got.items():
                pairs.append(frame.assign(seed=seed, method=method, strategy=strategy))
                counts.append((seed, method, strategy, len(frame), len(active)))
            changes.append(
                evaluate_step(
                    split,
                    active,
                    test,
                    got,
                    table,
                    before,
                    evaluate,
                    seed=seed,
                    strategy=strategy,
                    **common,
                )
            )
    stage("aggregating")
    aggregate = dataclasses.replace(E2Aggregate.of(full, dataset), seeds=len(run_seeds))
    out = aggregate_step(changes, counts_frame(counts), aggregate, dataset=dataset)
    out["changes"] = pd.concat(changes, ignore_index=True)
    out["tuning"] = pd.concat(tunings, ignore_index=True)
    out["elicited_pairs"] = pd.concat(pairs, ignore_index=True)
    return out
