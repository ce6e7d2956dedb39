"""E1's tables over seeds (rule ``e1_aggregate``): the summary, Kendall's τ, the comparisons,
the scoreboard and the verdict from every seed's tables, and the report of what E1's filters
dropped ([SAC20]; docs/experiments/e1.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from debiaseval.data.filters import dropped_markdown
from debiaseval.estimation.diagnostics import heavy_tailed
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
from debiaseval.evaluation.flags import MIN_USERS
from debiaseval.evaluation.uncertainty import agreement_over_seeds, seed_intervals
from debiaseval.experiments.e1.arena import row_families, scoreboard_tables
from debiaseval.experiments.e1.steps import external_recommenders
from debiaseval.experiments.e1.summary import (
    GROUND_TRUTH,
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
from debiaseval.experiments.e1.verdict import (
    comparisons_markdown,
    e1_verdict,
    truth_separation_notes,
)
from debiaseval.experiments.step_config import StepConfig
from debiaseval.experiments.verdicts import verdict_entries, with_verdict


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


SEED_TABLES = (
    "metrics",
    "comparisons",
    "arena",
    "arena_replicates",
    "reliability",
    "truth_tests",
    "sensitivity",
    "estimators_diagnostics",
)
"""The seeds' tables :func:`aggregate_step` reads, by the file stem :func:`evaluate_step` gives
them (``estimators_diagnostics``: ``estimators.diagnostics.parquet``)."""


@dataclasses.dataclass(frozen=True)
class E1Aggregate(StepConfig):
    """What rule ``e1_aggregate`` reads of the config, in the ``e1`` block's shape cut to the
    keys read (a test set's ``strategy``, a recommender's ``algorithm``, ``tuning``'s
    ``metric`` and ``k``, the estimators' names); ``scoreboard_resamples`` is
    ``scoreboard.resamples``, ``min_users`` the top-level key."""

    BLOCK: ClassVar[str] = "e1"
    confidence: float
    positive_threshold: float
    seeds: int
    mnar_split: dict[str, float]
    mar_split: dict[str, float]
    rho: float
    testsets: dict[str, dict[str, str]]
    recommenders: dict[str, dict[str, str]]
    tuning: dict[str, Any]
    estimators: list[str]
    kendall_exclude: list[str] | None = None
    kendall_groups: dict[str, list[str]] | None = None
    scoreboard_resamples: int = 0
    min_users: int = MIN_USERS

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """The block's values for ``dataset``, each cut to what the step reads."""
        block = config["e1"]
        return {
            **super().values(config, dataset),
            "testsets": {n: {"strategy": s["strategy"]} for n, s in block["testsets"].items()},
            "recommenders": {
                n: {"algorithm": s["algorithm"]} for n, s in block["recommenders"].items()
            },
            "tuning": {"metric": block["tuning"]["metric"], "k": block["tuning"]["k"]},
            "estimators": list(block["estimators"]),
            "scoreboard_resamples": block["scoreboard"]["resamples"],
            "min_users": config["min_users"],
        }


def aggregate_step(
    seeds: Mapping[str, Sequence[pd.DataFrame]],
    diagnostics: Sequence[pd.DataFrame],
    interactions: pd.DataFrame,
    step: E1Aggregate,
    *,
    dataset: str,
    truth: Sequence[pd.DataFrame] = (),
    draws: str = "fixed",
) -> dict[str, Any]:
    """Rule ``e1_aggregate``: the tables of ``OUTPUTS`` (Markdown ones as text, by file stem).

    ``seeds``: each seed's tables of :func:`evaluate_step`, by stem (:data:`SEED_TABLES`; a
    stem left out counts as no tables), beside the test sets' ``diagnostics``.

    ``summary``: per row the mean, the t interval over seeds (``ci_low``/``ci_high``) and the
    mean per-seed bootstrap bounds (``boot_low``/``boot_high``) at ``step.confidence``, both
    in the metric's range, with ``flags`` (:func:`~debiaseval.experiments.e1.summary.summary_flags`:
    short lists, fewer than ``step.min_users`` users, out of range, heavy-tailed weights from
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
    (
        metrics,
        comparisons,
        arena,
        arena_replicates,
        reliability,
        truth_tests,
        sensitivity,
        estimator_diagnostics,
    ) = (seeds.get(stem, ()) for stem in SEED_TABLES)
    per_seed = pd.concat([*metrics, *truth]).reset_index(drop=True)
    keys = ["recommender", "testset", "metric", "k"]
    block = step.params()  # the block's shape, for summary_about, kendall_* and e1_verdict
    confidence = step.confidence
    summary = summary_table(per_seed).merge(
        seed_intervals(per_seed, keys, confidence=confidence), on=keys, how="left"
    )
    heavy = heavy_tailed(_concat(estimator_diagnostics, ["estimator", "pareto_k"]))
    summary = summary_flags(summary, per_seed, min_users=step.min_users, heavy_tail=heavy)
    tests = [frame for frame in comparisons if len(frame)]
    agreement = pd.DataFrame(columns=COMPARISONS_COLUMNS)
    if tests:
        seeds = pd.concat(tests, ignore_index=True)
        agreement = agreement_over_seeds(seeds, ["testset", "metric", "k"], alpha=1 - confidence)
        agreement[GAMMA_COLUMNS] = gamma_star_over_seeds(seeds, agreement)
    kendall = kendall_table(summary, kendall_groups(block), kendall_excluded(block))
    checks = testsets_table(pd.concat(diagnostics))
    names = [GROUND_TRUTH, *step.testsets]
    flags = (
        summary[summary["flags"] != ""]
        .groupby("testset", sort=False)["flags"]
        .agg(lambda codes: ",".join(dict.fromkeys(c for row in codes for c in row.split(","))))
    )
    board = scoreboard_tables(
        _concat(arena, SCORED_COLUMNS),
        _concat(arena_replicates, REPLICATE_COLUMNS),
        _concat(reliability, RELIABILITY_COLUMNS),
        _concat(truth_tests, TRUTH_TEST_COLUMNS),
        families=row_families(step.testsets, step.estimators),
        excluded=kendall_excluded(block),
        confidence=confidence,
        resamples=step.scoreboard_resamples,
        draws=draws,
        dataset=dataset,
        flags=flags.to_dict(),
    )
    arena_lines = board.pop("verdicts")
    about = summary_about(interactions, block, external_recommenders(block))
    if draws == "independent":  # the data line describes the first seed's draw
        about[0] += " Each seed draws its own data (docs/datasets.md): the first seed's sizes."
    about += arena_lines
    bounds = sensitivity_over_seeds(_concat(sensitivity, ["seed", *SENSITIVITY_COLUMNS]), summary)
    separation = board["truth_separation"]
    found = verdict_entries(
        e1_verdict(
            summary,
            agreement,
            block,
            dataset=dataset,
            separation=separation,
            arena=arena_lines,
            excluded=kendall_excluded(block),
        )
    )
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
            agreement,
            dataset,
            confidence=confidence,
            verdict_md=found["verdict_md"],
            separation=separation,
        ),
        **found,
        **board,
        "sensitivity": bounds,
        "sensitivity_md": sensitivity_markdown(bounds, agreement, dataset, confidence=confidence),
    }


def _concat(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    parts = [frame for frame in frames if len(frame)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(columns))
