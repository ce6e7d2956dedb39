"""Can the truth separate the models? Paired tests of every ranked pair on the truth
(docs/estimators.md, Can the truth separate the models?).

Kendall's τ against a truth that cannot tell the recommenders apart measures noise, and no row
can then be named best. Whether it can is decided pair by pair, from paired user-level tests on
the truth, pooled only across independent draws:

- **independent draws** (each seed its own data, :mod:`debiaseval.data.draws`): each seed's
  paired t-test over users (:func:`~debiaseval.estimation.seed_scores.truth_tests`) gives a
  signed z; Stouffer's combination Σ z_s / √S (Stouffer et al. 1949; Whitlock 2005) tests the
  pair over the S draws;
- **one fixed dataset** (real data: every seed re-splits the same users' ratings, so the
  seeds are not independent tests): the seed-averaged difference under the two-level
  bootstrap of :class:`~debiaseval.estimation.resampling.ResamplingPlan` (seeds, and users
  once for all seeds), whose two-sided percentile p-value tests the pair.

Holm's correction (Holm 1979) runs over the ranked pairs of each (metric, k): the recommenders
of ``excluded`` (sanity baselines such as Random) are left out. "gt separates k of n pairs" is
the number whose Holm-adjusted p is below α. Each seed's own Holm-corrected verdict is counted
beside (``n_seeds_significant``), for the tables; it decides nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from debiaseval.estimation.resampling import ResamplingPlan, seed_cube
from debiaseval.evaluation.uncertainty import holm

__all__ = ["SEPARATION_COLUMNS", "separated_counts", "separation_method", "truth_separation"]

SEPARATION_COLUMNS = [
    "metric",
    "k",
    "truth",
    "leader",
    "other",
    "mean_diff",
    "p_value",
    "p_holm",
    "separated",
    "n_seeds",
    "n_seeds_significant",
    "method",
]
"""Columns of :func:`truth_separation`: per ranked pair, the recommender ahead on the truth
(``leader``, by the pooled statistic's sign), the mean difference over seeds (leader − other),
the pooled p-value, Holm-adjusted over the block's ranked pairs, whether it is below α, the
seeds tested and how many of them find the pair after their own Holm correction, and the
``method`` (``stouffer`` over independent draws, ``bootstrap`` on fixed data)."""


SEPARATION_METHODS = {
    "stouffer": "paired user-level tests pooled over independent draws",
    "bootstrap": "the two-level bootstrap over seeds and users",
}
"""How each ``method`` of :func:`truth_separation` tests a pair, in the verdicts' words."""


def separation_method(separation: pd.DataFrame) -> str:
    """How the pairs of ``separation`` (rows of :func:`truth_separation`) were tested."""
    return SEPARATION_METHODS[str(separation["method"].iloc[0])]


def _ranked(tests: pd.DataFrame, excluded: Sequence[str]) -> pd.DataFrame:
    skip = set(excluded)
    keep = ~tests["recommender_a"].isin(skip) & ~tests["recommender_b"].isin(skip)
    return tests[keep]


def _seed_holm(tests: pd.DataFrame) -> np.ndarray:
    """Each seed's Holm-adjusted p-values over its ranked pairs (the rows of ``tests`` of one
    block), in ``tests``' order."""
    out = np.full(len(tests), np.nan)
    seeds = tests["seed"].to_numpy()
    p = tests["p_value"].to_numpy(dtype=np.float64)
    for seed in np.unique(seeds):
        at = np.flatnonzero(seeds == seed)
        out[at] = holm(p[at])
    return out


def _stouffer(block: pd.DataFrame) -> pd.DataFrame:
    """Per pair of ``block`` (one metric@k's per-seed tests), Stouffer's z over its seeds:
    z_s = sign(d_s) Φ⁻¹(1 − p_s / 2) (computed as −Φ⁻¹(p_s / 2), exact for the tiny p of
    clear pairs), Z = Σ z_s / √S, p = 2 Φ(−|Z|)."""
    p = block["p_value"].to_numpy(dtype=np.float64)
    d = block["mean_diff"].to_numpy(dtype=np.float64)
    finite = np.isfinite(p) & np.isfinite(d)
    z = np.where(finite, -np.sign(d) * ndtri(np.clip(p, 1e-300, 1.0) / 2), 0.0)
    frame = block.assign(_z=z, _n=finite.astype(np.int64))
    pooled = frame.groupby(["recommender_a", "recommender_b"], sort=False).agg(
        z=("_z", "sum"),
        n=("_n", "sum"),
        mean_diff=("mean_diff", "mean"),
        n_seeds=("seed", "nunique"),
        n_sig=("_sig", "sum"),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(pooled["n"] > 0, pooled["z"] / np.sqrt(pooled["n"]), np.nan)
    pooled["stat"] = stat
    pooled["p_value"] = np.where(np.isfinite(stat), 2 * ndtr(-np.abs(stat)), np.nan)
    return pooled.reset_index()


def _bootstrap(
    block: pd.DataFrame, observed: pd.DataFrame, replicates: pd.DataFrame, plan: ResamplingPlan
) -> pd.DataFrame:
    """Per pair of ``block``, the seed-averaged truth difference under ``plan``'s two-level
    resamples (the truth's own means per seed, ``observed``, and their user resamples,
    ``replicates``), and its two-sided percentile p-value 2 min(P*(d ≤ 0), P*(d ≥ 0)), counting
    the observed once."""
    names = sorted(set(observed["recommender"]))
    cube = seed_cube(
        observed,
        replicates,
        "value",
        seeds=np.sort(observed["seed"].unique()),
        recommenders=names,
        n_replicates=int(plan.replicate.max()),
    )
    rows = []
    pairs = block.groupby(["recommender_a", "recommender_b"], sort=False)
    for (a, b), part in pairs:
        if a not in names or b not in names:
            continue
        diff = cube[:, :, names.index(a)] - cube[:, :, names.index(b)]
        has = np.isfinite(diff)
        draws = plan.ratio(np.where(has, diff, 0.0), has.astype(np.float64))
        rest = draws[1:][np.isfinite(draws[1:])]
        p = np.nan
        if rest.size and np.isfinite(draws[0]):
            tail = min((rest <= 0).sum(), (rest >= 0).sum())
            p = min(1.0, 2 * (tail + 1) / (rest.size + 1))
        rows.append(
            (a, b, draws[0], float(draws[0]), part["seed"].nunique(), int(part["_sig"].sum()), p)
        )
    columns = ["recommender_a", "recommender_b", "stat", "mean_diff", "n_seeds", "n_sig", "p_value"]
    return pd.DataFrame(rows, columns=columns)


def truth_separation(
    tests: pd.DataFrame,
    *,
    truth: str,
    excluded: Sequence[str] = (),
    alpha: float = 0.05,
    plan: ResamplingPlan | None = None,
    truth_means: pd.DataFrame | None = None,
    truth_replicates: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Whether the truth separates each ranked pair, per metric@k (module docstring).

    ``tests``: the seeds' paired tests on the truth
    (:data:`~debiaseval.estimation.seed_scores.TRUTH_TEST_COLUMNS`); with a ``plan`` of fixed
    data, the truth's own means per seed (``truth_means``: seed, recommender, metric, k, value)
    and their user resamples (``truth_replicates``: the same with replicate), the pair is
    tested by the two-level bootstrap, else by Stouffer's combination of the seeds' tests.
    Returns :data:`SEPARATION_COLUMNS`.
    """
    rows = []
    fixed = plan is not None and plan.draws == "fixed" and truth_means is not None
    ranked = _ranked(tests, excluded)
    for (metric, k), block in ranked.groupby(["metric", "k"], sort=True):
        block = block.assign(_sig=_seed_holm(block) < alpha)
        if fixed:
            means, reps = (
                frame[(frame["metric"] == metric) & (frame["k"] == k)]
                for frame in (truth_means, truth_replicates)
            )
            pooled, method = _bootstrap(block, means, reps, plan), "bootstrap"
        else:
            pooled, method = _stouffer(block), "stouffer"
        p_holm = holm(pooled["p_value"].to_numpy(dtype=np.float64))
        for j, r in enumerate(pooled.itertuples(index=False)):
            ahead = r.stat >= 0 if np.isfinite(r.stat) else r.mean_diff >= 0
            leader, other = (
                (r.recommender_a, r.recommender_b) if ahead else (r.recommender_b, r.recommender_a)
            )
            sign = 1.0 if ahead else -1.0
            rows.append(
                (
                    metric,
                    int(k),
                    truth,
                    leader,
                    other,
                    sign * r.mean_diff,
                    r.p_value,
                    p_holm[j],
                    bool(p_holm[j] < alpha),
                    int(r.n_seeds),
                    int(r.n_sig),
                    method,
                )
            )
    out = pd.DataFrame(rows, columns=SEPARATION_COLUMNS)
    return out.astype(
        {"k": np.int16, "n_seeds": np.int64, "n_seeds_significant": np.int64, "separated": bool}
    )


def separated_counts(separation: pd.DataFrame, metric: str, k: int) -> tuple[int, int]:
    """(k separated, n ranked pairs) of one metric@k of :func:`truth_separation`."""
    part = separation[(separation["metric"] == metric) & (separation["k"] == k)]
    return int(part["separated"].sum()), len(part)
