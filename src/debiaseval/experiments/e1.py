"""Experiment E1: train, tune, rank and evaluate on intervened test sets ([SAC20]).

Carraro & Bridge, *Debiased offline evaluation of recommender systems: a
weighted-sampling approach*, ACM SAC 2020: every recommender is trained on the
MNAR ``train`` part, tuned on the MAR ``val`` part, and evaluated on the MAR
``gt`` part (ground truth) and on test sets drawn from the MNAR ``heldout`` part.
"""

from __future__ import annotations

import math
import os
import shutil
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.data.catalog import positive_threshold_of
from debiaseval.data.filters import Filtered, apply_filter, dropped_markdown, dropped_warnings
from debiaseval.data.filters import common_users_items as _common_users_items
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import run_rng, split_e1
from debiaseval.debiasing.interventions import TestSetSpec, intervene, marginal_kl, sampling_weights
from debiaseval.estimation.arena import (
    DIAGNOSTICS_COLUMNS,
    ESTIMATOR_NEEDS,
    SplitParts,
    estimator_features,
    estimator_truth,
    evaluate_estimators,
    fit_imputation,
    imputation_frame,
)
from debiaseval.estimation.diagnostics import heavy_tailed
from debiaseval.estimation.heldout import GAINS
from debiaseval.estimation.imputation import Imputation
from debiaseval.estimation.scoreboard import (
    RELIABILITY_COLUMNS,
    SCORED_COLUMNS,
    TRUE,
    common_means,
    scoreboard,
    scoreboard_markdown,
    split_half_reliability,
    truth_of,
    truth_separation,
)
from debiaseval.estimation.sensitivity import (
    SENSITIVITY_COLUMNS,
    gamma_star_over_seeds,
    sensitivity_markdown,
    sensitivity_over_seeds,
)
from debiaseval.evaluation.aggregate import (
    GROUND_TRUTH,
    kendall_markdown,
    kendall_table,
    summary_flags,
    summary_markdown,
    summary_table,
    testsets_table,
)
from debiaseval.evaluation.external_lists import (
    lists_of_seed,
    prepare_lists,
    short_lists_warning,
)
from debiaseval.evaluation.flags import MIN_USERS, short_list_counts
from debiaseval.evaluation.full_truth import true_topk, true_topk_table
from debiaseval.evaluation.metrics import (
    BlockValues,
    block_columns,
    evaluate_topk,
    summarise,
    topk_blocks,
    train_overlap_mask,
)
from debiaseval.evaluation.ranking import empty_recommendations
from debiaseval.evaluation.uncertainty import (
    agreement_over_seeds,
    bootstrap_interval,
    compare_recommenders,
    seed_intervals,
)
from debiaseval.experiments import Data, input_frames, seed_ids
from debiaseval.recommenders.base import trains_by_epochs
from debiaseval.recommenders.registry import EXTERNAL, resolve_recommender
from debiaseval.recommenders.specs import check_recommender_spec
from debiaseval.recommenders.tuning import EarlyStopping, grid_chunks, merge_chunks, tune_points
from debiaseval.workflow.config import ConfigError
from debiaseval.workflow.errors import EmptyTestSetError
from debiaseval.workflow.io import atomic_path, read_parquet, write_parquet

__all__ = [
    "EVALUATE_OUTPUTS",
    "EXPORT",
    "NEEDS",
    "OUTPUTS",
    "TRUTH_DATASETS",
    "EmptyTestSetError",
    "aggregate_step",
    "check_config",
    "check_testset",
    "data_step",
    "dropped_text",
    "evaluate_on_testsets",
    "evaluate_recommenders",
    "evaluate_step",
    "external_recommenders",
    "impute_step",
    "kendall_excluded",
    "kendall_groups",
    "lists_step",
    "raw_ids",
    "run",
    "run_metadata",
    "score_seed",
    "seed_uncertainty",
    "select_step",
    "short_list_warnings",
    "split_step",
    "testset_diagnostics",
    "testset_step",
    "train_overlap_masks",
    "truth_step",
    "tune_step",
]

NEEDS: tuple[tuple[str, ...], ...] = (("mnar", "mar"),)
"""The parts E1 needs of a dataset (:mod:`debiaseval.data.catalog`): MNAR and MAR."""

OUTPUTS = (
    "summary.parquet",
    "kendall.parquet",
    "testsets.parquet",
    "comparisons.parquet",
    "summary.md",
    "kendall.md",
    "dropped.parquet",
    "dropped.md",
    "estimator_accuracy.parquet",
    "estimator_accuracy.md",
    "estimator_pairs.parquet",
    "sensitivity.parquet",
    "sensitivity.md",
)
"""E1's aggregated files in ``results/<study>/e1/<dataset>/``."""

TRUTH_DATASETS = ("synthetic",)
"""The datasets whose full rating matrix is known: E1 adds their exact ``TRUE`` row
(:func:`truth_step`), which the scoreboard then scores every other row against."""

EXPORT = {"train": "train", "val": "val"}
"""The parts of a seed's split exported in raw ids
(``results/<study>/e1/<dataset>/export/seed<s>/``): export name -> part; other frameworks
train on ``train`` and tune on ``val``."""


def check_testset(
    sample: pd.DataFrame,
    name: str,
    *,
    dataset: str,
    seed: int,
    rho: float,
    n_heldout: int,
    positive_threshold: float,
    allow_empty: bool = False,
) -> bool:
    """Whether test set ``name`` is empty: no pair, or no relevant pair (rating > threshold).

    An empty test set has no user to average over, so its metrics would vanish
    from the summary; unless ``allow_empty`` (``e1.allow_empty_testsets``),
    raise :class:`EmptyTestSetError` with one line saying why and what to change.
    """
    n_relevant = int((sample["rating"] > positive_threshold).sum()) if len(sample) else 0
    if n_relevant:
        return False
    if allow_empty:
        return True
    where = f"E1 on {dataset}, seed {seed}: test set {name}"
    if len(sample) == 0:
        why = f"has no pair: rho = {rho:g} of {n_heldout:,} held-out pairs gives 0"
    else:
        why = (
            f"has no relevant pair (rating > {positive_threshold:g}) among its {len(sample):,} "
            f"pairs (rho = {rho:g} of {n_heldout:,} held-out pairs)"
        )
    raise EmptyTestSetError(
        f"{where} {why}; raise e1.rho, or set e1.allow_empty_testsets: true to report it as empty"
    )


def short_list_warnings(train: pd.DataFrame, *, n_items: int, ks: Sequence[int]) -> list[str]:
    """One message per k that exceeds some user's number of candidate items.

    Candidates are the items a user has no training interaction with; where
    there are fewer than k, the top-k list is shorter than k and HitRate@k or
    Recall@k can reach 1 trivially (on a 6 x 6 dataset every HitRate is 1).
    """
    if n_items - _most_rows_of_a_user(train) >= max(ks, default=0):
        return []  # a user's distinct items are at most its rows: no k can exceed the candidates
    seen = _distinct_items_per_user(train)
    # Users without training pairs have every item as a candidate.
    fewest = n_items - (int(seen.max()) if seen.size else 0)
    messages = []
    for k in sorted(ks):
        if k > fewest:
            short = int((n_items - seen < k).sum()) if n_items >= k else None
            who = "every user" if short is None else f"{short:,} user(s)"
            messages.append(
                f"k = {k} exceeds the number of candidate items of {who} (as few as {fewest:,} "
                f"of {n_items:,} items): their top-{k} lists are shorter than {k}, so "
                f"metrics@{k} such as HitRate@{k} are inflated"
            )
    return messages


def _most_rows_of_a_user(pairs: pd.DataFrame) -> int:
    """The largest number of rows of one user in ``pairs``: from the lengths of the runs of
    equal users where they are sorted, as a split's parts are (no copy of the column), else
    a bincount."""
    user = pairs["user"].to_numpy()
    if user.size == 0:
        return 0
    if (user[1:] >= user[:-1]).all():
        ends = np.flatnonzero(user[1:] != user[:-1])
        bounds = np.concatenate(([-1], ends, [user.size - 1]))
        return int(np.diff(bounds).max())
    return int(np.bincount(user.astype(np.int64, copy=False)).max())


def _distinct_items_per_user(pairs: pd.DataFrame) -> np.ndarray:
    """The number of distinct items of every user with pairs in ``pairs`` (in user order), from
    the (user, item) keys: one pass where they are sorted, as a split's parts are, else a sort."""
    user = pairs["user"].to_numpy(np.int64)
    if user.size == 0:
        return np.zeros(0, dtype=np.int64)
    item = pairs["item"].to_numpy(np.int64)
    width = np.int64(item.max()) + 1
    keys = user * width + item
    if (keys[1:] < keys[:-1]).any():
        keys = np.sort(keys)
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    counts = np.bincount(keys[first] // width)
    return counts[counts > 0]


def _check_fractions(block: Mapping[str, Any]) -> None:
    for key in ("mnar_split", "mar_split"):
        parts = block[key]
        total = sum(parts.values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ConfigError(
                f"config error at 'e1.{key}': fractions {parts} sum to {total:g}, expected 1"
            )


def _check_recommenders(block: Mapping[str, Any]) -> None:
    for name, spec in block["recommenders"].items():
        check_recommender_spec(spec, f"e1.recommenders.{name}")


def _check_epochs(block: Mapping[str, Any]) -> None:
    if block["tuning"]["early_stopping"] is None:
        return
    for name, spec in block["recommenders"].items():
        if spec["algorithm"] == EXTERNAL or not trains_by_epochs(
            resolve_recommender(spec["algorithm"])
        ):
            continue
        if "epochs" in spec["params"] or "epochs" in spec["grid"]:
            raise ConfigError(
                f"config error at 'e1.recommenders.{name}': epochs are chosen by early stopping "
                "(e1.tuning.early_stopping); set its max_epochs, or set it to null to fix epochs"
            )


def _check_kendall(block: Mapping[str, Any]) -> None:
    names = ", ".join(block["recommenders"])
    for position, name in enumerate(block["kendall_exclude"] or []):
        if name not in block["recommenders"]:
            raise ConfigError(
                f"config error at 'e1.kendall_exclude.{position}': {name!r} is not a recommender "
                f"of e1.recommenders ({names})"
            )
    for group, members in (block["kendall_groups"] or {}).items():
        for position, name in enumerate(members):
            if name not in block["recommenders"]:
                raise ConfigError(
                    f"config error at 'e1.kendall_groups.{group}.{position}': {name!r} is not a "
                    f"recommender of e1.recommenders ({names})"
                )


def kendall_excluded(block: Mapping[str, Any]) -> list[str]:
    """The recommenders left out of Kendall's tau: ``kendall_exclude``, or the random ones."""
    if block["kendall_exclude"] is not None:
        return list(block["kendall_exclude"])
    return [n for n, spec in block["recommenders"].items() if spec["algorithm"] == "random"]


def kendall_groups(block: Mapping[str, Any]) -> dict[str, list[str]]:
    """The groups of Kendall's "with/without": ``kendall_groups``, or {MF: the mf recommenders}."""
    if block["kendall_groups"] is not None:
        return {group: list(members) for group, members in block["kendall_groups"].items()}
    return {"MF": [n for n, spec in block["recommenders"].items() if spec["algorithm"] == "mf"]}


def external_recommenders(block: Mapping[str, Any]) -> list[str]:
    """The recommenders whose lists are precomputed (algorithm ``external``), in config order."""
    return [n for n, spec in block["recommenders"].items() if spec["algorithm"] == EXTERNAL]


def _check_estimators(config: Mapping[str, Any]) -> None:
    from debiaseval.data.catalog import dataset_parts, missing_text

    block, sources = config["e1"], config["sources"]
    clash = [name for name in block["estimators"] if name in block["testsets"]]
    if clash:
        raise ConfigError(
            f"config error at 'e1.estimators.{clash[0]}': the name of a test set of e1.testsets"
        )
    datasets = block["datasets"] if block["datasets"] is not None else config["datasets"]
    for name, spec in block["estimators"].items():
        where = f"config error at 'e1.estimators.{name}"
        if spec["estimator"] != "dr":
            dr_only = {
                "imputation": spec.get("imputation") is not None,
                "weight_control": (spec.get("weight_control") or {}).get("method", "none")
                != "none",
                "form": spec.get("form", "one_step") != "one_step",
                "calibrate": bool(spec.get("calibrate")),
            }
            for key in (key for key, given in dr_only.items() if given):
                    raise ConfigError(
                        f"{where}.{key}': only dr has an imputation, a form and a weight "
                        f"control; {spec['estimator']} is self-normalised (bound its weights "
                        "with clip)"
                    )
        part = ESTIMATOR_NEEDS.get(spec.get("propensity", "naive_bayes"))
        for dataset in datasets or []:
            if part is not None and part not in dataset_parts(dataset, sources):
                raise ConfigError(
                    f"{where}.propensity': {spec['propensity']} propensities need "
                    f"{missing_text(dataset, [part], sources)}, which E1's dataset {dataset} "
                    "lacks"
                )


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e1`` block (after schema validation); raise ``ConfigError``."""
    block = config["e1"]
    _check_fractions(block)
    _check_recommenders(block)
    _check_epochs(block)
    _check_kendall(block)
    _check_estimators(config)


def train_overlap_masks(
    testsets: Mapping[str, pd.DataFrame], train: pd.DataFrame
) -> dict[str, np.ndarray]:
    """Per test set, the mask of its rows whose (user, item) pair also occurs in ``train``.

    Depends on the test sets and the seed's ``train`` part only: compute it once
    and pass it to :func:`evaluate_on_testsets` for every recommender.
    """
    return {name: train_overlap_mask(test, train) for name, test in testsets.items()}


def evaluate_on_testsets(
    recs: pd.DataFrame,
    testsets: Mapping[str, pd.DataFrame],
    train: pd.DataFrame | None,
    *,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    drop_train_overlap: bool,
    overlaps: Mapping[str, np.ndarray] | None = None,
    per_user: dict[str, BlockValues] | None = None,
) -> pd.DataFrame:
    """Mean top-k metrics of one recommender on every test set (docs/experiments/e1.md).

    ``n_short_lists`` counts the evaluated users whose list holds fewer than k items
    (flagged ``short_lists`` by :func:`aggregate_step`).

    Test pairs whose item the user also rated in ``train`` can never be hit
    (training items are not candidates); they are counted in ``n_train_overlap``
    and dropped only when ``drop_train_overlap`` is set. ``overlaps`` (from
    :func:`train_overlap_masks`, then ``train`` may be None) saves recomputing
    the masks for every recommender; the result is the same. ``per_user``, when given,
    receives test set -> its per-user values (:func:`evaluate_topk`'s, kept compact as
    :class:`~debiaseval.evaluation.metrics.BlockValues`), whose means are the returned values.
    """
    if overlaps is None:
        if train is None:
            raise ValueError("evaluate_on_testsets needs train or precomputed overlaps")
        overlaps = train_overlap_masks(testsets, train)
    frames = []
    for name, test in testsets.items():
        overlap = overlaps.get(name)
        if overlap is None or overlap.shape != (len(test),):
            raise ValueError(f"overlaps lacks a mask of {len(test)} rows for test set {name!r}")
        if drop_train_overlap:
            test = test[~overlap]
        values = evaluate_topk(
            recs, test, ks, n_items=n_items, positive_threshold=positive_threshold, metrics=metrics
        )
        if per_user is not None:
            per_user[name] = BlockValues.of(values, topk_blocks(metrics, ks))
        summary = summarise(values)
        summary.insert(0, "testset", name)
        summary["n_test_pairs"] = np.int64(len(test))
        summary["n_train_overlap"] = np.int64(overlap.sum())
        short = values.assign(short=short_list_counts(recs, values))
        counts = short.groupby(["metric", "k"], sort=False, observed=True)["short"].sum()
        summary["n_short_lists"] = counts.to_numpy().astype(np.int64)
        frames.append(summary)
    return pd.concat(frames, ignore_index=True)


def evaluate_recommenders(
    recs: Mapping[str, pd.DataFrame],
    testsets: Mapping[str, pd.DataFrame],
    train: pd.DataFrame,
    *,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    drop_train_overlap: bool,
    per_user: dict[str, dict[str, BlockValues]] | None = None,
) -> pd.DataFrame:
    """:func:`evaluate_on_testsets` of several recommenders in one pass (one job per seed).

    ``recs`` maps recommender names to their top-k lists. The train-overlap
    masks are computed once. Returns the per-recommender tables stacked in
    ``recs`` order, with a leading ``recommender`` column. ``per_user``, when
    given, receives recommender -> test set -> per-user values.
    """
    overlaps = train_overlap_masks(testsets, train)
    tables = []
    for name, lists in recs.items():
        table = evaluate_on_testsets(
            lists,
            testsets,
            None,
            n_items=n_items,
            ks=ks,
            metrics=metrics,
            positive_threshold=positive_threshold,
            drop_train_overlap=drop_train_overlap,
            overlaps=overlaps,
            per_user=None if per_user is None else per_user.setdefault(name, {}),
        )
        table.insert(0, "recommender", name)
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def testset_diagnostics(
    name: str,
    sample: pd.DataFrame,
    space: pd.DataFrame,
    weights: np.ndarray,
    gt: pd.DataFrame,
    *,
    n_users: int,
    n_items: int,
) -> pd.DataFrame:
    """How MAR-like one intervened test set is: a one-row frame.

    Columns: ``testset``; ``n_pairs``, ``n_users``, ``n_items`` of the sample;
    ``zero_weight_share``, the share of the sampled space's (held-out) pairs
    whose sampling weight is 0 (WTD gives weight 0 to users and items absent
    from the MAR weights part: such pairs are drawn only once every
    positive-weight pair is taken); ``kl_users`` and ``kl_items``, the KL
    divergence of the sample's user and item marginals from those of the MAR
    ``gt`` part (:func:`~debiaseval.debiasing.interventions.marginal_kl`, Laplace-smoothed).
    """
    return pd.DataFrame(
        {
            "testset": [name],
            "n_pairs": np.int64(len(sample)),
            "n_users": np.int64(sample["user"].nunique()),
            "n_items": np.int64(sample["item"].nunique()),
            "zero_weight_share": float(np.mean(np.asarray(weights) == 0)) if len(space) else 0.0,
            "kl_users": marginal_kl(sample["user"], gt["user"], n_users),
            "kl_items": marginal_kl(sample["item"], gt["item"], n_items),
        }
    )


def run_metadata(interactions: pd.DataFrame, block: Mapping[str, Any]) -> list[str]:
    """Lines describing an E1 run for the summary: data sizes and the settings that shape it."""
    parts = interactions["part"].value_counts()
    testsets = ", ".join(f"{n} ({s['strategy']})" for n, s in block["testsets"].items())
    excluded = kendall_excluded(block)
    external = external_recommenders(block)
    trained = [name for name in block["recommenders"] if name not in external]
    lists = f"; precomputed lists: {', '.join(external)}" if external else ""
    return [
        f"Data: {interactions['user'].nunique():,} users, {interactions['item'].nunique():,} "
        f"items; {int(parts.get('mnar', 0)):,} MNAR and {int(parts.get('mar', 0)):,} MAR ratings.",
        f"Splits: MNAR {block['mnar_split']}, MAR {block['mar_split']}; rho = {block['rho']}; "
        f"{block['seeds']} seed(s); positive = rating > {block['positive_threshold']}.",
        f"Test sets: gt (MAR ground truth), {testsets}.",
        f"Recommenders: {', '.join(trained) or 'none'}, tuned for "
        f"{block['tuning']['metric']}@{block['tuning']['k']} on MAR val (selected points in "
        f"seed*/tuning/){lists}. Kendall's tau leaves out: "
        f"{', '.join(excluded) if excluded else 'none'}.",
    ]


# -- the workflow's steps, one function per rule; run() chains them in-process ------------------


def data_step(
    interactions: pd.DataFrame,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    *,
    common_users_items: bool,
    dataset: str,
) -> Filtered:
    """Rule ``e1_data``: the dataset as E1's protocol takes it, re-indexed, and what it drops.

    With ``common_users_items`` (``e1.common_users_items``, [SAC20]) only the users
    and items present in both the MNAR and the MAR part are kept
    (:func:`~debiaseval.data.filters.common_users_items`); else every rating. The
    result's ``dropped`` is the filter's report, one row per part (docs/experiments/e1.md).
    """
    where = f"E1 on {dataset}"
    if common_users_items:
        return _common_users_items(interactions, users, items, where=where)
    keep = np.ones(len(interactions), dtype=bool)
    return apply_filter(interactions, keep, name="none", users=users, items=items, where=where)


def dropped_text(dropped: pd.DataFrame, dataset: str) -> str:
    """``dropped.md``: what E1's filters dropped from ``dataset``, per part, with warnings."""
    return dropped_markdown(dropped, f"E1 on {dataset}: ratings dropped by E1's protocol")


def split_step(
    interactions: pd.DataFrame,
    *,
    mnar_split: Mapping[str, float],
    mar_split: Mapping[str, float],
    dataset: str,
    seed: int,
) -> pd.DataFrame:
    """Rule ``e1_split``: the seed's train/heldout and weights/val/gt parts ([SAC20] §5.2)."""
    return split_e1(
        interactions,
        mnar_split=mnar_split,
        mar_split=mar_split,
        rng=run_rng(seed, dataset, "split"),
    )


def lists_step(
    lists: pd.DataFrame,
    split: pd.DataFrame,
    *,
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    n_users: int,
    n_items: int,
    ids: str,
    on_train_items: str,
    ks: Sequence[int],
    source: str,
    where: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Rule ``e1_external``: precomputed lists of one seed as a model's top-max(ks) lists.

    Checked against the seed's ``train`` part
    (:func:`~debiaseval.evaluation.external_lists.prepare_lists`: unknown ids, duplicated
    pairs, training items, rank vs score) and cut at max(ks), in the format of
    ``e1_select``'s lists. Returns them and the warnings (dropped training items, lists
    shorter than max(ks)).
    """
    train = split[split["part"] == "train"]
    depth = max(ks)
    recs, notes = prepare_lists(
        lists,
        train=train,
        n_users=n_users,
        n_items=n_items,
        users=users,
        items=items,
        ids=ids,
        on_train_items=on_train_items,
        depth=depth,
        source=source,
        where=where,
    )
    short = short_lists_warning(
        recs, train, n_users=n_users, n_items=n_items, k=depth, source=source
    )
    return recs, notes + ([short] if short else [])


def testset_step(
    split: pd.DataFrame,
    name: str,
    spec: Mapping[str, Any],
    *,
    rho: float,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    allow_empty: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_intervene``: test set ``name`` drawn from ``heldout``, and its diagnostics.

    Raises :class:`EmptyTestSetError` when the test set has no (relevant) pair,
    unless ``allow_empty`` (see :func:`check_testset`).
    """
    space = split[split["part"] == "heldout"].reset_index(drop=True)
    testset = TestSetSpec(name=name, **spec)
    sizes = {"n_users": n_users, "n_items": n_items}
    weights = sampling_weights(
        space,
        testset,
        train=split[split["part"] == "train"],
        mar_weights=split[split["part"] == "weights"],
        **sizes,
    )
    rng = run_rng(seed, dataset, "intervene", name)
    sample = intervene(space, testset, rho=rho, rng=rng, weights=weights, **sizes)
    check_testset(
        sample,
        name,
        dataset=dataset,
        seed=seed,
        rho=rho,
        n_heldout=len(space),
        positive_threshold=positive_threshold,
        allow_empty=allow_empty,
    )
    diagnostics = testset_diagnostics(
        name, sample, space, weights, split[split["part"] == "gt"], **sizes
    )
    diagnostics.insert(0, "seed", seed)
    return sample, diagnostics


def tune_step(
    split: pd.DataFrame,
    recommender: str,
    spec: Mapping[str, Any],
    *,
    chunk: int,
    tuning: Mapping[str, Any],
    ks: Sequence[int],
    positive_threshold: float,
    batch_size: int,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_train``: chunk ``chunk`` of a recommender's grid tuned on MAR ``val``.

    Returns its tuning rows and the top-max(ks) lists of its best usable point
    (no rows when none is usable).
    """
    stopping = tuning["early_stopping"]
    table, recs = tune_points(
        rating_matrix(split[split["part"] == "train"], n_users, n_items),
        split[split["part"] == "val"],
        grid_chunks(spec["grid"], tuning["points_per_job"])[chunk],
        algorithm=spec["algorithm"],
        params=spec["params"],
        metric=tuning["metric"],
        k=tuning["k"],
        depth=max(ks),
        positive_threshold=positive_threshold,
        batch_size=batch_size,
        seed=int(run_rng(seed, dataset, "train", recommender).integers(2**31 - 1)),
        early_stopping=None if stopping is None else EarlyStopping(**stopping),
    )
    return table, empty_recommendations() if recs is None else recs


def select_step(
    tuning_files: Sequence[str | os.PathLike[str]],
    recs_files: Sequence[str | os.PathLike[str]],
    *,
    tuning_out: str | os.PathLike[str],
    recs_out: str | os.PathLike[str],
    what: str = "the grid",
) -> pd.DataFrame:
    """Rules ``e1_select`` and ``e1_tune``: merge a recommender's tuning chunks (the files
    :func:`tune_step`'s rows were written to, in grid order), mark the selected point
    (:func:`~debiaseval.recommenders.tuning.merge_chunks`) and write the table to
    ``tuning_out``; copy the lists of the chunk that holds the point to ``recs_out``, byte
    for byte. Returns the table. ``what`` names the grid in the error when no point is usable.
    """
    table, chunk = merge_chunks([read_parquet(path) for path in tuning_files], what)
    write_parquet(table, tuning_out)
    with atomic_path(recs_out) as tmp:
        shutil.copyfile(recs_files[chunk], tmp)
    return table


def impute_step(
    split: pd.DataFrame,
    spec: Mapping[str, Any],
    *,
    seed: int,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
) -> pd.DataFrame:
    """Rule ``e1_impute``: the model imputation of one dr estimator of the seed, fitted on the
    training part (:func:`~debiaseval.estimation.arena.fit_imputation`), as a frame
    (:meth:`~debiaseval.estimation.imputation.LogisticMF.to_frame`) that ``e1_evaluate`` reads
    back."""
    model = fit_imputation(split, spec, seed=seed, n_users=n_users, n_items=n_items,
                           positive_threshold=positive_threshold, features=features,
                           truth=truth)  # fmt: skip
    return imputation_frame(model)


def evaluate_step(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    testsets: Mapping[str, pd.DataFrame],
    *,
    seed: int,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    drop_train_overlap: bool,
    resamples: int = 0,
    level: float = 0.95,
    estimators: Mapping[str, Mapping[str, Any]] | None = None,
    n_users: int | None = None,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
    truth_per_user: pd.DataFrame | None = None,
    imputations: Mapping[str, Imputation] | None = None,
    gammas: Sequence[float] = (),
    excluded: Sequence[str] = (),
) -> dict[str, pd.DataFrame]:
    """Rule ``e1_evaluate``: every recommender of the seed on gt and on every test set.

    Warns (:func:`short_list_warnings`) when a k exceeds some user's candidate items.
    Returns, by file stem: ``metrics`` (the means over users, with their bootstrap
    interval ``boot_low``/``boot_high`` of ``resamples`` resamples at ``level``),
    ``metrics_per_user`` (the values they average) and ``comparisons`` (paired tests
    between the recommenders): see :func:`seed_uncertainty`. Each of ``estimators``
    (``e1.estimators``; as its propensity model needs them, ``features`` or the ``truth``
    propensities; ``imputations``: the model imputations ``e1_impute`` fitted) adds rows
    named after it for the metrics it estimates
    (:func:`~debiaseval.estimation.arena.evaluate_estimators`), ``estimators_diagnostics``,
    the SNIPS bounds at each of ``gammas`` (``sensitivity``) and each pair's Γ* in
    ``comparisons`` (``gamma_star``). ``arena``: every row's and its truth's means over the
    same users (:func:`~debiaseval.estimation.scoreboard.common_means`; the truth is
    ``truth_per_user``, TRUE's per-user values on synthetic, else gt); ``reliability``: gt's
    split-half reliability (real data; ``excluded`` recommenders left out).
    """
    train = split[split["part"] == "train"]
    n_users = int(split["user"].max()) + 1 if n_users is None else n_users
    for message in short_list_warnings(train, n_items=n_items, ks=ks):
        warnings.warn(f"seed {seed}: {message}", stacklevel=2)
    per_user: dict[str, dict[str, BlockValues]] = {}
    table = evaluate_recommenders(
        recs,
        {"gt": split[split["part"] == "gt"], **testsets},
        train,
        n_items=n_items,
        ks=ks,
        metrics=metrics,
        positive_threshold=positive_threshold,
        drop_train_overlap=drop_train_overlap,
        per_user=per_user,
    )
    table.insert(1, "seed", seed)
    out = seed_uncertainty(table, per_user, seed=seed, resamples=resamples, level=level)
    out["comparisons"]["gamma_star"] = np.nan
    gains = [metric for metric in metrics if metric in GAINS]
    groups = [per_user]
    out["estimators_diagnostics"] = pd.DataFrame(columns=DIAGNOSTICS_COLUMNS)
    out["sensitivity"] = pd.DataFrame(columns=["recommender", "seed", *SENSITIVITY_COLUMNS[1:]])
    parts = SplitParts(split, train=train)  # the training part selected above, not again
    if estimators and gains:
        est = evaluate_estimators(
            split, recs, estimators, seed=seed, n_users=n_users, n_items=n_items, ks=ks,
            metrics=gains, positive_threshold=positive_threshold, features=features,
            truth=truth, parts=parts, imputations=imputations, gammas=gammas,
        )  # fmt: skip
        extra = seed_uncertainty(est.table, est.per_user, seed=seed, resamples=resamples,
                                 level=level)  # fmt: skip
        star = np.full(len(extra["comparisons"]), np.nan)
        for name, values in est.gamma_stars.items():  # in the comparisons' order of pairs
            star[np.flatnonzero(extra["comparisons"]["testset"].to_numpy() == name)] = values
        extra["comparisons"]["gamma_star"] = star
        for stem in ("metrics", "comparisons"):
            out[stem] = pd.concat([out[stem], extra[stem]], ignore_index=True)
        out["estimators_diagnostics"], out["sensitivity"] = est.diagnostics, est.sensitivity
        groups.append(est.per_user)
    out.update(score_seed(groups, parts, truth_per_user, seed=seed, n_users=n_users,
                          positive_threshold=positive_threshold, excluded=excluded))  # fmt: skip
    # one table of the test sets' and the estimators' per-user values (not two, then a copy)
    out["metrics_per_user"] = _per_user_table(groups, seed=seed)
    return {stem: out[stem] for stem in EVALUATE_OUTPUTS}


EVALUATE_OUTPUTS = (
    "metrics", "metrics_per_user", "comparisons", "estimators_diagnostics", "sensitivity",
    "arena", "reliability",
)  # fmt: skip
"""The tables of :func:`evaluate_step`, by file stem (``estimators_diagnostics`` is written as
``estimators.diagnostics.parquet``)."""


def score_seed(
    groups: Sequence[Mapping[str, Mapping[str, BlockValues]]],
    parts: SplitParts,
    truth_per_user: pd.DataFrame | None,
    *,
    seed: int,
    n_users: int,
    positive_threshold: float,
    excluded: Sequence[str],
) -> dict[str, pd.DataFrame]:
    """The scoreboard's inputs of one seed: ``arena`` (every row's and the truth's means over
    the same users) and ``reliability`` (gt's split-half reliability, when gt is the truth)."""
    rows: dict[str, dict[str, BlockValues]] = {}
    for group in groups:
        for rec, by_row in group.items():
            rows.setdefault(rec, {}).update(by_row)
    held = parts.heldout
    positive = held["rating"].to_numpy() > positive_threshold
    heldout_users = np.unique(held["user"].to_numpy()[positive])
    if truth_per_user is not None:
        truth_name = TRUE
        truth = {
            rec: BlockValues.of(frame, list(dict.fromkeys(zip(frame["metric"], frame["k"],
                                                              strict=True))))
            for rec, frame in truth_per_user.groupby("recommender", sort=False)
        }  # fmt: skip
    else:
        truth_name = GROUND_TRUTH
        truth = {rec: by_row[GROUND_TRUTH] for rec, by_row in rows.items()}
    arena = common_means(rows, truth, seed=seed, heldout_users=heldout_users, n_users=n_users,
                         truth_name=truth_name)  # fmt: skip
    reliability = pd.DataFrame(columns=RELIABILITY_COLUMNS)
    if truth_name == GROUND_TRUTH:
        reliability = split_half_reliability(truth, excluded, seed=seed,
                                             rng=run_rng(seed, "reliability"))  # fmt: skip
    return {"arena": arena, "reliability": reliability}


def raw_ids(table: pd.DataFrame, kind: str) -> np.ndarray:
    """The raw ids (column ``raw_<kind>``) of E1's id table ``table`` of ``kind`` (user, item),
    in E1's id order: on ``synthetic``, the generator's row and column of every id."""
    return table.sort_values(kind)[f"raw_{kind}"].to_numpy(np.int64)


def truth_step(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    *,
    synthetic: Mapping[str, Any],
    raw_users: np.ndarray,
    raw_items: np.ndarray,
    seed: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_truth``: the seed's ``TRUE`` rows on ``synthetic`` (docs/estimators.md).

    Every recommender's exact metrics over all its candidates (every item but the
    seed's ``train`` items) from the full rating matrix of the config's ``synthetic``
    block (:func:`~debiaseval.evaluation.full_truth.true_topk`); ``raw_users`` and
    ``raw_items`` (E1's id tables) map E1's ids to the generator's. Returns the rows of
    ``metrics.parquet``'s layout, with NaN bootstrap bounds, and the per-user values of the
    metrics the arena scores (recommender, user, metric, k, value: ``truth_per_user``, which
    ``e1_evaluate`` scores every row against).
    """
    from debiaseval.data.synthetic import full_rating_rows

    train = split[split["part"] == "train"]
    per_user, n_relevant = true_topk(
        recs,
        train,
        full_rating_rows(**synthetic),
        n_users=len(raw_users),
        n_items=len(raw_items),
        ks=list(dict.fromkeys(ks)),
        metrics=metrics,
        positive_threshold=positive_threshold,
        raw_users=raw_users,
        raw_items=raw_items,
    )
    table = true_topk_table(recs, per_user, testset=TRUE, seed=seed, n_relevant=n_relevant)
    values = [frame[frame["metric"].isin(GAINS)].assign(recommender=name)
              for name, frame in per_user.items()]  # fmt: skip
    columns = ["recommender", "user", "metric", "k", "value"]
    if not values:
        return table, pd.DataFrame(columns=columns)
    return table, pd.concat(values, ignore_index=True)[columns]


def seed_uncertainty(
    metrics: pd.DataFrame,
    per_user: Mapping[str, Mapping[str, BlockValues]],
    *,
    seed: int,
    resamples: int,
    level: float,
) -> dict[str, pd.DataFrame]:
    """Bootstrap intervals and paired tests of one seed (docs/experiments/e1.md).

    ``metrics``: :func:`evaluate_recommenders`' table (with ``seed``); ``per_user``:
    recommender -> test set -> per-user values (:class:`BlockValues`), every recommender over
    the same users of a test set (its users with a relevant pair) and in the same (metric, k)
    blocks. Adds to ``metrics`` the percentile
    bootstrap interval over users (:func:`bootstrap_interval`, ``resamples`` resamples
    drawn from ``run_rng(seed, "bootstrap")``: one Poisson count per user and resample,
    shared by every test set, recommender, metric and k; NaN when ``resamples`` is 0).
    ``comparisons``: per test set, metric and k, the paired t-test of every two recommenders
    over their users, Holm's correction over the pairs (:func:`compare_recommenders`). The
    per-user table is :func:`_per_user_table`'s.
    """
    names = list(per_user)
    testsets = list(per_user[names[0]]) if names else []
    blocks = per_user[names[0]][testsets[0]].blocks if testsets else ()
    n_blocks = len(blocks)
    tables = []
    for testset in testsets:
        parts = [per_user[name][testset] for name in names]
        if any(part.blocks != blocks for part in parts):
            raise ValueError(f"{testset}: the recommenders' values are not in the same blocks")
        tables.append((parts[0].users, np.stack([part.values for part in parts])))
    low, high = _bootstrap_bounds(tables, resamples, run_rng(seed, "bootstrap"), level)
    keys = ["recommender", "testset", "metric", "k"]
    bounds = pd.DataFrame(
        {
            "testset": np.repeat(testsets, len(names) * n_blocks),
            "recommender": np.tile(np.repeat(names, n_blocks), len(testsets)),
            "metric": np.tile([m for m, _ in blocks], len(testsets) * len(names)),
            "k": np.tile([k for _, k in blocks], len(testsets) * len(names)),
            "boot_low": low,
            "boot_high": high,
        }
    ).astype({"k": metrics["k"].dtype} if len(metrics) else {})
    metrics = metrics.merge(bounds, on=keys, how="left")
    return {
        "metrics": metrics,
        "comparisons": _comparisons(tables, testsets, names, blocks, seed=seed),
    }


def _per_user_table(
    groups: Sequence[Mapping[str, Mapping[str, BlockValues]]], *, seed: int
) -> pd.DataFrame:
    """``metrics_per_user``: the per-user values (:class:`BlockValues`) of every group (a
    recommender -> test set -> values mapping: the test sets', then the estimators'), within
    it every recommender and within that test set, stacked after their recommender, seed and
    test set: recommender, seed, testset, user, metric, k, value.

    ``recommender`` and ``testset`` are categoricals (categories in first-seen order over the
    groups): one byte a row where strings took about 15, in memory and while the table is
    built (docs/experiments/e1.md, Outputs). Each column is allocated once, in one pass
    (:func:`~debiaseval.evaluation.metrics.block_columns`), and the frame takes them without a
    copy: no frame per part, no second table to concatenate, no column inserted afterwards."""
    names: dict[str, int] = {}
    testsets: dict[str, int] = {}
    parts, rec_codes, testset_codes = [], [], []
    for group in groups:
        group_testsets = list(next(iter(group.values()), {}))
        for name, by_testset in group.items():
            for testset in group_testsets:
                parts.append(by_testset[testset])
                rec_codes.append(names.setdefault(name, len(names)))
                testset_codes.append(testsets.setdefault(testset, len(testsets)))
    if not parts:
        columns = ["recommender", "seed", "testset", "user", "metric", "k", "value"]
        return pd.DataFrame(columns=columns)
    sizes = [len(part) for part in parts]

    def labels(codes: Sequence[int], categories: Sequence[str]) -> pd.Categorical:
        # codes repeated in the smallest type that holds them (from_codes keeps int8 codes)
        small = np.asarray(codes, dtype=np.min_scalar_type(-len(categories)))
        return pd.Categorical.from_codes(
            np.repeat(small, sizes), categories=pd.Index(list(categories), dtype=str)
        )

    # every column allocated once, taken as it is (no copy by the frame, no insert)
    columns = {
        "recommender": labels(rec_codes, names),
        "seed": np.full(sum(sizes), seed),
        "testset": labels(testset_codes, testsets),
        **block_columns(parts),
    }
    return pd.DataFrame(columns, copy=False)


def _comparisons(
    tables: Sequence[tuple[np.ndarray, np.ndarray]],
    testsets: Sequence[str],
    names: Sequence[str],
    blocks: Sequence[tuple[str, int]],
    *,
    seed: int,
) -> pd.DataFrame:
    """``comparisons``: per test set (its values in ``tables``: recommenders × blocks × users)
    and block, the paired t-tests of every two recommenders, Holm within the block
    (:func:`compare_recommenders`, all blocks of a test set in one call)."""
    if not tables or not blocks:
        return pd.DataFrame()
    out = pd.concat(
        [compare_recommenders(np.moveaxis(values, 0, -1), list(names)) for _, values in tables],
        ignore_index=True,
    )
    pairs = len(names) * (len(names) - 1) // 2
    rows = len(blocks) * pairs  # per test set
    out.insert(0, "seed", np.full(len(out), seed))
    out.insert(1, "testset", pd.Series(np.repeat(testsets, rows), dtype=str))
    metric = np.repeat([m for m, _ in blocks], pairs)
    out.insert(2, "metric", pd.Series(np.tile(metric, len(testsets)), dtype=str))
    k = np.repeat([k for _, k in blocks], pairs)
    out.insert(3, "k", np.tile(k, len(testsets)).astype(np.int16))
    return out


def _bootstrap_bounds(
    tables: Sequence[tuple[np.ndarray, np.ndarray]],
    resamples: int,
    rng: np.random.Generator,
    level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap bounds of every (test set, recommender, block) from ``tables``: per test set
    its users and its values (recommenders × blocks × users). The test sets' columns are laid
    side by side over the union of their users (NaN where a user is not in the test set), so
    one draw of counts per user serves them all (:func:`bootstrap_interval`)."""
    width = sum(values.shape[0] * values.shape[1] for _, values in tables)
    if not resamples or not width:
        return np.full(width, np.nan), np.full(width, np.nan)
    users = np.unique(np.concatenate([u for u, _ in tables]))
    wide = np.full((users.size, width), np.nan, dtype=np.float32)
    column = 0
    for testset_users, values in tables:
        rows = np.searchsorted(users, testset_users)
        cells = values.shape[0] * values.shape[1]
        wide[rows, column : column + cells] = values.reshape(cells, -1).T
        column += cells
    return bootstrap_interval(wide, resamples=resamples, rng=rng, level=level)


def aggregate_step(
    metrics: Sequence[pd.DataFrame],
    diagnostics: Sequence[pd.DataFrame],
    interactions: pd.DataFrame,
    block: Mapping[str, Any],
    *,
    dataset: str,
    min_users: int = MIN_USERS,
    comparisons: Sequence[pd.DataFrame] = (),
    truth: Sequence[pd.DataFrame] = (),
    arena: Sequence[pd.DataFrame] = (),
    reliability: Sequence[pd.DataFrame] = (),
    sensitivity: Sequence[pd.DataFrame] = (),
    estimator_diagnostics: Sequence[pd.DataFrame] = (),
) -> dict[str, Any]:
    """Rule ``e1_aggregate``: the tables of ``OUTPUTS`` (Markdown ones as text, by file stem).

    ``truth``: the seeds' ``TRUE`` rows (:func:`truth_step`, ``synthetic`` only), one more
    row of the test-set column. The scoreboard (``estimator_accuracy``, its paired
    comparisons ``estimator_pairs``) scores every other row against the truth, ``TRUE``
    where given, else gt, from the seeds' common-user means (``arena``) and gt's split-half
    reliability (``reliability``) (:func:`~debiaseval.estimation.scoreboard.scoreboard`;
    Kendall's tau leaves out :func:`kendall_excluded`). ``sensitivity``: the seeds' SNIPS
    bounds, averaged over seeds; ``estimator_diagnostics``: the seeds' diagnostics, whose
    Pareto k̂ flags a row (``heavy_tail``).

    The summary gains the t interval over seeds (``ci_low``, ``ci_high``) and the mean
    per-seed bootstrap bounds (``boot_low``, ``boot_high``) at ``e1.confidence``, and
    ``flags`` (:func:`~debiaseval.evaluation.aggregate.summary_flags`) that mark means over
    short lists or over fewer than ``min_users`` users (config ``min_users``), values or
    intervals outside the metric's range and heavy-tailed weights; ``comparisons`` (the seeds'
    paired tests) become how many seeds agree (:func:`agreement_over_seeds`, significant at
    1 - ``e1.confidence``) with the median Γ* of SNIPS rows
    (:func:`~debiaseval.estimation.sensitivity.gamma_star_over_seeds`).
    """
    per_seed = pd.concat([*metrics, *truth]).reset_index(drop=True)
    keys = ["recommender", "testset", "metric", "k"]
    level = block["confidence"]
    summary = summary_table(per_seed).merge(
        seed_intervals(per_seed, keys, level=level), on=keys, how="left"
    )
    heavy = heavy_tailed(_concat(estimator_diagnostics, DIAGNOSTICS_COLUMNS))
    summary = summary_flags(summary, per_seed, min_users=min_users, heavy_tail=heavy)
    tests = [frame for frame in comparisons if len(frame)]
    agreement = pd.DataFrame(columns=COMPARISONS_COLUMNS)
    if tests:
        seeds = pd.concat(tests, ignore_index=True)
        agreement = agreement_over_seeds(seeds, ["testset", "metric", "k"], alpha=1 - level)
        agreement["gamma_star"] = gamma_star_over_seeds(seeds, agreement)
    kendall = kendall_table(summary, kendall_groups(block), kendall_excluded(block))
    checks = testsets_table(pd.concat(diagnostics))
    about = run_metadata(interactions, block)
    names = [GROUND_TRUTH, *block["testsets"]]
    board = score_board(per_seed, _concat(arena, SCORED_COLUMNS), block, dataset=dataset,
                        reliability=_concat(reliability, RELIABILITY_COLUMNS))  # fmt: skip
    bounds = sensitivity_over_seeds(_concat(sensitivity, ["seed", *SENSITIVITY_COLUMNS]), summary)
    return {
        "summary": summary,
        "kendall": kendall,
        "testsets": checks,
        "summary_md": summary_markdown(
            summary, dataset, diagnostics=checks, about=about, testsets=names
        ),
        "kendall_md": kendall_markdown(kendall, dataset, names[1:]),
        "comparisons": agreement,
        **board,
        "sensitivity": bounds,
        "sensitivity_md": sensitivity_markdown(bounds, agreement, dataset),
    }


COMPARISONS_COLUMNS = [
    "testset", "metric", "k", "recommender_a", "recommender_b",
    "n_seeds", "mean_diff", "n_a_better", "n_b_better", "max_p_holm", "gamma_star",
]  # fmt: skip
"""Columns of ``comparisons.parquet``: per test set, metric, k and two recommenders, how many
seeds find a (Holm-adjusted) significant difference each way, and, for a SNIPS row, the median
over seeds of Γ*, the factor by which its propensities must be wrong before the difference's
sign can flip."""


def _concat(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    parts = [frame for frame in frames if len(frame)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(columns))


def row_families(block: Mapping[str, Any]) -> dict[str, str]:
    """Every row of E1's test-set column and its family, in the column's order."""
    return {
        GROUND_TRUTH: "MAR sample",
        **dict.fromkeys(block["testsets"], "resampling"),
        **dict.fromkeys(block["estimators"], "weighting"),
    }


def score_board(
    per_seed: pd.DataFrame,
    arena: pd.DataFrame,
    block: Mapping[str, Any],
    *,
    dataset: str,
    reliability: pd.DataFrame,
) -> dict[str, Any]:
    """``estimator_accuracy`` (the scoreboard), ``estimator_pairs`` and the Markdown, from the
    seeds' metrics and common-user means (``arena``), with ``e1.scoreboard.resamples`` seed
    resamples drawn from the dataset's own stream."""
    truth = truth_of(per_seed["testset"])
    options = {
        "excluded": kendall_excluded(block), "level": block["confidence"],
        "resamples": block["scoreboard"]["resamples"],
    }  # fmt: skip
    board, pairs = scoreboard(
        arena, per_seed, truth=truth, families=row_families(block), reliability=reliability,
        rng=run_rng(0, dataset, "scoreboard"), **options,
    )  # fmt: skip
    separation = truth_separation(per_seed, truth=truth, rng=run_rng(0, dataset, "separation"),
                                  **options)  # fmt: skip
    return {
        "estimator_accuracy": board,
        "estimator_pairs": pairs,
        "estimator_accuracy_md": scoreboard_markdown(board, pairs, dataset, separation),
    }


def run(
    data: Data,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
    lists: Mapping[str, Mapping[int, pd.DataFrame]] | None = None,
) -> dict[str, Any]:
    """Run E1 in-process: the workflow's tables for the same config and seeds.

    ``data``: a dataset name (loaded like the workflow does, see
    :func:`debiaseval.api.load_dataset`) or a canonical interactions frame
    (``user``, ``item``, ``rating``, ``part`` ∈ mnar/mar; contiguous 0-based ids),
    named ``dataset`` (default "data"; the name seeds the random streams, so use
    the workflow's name to reproduce its files byte for byte). ``config``: a
    partial workflow config, validated with defaults; ``seeds``: a count or
    explicit seed ids (default: the ``e1`` block's). Recommenders whose algorithm is
    ``external`` are read from their ``recs`` files, or from ``lists`` (name -> seed ->
    lists frame, as :func:`debiaseval.api.evaluate_lists` gives them), checked as the
    workflow checks them; their warnings are Python warnings. Returns ``summary``,
    ``kendall``, ``testsets``, ``comparisons``, ``estimator_accuracy``, ``estimator_pairs``,
    ``sensitivity``, ``dropped`` (as written to ``results/<study>/e1/<dataset>/``), the
    Markdown texts ``summary_md``, ``kendall_md``, ``estimator_accuracy_md``,
    ``sensitivity_md`` and ``dropped_md``, and per-seed ``metrics``, ``arena``,
    ``reliability``, ``estimators_diagnostics`` and ``tuning`` (with ``seed`` and
    ``recommender`` columns); ``data="synthetic"`` adds the exact
    ``TRUE`` row (:func:`truth_step`) to the per-seed ``metrics`` and the tables. The data is
    first taken as E1's protocol takes it (:func:`data_step`); a filter that drops more
    than half of a part is a Python warning.
    """
    from debiaseval.workflow.config import validate_config

    given = dict(config or {})
    if isinstance(data, str):  # the estimators' needs are checked against the dataset run
        given = {**given, "datasets": [data], "e1": {**given.get("e1", {}), "datasets": None}}
    full = validate_config(given, "e1")
    block = full["e1"]
    frames = input_frames(data, config, dataset, experiment="e1")
    dataset = frames.dataset
    kept = data_step(
        frames.interactions,
        frames.users,
        frames.items,
        common_users_items=block["common_users_items"],
        dataset=dataset,
    )
    for line in dropped_warnings(kept.dropped):
        warnings.warn(f"E1 on {dataset}: {line}", stacklevel=2)
    frames = frames._replace(interactions=kept.interactions, users=kept.users, items=kept.items)
    interactions, n_users, n_items = frames.interactions, frames.n_users, frames.n_items
    threshold = positive_threshold_of(dataset, block["positive_threshold"], full["sources"])
    block = {**block, "positive_threshold": threshold}
    sizes = {"dataset": dataset, "n_users": n_users, "n_items": n_items}
    evaluated, diagnostics, tunings, truth = [], [], [], []
    exact = isinstance(data, str) and dataset in TRUTH_DATASETS and block["truth"]
    run_seeds = seed_ids(seeds, block["seeds"])
    for seed in run_seeds:
        split = split_step(
            interactions,
            mnar_split=block["mnar_split"],
            mar_split=block["mar_split"],
            dataset=dataset,
            seed=seed,
        )
        testsets = {}
        for name, spec in block["testsets"].items():
            testsets[name], checks = testset_step(
                split,
                name,
                spec,
                rho=block["rho"],
                seed=seed,
                positive_threshold=block["positive_threshold"],
                allow_empty=block["allow_empty_testsets"],
                **sizes,
            )
            diagnostics.append(checks)
        recs = {}
        for name, spec in block["recommenders"].items():
            if spec["algorithm"] == EXTERNAL:
                where = f"e1.recommenders.{name}"
                frame, source, where = lists_of_seed(
                    spec, name=name, where=where, dataset=dataset, seed=seed, lists=lists
                )
                recs[name], notes = lists_step(
                    frame,
                    split,
                    users=frames.users,
                    items=frames.items,
                    n_users=n_users,
                    n_items=n_items,
                    ids=spec["ids"],
                    on_train_items=spec["on_train_items"],
                    ks=block["ks"],
                    source=source,
                    where=where,
                )
                for note in notes:
                    warnings.warn(note, stacklevel=2)
                continue
            chunks = [
                tune_step(
                    split,
                    name,
                    spec,
                    chunk=chunk,
                    tuning=block["tuning"],
                    ks=block["ks"],
                    positive_threshold=block["positive_threshold"],
                    batch_size=block["batch_size"],
                    seed=seed,
                    **sizes,
                )
                for chunk in range(
                    len(grid_chunks(spec["grid"], block["tuning"]["points_per_job"]))
                )
            ]
            what = f"the grid of {name} on {dataset}, seed {seed}"
            table, best = merge_chunks([t for t, _ in chunks], what)
            recs[name] = chunks[best][1]
            tunings.append(table.assign(seed=seed, recommender=name))
        true_values = None
        if exact:
            table, true_values = truth_step(
                split,
                recs,
                synthetic=full["synthetic"],
                raw_users=raw_ids(frames.users, "user"),
                raw_items=raw_ids(frames.items, "item"),
                seed=seed,
                ks=block["ks"],
                metrics=block["metrics"],
                positive_threshold=block["positive_threshold"],
            )
            truth.append(table)
        evaluated.append(
            evaluate_step(
                split,
                recs,
                testsets,
                seed=seed,
                n_items=n_items,
                ks=block["ks"],
                metrics=block["metrics"],
                positive_threshold=block["positive_threshold"],
                drop_train_overlap=block["drop_train_overlap"],
                resamples=block["bootstrap"]["resamples"],
                level=block["confidence"],
                estimators=block["estimators"],
                n_users=n_users,
                features=estimator_features(block, frames.users, frames.items),
                truth=estimator_truth(block, dataset, full, frames.users, frames.items),
                truth_per_user=true_values,
                gammas=block["sensitivity"]["gammas"],
                excluded=kendall_excluded(block),
            )
        )
    block = {**block, "seeds": len(run_seeds)}
    metrics = [seed["metrics"] for seed in evaluated]
    def seeds_of(stem: str) -> list[pd.DataFrame]:
        return [seed[stem] for seed in evaluated]

    out = aggregate_step(
        metrics,
        diagnostics,
        interactions,
        block,
        dataset=dataset,
        min_users=full["min_users"],
        comparisons=seeds_of("comparisons"),
        truth=truth,
        arena=seeds_of("arena"),
        reliability=seeds_of("reliability"),
        sensitivity=seeds_of("sensitivity"),
        estimator_diagnostics=seeds_of("estimators_diagnostics"),
    )
    out["metrics_per_user"] = pd.concat(
        [seed["metrics_per_user"] for seed in evaluated], ignore_index=True
    )
    out["seed_comparisons"] = pd.concat(
        [seed["comparisons"] for seed in evaluated], ignore_index=True
    )
    out["dropped"] = kept.dropped
    out["dropped_md"] = dropped_text(kept.dropped, dataset)
    out["metrics"] = pd.concat([*metrics, *truth], ignore_index=True)
    for stem in ("estimators_diagnostics", "arena", "reliability"):
        out[stem] = pd.concat(seeds_of(stem), ignore_index=True)
    out["tuning"] = pd.concat(tunings, ignore_index=True) if tunings else pd.DataFrame()
    return out
