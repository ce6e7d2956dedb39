"""Experiment E1: train, tune, rank and evaluate on intervened test sets ([SAC20]).

Carraro & Bridge, *Debiased offline evaluation of recommender systems: a
weighted-sampling approach*, ACM SAC 2020: every recommender is trained on the
MNAR ``train`` part, tuned on the MAR ``val`` part, and evaluated on the MAR
``gt`` part (ground truth) and on test sets drawn from the MNAR ``heldout`` part.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.data.catalog import positive_threshold_of
from debiaseval.data.draws import per_seed_draws, seed_block, seed_config
from debiaseval.data.filters import Filtered, apply_filter, dropped_markdown, dropped_warnings
from debiaseval.data.filters import common_users_items as _common_users_items
from debiaseval.data.ids import raw_ids
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import check_fractions, run_rng, split_e1
from debiaseval.datasets.load import raw_folder
from debiaseval.datasets.truth import TRUTH_SOURCES, full_rating_rows_of
from debiaseval.debiasing.interventions import TestSetSpec, intervene, sampling_weights
from debiaseval.estimation.arena import SplitParts, fit_imputation
from debiaseval.estimation.diagnostics import heavy_tailed
from debiaseval.estimation.imputation import Imputation
from debiaseval.estimation.scoreboard import TRUE
from debiaseval.estimation.seed_scores import (
    RELIABILITY_COLUMNS,
    REPLICATE_COLUMNS,
    SCORED_COLUMNS,
    TRUTH_TEST_COLUMNS,
)
from debiaseval.estimation.sensitivity import (
    COMPARISONS_COLUMNS,
    GAMMA_COLUMNS,
    SENSITIVITY_COLUMNS,
    gamma_star_over_seeds,
    sensitivity_markdown,
    sensitivity_over_seeds,
)
from debiaseval.evaluation.aggregate import (
    GROUND_TRUTH,
    check_kendall,
    kendall_excluded,
    kendall_groups,
    kendall_markdown,
    kendall_table,
    summary_about,
    summary_flags,
    summary_markdown,
    summary_table,
    testsets_table,
)
from debiaseval.evaluation.external_lists import lists_of_seed, seed_lists
from debiaseval.evaluation.flags import MIN_USERS
from debiaseval.evaluation.full_truth import true_rows
from debiaseval.evaluation.metrics import GAINS, BlockValues
from debiaseval.evaluation.per_user import per_user_table, seed_uncertainty
from debiaseval.evaluation.testsets import (
    check_testset,
    evaluate_recommenders,
    short_list_warnings,
    testset_diagnostics,
)
from debiaseval.evaluation.uncertainty import agreement_over_seeds, seed_intervals
from debiaseval.experiments import Data, Frames, input_frames, seed_data, seed_ids, validated
from debiaseval.experiments.e1.arena import (
    check_estimators,
    estimator_features,
    estimator_truth,
    imputation_frame,
    row_families,
    score_seed,
    scoreboard_tables,
    seed_estimates,
    with_gamma_stars,
)
from debiaseval.experiments.e1.verdict import (
    comparisons_markdown,
    e1_verdict,
    truth_separation_notes,
)
from debiaseval.experiments.verdicts import verdict_entries, with_verdict
from debiaseval.io.errors import EmptyTestSetError
from debiaseval.io.files import atomic_path, read_parquet, write_parquet
from debiaseval.io.progress import stage, staged
from debiaseval.recommenders.ranking import empty_recommendations
from debiaseval.recommenders.registry import EXTERNAL
from debiaseval.selection.specs import check_recommender_spec
from debiaseval.selection.tuning import (
    EarlyStopping,
    check_early_stopping,
    grid_chunks,
    merge_chunks,
    tune_points,
)

__all__ = [
    "EVALUATE_OUTPUTS", "EXPORT", "NEEDS", "OUTPUTS", "TRUTH_DATASETS", "EmptyTestSetError",
    "aggregate_step", "check_config", "data_step", "dropped_over_draws", "dropped_text",
    "evaluate_step",
    "external_recommenders", "impute_step", "kendall_excluded", "kendall_groups", "lists_step",
    "run", "select_step", "split_step", "testset_step", "truth_step",
    "tune_step",
]  # fmt: skip

NEEDS: tuple[tuple[str, ...], ...] = (("mnar", "mar"),)
"""The parts E1 needs of a dataset (:mod:`debiaseval.data.catalog`): MNAR and MAR."""

OUTPUTS = (
    "verdict.md", "summary.parquet", "kendall.parquet", "testsets.parquet", "comparisons.parquet",
    "comparisons.md", "summary.md", "kendall.md", "dropped.parquet", "dropped.md",
    "estimator_accuracy.parquet", "truth_separation.parquet",
    "estimator_accuracy.md", "estimator_pairs.parquet", "sensitivity.parquet", "sensitivity.md",
)  # fmt: skip
"""E1's aggregated files in ``results/<study>/e1/<dataset>/``."""

TRUTH_DATASETS = TRUTH_SOURCES
"""The datasets whose full rating matrix is known (``synthetic``, ``jester5k-semi``;
:mod:`debiaseval.datasets.truth`): E1 adds their exact ``TRUE`` row (:func:`truth_step`), which
the scoreboard then scores every other row against."""

EXPORT = {"train": "train", "val": "val"}
"""The parts of a seed's split exported in raw ids
(``results/<study>/e1/<dataset>/export/seed<s>/``): export name -> part; other frameworks
train on ``train`` and tune on ``val``."""


def external_recommenders(block: Mapping[str, Any]) -> list[str]:
    """The recommenders whose lists are precomputed (algorithm ``external``), in config order."""
    return [n for n, spec in block["recommenders"].items() if spec["algorithm"] == EXTERNAL]


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e1`` block (after schema validation); raise ``ConfigError``."""
    block = config["e1"]
    for key in ("mnar_split", "mar_split"):
        check_fractions(block[key], f"e1.{key}")
    for name, spec in block["recommenders"].items():
        check_recommender_spec(spec, f"e1.recommenders.{name}")
    check_early_stopping(block["recommenders"], block["tuning"]["early_stopping"], "e1")
    check_kendall(block, "e1")
    check_estimators(config)


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
    """``dropped.md``: what E1's filters dropped from ``dataset``, per part, with warnings;
    per seed where each seed draws its own data (a ``seed`` column, :func:`dropped_over_draws`)."""
    title = f"E1 on {dataset}: ratings dropped by E1's protocol"
    if "seed" not in dropped.columns:
        return dropped_markdown(dropped, title)
    seeds = dropped["seed"].astype(str)
    named = dropped.assign(filter=dropped["filter"].astype(str) + " (seed " + seeds + ")")
    return dropped_markdown(named.drop(columns="seed"), title + ", each seed its own draw")


def dropped_over_draws(per_seed: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """``dropped.parquet`` of a dataset drawn per seed: the seeds' filter reports (each with its
    ``seed``) stacked, ``seed`` first."""
    table = pd.concat(per_seed, ignore_index=True)
    return table[["seed", *[c for c in table.columns if c != "seed"]]]


def split_step(
    interactions: pd.DataFrame,
    *,
    mnar_split: Mapping[str, float],
    mar_split: Mapping[str, float],
    dataset: str,
    seed: int,
) -> pd.DataFrame:
    """Rule ``e1_split``: the seed's train/heldout and weights/val/gt parts ([SAC20] §5.2)."""
    rng = run_rng(seed, dataset, "split")
    return split_e1(interactions, mnar_split=mnar_split, mar_split=mar_split, rng=rng)


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
    return seed_lists(
        lists, split[split["part"] == "train"], depth=max(ks), source=source, users=users,
        items=items, n_users=n_users, n_items=n_items, ids=ids, on_train_items=on_train_items,
        where=where,
    )  # fmt: skip


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
    weights = sampling_weights(space, testset, train=split[split["part"] == "train"],
                               mar_weights=split[split["part"] == "weights"], **sizes)  # fmt: skip
    rng = run_rng(seed, dataset, "intervene", name)
    sample = intervene(space, testset, rho=rho, rng=rng, weights=weights, **sizes)
    check_testset(sample, name, dataset=dataset, seed=seed, rho=rho, n_heldout=len(space),
                  positive_threshold=positive_threshold, allow_empty=allow_empty)  # fmt: skip
    gt = split[split["part"] == "gt"]
    diagnostics = testset_diagnostics(name, sample, space, weights, gt, **sizes)
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
        split[split["part"] == "val"], grid_chunks(spec["grid"], tuning["points_per_job"])[chunk],
        algorithm=spec["algorithm"], params=spec["params"], metric=tuning["metric"],
        k=tuning["k"], depth=max(ks), positive_threshold=positive_threshold,
        batch_size=batch_size,
        seed=int(run_rng(seed, dataset, "train", recommender).integers(2**31 - 1)),
        early_stopping=None if stopping is None else EarlyStopping(**stopping),
    )  # fmt: skip
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
    (:func:`~debiaseval.selection.tuning.merge_chunks`) and write the table to
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
    """Rule ``e1_evaluate``: every recommender of the seed on gt and on every test set, and
    each of ``estimators`` (``e1.estimators``, with its propensities' ``features`` or ``truth``
    and the ``imputations`` ``e1_impute`` fitted;
    :func:`~debiaseval.estimation.arena.evaluate_estimators`). Returns the tables of
    :data:`EVALUATE_OUTPUTS`: ``metrics`` (means over users with their bootstrap interval at
    ``level``), ``metrics_per_user``,
    ``comparisons`` (paired tests, with each SNIPS pair's Γ*; :func:`seed_uncertainty`),
    ``estimators_diagnostics``, ``sensitivity`` (SNIPS bounds at ``gammas``), ``arena``
    (every row's and its truth's means over the same users; the truth is ``truth_per_user``
    on synthetic, else gt) and ``reliability`` (gt's split-half reliability, ``excluded`` left
    out). Warns when a k exceeds some user's candidates (:func:`short_list_warnings`).
    """
    train = split[split["part"] == "train"]
    n_users = int(split["user"].max()) + 1 if n_users is None else n_users
    for message in short_list_warnings(train, n_items=n_items, ks=ks):
        warnings.warn(f"seed {seed}: {message}", stacklevel=2)
    per_user: dict[str, dict[str, BlockValues]] = {}
    table = evaluate_recommenders(
        recs, {"gt": split[split["part"] == "gt"], **testsets}, train, n_items=n_items, ks=ks,
        metrics=metrics, positive_threshold=positive_threshold, per_user=per_user,
        drop_train_overlap=drop_train_overlap,
    )  # fmt: skip
    table.insert(1, "seed", seed)
    parts = SplitParts(split, train=train)  # the training part selected above, not again
    est = seed_estimates(
        split, recs, estimators or {}, seed=seed, n_users=n_users, n_items=n_items, ks=ks,
        metrics=metrics, positive_threshold=positive_threshold, features=features, truth=truth,
        parts=parts, imputations=imputations, gammas=gammas, resamples=resamples, level=level,
    )  # fmt: skip
    # one bootstrap and one family of paired tests per seed, test sets and estimators alike
    rows = {rec: {**per_user[rec], **est.per_user.get(rec, {})} for rec in per_user}
    if len(est.table):  # the test sets' rows, then the estimators'
        table = pd.concat([table, est.table], ignore_index=True)
    out = seed_uncertainty(table, rows, seed=seed, resamples=resamples, level=level)
    out["comparisons"] = with_gamma_stars(out["comparisons"], est.gamma_stars)
    groups = [per_user, est.per_user]
    out.update(estimators_diagnostics=est.diagnostics, sensitivity=est.sensitivity)
    out.update(score_seed(groups, parts, truth_per_user, seed=seed, n_users=n_users,
                          positive_threshold=positive_threshold, excluded=excluded,
                          resamples=resamples, level=level))  # fmt: skip
    # one table of the test sets' and the estimators' per-user values (not two, then a copy)
    out["metrics_per_user"] = per_user_table(groups, seed=seed)
    return {stem: out[stem] for stem in EVALUATE_OUTPUTS}


EVALUATE_OUTPUTS = (
    "metrics", "metrics_per_user", "comparisons", "estimators_diagnostics", "sensitivity",
    "arena", "arena_replicates", "reliability", "truth_tests",
)  # fmt: skip
"""The tables of :func:`evaluate_step`, by file stem (``estimators_diagnostics`` is written as
``estimators.diagnostics.parquet``)."""


def truth_step(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    *,
    rating_rows: Callable[[np.ndarray], np.ndarray],
    raw_users: np.ndarray,
    raw_items: np.ndarray,
    seed: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_truth``: the seed's exact ``TRUE`` rows (docs/estimators.md): every
    recommender's metrics over all its candidates (every item but the seed's ``train`` items)
    from the dataset's full rating matrix, ``rating_rows`` of the users' raw ids
    (:func:`~debiaseval.datasets.truth.full_rating_rows_of`: ``synthetic``'s generator, or
    Jester's real block on ``jester5k-semi``; :func:`~debiaseval.evaluation.full_truth.true_rows`;
    ``raw_users``/``raw_items`` map E1's ids to the matrix's), in ``metrics.parquet``'s layout,
    and the per-user values of the metrics the arena scores (``truth_per_user``)."""
    return true_rows(
        recs, split[split["part"] == "train"], rating_rows, testset=TRUE,
        seed=seed, raw_users=raw_users, raw_items=raw_items, ks=ks, metrics=metrics,
        positive_threshold=positive_threshold, per_user_metrics=GAINS,
    )  # fmt: skip


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
    arena_replicates: Sequence[pd.DataFrame] = (),
    reliability: Sequence[pd.DataFrame] = (),
    truth_tests: Sequence[pd.DataFrame] = (),
    sensitivity: Sequence[pd.DataFrame] = (),
    estimator_diagnostics: Sequence[pd.DataFrame] = (),
    draws: str = "fixed",
) -> dict[str, Any]:
    """Rule ``e1_aggregate``: the tables of ``OUTPUTS`` (Markdown ones as text, by file stem).

    ``summary``: per row the mean, the t interval over seeds (``ci_low``/``ci_high``) and the
    mean per-seed bootstrap bounds (``boot_low``/``boot_high``) at ``e1.confidence``, both in
    the metric's range, with ``flags`` (:func:`~debiaseval.evaluation.aggregate.summary_flags`:
    short lists, fewer than ``min_users`` users, out of range, heavy-tailed weights from
    ``estimator_diagnostics``). ``truth``: synthetic's exact ``TRUE`` rows (:func:`truth_step`).
    ``comparisons``: in how many seeds each pair differs after Holm's correction
    (:func:`agreement_over_seeds`) with the SNIPS rows' median Γ* and its leader. The
    scoreboard scores every row against the truth from ``arena``, ``arena_replicates``,
    ``reliability`` and ``truth_tests``
    (:func:`~debiaseval.experiments.e1.arena.scoreboard_tables`),
    resampling seeds alone where each seed drew its own data (``draws="independent"``), seeds
    and users where the seeds re-split one dataset (``"fixed"``); ``truth_separation``: whether
    the truth separates each ranked pair; ``sensitivity``: the seeds' SNIPS bounds, averaged.
    The verdict (:func:`~debiaseval.experiments.e1.verdict.e1_verdict`) is ``verdict`` /
    ``verdict_md`` and the first section of ``summary_md`` and ``comparisons_md``.
    """
    per_seed = pd.concat([*metrics, *truth]).reset_index(drop=True)
    keys = ["recommender", "testset", "metric", "k"]
    level = block["confidence"]
    summary = summary_table(per_seed).merge(
        seed_intervals(per_seed, keys, level=level), on=keys, how="left"
    )
    heavy = heavy_tailed(_concat(estimator_diagnostics, ["estimator", "pareto_k"]))
    summary = summary_flags(summary, per_seed, min_users=min_users, heavy_tail=heavy)
    tests = [frame for frame in comparisons if len(frame)]
    agreement = pd.DataFrame(columns=COMPARISONS_COLUMNS)
    if tests:
        seeds = pd.concat(tests, ignore_index=True)
        agreement = agreement_over_seeds(seeds, ["testset", "metric", "k"], alpha=1 - level)
        agreement[GAMMA_COLUMNS] = gamma_star_over_seeds(seeds, agreement)
    kendall = kendall_table(summary, kendall_groups(block), kendall_excluded(block))
    checks = testsets_table(pd.concat(diagnostics))
    names = [GROUND_TRUTH, *block["testsets"]]
    flags = summary[summary["flags"] != ""].groupby("testset", sort=False)["flags"].agg(
        lambda codes: ",".join(dict.fromkeys(c for row in codes for c in row.split(",")))
    )
    board = scoreboard_tables(
        _concat(arena, SCORED_COLUMNS), _concat(arena_replicates, REPLICATE_COLUMNS),
        _concat(reliability, RELIABILITY_COLUMNS), _concat(truth_tests, TRUTH_TEST_COLUMNS),
        families=row_families(block["testsets"], block["estimators"]),
        excluded=kendall_excluded(block), level=level,
        resamples=block["scoreboard"]["resamples"], draws=draws, dataset=dataset,
        flags=flags.to_dict(),
    )  # fmt: skip
    arena_lines = board.pop("verdicts")
    about = summary_about(interactions, block, external_recommenders(block))
    if draws == "independent":  # the data line describes the first seed's draw
        about[0] += " Each seed draws its own data (docs/datasets.md): the first seed's sizes."
    about += arena_lines
    bounds = sensitivity_over_seeds(_concat(sensitivity, ["seed", *SENSITIVITY_COLUMNS]), summary)
    separation = board["truth_separation"]
    found = verdict_entries(e1_verdict(summary, agreement, block, dataset=dataset,
                                       separation=separation, arena=arena_lines,
                                       excluded=kendall_excluded(block)))  # fmt: skip
    return {
        "summary": summary,
        "kendall": kendall,
        "testsets": checks,
        "summary_md": with_verdict(
            summary_markdown(summary, dataset, diagnostics=checks, about=about, testsets=names),
            found["verdict_md"],
        ),
        "kendall_md": kendall_markdown(
            kendall, dataset, names[1:], truth_separation_notes(separation)
        ),
        "comparisons": agreement,
        "comparisons_md": comparisons_markdown(
            agreement, dataset, level=level, verdict_md=found["verdict_md"],
            separation=separation,
        ),
        **found,
        **board,
        "sensitivity": bounds,
        "sensitivity_md": sensitivity_markdown(bounds, agreement, dataset, level=level),
    }


def _concat(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    parts = [frame for frame in frames if len(frame)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(columns))


def _e1_frames(
    data: Data, config: Mapping[str, Any] | None, dataset: str | None, block: Mapping[str, Any]
) -> tuple[Frames, Filtered]:
    """A run's data as E1's protocol takes it (:func:`data_step`), warning of what its filter
    drops: the frames with the kept rows, and the filter's result."""
    frames = input_frames(data, config, dataset, experiment="e1")
    kept = data_step(frames.interactions, frames.users, frames.items, dataset=frames.dataset,
                     common_users_items=block["common_users_items"])  # fmt: skip
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
    frames_of = seed_data(
        lambda seed: _e1_frames(
            data, seed_config(full, data, seed) if drawn else config, dataset, block
        ),
        drawn=drawn,
    )  # each seed's own draw (docs/datasets.md, One draw per seed), else one dataset for all
    run_seeds = seed_ids(seeds, block["seeds"])
    dataset = frames_of(run_seeds[0])[0].dataset
    threshold = positive_threshold_of(dataset, block["positive_threshold"], full["sources"])
    block = {**block, "positive_threshold": threshold}
    common = {"ks": block["ks"], "positive_threshold": threshold}
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
        split = split_step(interactions, mnar_split=block["mnar_split"],
                           mar_split=block["mar_split"], dataset=dataset, seed=seed)  # fmt: skip
        testsets = {}
        for name, spec in block["testsets"].items():
            testsets[name], checks = testset_step(
                split, name, spec, rho=block["rho"], seed=seed, positive_threshold=threshold,
                allow_empty=block["allow_empty_testsets"], **sizes,
            )  # fmt: skip
            diagnostics.append(checks)
        recs = {}
        for name, spec in block["recommenders"].items():
            if spec["algorithm"] == EXTERNAL:
                frame, source, where = lists_of_seed(spec, name=name, dataset=dataset, seed=seed,
                                                     where=f"e1.recommenders.{name}",
                                                     lists=lists)  # fmt: skip
                recs[name], notes = lists_step(
                    frame, split, users=frames.users, items=frames.items, n_users=n_users,
                    n_items=n_items, ids=spec["ids"], on_train_items=spec["on_train_items"],
                    ks=block["ks"], source=source, where=where,
                )  # fmt: skip
                for note in notes:
                    warnings.warn(note, stacklevel=2)
                continue
            stage(f"seed {seed}: tuning and training {name}")
            n_chunks = len(grid_chunks(spec["grid"], block["tuning"]["points_per_job"]))
            tune = {"tuning": block["tuning"], "batch_size": block["batch_size"], **common}
            chunks = [
                tune_step(split, name, spec, chunk=chunk, seed=seed, **tune, **sizes)
                for chunk in range(n_chunks)
            ]
            table, best = merge_chunks([t for t, _ in chunks],
                                       f"the grid of {name} on {dataset}, seed {seed}")  # fmt: skip
            recs[name] = chunks[best][1]
            tunings.append(table.assign(seed=seed, recommender=name))
        true_values = None
        if exact:
            table, true_values = truth_step(
                split, recs, rating_rows=full_rating_rows_of(dataset, generator, truth_raw),
                raw_users=raw_ids(frames.users, "user", n_users),
                raw_items=raw_ids(frames.items, "item", n_items), seed=seed,
                metrics=block["metrics"],
                **common,
            )  # fmt: skip
            truth.append(table)
        evaluated.append(evaluate_step(
            split, recs, testsets, seed=seed, n_items=n_items, metrics=block["metrics"],
            drop_train_overlap=block["drop_train_overlap"], level=block["confidence"],
            resamples=block["bootstrap"]["resamples"], estimators=block["estimators"],
            n_users=n_users, features=estimator_features(block, frames.users, frames.items),
            truth=estimator_truth(block, dataset, generator, frames.users, frames.items,
                                  truth_raw),
            truth_per_user=true_values, gammas=block["sensitivity"]["gammas"],
            excluded=kendall_excluded(block), **common,
        ))  # fmt: skip

    def seeds_of(stem: str) -> list[pd.DataFrame]:
        return [seed[stem] for seed in evaluated]

    block = {**block, "seeds": len(run_seeds)}
    stage("aggregating")
    out = aggregate_step(
        seeds_of("metrics"), diagnostics, described, block, dataset=dataset,
        min_users=full["min_users"], comparisons=seeds_of("comparisons"), truth=truth,
        arena=seeds_of("arena"), arena_replicates=seeds_of("arena_replicates"),
        reliability=seeds_of("reliability"), truth_tests=seeds_of("truth_tests"),
        sensitivity=seeds_of("sensitivity"),
        estimator_diagnostics=seeds_of("estimators_diagnostics"),
        draws="independent" if drawn else "fixed",
    )  # fmt: skip
    for stem in ("metrics_per_user", "estimators_diagnostics", "arena", "arena_replicates",
                 "reliability", "truth_tests"):  # fmt: skip
        out[stem] = pd.concat(seeds_of(stem), ignore_index=True)
    out["seed_comparisons"] = pd.concat(seeds_of("comparisons"), ignore_index=True)
    out["dropped"] = dropped_over_draws(dropped) if drawn else frames_of(run_seeds[0])[1].dropped
    out["dropped_md"] = dropped_text(out["dropped"], dataset)
    out["metrics"] = pd.concat([*seeds_of("metrics"), *truth], ignore_index=True)
    out["tuning"] = pd.concat(tunings, ignore_index=True) if tunings else pd.DataFrame()
    return out
