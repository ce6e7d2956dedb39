"""E4's steps: a dataset's parts, each seed's training and test pairs with every propensity
model's P̂, and one fit per seed and propensity model (rules ``e4_propensities`` and
``e4_fit``), and what the workflow asks of E4 before any job: the parts of a dataset it needs,
its outputs, its grids and seeds per dataset, its config check ([ICML16] §6.3–6.5;
docs/experiments/e4.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from debiaseval.data.catalog import BUILTIN_PARTS, dataset_names, dataset_parts, missing_text
from debiaseval.data.splits import run_rng
from debiaseval.debiasing import propensities as prop
from debiaseval.experiments import unsupported
from debiaseval.experiments.e3 import Truth, full_truth, synthetic_truth
from debiaseval.experiments.e4.tables import (
    TRUTH_DATASETS,
    losses_frame,
    model_name,
    tuning_grid,
)
from debiaseval.experiments.step_config import StepConfig
from debiaseval.io.errors import ConfigError
from debiaseval.io.schema import expand_grid
from debiaseval.recommenders.rating_mf import WeightedMF, normalise_weights
from debiaseval.selection.ips_cv import LOSS_OF_METRIC, cv_select, model_l2, pair_losses

__all__ = [
    "ERROR_COLUMNS",
    "NEEDS",
    "OUTPUTS",
    "OWN_DEFAULT",
    "PROPENSITY_MODELS",
    "TRUTH_DATASETS",
    "E4Fit",
    "E4Propensities",
    "LearningData",
    "available_propensities",
    "check_config",
    "dataset_seeds",
    "factor_rms",
    "fit",
    "fit_models",
    "ips_weights",
    "learning_data",
    "prepare",
    "propensity_models",
    "read_learning_data",
    "tuning_grid",
]

NEEDS: tuple[tuple[str, ...], ...] = (("mnar", "mar"), ("truth",))
"""The parts E4 needs of a dataset (:mod:`debiaseval.data.catalog`): an MNAR train and a MAR
test part, or a full truth (α sweep)."""


PROPENSITY_MODELS = ("known", "provided", "logistic", "naive_bayes")
"""Propensity models of MF-IPS; ``none`` (MF-Naive) is always run."""


_PROPENSITY_PART = {"provided": "propensities", "logistic": "features", "naive_bayes": "mar"}


OWN_DEFAULT = ("naive_bayes",)
"""The propensity models on a user's own dataset that ``e4.propensities`` does not list."""


def available_propensities(parts: frozenset[str]) -> tuple[str, ...]:
    """The propensity models a dataset with these parts supports: ``known`` with a full
    truth, else those whose input it has (provided propensities, features, a MAR sample)."""
    if "truth" in parts:
        return ("known", "naive_bayes")
    return tuple(m for m, part in _PROPENSITY_PART.items() if part in parts)


def propensity_models(block: Mapping[str, Any], dataset: str) -> list[str]:
    """The propensity models of MF-IPS on ``dataset``: ``e4.propensities``, else the default."""
    return list(block["propensities"].get(dataset, OWN_DEFAULT))


OUTPUTS = ("verdict.md", "errors.parquet", "summary.parquet", "pair_tests.parquet", "summary.md")
"""Aggregated outputs of E4 in ``results/<study>/e4/{dataset}/``."""


ERROR_COLUMNS = (
    "seed",
    "alpha",
    "mar_size",
    "model",
    "propensity",
    "metric",
    "value",
    "factors",
    "l2",
    "cv_value",
    "n_train",
    "n_test",
    "sweeps",
    "converged",
    "factor_rms",
)
"""Columns of the per-seed test errors (``errors.parquet``): ``sweeps``, ``converged`` and
``factor_rms`` are those of the reported (refitted) model: whether it met ``model.tol`` within
``model.max_iter``, and the root mean square over its training pairs of what its factors add
to the offset and biases, v_u·w_i (:func:`factor_rms`)."""


def ips_weights(propensities: np.ndarray) -> np.ndarray:
    """MF-IPS training weights 1/P̂ normalised to mean 1 ([ICML16] eq. 14).

    See docs/experiments/e4.md.
    """
    p = prop.check_propensities(propensities)
    return normalise_weights(1.0 / p, p.size)


@dataclass(frozen=True)
class LearningData:
    """What E4 needs of a dataset: a full truth, or MNAR/MAR parts with side information."""

    name: str
    n_users: int
    n_items: int
    truth: Truth | None = None
    """Full rating matrix and observation model (``synthetic``, ``ml-100k-semi``)."""
    mnar: pd.DataFrame | None = None
    """MNAR training pairs ``user``, ``item``, ``rating`` (+ provided ``propensity``)."""
    mar: pd.DataFrame | None = None
    """MAR pairs ``user``, ``item``, ``rating``: the test (and the Naive-Bayes sample)."""
    user_features: np.ndarray | None = None
    item_features: np.ndarray | None = None


def _features(frame: pd.DataFrame | None, key: str) -> np.ndarray | None:
    if frame is None:
        return None
    cols = [c for c in frame.columns if c not in (key, f"raw_{key}")]
    if not cols:
        return None
    return frame.sort_values(key)[cols].to_numpy(np.float64)


def learning_data(
    dataset: str,
    interactions: pd.DataFrame | None = None,
    users: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
    *,
    synthetic: Mapping[str, Any] | None = None,
) -> LearningData:
    """The :class:`LearningData` of ``dataset`` from its canonical frames.

    ``synthetic`` is generated from the config's ``synthetic`` block (the frames are not
    needed); ``ml-100k-semi`` needs its interactions with the ``full`` part; ``coat`` and
    ``yahoo-r3`` their ``mnar`` and ``mar`` parts (and Coat's users/items for features).
    """
    if dataset in BUILTIN_PARTS and (reason := unsupported("e4", dataset)) is not None:
        raise ValueError(reason)
    if dataset == "synthetic":
        truth = synthetic_truth(synthetic or {})
        return LearningData(dataset, *truth.ratings.shape, truth=truth)
    if interactions is None:
        raise ValueError(f"{dataset}: E4 needs the dataset's interactions")
    if dataset in TRUTH_DATASETS:
        truth = full_truth(interactions, dataset)
        return LearningData(dataset, *truth.ratings.shape, truth=truth)
    parts = {}
    for part in ("mnar", "mar"):
        rows = interactions[interactions["part"] == part]
        if rows.empty:
            raise ValueError(f"{dataset}: E4 needs a '{part}' part, found none")
        cols = ["user", "item", "rating"]
        if part == "mnar" and "propensity" in rows.columns and rows["propensity"].notna().all():
            cols.append("propensity")
        parts[part] = rows[cols].reset_index(drop=True)
    n_users = int((interactions if users is None else users)["user"].max()) + 1
    n_items = int((interactions if items is None else items)["item"].max()) + 1
    return LearningData(
        dataset,
        n_users,
        n_items,
        mnar=parts["mnar"],
        mar=parts["mar"],
        user_features=_features(users, "user"),
        item_features=_features(items, "item"),
    )


def read_learning_data(
    dataset: str, paths: Any, *, synthetic: Mapping[str, Any] | None = None
) -> LearningData:
    """:func:`learning_data` from Parquet files: ``paths`` maps ``interactions``,
    ``user_index`` and ``item_index`` (all optional; a Snakemake input works) to files."""
    from debiaseval.io.files import read_parquet

    keys = set(paths.keys())
    frames = [
        read_parquet(paths[k]) if k in keys else None
        for k in ("interactions", "user_index", "item_index")
    ]
    return learning_data(dataset, *frames, synthetic=synthetic)


def _column(model: str) -> str:
    return f"propensity_{model}"


def _pairs(
    users: np.ndarray, items: np.ndarray, ratings: np.ndarray, part: str, alpha: float
) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "alpha": np.full(users.size, alpha, dtype=np.float64),
            "part": np.full(users.size, part, dtype=object),
            "user": users.astype(np.int32),
            "item": items.astype(np.int32),
            "rating": ratings.astype(np.float32),
        }
    )


@dataclasses.dataclass(frozen=True)
class _E4Step(StepConfig):
    """What E4's steps share: the dataset's propensity models, and ``alpha_sweep`` without
    its ``seeds`` (a count of jobs, not a value a job reads)."""

    BLOCK: ClassVar[str] = "e4"

    @classmethod
    def of(cls, config: Mapping[str, Any], dataset: str) -> Any:
        """The ``e4`` block's values for ``dataset``."""
        block = config["e4"]
        sweep = {k: v for k, v in block["alpha_sweep"].items() if k != "seeds"}
        values = {**cls.values(config, dataset), "alpha_sweep": sweep}
        return cls(**values, propensity_models=propensity_models(block, dataset))


@dataclasses.dataclass(frozen=True)
class E4Propensities(_E4Step):
    """What rule ``e4_propensities`` reads of the ``e4`` block."""

    propensity_models: list[str]
    clip: float | None
    alpha_sweep: dict[str, Any]
    mar_fraction: float
    smoothing: float
    logistic: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class E4Fit(_E4Step):
    """What rule ``e4_fit`` reads of the ``e4`` block."""

    propensity_models: list[str]
    alpha_sweep: dict[str, Any]
    grid: dict[str, list[Any]]
    metrics: list[str]
    model: dict[str, Any]
    l2_scale: str
    n_folds: int
    warm_start: bool
    naive_selection: str


def prepare(data: LearningData, step: E4Propensities, seed: int) -> pd.DataFrame:
    """One seed's pairs with every propensity model's P̂ of the training pairs.

    Columns ``alpha`` (the bias strength the training pairs were drawn at; NaN for data
    observed as is), ``part`` (``train``; ``test``, the MAR test; ``mar_sample``, the MAR
    ratings that give P(Y = r) to Naive-Bayes), ``user``, ``item``, ``rating`` and one
    ``propensity_<model>`` per model of ``step.propensity_models`` (NaN outside
    ``train``). With a full truth the test is the full matrix and is not listed. The
    random stream is ``run_rng(seed, dataset, "e4", "prepare")``.
    """
    models = step.propensity_models
    clip = step.clip
    rng = run_rng(seed, data.name, "e4", "prepare")
    if data.truth is not None:
        sweep = step.alpha_sweep
        alphas = sorted({float(sweep["alpha"]), *map(float, sweep["alphas"])})
        uniform = rng.random(data.truth.ratings.shape)
        frames = []
        for a in alphas:
            p = prop.check_propensities(data.truth.propensities(a), f"propensities at alpha={a:g}")
            u, i = np.nonzero(uniform < p)
            frame = _pairs(u, i, data.truth.ratings[u, i], "train", a)
            frame[_column("known")] = p[u, i]
            frames.append(frame)
        out = pd.concat(frames, ignore_index=True)
        if "naive_bayes" in models:
            _sweep_naive_bayes(data, step, out, rng)
    else:
        assert data.mnar is not None and data.mar is not None
        mnar, mar = data.mnar, data.mar
        in_sample = np.zeros(len(mar), dtype=bool)
        if "naive_bayes" in models:
            n_sample = round(step.mar_fraction * len(mar))
            if not 1 <= n_sample < len(mar):
                raise ValueError(
                    f"{data.name}: mar_fraction {step.mar_fraction} of {len(mar)} MAR "
                    "ratings leaves no Naive-Bayes sample or no test"
                )
            in_sample[rng.permutation(len(mar))[:n_sample]] = True
        nan = float("nan")
        sample = mar[in_sample]
        train = _pairs(*(mnar[c].to_numpy() for c in ("user", "item", "rating")), "train", nan)
        for model in models:
            train[_column(model)] = _train_propensities(data, model, step, sample, seed)
        frames = [train]
        for rows, part in ((mar[~in_sample], "test"), (sample, "mar_sample")):
            cols = (rows[c].to_numpy() for c in ("user", "item", "rating"))
            frames.append(_pairs(*cols, part, nan))
        out = pd.concat(frames, ignore_index=True)
    columns = [c for c in out.columns if c.startswith("propensity_")]
    for model in models:
        if data.truth is None and _column(model) not in columns:
            raise ValueError(f"{data.name} has no {model!r} propensities")
    if clip is not None:
        train = out["part"] == "train"
        for col in columns:
            out.loc[train, col] = np.maximum(out.loc[train, col].to_numpy(), clip)
    return out


def _nb_column(size: int) -> str:
    return f"{_column('naive_bayes')}_mar{int(size)}"


def _sweep_naive_bayes(
    data: LearningData, step: E4Propensities, out: pd.DataFrame, rng: np.random.Generator
) -> None:
    """MF-IPS-NB's propensities on the sweep ([ICML16] Figure 3, right): for every size s of
    ``alpha_sweep.mar_sizes``, Naive-Bayes P̂ of the training pairs at ``alpha_sweep.alpha``
    with P(Y = r) from s MCAR ratings drawn uniformly from the full matrix (column
    ``propensity_naive_bayes_mar<s>``, NaN at the other α)."""
    assert data.truth is not None
    ratings = data.truth.ratings
    alpha = float(step.alpha_sweep["alpha"])
    rows = (out["alpha"].to_numpy() == alpha) & (out["part"].to_numpy() == "train")
    observed = out.loc[rows, "rating"].to_numpy(np.float64)
    levels = np.unique(ratings)
    for size in step.alpha_sweep["mar_sizes"]:
        if not 1 <= size <= ratings.size:
            raise ValueError(f"alpha_sweep.mar_sizes: {size} is not in [1, {ratings.size}]")
        sample = ratings.ravel()[rng.choice(ratings.size, int(size), replace=False)]
        table = prop.naive_bayes(
            observed,
            sample,
            n_users=data.n_users,
            n_items=data.n_items,
            levels=levels,
            smoothing=step.smoothing,
        )
        column = np.full(len(out), np.nan)
        column[rows] = prop.lookup(table, out.loc[rows, ["rating"]])
        out[_nb_column(size)] = column


def _train_propensities(
    data: LearningData, model: str, step: E4Propensities, sample: pd.DataFrame, seed: int
) -> np.ndarray:
    """P̂ of the MNAR training pairs under propensity ``model`` (observed data only); the
    logistic model's L2 is cross-validated (folds from ``run_rng(seed, dataset, "e4",
    "logistic")``) when ``logistic.l2`` is a list of more than one value."""
    mnar = data.mnar
    assert mnar is not None
    if model == "provided":
        if "propensity" not in mnar.columns:
            raise ValueError(f"{data.name} has no provided propensities")
        return prop.check_propensities(mnar["propensity"], "provided propensities")
    if model == "logistic":
        if data.user_features is None or data.item_features is None:
            raise ValueError(f"{data.name} has no user and item features for logistic propensities")
        settings = step.logistic
        grid = settings["l2"] if isinstance(settings["l2"], list) else [settings["l2"]]
        l2 = grid[0]
        if len(grid) > 1:
            l2, _ = prop.logistic_cv(
                mnar,
                data.user_features,
                data.item_features,
                l2=grid,
                n_folds=settings["n_folds"],
                cross=settings["cross"],
                rng=run_rng(seed, data.name, "e4", "logistic"),
            )
        table = prop.logistic(
            mnar,
            data.user_features,
            data.item_features,
            l2=l2,
            cross=settings["cross"],
        )
        return prop.lookup(table, mnar)
    if model == "naive_bayes":
        levels = np.unique(np.concatenate([mnar["rating"].to_numpy(), sample["rating"].to_numpy()]))
        table = prop.naive_bayes(
            mnar["rating"],
            sample["rating"],
            n_users=data.n_users,
            n_items=data.n_items,
            levels=levels,
            smoothing=step.smoothing,
        )
        return prop.lookup(table, mnar)
    raise ValueError(f"{data.name} has no {model!r} propensities")


def fit(
    data: LearningData,
    pairs: pd.DataFrame,
    step: E4Fit,
    seed: int,
    propensity: str,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """One seed of one model: CV-tuned MF-Naive (``propensity="none"``) or MF-IPS.

    For each α in ``pairs`` and each metric: :func:`cv_select` over the grid (``grid``;
    ``alpha_sweep.grid`` with a full truth) with ``n_folds`` folds, the model's loss
    that of the metric; the chosen point refitted on every training pair; its test
    error (the mean δ over the MAR test pairs, or over the full matrix). The validation
    error is IPS-estimated ([ICML16] §6.1), for MF-Naive with the propensities of the
    dataset's first propensity model (``naive_selection: naive``: the Naive mean). The
    random stream ``run_rng(seed, dataset, "e4", "fit", metric, str(α))`` does not depend
    on ``propensity``, so MF-Naive and MF-IPS share folds and initialisation.

    Returns (errors: :data:`ERROR_COLUMNS`, cv: ``seed``, ``alpha``, ``model``,
    ``propensity``, ``metric``, ``params``, ``fold``, ``value``, ``selected``, losses:
    :data:`LOSS_COLUMNS`, the per-pair MAR test losses; none with a full truth).
    """
    truth = data.truth is not None
    sweep = step.alpha_sweep
    nb_sweep = truth and propensity == "naive_bayes"
    if nb_sweep:
        wanted = [_nb_column(size) for size in sweep["mar_sizes"]]
    else:
        wanted = [] if propensity == "none" else [_column(propensity)]
    if not all(c in pairs.columns for c in wanted) or (nb_sweep and not wanted):
        raise ValueError(f"the pairs of {data.name} hold no {propensity!r} propensities")
    grid = expand_grid(sweep["grid"] if truth else step.grid)
    metrics = sweep["metrics"] if truth else step.metrics
    params = dict(step.model)
    selection = _selection_propensity(step, propensity)
    per_pair = step.l2_scale == "per_pair"
    errors, tables, losses = [], [], []
    for alpha, rows in pairs.groupby("alpha", sort=True, dropna=False):
        train = rows[rows["part"] == "train"]
        u, i = train["user"].to_numpy(np.int64), train["item"].to_numpy(np.int64)
        y = train["rating"].to_numpy(np.float64)
        test = rows[rows["part"] == "test"]
        if nb_sweep:  # MF-IPS-NB: one fit per MCAR sample size, at alpha_sweep.alpha only
            variants = [
                (float(size), train[c].to_numpy(np.float64))
                for size, c in zip(sweep["mar_sizes"], wanted, strict=True)
                if train[c].notna().all()
            ]
        else:
            variants = [(np.nan, train[wanted[0]].to_numpy(np.float64) if wanted else None)]
        for mar_size, p in variants:
            pv = (
                p
                if selection == propensity
                else (None if selection is None else train[_column(selection)].to_numpy(np.float64))
            )
            for metric in metrics:
                rng = run_rng(seed, data.name, "e4", "fit", metric, f"{float(alpha):g}")
                best, table = cv_select(
                    u,
                    i,
                    y,
                    p,
                    n_users=data.n_users,
                    n_items=data.n_items,
                    grid=grid,
                    metric=metric,
                    n_folds=step.n_folds,
                    model_params=params,
                    rng=rng,
                    warm_start=step.warm_start,
                    validation_propensities=pv,
                    l2_per_pair=per_pair,
                )
                refit = {**best, "l2": model_l2(best["l2"], y.size, per_pair)}
                model = WeightedMF(**{**params, "loss": LOSS_OF_METRIC[metric], **refit}).fit(
                    u,
                    i,
                    y,
                    n_users=data.n_users,
                    n_items=data.n_items,
                    weights=None if p is None else 1.0 / p,
                    rng=rng,
                )
                if truth:
                    assert data.truth is not None
                    delta = pair_losses(metric, data.truth.ratings, model.predict_matrix())
                    n_test = delta.size
                else:
                    tu, ti = test["user"].to_numpy(np.int64), test["item"].to_numpy(np.int64)
                    delta = pair_losses(metric, test["rating"].to_numpy(), model.predict(tu, ti))
                    n_test = delta.size
                    losses.append(
                        pd.DataFrame(
                            {
                                "seed": np.int32(seed),
                                "alpha": float(alpha),
                                "propensity": propensity,
                                "metric": metric,
                                "pair": np.arange(n_test, dtype=np.int64),
                                "value": delta,
                            }
                        )
                    )
                chosen = table[table["selected"]]
                objective = model.objective_
                sweeps = objective.size - 1
                converged = sweeps > 0 and bool(
                    objective[-2] - objective[-1] <= model.tol * abs(objective[-2])
                )
                errors.append(
                    {
                        "seed": seed,
                        "alpha": float(alpha),
                        "mar_size": mar_size,
                        "model": model_name(propensity),
                        "propensity": propensity,
                        "metric": metric,
                        "value": float(delta.mean()),
                        "factors": int(best["factors"]),
                        "l2": float(best["l2"]),
                        "cv_value": float(chosen["value"].mean()),
                        "n_train": int(y.size),
                        "n_test": int(n_test),
                        "sweeps": int(sweeps),
                        "converged": converged,
                        "factor_rms": factor_rms(model, u, i),
                    }
                )
                tables.append(
                    table.assign(
                        seed=seed,
                        alpha=float(alpha),
                        mar_size=mar_size,
                        model=model_name(propensity),
                        propensity=propensity,
                        metric=metric,
                    )
                )
    out = pd.DataFrame(errors, columns=list(ERROR_COLUMNS))
    ints = {
        "factors": np.int64,
        "n_train": np.int64,
        "n_test": np.int64,
        "sweeps": np.int64,
        "converged": bool,
        "factor_rms": np.float64,
    }
    out = out.astype({"seed": np.int32, "mar_size": np.float64, **ints})
    cv = pd.concat(tables, ignore_index=True)
    cv_cols = [
        "seed",
        "alpha",
        "mar_size",
        "model",
        "propensity",
        "metric",
        "params",
        "fold",
        "value",
    ]
    cv = cv[[*cv_cols, "selected"]].astype({"seed": np.int32, "fold": np.int64})
    return out, cv, losses_frame(losses)


def factor_rms(model: WeightedMF, users: np.ndarray, items: np.ndarray) -> float:
    """Root mean square over the pairs (``users``, ``items``) of the fitted ``model``'s
    interaction term v_u·w_i: how much its factors move its predictions away from the
    offset and biases of eq. 14 (0 when the penalty has shrunk V and W to zero)."""
    if not len(users):
        return 0.0
    term = np.einsum("nd,nd->n", model.user_factors_[users], model.item_factors_[items])
    return float(np.sqrt(np.mean(term * term)))


def _selection_propensity(step: E4Fit, propensity: str) -> str | None:
    """The propensity model whose IPS estimate selects this model's hyperparameters (None:
    the Naive mean): MF-IPS's own; MF-Naive's the dataset's first ([ICML16] §6.1)."""
    if propensity != "none":
        return propensity
    models = step.propensity_models
    return models[0] if step.naive_selection == "ips" and models else None


def dataset_seeds(block: Mapping[str, Any], dataset: str) -> int:
    """Number of seeds (trials) of E4 on ``dataset``: ``alpha_sweep.seeds`` for a dataset with
    a full truth when set (ICML16 Figure 3: 30 trials), else ``e4.seeds``."""
    sweep = block["alpha_sweep"].get("seeds")
    return int(sweep) if dataset in TRUTH_DATASETS and sweep is not None else int(block["seeds"])


def fit_models(block: Mapping[str, Any], dataset: str) -> list[str]:
    """The models E4 fits on ``dataset``: ``none`` (MF-Naive) then its propensity models."""
    return ["none", *propensity_models(block, dataset)]


def check_config(config: Mapping[str, Any]) -> None:
    """Cross-field checks of the ``e4`` block (after schema validation); raise ``ConfigError``."""
    block, sources = config["e4"], config["sources"]
    known = dataset_names(sources)
    for name, models in block["propensities"].items():
        if name not in known:
            raise ConfigError(
                f"config error at 'e4.propensities.{name}': unknown dataset {name!r}; "
                f"known: {', '.join(known)}"
            )
        parts = dataset_parts(name, sources)
        available = available_propensities(parts)
        for position, model in enumerate(models):
            if model not in available:
                part = _PROPENSITY_PART.get(model, "truth")
                raise ConfigError(
                    f"config error at 'e4.propensities.{name}.{position}': {name} has no "
                    f"{model!r} propensities (available: {', '.join(available) or 'none'}); "
                    f"it lacks {missing_text(name, [part], sources)}"
                )
    sweep = block["alpha_sweep"]
    for name, models in block["propensities"].items():
        if "naive_bayes" in models and "truth" in dataset_parts(name, sources):
            if not sweep["mar_sizes"]:
                raise ConfigError(
                    f"config error at 'e4.propensities.{name}': naive_bayes on {name} needs "
                    "MCAR sample sizes in e4.alpha_sweep.mar_sizes"
                )
    if sweep["alpha"] not in sweep["alphas"]:
        raise ConfigError(
            f"config error at 'e4.alpha_sweep.alpha': {sweep['alpha']} is not in "
            f"e4.alpha_sweep.alphas {sweep['alphas']}"
        )
