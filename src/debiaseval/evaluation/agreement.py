"""Agreement of an estimator with the truth across models (model selection, [URE24] E5, [SAC20]).

An offline estimate is useful for model selection when it orders models as the
truth does: Kendall's τ-b of the two rankings, Pearson's r of the values, and
the mean bias (estimate − truth) over the models. :func:`kendall_variants` names the ranked
sets of a table of τ computed with and without groups of models ([SAC20] Tables 3–4).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

__all__ = ["agreement", "kendall_variants"]


def agreement(estimate: np.ndarray, truth: np.ndarray) -> dict[str, float | int]:
    """``kendall_tau`` (τ-b), ``pearson_r``, ``mean_bias`` = mean(estimate − truth), ``n_models``.

    Pairs where either value is NaN are left out. With fewer than two models,
    or a constant side, τ and r are NaN (undefined), never an error.
    """
    e = np.asarray(estimate, dtype=np.float64)
    t = np.asarray(truth, dtype=np.float64)
    if e.shape != t.shape or e.ndim != 1:
        raise ValueError(
            f"estimate and truth must be 1-D of equal length, got {e.shape}, {t.shape}"
        )
    keep = ~(np.isnan(e) | np.isnan(t))
    e, t = e[keep], t[keep]
    tau = r = np.nan
    if e.size >= 2 and np.ptp(e) > 0 and np.ptp(t) > 0:
        # lazy: scipy.stats costs 0.5 s of every job that imports this module
        from scipy.stats import ConstantInputWarning, kendalltau, pearsonr

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstantInputWarning)
            tau = float(kendalltau(e, t).statistic)
            r = float(pearsonr(e, t).statistic)
    bias = float(np.mean(e - t)) if e.size else np.nan
    return {"kendall_tau": tau, "pearson_r": r, "mean_bias": bias, "n_models": int(e.size)}


def kendall_variants(kendall: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The ranked sets of a Kendall table, labelled for people, each with its rows.

    First "with G1, G2, ..." (every recommender ranked: the ``with_group`` rows of the
    first group, which all groups share), then "without G" for each group; with the
    single default group MF, "with MF" and "without MF". A group none of whose members is
    ranked (no MF recommender, say) ranks the same set without it: it is left out, and with
    no group left the one variant is "with all". ``kendall`` has the columns testset, metric,
    k, group, with_group and n_recommenders (E1's ``kendall.parquet``, whose Markdown and figure
    both show these variants).
    """
    groups = list(dict.fromkeys(kendall["group"]))
    if not groups:
        return []
    with_rows = kendall[(kendall["group"] == groups[0]) & kendall["with_group"].astype(bool)]
    ranked = with_rows.set_index(["testset", "metric", "k"])["n_recommenders"]
    without = {}
    for group in groups:
        rows = kendall[(kendall["group"] == group) & ~kendall["with_group"].astype(bool)]
        n = rows.set_index(["testset", "metric", "k"])["n_recommenders"]
        if (n.reindex(ranked.index) != ranked).any():  # the group's members were ranked
            without[group] = rows
    label = f"with {', '.join(without)}" if without else "with all"
    return [(label, with_rows), *((f"without {g}", rows) for g, rows in without.items())]
