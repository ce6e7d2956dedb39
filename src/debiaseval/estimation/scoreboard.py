"""The estimator arena's scoreboard: how close each test set or estimator comes to the truth,
how sure that is, and the one line that says what the data support (docs/estimators.md, The
scoreboard).

Scored over the recommenders × seeds of one (row, metric, k), from the seeds' common-user
means (:func:`~debiaseval.estimation.seed_scores.common_means`):

- ``bias``: the mean of estimate − truth; ``rmse``: the root of the mean squared error;
- ``crmse``: the centred RMSE, each seed's mean error removed: how well the row estimates the
  *differences* between models, which RMSE mixes with a common offset;
- ``tau``: Kendall's τ-b between the recommender rankings by the estimate and by the truth
  within each seed, averaged over the seeds where it is defined, the recommenders of
  ``excluded`` (sanity baselines such as Random, last on both sides) left out;
- ``coverage``: with the exact truth (``TRUE``), the share of (recommender, seed) whose
  interval over user resamples, over the same users as the truth, holds it; with an estimated
  truth (gt), the share whose joint interval of (row − gt) holds 0.

Each has a percentile interval under the resampling plan of
:mod:`~debiaseval.estimation.resampling` (seeds alone over independent draws; seeds and users,
once for all seeds, on one fixed dataset), none below
:data:`~debiaseval.estimation.resampling.MIN_SCOREBOARD_SEEDS` seeds. Two baselines sit in the
same table: ``CONSTANT`` (every recommender given the seed's mean truth: a row whose centred
RMSE is not below its RMSE carries no information about differences between models) and, on
real data, ``GT_HALVES``: Kendall's τ between the rankings on two random halves of the gt
users, a lower bound on gt's reliability, beside its Spearman–Brown full-sample value
(``tau_full``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from debiaseval.estimation.resampling import (
    MIN_SCOREBOARD_SEEDS,
    ResamplingPlan,
    noise_shift,
    percentile_interval,
    seed_cube,
)
from debiaseval.estimation.seed_scores import kendall_tau_b
from debiaseval.estimation.separation import separated_counts, separation_method
from debiaseval.evaluation.flags import FLAGS
from debiaseval.evaluation.metrics import GAINS
from debiaseval.io.markdown_tables import markdown_table
from debiaseval.io.markup import inert_markdown

__all__ = [
    "BASELINES",
    "CONSTANT",
    "GT_HALVES",
    "PAIR_COLUMNS",
    "SCOREBOARD_COLUMNS",
    "TRUE",
    "scoreboard",
    "scoreboard_markdown",
    "truth_of",
    "unscored_reason",
    "verdict",
]

TRUE = "TRUE"
"""The test-set name of the exact truth from the full rating matrix (``synthetic``)."""

CONSTANT = "CONSTANT"
"""The baseline row that gives every recommender the seed's mean truth."""

GT_HALVES = "GT_HALVES"
"""The baseline row of gt's split-half reliability (real data)."""

BASELINES = (CONSTANT, GT_HALVES)

_STATS = ("bias", "rmse", "crmse", "tau", "tau_full", "coverage")

_BOUNDS = {
    "rmse": (0.0, np.inf),
    "crmse": (0.0, np.inf),
    "tau": (-1.0, 1.0),
    "tau_full": (-1.0, 1.0),
    "coverage": (0.0, 1.0),
}
"""The range of each statistic that is not a mean: re-centred intervals are cut to it."""

SCOREBOARD_COLUMNS = [
    "testset",
    "family",
    "metric",
    "k",
    "truth",
    "draws",
    "n_recommenders",
    "n_seeds",
    "n_pairs",
    "n_users",
    *[f"{s}{end}" for s in _STATS for end in ("", "_low", "_high")],
    "n_tau_seeds",
    "level",
    "n_intervals",
]
"""Columns of ``estimator_accuracy.parquet``: per row, metric and k, each statistic with its
interval (``_low``, ``_high``; NaN below :data:`MIN_SCOREBOARD_SEEDS` seeds) and how the seeds'
data relate (``draws``: ``independent`` or ``fixed``)."""

_PAIR_STATS = ("abs_bias", "rmse", "crmse", "tau")

PAIR_COLUMNS = [
    "metric",
    "k",
    "testset_a",
    "testset_b",
    *[f"d_{s}{end}" for s in _PAIR_STATS for end in ("", "_low", "_high")],
]
"""Columns of ``estimator_pairs.parquet``: per metric, k and two rows, the difference a − b of
|bias|, RMSE, centred RMSE and τ with its interval from the same resamples. Against
``CONSTANT``, whose centred RMSE is its RMSE, ``d_crmse`` is the row's centred RMSE minus
CONSTANT's RMSE."""

_FLAG_WORDS = {
    "heavy_tail": "heavy-tailed weights",
    "out_of_range": "values out of range",
    "few_users": "few users",
    "short_lists": "short lists",
}


def truth_of(testsets: Sequence[str]) -> str:
    """The truth a scoreboard scores against: ``TRUE`` where present, else ``gt``."""
    return TRUE if TRUE in set(testsets) else "gt"


def _draws(
    value: np.ndarray,
    truth: np.ndarray,
    plan: ResamplingPlan,
    ranked: np.ndarray,
    hits: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """Every statistic of one row under ``plan``'s resamples from its seeds × (1 + replicates)
    × recommenders values and truths; ``hits``: per seed, (covering, finite) interval counts."""
    error = value - truth
    has = np.isfinite(error)
    e = np.where(has, error, 0.0)
    n = has.sum(-1).astype(np.float64)
    sum_e, sum_e2 = e.sum(-1), (e * e).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        centred = np.where(n > 0, sum_e2 - sum_e**2 / n, 0.0)
    tau = np.full(n.shape, np.nan)
    for s in range(value.shape[0]):
        present = ranked & has[s, 0]
        if present.sum() >= 2:
            v, t = value[s][:, present], truth[s][:, present]
            ok = np.isfinite(v).all(-1) & np.isfinite(t).all(-1)
            tau[s, ok] = kendall_tau_b(t[ok], v[ok])
    has_tau = np.isfinite(tau)
    nan = np.full(plan.counts.shape[0], np.nan)
    draws = {
        "bias": plan.ratio(sum_e, n),
        "rmse": np.sqrt(plan.ratio(sum_e2, n)),
        "crmse": np.sqrt(np.maximum(plan.ratio(centred, n), 0.0)),
        "tau": plan.ratio(np.where(has_tau, tau, 0.0), has_tau.astype(np.float64)),
        "tau_full": nan,
        "coverage": nan,
        "_n_tau_seeds": np.array([has_tau[:, 0].sum()]),
        "_n_pairs": np.array([has[:, 0].sum()]),
        "_n_recs": np.array([has[:, 0].any(0).sum()]),
        "_n_seeds": np.array([has[:, 0].any(-1).sum()]),
    }
    if hits is not None:
        covering, finite = (np.repeat(h[:, None], n.shape[1], axis=1) for h in hits)
        draws["coverage"] = plan.ratio(covering, finite)
        draws["_n_intervals"] = np.array([finite[:, 0].sum()])
    return draws


def _hits(rows: pd.DataFrame, seeds: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per seed, how many of the row's (recommender) intervals hold the truth, of the finite
    ones: the row's own interval around the exact truth, or the joint interval of (row −
    truth) around 0."""
    if exact:
        low, high, target = rows["low"], rows["high"], rows["truth"]
    else:
        low, high, target = rows["diff_low"], rows["diff_high"], pd.Series(0.0, index=rows.index)
    low, high, target = (np.asarray(x, dtype=np.float64) for x in (low, high, target))
    finite = np.isfinite(low) & np.isfinite(high) & np.isfinite(target)
    inside = finite & (low <= target) & (target <= high)
    slot = pd.Index(seeds).get_indexer(rows["seed"])
    return (
        np.bincount(slot, weights=inside, minlength=seeds.size),
        np.bincount(slot, weights=finite, minlength=seeds.size),
    )


def scoreboard(
    scored: pd.DataFrame,
    replicates: pd.DataFrame,
    *,
    truth: str,
    families: Mapping[str, str],
    plan: ResamplingPlan,
    excluded: Sequence[str] = (),
    reliability: pd.DataFrame | None = None,
    confidence: float = 0.95,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scoreboard (:data:`SCOREBOARD_COLUMNS`) and its paired comparisons
    (:data:`PAIR_COLUMNS`).

    ``scored``: the seeds' common-user means with their intervals
    (:data:`~debiaseval.estimation.seed_scores.SCORED_COLUMNS`; the truth's own rows give
    ``CONSTANT``); ``replicates``: their user resamples
    (:data:`~debiaseval.estimation.seed_scores.REPLICATE_COLUMNS`, used by a ``fixed`` plan);
    ``families``: row -> its family (MAR sample, resampling, weighting); ``reliability``: the
    seeds' split-half reliability of gt (``GT_HALVES``). Every interval at ``confidence`` comes from
    ``plan``'s resamples, the same for every row. Rows in the order of ``families``, then the
    baselines.
    """
    seeds = np.sort(scored["seed"].unique())  # the plan's seeds: every seed scored
    if seeds.size != plan.counts.shape[1] and seeds.size:
        raise ValueError(
            f"the plan resamples {plan.counts.shape[1]} seeds, the table has {seeds.size}"
        )
    scored = scored[scored["metric"].isin(GAINS)]
    given = scored  # with the cells of no value, for the rows that cannot be scored
    scored = scored[np.isfinite(scored["value"]) & np.isfinite(scored["truth"])]
    n_reps = int(plan.replicate.max())
    if plan.draws != "fixed":
        replicates = replicates.iloc[0:0]
    replicates = replicates[replicates["replicate"] < n_reps]
    exact = truth == TRUE
    order = {name: j for j, name in enumerate(families)}
    skip = set(excluded)
    board, pairs = [], []
    for (metric, k), part in scored.groupby(["metric", "k"], sort=True):
        reps = replicates[(replicates["metric"] == metric) & (replicates["k"] == k)]
        recs = sorted(part["recommender"].unique())
        ranked = np.array([r not in skip for r in recs])
        rows: dict[str, dict[str, np.ndarray]] = {}
        users: dict[str, float] = {}
        names = sorted(
            (n for n in part["testset"].unique() if n != truth),
            key=lambda n: (order.get(n, len(order)), n),
        )
        for name in names:
            mine, drawn = part[part["testset"] == name], reps[reps["testset"] == name]
            cube = [
                seed_cube(mine, drawn, c, seeds=seeds, recommenders=recs, n_replicates=n_reps)
                for c in ("value", "truth")
            ]
            rows[name] = _row(*cube, plan, ranked, _hits(mine, seeds, exact))
            users[name] = float(mine["n_users"].mean())
        own, drawn = part[part["testset"] == truth], reps[reps["testset"] == truth]
        if len(own):
            t = seed_cube(own, drawn, "truth", seeds=seeds, recommenders=recs, n_replicates=n_reps)
            has = np.isfinite(t)
            with np.errstate(invalid="ignore", divide="ignore"):  # a seed with no truth: NaN
                mean = np.where(has, t, 0.0).sum(-1, keepdims=True) / has.sum(-1, keepdims=True)
            constant = np.broadcast_to(mean, t.shape)
            rows[CONSTANT] = _row(constant, t, plan, ranked, None)
            for draws in (rows[CONSTANT], rows[CONSTANT]["_seeds_only"]):
                draws["tau"] = np.full(plan.counts.shape[0], np.nan)
            users[CONSTANT] = float(own["n_users"].mean())
        if reliability is not None and not exact:
            rel = reliability[(reliability["metric"] == metric) & (reliability["k"] == k)]
            if len(rel):
                rows[GT_HALVES] = _reliability_draws(rel, seeds, plan)
                users[GT_HALVES] = np.nan
        for name, draws in rows.items():
            record = {
                "testset": name,
                "family": "baseline" if name in BASELINES else families.get(name, ""),
                "metric": metric,
                "k": k,
                "truth": truth,
                "draws": plan.draws,
                "n_recommenders": int(draws["_n_recs"][0]),
                "n_seeds": int(draws["_n_seeds"][0]),
                "n_pairs": int(draws["_n_pairs"][0]),
                "n_users": users[name],
                "n_tau_seeds": int(draws["_n_tau_seeds"][0]),
                "level": float(confidence),
                "n_intervals": int(draws.get("_n_intervals", [0])[0]),
            }
            for stat in _STATS:
                point, low, high = _interval(
                    draws[stat], draws["_seeds_only"][stat], confidence, plan, stat
                )
                record.update({stat: point, f"{stat}_low": low, f"{stat}_high": high})
            board.append(record)
        pairs += _pairs(rows, metric, k, confidence, plan)
        cells = given[(given["metric"] == metric) & (given["k"] == k)]
        board += [
            _unscored(
                name,
                families[name],
                cells[cells["testset"] == name],
                metric=metric,
                k=k,
                truth=truth,
                plan=plan,
                confidence=confidence,
            )
            for name in families
            if name not in rows and name != truth
        ]
        start = len(board) - len(rows) - sum(n not in rows and n != truth for n in families)
        board[start:] = sorted(
            board[start:],
            key=lambda r: (r["testset"] in BASELINES, order.get(r["testset"], len(order))),
        )
    out = pd.DataFrame(board, columns=SCOREBOARD_COLUMNS)
    ints = ["n_recommenders", "n_seeds", "n_pairs", "n_tau_seeds", "n_intervals"]
    out = out.astype({**dict.fromkeys(ints, np.int64), "k": np.int16})
    paired = pd.DataFrame(pairs, columns=PAIR_COLUMNS).astype({"k": np.int16})
    return out.reset_index(drop=True), paired


def _unscored(
    name: str,
    family: str,
    cells: pd.DataFrame,
    *,
    metric: str,
    k: int,
    truth: str,
    plan: ResamplingPlan,
    confidence: float,
) -> dict[str, object]:
    """The scoreboard row of ``name``, which has no finite value against the truth in any seed
    (``cells``: its per-seed means, NaN or none): every statistic NaN, its users the mean over
    the seeds that have it (0 for none), so that :func:`unscored_reason` can say why."""
    record: dict[str, object] = {
        "testset": name,
        "family": family,
        "metric": metric,
        "k": k,
        "truth": truth,
        "draws": plan.draws,
        "n_recommenders": 0,
        "n_seeds": int(cells["seed"].nunique()),
        "n_pairs": 0,
        "n_users": float(cells["n_users"].mean()) if len(cells) else 0.0,
        "n_tau_seeds": 0,
        "level": float(confidence),
        "n_intervals": 0,
    }
    for stat in _STATS:
        record.update({stat: np.nan, f"{stat}_low": np.nan, f"{stat}_high": np.nan})
    return record


def unscored_reason(row: pd.Series) -> str:
    """Why a scoreboard row has no value (:func:`_unscored`), in words."""
    if int(row["n_seeds"]) == 0:
        return "no seed computed it at this metric and k"
    if not float(row["n_users"]) > 0:
        return (
            "no user has both a held-out positive and a relevant truth item under it in any "
            "seed (an empty test set, or every user dropped by the estimator)"
        )
    return "its per-user values are not finite against the truth in any seed"


def _row(
    value: np.ndarray,
    truth: np.ndarray,
    plan: ResamplingPlan,
    ranked: np.ndarray,
    hits: tuple[np.ndarray, np.ndarray] | None,
) -> dict[str, object]:
    """A row's statistics under ``plan`` (:func:`_draws`), with (``_seeds_only``) the same
    under its seed resamples alone, from which the users' second dose of noise is measured."""
    draws: dict[str, object] = dict(_draws(value, truth, plan, ranked, hits))
    alone = plan.seeds_only() if plan.draws == "fixed" else None
    draws["_seeds_only"] = draws if alone is None else _draws(value, truth, alone, ranked, hits)
    return draws


def _interval(
    draws: np.ndarray,
    seeds_only: np.ndarray,
    confidence: float,
    plan: ResamplingPlan,
    stat: str,
    difference: bool = False,
) -> tuple[float, float, float]:
    """A statistic's (point, low, high) under ``plan``: none below its seeds; the expanded
    percentile interval (:meth:`~debiaseval.estimation.resampling.ResamplingPlan.tail`); on
    fixed data, less the users' second dose of noise (:func:`~debiaseval.estimation.resampling.
    noise_shift`, measured against ``seeds_only``, its draws under the seed resamples alone;
    0 for the bias, a mean), cut to the statistic's range (a ``difference`` has none)."""
    shift = noise_shift(draws, seeds_only) if plan.draws == "fixed" and stat != "bias" else 0.0
    bounds = (-np.inf, np.inf) if difference else _BOUNDS.get(stat, (-np.inf, np.inf))
    return percentile_interval(
        draws,
        confidence,
        intervals=plan.gives_intervals,
        tail=plan.tail(confidence),
        shift=shift,
        bounds=bounds,
    )


def _reliability_draws(
    rel: pd.DataFrame, seeds: np.ndarray, plan: ResamplingPlan
) -> dict[str, object]:
    """GT_HALVES under ``plan``'s seed resamples: the mean split-half τ and its Spearman–Brown
    step-up, over the seeds where they are defined."""
    slot = pd.Index(seeds).get_indexer(rel["seed"])
    width = plan.replicate.max() + 1
    nan = np.full(plan.counts.shape[0], np.nan)
    out: dict[str, object] = {"bias": nan, "rmse": nan, "crmse": nan, "coverage": nan}
    for stat, column in (("tau", "tau"), ("tau_full", "tau_full")):
        per_seed = np.full(seeds.size, np.nan)
        keep = slot >= 0
        per_seed[slot[keep]] = rel[column].to_numpy(dtype=np.float64)[keep]
        has = np.isfinite(per_seed)
        num = np.repeat(np.where(has, per_seed, 0.0)[:, None], width, axis=1)
        den = np.repeat(has.astype(np.float64)[:, None], width, axis=1)
        out[stat] = plan.ratio(num, den)
    has = np.isfinite(rel["tau"].to_numpy(dtype=np.float64))
    out.update(
        _n_tau_seeds=np.array([has.sum()]),
        _n_pairs=np.array([0]),
        _n_recs=np.array([int(rel["n_recommenders"].max())]),
        _n_seeds=np.array([has.sum()]),
    )
    out["_seeds_only"] = out  # no user resample: one level
    return out


def _pairs(
    rows: Mapping[str, Mapping[str, object]],
    metric: str,
    k: int,
    confidence: float,
    plan: ResamplingPlan,
) -> list[dict[str, object]]:
    """Every two rows' differences (a − b) of |bias|, RMSE, centred RMSE and τ, under the
    same resamples; ``CONSTANT``'s centred RMSE is its RMSE."""
    names = [n for n in rows if n != GT_HALVES]

    def stats(row: Mapping[str, object], name: str) -> dict[str, np.ndarray]:
        return {
            "abs_bias": np.abs(row["bias"]),
            "rmse": row["rmse"],
            "tau": row["tau"],
            "crmse": row["rmse"] if name == CONSTANT else row["crmse"],
        }

    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            both = [(stats(rows[n], n), stats(rows[n]["_seeds_only"], n)) for n in (a, b)]
            record: dict[str, object] = {"metric": metric, "k": k, "testset_a": a, "testset_b": b}
            for stat in _PAIR_STATS:
                (xa, xa0), (xb, xb0) = ((s[stat], s0[stat]) for s, s0 in both)
                point, low, high = _interval(
                    xa - xb, xa0 - xb0, confidence, plan, stat, difference=True
                )
                record.update({f"d_{stat}": point, f"d_{stat}_low": low, f"d_{stat}_high": high})
            out.append(record)
    return out


def _num(x: float, digits: int = 4) -> str:
    if not np.isfinite(x):
        return "∞" if x == np.inf else ("−∞" if x == -np.inf else "")
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def _cell(point: float, low: float, high: float, digits: int = 4) -> str:
    if not np.isfinite(point):
        return ""
    text = _num(point, digits)
    return f"{text} [{_num(low, digits)}, {_num(high, digits)}]" if np.isfinite(low) else text


def _difference(pairs: pd.DataFrame, a: str, b: str, stat: str) -> tuple[float, float, float]:
    """(a − b, low, high) of ``stat`` from the pairs table, in either order; NaNs if absent."""
    for x, y, sign in ((a, b, 1.0), (b, a, -1.0)):
        hit = pairs[(pairs["testset_a"] == x) & (pairs["testset_b"] == y)]
        if len(hit):
            r = hit.iloc[0]
            point, low, high = (
                sign * r[f"d_{stat}"],
                sign * r[f"d_{stat}_low"],
                sign * r[f"d_{stat}_high"],
            )
            return point, min(low, high), max(low, high)
    return np.nan, np.nan, np.nan


def row_label(name: str, flags: Mapping[str, str] | None = None) -> str:
    """A row's name with its flags' symbols and words, e.g. ``SNIPS_WTD (κ heavy-tailed
    weights)``, made inert for Markdown."""
    codes = [c for c in str((flags or {}).get(name, "")).split(",") if c in FLAGS]
    label = inert_markdown(name)
    if not codes:
        return label
    words = ", ".join(f"{FLAGS[c][0]} {_FLAG_WORDS.get(c, c.replace('_', ' '))}" for c in codes)
    return f"{label} ({words})"


def verdict(
    board: pd.DataFrame,
    pairs: pd.DataFrame,
    separation: pd.DataFrame | None = None,
    *,
    flags: Mapping[str, str] | None = None,
    state_separation: bool = True,
) -> str:
    """The lines on one (metric, k) of the scoreboard: no interval and no best row below
    :data:`MIN_SCOREBOARD_SEEDS` seeds; no best row where the truth separates none of the
    ranked pairs (``separation``, :func:`~debiaseval.estimation.separation.truth_separation`);
    else the row of lowest RMSE named best only if its lead over every other row has an
    interval above 0 (else the first row it is not told apart from), and what CONSTANT says
    of it: worse than a constant, plainly, and no information about differences where its
    centred RMSE is not below CONSTANT's RMSE. ``flags``: row ->
    its flag codes, shown with its name (:func:`row_label`); ``state_separation``: say how many
    pairs the truth separates (a verdict that says it elsewhere leaves it out)."""
    if board.empty:
        return "No row has a value to score."
    first = board.iloc[0]
    truth, metric, k = str(first["truth"]), str(first["metric"]), int(first["k"])
    confidence = float(first["level"])
    n_seeds = int(board["n_seeds"].max())
    rows = board[~board["testset"].isin(BASELINES) & np.isfinite(board["rmse"])]
    if rows.empty:
        return "No row has a value to score."
    parts = []
    if separation is not None and len(separation):
        k_sep, n_pairs = separated_counts(separation, metric, k)
        if n_pairs:
            how = separation_method(separation)
            if state_separation:
                parts.append(
                    f"{truth} separates {k_sep} of {n_pairs} ranked pairs ({how}, "
                    f"Holm at α = {1 - confidence:g})."
                )
            if k_sep == 0:
                parts.append(
                    f"τ against {truth} measures noise here, and no row is named best"
                    + (
                        "."
                        if state_separation
                        else f": {truth} separates none of the ranked pairs."
                    )
                )
                return " ".join(parts)
    if n_seeds < MIN_SCOREBOARD_SEEDS:
        parts.append(
            f"With {n_seeds} seed{'s' if n_seeds != 1 else ''} the scoreboard gives no "
            f"interval and names no best row: it needs at least {MIN_SCOREBOARD_SEEDS} seeds "
            "(10 or more recommended; e1.seeds)."
        )
        return " ".join(parts)
    ranked = rows.sort_values("rmse", kind="stable")
    best = ranked.iloc[0]
    name = str(best["testset"])
    label = row_label(name, flags)
    rmse = _cell(best["rmse"], best["rmse_low"], best["rmse_high"])
    if len(ranked) > 1:
        runner = ranked.iloc[1]
        d = _difference(pairs, name, str(runner["testset"]), "rmse")
        runner_label = row_label(str(runner["testset"]), flags)
        # named only if its lead over every other row has an interval below 0 (an
        # intersection-union test: each at the level, no correction needed); else the first
        # row, in RMSE order, that it is not told apart from
        tied = next(
            (
                row
                for _, row in ranked.iloc[1:].iterrows()
                if not _difference(pairs, name, str(row["testset"]), "rmse")[2] < 0
            ),
            None,
        )
        if tied is None:
            parts.append(
                f"Best row: {label}, RMSE {rmse}, below {runner_label}'s "
                f"{_num(runner['rmse'])} (difference {_cell(*d)}) and every other "
                "row's."
            )
        elif tied["testset"] == runner["testset"]:
            second = _cell(runner["rmse"], runner["rmse_low"], runner["rmse_high"])
            parts.append(
                f"No row is named best: the two lowest RMSEs, {rmse} for {label} and {second} "
                f"for {runner_label}, are not told apart (difference {_cell(*d)} holds 0)."
            )
        else:
            other = str(tied["testset"])
            d_tied = _difference(pairs, name, other, "rmse")
            parts.append(
                f"No row is named best: the lowest RMSE, {rmse} for {label}, is below "
                f"{runner_label}'s {_num(runner['rmse'])} (difference {_cell(*d)}), but not "
                f"told apart from {row_label(other, flags)}'s {_num(tied['rmse'])} (difference "
                f"{_cell(*d_tied)} holds 0)."
            )
    else:
        parts.append(f"The only row, {label}, has RMSE {rmse}.")
    constant = board[board["testset"] == CONSTANT]
    if len(constant):
        c = float(constant["rmse"].iloc[0])
        if best["rmse"] > c:
            parts.append(
                f"The lowest RMSE, {label}'s, is worse than CONSTANT's ({_num(c)}): a "
                "constant guess is closer to the truth than every row."
            )
        d = _difference(pairs, name, CONSTANT, "crmse")
        crmse = _cell(best["crmse"], best["crmse_low"], best["crmse_high"])
        centred = f"The centred RMSE of {label}, {crmse},"
        if not best["crmse"] < c:
            parts.append(
                f"{centred} is not below CONSTANT's RMSE ({_num(c)}): it carries no "
                "information about differences between the models."
            )
        elif np.isfinite(d[2]) and d[2] < 0:
            parts.append(
                f"{centred} is below CONSTANT's RMSE ({_num(c)}): it tells the models "
                "apart better than a constant."
            )
        else:
            parts.append(
                f"{centred} is not surely below CONSTANT's RMSE ({_num(c)}; "
                f"difference {_cell(*d)})."
            )
    return " ".join(parts)


def scoreboard_markdown(
    board: pd.DataFrame,
    pairs: pd.DataFrame,
    dataset: str,
    separation: pd.DataFrame | None = None,
    *,
    flags: Mapping[str, str] | None = None,
) -> str:
    """The scoreboard for people (``estimator_accuracy.md``): per (metric, k) its verdict
    (:func:`verdict`), the rows with every statistic's interval, and the lowest-RMSE row
    compared with every other."""
    truth = board["truth"].iloc[0] if len(board) else "gt"
    confidence = float(board["level"].iloc[0]) if len(board) else 0.95
    draws = board["draws"].iloc[0] if len(board) else "independent"
    what = (
        "the exact value from the full rating matrix (`TRUE`)"
        if truth == TRUE
        else "the MAR ground truth `gt`, itself an estimate from a random sample"
    )
    how = (
        "a bootstrap over seeds, each seed its own draw of the data (independent draws of the "
        "whole process)"
        if draws == "independent"
        else "a two-level bootstrap: seeds resampled, and with them the users, once for all "
        "seeds (the seeds re-split one fixed dataset, so the intervals are conditional on its "
        "one MAR sample)"
    )
    parts = [
        f"# E1 on {inert_markdown(dataset)}: the estimator arena's scoreboard\n\n"
        f"Each test set or estimator against {what}, over recommenders × seeds, each averaged "
        "with the truth over the same users (a positive held-out pair and a relevant truth "
        "item): `bias` (mean estimate − truth), `RMSE`, `centred RMSE` (each seed's mean error "
        "removed: the error in the differences between models), `τ` (Kendall's τ-b of the "
        "recommender ranking vs the truth within a seed, mean over seeds) and `coverage` ("
        + (
            "share of the rows' intervals over user resamples that hold the truth"
            if truth == TRUE
            else "share of the joint intervals of row − gt over user resamples that hold 0"
        )
        + f"). In brackets, each statistic's {confidence:.0%} interval from {how}; none below "
        f"{MIN_SCOREBOARD_SEEDS} seeds. `CONSTANT` gives every recommender the seed's mean "
        "truth: a row whose centred RMSE is not below CONSTANT's RMSE carries no information "
        "about differences between models. "
        + (
            "`GT_HALVES` is τ between the rankings on two random halves of the gt users (1,000 "
            "halvings a seed): a lower bound on gt's reliability, each half having half the "
            "users; `τ full` is its Spearman–Brown step-up to gt's full size. "
            if truth != TRUE
            else ""
        )
        + "Only Recall and the per-relevant-item DCG are scored: their test-set values "
        "estimate the full-matrix ones.\n"
    ]
    for (metric, k), block in board.groupby(["metric", "k"], sort=True):
        sub = pairs[(pairs["metric"] == metric) & (pairs["k"] == k)]
        line = verdict(block, sub, separation, flags=flags)
        parts.append(f"\n## {metric}@{k}\n\n**Verdict.** {line}\n\n")
        columns = [
            ("bias", "bias"),
            ("RMSE", "rmse"),
            ("centred RMSE", "crmse"),
            ("τ", "tau"),
            ("coverage", "coverage"),
        ]
        if truth != TRUE:
            columns.insert(4, ("τ full", "tau_full"))
        table = pd.DataFrame(
            {
                "row": [row_label(n, flags) for n in block["testset"]],
                "family": block["family"],
                **{
                    name: [
                        _cell(r[s], r[f"{s}_low"], r[f"{s}_high"], 3 if s.startswith("tau") else 4)
                        for _, r in block.iterrows()
                    ]
                    for name, s in columns
                },
                "users": [_num(v, 1) for v in block["n_users"]],
            }
        )
        parts.append(markdown_table(table))
        unscored = block[~block["testset"].isin(BASELINES) & (block["n_pairs"] == 0)]
        if len(unscored):
            parts.append(
                "\n"
                + "".join(
                    f"- {row_label(str(r['testset']), flags)} has no value: {unscored_reason(r)}.\n"
                    for _, r in unscored.iterrows()
                )
            )
        rows = block[~block["testset"].isin(BASELINES) & np.isfinite(block["rmse"])]
        if len(rows) > 1 and len(sub):
            best = str(rows.sort_values("rmse", kind="stable").iloc[0]["testset"])
            others = [n for n in block["testset"] if n not in (best, GT_HALVES)]
            cells = {
                title: [_cell(*_difference(sub, best, o, stat)) for o in others]
                for stat, title in (
                    ("rmse", "Δ RMSE"),
                    ("crmse", "Δ centred RMSE"),
                    ("abs_bias", "Δ abs. bias"),
                    ("tau", "Δ τ"),
                )
            }
            parts.append(
                f"\nThe row of lowest RMSE, {row_label(best, flags)}, minus each other row, "
                f"with the {confidence:.0%} interval of the difference from the same resamples (an "
                "interval below 0 in Δ RMSE: surely closer; against CONSTANT, Δ centred RMSE "
                "is the row's centred RMSE minus CONSTANT's RMSE):\n\n"
                + markdown_table(
                    pd.DataFrame({"other row": [row_label(o, flags) for o in others], **cells})
                )
            )
    return "".join(parts)
