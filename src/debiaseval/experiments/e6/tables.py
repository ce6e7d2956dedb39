"""E6's tables over seeds (rule ``e6_aggregate``): every seed's scores, weights, snapshots and
lists stacked, the scores' flags, and the Markdown of the scores over time ([MYT14];
docs/experiments/e6.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from debiaseval.evaluation.flags import MIN_USERS, join_flags, legend, marked
from debiaseval.experiments.e6.steps import RECOMMENDERS, TABLES
from debiaseval.experiments.step_config import StepConfig

__all__ = [
    "aggregate",
    "markdown",
    "score_flags",
]


def markdown(scores: pd.DataFrame, dataset: str) -> str:
    """The score-vs-t table: one row per (recommender, weighting, p), one column per t."""
    frame = scores.copy()
    flags = frame["flags"] if "flags" in frame else pd.Series("", index=frame.index)
    frame["cell"] = marked(
        [
            f"{s:.4f} [{lo:.4f}, {hi:.4f}]"
            for s, lo, hi in zip(frame["score"], frame["ci_low"], frame["ci_high"], strict=True)
        ],
        flags,
    )
    lines = [
        f"# E6 on {dataset}: leave-one-out hit rate over time [interval]",
        "",
        "p = number of items whose KL weight may move (0 = unweighted); t0 = the reference. "
        "In brackets, the interval of `e6.interval` at `e6.confidence`, always within [0, 1]: the "
        "Wilson score interval (binomial), the normal approximation cut to [0, 1] (wald) or "
        "the percentile bootstrap over users (bootstrap).",
        "",
    ]
    for seed, part in frame.groupby("seed", sort=True):
        table = part.pivot_table(
            index=["recommender", "weighting", "p"], columns="t", values="cell", aggfunc="first"
        )
        rank = {name: i for i, name in enumerate(RECOMMENDERS)}
        keys = sorted(
            table.index,
            key=lambda key: (rank.get(key[0], len(rank)), key[0], key[1] != "none", key[2]),
        )
        table = table.loc[keys]
        ts = list(table.columns)
        lines += [f"## Seed {seed}", ""]
        lines.append("| recommender | weighting | p | " + " | ".join(f"t{t}" for t in ts) + " |")
        lines.append("|---|---|---|" + "---|" * len(ts))
        for (rec, weighting, p), row in table.iterrows():
            lines.append(f"| {rec} | {weighting} | {p} | " + " | ".join(row[t] for t in ts) + " |")
        lines.append("")
    notes = legend(flags)
    return "\n".join(lines) + (notes if notes else "")


@dataclasses.dataclass(frozen=True)
class E6Aggregate(StepConfig):
    """What rule ``e6_aggregate`` reads of the config: ``min_users``, the top-level key."""

    BLOCK: ClassVar[str] = "e6"
    min_users: int = MIN_USERS

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """The top-level ``min_users``."""
        return {"min_users": config["min_users"]}


def aggregate(
    runs: Sequence[Mapping[str, pd.DataFrame]], step: E6Aggregate
) -> dict[str, pd.DataFrame]:
    """Rule ``e6_aggregate``: the tables of several runs (:func:`run_seed`) stacked in the
    given order; ``scores`` gains ``flags`` (:func:`score_flags`, at ``step.min_users``)."""
    min_users = step.min_users
    tables = {name: pd.concat([run[name] for run in runs], ignore_index=True) for name in TABLES}
    tables["scores"] = score_flags(tables["scores"], tables["snapshots"], min_users=min_users)
    return tables


def score_flags(
    scores: pd.DataFrame, snapshots: pd.DataFrame, *, min_users: int = MIN_USERS
) -> pd.DataFrame:
    """``scores`` with a ``flags`` column (:mod:`debiaseval.evaluation.flags`): ``few_users``
    where the snapshot's leave-one-out evaluates fewer than ``min_users`` users
    (``snapshots.n_evaluated``: a small dataset, an early snapshot, ``sample_users``), and
    ``constant`` where the score is undefined (no user evaluated: empty)."""
    evaluated = snapshots.set_index(["seed", "t"])["n_evaluated"]
    n = evaluated.reindex(pd.MultiIndex.from_frame(scores[["seed", "t"]])).to_numpy()
    return scores.assign(
        flags=join_flags(
            {"few_users": ~(n >= min_users), "constant": scores["score"].isna().to_numpy()}
        )
    )
