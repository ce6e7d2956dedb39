"""One seed's per-user values: their table, the bootstrap intervals of their means and the
paired tests between recommenders (docs/experiments/e1.md, Uncertainty).

Every recommender's per-user values of a test set are kept compact
(:class:`~debiaseval.evaluation.metrics.BlockValues`) until the seed's tables are made:
:func:`seed_uncertainty` adds the percentile bootstrap interval of every mean (one Poisson
count per user and resample, shared by every test set, recommender, metric and k) and the
paired t-tests of every two recommenders with Holm's correction; :func:`per_user_table` stacks
the values into ``metrics_per_user``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from debiaseval.data.splits import run_rng
from debiaseval.evaluation.metrics import BlockValues, block_columns
from debiaseval.evaluation.uncertainty import bootstrap_interval, compare_recommenders

__all__ = ["per_user_table", "seed_uncertainty"]


def seed_uncertainty(
    metrics: pd.DataFrame,
    per_user: Mapping[str, Mapping[str, BlockValues]],
    *,
    seed: int,
    resamples: int,
    confidence: float,
) -> dict[str, pd.DataFrame]:
    """Bootstrap intervals and paired tests of one seed (docs/experiments/e1.md).

    ``metrics``: :func:`evaluate_recommenders`' table (with ``seed``); ``per_user``:
    recommender -> test set -> per-user values (:class:`BlockValues`), every recommender over
    the same users of a test set (its users with a relevant pair) and in the test set's
    (metric, k) blocks (a weighting estimator has only some). Adds to ``metrics`` the percentile
    bootstrap interval over users (:func:`bootstrap_interval`, ``resamples`` resamples
    drawn from ``run_rng(seed, "bootstrap")``: one Poisson count per user and resample,
    shared by every test set, recommender, metric and k; NaN when ``resamples`` is 0).
    ``comparisons``: per test set, metric and k, the paired t-test of every two recommenders
    over their users, Holm's correction over the pairs (:func:`compare_recommenders`). The
    per-user table is :func:`per_user_table`'s.
    """
    names = list(per_user)
    testsets = list(per_user[names[0]]) if names else []
    blocks = {t: per_user[names[0]][t].blocks for t in testsets}
    tables = []
    for testset in testsets:
        parts = [per_user[name][testset] for name in names]
        if any(part.blocks != blocks[testset] for part in parts):
            raise ValueError(f"{testset}: the recommenders' values are not in the same blocks")
        tables.append((parts[0].users, np.stack([part.values for part in parts])))
    low, high = _bootstrap_bounds(tables, resamples, run_rng(seed, "bootstrap"), confidence)
    keys = ["recommender", "testset", "metric", "k"]
    cells = [(t, r, m, k) for t in testsets for r in names for m, k in blocks[t]]
    bounds = pd.DataFrame(cells, columns=["testset", "recommender", "metric", "k"]).assign(
        boot_low=low, boot_high=high
    )
    bounds = bounds.astype({"k": metrics["k"].dtype} if len(metrics) else {})
    metrics = metrics.merge(bounds, on=keys, how="left")
    return {
        "metrics": metrics,
        "comparisons": _comparisons(tables, testsets, names, blocks, seed=seed),
    }


def per_user_table(
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
    blocks: Mapping[str, Sequence[tuple[str, int]]],
    *,
    seed: int,
) -> pd.DataFrame:
    """``comparisons``: per test set (its values in ``tables``: recommenders × blocks × users)
    and block, the paired t-tests of every two recommenders, Holm within the block
    (:func:`compare_recommenders`, all blocks of a test set in one call)."""
    if not tables or not any(blocks.values()):
        return pd.DataFrame()
    out = pd.concat(
        [compare_recommenders(np.moveaxis(values, 0, -1), list(names)) for _, values in tables],
        ignore_index=True,
    )
    pairs = len(names) * (len(names) - 1) // 2
    rows = [(t, m, k) for t in testsets for m, k in blocks[t] for _ in range(pairs)]
    out.insert(0, "seed", np.full(len(out), seed))
    out.insert(1, "testset", pd.Series([t for t, _, _ in rows], dtype=str))
    out.insert(2, "metric", pd.Series([m for _, m, _ in rows], dtype=str))
    out.insert(3, "k", np.array([k for _, _, k in rows], dtype=np.int16))
    return out


def _bootstrap_bounds(
    tables: Sequence[tuple[np.ndarray, np.ndarray]],
    resamples: int,
    rng: np.random.Generator,
    confidence: float,
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
    return bootstrap_interval(wide, resamples=resamples, rng=rng, confidence=confidence)
