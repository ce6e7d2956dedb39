"""Experiment E4: debiased learning, MF-IPS vs MF-Naive ([ICML16] §6.3, §6.5).

Schnabel et al., *Recommendations as treatments*, ICML 2016: biased rating MF
(:class:`~debiaseval.recommenders.rating_mf.WeightedMF`, eq. 14) is trained on MNAR
data with weights 1 (MF-Naive) or 1/P̂ (MF-IPS, normalised to mean 1 so that one L2
grid means the same for both; λ multiplies the penalty of the *summed* weighted loss),
tuned by k-fold cross-validation with the IPS-estimated validation error
(:func:`~debiaseval.selection.ips_cv.cv_select`, propensities scaled by (k−1)/k and 1/k), and
scored on unbiased test data:

- datasets with a full truth (``synthetic``, ``ml-100k-semi``, [ICML16] §6.2): for each
  α of a grid, O ~ Bernoulli(P_α) is drawn (one set of uniforms for every α: common
  random numbers), both models learn from it with the known P_α, and the test error is
  taken over the **full** rating matrix (test MSE vs α, d = 20 in the paper);
- ``coat`` (§6.4): MNAR ``train`` → MAR ``test``, with the dataset's provided
  ``propensities.ascii`` and, separately, logistic-regression propensities fitted on
  the user/item features (:func:`~debiaseval.debiasing.propensities.logistic`);
- ``yahoo-r3`` (§6.5): Naive-Bayes propensities whose P(Y = r) comes from a uniform
  ``mar_fraction`` (5%) of the MAR part, reported on the other 95%;
- a user's own dataset with a MAR part: as ``yahoo-r3``, plus its provided propensities
  when its ratings file has a propensity column.

The model scored on MSE is trained on squared error, the one scored on MAE on absolute
error ([ICML16] Table 2). MF-Naive and MF-IPS of one seed share their folds and their
initialisation (the random streams do not depend on the propensity model), so the
paired t-tests across seeds (:func:`~debiaseval.experiments.e4.tables.summarise`) compare like
with like.

Steps: :func:`learning_data` (a dataset's parts) → :func:`prepare` (one seed: training
pairs with every propensity model's P̂, test pairs) → :func:`fit` (one seed and
propensity model: CV, refit, test error) → :func:`~debiaseval.experiments.e4.tables.summarise`
/ :func:`~debiaseval.experiments.e4.tables.summary_markdown`; :func:`run` does it all
in-process.

The package holds all of E4: :mod:`~debiaseval.experiments.e4.steps` (the data, the fits,
``NEEDS``, ``OUTPUTS``, ``check_config``), :mod:`~debiaseval.experiments.e4.tables` (the tables
over seeds), :mod:`~debiaseval.experiments.e4.verdict`, and here :func:`run`. Their public names
are importable from here (``e4.fit``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.experiments import (
    Data,
    input_frames,
    seed_data,
    seed_generated,
    seed_ids,
    validated,
)
from debiaseval.experiments.e4.steps import (
    ERROR_COLUMNS,
    NEEDS,
    OUTPUTS,
    PROPENSITY_MODELS,
    E4Fit,
    E4Propensities,
    LearningData,
    available_propensities,
    check_config,
    dataset_seeds,
    factor_rms,
    fit,
    fit_models,
    ips_weights,
    learning_data,
    prepare,
    propensity_models,
    read_learning_data,
    tuning_grid,
)
from debiaseval.experiments.e4.tables import (
    E4Aggregate,
    aggregate,
    summary_markdown,
    summary_title,
)
from debiaseval.experiments.e4.verdict import e4_verdict
from debiaseval.experiments.verdicts import verdict_entries, with_verdict
from debiaseval.io.progress import stage, staged

__all__ = [
    "ERROR_COLUMNS",
    "NEEDS",
    "OUTPUTS",
    "PROPENSITY_MODELS",
    "E4Aggregate",
    "E4Fit",
    "E4Propensities",
    "LearningData",
    "available_propensities",
    "check_config",
    "dataset_seeds",
    "factor_rms",
    "fit",
    "fit_models",
    "ips_weights",
    "learning_data",
    "prepare",
    "propensity_models",
    "read_learning_data",
    "run",
    "summary_title",
    "tuning_grid",
]


def run(
    data: LearningData | Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Run E4 in-process: the tables the workflow writes, for the same config and seeds.

    ``data``: a dataset name (``synthetic`` generated from the config's ``synthetic``
    block, each seed its own draw unless ``synthetic.per_seed`` is false (docs/datasets.md),
    the others loaded like the workflow does), a dataset's canonical frames
    named ``dataset`` (an E4 dataset's name: :func:`learning_data` reads them as it
    reads that dataset's), or a :class:`LearningData`. ``config`` is a validated workflow config
    (:func:`debiaseval.api.run` validates a partial one);
    ``seeds`` a number of runs or a list of seed ids (default: :func:`dataset_seeds`).
    Returns ``errors``, ``summary``, ``summary_md``, ``cv`` and ``propensities``
    (every seed's pairs, with a ``seed`` column), and the verdict
    (:func:`~debiaseval.experiments.e4.verdict.e4_verdict`: ``verdict``, ``verdict_md``).
    """
    cfg = validated(config, "e4")
    block = cfg["e4"]
    if isinstance(data, str) and data == "synthetic":  # each seed's own draw (per_seed)
        name = data
        data_of = seed_generated(cfg, name, lambda gen: learning_data(name, synthetic=gen))
    else:
        if not isinstance(data, LearningData):
            frames = input_frames(data, config, dataset, experiment="e4")
            data = learning_data(frames.dataset, frames.interactions, frames.users, frames.items)
        name, given = data.name, data
        data_of = seed_data(lambda seed: given, drawn=False)
    ids = seed_ids(seeds, dataset_seeds(block, name))
    propensities, fitting = E4Propensities.of(cfg, name), E4Fit.of(cfg, name)
    errors, cvs, pairs, losses = [], [], [], []
    for s in staged(ids):
        data = data_of(int(s))
        prepared = prepare(data, propensities, int(s))
        pairs.append(prepared.assign(seed=np.int32(s)))
        for model in fit_models(block, name):
            e, c, loss = fit(data, prepared, fitting, int(s), model)
            errors.append(e)
            cvs.append(c)
            losses.append(loss)
    stage("aggregating")
    summary = E4Aggregate.of(cfg, name)
    tables = aggregate(errors, losses, summary)
    title = summary_title(name)
    alpha = summary.alpha
    md = summary_markdown(tables["summary"], title=title, alpha=alpha, tests=tables["pair_tests"])
    found = verdict_entries(
        e4_verdict(tables["summary"], tables["pair_tests"], dataset=name, alpha=alpha)
    )
    return {
        **tables,
        "summary_md": with_verdict(md, found["verdict_md"]),
        **found,
        "cv": pd.concat(cvs, ignore_index=True),
        "propensities": pd.concat(pairs, ignore_index=True),
    }
