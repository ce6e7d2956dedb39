"""Experiment E3: accuracy of the Naive, IPS and SNIPS estimators under selection bias ([ICML16]).

Schnabel et al., *Recommendations as treatments*, ICML 2016, §3.4 and §6.2–6.4:
on a dataset whose full rating matrix Y is known (``synthetic``, or
``ml-100k-semi``), the five prediction matrices of
:mod:`debiaseval.evaluation.prediction_matrices` have exactly known MAE and DCG@k
(:mod:`debiaseval.evaluation.losses`). Observation patterns O ~ Bernoulli(P_α) are drawn
from the dataset's own observation model at bias strength α, and every
estimator of :mod:`debiaseval.evaluation.loss_estimators` is computed from the observed pairs
with the known propensities P_α, or with Naive-Bayes propensities
(:func:`debiaseval.debiasing.propensities.naive_bayes`) whose P(Y = r) comes from a MAR
sample of a given size. One draw's uniforms U serve every α (O_α = U < P_α:
common random numbers), and the Naive-Bayes runs reuse the draw's O at the
table's α, so the comparisons across α and MAR sizes are paired.

Steps: :func:`simulate` (one seed: prediction matrices, true values, draws) →
:func:`summarise_estimates` (Table 1), :func:`rmse_table` (RMSE vs α and vs the
MAR sample size, per matrix), :func:`mean_over_matrices` (the same averaged over the
matrices, as [ICML16] Figures 2 and 4 show them), :func:`table1_markdown`;
:func:`run` does it all in-process.

The package holds all of E3: :mod:`~debiaseval.experiments.e3.steps` (the truth, the draws,
``NEEDS``, ``OUTPUTS``, ``check_config``), :mod:`~debiaseval.experiments.e3.tables` (the tables
over seeds), :mod:`~debiaseval.experiments.e3.verdict`, and here :func:`run`. Their public names
are importable from here (``e3.simulate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from debiaseval.experiments import (
    Data,
    input_frames,
    seed_data,
    seed_generated,
    seed_ids,
    validated,
)
from debiaseval.experiments.e3.steps import (
    LEVELS,
    NEEDS,
    OUTPUTS,
    E3Simulate,
    Truth,
    check_config,
    dataset_truth,
    full_truth,
    simulate,
    simulate_seed,
    synthetic_truth,
    true_losses,
)
from debiaseval.experiments.e3.tables import (
    E3Aggregate,
    aggregate,
    mean_over_matrices,
    rmse_table,
    summarise_estimates,
    table1_markdown,
)
from debiaseval.experiments.e3.verdict import e3_verdict
from debiaseval.experiments.verdicts import verdict_entries
from debiaseval.io.progress import stage, staged

__all__ = [
    "LEVELS",
    "NEEDS",
    "OUTPUTS",
    "E3Aggregate",
    "E3Simulate",
    "Truth",
    "aggregate",
    "check_config",
    "dataset_truth",
    "full_truth",
    "mean_over_matrices",
    "rmse_table",
    "run",
    "simulate",
    "simulate_seed",
    "summarise_estimates",
    "synthetic_truth",
    "table1_markdown",
    "true_losses",
]


def _given_truth(
    data: Truth | Data, config: Mapping[str, Any] | None, dataset: str | None
) -> Truth:
    """The :class:`Truth` of a ``run``'s ``data`` other than ``synthetic``: a :class:`Truth` as
    given, else the ``full`` part of the dataset's frames (:func:`full_truth`)."""
    if isinstance(data, Truth):
        return data
    frames = input_frames(data, config, dataset, experiment="e3")
    return full_truth(frames.interactions, frames.dataset)


def run(
    data: Truth | Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Run E3 in-process: the tables the workflow writes, for the same config and seeds.

    ``data``: a dataset name (``synthetic`` generated from the config's ``synthetic``
    block, each seed its own draw unless ``synthetic.per_seed`` is false (docs/datasets.md),
    ``ml-100k-semi`` loaded like the workflow does), the canonical frames of a
    dataset with a ``full`` part (:func:`full_truth`, named ``dataset``) or a
    :class:`Truth`. ``config`` is a validated workflow config (:func:`debiaseval.api.run`
    validates a partial one);
    ``seeds`` a number of runs or a list of seed ids (default: the ``e3`` block's).
    Returns ``draws`` and ``naive_bayes`` (every seed's, concatenated: the
    per-seed files), ``estimates``, ``rmse_vs_alpha``, ``rmse_vs_mar``,
    ``rmse_vs_alpha_mean`` and ``rmse_vs_mar_mean`` (:func:`aggregate`), and the verdict
    (:func:`~debiaseval.experiments.e3.verdict.e3_verdict`: ``verdict``, ``verdict_md``).
    """
    cfg = validated(config, "e3")
    block = cfg["e3"]
    if isinstance(data, str) and data == "synthetic":  # each seed's own draw (per_seed)
        truth_of = seed_generated(cfg, data, synthetic_truth)
    else:
        truth_of = seed_data(lambda seed: _given_truth(data, config, dataset), drawn=False)
    ids = seed_ids(seeds, block["seeds"])
    name = truth_of(ids[0]).name
    step = E3Simulate.of(cfg, name)
    runs = [simulate_seed(truth_of(s), step, s) for s in staged(ids)]
    draws = pd.concat([d for d, _ in runs], ignore_index=True)
    naive_bayes = pd.concat([nb for _, nb in runs], ignore_index=True)
    stage("aggregating")
    summary = E3Aggregate.of(cfg, name)
    tables = aggregate(draws, summary)
    found = e3_verdict(tables["rmse_vs_alpha_mean"], draws, summary.params(), dataset=name)
    return {"draws": draws, "naive_bayes": naive_bayes, **tables, **verdict_entries(found)}
