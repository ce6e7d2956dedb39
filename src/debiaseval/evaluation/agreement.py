"""Agreement of an estimator with the truth across models (model selection, [URE24] E5, [SAC20]).

An offline estimate is useful for model selection when it orders models as the
truth does: Kendall's τ-b of the two rankings, Pearson's r of the values, and
the mean bias (estimate − truth) over the models.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["agreement"]


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
