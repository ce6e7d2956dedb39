"""E1's steps, one function per rule (``e1_<stage>``), and what the workflow asks of E1 before
any job: the parts of a dataset it needs, its outputs, its config check ([SAC20];
docs/experiments/e1.md)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.data.filters import Filtered, apply_filter
from debiaseval.data.filters import common_users_items as _common_users_items
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import check_fractions, run_rng, split_e1
from debiaseval.datasets.truth import TRUTH_SOURCES
from debiaseval.debiasing.interventions import TestSetSpec, intervene, sampling_weights
from debiaseval.estimation.arena import SplitParts, fit_imputation
from debiaseval.estimation.imputation import Imputation
from debiaseval.estimation.scoreboard import TRUE
from debiaseval.evaluation.external_lists import seed_lists
from debiaseval.evaluation.full_truth import true_rows
from debiaseval.evaluation.metrics import GAINS, BlockValues
from debiaseval.evaluation.per_user import per_user_table, seed_uncertainty
from debiaseval.evaluation.testsets import (
    check_testset,
    evaluate_recommenders,
    short_list_warnings,
    testset_diagnostics,
)
from debiaseval.experiments.e1.arena import (
    check_estimators,
    imputation_frame,
    score_seed,
    seed_estimates,
    with_gamma_stars,
)
from debiaseval.experiments.e1.summary import check_kendall, kendall_excluded
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.files import atomic_path, read_parquet, write_parquet
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

NEEDS: tuple[tuple[str, ...], ...] = (("mnar", "mar"),)
"""The parts E1 needs of a dataset (:mod:`debiaseval.data.catalog`): MNAR and MAR."""


OUTPUTS = (
    "verdict.md",
    "summary.parquet",
    "kendall.parquet",
    "testsets.parquet",
    "comparisons.parquet",
    "comparisons.md",
    "summary.md",
    "kendall.md",
    "dropped.parquet",
    "dropped.md",
    "estimator_accuracy.parquet",
    "truth_separation.parquet",
    "estimator_accuracy.md",
    "estimator_pairs.parquet",
    "sensitivity.parquet",
    "sensitivity.md",
)
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


@dataclasses.dataclass(frozen=True)
class E1Data(StepConfig):
    """What rule ``e1_data`` reads of the ``e1`` block."""

    BLOCK: ClassVar[str] = "e1"
    common_users_items: bool


def data_step(
    interactions: pd.DataFrame,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    *,
    step: E1Data,
    dataset: str,
) -> Filtered:
    """Rule ``e1_data``: the dataset as E1's protocol takes it, re-indexed, and what it drops.

    With ``step.common_users_items`` (``e1.common_users_items``, [SAC20]) only the users
    and items present in both the MNAR and the MAR part are kept
    (:func:`~debiaseval.data.filters.common_users_items`); else every rating. The
    result's ``dropped`` is the filter's report, one row per part (docs/experiments/e1.md).
    """
    where = f"E1 on {dataset}"
    if step.common_users_items:
        return _common_users_items(interactions, users, items, where=where)
    keep = np.ones(len(interactions), dtype=bool)
    return apply_filter(interactions, keep, name="none", users=users, items=items, where=where)


@dataclasses.dataclass(frozen=True)
class E1Split(StepConfig):
    """What rule ``e1_split`` reads of the ``e1`` block."""

    BLOCK: ClassVar[str] = "e1"
    mnar_split: dict[str, float]
    mar_split: dict[str, float]


def split_step(
    interactions: pd.DataFrame, step: E1Split, *, dataset: str, seed: int
) -> pd.DataFrame:
    """Rule ``e1_split``: the seed's train/heldout and weights/val/gt parts ([SAC20] §5.2)."""
    rng = run_rng(seed, dataset, "split")
    return split_e1(interactions, mnar_split=step.mnar_split, mar_split=step.mar_split, rng=rng)


@dataclasses.dataclass(frozen=True)
class E1External(StepConfig):
    """What rule ``e1_external`` reads of the ``e1`` block (the recommender's ``ids`` and
    ``on_train_items`` come with its wildcard)."""

    BLOCK: ClassVar[str] = "e1"
    ks: list[int]


def lists_step(
    lists: pd.DataFrame,
    split: pd.DataFrame,
    step: E1External,
    *,
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    n_users: int,
    n_items: int,
    ids: str,
    on_train_items: str,
    source: str,
    where: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Rule ``e1_external``: precomputed lists of one seed as a model's top-max(``step.ks``)
    lists.

    Checked against the seed's ``train`` part
    (:func:`~debiaseval.evaluation.external_lists.prepare_lists`: unknown ids, duplicated
    pairs, training items, rank vs score) and cut at max(ks), in the format of
    ``e1_select``'s lists. Returns them and the warnings (dropped training items, lists
    shorter than max(ks)).
    """
    return seed_lists(
        lists,
        split[split["part"] == "train"],
        depth=max(step.ks),
        source=source,
        users=users,
        items=items,
        n_users=n_users,
        n_items=n_items,
        ids=ids,
        on_train_items=on_train_items,
        where=where,
    )


@dataclasses.dataclass(frozen=True)
class E1Intervene(StepConfig):
    """What rule ``e1_intervene`` reads of the ``e1`` block: every test set's spec, ``rho``,
    the positive threshold and ``allow_empty_testsets``."""

    BLOCK: ClassVar[str] = "e1"
    testsets: dict[str, dict[str, Any]]
    rho: float
    positive_threshold: float
    allow_empty_testsets: bool = False


def testset_step(
    split: pd.DataFrame,
    name: str,
    step: E1Intervene,
    *,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_intervene``: test set ``name`` of ``step.testsets`` drawn from ``heldout``,
    and its diagnostics.

    Raises :class:`EmptyTestSetError` when the test set has no (relevant) pair,
    unless ``step.allow_empty_testsets`` (see :func:`check_testset`).
    """
    rho = step.rho
    space = split[split["part"] == "heldout"].reset_index(drop=True)
    testset = TestSetSpec(name=name, **step.testsets[name])
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
        positive_threshold=step.positive_threshold,
        allow_empty=step.allow_empty_testsets,
    )
    gt = split[split["part"] == "gt"]
    diagnostics = testset_diagnostics(name, sample, space, weights, gt, **sizes)
    diagnostics.insert(0, "seed", seed)
    return sample, diagnostics


@dataclasses.dataclass(frozen=True)
class E1Train(StepConfig):
    """What rules ``e1_train`` and ``e1_tune`` read of the ``e1`` block (the recommender's
    spec comes with its wildcard)."""

    BLOCK: ClassVar[str] = "e1"
    tuning: dict[str, Any]
    ks: list[int]
    positive_threshold: float
    batch_size: int


def tune_step(
    split: pd.DataFrame,
    recommender: str,
    spec: Mapping[str, Any],
    step: E1Train,
    *,
    chunk: int,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_train``: chunk ``chunk`` of a recommender's grid tuned on MAR ``val``.

    Returns its tuning rows and the top-max(``step.ks``) lists of its best usable point
    (no rows when none is usable).
    """
    tuning = step.tuning
    stopping = tuning["early_stopping"]
    table, recs = tune_points(
        rating_matrix(split[split["part"] == "train"], n_users, n_items),
        split[split["part"] == "val"],
        grid_chunks(spec["grid"], tuning["points_per_job"])[chunk],
        algorithm=spec["algorithm"],
        params=spec["params"],
        metric=tuning["metric"],
        k=tuning["k"],
        depth=max(step.ks),
        positive_threshold=step.positive_threshold,
        batch_size=step.batch_size,
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
    (:func:`~debiaseval.selection.tuning.merge_chunks`) and write the table to
    ``tuning_out``; copy the lists of the chunk that holds the point to ``recs_out``, byte
    for byte. Returns the table. ``what`` names the grid in the error when no point is usable.
    """
    table, chunk = merge_chunks([read_parquet(path) for path in tuning_files], what)
    write_parquet(table, tuning_out)
    with atomic_path(recs_out) as tmp:
        shutil.copyfile(recs_files[chunk], tmp)
    return table


@dataclasses.dataclass(frozen=True)
class E1Impute(StepConfig):
    """What rule ``e1_impute`` reads of the ``e1`` block (the estimator's spec comes with its
    wildcard)."""

    BLOCK: ClassVar[str] = "e1"
    positive_threshold: float


def impute_step(
    split: pd.DataFrame,
    spec: Mapping[str, Any],
    step: E1Impute,
    *,
    seed: int,
    n_users: int,
    n_items: int,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
) -> pd.DataFrame:
    """Rule ``e1_impute``: the model imputation of one dr estimator of the seed, fitted on the
    training part (:func:`~debiaseval.estimation.arena.fit_imputation`), as a frame
    (:meth:`~debiaseval.estimation.imputation.LogisticMF.to_frame`) that ``e1_evaluate`` reads
    back."""
    model = fit_imputation(
        split,
        spec,
        seed=seed,
        n_users=n_users,
        n_items=n_items,
        positive_threshold=step.positive_threshold,
        features=features,
        truth=truth,
    )
    return imputation_frame(model)


@dataclasses.dataclass(frozen=True)
class E1Evaluate(StepConfig):
    """What rule ``e1_evaluate`` reads of the ``e1`` block: ``resamples`` is
    ``bootstrap.resamples``, ``gammas`` ``sensitivity.gammas``, ``excluded`` the recommenders
    Kendall's τ leaves out (:func:`~debiaseval.experiments.e1.summary.kendall_excluded`)."""

    BLOCK: ClassVar[str] = "e1"
    ks: list[int]
    metrics: list[str]
    positive_threshold: float
    drop_train_overlap: bool
    resamples: int = 0
    confidence: float = 0.95
    estimators: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    gammas: list[float] = dataclasses.field(default_factory=list)
    excluded: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def of(cls, config: Mapping[str, Any], dataset: str) -> E1Evaluate:
        """The ``e1`` block's values for ``dataset``."""
        block = config["e1"]
        return cls(
            **cls.values(config, dataset),
            resamples=block["bootstrap"]["resamples"],
            gammas=block["sensitivity"]["gammas"],
            excluded=kendall_excluded(block),
        )


def evaluate_step(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    testsets: Mapping[str, pd.DataFrame],
    step: E1Evaluate,
    *,
    seed: int,
    n_items: int,
    n_users: int | None = None,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
    truth_per_user: pd.DataFrame | None = None,
    imputations: Mapping[str, Imputation] | None = None,
) -> dict[str, pd.DataFrame]:
    """Rule ``e1_evaluate``: every recommender of the seed on gt and on every test set, and
    each of ``step.estimators`` (``e1.estimators``, with its propensities' ``features`` or
    ``truth`` and the ``imputations`` ``e1_impute`` fitted;
    :func:`~debiaseval.estimation.arena.evaluate_estimators`). Returns the tables of
    :data:`EVALUATE_OUTPUTS`: ``metrics`` (means over users with their bootstrap interval at
    ``step.confidence``), ``metrics_per_user``,
    ``comparisons`` (paired tests, with each SNIPS pair's Γ*; :func:`seed_uncertainty`),
    ``estimators_diagnostics``, ``sensitivity`` (SNIPS bounds at ``step.gammas``), ``arena``
    (every row's and its truth's means over the same users; the truth is ``truth_per_user``
    on synthetic, else gt) and ``reliability`` (gt's split-half reliability,
    ``step.excluded`` left out). Warns when a k exceeds some user's candidates
    (:func:`short_list_warnings`).
    """
    ks, metrics, positive_threshold = step.ks, step.metrics, step.positive_threshold
    resamples, confidence = step.resamples, step.confidence
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
        per_user=per_user,
        drop_train_overlap=step.drop_train_overlap,
    )
    table.insert(1, "seed", seed)
    parts = SplitParts(split, train=train)  # the training part selected above, not again
    est = seed_estimates(
        split,
        recs,
        step.estimators,
        seed=seed,
        n_users=n_users,
        n_items=n_items,
        ks=ks,
        metrics=metrics,
        positive_threshold=positive_threshold,
        features=features,
        truth=truth,
        parts=parts,
        imputations=imputations,
        gammas=step.gammas,
        resamples=resamples,
        confidence=confidence,
    )
    # one bootstrap and one family of paired tests per seed, test sets and estimators alike
    rows = {rec: {**per_user[rec], **est.per_user.get(rec, {})} for rec in per_user}
    if len(est.table):  # the test sets' rows, then the estimators'
        table = pd.concat([table, est.table], ignore_index=True)
    out = seed_uncertainty(table, rows, seed=seed, resamples=resamples, confidence=confidence)
    out["comparisons"] = with_gamma_stars(out["comparisons"], est.gamma_stars)
    groups = [per_user, est.per_user]
    out.update(estimators_diagnostics=est.diagnostics, sensitivity=est.sensitivity)
    out.update(
        score_seed(
            groups,
            parts,
            truth_per_user,
            seed=seed,
            n_users=n_users,
            positive_threshold=positive_threshold,
            excluded=step.excluded,
            resamples=resamples,
            confidence=confidence,
        )
    )
    # one table of the test sets' and the estimators' per-user values (not two, then a copy)
    out["metrics_per_user"] = per_user_table(groups, seed=seed)
    return {stem: out[stem] for stem in EVALUATE_OUTPUTS}


EVALUATE_OUTPUTS = (
    "metrics",
    "metrics_per_user",
    "comparisons",
    "estimators_diagnostics",
    "sensitivity",
    "arena",
    "arena_replicates",
    "reliability",
    "truth_tests",
)
"""The tables of :func:`evaluate_step`, by file stem (``estimators_diagnostics`` is written as
``estimators.diagnostics.parquet``)."""


@dataclasses.dataclass(frozen=True)
class E1Truth(StepConfig):
    """What rule ``e1_truth`` reads of the ``e1`` block."""

    BLOCK: ClassVar[str] = "e1"
    ks: list[int]
    metrics: list[str]
    positive_threshold: float


def truth_step(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    step: E1Truth,
    *,
    rating_rows: Callable[[np.ndarray], np.ndarray],
    raw_users: np.ndarray,
    raw_items: np.ndarray,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e1_truth``: the seed's exact ``TRUE`` rows (docs/estimators.md): every
    recommender's metrics over all its candidates (every item but the seed's ``train`` items)
    from the dataset's full rating matrix, ``rating_rows`` of the users' raw ids
    (:func:`~debiaseval.datasets.truth.full_rating_rows_of`: ``synthetic``'s generator, or
    Jester's real block on ``jester5k-semi``; :func:`~debiaseval.evaluation.full_truth.true_rows`;
    ``raw_users``/``raw_items`` map E1's ids to the matrix's), in ``metrics.parquet``'s layout,
    and the per-user values of the metrics the arena scores (``truth_per_user``)."""
    return true_rows(
        recs,
        split[split["part"] == "train"],
        rating_rows,
        testset=TRUE,
        seed=seed,
        raw_users=raw_users,
        raw_items=raw_items,
        ks=step.ks,
        metrics=step.metrics,
        positive_threshold=step.positive_threshold,
        per_user_metrics=GAINS,
    )
