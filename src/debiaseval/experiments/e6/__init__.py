"""Experiment E6: weighted offline evaluation over time ([MYT14]; docs/experiments/e6.md).

de Myttenaere, Golden, Le Grand, Rossi, *Reducing offline evaluation bias in
recommendation systems* (Benelearn 2014) and *Study of a bias in the offline
evaluation of a recommendation algorithm* (2015). Steps:

1. :func:`time_log`: a time-stamped log and its snapshot cuts t0 < t1 < … —
   the MNAR part of a real dataset cut by counts or dates, or the ``synthetic``
   truth observed period by period under recommendation campaigns
   (:mod:`debiaseval.data.campaigns`);
2. :func:`evaluate_over_time`: at every t, the profiles of the users with at
   least ``min_profile`` items, KL item weights fitted to the t0 marginal for
   every p (:mod:`debiaseval.debiasing.kl_weights`), and the leave-one-out score of every
   recommender, unweighted and weighted (:mod:`debiaseval.evaluation.leave_one_out`): exact
   (the default), or from ``n_draws`` sampled draws as [MYT14] (``protocol: sampled``).

The boosted set B is the campaign's items on ``synthetic``; on real data, the
``n_boosted`` items whose marginal grows most from t0 to the last snapshot.
g1 recommends the k items of B whose marginal grows most; g2 the k items most
frequent at t0 outside B.

The package holds all of E6: :mod:`~debiaseval.experiments.e6.steps` (the steps above,
``NEEDS``, ``OUTPUTS``, ``check_config``), :mod:`~debiaseval.experiments.e6.tables` (the tables
over seeds), :mod:`~debiaseval.experiments.e6.verdict`, and here :func:`run`, which chains the
steps in-process. Their public names are importable from here (``e6.run_seed``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from debiaseval.data.draws import seed_block
from debiaseval.experiments import Data, input_frames, seed_ids, validated
from debiaseval.experiments.e6.steps import (
    NEEDS,
    OUTPUTS,
    RECOMMENDERS,
    TABLES,
    E6Evaluate,
    check_config,
    constant_lists,
    evaluate_over_time,
    run_seed,
    snapshot_profiles,
    time_log,
)
from debiaseval.experiments.e6.tables import E6Aggregate, aggregate, markdown, score_flags
from debiaseval.experiments.e6.verdict import e6_verdict
from debiaseval.experiments.verdicts import verdict_entries
from debiaseval.io.progress import stage, staged

__all__ = [
    "NEEDS",
    "OUTPUTS",
    "RECOMMENDERS",
    "TABLES",
    "E6Aggregate",
    "E6Evaluate",
    "aggregate",
    "check_config",
    "constant_lists",
    "evaluate_over_time",
    "markdown",
    "run",
    "run_seed",
    "score_flags",
    "snapshot_profiles",
    "time_log",
]


def run(
    data: Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Run E6 in-process; the same tables as the workflow's
    ``results/<study>/e6/<dataset>/*.parquet``.

    ``data``: a dataset name ("synthetic": the campaign simulation from the config's
    ``synthetic`` block, each seed its own draw unless ``synthetic.per_seed`` is false,
    docs/datasets.md; a time-stamped dataset loaded like the workflow does) or a
    time-stamped interactions frame (``user``, ``item``, ``timestamp``, optional
    ``part``; contiguous 0-based ids), or ``(interactions, users, items)``, named
    ``dataset`` (default "data"; the name seeds the random streams, so use the
    workflow's name to reproduce it). ``config`` is a validated config (:func:`debiaseval.api.run`
    validates a partial one); ``seeds`` a count (seeds 0..n−1) or explicit seeds, default the
    ``e6.seeds`` of the config. Beside the tables, the verdict
    (:func:`~debiaseval.experiments.e6.verdict.e6_verdict`): ``verdict`` and ``verdict_md``.
    """
    full = validated(config, "e6")
    block = full["e6"]
    seed_list = seed_ids(seeds, block["seeds"])
    step = E6Evaluate.of(full, dataset or (data if isinstance(data, str) else "data"))
    name = "synthetic"
    if isinstance(data, str) and data == "synthetic":  # each seed's own draw (per_seed)
        runs = [
            run_seed("synthetic", s, step, synthetic=seed_block(full, "synthetic", s))
            for s in staged(seed_list)
        ]
    else:
        frames = input_frames(data, config, dataset, experiment="e6")
        runs = [
            run_seed(
                frames.dataset,
                s,
                step,
                synthetic=full["synthetic"],
                interactions=frames.interactions,
                n_users=frames.n_users,
                n_items=frames.n_items,
            )
            for s in staged(seed_list)
        ]
        name = frames.dataset
    stage("aggregating")
    tables = aggregate(runs, E6Aggregate.of(full, name))
    found = e6_verdict(tables["scores"], tables["snapshots"], dataset=name)
    return {**tables, **verdict_entries(found)}
