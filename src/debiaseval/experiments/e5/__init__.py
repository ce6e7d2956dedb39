"""Experiment E5: Unbiased Recall Evaluation for model selection ([URE24], docs/experiments/e5.md).

*Debias can be unreliable: mitigating bias issue in evaluating debiasing
recommendation* (arXiv 2409.04810). On a fully exposed dataset (KuaiRec's small
matrix or ``synthetic``'s full matrix) a biased training set is drawn by
simulated exposure and a randomly exposed set R of n items per user from the
rest (:mod:`debiaseval.data.exposure`); every model (recommender × hyperparameters)
is trained on the biased set and scored three ways (:mod:`debiaseval.evaluation.ure`):
true Recall@K on the full data, traditional Recall@K ranking only R, and URE@K.
Their agreement with the truth across models (:mod:`debiaseval.evaluation.agreement`) says
which estimate selects models correctly. On a dataset with MNAR and MAR parts
and no full data (yahoo-r3) the models train on all of MNAR, R is a seeded
``mar_test_fraction`` of the MAR part (90% in [URE24]), and the traditional ranking of
models is compared with URE's.

Steps (the workflow's ``e5_*`` rules): :func:`full_data` / :func:`observed_data`
→ :func:`expose` → :func:`evaluate_models` (one model entry, all its grid points)
→ the tables over seeds (:mod:`debiaseval.experiments.e5.tables`).

The package holds all of E5: :mod:`~debiaseval.experiments.e5.steps` (one function per rule,
``NEEDS``, ``OUTPUTS``, ``check_config``), :mod:`~debiaseval.experiments.e5.tables` (the tables
over seeds), :mod:`~debiaseval.experiments.e5.verdict`, and here :func:`run`, which chains the
steps in-process. Their public names are importable from here (``e5.evaluate_models``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.data.catalog import positive_threshold_of
from debiaseval.data.splits import run_rng
from debiaseval.datasets.load import raw_folder
from debiaseval.evaluation.external_lists import lists_of_seed
from debiaseval.experiments import (
    Data,
    Frames,
    seed_data,
    seed_frames,
    seed_generated,
    seed_ids,
    validated,
)
from debiaseval.experiments.e5.steps import (
    EXPORT,
    FULLY_EXPOSED,
    MAR_PARTS,
    NEEDS,
    OUTPUTS,
    E5Evaluate,
    E5Expose,
    check_config,
    evaluate_lists,
    evaluate_models,
    evaluate_models_on_seeds,
    expose,
    fit_seed,
    full_data,
    fully_exposed_frames,
    identity_tables,
    observed_data,
    shared_fit_seed,
    trains_once,
)
from debiaseval.experiments.e5.tables import E5Aggregate, aggregate_step, agreement_intervals
from debiaseval.experiments.e5.verdict import e5_verdict
from debiaseval.experiments.verdicts import verdict_entries
from debiaseval.io.progress import stage
from debiaseval.recommenders.registry import EXTERNAL

__all__ = [
    "EXPORT",
    "FULLY_EXPOSED",
    "MAR_PARTS",
    "NEEDS",
    "OUTPUTS",
    "E5Aggregate",
    "E5Evaluate",
    "E5Expose",
    "aggregate_step",
    "agreement_intervals",
    "check_config",
    "evaluate_lists",
    "evaluate_models",
    "evaluate_models_on_seeds",
    "expose",
    "fit_seed",
    "full_data",
    "fully_exposed_frames",
    "identity_tables",
    "observed_data",
    "positive_threshold_of",
    "run",
    "shared_fit_seed",
    "trains_once",
]


def _full_frames(name: str, synthetic: Mapping[str, Any]) -> Frames:
    """The fully exposed frames of one draw of ``synthetic`` (:func:`full_data`), as
    ``e5_full`` writes them: the pairs and the items table."""
    pairs = full_data(synthetic)
    items = pd.DataFrame({"item": np.arange(int(pairs["item"].max()) + 1, dtype=np.int32)})
    return Frames(name, pairs, None, items)


def run(
    data: Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
    lists: Mapping[str, Mapping[int, pd.DataFrame]] | None = None,
) -> dict[str, pd.DataFrame]:
    """Run E5 in-process; returns ``estimates``, ``agreement``, the per-seed rows and the
    verdict (:func:`~debiaseval.experiments.e5.verdict.e5_verdict`: ``verdict``, ``verdict_md``).

    ``data``: a dataset name (``synthetic``: its full matrix from the config's
    ``synthetic`` block, as the workflow's ``e5_full``, each seed its own draw unless
    ``synthetic.per_seed`` is false, docs/datasets.md; an MNAR/MAR dataset loaded like the
    workflow does), or in-memory frames named ``dataset`` (default "data"): fully exposed
    pairs (user, item, rating; ``part`` absent or ``full``), e.g. :func:`full_data` or
    :func:`debiaseval.data.kuairec.fully_exposed_frame`, or an MNAR/MAR interactions
    frame (``part`` ∈ mnar, mar) without truth; give ``(interactions, users, items)``
    for exposure by an item attribute. ``config``: a validated workflow config
    (:func:`debiaseval.api.run` validates a partial one); ``seeds``: a count or the seed
    ids (default the ``e5`` block's). The name seeds the random streams, so the same config, dataset
    and seed give the workflow's values. Models whose algorithm is ``external`` are read
    from their ``recs`` files, or from ``lists`` (name -> seed -> lists frame, as
    :func:`debiaseval.api.evaluate_lists` gives them), checked as the workflow checks
    them; their warnings are Python warnings.
    """
    full = validated(config, "e5")
    cfg = full["e5"]
    if isinstance(data, str) and data in FULLY_EXPOSED:
        name = dataset or data
        if data == "synthetic":  # each seed's own draw of the full matrix (synthetic.per_seed)
            frames_of = seed_generated(full, data, lambda block: _full_frames(name, block))
        else:  # the real fully exposed matrix, the same for every seed
            real = Frames(name, *fully_exposed_frames(data, raw_folder(data, full)))
            frames_of = seed_data(lambda seed: real, drawn=False)
    else:
        frames_of = seed_frames(data, full, dataset, experiment="e5")
    run_seeds = seed_ids(seeds, cfg["seeds"])
    frames = frames_of(run_seeds[0])
    dataset, data, items = frames.dataset, frames.interactions, frames.items
    exposing = E5Expose.of(full, dataset)
    # sized from the pairs, as the workflow's e5_evaluate sizes them
    n_users = int(data["user"].max()) + 1
    n_items = int(data["item"].max()) + 1
    fully_exposed = "part" not in data.columns or set(data["part"].unique()) <= {"full"}
    labelled_of = {}
    stage(f"exposing {len(run_seeds)} seed(s)")
    for seed in run_seeds:
        data = frames_of(seed).interactions
        if fully_exposed:
            labelled_of[seed] = expose(
                data,
                n_items=n_items,
                exposure=exposing.exposure,
                positive_threshold=exposing.positive_threshold,
                rng=run_rng(seed, dataset, "e5_expose"),
                items=items,
            )
        else:
            labelled_of[seed] = observed_data(
                data,
                test_fraction=float(exposing.mar_test_fraction),
                rng=run_rng(seed, dataset, "e5_mar_test"),
            )
    once = trains_once(fully_exposed, cfg["train_per_seed"])
    # (seed, model) -> its estimates and per-user values; concatenated seed by seed in the
    # models' order, as the workflow's aggregate reads them
    results: dict[tuple[int, str], tuple[pd.DataFrame, list[pd.DataFrame]]] = {}
    for name, spec in cfg["models"].items():
        stage(f"evaluating {name}")
        step = E5Evaluate.of(full, dataset, name)
        if spec["algorithm"] == EXTERNAL:
            for seed, labelled in labelled_of.items():
                given, source, where = lists_of_seed(
                    spec,
                    name=name,
                    where=f"e5.models.{name}",
                    dataset=dataset,
                    seed=seed,
                    lists=lists,
                )
                points: list[pd.DataFrame] = []
                frame, notes = evaluate_lists(
                    labelled,
                    given,
                    step,
                    users=frames.users,
                    items=items,
                    n_users=n_users,
                    n_items=n_items,
                    source=source,
                    where=where,
                    per_user=points,
                )
                for note in notes:
                    warnings.warn(note, stacklevel=2)
                results[seed, name] = frame, points
            continue
        shared = {"n_users": n_users, "n_items": n_items}
        if once:
            evaluated = evaluate_models_on_seeds(
                labelled_of, step, seed=shared_fit_seed(dataset, name), **shared
            )
            results.update({(seed, name): value for seed, value in evaluated.items()})
        else:
            for seed, labelled in labelled_of.items():
                (value,) = evaluate_models_on_seeds(
                    {seed: labelled}, step, seed=fit_seed(seed, dataset, name), **shared
                ).values()
                results[seed, name] = value
    stage("aggregating")
    rows, users = [], []
    for seed in labelled_of:
        for name in cfg["models"]:
            frame, points = results[seed, name]
            frame.insert(0, "seed", np.int32(seed))
            rows.append(frame)
            for values in points:
                values.insert(0, "seed", np.int32(seed))
            users.extend(points)
    per_seed = pd.concat(rows, ignore_index=True)
    per_user = pd.concat(users, ignore_index=True)
    out = aggregate_step(per_seed, per_user, E5Aggregate.of(full, dataset), dataset=dataset)
    return {
        "per_seed": per_seed,
        **out,
        **verdict_entries(e5_verdict(out["agreement"], out["estimates"], dataset=dataset)),
        "metrics_per_user": per_user,
    }
