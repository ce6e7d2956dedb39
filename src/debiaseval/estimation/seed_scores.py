"""The estimator arena's inputs from one seed (``e1_evaluate``): every row's and the truth's
means over the same users with their user-level resamples, gt's split-half reliability, and
the truth's own paired tests (docs/estimators.md, The scoreboard).

Every row of E1's test-set column (gt on synthetic, FULL, SKEW, WTD, WTD_H, the weighting
estimators) estimates, per recommender and seed, the metric's value under full exposure. The
truth is the MAR ground truth ``gt`` on real data and the exact value from the full rating
matrix (``TRUE``) on ``synthetic``. Only like is scored against like: Recall and the
per-relevant-item DCG (:data:`~debiaseval.evaluation.metrics.GAINS`). Each row and its truth are
averaged over the same users (:func:`common_means`): those with a positive held-out pair and a
relevant truth item and, for a sampled test set, a relevant test pair.

The user resamples are Poisson bootstrap counts drawn from one stream that does not depend on
the seed (:data:`USER_STREAM`): resample r gives every user the same count in every seed. On
real data, where every seed re-splits the same users' ratings, the scoreboard then resamples
the users once for all seeds, as a new study would meet them once (docs/estimators.md, What
varies).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from debiaseval.data.splits import run_rng
from debiaseval.evaluation.metrics import GAINS, BlockValues
from debiaseval.evaluation.uncertainty import bootstrap_means, paired_t_tests

__all__ = [
    "RELIABILITY_COLUMNS",
    "REPLICATE_COLUMNS",
    "SCORED_COLUMNS",
    "SPLIT_HALVES",
    "TRUTH_TEST_COLUMNS",
    "USER_STREAM",
    "common_means",
    "kendall_tau_b",
    "spearman_brown_tau",
    "split_half_reliability",
    "truth_tests",
    "user_rng",
]

SCORED_COLUMNS = [
    "recommender",
    "seed",
    "testset",
    "metric",
    "k",
    "value",
    "truth",
    "n_users",
    "low",
    "high",
    "diff_low",
    "diff_high",
]
"""Columns of a seed's common-user means (:func:`common_means`, ``arena.parquet``): the row's
and the truth's means over the same users, the row's percentile interval over user resamples
(``low``, ``high``) and that of its difference from the truth, the two resampled jointly
(``diff_low``, ``diff_high``). The truth's own rows (``testset`` = the truth) hold its mean over
all its users in both ``value`` and ``truth``."""

REPLICATE_COLUMNS = ["recommender", "seed", "testset", "metric", "k", "replicate", "value", "truth"]
"""Columns of a seed's user resamples of :data:`SCORED_COLUMNS`' means
(``arena_replicates.parquet``): replicate r of every cell, the users resampled as in every
other seed."""

RELIABILITY_COLUMNS = ["seed", "metric", "k", "tau", "tau_full", "n_splits", "n_recommenders"]
"""Columns of a seed's split-half reliability of gt (:func:`split_half_reliability`)."""

TRUTH_TEST_COLUMNS = [
    "seed",
    "metric",
    "k",
    "recommender_a",
    "recommender_b",
    "n_users",
    "mean_diff",
    "t",
    "p_value",
]
"""Columns of a seed's paired tests of every two recommenders on the truth (:func:`truth_tests`,
``truth_tests.parquet``)."""

USER_STREAM = "arena-users"
"""The label of the user resamples' stream (:func:`user_rng`), the same in every seed."""

SPLIT_HALVES = 1000
"""Random halvings of gt's users per seed (:func:`split_half_reliability`)."""


def user_rng() -> np.random.Generator:
    """The stream of the arena's user resamples: the same in every seed and job
    (``run_rng(0, USER_STREAM)``), so resample r counts each user alike across seeds."""
    return run_rng(0, USER_STREAM)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b of the rows of ``x`` and ``y`` (… × n, NaN-free), vectorised over the
    leading axes; NaN where either row is constant or n < 2."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    a, b = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., a] - x[..., b]), np.sign(y[..., a] - y[..., b])
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum(-1) / np.sqrt((sx * sx).sum(-1) * (sy * sy).sum(-1))
    return np.where(np.isfinite(tau), tau, np.nan)


def spearman_brown_tau(tau_half: np.ndarray | float) -> np.ndarray:
    """The split-half τ stepped up to the full sample (Spearman 1910; Brown 1910): τ mapped to
    a correlation r = sin(πτ/2) (Greiner's relation, exact for bivariate normal data), then
    2r / (1 + r), then back to τ = (2/π) arcsin; NaN where r ≤ −1 or τ is NaN."""
    r = np.sin(np.pi * np.asarray(tau_half, dtype=np.float64) / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        full = np.where(r > -1, 2 * r / (1 + r), np.nan)
    return 2 / np.pi * np.arcsin(np.clip(full, -1.0, 1.0))


def _cells(
    per_user: Mapping[str, Mapping[str, BlockValues]],
    truth: Mapping[str, BlockValues],
    held: np.ndarray,
    truth_name: str,
) -> list[tuple[str, str, tuple[str, int], np.ndarray, np.ndarray, np.ndarray]]:
    """Every scored cell: (recommender, row, block, users, row values, truth values) over the
    users the row, the truth and the held-out part all have (the blocks of :data:`GAINS`);
    then the truth's own cells over all its users (every block)."""
    cells = []
    n_users = held.size
    for rec, by_row in per_user.items():
        reference = truth.get(rec)
        if reference is None:
            continue
        t_users = np.asarray(reference.users, dtype=np.int64)
        t_at = {block: j for j, block in enumerate(reference.blocks)}
        t_lookup = np.full(n_users, -1, dtype=np.int64)
        t_lookup[t_users] = np.arange(t_users.size)
        for name, values in by_row.items():
            if name == truth_name:
                continue
            users = np.asarray(values.users, dtype=np.int64)
            keep = held[users] & (t_lookup[users] >= 0)
            where = t_lookup[users[keep]]
            for j, block in enumerate(values.blocks):
                if block[0] in GAINS and block in t_at:
                    cells.append(
                        (
                            rec,
                            name,
                            block,
                            users[keep],
                            values.values[j][keep],
                            reference.values[t_at[block]][where],
                        )
                    )
        for block, j in t_at.items():  # every metric of the truth: its separation tests
            own = reference.values[j]
            cells.append((rec, truth_name, block, t_users, own, own))
    return cells


def common_means(
    per_user: Mapping[str, Mapping[str, BlockValues]],
    truth: Mapping[str, BlockValues],
    *,
    seed: int,
    heldout_users: np.ndarray,
    n_users: int,
    truth_name: str,
    resamples: int = 1000,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each row's and its truth's means over the same users, per recommender and block, with
    their user resamples.

    ``per_user``: recommender -> row -> :class:`~debiaseval.evaluation.metrics.BlockValues`;
    ``truth``: recommender -> the truth's BlockValues (gt's on real data, TRUE's on synthetic);
    ``heldout_users``: the users with a positive held-out pair. For every row but the truth and
    every block of :data:`GAINS`, the users the row, the truth and the held-out part all have;
    and the truth's own mean over all its users, in every block. ``resamples`` Poisson
    bootstrap resamples of the users (:func:`~debiaseval.evaluation.uncertainty.bootstrap_means`,
    from ``rng``, default :func:`user_rng`: the same counts in every seed) give every cell's row
    and truth means jointly, hence the row's interval at ``confidence`` and that of its difference
    from the truth. Returns the means (:data:`SCORED_COLUMNS`) and the resamples
    (:data:`REPLICATE_COLUMNS`; none when ``resamples`` is 0).
    """
    held = np.zeros(n_users, dtype=bool)
    held[np.asarray(heldout_users, dtype=np.int64)] = True
    cells = _cells(per_user, truth, held, truth_name)
    # one column per distinct series: a truth over the same users serves every row that has
    # them (FULL and the estimators share the held-out users), and the truth's own cells'
    # value is their truth
    columns: dict[tuple[object, ...], int] = {}
    where = np.empty((len(cells), 2), dtype=np.int64)
    series = []
    for c, (rec, name, block, users, v, t) in enumerate(cells):
        keys = (("row", rec, name, block), ("truth", rec, block, users.tobytes()))
        if name == truth_name:
            keys = (keys[1], keys[1])
        for side, (key, data) in enumerate(zip(keys, (v, t), strict=True)):
            if key not in columns:
                columns[key] = len(series)
                series.append((users, data))
            where[c, side] = columns[key]
    matrix = np.full((n_users, len(series)), np.nan, dtype=np.float32)
    for j, (users, data) in enumerate(series):
        matrix[users, j] = data
    counts = np.array([cell[3].size for cell in cells], dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        sums = np.array([(cell[4].sum(), cell[5].sum()) for cell in cells]).reshape(-1, 2)
        means = sums / counts[:, None]
    draws = bootstrap_means(matrix, resamples=resamples, rng=rng or user_rng())
    value_draws, truth_draws = draws[:, where[:, 0]], draws[:, where[:, 1]]
    q = [0.5 - confidence / 2, 0.5 + confidence / 2]
    low = high = diff_low = diff_high = np.full(len(cells), np.nan)
    if resamples and len(cells):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a cell no resample drew
            low, high = np.nanquantile(value_draws, q, axis=0)
            diff_low, diff_high = np.nanquantile(value_draws - truth_draws, q, axis=0)
    keys = pd.DataFrame(
        [(rec, seed, name, block[0], block[1]) for rec, name, block, *_ in cells],
        columns=SCORED_COLUMNS[:5],
    )
    arena = keys.assign(
        value=means[:, 0] if len(cells) else [],
        truth=means[:, 1] if len(cells) else [],
        n_users=counts,
        low=low,
        high=high,
        diff_low=diff_low,
        diff_high=diff_high,
    )
    arena = arena.astype({"k": np.int16, "n_users": np.int64, "seed": np.int64})
    replicates = keys.iloc[np.tile(np.arange(len(cells)), resamples)].reset_index(drop=True)
    replicates = replicates.assign(
        replicate=np.repeat(np.arange(resamples, dtype=np.int32), len(cells)),
        value=value_draws.ravel().astype(np.float32),
        truth=truth_draws.ravel().astype(np.float32),
    )
    replicates = replicates.astype({"k": np.int16, "seed": np.int64})
    return arena[SCORED_COLUMNS], replicates[REPLICATE_COLUMNS]


def _halves(rng: np.random.Generator, n_splits: int, n: int) -> np.ndarray:
    """``n_splits`` × ``n`` random halvings as float32 0/1 (each user in the left half with
    probability 1/2): one random bit a cell, unpacked from the generator's raw 64-bit words."""
    words = -(-n // 64)
    raw = rng.bit_generator.random_raw(n_splits * words).astype("<u8")
    bits = np.unpackbits(raw.view(np.uint8).reshape(n_splits, 8 * words), axis=1)
    return bits[:, :n].astype(np.float32)


def split_half_reliability(
    truth: Mapping[str, BlockValues],
    excluded: Sequence[str],
    *,
    seed: int,
    rng: np.random.Generator,
    n_splits: int = SPLIT_HALVES,
    chunk: int = 100,
) -> pd.DataFrame:
    """gt's split-half reliability: per block of :data:`GAINS`, Kendall's τ-b between the
    recommender rankings on two random halves of gt's users (each user in either with
    probability 1/2), averaged over ``n_splits`` splits drawn from ``rng`` (the ``excluded``
    recommenders left out; every recommender's values over the same users, as gt's are).
    Each half has half the users, so ``tau`` is a lower bound on how well gt agrees with
    another gt of its full size; ``tau_full`` is its Spearman–Brown step-up
    (:func:`spearman_brown_tau`). One product per ``chunk`` splits (the right half's sums are
    the totals less the left's), in float32. Returns :data:`RELIABILITY_COLUMNS`."""
    names = [r for r in truth if r not in set(excluded)]
    rows = []
    if len(names) >= 2:
        first = truth[names[0]]
        n = first.users.size
        blocks = [j for j, block in enumerate(first.blocks) if block[0] in GAINS]
        if n >= 2 and blocks:
            values = np.stack(
                [np.stack([truth[r].values[j] for r in names], axis=1) for j in blocks], axis=1
            ).reshape(n, -1)
            values = values.astype(np.float32)  # users × (blocks · recommenders)
            totals = values.sum(axis=0, dtype=np.float64)
            taus = np.empty((n_splits, len(blocks)))
            for start in range(0, n_splits, chunk):
                left = _halves(rng, min(chunk, n_splits - start), n)
                sums = (left @ values).astype(np.float64)
                size = left.sum(axis=1, dtype=np.float64)[:, None]
                with np.errstate(invalid="ignore", divide="ignore"):
                    a = (sums / size).reshape(len(left), len(blocks), len(names))
                    b = ((totals - sums) / (n - size)).reshape(len(left), len(blocks), len(names))
                taus[start : start + len(left)] = kendall_tau_b(a, b)
            for column, j in enumerate(blocks):
                tau = taus[:, column]
                finite = np.isfinite(tau)
                mean = float(tau[finite].mean()) if finite.any() else np.nan
                block = first.blocks[j]
                rows.append(
                    (
                        seed,
                        block[0],
                        block[1],
                        mean,
                        float(spearman_brown_tau(mean)),
                        int(finite.sum()),
                        len(names),
                    )
                )
    out = pd.DataFrame(rows, columns=RELIABILITY_COLUMNS)
    return out.astype(
        {"k": np.int16, "seed": np.int64, "n_splits": np.int64, "n_recommenders": np.int64}
    )


def truth_tests(truth: Mapping[str, BlockValues], *, seed: int) -> pd.DataFrame:
    """The paired t-tests over users of every two recommenders on the truth, per block (every
    recommender's truth over the same users, as gt's and TRUE's are):
    the evidence from which the scoreboard decides whether the truth separates the models
    (:mod:`~debiaseval.estimation.separation`). Returns :data:`TRUTH_TEST_COLUMNS`."""
    names = list(truth)
    rows = []
    if len(names) >= 2:
        first = truth[names[0]]
        for j, block in enumerate(first.blocks):
            values = np.stack([truth[r].values[j] for r in names], axis=1)  # users × recs
            test = paired_t_tests(values)
            for a, b, n, d, t, p in zip(
                test["a"],
                test["b"],
                test["n"],
                test["mean_diff"],
                test["t"],
                test["p_value"],
                strict=True,
            ):
                rows.append(
                    (
                        seed,
                        block[0],
                        block[1],
                        names[a],
                        names[b],
                        int(n),
                        float(d),
                        float(t),
                        float(p),
                    )
                )
    out = pd.DataFrame(rows, columns=TRUTH_TEST_COLUMNS)
    return out.astype({"k": np.int16, "seed": np.int64, "n_users": np.int64})
