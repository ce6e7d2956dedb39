"""E6's steps: a dataset's time-stamped log and its snapshots, and every recommender's
leave-one-out score over time, unweighted and with KL weights, per seed (rule
``e6_evaluate``), and what the workflow asks of E6 before any job: the parts of a dataset it
needs, its outputs, its config check ([MYT14]; docs/experiments/e6.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.data.campaigns import simulate_campaigns
from debiaseval.data.draws import generator_block
from debiaseval.data.snapshots import count_cuts, date_cuts, snapshot_masks
from debiaseval.data.splits import run_rng
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.debiasing.kl_weights import (
    fit_kl_weight_path,
    item_marginal,
    kl_objective,
    pair_weights,
)
from debiaseval.debiasing.kl_weights import profile_matrix as _profile_matrix
from debiaseval.evaluation.leave_one_out import (
    COSINE_NEIGHBOUR_EXPONENT,
    constant_hits,
    cosine_cf_hits,
    loo_interval,
    naive_cf_hits,
    sampled_hits,
    user_hit_rates,
)
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.errors import ConfigError

__all__ = [
    "NEEDS",
    "OUTPUTS",
    "RECOMMENDERS",
    "TABLES",
    "E6Evaluate",
    "check_config",
    "constant_lists",
    "evaluate_over_time",
    "run_seed",
    "snapshot_profiles",
    "time_log",
]

NEEDS: tuple[tuple[str, ...], ...] = (("mnar", "timestamps"), ("campaigns",))
"""The parts E6 needs of a dataset (:mod:`debiaseval.data.catalog`): a time-stamped MNAR log,
or the synthetic truth with simulated campaigns."""


TABLES = ("scores", "weights", "snapshots", "lists")
"""The tables of one run (``results/<study>/e6/<dataset>/seed<s>/<table>.parquet``) and
aggregated."""


OUTPUTS = (
    "verdict.md",
    "scores.parquet",
    "weights.parquet",
    "snapshots.parquet",
    "lists.parquet",
    "scores.md",
)
"""E6's aggregated files in ``results/<study>/e6/<dataset>/``."""


RECOMMENDERS: tuple[str, ...] = ("g1", "g2", "cosine_cf", "naive_cf")
"""The recommenders of [MYT14] §4–5, by their output names."""


@dataclasses.dataclass(frozen=True)
class E6Evaluate(StepConfig):
    """What rule ``e6_evaluate`` reads of the ``e6`` block (docs/experiments/e6.md)."""

    BLOCK: ClassVar[str] = "e6"
    snapshots: int | list[str]
    campaign: dict[str, Any]
    n_boosted: int
    recommenders: list[str]
    k: int
    active_items: list[int | str]
    min_profile: int
    cosine_neighbour_exponent: float
    protocol: str
    n_draws: int
    interval: str
    confidence: float
    resamples: int
    sample_users: int | None
    kl: dict[str, Any]


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e6`` block (after schema validation); raise ``ConfigError``."""
    block = config["e6"]
    uses_g1 = "g1" in block["recommenders"]
    for key, value in (
        ("n_boosted", block["n_boosted"]),
        ("campaign.n_boosted", block["campaign"]["n_boosted"]),
    ):
        if uses_g1 and value < block["k"]:
            raise ConfigError(
                f"config error at 'e6.{key}': {value} boosted items cannot fill g1's list of "
                f"k = {block['k']}"
            )
    n_items = config["synthetic"]["n_items"]
    if "synthetic" in block["datasets"] and block["campaign"]["n_boosted"] > n_items:
        raise ConfigError(
            f"config error at 'e6.campaign.n_boosted': {block['campaign']['n_boosted']} exceeds "
            f"the synthetic dataset's {n_items} items"
        )
    if not isinstance(block["snapshots"], int):
        try:
            date_cuts(block["snapshots"], np.array([np.iinfo(np.int64).min], dtype=np.int64))
        except ValueError as exc:
            raise ConfigError(f"config error at 'e6.snapshots': {exc}") from None


def _top(values: np.ndarray, among: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` ids of ``among`` with the largest ``values`` (ties: smaller id), sorted by rank."""
    order = np.lexsort((among, -values[among]))
    return among[order[:k]]


def time_log(
    dataset: str,
    *,
    interactions: pd.DataFrame | None,
    n_users: int,
    n_items: int,
    snapshots: int | Sequence[str],
    campaign: Mapping[str, Any],
    synthetic: Mapping[str, Any],
    seed: int,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray | None]:
    """(log, cuts, boosted) of a dataset: ``user``, ``item``, ``timestamp`` rows and the cuts.

    ``synthetic``: the truth of :func:`generate_synthetic` (``synthetic`` params)
    observed over ``campaign["n_periods"]`` periods with ``campaign["n_boosted"]``
    items boosted ``campaign["boost"]``-fold after t0 (rng ``run_rng(seed,
    "synthetic", "e6_campaigns")``); one snapshot per period; ``boosted`` = the
    campaign's items. Other datasets: the ``mnar`` rows of ``interactions``
    (which need a ``timestamp``), cut into ``snapshots`` (a count or ISO dates);
    ``boosted`` None (chosen from the data by :func:`evaluate_over_time`).
    """
    if dataset == "synthetic":
        truth = generate_synthetic(**generator_block(synthetic))
        log = simulate_campaigns(
            truth.ratings,
            truth.propensities,
            n_periods=int(campaign["n_periods"]),
            n_boosted=int(campaign["n_boosted"]),
            boost=float(campaign["boost"]),
            rng=run_rng(seed, dataset, "e6_campaigns"),
        )
        cuts = np.arange(1, int(campaign["n_periods"]) + 1, dtype=np.int64)
        return log.interactions[["user", "item", "timestamp"]], cuts, log.boosted
    if interactions is None or "timestamp" not in interactions.columns:
        raise ValueError(f"E6 needs time-stamped interactions; {dataset!r} has no 'timestamp'")
    rows = interactions[interactions["part"] == "mnar"] if "part" in interactions else interactions
    log = rows[["user", "item", "timestamp"]].reset_index(drop=True)
    ts = log["timestamp"].to_numpy()
    cuts = count_cuts(ts, snapshots) if isinstance(snapshots, int) else date_cuts(snapshots, ts)
    del n_users, n_items  # the ids are already contiguous
    return log, cuts, None


def snapshot_profiles(
    log: pd.DataFrame, cuts: np.ndarray, *, n_users: int, n_items: int, min_profile: int
) -> list:
    """Binary profile matrices of every snapshot, users with < ``min_profile`` items emptied."""
    out = []
    for mask in snapshot_masks(log["timestamp"].to_numpy(), cuts):
        x = _profile_matrix(
            log["user"].to_numpy()[mask], log["item"].to_numpy()[mask], n_users, n_items
        )
        small = np.diff(x.indptr) < min_profile
        if small.any():
            keep = np.repeat(~small, np.diff(x.indptr)).astype(np.float64)
            x.data *= keep
            x.eliminate_zeros()
        if x.nnz == 0:
            raise ValueError(f"a snapshot has no user with >= {min_profile} items")
        out.append(x)
    return out


def constant_lists(
    profiles: Sequence, boosted: np.ndarray | None, *, n_boosted: int, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(boosted set B, g1's list, g2's list) from the first and last snapshot ([MYT14] §4).

    B defaults to the ``n_boosted`` items whose unweighted marginal grows most
    from t0 to the last snapshot; g1 = the ``k`` items of B that grow most,
    g2 = the ``k`` items most frequent at t0 outside B (ties by smaller id).
    """
    first, last = profiles[0], profiles[-1]
    growth = item_marginal(last) - item_marginal(first)
    n_items = first.shape[1]
    if boosted is None:
        boosted = np.sort(_top(growth, np.arange(n_items), n_boosted))
    g1 = _top(growth, np.asarray(boosted, dtype=np.int64), k)
    counts = np.diff(first.tocsc().indptr).astype(np.float64)
    never = np.setdiff1d(np.arange(n_items), boosted)
    g2 = _top(counts, never, k)
    return np.asarray(boosted, dtype=np.int64), g1, g2


def _hits(
    name: str,
    x,
    lists: Mapping[str, np.ndarray],
    k: int,
    users: np.ndarray | None,
    cosine_neighbour_exponent: float = COSINE_NEIGHBOUR_EXPONENT,
):
    if name in lists:
        rows = x if users is None else x[users]
        return constant_hits(rows, lists[name])
    if name == "naive_cf":
        return naive_cf_hits(x, k=k, users=users)
    if name == "cosine_cf":
        return cosine_cf_hits(x, k=k, users=users, neighbour_exponent=cosine_neighbour_exponent)
    raise ValueError(f"unknown E6 recommender {name!r}; expected one of {', '.join(RECOMMENDERS)}")


def evaluate_over_time(
    log: pd.DataFrame,
    cuts: np.ndarray,
    step: E6Evaluate,
    *,
    n_users: int,
    n_items: int,
    boosted: np.ndarray | None,
    dataset: str,
    seed: int,
) -> dict[str, pd.DataFrame]:
    """Scores of every recommender at every snapshot, unweighted and KL-weighted ([MYT14]).

    Returns the tables (each with ``seed`` first) ``scores`` (``t``,
    ``recommender``, ``weighting``, ``p``, ``score``, ``ci_low``, ``ci_high``,
    ``kl_divergence`` = D(ω) at the optimum, D(1) unweighted), ``weights``
    (``t``, ``p``, ``item``, ``weight``: the non-unit ω), ``snapshots`` (``t``,
    ``cut``, ``n_interactions``, ``n_users``, ``n_items``, ``n_evaluated``) and
    ``lists`` (``list`` g1/g2/boosted, ``rank``, ``item``).
    ``step.active_items`` lists p ("all" = every item; stored as p = n_items); the
    unweighted rows have p = 0. ``step.sample_users`` evaluates the leave-one-out on a
    uniform sample of that many users (exact over their profiles); the weights
    are always fitted on every user. ``step.protocol="sampled"`` scores ``n_draws`` draws of
    (user, held-out item) per recommender, weighting and t, as [MYT14] do
    (:func:`~debiaseval.evaluation.leave_one_out.sampled_hits`; the interval's n is then
    ``n_draws``); "exact" scores their expectation. ``step.cosine_neighbour_exponent`` is the
    exponent γ of the neighbour's profile size in ``cosine_cf``
    (:func:`~debiaseval.evaluation.leave_one_out.cosine_cf_scores`; ½, the cosine).
    """
    if step.protocol not in ("exact", "sampled"):
        raise ValueError(f"unknown protocol {step.protocol!r}; expected exact or sampled")
    k, sample_users = step.k, step.sample_users
    profiles = snapshot_profiles(
        log, cuts, n_users=n_users, n_items=n_items, min_profile=step.min_profile
    )
    boosted, g1, g2 = constant_lists(profiles, boosted, n_boosted=step.n_boosted, k=k)
    lists = {"g1": g1, "g2": g2}
    users = None
    if sample_users is not None and sample_users < n_users:
        rng = run_rng(seed, dataset, "e6_users")
        users = np.sort(rng.choice(n_users, size=sample_users, replace=False))
    ps = [n_items if p in (None, "all") else min(int(p), n_items) for p in step.active_items]
    p_ref = item_marginal(profiles[0])
    ts = log["timestamp"].to_numpy()
    score_rows, weight_frames, snap_rows = [], [], []
    for t, (x, cut) in enumerate(zip(profiles, cuts, strict=True)):
        fits = fit_kl_weight_path(x, p_ref, ps, **step.kl)
        variants = [("none", 0, np.ones(n_items), kl_objective(x, p_ref)[0])]
        variants += [("kl", p, f.weights, f.divergence) for p, f in zip(ps, fits, strict=True)]
        for p, fit in zip(ps, fits, strict=True):
            moved = np.flatnonzero(fit.weights != 1.0)
            weight_frames.append(
                pd.DataFrame(
                    {
                        "t": np.int16(t),
                        "p": np.int32(p),
                        "item": moved.astype(np.int32),
                        "weight": fit.weights[moved],
                    }
                )
            )
        evaluated = x if users is None else x[users]
        for name in step.recommenders:
            hits = _hits(name, x, lists, k, users, step.cosine_neighbour_exponent)
            for weighting, p, w, divergence in variants:
                probs = pair_weights(evaluated, w)
                if step.protocol == "sampled":
                    draw_rng = run_rng(seed, dataset, "e6_draws", str(t), name, weighting, str(p))
                    rates = sampled_hits(hits, probs, step.n_draws, draw_rng)
                else:
                    rates = user_hit_rates(hits, probs)
                score, low, high = loo_interval(
                    rates,
                    interval=step.interval,
                    confidence=step.confidence,
                    rng=run_rng(seed, dataset, "e6_bootstrap", str(t), name, weighting, str(p)),
                    resamples=step.resamples,
                )
                score_rows.append((t, name, weighting, p, score, low, high, divergence))
        snap_rows.append(
            (
                t,
                int(cut),
                int(np.sum(ts < cut)),
                int(np.sum(np.diff(x.indptr) > 0)),
                int(np.sum(np.diff(x.tocsc().indptr) > 0)),
                int(np.sum(np.diff(evaluated.indptr) > 0)),
            )
        )
    scores = pd.DataFrame(
        score_rows,
        columns=[
            "t",
            "recommender",
            "weighting",
            "p",
            "score",
            "ci_low",
            "ci_high",
            "kl_divergence",
        ],
    ).astype({"t": np.int16, "p": np.int32})
    weights = pd.concat(weight_frames, ignore_index=True)
    snaps = pd.DataFrame(
        snap_rows, columns=["t", "cut", "n_interactions", "n_users", "n_items", "n_evaluated"]
    ).astype({"t": np.int16})
    lists_frame = pd.DataFrame(
        {
            "list": ["g1"] * g1.size + ["g2"] * g2.size + ["boosted"] * boosted.size,
            "rank": np.concatenate(
                [
                    np.arange(1, g1.size + 1),
                    np.arange(1, g2.size + 1),
                    np.zeros(boosted.size, dtype=np.int64),
                ]
            ).astype(np.int16),
            "item": np.concatenate([g1, g2, boosted]).astype(np.int32),
        }
    )
    tables = {"scores": scores, "weights": weights, "snapshots": snaps, "lists": lists_frame}
    for frame in tables.values():
        frame.insert(0, "seed", np.int32(seed))
    return tables


def run_seed(
    dataset: str,
    seed: int,
    step: E6Evaluate,
    *,
    synthetic: Mapping[str, Any],
    interactions: pd.DataFrame | None = None,
    n_users: int | None = None,
    n_items: int | None = None,
) -> dict[str, pd.DataFrame]:
    """One run of E6 on ``dataset`` with the step's config ``step``
    (:meth:`E6Evaluate.of` the validated config): its tables.

    ``synthetic`` is the generator block of the seed's draw of synthetic
    (:func:`~debiaseval.data.draws.seed_block`, used for ``dataset == "synthetic"``); real
    datasets need ``interactions`` and their ``n_users`` and ``n_items``.
    """
    if dataset == "synthetic":
        n_users, n_items = int(synthetic["n_users"]), int(synthetic["n_items"])
    elif n_users is None or n_items is None:
        raise ValueError(f"{dataset}: give n_users and n_items with the interactions")
    log, cuts, boosted = time_log(
        dataset,
        interactions=interactions,
        n_users=n_users,
        n_items=n_items,
        snapshots=step.snapshots,
        campaign=step.campaign,
        synthetic=synthetic,
        seed=seed,
    )
    return evaluate_over_time(
        log,
        cuts,
        step,
        n_users=n_users,
        n_items=n_items,
        boosted=boosted,
        dataset=dataset,
        seed=seed,
    )
