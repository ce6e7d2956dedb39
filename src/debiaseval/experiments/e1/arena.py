"""E1's estimator rows (``e1.estimators``): their config check, the propensity inputs a seed
gives them, each seed's estimates and scores, and the scoreboard over the seeds
(docs/estimators.md; docs/experiments/e1.md).

The estimators themselves, their held-out parts and diagnostics are the library's
(:mod:`debiaseval.estimation.arena`); this module feeds them E1's split and config and scores
every row of E1's test-set column against the truth
(:mod:`~debiaseval.estimation.scoreboard`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.data.splits import run_rng
from debiaseval.estimation.arena import (
    DIAGNOSTICS_COLUMNS,
    SeedEstimates,
    SplitParts,
    evaluate_estimators,
)
from debiaseval.estimation.heldout import GAINS
from debiaseval.estimation.imputation import Imputation, LogisticMF
from debiaseval.estimation.resampling import ResamplingPlan
from debiaseval.estimation.scoreboard import (
    TRUE,
    scoreboard,
    scoreboard_markdown,
    truth_of,
    verdict,
)
from debiaseval.estimation.seed_scores import (
    RELIABILITY_COLUMNS,
    common_means,
    split_half_reliability,
    truth_tests,
)
from debiaseval.estimation.sensitivity import SENSITIVITY_COLUMNS
from debiaseval.estimation.separation import truth_separation
from debiaseval.evaluation.metrics import BlockValues
from debiaseval.io.errors import ConfigError

__all__ = [
    "ESTIMATOR_NEEDS",
    "check_estimators",
    "estimator_features",
    "estimator_truth",
    "imputation_frame",
    "row_families",
    "score_seed",
    "scoreboard_tables",
    "seed_estimates",
    "with_gamma_stars",
]

ESTIMATOR_NEEDS = {"logistic": "features"}
"""The dataset part each propensity model of ``e1.estimators`` needs beyond MNAR and MAR
(``known`` needs a dataset whose observation model is known:
:data:`~debiaseval.datasets.truth.TRUTH_SOURCES`)."""


def estimator_features(
    block: Mapping[str, Any], users: pd.DataFrame | None, items: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The users' and items' frames when an estimator of ``block`` has logistic propensities."""
    wanted = any(s.get("propensity") == "logistic" for s in block["estimators"].values())
    return (users, items) if wanted and users is not None and items is not None else None


def estimator_truth(
    block: Mapping[str, Any],
    dataset: str,
    synthetic: Mapping[str, Any] | None,
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    raw: str | Path | None = None,
) -> np.ndarray | None:
    """The true propensities (E1's users × items) when an estimator of ``block`` has known
    propensities: the observation model of ``dataset`` (one of
    :data:`~debiaseval.datasets.truth.TRUTH_SOURCES`) for the generator block ``synthetic``
    (the seed's own draw, :func:`~debiaseval.data.draws.seed_block`; ``raw``: the folder of
    the real block ``jester5k-semi`` is drawn on), at the kept users' and items' raw ids
    (``raw_user``/``raw_item`` of the data step's users and items, when it re-indexed)."""
    if not any(s.get("propensity") == "known" for s in block["estimators"].values()):
        return None
    from debiaseval.datasets.truth import full_propensities_of

    matrix = full_propensities_of(dataset, synthetic, raw)
    rows = _raw_ids(users, "user", matrix.shape[0])
    cols = _raw_ids(items, "item", matrix.shape[1])
    return matrix[np.ix_(rows, cols)]


def _raw_ids(frame: pd.DataFrame | None, what: str, n: int) -> np.ndarray:
    if frame is None:
        return np.arange(n)
    frame = frame.sort_values(what)
    for column in (f"raw_{what}", "raw", "raw_id", what):
        if column in frame.columns:
            return frame[column].to_numpy().astype(np.int64)
    return np.arange(n)


def imputation_frame(imputation: Imputation) -> pd.DataFrame:
    """``e1_impute``'s file of a fitted model imputation (:meth:`LogisticMF.to_frame`)."""
    if not isinstance(imputation, LogisticMF):
        raise TypeError(f"{type(imputation).__name__} is not a model imputation")
    return imputation.to_frame()


def check_estimators(config: Mapping[str, Any]) -> None:
    """Cross-field checks of ``e1.estimators`` (after schema validation): no name of a test
    set, dr's keys on dr rows only, and the dataset parts each propensity model needs; raise
    ``ConfigError`` naming the key."""
    from debiaseval.data.catalog import CONTINUOUS_RATINGS, dataset_parts, missing_text
    from debiaseval.datasets.truth import TRUTH_SOURCES

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
            dr_only["scale"] = spec.get("scale") is not None
            for key in (key for key, given in dr_only.items() if given):
                raise ConfigError(
                    f"{where}.{key}': only dr has an imputation, a form and a weight "
                    f"control; {spec['estimator']} is self-normalised (bound its weights "
                    "with clip)"
                )
        elif spec.get("form") == "scaled":
            if (spec.get("weight_control") or {}).get("method", "none") != "none":
                raise ConfigError(
                    f"{where}.weight_control': the scaled form takes no weight control (its "
                    "imputation scale trades the correction's variance instead)"
                )
        elif spec.get("scale") is not None:
            raise ConfigError(f"{where}.scale': only the scaled form has an imputation scale")
        control = spec.get("weight_control") or {}
        if control.get("value") is not None and control.get("quantile") is not None:
            raise ConfigError(
                f"{where}.weight_control': a fixed value or a quantile of the weights, not both"
            )
        part = ESTIMATOR_NEEDS.get(spec.get("propensity", "naive_bayes"))
        continuous = [d for d in datasets or [] if d in CONTINUOUS_RATINGS]
        rating_model = spec.get("propensity", "naive_bayes") in ("naive_bayes", "popularity_nb")
        if rating_model and continuous:
            raise ConfigError(
                f"{where}.propensity': {spec.get('propensity', 'naive_bayes')} propensities "
                "model P(O | rating level) and "
                f"need ratings on a few levels; {continuous[0]}'s are continuous on [-10, 10]: "
                "use popularity or wtd propensities there"
            )
        unknown = [d for d in datasets or [] if d not in TRUTH_SOURCES]
        if spec.get("propensity") == "known" and unknown:
            raise ConfigError(
                f"{where}.propensity': known propensities need a dataset whose observation "
                f"model is known ({', '.join(TRUTH_SOURCES)}), which E1's dataset "
                f"{unknown[0]} is not"
            )
        for dataset in datasets or []:
            if part is not None and part not in dataset_parts(dataset, sources):
                raise ConfigError(
                    f"{where}.propensity': {spec['propensity']} propensities need "
                    f"{missing_text(dataset, [part], sources)}, which E1's dataset {dataset} "
                    "lacks"
                )


def score_seed(
    groups: Sequence[Mapping[str, Mapping[str, BlockValues]]],
    parts: SplitParts,
    truth_per_user: pd.DataFrame | None,
    *,
    seed: int,
    n_users: int,
    positive_threshold: float,
    excluded: Sequence[str],
    resamples: int = 1000,
    confidence: float = 0.95,
) -> dict[str, pd.DataFrame]:
    """The scoreboard's inputs of one seed (:mod:`~debiaseval.estimation.seed_scores`):
    ``arena`` (every row's and the truth's means over the same users, with their intervals over
    ``resamples`` user resamples at ``confidence``), ``arena_replicates`` (those resamples, the
    users counted alike in every seed), ``reliability`` (gt's split-half reliability, when gt is
    the truth) and ``truth_tests`` (the paired tests of every two recommenders on the truth)."""
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
            rec: BlockValues.of(
                frame, list(dict.fromkeys(zip(frame["metric"], frame["k"], strict=True)))
            )
            for rec, frame in truth_per_user.groupby("recommender", sort=False)
        }
    else:
        truth_name = "gt"
        truth = {rec: by_row["gt"] for rec, by_row in rows.items()}
    arena, replicates = common_means(
        rows,
        truth,
        seed=seed,
        heldout_users=heldout_users,
        n_users=n_users,
        truth_name=truth_name,
        resamples=resamples,
        confidence=confidence,
    )
    reliability = pd.DataFrame(columns=RELIABILITY_COLUMNS)
    if truth_name == "gt":
        reliability = split_half_reliability(
            truth, excluded, seed=seed, rng=run_rng(seed, "reliability")
        )
    return {
        "arena": arena,
        "arena_replicates": replicates,
        "reliability": reliability,
        "truth_tests": truth_tests(truth, seed=seed),
    }


def row_families(testsets: Sequence[str], estimators: Sequence[str]) -> dict[str, str]:
    """Every row of E1's test-set column and its family, in the column's order: gt (the MAR
    sample), the test sets (resampling), the estimators (weighting)."""
    return {
        "gt": "MAR sample",
        **dict.fromkeys(testsets, "resampling"),
        **dict.fromkeys(estimators, "weighting"),
    }


def seed_estimates(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    estimators: Mapping[str, Mapping[str, Any]],
    *,
    metrics: Sequence[str],
    seed: int,
    **options: Any,
) -> SeedEstimates:
    """E1's estimator rows of one seed (``e1_evaluate``): :func:`evaluate_estimators` on the
    metrics of :data:`~debiaseval.evaluation.metrics.GAINS` (``options``: its keywords); an
    empty :class:`SeedEstimates` without estimators or such metrics."""
    gains = [metric for metric in metrics if metric in GAINS]
    if not estimators or not gains:
        sensitive = pd.DataFrame(columns=["recommender", "seed", *SENSITIVITY_COLUMNS[1:]])
        return SeedEstimates(
            pd.DataFrame(), {}, pd.DataFrame(columns=DIAGNOSTICS_COLUMNS), sensitive
        )
    return evaluate_estimators(split, recs, estimators, metrics=gains, seed=seed, **options)


def with_gamma_stars(comparisons: pd.DataFrame, stars: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``comparisons`` (a seed's paired tests) with ``gamma_star`` and ``gamma_leader``: each
    SNIPS estimator's Γ* of its pairs (:attr:`SeedEstimates.gamma_stars`, in the comparisons'
    order) and the recommender ahead, whose lead it protects (``recommender_a`` or
    ``recommender_b`` by the sign of the estimate; missing where it is 0 or Γ* is NaN); NaN
    and missing for every other row (a test set has no propensities to get wrong)."""
    star = np.full(len(comparisons), np.nan)
    leader = np.full(len(comparisons), None, dtype=object)
    testset = comparisons["testset"].to_numpy() if len(comparisons) else np.empty(0)
    for name, values in stars.items():
        at = np.flatnonzero(testset == name)
        star[at] = values["gamma_star"].to_numpy()
        sign = np.where(np.isnan(star[at]), 0, values["leader"].to_numpy())
        a = comparisons["recommender_a"].to_numpy()[at]
        b = comparisons["recommender_b"].to_numpy()[at]
        leader[at] = np.where(sign > 0, a, np.where(sign < 0, b, None))
    return comparisons.assign(gamma_star=star, gamma_leader=leader)


def scoreboard_tables(
    arena: pd.DataFrame,
    replicates: pd.DataFrame,
    reliability: pd.DataFrame,
    truth_tests: pd.DataFrame,
    *,
    families: Mapping[str, str],
    excluded: Sequence[str],
    confidence: float,
    resamples: int,
    draws: str,
    dataset: str,
    flags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``estimator_accuracy`` (the scoreboard), ``estimator_pairs``, ``truth_separation`` and
    the Markdown (``estimator_accuracy_md``) from the seeds' common-user means (``arena``),
    their user resamples (``replicates``), gt's split-half ``reliability`` and the truth's paired
    tests (``truth_tests``), under one resampling plan of ``resamples`` resamples drawn from the
    dataset's own stream: seeds alone where the seeds' data are independent draws (``draws``),
    seeds and users where they re-split one dataset
    (:class:`~debiaseval.estimation.resampling.ResamplingPlan`). ``verdicts``: one line per
    (metric, k) of the scoreboard (:func:`~debiaseval.estimation.scoreboard.verdict`), with the
    rows' ``flags`` (row -> flag codes)."""
    truth = truth_of(arena["testset"])
    seeds = arena["seed"].nunique()
    user_resamples = int(replicates["replicate"].max()) + 1 if len(replicates) else 0
    plan = ResamplingPlan.of(
        seeds,
        draws=draws,
        resamples=resamples,
        user_resamples=user_resamples,
        rng=run_rng(0, dataset, "scoreboard"),
    )
    board, pairs = scoreboard(
        arena,
        replicates,
        truth=truth,
        families=families,
        plan=plan,
        excluded=excluded,
        reliability=reliability,
        confidence=confidence,
    )
    separation = truth_separation(
        truth_tests,
        truth=truth,
        excluded=excluded,
        alpha=1 - confidence,
        plan=plan,
        truth_means=arena[arena["testset"] == truth],
        truth_replicates=replicates[replicates["testset"] == truth],
    )
    verdicts = []
    for (metric, k), block in board.groupby(["metric", "k"], sort=True):
        same = pairs[(pairs["metric"] == metric) & (pairs["k"] == k)]
        line = verdict(block, same, separation, flags=flags, state_separation=False)
        verdicts.append(f"The estimator arena at {metric}@{k} (estimator_accuracy.md): {line}")
    return {
        "estimator_accuracy": board,
        "estimator_pairs": pairs,
        "truth_separation": separation,
        "estimator_accuracy_md": scoreboard_markdown(
            board, pairs, dataset, separation, flags=flags
        ),
        "verdicts": verdicts,
    }
