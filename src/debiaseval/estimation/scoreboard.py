"""The estimator arena's scoreboard: how close each test set or estimator comes to the truth,
and how sure that is (docs/estimators.md, The scoreboard).

Every row of E1's test-set column (gt on synthetic, FULL, SKEW, WTD, WTD_H, the weighting
estimators) estimates, per recommender and seed, the metric's value under full exposure. The
truth is the MAR ground truth ``gt`` on real data and the exact value from the full rating
matrix (``TRUE``) on ``synthetic``. Only like is scored against like: Recall and the
per-relevant-item DCG (:data:`~debiaseval.estimation.heldout.GAINS`), whose per-user value
estimates the full-matrix one; HitRate, Precision, MAP and NDCG of a sampled test set depend
on how many relevant items the sample holds and are not scored. Each row and its truth are
averaged over the same users (:func:`common_means`): those with a positive held-out pair
and a relevant truth item, and, for a sampled test set, a relevant test pair.

Scored over the recommenders × seeds of one (row, metric, k):

- ``bias``: the mean of estimate − truth; ``rmse``: the root of the mean squared error;
- ``tau``: Kendall's τ-b between the recommender rankings by the estimate and by the truth
  within each seed, averaged over the seeds where it is defined; the recommenders of
  ``excluded`` (sanity baselines such as Random, last on both sides) are left out of it;
- ``coverage``: the share of the per-seed bootstrap intervals over users (``boot_low``,
  ``boot_high`` of E1's ``metrics.parquet``) that hold the truth.

Each has a percentile interval from a bootstrap over seeds (whole seeds resampled, the same
resamples for every row, so that :func:`scoreboard`'s paired comparisons between rows are
differences under one resample). Two baselines sit in the same table: ``CONSTANT`` (every
recommender given the seed's mean truth: the RMSE a row must beat to say anything about
differences between models) and, on real data, ``GT_HALVES``: Kendall's τ between the
rankings on two random halves of the gt users (:func:`split_half_reliability`), the
agreement no row can be expected to exceed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from debiaseval.estimation.heldout import GAINS
from debiaseval.evaluation.aggregate import markdown_table
from debiaseval.evaluation.metrics import BlockValues

__all__ = [
    "BASELINES",
    "CONSTANT",
    "GT_HALVES",
    "PAIR_COLUMNS",
    "RELIABILITY_COLUMNS",
    "SCOREBOARD_COLUMNS",
    "SCORED_COLUMNS",
    "SEPARATION_COLUMNS",
    "TRUE",
    "common_means",
    "kendall_tau_b",
    "scoreboard",
    "scoreboard_markdown",
    "split_half_reliability",
    "truth_of",
    "truth_separation",
    "verdict",
]

TRUE = "TRUE"
"""The test-set name of the exact truth from the full rating matrix (``synthetic``)."""

CONSTANT = "CONSTANT"
"""The baseline row that gives every recommender the seed's mean truth."""

GT_HALVES = "GT_HALVES"
"""The baseline row of gt's split-half reliability (real data)."""

BASELINES = (CONSTANT, GT_HALVES)

SCORED_COLUMNS = ["recommender", "seed", "testset", "metric", "k", "value", "truth", "n_users"]
"""Columns of a seed's common-user means (:func:`common_means`, ``arena.parquet``)."""

RELIABILITY_COLUMNS = ["seed", "metric", "k", "tau", "n_splits", "n_recommenders"]
"""Columns of a seed's split-half reliability of gt (:func:`split_half_reliability`)."""

_STATS = ("bias", "rmse", "tau", "coverage")

SCOREBOARD_COLUMNS = [
    "testset", "family", "metric", "k", "truth", "n_recommenders", "n_seeds", "n_pairs",
    "n_users", *[f"{s}{end}" for s in _STATS for end in ("", "_low", "_high")],
    "n_tau_seeds", "level", "n_intervals",
]  # fmt: skip
"""Columns of ``estimator_accuracy.parquet``: per row, metric and k, each statistic with its
interval over seeds (``_low``, ``_high``)."""

PAIR_COLUMNS = [
    "metric", "k", "testset_a", "testset_b",
    *[f"d_{s}{end}" for s in ("abs_bias", "rmse", "tau") for end in ("", "_low", "_high")],
]  # fmt: skip
"""Columns of ``estimator_pairs.parquet``: per metric, k and two rows, the difference a − b of
|bias|, RMSE and τ with its interval from the same seed bootstrap."""


def truth_of(testsets: Sequence[str]) -> str:
    """The truth a scoreboard scores against: ``TRUE`` where present, else ``gt``."""
    return TRUE if TRUE in set(testsets) else "gt"


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b of the rows of ``x`` and ``y`` (… × n, NaN-free), vectorised over the
    leading axes; NaN where either row is constant or n < 2."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    a, b = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., a] - x[..., b]), np.sign(y[..., a] - y[..., b])
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum(-1) / np.sqrt((sx * sx).sum(-1) * (sy * sy).sum(-1))
    return np.where(np.isfinite(tau), tau, np.nan)


def common_means(
    per_user: Mapping[str, Mapping[str, BlockValues]],
    truth: Mapping[str, BlockValues],
    *,
    seed: int,
    heldout_users: np.ndarray,
    n_users: int,
    truth_name: str,
) -> pd.DataFrame:
    """Each row's and its truth's means over the same users, per recommender and block.

    ``per_user``: recommender -> row -> :class:`~debiaseval.evaluation.metrics.BlockValues`;
    ``truth``: recommender -> the truth's BlockValues (gt's on real data, TRUE's on synthetic);
    ``heldout_users``: the users with a positive held-out pair. For every row but the truth
    itself and every block of :data:`GAINS`, the users the row, the truth and the held-out part
    all have. Returns :data:`SCORED_COLUMNS`.
    """
    held = np.zeros(n_users, dtype=bool)
    held[np.asarray(heldout_users, dtype=np.int64)] = True
    rows = []
    for rec, by_row in per_user.items():
        reference = truth.get(rec)
        if reference is None:
            continue
        t_users = np.asarray(reference.users, dtype=np.int64)
        t_at = {block: j for j, block in enumerate(reference.blocks)}
        t_lookup = np.full(n_users, -1, dtype=np.int64)
        t_lookup[t_users] = np.arange(t_users.size)
        for name, values in by_row.items():
            if name == truth_name:
                continue
            users = np.asarray(values.users, dtype=np.int64)
            keep = held[users] & (t_lookup[users] >= 0)
            where = t_lookup[users[keep]]
            for j, block in enumerate(values.blocks):
                if block[0] not in GAINS or block not in t_at:
                    continue
                v = values.values[j][keep]
                t = reference.values[t_at[block]][where]
                rows.append((rec, seed, name, block[0], block[1],
                             float(v.mean()) if v.size else np.nan,
                             float(t.mean()) if t.size else np.nan, int(v.size)))  # fmt: skip
    out = pd.DataFrame(rows, columns=SCORED_COLUMNS)
    return out.astype({"k": np.int16, "n_users": np.int64, "seed": np.int64})


def split_half_reliability(
    truth: Mapping[str, BlockValues],
    excluded: Sequence[str],
    *,
    seed: int,
    rng: np.random.Generator,
    n_splits: int = 100,
) -> pd.DataFrame:
    """gt's split-half reliability: per block of :data:`GAINS`, Kendall's τ-b between the
    recommender rankings on two random halves of gt's users (each user in either with
    probability 1/2), averaged over ``n_splits`` splits drawn from ``rng`` (the ``excluded``
    recommenders left out; every recommender's values over the same users, as gt's are).
    Returns :data:`RELIABILITY_COLUMNS`."""
    names = [r for r in truth if r not in set(excluded)]
    rows = []
    if len(names) >= 2:
        first = truth[names[0]]
        n = first.users.size
        left = (rng.random((n_splits, n)) < 0.5).astype(np.float64)  # splits × users
        for j, block in enumerate(first.blocks):
            if block[0] not in GAINS or n < 2:
                continue
            values = np.stack([truth[r].values[j] for r in names])  # recommenders × users
            with np.errstate(invalid="ignore", divide="ignore"):
                a = (left @ values.T) / left.sum(axis=1, keepdims=True)
                b = ((1 - left) @ values.T) / (1 - left).sum(axis=1, keepdims=True)
            tau = kendall_tau_b(a, b)
            finite = np.isfinite(tau)
            rows.append((seed, block[0], block[1], float(tau[finite].mean()) if finite.any()
                         else np.nan, int(finite.sum()), len(names)))  # fmt: skip
    out = pd.DataFrame(rows, columns=RELIABILITY_COLUMNS)
    return out.astype({"k": np.int16, "seed": np.int64, "n_splits": np.int64,
                       "n_recommenders": np.int64})  # fmt: skip


def _seed_counts(n_seeds: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(1 + resamples) × seeds counts: the observed seeds (all 1), then multinomial resamples."""
    draws = rng.multinomial(n_seeds, np.full(n_seeds, 1.0 / n_seeds), size=resamples)
    return np.vstack([np.ones((1, n_seeds)), draws]).astype(np.float64)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / den, np.nan)


def _interval(draws: np.ndarray, level: float) -> tuple[float, float, float]:
    point, rest = draws[0], draws[1:]
    rest = rest[np.isfinite(rest)]
    if not np.isfinite(point) or rest.size == 0:
        return float(point), np.nan, np.nan
    low, high = np.quantile(rest, [0.5 - level / 2, 0.5 + level / 2])
    return float(point), float(low), float(high)


def _row_draws(block: pd.DataFrame, seeds: np.ndarray, counts: np.ndarray,
               excluded: set[str]) -> dict[str, np.ndarray]:  # fmt: skip
    """Every statistic of one row under each seed resample (row 0: the observed seeds)."""
    at = {s: j for j, s in enumerate(seeds)}
    slot = block["seed"].map(at).to_numpy()
    error = block["value"].to_numpy() - block["truth"].to_numpy()
    n_seeds = seeds.size
    sum_e = np.bincount(slot, weights=error, minlength=n_seeds)
    sum_e2 = np.bincount(slot, weights=error**2, minlength=n_seeds)
    n = np.bincount(slot, minlength=n_seeds).astype(np.float64)
    tau = np.full(n_seeds, np.nan)
    ranked = block[~block["recommender"].isin(excluded)]
    for seed, part in ranked.groupby("seed", sort=False):
        if len(part) >= 2:
            tau[at[seed]] = kendall_tau_b(part["truth"].to_numpy(), part["value"].to_numpy())
    has_tau = np.isfinite(tau)
    draws = {
        "bias": _ratio(counts @ sum_e, counts @ n),
        "rmse": np.sqrt(_ratio(counts @ sum_e2, counts @ n)),
        "tau": _ratio(counts @ np.where(has_tau, tau, 0.0), counts @ has_tau),
        "coverage": np.full(counts.shape[0], np.nan),
    }
    if {"boot_low", "boot_high"} <= set(block.columns):
        low, high = block["boot_low"].to_numpy(), block["boot_high"].to_numpy()
        finite = np.isfinite(low) & np.isfinite(high)
        truth = block["truth"].to_numpy()
        inside = finite & (low <= truth) & (truth <= high)
        hits = np.bincount(slot, weights=inside, minlength=n_seeds)
        total = np.bincount(slot, weights=finite, minlength=n_seeds)
        draws["coverage"] = _ratio(counts @ hits, counts @ total)
        draws["_n_intervals"] = np.array([finite.sum()])
    draws["_n_tau_seeds"] = np.array([has_tau.sum()])
    return draws


def scoreboard(
    scored: pd.DataFrame,
    per_seed: pd.DataFrame,
    *,
    truth: str,
    families: Mapping[str, str],
    excluded: Sequence[str] = (),
    reliability: pd.DataFrame | None = None,
    level: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The scoreboard (:data:`SCOREBOARD_COLUMNS`) and its paired comparisons
    (:data:`PAIR_COLUMNS`).

    ``scored``: the seeds' common-user means (:func:`common_means`); ``per_seed``: E1's
    per-seed metrics (recommender, seed, testset, metric, k, value, boot_low, boot_high), for
    the rows' bootstrap intervals (coverage) and the truth's own values (``CONSTANT``);
    ``families``: row -> its family (MAR sample, resampling, weighting); ``reliability``: the
    seeds' split-half reliability of gt (``GT_HALVES``). ``resamples`` seed resamples from
    ``rng`` give every interval at ``level``. Rows in the order of ``families``, then the
    baselines.
    """
    scored = scored[scored["metric"].isin(GAINS)]
    bounds = [c for c in ("boot_low", "boot_high") if c in per_seed.columns]
    keys = ["recommender", "seed", "testset", "metric", "k"]
    if bounds:
        scored = scored.merge(per_seed[[*keys, *bounds]], on=keys, how="left")
    scored = scored[np.isfinite(scored["value"]) & np.isfinite(scored["truth"])]
    seeds = np.sort(per_seed["seed"].unique())
    counts = _seed_counts(max(seeds.size, 1), resamples, rng)
    skip = set(excluded)
    order = {name: j for j, name in enumerate(families)}
    board, pairs = [], []
    own = per_seed[(per_seed["testset"] == truth) & per_seed["metric"].isin(GAINS)]
    blocks = sorted(
        {(m, k) for m, k in scored[["metric", "k"]].drop_duplicates().itertuples(index=False)}
        | {(m, k) for m, k in own[["metric", "k"]].drop_duplicates().itertuples(index=False)}
    )
    for metric, k in blocks:
        rows: dict[str, dict[str, np.ndarray]] = {}
        meta: dict[str, tuple[int, int, int, float]] = {}
        part = scored[(scored["metric"] == metric) & (scored["k"] == k)]
        for name, block in sorted(part.groupby("testset", sort=False),
                                  key=lambda item: order.get(item[0], len(order))):  # fmt: skip
            rows[name] = _row_draws(block, seeds, counts, skip)
            meta[name] = (block["recommender"].nunique(), block["seed"].nunique(), len(block),
                          float(block["n_users"].mean()))  # fmt: skip
        reference = own[(own["metric"] == metric) & (own["k"] == k)]
        if len(reference):
            const = reference.assign(
                truth=reference["value"],
                value=reference.groupby("seed")["value"].transform("mean"),
                n_users=reference["n_users"] if "n_users" in reference else np.nan,
            ).drop(columns=bounds)
            rows[CONSTANT] = _row_draws(const, seeds, counts, skip)
            meta[CONSTANT] = (const["recommender"].nunique(), const["seed"].nunique(),
                              len(const), float(np.nanmean(const["n_users"])))  # fmt: skip
        if reliability is not None and truth != TRUE:
            rel = reliability[(reliability["metric"] == metric) & (reliability["k"] == k)]
            if len(rel):
                at = {s: j for j, s in enumerate(seeds)}
                tau = np.full(seeds.size, np.nan)
                tau[rel["seed"].map(at).to_numpy()] = rel["tau"].to_numpy()
                has = np.isfinite(tau)
                nan = np.full(counts.shape[0], np.nan)
                rows[GT_HALVES] = {
                    "bias": nan, "rmse": nan, "coverage": nan,
                    "tau": _ratio(counts @ np.where(has, tau, 0.0), counts @ has),
                    "_n_tau_seeds": np.array([has.sum()]),
                }  # fmt: skip
                meta[GT_HALVES] = (int(rel["n_recommenders"].max()), int(has.sum()), 0, np.nan)
        for name, draws in rows.items():
            n_recs, n_seeds, n_pairs, n_users = meta[name]
            record = {
                "testset": name,
                "family": "baseline" if name in BASELINES else families.get(name, ""),
                "metric": metric, "k": k, "truth": truth, "n_recommenders": n_recs,
                "n_seeds": n_seeds, "n_pairs": n_pairs, "n_users": n_users,
                "n_tau_seeds": int(draws["_n_tau_seeds"][0]), "level": float(level),
                "n_intervals": int(draws.get("_n_intervals", [0])[0]),
            }  # fmt: skip
            for stat in _STATS:
                point, low, high = _interval(draws[stat], level)
                record.update({stat: point, f"{stat}_low": low, f"{stat}_high": high})
            board.append(record)
        names = [n for n in rows if n != GT_HALVES]
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                da, db = rows[names[a]], rows[names[b]]
                record = {"metric": metric, "k": k, "testset_a": names[a], "testset_b": names[b]}
                for stat, x, y in (("abs_bias", np.abs(da["bias"]), np.abs(db["bias"])),
                                   ("rmse", da["rmse"], db["rmse"]),
                                   ("tau", da["tau"], db["tau"])):  # fmt: skip
                    point, low, high = _interval(x - y, level)
                    record.update({f"d_{stat}": point, f"d_{stat}_low": low,
                                   f"d_{stat}_high": high})  # fmt: skip
                pairs.append(record)
    out = pd.DataFrame(board, columns=SCOREBOARD_COLUMNS)
    ints = ["n_recommenders", "n_seeds", "n_pairs", "n_tau_seeds", "n_intervals"]
    out = out.astype({**dict.fromkeys(ints, np.int64), "k": np.int16})
    paired = pd.DataFrame(pairs, columns=PAIR_COLUMNS).astype({"k": np.int16})
    return out.reset_index(drop=True), paired


SEPARATION_COLUMNS = [
    "metric", "k", "truth", "best", "best_mean", "best_low", "best_high", "worst", "worst_mean",
    "worst_ranked", "worst_ranked_mean", "separates_ranked", "separates_any",
]  # fmt: skip
"""Columns of :func:`truth_separation`."""


def truth_separation(
    per_seed: pd.DataFrame,
    *,
    truth: str,
    excluded: Sequence[str] = (),
    level: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """Whether the truth itself separates the recommenders, per block of :data:`GAINS`.

    From the truth's own per-seed values: the recommender with the best mean over seeds and
    its percentile interval from ``resamples`` seed resamples; ``separates_ranked`` when the
    worst of the ranked recommenders (all but ``excluded``) lies below that interval,
    ``separates_any`` when the worst of all does. When the ranked ones are not separated, τ
    against the truth measures noise and no row can be named best."""
    own = per_seed[(per_seed["testset"] == truth) & per_seed["metric"].isin(GAINS)]
    seeds = np.sort(own["seed"].unique())
    counts = _seed_counts(max(seeds.size, 1), resamples, rng)
    at = {s: j for j, s in enumerate(seeds)}
    rows = []
    for (metric, k), block in own.groupby(["metric", "k"], sort=True):
        means = {}
        draws = {}
        for rec, part in block.groupby("recommender", sort=False):
            values = np.zeros(seeds.size)
            has = np.zeros(seeds.size)
            slots = part["seed"].map(at).to_numpy()
            values[slots], has[slots] = part["value"].to_numpy(), 1.0
            draws[rec] = _ratio(counts @ values, counts @ has)
            means[rec] = draws[rec][0]
        ranked = [r for r in means if r not in set(excluded)] or list(means)
        best = max(ranked, key=lambda r: means[r])
        _, low, high = _interval(draws[best], level)
        worst = min(means, key=lambda r: means[r])
        worst_ranked = min(ranked, key=lambda r: means[r])
        below = np.isfinite(low)
        rows.append((metric, k, truth, best, means[best], low, high, worst, means[worst],
                     worst_ranked, means[worst_ranked],
                     bool(below and means[worst_ranked] < low and worst_ranked != best),
                     bool(below and means[worst] < low and worst != best)))  # fmt: skip
    return pd.DataFrame(rows, columns=SEPARATION_COLUMNS).astype({"k": np.int16})


def _num(x: float, digits: int = 4) -> str:
    if not np.isfinite(x):
        return "∞" if x == np.inf else ("−∞" if x == -np.inf else "")
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def _cell(point: float, low: float, high: float, digits: int = 4) -> str:
    if not np.isfinite(point):
        return ""
    text = _num(point, digits)
    return f"{text} [{_num(low, digits)}, {_num(high, digits)}]" if np.isfinite(low) else text


def verdict(board: pd.DataFrame, pairs: pd.DataFrame, separation: pd.Series | None) -> str:
    """One line on one (metric, k) of the scoreboard: whether the truth separates the
    recommenders and, only if it does, which row comes closest to it and how surely."""
    truth = board["truth"].iloc[0] if len(board) else "gt"
    level = float(board["level"].iloc[0]) if len(board) else 0.95
    if separation is not None and not separation["separates_ranked"]:
        text = (
            f"{truth} cannot separate the ranked recommenders: {separation['worst_ranked']} "
            f"({_num(separation['worst_ranked_mean'])}) lies within the {level:.0%} interval of "
            f"{separation['best']} [{_num(separation['best_low'])}, "
            f"{_num(separation['best_high'])}]"
        )
        if not separation["separates_any"] and separation["worst"] != separation["worst_ranked"]:
            text += f", and so does {separation['worst']}"
        return text + "; τ measures noise here, and no row is named best."
    rows = board[~board["testset"].isin(BASELINES) & np.isfinite(board["rmse"])]
    if rows.empty:
        return "No row has a value to score."
    ranked = rows.sort_values("rmse", kind="stable")
    best = ranked.iloc[0]
    rmse = _cell(best["rmse"], best["rmse_low"], best["rmse_high"])
    text = f"Lowest RMSE: {best['testset']} ({rmse})"

    def diff(a: str, b: str) -> pd.Series | None:
        hit = pairs[(pairs["testset_a"] == a) & (pairs["testset_b"] == b)]
        if len(hit):
            return hit.iloc[0]
        hit = pairs[(pairs["testset_a"] == b) & (pairs["testset_b"] == a)]
        if len(hit):
            row = hit.iloc[0].copy()
            row["d_rmse"], row["d_rmse_low"], row["d_rmse_high"] = (
                -row["d_rmse"], -row["d_rmse_high"], -row["d_rmse_low"])  # fmt: skip
            return row
        return None

    if len(ranked) > 1:
        runner = ranked.iloc[1]["testset"]
        d = diff(best["testset"], runner)
        if d is not None:
            sure = np.isfinite(d["d_rmse_high"]) and d["d_rmse_high"] < 0
            gap = -float(d["d_rmse"])
            text += (
                f", {_num(gap) if abs(gap) >= 5e-5 else f'{gap:.1e}'} below {runner}"
                f" ({'significant' if sure else 'not significant'}: difference "
                f"{_cell(d['d_rmse'], d['d_rmse_low'], d['d_rmse_high'])})"
            )
    constant = board[board["testset"] == CONSTANT]
    if len(constant):
        c = diff(best["testset"], CONSTANT)
        beats = c is not None and np.isfinite(c["d_rmse_high"]) and c["d_rmse_high"] < 0
        text += (
            f"; CONSTANT's RMSE is {_num(constant['rmse'].iloc[0])}, which it "
            f"{'beats' if beats else 'does not beat significantly'}"
        )
    return text + "."


def scoreboard_markdown(
    board: pd.DataFrame,
    pairs: pd.DataFrame,
    dataset: str,
    separation: pd.DataFrame | None = None,
) -> str:
    """The scoreboard for people (``estimator_accuracy.md``): per (metric, k) a verdict
    (:func:`verdict`), the rows with every statistic's interval over seeds, and the lowest-RMSE
    row compared with every other."""
    truth = board["truth"].iloc[0] if len(board) else "gt"
    level = float(board["level"].iloc[0]) if len(board) else 0.95
    what = (
        "the exact value from the full rating matrix (`TRUE`)"
        if truth == TRUE
        else "the MAR ground truth `gt`, itself an estimate from a random sample"
    )
    parts = [
        f"# E1 on {dataset}: the estimator arena's scoreboard\n\n"
        f"Each test set or estimator against {what}, over recommenders × seeds, each averaged "
        "with the truth over the same users (a positive held-out pair and a relevant truth "
        "item): `bias` (mean estimate − truth), `RMSE`, `τ` (Kendall's τ-b of the recommender "
        "ranking vs the truth within a seed, mean over seeds) and `coverage` (share of the "
        f"per-seed {level:.0%} bootstrap intervals over users that hold the truth). In "
        f"brackets, each statistic's {level:.0%} interval from a bootstrap over seeds. "
        "`CONSTANT` gives every recommender the seed's mean truth: a row whose RMSE is not "
        "below it says nothing about differences between models. "
        + (
            "`GT_HALVES` is τ between the rankings on two random halves of the gt users: "
            "the agreement no row can be expected to exceed. "
            if truth != TRUE
            else ""
        )
        + "Only Recall and the per-relevant-item DCG are scored: their test-set values "
        "estimate the full-matrix ones.\n"
    ]
    for (metric, k), block in board.groupby(["metric", "k"], sort=True):
        sep = None
        if separation is not None:
            hit = separation[(separation["metric"] == metric) & (separation["k"] == k)]
            sep = hit.iloc[0] if len(hit) else None
        sub = pairs[(pairs["metric"] == metric) & (pairs["k"] == k)]
        parts.append(f"\n## {metric}@{k}\n\n**Verdict.** {verdict(block, sub, sep)}\n\n")
        table = pd.DataFrame(
            {
                "row": block["testset"],
                "family": block["family"],
                **{
                    name: [
                        _cell(r[s], r[f"{s}_low"], r[f"{s}_high"], 3 if s == "tau" else 4)
                        for _, r in block.iterrows()
                    ]
                    for name, s in (
                        ("bias", "bias"),
                        ("RMSE", "rmse"),
                        ("τ", "tau"),
                        ("coverage", "coverage"),
                    )
                },
                "users": [_num(v, 1) for v in block["n_users"]],
            }
        )
        parts.append(markdown_table(table))
        rows = block[~block["testset"].isin(BASELINES) & np.isfinite(block["rmse"])]
        if len(rows) > 1 and len(sub):
            best = rows.sort_values("rmse", kind="stable").iloc[0]["testset"]
            mine = sub[(sub["testset_a"] == best) | (sub["testset_b"] == best)]
            sign = np.where(mine["testset_a"] == best, 1.0, -1.0)
            other = np.where(mine["testset_a"] == best, mine["testset_b"], mine["testset_a"])
            cells = {}
            for stat, name in (("rmse", "Δ RMSE"), ("abs_bias", "Δ abs. bias"), ("tau", "Δ τ")):
                p, lo, hi = (mine[f"d_{stat}"] * sign, mine[f"d_{stat}_low"] * sign,
                             mine[f"d_{stat}_high"] * sign)  # fmt: skip
                lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
                cells[name] = [_cell(a, b, c) for a, b, c in zip(p, lo, hi, strict=True)]
            parts.append(
                f"\n{best} minus each other row, with the {level:.0%} interval of the "
                "difference from the same seed resamples (an interval below 0 in Δ RMSE: "
                f"{best} is surely closer):\n\n"
                + markdown_table(pd.DataFrame({"other row": other, **cells}))
            )
    return "".join(parts)
