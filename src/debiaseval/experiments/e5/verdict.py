"""E5's verdict: Kendall's τ of URE and of traditional recall against the true recall
([URE24]; docs/experiments/e5.md, Reading the verdict)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from debiaseval.experiments.verdicts import inert_name, number, seeds_text, signed

__all__ = ["e5_verdict"]


def _tau_text(row: pd.Series) -> str:
    """τ to 2 decimals, or why it is undefined: every model gets the same value (flag
    ``constant``, e.g. traditional recall once K reaches the sampled candidates)."""
    if np.isfinite(row["kendall_tau"]):
        low, high = row.get("tau_low", np.nan), row.get("tau_high", np.nan)
        interval = f" [{number(low, 2)}, {number(high, 2)}]" if np.isfinite(low) else ""
        return number(row["kendall_tau"], 2) + interval
    flags = str(row.get("flags", "") or "").split(",")
    return "undefined (every model scores the same)" if "constant" in flags else "undefined"


def e5_verdict(agreement: pd.DataFrame, estimates: pd.DataFrame, *, dataset: str) -> list[str]:
    """E5's verdict ([URE24]) from ``agreement.parquet`` and ``estimates.parquet``: per
    estimator, Kendall's τ of its model ranking against the reference (the true recall where
    known, else URE) at every K, with the mean bias; over how many seeds and models."""
    where = inert_name(dataset)
    if agreement.empty:
        return [f"On {where}, no agreement with a reference was computed."]
    n_seeds = int(estimates["n_seeds"].max()) if len(estimates) else 0
    names = {"ure": "URE", "traditional": "traditional recall"}
    refs = {"true_recall": "the true recall", "ure": "URE (no truth on this data)"}
    out = []
    for estimator, part in agreement.groupby("estimator", sort=False):
        part = part.sort_values("k")
        reference = part["reference"].iloc[0]
        taus = ", ".join(
            f"{_tau_text(r)} at K = {int(r['k'])} (mean bias {signed(r['mean_bias'])})"
            for _, r in part.iterrows()
        )
        bracket = ""
        if "tau_low" in part and np.isfinite(part["tau_low"]).any():
            bracket = (
                " (in brackets its interval over the seeds, each its own draw of the exposure)"
            )
        out.append(
            f"On {where}, over {seeds_text(n_seeds)} and {int(part['n_models'].max())} models, "
            f"Kendall's τ of the model ranking by {names.get(estimator, inert_name(estimator))} "
            f"against {refs.get(reference, inert_name(reference))}{bracket}: "
            f"{taus}."
        )
    return out
