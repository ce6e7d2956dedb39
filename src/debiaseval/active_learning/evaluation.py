"""Offline evaluation of active learning: active users, metric changes, Wilcoxon tests.

Carraro & Bridge, *Debiased offline evaluation of active learning in recommender
systems*, FLAIRS-33 2020, §4: a random third of the users are active; a
recommender is trained on K_before and again on K_before ∪ elicited, and both
are evaluated on the test set T, for the active users (user-centric) and for
every user with a relevant test pair (system-wide); strategies are compared
by pairwise two-sided Wilcoxon signed-rank tests on the per-user changes, one test
per seed (a user is one pair), combined over seeds by a median rule valid under
dependence (docs/experiments/e2.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from debiaseval.evaluation.metrics import evaluate_topk

__all__ = [
    "SCOPES",
    "active_users",
    "change_summary",
    "combine_seeds",
    "median_combined_p",
    "metric_changes",
    "pairwise_wilcoxon",
]

SCOPES = ("user", "system")
"""user = the active users (user-centric); system = every user with a relevant test pair."""


def active_users(
    known: pd.DataFrame, *, rng: np.random.Generator, fraction: float = 1 / 3
) -> np.ndarray:
    """A uniform ``fraction`` (round, at least 1) of the users with ≥ 1 known rating, sorted.

    [FLAIRS20] §4: a random third of the users; fixed per seed and shared by every
    method and strategy.
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    candidates = np.unique(known["user"].to_numpy(np.int64))
    if candidates.size == 0:
        raise ValueError("no user has a known rating")
    size = max(1, round(fraction * candidates.size))
    return np.sort(rng.choice(candidates, size=size, replace=False))


def metric_changes(
    before: pd.DataFrame,
    after: pd.DataFrame,
    test: pd.DataFrame,
    *,
    active: np.ndarray,
    ks: Sequence[int],
    metrics: Sequence[str],
    n_items: int,
    positive_threshold: float,
) -> pd.DataFrame:
    """Per-user top-k metrics on ``test`` of the lists ``before`` and ``after`` elicitation.

    One row per scope, evaluated user, metric and k: ``scope`` (``system``: every
    user with a relevant test pair; ``user``: those of them who are ``active``),
    ``user``, ``metric``, ``k``, ``before``, ``after`` ([FLAIRS20] §4).
    """
    kwargs = {"n_items": n_items, "positive_threshold": positive_threshold, "metrics": metrics}
    pre = evaluate_topk(before, test, ks, **kwargs)
    post = evaluate_topk(after, test, ks, **kwargs)  # the same users, in the same order
    system = pre.rename(columns={"value": "before"}).assign(after=post["value"].to_numpy())
    user = system[np.isin(system["user"].to_numpy(), np.asarray(active))]
    out = pd.concat([user.assign(scope="user"), system.assign(scope="system")])
    return out[["scope", "user", "metric", "k", "before", "after"]].reset_index(drop=True)


def change_summary(changes: pd.DataFrame, keys: Sequence[str] = ()) -> pd.DataFrame:
    """Means over users of ``before`` and ``after`` and the % change, per keys, scope, metric, k.

    ``pct_change`` = 100 · (after − before) / before of the user means (NaN when
    before is 0); ``n_users`` counts the users.
    """
    group = [*keys, "scope", "metric", "k"]
    out = (
        changes.groupby(group, sort=False)
        .agg(before=("before", "mean"), after=("after", "mean"), n_users=("user", "size"))
        .reset_index()
    )
    b, a = out["before"].to_numpy(), out["after"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["pct_change"] = np.where(b > 0, 100.0 * (a - b) / b, np.nan)
    out["n_users"] = out["n_users"].astype(np.int64)
    return out


def pairwise_wilcoxon(
    changes: pd.DataFrame,
    strategies: Sequence[str],
    *,
    keys: Sequence[str] = ("method", "scope", "metric", "k"),
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Two-sided Wilcoxon signed-rank tests between strategies, within each seed.

    ``changes`` has ``strategy``, ``seed``, ``user``, the ``keys`` and ``before``,
    ``after``; per group of ``keys`` and per seed, the change after − before of
    strategy a and of strategy b are paired by user, so a user is one pair of one
    test and is never paired with itself across seeds ([FLAIRS20] §4 tests each run),
    and compared with :func:`scipy.stats.wilcoxon` (zero differences dropped, its
    default). When every difference is 0 the statistic is 0 and p = 1.
    ``p_greater`` and ``p_less``: the one-sided tests' p-values that a's changes are greater,
    or less, than b's (the direction a verdict may claim, :func:`combine_seeds`).
    ``mean_difference`` is the mean of change_a − change_b over the paired users;
    ``significant`` = p < ``alpha``. Seeds are combined by :func:`combine_seeds`.
    """
    frame = changes.assign(change=changes["after"] - changes["before"])
    rows = []
    for group, block in frame.groupby([*keys, "seed"], sort=False):
        wide = block.pivot_table(index="user", columns="strategy", values="change", aggfunc="first")
        present = [s for s in strategies if s in wide.columns]
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                pair = wide[[a, b]].dropna()
                x, y = pair[a].to_numpy(), pair[b].to_numpy()
                statistic, p_value, p_greater, p_less = _signed_rank(x, y)
                rows.append(
                    {
                        **dict(zip([*keys, "seed"], group, strict=True)),
                        "strategy_a": a,
                        "strategy_b": b,
                        "statistic": statistic,
                        "p_value": p_value,
                        "p_greater": p_greater,
                        "p_less": p_less,
                        "n_users": np.int64(len(pair)),
                        "mean_difference": float(np.mean(x - y)) if len(pair) else np.nan,
                        "significant": bool(p_value < alpha),
                    }
                )
    columns = [*keys, "strategy_a", "strategy_b", "seed", "statistic", "p_value", "p_greater"]
    columns += ["p_less", "n_users", "mean_difference", "significant"]
    out = pd.DataFrame(rows, columns=columns)
    out["seed"] = out["seed"].astype(np.int64)
    return out


SIGN_FLIP_LIMIT = 13
"""Most pairs for which, with zero differences or tied ones, SciPy's ``wilcoxon`` (method
"auto") takes the exact permutation test over all 2^n sign flips; above it, the normal
approximation."""


def _signed_rank(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """The Wilcoxon signed-rank test of paired ``x`` and ``y``: the two-sided statistic and p,
    and the one-sided p-values that x's values are greater (``p_greater``) and less
    (``p_less``) than y's. Every difference 0: statistic 0 and every p 1.

    The numbers are those of :func:`scipy.stats.wilcoxon` (its defaults: zero differences
    dropped, method "auto"). Where SciPy would run its permutation test (at most
    :data:`SIGN_FLIP_LIMIT` pairs with a zero or a tie), :func:`_sign_flip_test` gives the same
    p-values from one matrix product, where SciPy recomputes the statistic for each of the
    2^n sign flips in Python: 0.7 s a call at n = 13."""
    if np.all(x == y):
        return 0.0, 1.0, 1.0, 1.0
    from scipy.stats import wilcoxon  # lazy: scipy.stats costs 0.5 s

    d = x - y
    nonzero = d[d != 0]
    magnitudes = np.abs(nonzero)
    tied = np.unique(magnitudes).size < magnitudes.size
    if d.size <= SIGN_FLIP_LIMIT and (tied or nonzero.size < d.size):
        return _sign_flip_test(nonzero)
    result = wilcoxon(x, y, alternative="two-sided")
    greater = wilcoxon(x, y, alternative="greater").pvalue
    less = wilcoxon(x, y, alternative="less").pvalue
    return float(result.statistic), float(result.pvalue), float(greater), float(less)


def _sign_flip_test(nonzero: np.ndarray) -> tuple[float, float, float, float]:
    """The exact signed-rank test of the nonzero differences ``nonzero`` over all their sign
    flips, as :func:`scipy.stats.permutation_test` computes it inside ``wilcoxon``: the
    statistic R+ (the sum of the average ranks of |d| over the positive d) of every flip,
    and p the share of flips at least as extreme, within SciPy's tolerance of 100 machine
    epsilons of R+. A zero difference flips to itself, so leaving it out keeps every share.
    Ranks are multiples of 0.5, so every sum is exact in any order."""
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks[nonzero < 0].sum())
    flips = (np.arange(2**nonzero.size)[:, None] >> np.arange(nonzero.size)) & 1
    null = flips.astype(np.float64) @ ranks
    gamma = abs(np.finfo(np.float64).eps * 100 * r_plus)
    less = np.count_nonzero(null <= r_plus + gamma) / null.size
    greater = np.count_nonzero(null >= r_plus - gamma) / null.size
    two_sided = min(1.0, 2 * min(less, greater))
    return min(r_plus, r_minus), float(two_sided), float(greater), float(less)


def median_combined_p(p_values: Sequence[float] | np.ndarray) -> float:
    """One p from the p-values of dependent tests: min(1, K/k · p_(k)), k = ⌈K/2⌉.

    p_(k) is the k-th smallest of the K p-values: with an even K, twice the lower
    median. Valid under any dependence between the tests (Rüschendorf 1982;
    Vovk & Wang, Biometrika 2020): if every test is valid, the count N of p-values
    ≤ kα/K has E[N] ≤ kα, so P(N ≥ k) ≤ α by Markov's inequality. It is below α
    only when at least half of the tests are below about α/2.
    """
    p = np.sort(np.asarray(p_values, dtype=np.float64))
    if p.ndim != 1 or p.size == 0 or np.isnan(p).any() or p[0] < 0 or p[-1] > 1:
        raise ValueError(f"need one or more p-values in [0, 1], got {list(p_values)}")
    k = -(-p.size // 2)
    return float(min(1.0, p.size / k * p[k - 1]))


def combine_seeds(
    tests: pd.DataFrame,
    *,
    keys: Sequence[str] = ("method", "scope", "metric", "k"),
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Per group of ``keys`` and pair of strategies, the per-seed tests of
    :func:`pairwise_wilcoxon` summarised: ``n_seeds``, ``n_significant`` and
    ``share_significant`` (seeds with p < ``alpha``), ``median_p``, ``combined_p``
    (:func:`median_combined_p`, valid although the seeds re-split the same users),
    ``mean_users`` (users per test, mean over seeds), ``mean_difference`` (its mean
    over seeds), ``significant`` = combined_p < ``alpha``, and for the direction of a
    difference: ``n_a_ahead``/``n_b_ahead`` (seeds whose mean difference is above/below 0)
    and ``combined_p_greater``/``combined_p_less`` (the one-sided p-values ``p_greater`` and
    ``p_less`` combined alike).
    """
    group = [*keys, "strategy_a", "strategy_b"]
    frame = tests.assign(
        _a_ahead=tests["mean_difference"] > 0, _b_ahead=tests["mean_difference"] < 0
    )
    out = (
        frame.groupby(group, sort=False)
        .agg(
            n_seeds=("seed", "size"),
            n_significant=("significant", "sum"),
            median_p=("p_value", "median"),
            combined_p=("p_value", median_combined_p),
            mean_users=("n_users", "mean"),
            mean_difference=("mean_difference", "mean"),
            n_a_ahead=("_a_ahead", "sum"),
            n_b_ahead=("_b_ahead", "sum"),
            combined_p_greater=("p_greater", median_combined_p),
            combined_p_less=("p_less", median_combined_p),
        )
        .reset_index()
    )
    for column in ("n_seeds", "n_significant", "n_a_ahead", "n_b_ahead"):
        out[column] = out[column].astype(np.int64)
    out.insert(
        out.columns.get_loc("n_significant") + 1,
        "share_significant",
        out["n_significant"] / out["n_seeds"],
    )
    out["significant"] = out["combined_p"] < alpha
    directions = ["n_a_ahead", "n_b_ahead", "combined_p_greater", "combined_p_less"]
    return out[[c for c in out.columns if c not in directions] + directions]
