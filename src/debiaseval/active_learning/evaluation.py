"""Offline evaluation of active learning: active users, metric changes, Wilcoxon tests.

Carraro & Bridge, *Debiased offline evaluation of active learning in recommender
systems*, FLAIRS-33 2020, §4: a random third of the users are active; a
recommender is trained on K_before and again on K_before ∪ elicited, and both
are evaluated on the test set T, for the active users (user-centric) and for
every user with a relevant test pair (system-wide); strategies are compared
by pairwise two-sided Wilcoxon signed-rank tests on the per-user changes.
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
    """Two-sided Wilcoxon signed-rank tests between strategies on the per-user changes.

    ``changes`` has ``strategy``, ``seed``, ``user``, the ``keys`` and ``before``,
    ``after``; per group of ``keys``, the change after − before of strategy a and
    of strategy b are paired by (seed, user), pooled over seeds, and compared with
    :func:`scipy.stats.wilcoxon` (zero differences dropped, its default). When every
    difference is 0 the statistic is 0 and p = 1. ``significant`` = p < ``alpha``.
    """
    frame = changes.assign(change=changes["after"] - changes["before"])
    rows = []
    for group, block in frame.groupby(list(keys), sort=False):
        wide = block.pivot_table(
            index=["seed", "user"], columns="strategy", values="change", aggfunc="first"
        )
        present = [s for s in strategies if s in wide.columns]
        for i, a in enumerate(present):
            for b in present[i + 1 :]:
                pair = wide[[a, b]].dropna()
                x, y = pair[a].to_numpy(), pair[b].to_numpy()
                if np.all(x == y):
                    statistic, p_value = 0.0, 1.0
                else:
                    from scipy.stats import wilcoxon  # lazy: scipy.stats costs 0.5 s

                    result = wilcoxon(x, y, alternative="two-sided")
                    statistic, p_value = float(result.statistic), float(result.pvalue)
                rows.append(
                    {
                        **dict(zip(keys, group, strict=True)),
                        "strategy_a": a,
                        "strategy_b": b,
                        "statistic": statistic,
                        "p_value": p_value,
                        "n_users": np.int64(len(pair)),
                        "significant": bool(p_value < alpha),
                    }
                )
    columns = [*keys, "strategy_a", "strategy_b", "statistic", "p_value", "n_users", "significant"]
    return pd.DataFrame(rows, columns=columns)
