"""E6's verdict: the constant recommenders' drift, unweighted and with KL weights
([MYT14]; docs/experiments/e6.md, Reading the verdict)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from debiaseval.experiments.verdicts import (
    and_list,
    in_seeds,
    inert_name,
    number,
    seeds_text,
    signed,
)

__all__ = ["e6_drifts", "e6_verdict"]

_CONSTANT = ("g1", "g2")


def e6_drifts(scores: pd.DataFrame, snapshots: pd.DataFrame) -> pd.DataFrame:
    """Per seed, constant recommender and weighting (``p``: 0 = unweighted), the score's drift
    from the first snapshot to the last, ``drift`` = score(last) − score(first), with
    ``degenerate`` where ``p`` reaches every item present at the last snapshot (``snapshots``'
    ``n_items``): every weight is then free, the weights reproduce the first period's item
    marginal, and a constant list keeps its first score by construction."""
    rows = scores[scores["recommender"].isin(_CONSTANT)]
    rows = rows.assign(p=np.where(rows["weighting"] == "none", 0, rows["p"]))
    first, last = rows["t"].min(), rows["t"].max()
    keys = ["seed", "recommender", "p"]
    ends = rows[rows["t"].isin([first, last])].pivot_table(
        index=keys, columns="t", values="score", aggfunc="first"
    )
    out = ends.reset_index()[keys]
    out["drift"] = (ends[last] - ends[first]).to_numpy() if last != first else 0.0
    present = snapshots[snapshots["t"] == last].set_index("seed")["n_items"]
    items = present.reindex(out["seed"]).to_numpy(np.float64)
    out["degenerate"] = (out["p"] > 0) & (out["p"].to_numpy() >= items)
    return out.dropna(subset=["drift"]).reset_index(drop=True)


def _e6_weighted(drifts: pd.DataFrame) -> str:
    """What the non-degenerate weightings of one recommender show: in how many seeds each
    shrinks |drift| below the unweighted one's."""
    plain = drifts[drifts["p"] == 0].set_index("seed")["drift"].abs()
    weighted = drifts[(drifts["p"] > 0) & ~drifts["degenerate"]]
    if plain.empty or weighted.empty:
        return "no KL weighting with fewer than every item free ran, so nothing here tests them"
    shrinks = weighted["drift"].abs().to_numpy() < plain.reindex(weighted["seed"]).to_numpy()
    counts = weighted.assign(_shrinks=shrinks).groupby("p")["_shrinks"].agg(["sum", "size"])
    return "the weights shrink |drift| " + and_list(
        [f"{in_seeds(k, n)} at p = {int(p)}" for p, (k, n) in counts.iterrows()]
    )


def _e6_degenerate(drifts: pd.DataFrame) -> str:
    """The clause that names the degenerate weightings, left out of the evidence."""
    ps = sorted({int(p) for p in drifts.loc[drifts["degenerate"], "p"]})
    if not ps:
        return ""
    return (
        f"; p = {and_list([str(p) for p in ps])} (every item) is left out: with every weight "
        "free, the weights hold the first period's item marginal and the constant list its "
        "first score by construction"
    )


def _e6_ends(scores: pd.DataFrame, rec: str, p: int) -> str:
    """`` (score [interval] → score [interval])`` of one seed's ``rec`` unweighted (``p`` 0)
    or with KL weights on ``p`` items, at the first and the last snapshot."""
    variant = np.where(scores["weighting"] == "none", 0, scores["p"])
    rows = scores[(scores["recommender"] == rec) & (variant == p)]
    ends = rows[rows["t"].isin([scores["t"].min(), scores["t"].max()])].sort_values("t")
    path = " → ".join(
        f"{number(x)} [{number(lo)}, {number(hi)}]"
        for x, lo, hi in ends[["score", "ci_low", "ci_high"]].itertuples(index=False)
    )
    return f" ({path})"


def _e6_drift(p: int, drifts: pd.Series, ends: str) -> str:
    """``unweighted: +0.2000 (seeds: … to …)``: one weighting's drift, mean over seeds, with
    the seeds' range (or, with one seed, ``ends``)."""
    label = "unweighted" if p == 0 else f"KL weights with p = {int(p)}"
    spread = (
        ends if len(drifts) < 2 else f" (seeds: {signed(drifts.min())} to {signed(drifts.max())})"
    )
    return f"{label}: {signed(drifts.mean())}{spread}"


def e6_verdict(scores: pd.DataFrame, snapshots: pd.DataFrame, *, dataset: str) -> list[str]:
    """E6's verdict ([MYT14]) from ``scores.parquet`` and ``snapshots.parquet``: per constant
    recommender (g1, g2), its leave-one-out hit rate's drift from the first snapshot to the
    last (:func:`e6_drifts`), unweighted and with each KL weighting (p items free to move) but
    the degenerate ones (every item free), as the mean over seeds with the seeds' range (with
    one seed, the scores and intervals at both ends), and in how many seeds each weighting
    shrinks the drift; the degenerate weightings are named as such, never counted as
    evidence."""
    where = inert_name(dataset)
    drifts = e6_drifts(scores, snapshots)
    out = []
    for rec in _CONSTANT:
        part = drifts[drifts["recommender"] == rec]
        if part.empty:
            continue
        n = part["seed"].nunique()
        one = scores[scores["seed"] == scores["seed"].min()]
        listed = "; ".join(
            _e6_drift(p, d, _e6_ends(one, rec, p) if n == 1 else "")
            for p, d in part[~part["degenerate"]].groupby("p")["drift"]
        )
        out.append(
            f"On {where}, over {seeds_text(n)}, the constant recommender {rec}'s leave-one-out hit "
            f"rate drifts from t{scores['t'].min()} to t{scores['t'].max()} by (mean over seeds) "
            f"{listed}; {_e6_weighted(part)}{_e6_degenerate(part)}."
        )
    if not out:
        out.append(f"On {where}, no constant recommender was scored.")
    return out
