"""E5's steps: the fully exposed or observed data, the simulated exposure, and every model's
or list's Recall@K estimates per seed (rules ``e5_full``, ``e5_expose``, ``e5_evaluate``,
``e5_evaluate_seeds``), and what the workflow asks of E5 before any job: the parts of a
dataset it needs, its outputs, its config check ([URE24]; docs/experiments/e5.md)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.data.draws import generator_block
from debiaseval.data.exposure import (
    attribute_weights,
    inverse_attribute_weights,
    item_popularity,
    popularity_weights,
    simulate_exposure,
)
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.semireal import block_frames
from debiaseval.data.splits import run_rng
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.evaluation.external_lists import (
    ListScores,
    check_depth,
    prepare_lists,
    traditional_decided,
)
from debiaseval.evaluation.ure import mean_recall, recall_estimates
from debiaseval.experiments.e5.tables import evaluated_users, per_user_values, users_k_ge_exposed
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.errors import ConfigError
from debiaseval.io.schema import expand_grid
from debiaseval.recommenders.registry import make_recommender
from debiaseval.selection.specs import check_recommender_spec
from debiaseval.selection.tuning import recommender_params

__all__ = [
    "EXPORT",
    "FULLY_EXPOSED",
    "MAR_PARTS",
    "NEEDS",
    "OUTPUTS",
    "E5Evaluate",
    "check_config",
    "evaluate_lists",
    "evaluate_models",
    "evaluate_models_on_seeds",
    "expose",
    "fit_seed",
    "full_data",
    "fully_exposed_frames",
    "identity_tables",
    "observed_data",
    "shared_fit_seed",
    "trains_once",
]

MAR_PARTS = ("exposed", "validation")
"""Labels of the MAR part without full data: the random set R (``mar_test_fraction`` of it)
and the rest, set aside as [URE24] sets aside 10% of Yahoo! R3's MAR part for validation
(no model of E5 is selected on it)."""


FULLY_EXPOSED = ("synthetic", "kuairec", "jester5k")
"""Datasets with full truth: exposure is simulated on them (synthetic's full matrix, KuaiRec's
small matrix, Jester5k's fully observed block)."""


NEEDS: tuple[tuple[str, ...], ...] = (("mnar", "mar"), ("full",))
"""The parts E5 needs of a dataset (:mod:`debiaseval.data.catalog`): MNAR and MAR (MAR = the
random set, no truth), or fully exposed data (exposure simulated, :data:`FULLY_EXPOSED`)."""


OUTPUTS = (
    "verdict.md",
    "estimates.parquet",
    "agreement.parquet",
    "comparisons.parquet",
    "estimates.md",
    "agreement.md",
)
"""E5's aggregated files in ``results/<study>/e5/<dataset>/``."""


EXPORT = {"train": "train"}
"""The part of a seed's exposure exported in raw ids
(``results/<study>/e5/<dataset>/export/seed<s>/``):
the biased training set (MNAR on a dataset without full data); E5 has no validation part."""


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e5`` block (datasets, algorithms, parameters, attribute)."""
    e5 = config["e5"]
    for name, spec in e5["models"].items():
        check_recommender_spec(spec, f"e5.models.{name}")
    exposure = e5["exposure"]
    if exposure["by"] != "popularity" and not exposure["attribute"]:
        raise ConfigError(
            f"config error at 'e5.exposure.attribute': by: {exposure['by']} needs the name of "
            "a numeric item column"
        )


def fit_seed(seed: int, dataset: str, model: str) -> int:
    """The models' fit seed of run ``seed`` (independent across datasets and model entries)."""
    return int(run_rng(seed, dataset, "e5_fit", model).integers(2**31 - 1))


def full_data(synthetic: Mapping[str, Any]) -> pd.DataFrame:
    """``synthetic``'s full rating matrix as fully exposed pairs (user, item, rating, part)."""
    ratings = generate_synthetic(**generator_block(synthetic)).ratings
    users, items = np.indices(ratings.shape).reshape(2, -1)
    return pd.DataFrame(
        {
            "user": users.astype(np.int32),
            "item": items.astype(np.int32),
            "rating": ratings.ravel().astype(np.float32),
            "part": "full",
        }
    )


def fully_exposed_frames(
    dataset: str, raw: str | Path
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The fully exposed ``(interactions, users, items)`` of a real dataset of
    :data:`FULLY_EXPOSED` from its raw folder: KuaiRec's small matrix
    (:func:`~debiaseval.data.kuairec.fully_exposed_frame`) or Jester5k's fully observed block
    (:func:`~debiaseval.data.semireal.block_frames`)."""
    if dataset == "kuairec":
        from debiaseval.data.kuairec import fully_exposed_frame, load_kuairec

        return fully_exposed_frame(load_kuairec(raw))
    if dataset == "jester5k":
        from debiaseval.data.jester import jester5k_block

        return block_frames(jester5k_block(raw))
    raise ValueError(f"{dataset!r} has no fully exposed raw data (one of {FULLY_EXPOSED[1:]})")


def identity_tables(full: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Users and items tables of data whose raw ids are its ids (``synthetic``'s full matrix):
    ``user``/``raw_user`` and ``item``/``raw_item``, 0 .. max id."""
    return tuple(
        pd.DataFrame({kind: ids.astype(np.int32), f"raw_{kind}": ids.astype(np.int64)})
        for kind, ids in ((kind, np.arange(int(full[kind].max()) + 1)) for kind in ("user", "item"))
    )


def observed_data(
    interactions: pd.DataFrame,
    *,
    test_fraction: float = 1.0,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """An MNAR/MAR dataset as E5 parts (no truth): every MNAR pair → ``train``; a uniform
    random ``test_fraction`` of the MAR pairs (round(fraction · #MAR) of them, drawn with
    ``rng``) → ``exposed``, the random set R, and the rest → ``validation``, set aside
    ([URE24] tests on 90% of Yahoo! R3's MAR part). Time stamps are kept where the dataset
    has them (for the exported training set). The users evaluated are those with a positive
    in R, whatever the users of MNAR."""
    parts = set(interactions["part"].unique())
    if not {"mnar", "mar"} <= parts:
        raise ValueError(
            f"E5 without full data needs 'mnar' and 'mar' parts, found {sorted(parts)}"
        )
    if not 0 < test_fraction <= 1:
        raise ValueError(f"test_fraction must be in (0, 1], got {test_fraction!r}")
    columns = ["user", "item", "rating"] + (["timestamp"] if "timestamp" in interactions else [])
    kept = interactions["part"].isin(["mnar", "mar"]).to_numpy()
    out = interactions.loc[kept, columns].reset_index(drop=True)
    mar = np.flatnonzero(interactions["part"].to_numpy()[kept] == "mar")
    label = np.zeros(len(out), dtype=np.int8)  # 0 train, 1 exposed, 2 validation
    label[mar] = 1
    n_test = round(test_fraction * mar.size)
    if n_test < mar.size:
        if rng is None:
            raise ValueError("a test_fraction below 1 needs a numpy Generator (rng=None)")
        label[mar[np.sort(rng.permutation(mar.size)[n_test:])]] = 2
    out["part"] = np.array(("train", *MAR_PARTS))[label]
    return out


def expose(
    full: pd.DataFrame,
    *,
    n_items: int,
    exposure: Mapping[str, Any],
    positive_threshold: float,
    rng: np.random.Generator,
    items: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Simulated exposure of fully exposed data
    (:func:`debiaseval.data.exposure.simulate_exposure`).

    Returns user, item, rating, part ∈ {train, exposed, unexposed}, every pair of ``full``.
    """
    strength = float(exposure["strength"])
    if exposure["by"] == "popularity":
        pop = item_popularity(full, n_items, positive_threshold=positive_threshold)
        weights = popularity_weights(pop, strength)
    else:
        column = exposure["attribute"]
        if items is None or column not in items.columns:
            raise ValueError(
                f"e5.exposure.attribute {column!r}: the dataset's items table has no such column"
            )
        values = items.set_index("item")[column].reindex(np.arange(n_items)).to_numpy(np.float64)
        form = attribute_weights if exposure["by"] == "attribute" else inverse_attribute_weights
        try:
            weights = form(values, strength)
        except ValueError as exc:
            raise ValueError(f"e5.exposure.attribute {column!r}: {exc}") from None
    labelled = simulate_exposure(
        full[["user", "item", "rating"]],
        weights,
        train_fraction=float(exposure["train_fraction"]),
        n_exposed=int(exposure["n_exposed"]),
        rng=rng,
    )
    return labelled.reset_index(drop=True)


@dataclasses.dataclass(frozen=True)
class E5Expose(StepConfig):
    """What rule ``e5_expose`` reads of the ``e5`` block: ``exposure`` and the positive
    threshold on a fully exposed dataset (:func:`expose`), ``mar_test_fraction`` on another
    (:func:`observed_data`)."""

    BLOCK: ClassVar[str] = "e5"
    exposure: dict[str, Any]
    mar_test_fraction: float
    positive_threshold: float


@dataclasses.dataclass(frozen=True)
class E5Evaluate(StepConfig):
    """What rules ``e5_evaluate`` and ``e5_evaluate_seeds`` read of the ``e5`` block for one
    model entry: the entry (``spec``: its ``algorithm`` and ``params`` and ``grid``, or its
    lists' ``ids`` and ``on_train_items``), the cut-offs and how recall is scored."""

    BLOCK: ClassVar[str] = "e5"
    model: str
    spec: dict[str, Any]
    ks: list[int]
    positive_threshold: float
    ties: str
    batch_size: int

    @classmethod
    def of(cls, config: Mapping[str, Any], dataset: str, model: str = "") -> E5Evaluate:
        """Model entry ``model`` of the validated ``config`` on ``dataset`` (its positive
        threshold: the block's, else the dataset's convention)."""
        spec = config["e5"]["models"][model]
        return cls(**cls.values(config, dataset), model=model, spec=spec)


def evaluate_models(
    labelled: pd.DataFrame,
    step: E5Evaluate,
    *,
    n_users: int,
    n_items: int,
    seed: int,
    per_user: list[pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Train every grid point of model entry ``step.model`` (``step.spec``'s ``algorithm``,
    ``params`` and ``grid``) on ``train``; estimate its Recall@K three ways.

    ``labelled``: pairs with ``part`` (``train``, ``exposed`` and, on fully
    exposed data, ``unexposed``); the truth is every pair when there is an
    ``unexposed`` part, else there is none (``true_recall`` NaN). Returns one
    row per grid point and K: model, params (JSON of the fixed and grid
    parameters), k, true_recall, traditional_recall, ure, n_users_true,
    n_users_exposed, n_users_k_ge_exposed (of the users the traditional estimate averages
    over, those whose random set R_u holds at most K candidate items: their traditional
    Recall@K does not depend on the model). ``per_user``, when given, receives the values
    they average (:func:`per_user_values`).
    """
    ((estimates, values),) = evaluate_models_on_seeds(
        {0: labelled}, step, n_users=n_users, n_items=n_items, seed=seed
    ).values()
    if per_user is not None:
        per_user.extend(values)
    return estimates


def shared_fit_seed(dataset: str, model: str) -> int:
    """The models' fit seed when one fit serves every seed (``e5.train_per_seed: false`` on a
    dataset whose training set is the same in every seed): it depends on no seed, so adding
    seeds never refits."""
    return int(run_rng(0, dataset, "e5_fit_shared", model).integers(2**31 - 1))


def trains_once(dataset_is_fully_exposed: bool, train_per_seed: bool) -> bool:
    """Whether one fit of a model serves every seed: on data without full truth (Yahoo! R3)
    every seed trains on all of MNAR, so unless ``e5.train_per_seed`` asks for a fit per
    seed (each from its own initialisation), the models are trained once."""
    return not dataset_is_fully_exposed and not train_per_seed


def evaluate_models_on_seeds(
    labelled: Mapping[int, pd.DataFrame],
    step: E5Evaluate,
    *,
    n_users: int,
    n_items: int,
    seed: int,
) -> dict[int, tuple[pd.DataFrame, list[pd.DataFrame]]]:
    """:func:`evaluate_models` on several seeds' parts that share one training set: every
    grid point is trained once (with fit seed ``seed``) and scored on each seed's parts.

    ``labelled``: seed → its pairs with ``part``; their ``train`` pairs must be the same
    (``ValueError`` otherwise). Returns seed → (estimates, per-user values), each as
    :func:`evaluate_models` gives them for that seed alone with this fit.
    """
    if not labelled:
        raise ValueError("evaluate_models_on_seeds needs at least one seed's parts")
    parts = {s: frame["part"].to_numpy() for s, frame in labelled.items()}
    train_pairs = {
        s: frame.loc[parts[s] == "train", ["user", "item", "rating"]].reset_index(drop=True)
        for s, frame in labelled.items()
    }
    first = next(iter(train_pairs))
    for s, pairs in train_pairs.items():
        if not pairs.equals(train_pairs[first]):
            raise ValueError(
                f"seeds {first} and {s} train on different pairs: one fit cannot serve both "
                "(set e5.train_per_seed: true)"
            )
    train = rating_matrix(train_pairs[first], n_users, n_items)
    scored = {
        s: (frame[parts[s] == "exposed"], frame if (parts[s] == "unexposed").any() else None)
        for s, frame in labelled.items()
    }
    frames: dict[int, list[pd.DataFrame]] = {s: [] for s in labelled}
    values: dict[int, list[pd.DataFrame]] = {s: [] for s in labelled}
    model, algorithm, params = step.model, step.spec["algorithm"], step.spec.get("params", {})
    ks, positive_threshold = step.ks, step.positive_threshold
    for point in expand_grid(step.spec.get("grid", {})):
        shown = {**params, **point}
        fitted = recommender_params(algorithm, shown, positive_threshold)
        recommender = make_recommender(algorithm, **fitted).fit(train, seed=seed)
        for s, (exposed, truth) in scored.items():
            users = recall_estimates(
                recommender,
                train,
                exposed,
                ks,
                truth=truth,
                positive_threshold=positive_threshold,
                ties=step.ties,
                batch_size=step.batch_size,
            )
            means = mean_recall(users)
            means["n_users_k_ge_exposed"] = users_k_ge_exposed(users, exposed, train)
            means.insert(0, "params", json.dumps(shown, sort_keys=True))
            means.insert(0, "model", model)
            frames[s].append(means)
            values[s].append(per_user_values(users, model, means["params"].iloc[0]))
    out = {}
    for s in labelled:
        estimates = pd.concat(frames[s], ignore_index=True)
        estimates["k"] = estimates["k"].astype(np.int16)
        out[s] = (estimates, values[s])
    return out


def evaluate_lists(
    labelled: pd.DataFrame,
    lists: pd.DataFrame,
    step: E5Evaluate,
    *,
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    n_users: int,
    n_items: int,
    source: str,
    where: str | None = None,
    per_user: list[pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Precomputed lists of one seed scored as :func:`evaluate_models` scores a model (read
    with ``step.spec``'s ``ids`` and ``on_train_items``).

    The lists are checked against the seed's ``train`` part
    (:func:`~debiaseval.evaluation.external_lists.prepare_lists`) and give every user's
    ranking: listed items in their order, then the unlisted ones
    (:class:`~debiaseval.evaluation.external_lists.ListScores`). True Recall@K and URE@K
    need only the top K, so a K longer than an evaluated user's list is refused
    (:func:`~debiaseval.evaluation.external_lists.check_depth`); the traditional Recall@K
    ranks the user's whole random set, so at a K where the lists leave that ranking open
    for some user (:func:`~debiaseval.evaluation.external_lists.traditional_decided`) it is
    NaN, with a warning. Returns the rows of :func:`evaluate_models` (params ``{}``) and
    the warnings; ``per_user`` as in :func:`evaluate_models`.
    """
    model, ks, positive_threshold = step.model, step.ks, step.positive_threshold
    part = labelled["part"].to_numpy()
    train_pairs = labelled[part == "train"]
    exposed = labelled[part == "exposed"]
    truth = labelled if (part == "unexposed").any() else None
    recs, notes = prepare_lists(
        lists,
        train=train_pairs,
        n_users=n_users,
        n_items=n_items,
        users=users,
        items=items,
        ids=step.spec["ids"],
        on_train_items=step.spec["on_train_items"],
        source=source,
        where=where,
    )
    evaluated = evaluated_users(labelled, positive_threshold=positive_threshold)
    check_depth(recs, train_pairs, evaluated, ks, n_users=n_users, n_items=n_items, source=source)
    train = rating_matrix(train_pairs, n_users, n_items)
    users = recall_estimates(
        ListScores(recs, n_users, n_items),
        train,
        exposed,
        ks,
        truth=truth,
        positive_threshold=positive_threshold,
        ties=step.ties,
        batch_size=step.batch_size,
    )
    decided = traditional_decided(recs, train_pairs, exposed, ks, n_items=n_items)
    users = users.merge(decided, on=["user", "k"], how="left")
    open_ = users["traditional_recall"].notna() & ~users["decided"].fillna(False).astype(bool)
    scored = users.drop(columns="decided")
    means = mean_recall(scored)
    means["n_users_k_ge_exposed"] = users_k_ge_exposed(users, exposed, train)
    for k, count in users[open_].groupby("k").size().items():
        defined = int(users.loc[users["k"] == k, "traditional_recall"].notna().sum())
        means.loc[means["k"] == k, "traditional_recall"] = np.nan
        scored.loc[scored["k"] == k, "traditional_recall"] = np.nan
        notes.append(
            f"{source}: traditional Recall@{k} is undefined for {count:,} of {defined:,} users "
            f"(their lists rank fewer than {k} of their randomly exposed items, and the order "
            "of the unlisted ones is unknown): reported as NaN; lists that rank every "
            "candidate item decide it"
        )
    means.insert(0, "params", json.dumps({}))
    means.insert(0, "model", model)
    means["k"] = means["k"].astype(np.int16)
    if per_user is not None:
        per_user.append(per_user_values(scored, model, json.dumps({})))
    return means, notes
