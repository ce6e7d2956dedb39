"""E2's steps, one function per rule (``e2_<stage>``), and what the workflow asks of E2 before
any job: the parts of a dataset it needs, its outputs, its config check ([FLAIRS20];
docs/experiments/e2.md)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.active_learning.elicitation import STRATEGIES, ElicitationContext, ask, elicit
from debiaseval.active_learning.evaluation import active_users, metric_changes
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import assign_parts, check_fractions, run_rng, split_e2
from debiaseval.debiasing.interventions import TestSetSpec, intervene, sampling_weights
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.errors import ConfigError
from debiaseval.recommenders.base import trains_by_epochs
from debiaseval.recommenders.ranking import top_k
from debiaseval.recommenders.registry import EXTERNAL, make_recommender, resolve_recommender
from debiaseval.selection.specs import check_recommender_spec
from debiaseval.selection.tuning import (
    EarlyStopping,
    recommender_params,
    select_point,
    tune_recommender,
)

__all__ = [
    "NEEDS",
    "OUTPUTS",
    "ROLES",
    "E2Elicit",
    "E2Evaluate",
    "E2Train",
    "check_config",
    "elicit_step",
    "evaluate_step",
    "sample_step",
    "selected_params",
    "split_step",
    "train_step",
]

NEEDS: tuple[tuple[str, ...], ...] = (("mnar",),)
"""The parts E2 needs of a dataset (:mod:`debiaseval.data.catalog`): MNAR (MAR is not used)."""


OUTPUTS = (
    "verdict.md",
    "elicited.parquet",
    "metrics_per_user.parquet",
    "summary.parquet",
    "wilcoxon.parquet",
    "wilcoxon_seeds.parquet",
    "summary.md",
)
"""E2's aggregated files in ``results/<study>/e2/<dataset>/``."""


ROLES = ("hidden", "test")


def _check_methods(block: Mapping[str, Any]) -> None:
    for name, method in block["methods"].items():
        for role in ROLES:
            where = f"e2.methods.{name}.{role}"
            try:
                spec = TestSetSpec(name=f"{name}.{role}", **method[role])
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"config error at '{where}': {exc}") from None
            if spec.strategy in ("wtd", "kl") and spec.mar_posterior == "weights":
                raise ConfigError(
                    f"config error at '{where}': E2 has no MAR weights part; "
                    "use mar_posterior: uniform (WTD_H)"
                )


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e2`` block (after schema validation); raise ``ConfigError``."""
    block = config["e2"]
    check_fractions(block["split"], "e2.split")
    for position, name in enumerate(block["strategies"]):
        if name not in STRATEGIES:
            raise ConfigError(
                f"config error at 'e2.strategies.{position}': unknown strategy {name!r}; "
                f"known: {', '.join(STRATEGIES)}"
            )
    _check_recommender(block)
    _check_methods(block)


def _check_recommender(block: Mapping[str, Any]) -> None:
    """E2's model (``e2.mf``): any recommender that can be retrained after elicitation, with a
    ``positives_only`` hyperparameter when BIN (trained on every known pair) is asked for."""
    spec = block["mf"]
    if spec["algorithm"] == EXTERNAL:
        raise ConfigError(
            "config error at 'e2.mf.algorithm': E2 retrains its model on the elicited ratings, "
            "which precomputed lists (external) cannot do"
        )
    cls = check_recommender_spec(spec, "e2.mf")
    if "BIN" in block["strategies"] and "positives_only" not in cls._param_names():
        raise ConfigError(
            f"config error at 'e2.strategies.{block['strategies'].index('BIN')}': BIN trains "
            f"e2.mf on every known pair as a positive, which needs a positives_only "
            f"hyperparameter that {spec['algorithm']!r} lacks"
        )


def _fit_seed(seed: int, dataset: str) -> int:
    return int(run_rng(seed, dataset, "e2", "train").integers(2**31 - 1))


def _early_stopping(tuning: Mapping[str, Any]) -> EarlyStopping | None:
    stopping = tuning["early_stopping"]
    return None if stopping is None else EarlyStopping(**stopping)


def selected_params(
    tuning_table: pd.DataFrame,
    spec: Mapping[str, Any],
    *,
    tuning: Mapping[str, Any],
    positive_threshold: float,
) -> dict[str, Any]:
    """The hyperparameters of E2's model selected by its tuning (params, best point, epochs
    chosen by early stopping for a model trained by epochs)."""
    best = select_point(tuning_table, "the E2 MF grid")
    row = tuning_table.iloc[best]
    out = {
        **recommender_params(spec["algorithm"], spec["params"], positive_threshold),
        **json.loads(row["params"]),
    }
    by_epochs = trains_by_epochs(resolve_recommender(spec["algorithm"]))
    if tuning["early_stopping"] is not None and by_epochs:
        out["epochs"] = int(row["epochs"])
    return out


@dataclasses.dataclass(frozen=True)
class E2Split(StepConfig):
    """What rule ``e2_split`` reads of the ``e2`` block: ``split``, the dataset's
    ``user_filter`` (None: no filter) and ``active_fraction``."""

    BLOCK: ClassVar[str] = "e2"
    split: dict[str, float]
    active_fraction: float
    user_filter: dict[str, int | None] | None = None

    @classmethod
    def values(cls, config: Mapping[str, Any], dataset: str) -> dict[str, Any]:
        """The block's values, ``user_filter`` the dataset's."""
        return {**super().values(config, dataset), "user_filter": user_filter_of(config, dataset)}


def user_filter_of(config: Mapping[str, Any], dataset: str) -> dict[str, int | None] | None:
    """``e2.user_filter`` of ``dataset`` in the validated ``config`` (None: no filter)."""
    return config["e2"]["user_filter"].get(dataset)


def split_step(
    interactions: pd.DataFrame, step: E2Split, *, dataset: str, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e2_split``: known/hidden_pool/test_pool ([FLAIRS20] §4) and the active users.

    Active users: ``step.active_fraction`` of the users with a known rating, one draw per
    seed, shared by every method and strategy.
    """
    limits = dict(step.user_filter or {})
    split = split_e2(
        interactions,
        fractions=step.split,
        rng=run_rng(seed, dataset, "e2", "split"),
        min_ratings=limits.get("min_ratings"),
        max_ratings=limits.get("max_ratings"),
    )
    active = active_users(
        split[split["part"] == "known"],
        rng=run_rng(seed, dataset, "e2", "active"),
        fraction=step.active_fraction,
    )
    return split, pd.DataFrame({"user": active.astype(np.int32)})


@dataclasses.dataclass(frozen=True)
class E2Sample(StepConfig):
    """What rule ``e2_sample`` reads of the ``e2`` block."""

    BLOCK: ClassVar[str] = "e2"
    methods: dict[str, dict[str, Any]]
    rho: dict[str, float]


def sample_step(
    split: pd.DataFrame,
    name: str,
    step: E2Sample,
    *,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e2_sample``: method ``name``'s H from ``hidden_pool`` and T from ``test_pool``.

    Each is a ρ-sample (``step.rho['hidden']``, ``step.rho['test']``) by the method's strategy
    (docs/experiments/e2.md; WTD_H with ``reference: space`` = posteriors of the pool sampled,
    [FLAIRS20] eqs. 5–6). The random stream depends on the role and the spec only,
    so methods with the same H spec (CLASSIC and INT_T) draw the same H.
    """
    known = split[split["part"] == "known"]
    method, rho = step.methods[name], step.rho
    out = []
    for role, pool in (("hidden", "hidden_pool"), ("test", "test_pool")):
        space = split[split["part"] == pool].reset_index(drop=True)
        spec = TestSetSpec(name=role, **method[role])
        sizes = {"n_users": n_users, "n_items": n_items}
        weights = sampling_weights(space, spec, train=known, **sizes)
        key = json.dumps(dict(method[role]), sort_keys=True)
        rng = run_rng(seed, dataset, "e2", role, key)
        sample = intervene(space, spec, rho=rho[role], rng=rng, weights=weights, **sizes)
        out.append(sample[["user", "item", "rating"]])
    return out[0], out[1]


@dataclasses.dataclass(frozen=True)
class E2Train(StepConfig):
    """What rule ``e2_train`` reads of the ``e2`` block."""

    BLOCK: ClassVar[str] = "e2"
    mf: dict[str, Any]
    tuning: dict[str, Any]
    ks: list[int]
    positive_threshold: float
    batch_size: int


@dataclasses.dataclass(frozen=True)
class E2Elicit(StepConfig):
    """What rule ``e2_elicit`` reads of the ``e2`` block."""

    BLOCK: ClassVar[str] = "e2"
    mf: dict[str, Any]
    tuning: dict[str, Any]
    positive_threshold: float
    n_asked: int
    batch_size: int


@dataclasses.dataclass(frozen=True)
class E2Evaluate(StepConfig):
    """What rule ``e2_evaluate`` reads of the ``e2`` block."""

    BLOCK: ClassVar[str] = "e2"
    mf: dict[str, Any]
    tuning: dict[str, Any]
    ks: list[int]
    metrics: list[str]
    positive_threshold: float
    batch_size: int


def train_step(
    split: pd.DataFrame,
    step: E2Train,
    *,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e2_train``: tune MF (``step.mf``) on a validation part of K_before; rank with it
    on K_before.

    The validation part is ``tuning.validation`` of the known ratings; the grid
    search is E1's (:func:`~debiaseval.selection.tuning.tune_recommender`, early-stopped
    epochs). Returns the tuning table (``selected`` marks the point) and the
    top-max(ks) lists of every user from the selected MF fitted on all of K_before.
    """
    spec, tuning, positive_threshold = step.mf, step.tuning, step.positive_threshold
    batch_size = step.batch_size
    known = split[split["part"] == "known"].reset_index(drop=True)
    parts = assign_parts(
        len(known),
        {"fit": 1.0 - tuning["validation"], "val": tuning["validation"]},
        run_rng(seed, dataset, "e2", "validation"),
    )
    fit_seed = _fit_seed(seed, dataset)
    _, table = tune_recommender(
        known[parts == "fit"],
        known[parts == "val"],
        n_users=n_users,
        n_items=n_items,
        algorithm=spec["algorithm"],
        params=spec["params"],
        grid=spec["grid"],
        metric=tuning["metric"],
        k=tuning["k"],
        positive_threshold=positive_threshold,
        batch_size=batch_size,
        seed=fit_seed,
        early_stopping=_early_stopping(tuning),
    )
    params = selected_params(table, spec, tuning=tuning, positive_threshold=positive_threshold)
    matrix = rating_matrix(known, n_users, n_items)
    model = make_recommender(spec["algorithm"], **params).fit(matrix, seed=fit_seed)
    return table, top_k(model, matrix, max(step.ks), batch_size=batch_size)


def elicit_step(
    split: pd.DataFrame,
    active: pd.DataFrame,
    hidden: Mapping[str, pd.DataFrame],
    tuning_table: pd.DataFrame,
    strategy: str,
    step: E2Elicit,
    *,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> dict[str, pd.DataFrame]:
    """Rule ``e2_elicit``: per method, the ratings ``strategy`` elicits from its H.

    Asks ``step.n_asked`` items per active user among those without a known rating
    (:func:`~debiaseval.active_learning.elicitation.ask`; what is asked depends on K_before only,
    so it is asked once for every method) and keeps, per method, the asked pairs
    found in that method's H (``hidden``: method → H;
    :func:`~debiaseval.active_learning.elicitation.elicit`).
    HP's MF is the selected one fitted on K_before (the model of :func:`train_step`).
    """
    known = split[split["part"] == "known"]
    ctx = ElicitationContext(
        rating_matrix(known, n_users, n_items),
        seed=_fit_seed(seed, dataset),
        mf_params=selected_params(
            tuning_table, step.mf, tuning=step.tuning, positive_threshold=step.positive_threshold
        ),
        algorithm=step.mf["algorithm"],
    )
    users = active["user"].to_numpy()
    asked = ask(ctx, strategy, users, n=step.n_asked, batch_size=step.batch_size)
    return {method: elicit(asked, pool) for method, pool in hidden.items()}


def evaluate_step(
    split: pd.DataFrame,
    active: pd.DataFrame,
    test: Mapping[str, pd.DataFrame],
    elicited: Mapping[str, pd.DataFrame],
    tuning_table: pd.DataFrame,
    recs_before: pd.DataFrame,
    step: E2Evaluate,
    *,
    dataset: str,
    seed: int,
    strategy: str,
    n_users: int,
    n_items: int,
) -> pd.DataFrame:
    """Rule ``e2_evaluate``: per-user metrics on T before and after one strategy's elicitation.

    Per method (``test`` and ``elicited``: method → T, method → elicited ratings),
    the selected MF is retrained on K_before ∪ elicited (same hyperparameters and
    fit seed; one fit per distinct elicited set, so CLASSIC and INT_T share it)
    and ranks the users with a relevant test pair; both rankings are evaluated on
    T (:func:`~debiaseval.active_learning.evaluation.metric_changes`). Columns ``seed``,
    ``method``, ``strategy``, ``scope``, ``user``, ``metric``, ``k``, ``before``, ``after``.
    """
    spec, ks, positive_threshold = step.mf, step.ks, step.positive_threshold
    known = split[split["part"] == "known"][["user", "item", "rating"]]
    params = selected_params(
        tuning_table, spec, tuning=step.tuning, positive_threshold=positive_threshold
    )
    fitted: list[tuple[pd.DataFrame, Any, Any]] = []
    tables = []
    for method, pairs in elicited.items():
        reuse = [(m, x) for e, m, x in fitted if e.equals(pairs)]
        if reuse:
            model, matrix = reuse[0]
        else:
            matrix = rating_matrix(pd.concat([known, pairs]), n_users, n_items)
            model = make_recommender(spec["algorithm"], **params).fit(
                matrix, seed=_fit_seed(seed, dataset)
            )
            fitted.append((pairs, model, matrix))
        t = test[method]
        users = np.unique(t.loc[t["rating"] > positive_threshold, "user"].to_numpy(np.int64))
        after = top_k(model, matrix, max(ks), users=users, batch_size=step.batch_size)
        changes = metric_changes(
            recs_before,
            after,
            t,
            active=active["user"].to_numpy(),
            ks=ks,
            metrics=step.metrics,
            n_items=n_items,
            positive_threshold=positive_threshold,
        )
        changes.insert(0, "strategy", strategy)
        changes.insert(0, "method", method)
        changes.insert(0, "seed", np.int32(seed))
        tables.append(changes)
    return pd.concat(tables, ignore_index=True)
