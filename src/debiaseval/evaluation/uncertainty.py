"""Uncertainty of top-k results: t intervals over seeds, bootstrap intervals over users,
paired tests between recommenders with Holm's correction (docs/experiments/e1.md, Uncertainty).

* :func:`t_interval`: Student's t interval of a mean over seeds, ``mean ± t_{n-1} · sd/√n``.
* :func:`range_t_interval`: the same interval computed on a scale that maps the metric's
  range (:func:`metric_range`) onto the real line (logit for [a, b], log for [a, ∞)) and
  mapped back, so that it never leaves the range; :func:`within_range` keeps any other
  interval (the percentile bootstrap's) inside it.
* :func:`bootstrap_means` / :func:`bootstrap_interval`: the percentile bootstrap of a mean
  over users (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993, §13.3), every
  resample drawn as a vector of Poisson(1) counts (:func:`poisson_weights`), so that the
  resampled means of all columns, whatever users each has, come from one matrix product
  ``counts @ values``, in chunks that bound the memory.
* :func:`paired_t_test`: the paired t-test of every two columns over the rows both have.
  Per-user values are bounded, with many zeros and ties; the metric compared is their mean,
  and with tens of users or more the mean difference is close to normal, so the t-test tests
  exactly the hypothesis of interest (equal means). The Wilcoxon signed-rank test tests
  another one (a symmetric shift of the median of differences), drops or splits the many
  zero differences, and Urbano, Lima & Hanjalic (SIGIR 2019, *Statistical significance
  testing in information retrieval: an empirical analysis of type I, type II and type III
  errors*) found the t-test the more reliable of the two on IR metrics.
* :func:`holm`: Holm's step-down adjustment of p-values (Holm, *Scand. J. Statist.* 1979).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

__all__ = [
    "COMPARISON_COLUMNS",
    "INTERVAL_NOTE",
    "METRIC_RANGES",
    "MIN_T_SEEDS",
    "agreement_over_seeds",
    "bootstrap_interval",
    "bootstrap_means",
    "compare_recommenders",
    "holm",
    "interval_cell",
    "metric_range",
    "paired_t_test",
    "paired_t_tests",
    "poisson_counts",
    "poisson_weights",
    "range_t_interval",
    "seed_interval_note",
    "seed_intervals",
    "shown_interval",
    "significance",
    "t_interval",
    "within_range",
]


def significance(confidence: float) -> float:
    """The significance level that goes with coverage ``confidence``: 1 − ``confidence``,
    rounded to 12 decimals, so that 0.95 gives 0.05 and not 0.050000000000000044."""
    return round(1.0 - confidence, 12)


_CHUNK_CELLS = 1 << 23
"""Cells of one chunk of resample counts (resamples × users, float32: 32 MiB): fewer, larger
products pass fewer times over the values (at 138,000 users, 1,000 resamples and 96 columns,
1.19 CPU-s against 1.28 with 16 MiB chunks and 2.7 with 4 MiB; the same bytes)."""


def t_interval(
    values: np.ndarray, *, confidence: float = 0.95, axis: int = -1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and Student's t interval ``mean ± t_{(1+confidence)/2, n-1} · sd / √n`` along ``axis``.

    NaN values are left out; the bounds are NaN where fewer than two values remain,
    and equal to the mean where the values do not vary. Returns ``(mean, low, high)``.
    """
    from scipy.stats import t as student_t  # lazy: scipy.stats costs 0.5 s

    x = np.asarray(values, dtype=np.float64)
    n = np.sum(~np.isnan(x), axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nansum(x, axis=axis) / n
        dev = np.where(np.isnan(x), 0.0, x - np.expand_dims(mean, axis))
        sd = np.sqrt(np.sum(dev**2, axis=axis) / (n - 1))
        half = student_t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    half = np.where(n >= 2, half, np.nan)
    return mean, mean - half, mean + half


_UNIT = (0.0, 1.0)
_POSITIVE = (0.0, math.inf)
_SIGNED_UNIT = (-1.0, 1.0)

METRIC_RANGES: dict[str, tuple[float, float]] = {
    # top-k metrics (evaluation.metrics.TOPK_METRICS) and E5's Recall@K estimates: shares
    **dict.fromkeys(
        [
            "recall",
            "precision",
            "map",
            "ndcg",
            "hitrate",
            "avgdcg",
            "auc",
            "coverage",
            "true_recall",
            "traditional_recall",
            "ure",
            "score",
        ],
        _UNIT,
    ),
    # errors and gains that are never negative
    **dict.fromkeys(["dcg", "mse", "mae", "rmse"], _POSITIVE),
    # rank and linear correlations
    **dict.fromkeys(["tau", "kendall_tau", "pearson_r"], _SIGNED_UNIT),
}
"""The range of every metric an interval is printed for: [0, 1] for the top-k metrics,
shares and hit rates, [0, ∞) for errors and DCG, [-1, 1] for correlations. A metric not
named here (a difference, a % difference, a bias) is unbounded (:func:`metric_range`)."""

MIN_T_SEEDS = 3
"""Fewest seeds whose t interval the tables show: with 2 seeds it has one degree of freedom
(t_{0.975, 1} = 12.7, so it spans about ±9 sd); below this the tables show the per-seed
bootstrap interval over users instead (:func:`shown_interval`)."""


def metric_range(metric: str) -> tuple[float, float]:
    """(lower, upper) bounds of ``metric`` (:data:`METRIC_RANGES`; unbounded if unknown)."""
    return METRIC_RANGES.get(str(metric).lower(), (-math.inf, math.inf))


def range_t_interval(
    values: np.ndarray,
    *,
    confidence: float = 0.95,
    lower: float | np.ndarray = -math.inf,
    upper: float | np.ndarray = math.inf,
    axis: int = -1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and a t interval over ``axis`` that stays in [``lower``, ``upper``].

    The interval of :func:`t_interval` is computed on a scale g that maps the range onto the
    real line and mapped back: ``g⁻¹(g(m) ± t_{(1+confidence)/2, n-1} · g'(m) · sd/√n)``, the
    delta-method standard error on g's scale (the "logit" interval of a proportion, Korn &
    Graubard, *Analysis of Health Surveys*, 1999, §3.2; R's ``survey::svyciprop``). g is
    ``log((x-a)/(b-x))`` for a finite range [a, b] (the logit of a share; on [-1, 1] it is
    twice Fisher's z = atanh), ``log(x-a)`` for [a, ∞), ``-log(b-x)`` for (-∞, b] and the
    identity for no bounds, where the interval is :func:`t_interval`'s. Bounds broadcast
    against the mean (one range per row). The interval holds the mean and is asymmetric
    near a bound: it shrinks towards the bound, as the spread of a bounded mean does.

    Boundary cases: values that do not vary give ``[m, m]`` (also at a bound, e.g. every
    seed's hit rate 1); fewer than two values give NaN bounds; a mean outside the range
    (an estimator whose values leave it), or on a bound with values that vary (only values
    outside the range allow it), gives NaN bounds: no interval in range can honestly hold
    it. No warning is raised. Returns ``(mean, low, high)``.
    """
    from scipy.special import expit  # lazy: the module loads without scipy

    mean, t_low, t_high = t_interval(values, confidence=confidence, axis=axis)
    a = np.broadcast_to(np.asarray(lower, dtype=np.float64), mean.shape)
    b = np.broadcast_to(np.asarray(upper, dtype=np.float64), mean.shape)
    half = (t_high - t_low) / 2  # t · sd/√n, NaN for fewer than two values
    low, high = np.full(mean.shape, np.nan), np.full(mean.shape, np.nan)
    flat = half == 0
    low[flat], high[flat] = mean[flat], mean[flat]
    inside = (half > 0) & (mean > a) & (mean < b)
    both, above, below = np.isfinite(a) & np.isfinite(b), np.isfinite(a), np.isfinite(b)
    with np.errstate(all="ignore"):
        # [a, b]: g(x) = log((x-a)/(b-x)), g'(x) = (b-a)/((x-a)(b-x)); back: a + (b-a)·expit
        case = inside & both
        m, lo, hi, h = mean[case], a[case], b[case], half[case]
        centre, spread = np.log((m - lo) / (hi - m)), h * (hi - lo) / ((m - lo) * (hi - m))
        low[case] = lo + (hi - lo) * expit(centre - spread)
        high[case] = lo + (hi - lo) * expit(centre + spread)
        # [a, ∞): g(x) = log(x-a), g'(x) = 1/(x-a)
        case = inside & above & ~both
        m, lo, h = mean[case], a[case], half[case]
        low[case] = lo + (m - lo) * np.exp(-h / (m - lo))
        high[case] = lo + (m - lo) * np.exp(h / (m - lo))
        # (-∞, b]: g(x) = -log(b-x), g'(x) = 1/(b-x)
        case = inside & below & ~both
        m, hi, h = mean[case], b[case], half[case]
        low[case] = hi - (hi - m) * np.exp(h / (hi - m))
        high[case] = hi - (hi - m) * np.exp(-h / (hi - m))
    case = inside & ~above & ~below
    low[case], high[case] = t_low[case], t_high[case]
    return mean, low, high


def within_range(
    mean: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    *,
    lower: float | np.ndarray = -math.inf,
    upper: float | np.ndarray = math.inf,
) -> tuple[np.ndarray, np.ndarray]:
    """An interval of an in-range quantity cut to the range: ``[max(low, lower),
    min(high, upper)]``, NaN where the ``mean`` lies outside the range.

    For the percentile bootstrap of a mean over users (:func:`bootstrap_interval`), whose
    bounds leave the range only when per-user values do (a weighting estimator's): the
    quantity estimated lies in the range, so the cut interval holds it exactly when the
    uncut one does (the same coverage). An estimate outside the range has no honest
    interval in it, and gets none (the tables flag it ``out_of_range``)."""
    m = np.asarray(mean, dtype=np.float64)
    a, b = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        keep = (m >= a) & (m <= b)
        cut_low = np.where(keep, np.clip(np.asarray(low, dtype=np.float64), a, b), np.nan)
        cut_high = np.where(keep, np.clip(np.asarray(high, dtype=np.float64), a, b), np.nan)
    return cut_low, cut_high


@functools.cache
def _poisson_table() -> np.ndarray:
    """Poisson(1) quantiles at the midpoints of 2^16 equal slices of [0, 1] (float32): a
    uniform 16-bit integer looked up in it is a Poisson(1) count, each probability within
    2^-16 of the exact one (counts above 8 are cut: their mass is 1e-6)."""
    levels = 1 << 16
    pmf = np.exp(-1.0) / np.array([math.factorial(k) for k in range(20)])
    table = np.searchsorted(np.cumsum(pmf), (np.arange(levels) + 0.5) / levels, side="right")
    return table.astype(np.float32)


@functools.cache
def _poisson_steps() -> np.ndarray:
    """The 16-bit values at which :func:`_poisson_table` steps up, one per unit of count
    (uint16, ascending): a value's count is the number of steps at or below it."""
    table = _poisson_table()
    return np.searchsorted(table, np.arange(1, int(table[-1]) + 1), side="left").astype(np.uint16)


def poisson_counts(slices: np.ndarray) -> np.ndarray:
    """``_poisson_table()[slices]`` for uint16 ``slices`` as uint8 counts, by comparisons:
    the number of :func:`_poisson_steps` at or below each value (the table is a staircase),
    a few vectorised passes where a gather from the table converts and checks an index per
    value."""
    steps = _poisson_steps()
    counts = np.greater_equal(slices, steps[0]).view(np.uint8)
    above = np.empty(slices.shape, dtype=bool)
    for step in steps[1:]:
        np.greater_equal(slices, step, out=above)
        counts += above.view(np.uint8)
    return counts


def poisson_weights(rng: np.random.Generator, resamples: int, n: int) -> np.ndarray:
    """A ``resamples × n`` float32 matrix of independent Poisson(1) counts drawn from ``rng``.

    Each row takes ``ceil(n / 4)`` raw 64-bit draws (four 16-bit slices each, the last
    ones of a row unused), so a row's counts depend on ``rng`` and its position only:
    drawing the rows in blocks of any size gives the same matrix. A slice's count is
    ``_poisson_table()[slice]`` (:func:`poisson_counts`).
    """
    per_row = -(-n // 4)
    raw = rng.bit_generator.random_raw(resamples * per_row)
    slices = np.ascontiguousarray(raw, dtype="<u8").view("<u2").reshape(resamples, 4 * per_row)
    return poisson_counts(slices)[:, :n].astype(np.float32)


def bootstrap_means(
    values: np.ndarray,
    *,
    resamples: int,
    rng: np.random.Generator,
    chunk_cells: int = _CHUNK_CELLS,
) -> np.ndarray:
    """Means of ``resamples`` Poisson bootstrap resamples of the rows of ``values`` (n × m).

    A resample gives every row an independent Poisson(1) count w_i (:func:`poisson_weights`),
    the number of times it is drawn; a column's resampled mean is ``Σ w_i x_i / Σ w_i`` over
    the rows it has (NaN = not in the column's sample). This is the Poisson bootstrap
    (Hanley & MacGibbon, *Comput. Methods Programs Biomed.* 2006; Chamandy et al., Google
    2012), the multinomial bootstrap of Efron & Tibshirani (1993) with a resample size that
    varies around n: both give the same intervals to O(1/n). Its counts need no bincount,
    and one count per row serves every column whatever rows it has, so the columns of
    several samples (E1's test sets) share one draw and one product ``counts @ values``.
    The values are centred on each column's mean before the product, which runs in float32
    (its rounding then bounded by the spread of the values, not their size) on one BLAS
    thread (the bytes do not depend on the job's threads), ``chunk_cells // n`` resamples at
    a time. A resample that draws none of a column's rows gives NaN there. Returns a
    ``resamples × m`` float64 array (float32 ``values`` are taken as they are).
    """
    x = np.asarray(values)
    x = x[:, None] if x.ndim == 1 else x
    n, m = x.shape
    out = np.full((resamples, m), np.nan)
    if resamples == 0 or n == 0:
        return out
    present = ~np.isnan(x)
    # One weight-sum column per distinct set of rows (E1: one per test set): the columns'
    # packed presence bits as single (void) values, whose unique is a sort of m byte strings
    # (np.unique(axis=0) gives the same, in the same order, many times slower).
    packed = np.ascontiguousarray(np.packbits(present, axis=0).T)
    _, first, column_pattern = np.unique(
        packed.view(np.dtype((np.void, packed.shape[1]))).ravel(),
        return_index=True,
        return_inverse=True,
    )
    patterns = packed[first]
    column_pattern = column_pattern.ravel()
    # [centred values | weight-sum columns], built in place in float32 (0 where absent).
    products = np.zeros((n, m + len(patterns)), dtype=np.float32)
    values_part = products[:, :m]
    np.copyto(values_part, x, casting="same_kind", where=present)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = values_part.sum(axis=0, dtype=np.float64) / present.sum(axis=0)
    centre = np.nan_to_num(centre).astype(np.float32)
    np.subtract(values_part, centre, out=values_part, where=present)
    products[:, m:] = present[:, first]
    from threadpoolctl import threadpool_limits

    step = max(1, min(resamples, chunk_cells // n))
    sums = np.empty((resamples, m + len(patterns)))
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, resamples, step):
            size = min(step, resamples - start)
            sums[start : start + size] = poisson_weights(rng, size, n) @ products
    with np.errstate(invalid="ignore", divide="ignore"):
        weight = sums[:, m + column_pattern]
        out[:] = np.where(weight > 0, centre.astype(np.float64) + sums[:, :m] / weight, np.nan)
    return out


def bootstrap_interval(
    values: np.ndarray,
    *,
    resamples: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
    chunk_cells: int = _CHUNK_CELLS,
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the mean of every column of ``values`` (n × m).

    The ``(1-confidence)/2`` and ``(1+confidence)/2`` quantiles of :func:`bootstrap_means`
    (Efron & Tibshirani 1993, §13.3) over the resamples that drew some of the column's
    rows. Returns ``(low, high)``, each of length m; NaN when ``resamples`` is 0 or the
    column has no rows.
    """
    x = np.asarray(values)
    m = 1 if x.ndim == 1 else x.shape[1]
    if resamples == 0 or x.shape[0] == 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    means = bootstrap_means(x, resamples=resamples, rng=rng, chunk_cells=chunk_cells)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no rows
        low, high = np.nanquantile(means, [0.5 - confidence / 2, 0.5 + confidence / 2], axis=0)
    return low, high


def paired_t_tests(values: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`paired_t_test` of many families at once: ``values`` is (families ×) rows ×
    columns, NaN = missing; every array returned but ``a`` and ``b`` is families × pairs
    (pairs alone for 2-D ``values``). The same arithmetic as one test per family, in one pass
    of numpy (and ``scipy.special.stdtr``, which ``scipy.stats.t.sf`` calls)."""
    from scipy.special import stdtr

    x = np.asarray(values, dtype=np.float64)
    a, b = np.triu_indices(x.shape[-1], k=1)
    present = ~np.isnan(x)
    both = present[..., a] & present[..., b]
    n = both.sum(axis=-2)
    if np.isfinite(x).all():  # E1's case: every recommender over the same users
        d = x[..., a] - x[..., b]
    else:
        d = np.where(both, np.nan_to_num(x[..., a]) - np.nan_to_num(x[..., b]), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d.sum(axis=-2) / n
        dev = np.where(both, d - np.expand_dims(mean, -2), 0.0)
        sd = np.sqrt((dev**2).sum(axis=-2) / (n - 1))
        # Differences equal up to rounding have no spread: treat as exactly constant.
        flat = sd <= 1e-12 * np.maximum(np.abs(mean), 1.0)
        t = np.where(flat, np.where(mean == 0, 0.0, np.sign(mean) * np.inf), mean / sd * np.sqrt(n))
        # two-sided p = 2 · P(T_{n-1} > |t|), as scipy.stats.t.sf(|t|, n - 1) computes it
        p = np.where(flat, np.where(mean == 0, 1.0, 0.0), 2 * stdtr(n - 1, -np.abs(t)))
    few = n < 2
    t, p = np.where(few, np.nan, t), np.where(few, np.nan, p)
    return {"a": a, "b": b, "n": n.astype(np.int64), "mean_diff": mean, "t": t, "p_value": p}


def paired_t_test(values: np.ndarray) -> dict[str, np.ndarray]:
    """Paired t-test of every two columns a < b of ``values`` (rows × columns, NaN = missing).

    Row i pairs the values of the same user; each pair of columns is tested over
    the rows where both are present. The statistic is ``d̄ / (s_d / √n)`` with
    d = column a − column b, two-sided p from Student's t with n − 1 degrees of
    freedom. Where every difference is equal (s_d = 0), p is 1 if they are 0 and
    0 otherwise; with fewer than two rows, t and p are NaN. Returns arrays over
    the pairs, in the order of ``itertools.combinations``: ``a``, ``b`` (column
    indices), ``n`` (rows), ``mean_diff``, ``t``, ``p_value``. Many families at once:
    :func:`paired_t_tests`.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"paired_t_test takes rows × columns, got shape {x.shape}")
    return paired_t_tests(x)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979), one family of tests per row.

    With the m p-values of a family sorted, p_(1) ≤ … ≤ p_(m), the adjusted value of p_(i) is
    ``max_{j ≤ i} min(1, (m − j + 1) · p_(j))``; rejecting where it is below α
    controls the family-wise error rate at α. NaN p-values are left out of the
    family and stay NaN. ``p_values``: one family (1-D), or families along the last axis.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return np.full(p.shape, np.nan)
    order = np.argsort(p, axis=-1, kind="stable")  # NaN last
    m = np.sum(~np.isnan(p), axis=-1, keepdims=True)
    scaled = np.minimum(1.0, (m - np.arange(p.shape[-1])) * np.take_along_axis(p, order, -1))
    out = np.empty(p.shape)
    np.put_along_axis(out, order, np.maximum.accumulate(scaled, axis=-1), -1)
    return out


COMPARISON_COLUMNS = [
    "recommender_a",
    "recommender_b",
    "n_users",
    "mean_diff",
    "t",
    "p_value",
    "p_holm",
]
"""Columns of :func:`compare_recommenders` (after the caller's key columns)."""


def compare_recommenders(values: np.ndarray, names: list[str]) -> pd.DataFrame:
    """Paired t-tests (:func:`paired_t_test`) of every two recommenders, Holm-adjusted.

    ``values``: users × recommenders (NaN where a recommender has no value for a
    user), columns named by ``names``. One family of tests: ``p_holm`` is
    :func:`holm` over all its pairs. ``mean_diff`` is a's mean minus b's over
    the users both have; columns :data:`COMPARISON_COLUMNS`. ``values`` of
    families × users × recommenders test every family (:func:`paired_t_tests`, Holm
    within each): rows family by family, then pair by pair.
    """
    x = np.asarray(values, dtype=np.float64)
    families = 1 if x.ndim == 2 else x.shape[0]
    test = paired_t_tests(x)
    labels = np.asarray(names, dtype=object)
    return pd.DataFrame(
        {
            "recommender_a": pd.Series(np.tile(labels[test["a"]], families), dtype=str),
            "recommender_b": pd.Series(np.tile(labels[test["b"]], families), dtype=str),
            "n_users": test["n"].ravel(),
            "mean_diff": test["mean_diff"].ravel(),
            "t": test["t"].ravel(),
            "p_value": test["p_value"].ravel(),
            "p_holm": holm(test["p_value"]).ravel(),
        },
        columns=COMPARISON_COLUMNS,
    )


def seed_intervals(
    per_seed: pd.DataFrame,
    keys: list[str],
    *,
    confidence: float,
    value: str = "value",
    bounds: tuple[float, float] | Callable[[str], tuple[float, float]] | None = None,
) -> pd.DataFrame:
    """Per ``keys``: the t interval over seeds of ``value`` in the metric's range
    (:func:`range_t_interval`, the range of each row's ``metric`` by :func:`metric_range`
    when ``metric`` is a key, else none) as ``ci_low``/``ci_high``, and the means over seeds
    of the per-seed bootstrap bounds ``boot_low``/``boot_high`` cut to that range
    (:func:`within_range`; NaN when absent). Where the mean over seeds lies outside the
    range, every bound is NaN. Rows in ``keys`` order, sorted (a NaN key is a group too).

    ``value``: the column the interval is of (E2's ``pct_change``); ``bounds``: its range
    for every row, or a function of a row's ``metric`` giving it, where the quantity is not
    the metric of :data:`METRIC_RANGES` (a % change lies in [-100, ∞); E3's losses weigh by
    the rating). The replicates need not be seeds: E3's are the draws of O."""
    grouped = per_seed.groupby(keys, sort=True, dropna=False)
    width = int(grouped.size().max()) if len(per_seed) else 0
    out = grouped.size().rename("n").reset_index()
    # Seed means laid out as groups × seeds (NaN-padded), then one vectorised t interval.
    slot = grouped.cumcount().to_numpy()
    group = grouped.ngroup().to_numpy()
    table = np.full((len(out), max(width, 1)), np.nan)
    table[group, slot] = per_seed[value].to_numpy(dtype=np.float64)
    if isinstance(bounds, tuple):
        ranges = np.tile(np.asarray(bounds, dtype=np.float64), (len(out), 1))
    elif "metric" in keys:
        of = metric_range if bounds is None else bounds
        ranges = np.array([of(m) for m in out["metric"]], dtype=np.float64).reshape(-1, 2)
    else:
        ranges = np.tile([-math.inf, math.inf], (len(out), 1))
    lower, upper = ranges[:, 0], ranges[:, 1]
    mean, out["ci_low"], out["ci_high"] = range_t_interval(
        table, confidence=confidence, lower=lower, upper=upper
    )
    boot = {
        bound: grouped[bound].mean().to_numpy() if bound in per_seed else np.full(len(out), np.nan)
        for bound in ("boot_low", "boot_high")
    }
    out["boot_low"], out["boot_high"] = within_range(
        mean, boot["boot_low"], boot["boot_high"], lower=lower, upper=upper
    )
    return out.drop(columns="n")


def shown_interval(
    ci_low: np.ndarray,
    ci_high: np.ndarray,
    boot_low: np.ndarray,
    boot_high: np.ndarray,
    n_seeds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The interval a table prints and a figure draws as a cell's main interval: the t
    interval over seeds from :data:`MIN_T_SEEDS` seeds on, else the per-seed bootstrap
    interval over users (NaN bounds where the chosen interval is absent)."""
    enough = np.asarray(n_seeds) >= MIN_T_SEEDS
    low = np.where(enough, np.asarray(ci_low, dtype=np.float64), boot_low)
    high = np.where(enough, np.asarray(ci_high, dtype=np.float64), boot_high)
    return low, high


def agreement_over_seeds(per_seed: pd.DataFrame, keys: list[str], *, alpha: float) -> pd.DataFrame:
    """How many seeds agree on each comparison (rows of :func:`compare_recommenders` with a
    ``seed`` column): per ``keys`` + the two recommenders, ``n_seeds``, ``mean_diff`` (mean
    over seeds), ``n_a_better``/``n_b_better`` (seeds where the Holm-adjusted p is below
    ``alpha``, by the sign of the difference), and ``max_p_holm`` (the least significant seed).
    """
    by = [*keys, "recommender_a", "recommender_b"]
    frame = per_seed.assign(
        _sig_a=(per_seed["p_holm"] < alpha) & (per_seed["mean_diff"] > 0),
        _sig_b=(per_seed["p_holm"] < alpha) & (per_seed["mean_diff"] < 0),
    )
    out = (
        frame.groupby(by, sort=False, observed=True)
        .agg(
            n_seeds=("seed", "nunique"),
            mean_diff=("mean_diff", "mean"),
            n_a_better=("_sig_a", "sum"),
            n_b_better=("_sig_b", "sum"),
            max_p_holm=("p_holm", "max"),
        )
        .reset_index()
    )
    for column in ("n_seeds", "n_a_better", "n_b_better"):
        out[column] = out[column].astype(np.int64)
    return out


INTERVAL_NOTE = (
    "mean [t interval over seeds] ⟨bootstrap interval over users, the seeds' bounds averaged⟩; "
    f"with fewer than {MIN_T_SEEDS} seeds only the bootstrap interval is shown (a t interval "
    "over 2 seeds has one degree of freedom and reaches about 9 sd either side). Every "
    "interval stays in the metric's range: the t interval is computed on the logit scale for "
    "a share in [0, 1] (log for [0, ∞), Fisher's z for [-1, 1]) and mapped back; the "
    "percentile bootstrap interval is cut to the range, which leaves its coverage unchanged; "
    "an estimate outside the range (⇅) shows no interval"
)
"""How :func:`interval_cell` reads, for the Markdown summaries' headers."""


def interval_cell(
    mean: float,
    ci_low: float,
    ci_high: float,
    boot_low: float,
    boot_high: float,
    n_seeds: float = MIN_T_SEEDS,
    *,
    digits: int = 4,
    sign: bool = False,
) -> str:
    """``mean [ci_low, ci_high] ⟨boot_low, boot_high⟩`` to ``digits`` decimals (4 by
    default; the mean with its sign with ``sign``), for the Markdown summaries; the t
    interval only from :data:`MIN_T_SEEDS` seeds on (``n_seeds``), and an interval that is
    NaN (one seed, no bootstrap, a mean outside the range) left out."""

    def show(x: float, signed: bool = False) -> str:
        x = round(float(x), digits) + 0.0  # + 0.0: no "-0.0000"
        return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"

    if np.isnan(mean):
        return ""
    text = show(mean, sign)
    if n_seeds >= MIN_T_SEEDS and not (np.isnan(ci_low) or np.isnan(ci_high)):
        text += f" [{show(ci_low)}, {show(ci_high)}]"
    if not (np.isnan(boot_low) or np.isnan(boot_high)):
        text += f" ⟨{show(boot_low)}, {show(boot_high)}⟩"
    return text


def seed_interval_note(
    n: float,
    *,
    confidence: float,
    source: str,
    bounds: str,
    scale: str | None = None,
    over: str = "seeds",
    why: str = "",
) -> str:
    """The sentence beside a table whose cells are ``mean [t interval over the n replicates]``
    (:func:`interval_cell` without a bootstrap interval): which interval, at which ``confidence``
    and where that comes from (``source``, e.g. "level `e2.confidence`"), on which ``scale``
    (default: logit for "[0, 1]", else log) it stays in the range ``bounds`` (text, e.g.
    "[0, ∞)"); with fewer than :data:`MIN_T_SEEDS` replicates, that the cells show the mean
    alone and ``why`` no other interval stands in (e.g. "E4 keeps no interval over users").
    ``over``: what the replicates are (seeds, draws of O)."""
    scale = scale or ("logit" if bounds == "[0, 1]" else "log")
    if n >= MIN_T_SEEDS:
        return (
            f"In square brackets, the {confidence:.3g} t interval ({source}) of the mean over the "
            f"{n:g} {over}, computed on the {scale} scale of its range {bounds} and mapped "
            "back, so that it never leaves the range."
        )
    return (
        f"Cells are means over {n:g} {over}, without an interval: a t interval over fewer "
        f"than {MIN_T_SEEDS} {over} has at most one degree of freedom (a half-width of about 9 sd)"
        f"{'; ' + why if why else ''}. With {MIN_T_SEEDS} or more {over}, each cell shows its "
        f"{confidence:.3g} t interval ({source}) within its range {bounds}."
    )
