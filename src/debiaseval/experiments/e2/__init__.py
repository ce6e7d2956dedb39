"""Experiment E2: debiased offline evaluation of active learning ([FLAIRS20]).

See docs/experiments/e2.md.

Carraro & Bridge, *Debiased offline evaluation of active learning in recommender
systems*, FLAIRS-33 2020. Per seed, after the dataset's user filter, the MNAR
part is split into K_before (``known``, 60%), H_he (``hidden_pool``, 20%) and
T_he (``test_pool``, 20%); each evaluation method draws the hidden set H and
the test set T from the pools (CLASSIC: both uniform; INT_T: T by WTD_H; INT_HT:
both by WTD_H, posteriors of the pool sampled, [FLAIRS20] eqs. 5–6); an MF tuned
on a validation part of K_before is trained on K_before; every strategy asks
``n`` items of each active user and elicits those found in H; the MF is
retrained on K_before ∪ elicited with the same hyperparameters, and both are
evaluated on T. One step function per rule; :func:`run` chains them in-process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.active_learning.elicitation import STRATEGIES, ElicitationContext, ask, elicit
from debiaseval.active_learning.evaluation import (
    active_users,
    combine_seeds,
    metric_changes,
    pairwise_wilcoxon,
)
from debiaseval.data.catalog import positive_threshold_of
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.splits import assign_parts, check_fractions, run_rng, split_e2
from debiaseval.debiasing.interventions import TestSetSpec, intervene, sampling_weights
from debiaseval.evaluation.flags import MIN_USERS
from debiaseval.experiments import seed_frames, seed_ids, validated
from debiaseval.experiments.e2.tables import (
    elicited_table,
    per_user_values,
    summary_markdown,
    summary_table,
)
from debiaseval.experiments.e2.verdict import e2_verdict
from debiaseval.experiments.verdicts import verdict_entries, with_verdict
from debiaseval.io.errors import ConfigError
from debiaseval.io.progress import stage, staged
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
    "aggregate_step",
    "check_config",
    "elicit_step",
    "evaluate_step",
    "run",
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


# -- the workflow's steps, one function per rule; run() chains them in-process ------------------


def split_step(
    interactions: pd.DataFrame,
    *,
    fractions: Mapping[str, float],
    user_filter: Mapping[str, int | None] | None,
    active_fraction: float,
    dataset: str,
    seed: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e2_split``: known/hidden_pool/test_pool ([FLAIRS20] §4) and the active users.

    Active users: ``active_fraction`` of the users with a known rating, one draw per
    seed, shared by every method and strategy.
    """
    limits = dict(user_filter or {})
    split = split_e2(
        interactions,
        fractions=fractions,
        rng=run_rng(seed, dataset, "e2", "split"),
        min_ratings=limits.get("min_ratings"),
        max_ratings=limits.get("max_ratings"),
    )
    active = active_users(
        split[split["part"] == "known"],
        rng=run_rng(seed, dataset, "e2", "active"),
        fraction=active_fraction,
    )
    return split, pd.DataFrame({"user": active.astype(np.int32)})


def sample_step(
    split: pd.DataFrame,
    method: Mapping[str, Mapping[str, Any]],
    *,
    rho: Mapping[str, float],
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e2_sample``: a method's H from ``hidden_pool`` and T from ``test_pool``.

    Each is a ρ-sample (``rho['hidden']``, ``rho['test']``) by the method's strategy
    (docs/experiments/e2.md; WTD_H with ``reference: space`` = posteriors of the pool sampled,
    [FLAIRS20] eqs. 5–6). The random stream depends on the role and the spec only,
    so methods with the same H spec (CLASSIC and INT_T) draw the same H.
    """
    known = split[split["part"] == "known"]
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


def train_step(
    split: pd.DataFrame,
    spec: Mapping[str, Any],
    *,
    tuning: Mapping[str, Any],
    ks: Sequence[int],
    positive_threshold: float,
    batch_size: int,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rule ``e2_train``: tune MF on a validation part of K_before; rank with it on K_before.

    The validation part is ``tuning.validation`` of the known ratings; the grid
    search is E1's (:func:`~debiaseval.selection.tuning.tune_recommender`, early-stopped
    epochs). Returns the tuning table (``selected`` marks the point) and the
    top-max(ks) lists of every user from the selected MF fitted on all of K_before.
    """
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
    return table, top_k(model, matrix, max(ks), batch_size=batch_size)


def elicit_step(
    split: pd.DataFrame,
    active: pd.DataFrame,
    hidden: Mapping[str, pd.DataFrame],
    tuning_table: pd.DataFrame,
    strategy: str,
    *,
    spec: Mapping[str, Any],
    tuning: Mapping[str, Any],
    positive_threshold: float,
    n_asked: int,
    batch_size: int,
    dataset: str,
    seed: int,
    n_users: int,
    n_items: int,
) -> dict[str, pd.DataFrame]:
    """Rule ``e2_elicit``: per method, the ratings ``strategy`` elicits from its H.

    Asks ``n_asked`` items per active user among those without a known rating
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
            tuning_table, spec, tuning=tuning, positive_threshold=positive_threshold
        ),
        algorithm=spec["algorithm"],
    )
    asked = ask(ctx, strategy, active["user"].to_numpy(), n=n_asked, batch_size=batch_size)
    return {method: elicit(asked, pool) for method, pool in hidden.items()}


def evaluate_step(
    split: pd.DataFrame,
    active: pd.DataFrame,
    test: Mapping[str, pd.DataFrame],
    elicited: Mapping[str, pd.DataFrame],
    tuning_table: pd.DataFrame,
    recs_before: pd.DataFrame,
    *,
    spec: Mapping[str, Any],
    tuning: Mapping[str, Any],
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    batch_size: int,
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
    known = split[split["part"] == "known"][["user", "item", "rating"]]
    params = selected_params(
        tuning_table, spec, tuning=tuning, positive_threshold=positive_threshold
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
        after = top_k(model, matrix, max(ks), users=users, batch_size=batch_size)
        changes = metric_changes(
            recs_before,
            after,
            t,
            active=active["user"].to_numpy(),
            ks=ks,
            metrics=metrics,
            n_items=n_items,
            positive_threshold=positive_threshold,
        )
        changes.insert(0, "strategy", strategy)
        changes.insert(0, "method", method)
        changes.insert(0, "seed", np.int32(seed))
        tables.append(changes)
    return pd.concat(tables, ignore_index=True)


def aggregate_step(
    changes: Sequence[pd.DataFrame],
    counts: pd.DataFrame,
    block: Mapping[str, Any],
    *,
    dataset: str,
    min_users: int = MIN_USERS,
) -> dict[str, Any]:
    """Rule ``e2_aggregate``: the tables of ``OUTPUTS`` (Markdown as text, by file stem).

    ``changes``: the per-user tables of :func:`evaluate_step`; ``counts``: ``seed``,
    ``method``, ``strategy``, ``n_elicited``, ``n_active`` of every elicitation;
    ``min_users``: the top-level key, below which a mean is flagged ``few_users``. The verdict
    (:func:`~debiaseval.experiments.e2.verdict.e2_verdict`): ``verdict`` and ``verdict_md``, also
    the first section of ``summary_md``.
    """
    orders = {"method": list(block["methods"]), "strategy": list(block["strategies"])}
    per_user = pd.concat(changes, ignore_index=True)
    level = 1.0 - block["alpha"]  # the intervals' level: as E1's, one key with the tests'
    elicited = elicited_table(counts, orders, level=level)
    summary = summary_table(
        per_user, {**orders, "metric": list(block["metrics"])}, min_users=min_users, level=level
    )
    per_seed = pairwise_wilcoxon(per_user, block["strategies"], alpha=block["alpha"])
    wilcoxon = combine_seeds(per_seed, alpha=block["alpha"])
    about = [
        f"{block['seeds']} seed(s); split {block['split']}; user filter "
        f"{block['user_filter'].get(dataset) or 'none'}; active users: "
        f"{block['active_fraction']:.3g} of those with a known rating; n = {block['n_asked']} "
        f"items asked; rho {block['rho']}.",
    ]
    found = verdict_entries(e2_verdict(wilcoxon, block, dataset=dataset))
    md = summary_markdown(
        elicited, summary, wilcoxon, dataset=dataset, about=about, alpha=block["alpha"]
    )
    return {
        "elicited": elicited,
        "metrics_per_user": per_user_values(per_user),
        "summary": summary,
        "wilcoxon": wilcoxon,
        "wilcoxon_seeds": per_seed,
        "summary_md": with_verdict(md, found["verdict_md"]),
        **found,
    }


def run(
    data: str | pd.DataFrame,
    config: Mapping[str, Any] | None = None,
    *,
    seeds: int | Sequence[int] | None = None,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Run E2 in-process: the workflow's tables for the same config and seeds.

    ``data``: a dataset name (loaded like the workflow, see
    :func:`debiaseval.api.load_dataset`; ``synthetic`` drawn afresh for every seed unless
    ``synthetic.per_seed`` is false, docs/datasets.md) or a canonical interactions frame with an
    ``mnar`` part, named ``dataset`` (default "data"; the name seeds the random
    streams). Returns ``elicited``, ``summary``, ``wilcoxon``, ``wilcoxon_seeds`` (as
    written to ``results/<study>/e2/<dataset>/``), ``summary_md``, the verdict (``verdict``,
    ``verdict_md``), and per seed ``changes``
    (per user), ``tuning`` and ``elicited_pairs``.
    """
    full = validated(config, "e2")
    block = full["e2"]
    run_seeds = seed_ids(seeds, block["seeds"])
    # each seed's data: its own draw of a generated dataset (docs/datasets.md, One draw per seed)
    frames_of = seed_frames(data, full, dataset, experiment="e2")
    dataset = frames_of(run_seeds[0]).dataset
    threshold = positive_threshold_of(dataset, block["positive_threshold"], full["sources"])
    block = {**block, "positive_threshold": threshold}
    settings = {
        "tuning": block["tuning"],
        "positive_threshold": block["positive_threshold"],
        "batch_size": block["batch_size"],
    }
    changes, counts, tunings, pairs = [], [], [], []
    for seed in staged(run_seeds):
        frames = frames_of(seed)
        interactions = frames.interactions
        sizes = {"n_users": frames.n_users, "n_items": frames.n_items}
        common = {"dataset": dataset, **sizes}
        split, active = split_step(
            interactions,
            fractions=block["split"],
            user_filter=block["user_filter"].get(dataset),
            active_fraction=block["active_fraction"],
            dataset=dataset,
            seed=seed,
        )
        table, before = train_step(
            split, block["mf"], ks=block["ks"], seed=seed, **settings, **common
        )
        tunings.append(table.assign(seed=seed))
        drawn = {
            method: sample_step(split, spec, rho=block["rho"], dataset=dataset, seed=seed, **sizes)
            for method, spec in block["methods"].items()
        }
        hidden = {method: pools[0] for method, pools in drawn.items()}
        test = {method: pools[1] for method, pools in drawn.items()}
        for strategy in block["strategies"]:
            got = elicit_step(
                split,
                active,
                hidden,
                table,
                strategy,
                spec=block["mf"],
                n_asked=block["n_asked"],
                seed=seed,
                **settings,
                **common,
            )
            for method, frame in got.items():
                pairs.append(frame.assign(seed=seed, method=method, strategy=strategy))
                counts.append((seed, method, strategy, len(frame), len(active)))
            changes.append(
                evaluate_step(
                    split,
                    active,
                    test,
                    got,
                    table,
                    before,
                    spec=block["mf"],
                    ks=block["ks"],
                    metrics=block["metrics"],
                    seed=seed,
                    strategy=strategy,
                    **settings,
                    **common,
                )
            )
    block = {**block, "seeds": len(run_seeds)}
    stage("aggregating")
    out = aggregate_step(
        changes, counts_frame(counts), block, dataset=dataset, min_users=full["min_users"]
    )
    out["changes"] = pd.concat(changes, ignore_index=True)
    out["tuning"] = pd.concat(tunings, ignore_index=True)
    out["elicited_pairs"] = pd.concat(pairs, ignore_index=True)
    return out


def counts_frame(rows: Sequence[tuple[int, str, str, int, int]]) -> pd.DataFrame:
    """(seed, method, strategy, n_elicited, n_active) tuples as the ``counts`` of aggregation."""
    frame = pd.DataFrame(rows, columns=["seed", "method", "strategy", "n_elicited", "n_active"])
    return frame.astype({"seed": np.int64, "n_elicited": np.int64, "n_active": np.int64})
