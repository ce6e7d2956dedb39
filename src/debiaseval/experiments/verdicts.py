"""Each experiment's answer in plain sentences: the verdict, computed from its aggregated tables.

A verdict is a list of complete sentences, one finding each, with its numbers, the intervals
the tables give, the dataset and the number of seeds. It is written as ``verdict.md``
(:func:`verdict_markdown`: the line ``## Verdict``, a blank line, one bullet per sentence) beside
the experiment's other results, and as the first section of its main Markdown summary
(:func:`with_verdict`); ``api.run`` returns it as ``verdict`` (the sentences) and ``verdict_md``
(:func:`verdict_entries`). One function per experiment:

- :func:`~debiaseval.experiments.e1_verdict.e1_verdict` (its own module): the recommenders
  ranked by the truth, the pairs that differ, Γ* and the arena's line ([SAC20]);
- :func:`e2_verdict`: which elicitation strategies differ per evaluation method after Holm's
  correction, which gains more only where the seeds or a one-sided test settle it, and how
  many tests were made ([FLAIRS20]);
- :func:`e3_verdict`: the estimators' RMSE against the true value over the seeds and draws,
  and the closest only where a paired interval over the draws separates the best from every other
  ([ICML16] Figure 2);
- :func:`e4_verdict`: MF-IPS against MF-Naive, with the t interval and the paired t-test across
  seeds from as many seeds as the tables give them, the paired t-test per seed ([ICML16] §6.5)
  and the ``grid_edge`` flag;
- :func:`e5_verdict`: Kendall's τ of URE and of traditional recall against the true recall
  ([URE24]);
- :func:`e6_verdict`: the constant recommenders' drift, unweighted and with KL weights, leaving
  out the weightings that free every item and so hold the first period by construction
  ([MYT14]).

Every name that comes from a user (dataset, recommender, test set, estimator, strategy) is made
inert (:func:`~debiaseval.io.markup.inert_markdown`). The functions are pure: tables in,
sentences out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.evaluation.uncertainty import MIN_T_SEEDS, holm, t_interval
from debiaseval.io.markup import inert_markdown

__all__ = [
    "HEADING",
    "and_list",
    "e2_directions",
    "e2_verdict",
    "e3_verdict",
    "e4_verdict",
    "e5_verdict",
    "e6_drifts",
    "e6_verdict",
    "in_any_seed",
    "in_seeds",
    "inert_name",
    "metric_label",
    "number",
    "p_text",
    "seeds_text",
    "signed",
    "verdict_entries",
    "verdict_markdown",
    "verdict_sentences",
    "with_verdict",
]

HEADING = "## Verdict"
"""The first line of every verdict (``verdict.md`` and the summaries' first section)."""

_METRICS = {
    "recall": "Recall",
    "precision": "Precision",
    "hitrate": "HitRate",
    "ndcg": "NDCG",
    "map": "MAP",
    "avgdcg": "avgDCG",
    "mse": "MSE",
    "mae": "MAE",
}


def metric_label(metric: str, k: int | None = None) -> str:
    """``Recall@10``: the metric's usual spelling, with its cut-off."""
    name = _METRICS.get(str(metric), inert_markdown(metric))
    return name if k is None else f"{name}@{int(k)}"


def inert_name(text: object) -> str:
    """A user-given name, inert in Markdown."""
    return inert_markdown(text)


def number(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` decimals, never ``-0.0000``."""
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def signed(x: float, digits: int = 4) -> str:
    """``x`` with its sign, to ``digits`` decimals."""
    return f"{round(float(x), digits) + 0.0:+.{digits}f}"


def p_text(p: float) -> str:
    """A p-value to 2 significant digits, or ``undefined``."""
    return "undefined" if not np.isfinite(p) else f"{p:.2g}"


def seeds_text(n: int) -> str:
    """``1 seed``, ``2 seeds``."""
    return f"{int(n)} seed{'' if int(n) == 1 else 's'}"


def in_seeds(k: int, n: int) -> str:
    """``in 3 of 10 seeds``, ``in all 10 seeds``, ``in its one seed`` (not "in 1 of 1 seed")."""
    k, n = int(k), int(n)
    if n == 1:
        return "in its one seed"
    return f"in all {n} seeds" if k == n else f"in {k} of {seeds_text(n)}"


def in_any_seed(n: int) -> str:
    """``in any of 10 seeds``, ``in its one seed`` (not "in any of 1 seed")."""
    return "in its one seed" if int(n) == 1 else f"in any of {seeds_text(n)}"


def and_list(items: Sequence[str]) -> str:
    """``a, b and c``."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


# -- Markdown ----------------------------------------------------------------------------------


_NO_FINDING = "- No finding: the run produced no table to judge.\n"


def verdict_markdown(sentences: Sequence[str]) -> str:
    """The verdict as Markdown: ``## Verdict``, a blank line, one ``- `` bullet per sentence
    (each on one line)."""
    bullets = "".join(f"- {' '.join(str(s).split())}\n" for s in sentences)
    return f"{HEADING}\n\n{bullets or _NO_FINDING}"


def verdict_sentences(markdown: str) -> list[str]:
    """The sentences of a verdict's Markdown (:func:`verdict_markdown`), in order."""
    return [line[2:] for line in markdown.splitlines() if line.startswith("- ")]


def with_verdict(markdown: str, verdict_md: str) -> str:
    """``markdown`` (a summary whose first line is its ``# `` title) with ``verdict_md`` as its
    first section, right after the title."""
    title, _, rest = markdown.partition("\n")
    if not title.startswith("# "):
        raise ValueError(f"a summary starts with its '# ' title, not {title[:40]!r}")
    return f"{title}\n\n{verdict_md.rstrip(chr(10))}\n\n{rest.lstrip(chr(10))}"


def verdict_entries(sentences: Sequence[str]) -> dict[str, Any]:
    """The entries ``api.run`` returns: ``verdict`` (the sentences) and ``verdict_md``."""
    text = verdict_markdown(sentences)
    return {"verdict": verdict_sentences(text), "verdict_md": text}


# -- E2 ----------------------------------------------------------------------------------------

_SCOPES = {"user": "active users", "system": "all users"}


def _ahead(a: object, b: object, difference: float) -> tuple[object, object]:
    """``(a, b)`` when a's change is the larger (``difference`` = change of a − change of b),
    else ``(b, a)``."""
    return (a, b) if difference >= 0 else (b, a)


def _e2_rows(wilcoxon: pd.DataFrame, block: Mapping[str, Any]) -> tuple[pd.DataFrame, str]:
    """The tests the verdict draws from: those at the first metric and k of the ``e2`` block
    (else at the table's first), with the label of that metric."""
    metric = block.get("metrics", [wilcoxon["metric"].iloc[0]])[0]
    k = int(block.get("ks", [wilcoxon["k"].iloc[0]])[0])
    rows = wilcoxon[(wilcoxon["metric"] == metric) & (wilcoxon["k"] == k)]
    if rows.empty:
        metric, k = wilcoxon["metric"].iloc[0], int(wilcoxon["k"].iloc[0])
        rows = wilcoxon[(wilcoxon["metric"] == metric) & (wilcoxon["k"] == k)]
    return rows, metric_label(metric, k)


def e2_directions(part: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """One block of E2's tests (the strategy pairs of one method and scope; rows of
    ``wilcoxon.parquet``) with what the verdict may claim of each pair.

    ``holm_p``: the combined two-sided p (:func:`~debiaseval.active_learning.evaluation.
    combine_seeds`) Holm-adjusted within the block; ``direction_p`` and ``against_p``: the
    one-sided combined p in the direction of the mean difference and in the other one, each
    doubled (the direction is read off the data, so both are tried) and Holm-adjusted within
    the block; ``agree``: every seed's mean difference has the sign of the mean. A pair
    ``differs`` where ``holm_p`` < ``alpha``; it is ``directed`` ("a gains more than b")
    where it differs and either the seeds agree or ``direction_p`` < ``alpha`` ≤
    ``against_p`` (with two seeds the combined p is twice the smaller one, so two seeds
    significant in opposite directions make both one-sided p small: no direction then)."""
    mean = part["mean_difference"].to_numpy(np.float64)
    forward = mean >= 0
    greater = part["combined_p_greater"].to_numpy(np.float64)
    less = part["combined_p_less"].to_numpy(np.float64)
    ahead = np.where(forward, part["n_a_ahead"], part["n_b_ahead"])
    out = part.assign(
        holm_p=holm(part["combined_p"].to_numpy(np.float64)),
        direction_p=holm(np.minimum(1.0, 2.0 * np.where(forward, greater, less))),
        against_p=holm(np.minimum(1.0, 2.0 * np.where(forward, less, greater))),
        agree=(ahead == part["n_seeds"].to_numpy()) & (mean != 0),
    )
    out["differs"] = out["holm_p"] < alpha
    one_sided = (out["direction_p"] < alpha) & (out["against_p"] >= alpha)
    out["directed"] = out["differs"] & (out["agree"] | one_sided)
    return out


def _e2_finding(r: pd.Series) -> str:
    """One pair that differs: its direction where the verdict may claim one, else that the
    seeds do not settle it."""
    high, low = _ahead(r["strategy_a"], r["strategy_b"], r["mean_difference"])
    n = int(r["n_seeds"])
    if not r["directed"]:
        return (
            f"{inert_name(r['strategy_a'])} and {inert_name(r['strategy_b'])} differ "
            f"(Holm-adjusted combined p = {p_text(r['holm_p'])}) but the seeds do not settle "
            f"which gains more ({inert_name(r['strategy_a'])} ahead in {int(r['n_a_ahead'])} "
            f"of {seeds_text(n)}; one-sided p, doubled and adjusted, {p_text(r['direction_p'])})"
        )
    why = (
        f"every one of the {seeds_text(n)} agrees"
        if r["agree"]
        else f"one-sided p, doubled and adjusted, {p_text(r['direction_p'])}"
    )
    by = number(abs(r["mean_difference"]))
    return (
        f"{inert_name(high)} gains more than {inert_name(low)} by {by} on average "
        f"(Holm-adjusted combined p = {p_text(r['holm_p'])}; {why})"
    )


def e2_verdict(wilcoxon: pd.DataFrame, block: Mapping[str, Any], *, dataset: str) -> list[str]:
    """E2's verdict ([FLAIRS20]) from ``wilcoxon.parquet``: per evaluation method and scope (a
    block of tests), at the first metric and k of the ``e2`` block, the strategy pairs that
    differ after Holm's correction within the block at ``e2.alpha``, each with a direction
    only where :func:`e2_directions` allows one; then how many tests the verdict made and how
    many of them would fall below ``e2.alpha`` by chance alone."""
    where = inert_name(dataset)
    alpha = float(block.get("alpha", 0.05))
    if wilcoxon.empty:
        return [f"On {where}, no Wilcoxon test between strategies was run (fewer than two)."]
    rows, label = _e2_rows(wilcoxon, block)
    out = []
    for (method, scope), part in rows.groupby(["method", "scope"], sort=False):
        tests = e2_directions(part, alpha)
        head = (
            f"On {where}, {inert_name(method)}, {_SCOPES.get(scope, inert_name(scope))}, "
            f"{label} over {seeds_text(int(part['n_seeds'].max()))}"
        )
        hits = tests[tests["differs"]].sort_values("holm_p", kind="stable")
        if hits.empty:
            out.append(
                f"{head}: no two strategies differ after Holm's correction over the "
                f"{len(part)} pairs (smallest adjusted combined p {p_text(tests['holm_p'].min())}"
                f", unadjusted {p_text(part['combined_p'].min())})."
            )
            continue
        listed = "; ".join(_e2_finding(r) for _, r in hits.iterrows())
        out.append(
            f"{head}: {len(hits)} of {len(part)} strategy pairs differ after Holm's correction "
            f"at {alpha:g}: {listed}."
        )
    n_blocks = rows.groupby(["method", "scope"], sort=False).ngroups
    below = int((rows["combined_p"] < alpha).sum())
    out.append(
        f"On {where}, the verdict rests on {len(rows)} Wilcoxon tests ({n_blocks} method × scope "
        f"blocks at {label}, Holm-corrected within each block); {below} of them have a combined "
        f"p below {alpha:g} before correction, where chance alone gives {len(rows) * alpha:.3g} "
        "on average."
    )
    return out


# -- E3 ----------------------------------------------------------------------------------------

_ESTIMATORS = {"naive": "Naive", "ips": "IPS", "snips": "SNIPS"}


def e3_gap(
    draws: pd.DataFrame, *, metric: str, alpha: float, best: str, runner: str, level: float = 0.95
) -> tuple[float, float, float, int]:
    """How much closer ``best`` comes than ``runner``: per draw of O (each seed's), with the
    known propensities at ``alpha``, the mean over the prediction matrices of runner's squared
    error minus best's (both estimators see the same O: a paired difference); its mean over
    the draws, which is the difference of their MSEs averaged over the matrices, and its
    ``level`` t interval over the draws (NaN with fewer than two). Returns ``(mean, low, high,
    n_draws)``."""
    rows = draws[
        (draws["propensity"] == "known")
        & np.isclose(draws["alpha"].astype(float), alpha)
        & (draws["metric"] == metric)
        & draws["estimator"].isin([best, runner])
    ]
    squared = rows.assign(_sq=(rows["value"] - rows["true_value"]) ** 2)
    per_draw = squared.groupby(["seed", "draw", "estimator"])["_sq"].mean().unstack("estimator")
    gap = (per_draw[runner] - per_draw[best]).to_numpy(np.float64)
    mean, low, high = t_interval(gap, level=level)
    return float(mean), float(low), float(high), int(gap.size)


def _e3_closest(draws: pd.DataFrame, metric: str, alpha: float, order: Sequence[str]) -> str:
    """Which estimator comes closest, said only where the paired interval of its squared error
    against every other's (:func:`e3_gap`) lies above 0; else the first, in RMSE order, that it
    is not told apart from."""
    if len(order) < 2:
        return ""
    best = order[0]
    for other in order[1:]:
        names = [_ESTIMATORS.get(e, inert_name(e)) for e in (best, other)]
        mean, low, high, n = e3_gap(draws, metric=metric, alpha=alpha, best=best, runner=other)
        if not np.isfinite(low):
            return f"; {names[0]} and {names[1]} are not told apart ({n} draw gives no interval)"
        interval = f"{mean:.3g} [{low:.3g}, {high:.3g}] (95% paired t interval over the {n} draws)"
        if other == order[1]:
            lead = interval
        if low <= 0:
            return (
                f"; {names[0]} and {names[1]} are not told apart: {names[1]}'s squared error, "
                f"averaged over the matrices, minus {names[0]}'s is {interval}, an interval not "
                "above 0"
            )
    runner = _ESTIMATORS.get(order[1], inert_name(order[1]))
    return (
        f"; {names[0]} comes closest: {runner}'s squared error, averaged over the matrices, "
        f"exceeds {names[0]}'s by {lead}"
        + (", and every other's by an interval above 0" if len(order) > 2 else "")
    )


def e3_verdict(
    rmse_mean: pd.DataFrame, draws: pd.DataFrame, block: Mapping[str, Any], *, dataset: str
) -> list[str]:
    """E3's verdict ([ICML16] Figure 2) from ``rmse_vs_alpha_mean.parquet`` and the draws:
    per metric, at the ``e3.alpha`` of Table 1 with the known propensities, each estimator's
    RMSE against the true value (mean over the prediction matrices) with its |bias| and sd
    over the draws, over how many seeds and draws of O; and the estimator that comes closest
    only where the paired interval of its squared error against every other's lies above 0
    (:func:`e3_gap`), else which two are not told apart."""
    where = inert_name(dataset)
    alpha = float(block.get("alpha", 0.25))
    rows = rmse_mean[np.isclose(rmse_mean["alpha"].astype(float), alpha)]
    if rows.empty:
        return [f"On {where}, no estimate was made at α = {alpha:g}: nothing to compare."]
    n_draws = draws["draw"].nunique()
    over = f"{seeds_text(draws['seed'].nunique())} × {n_draws} draw{'s' * (n_draws != 1)} of O"
    out = []
    for metric, part in rows.groupby("metric", sort=False):
        part = part.sort_values("rmse", kind="stable")
        cells = [
            f"{_ESTIMATORS.get(r['estimator'], inert_name(r['estimator']))} {number(r['rmse'])} "
            f"(|bias| {number(r['abs_bias'])}, sd {number(r['sd'])})"
            for _, r in part.iterrows()
        ]
        closest = _e3_closest(draws, metric, alpha, list(part["estimator"]))
        out.append(
            f"On {where} at α = {alpha:g} with the known propensities, over {over} and "
            f"{int(part['n_matrices'].max())} prediction matrices, the RMSE of the "
            f"{metric_label(metric)} estimates against the true value: {', '.join(cells)}"
            f"{closest}."
        )
    return out


# -- E4 ----------------------------------------------------------------------------------------


def _e4_interval(row: pd.Series) -> str:
    """`` [low, high]``: the row's t interval over seeds where the summary prints one (from
    :data:`MIN_T_SEEDS` seeds on, both bounds finite), else nothing."""
    low, high = row.get("ci_low", np.nan), row.get("ci_high", np.nan)
    shown = int(row["n_seeds"]) >= MIN_T_SEEDS and np.isfinite(low) and np.isfinite(high)
    return f" [{number(low, 3)}, {number(high, 3)}]" if shown else ""


def _e4_across_seeds(row: pd.Series) -> str:
    """``; paired t-test across seeds: p = …`` where the summary gives that test (from
    :data:`MIN_T_SEEDS` seeds on, as the interval), else nothing."""
    p = row.get("p_value", np.nan)
    if int(row["n_seeds"]) < MIN_T_SEEDS or not np.isfinite(p):
        return ""
    return f"; paired t-test across seeds: p = {p_text(p)}"


def _e4_per_seed(tests: pd.DataFrame, significance: float) -> str:
    """``; over the MAR test pairs it is better in … and worse in … of n seeds (…)``: the
    per-seed paired t-tests over the test pairs ([ICML16] §6.5), or nothing without them."""
    if tests.empty:
        return ""
    sig = tests["p_value"] < significance
    better = int((sig & (tests["mean_diff"] < 0)).sum())
    worse = int((sig & (tests["mean_diff"] > 0)).sum())
    ps = ", ".join(f"seed {int(t['seed'])} p = {p_text(t['p_value'])}" for _, t in tests.iterrows())
    return (
        f"; over the MAR test pairs it is better in {better} and worse in {worse} of "
        f"{seeds_text(len(tests))} (paired t-test per seed at {significance:g}: {ps})"
    )


def _e4_grid_edge(rows: Sequence[tuple[str, pd.Series]]) -> str:
    """``; the tuning picked … at an end of the grid …`` for the models flagged ``grid_edge``
    (:func:`~debiaseval.evaluation.learning_errors.grid_edge`), else nothing."""
    flagged = [name for name, row in rows if "grid_edge" in str(row.get("flags", "") or "")]
    if not flagged:
        return ""
    return (
        f"; for {and_list(flagged)} the tuning picked factors or λ at an end of the grid in "
        "some seed (flag grid_edge): the best setting may lie beyond the grid, and a wider one "
        "may change the comparison"
    )


def e4_verdict(
    summary: pd.DataFrame,
    pair_tests: pd.DataFrame,
    *,
    dataset: str,
    alpha: float | None = None,
    significance: float = 0.05,
) -> list[str]:
    """E4's verdict ([ICML16] Table 2, §6.5) from ``summary.parquet`` and ``pair_tests.parquet``:
    per MF-IPS model (and MCAR sample size) and metric, at ``alpha`` (the summary's α; all rows
    without a sweep), its test error against MF-Naive's (mean over seeds), and with the table's
    statistics policy: the t interval over seeds and the paired t-test across seeds only from
    :data:`MIN_T_SEEDS` seeds on (as the summary and the figure); in how many seeds the paired
    t-test over the MAR test pairs finds it better or worse at ``significance``; and the models
    whose selected hyperparameter lies at an end of the tuning grid (flag ``grid_edge``)."""
    where = inert_name(dataset)
    rows = summary
    if alpha is not None and summary["alpha"].notna().any():
        rows = summary[np.isclose(summary["alpha"].astype(float), alpha)]
    at = "" if alpha is None or rows["alpha"].isna().all() else f" at α = {alpha:g}"
    naive = rows[rows["propensity"] == "none"].set_index("metric")
    out = []
    for _, r in rows[rows["propensity"] != "none"].iterrows():
        metric = r["metric"]
        if metric not in naive.index:
            continue
        base = naive.loc[metric]
        base = base.iloc[0] if isinstance(base, pd.DataFrame) else base
        size = r.get("mar_size", np.nan)
        model = f"{inert_name(r['model'])} ({inert_name(r['propensity'])} propensities" + (
            f", MCAR sample {int(size):,})" if np.isfinite(size) else ")"
        )
        diff = r["mean"] - base["mean"]
        intervals = (
            "mean [95% t interval over seeds, within [0, ∞)]"
            if _e4_interval(r) and _e4_interval(base)
            else f"means over seeds; fewer than {MIN_T_SEEDS} seeds give no interval and no test "
            "across seeds"
        )
        tests = pair_tests[
            (pair_tests["propensity"] == r["propensity"]) & (pair_tests["metric"] == metric)
        ]
        if alpha is not None and tests["alpha"].notna().any():
            tests = tests[np.isclose(tests["alpha"].astype(float), alpha)]
        out.append(
            f"On {where}{at}, over {seeds_text(int(r['n_seeds']))}, {model} has a test "
            f"{metric_label(metric)} of {number(r['mean'], 3)}{_e4_interval(r)} against "
            f"MF-Naive's {number(base['mean'], 3)}{_e4_interval(base)} ({intervals}), "
            f"{'lower' if diff < 0 else 'higher'} by {number(abs(diff), 3)}"
            f"{_e4_across_seeds(r)}{_e4_per_seed(tests, significance)}"
            f"{_e4_grid_edge([(inert_name(r['model']), r), ('MF-Naive', base)])}."
        )
    if not out:
        out.append(f"On {where}{at}, no MF-IPS model was compared with MF-Naive.")
    return out


# -- E5 ----------------------------------------------------------------------------------------


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
            bracket = (" (in brackets its interval over the seeds, each its own draw of the "
                       "exposure)")  # fmt: skip
        out.append(
            f"On {where}, over {seeds_text(n_seeds)} and {int(part['n_models'].max())} models, "
            f"Kendall's τ of the model ranking by {names.get(estimator, inert_name(estimator))} "
            f"against {refs.get(reference, inert_name(reference))}{bracket}: "
            f"{taus}."
        )
    return out


# -- E6 ----------------------------------------------------------------------------------------

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
