"""The estimator arena on one seed of E1: every weighting estimator of ``e1.estimators`` on the
held-out MNAR part, with its diagnostics and sensitivity (docs/estimators.md).

What does not depend on the estimator is computed once per seed and shared: the split's
parts (:class:`SplitParts`), each propensity model, and per recommender the ranks of the
held-out pairs in its lists. One estimator's held-out part is held at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from debiaseval.data.splits import run_rng
from debiaseval.debiasing.propensities import (
    PropensityModel,
    as_model,
    logistic,
    naive_bayes,
    observation,
    popularity,
    scaled,
    wtd,
)
from debiaseval.debiasing.rating_popularity import rating_popularity
from debiaseval.estimation.diagnostics import WEIGHT_COLUMNS, mar_mass_ratio, weight_diagnostics
from debiaseval.estimation.heldout import (
    GAINS,
    HeldOut,
    PairIndex,
    candidate_counts,
    prepare,
    sorted_pair_keys,
)
from debiaseval.estimation.imputation import (
    DEFAULT_IMPUTATION,
    Imputation,
    build_imputation,
    calibrate,
)
from debiaseval.estimation.ranking_estimators import ESTIMATE_COLUMNS, estimate_all
from debiaseval.estimation.sensitivity import SENSITIVITY_COLUMNS, sensitivity
from debiaseval.estimation.weight_control import WeightControl
from debiaseval.evaluation.flags import short_list_counts
from debiaseval.evaluation.metrics import BlockValues, summarise

__all__ = [
    "DIAGNOSTICS_COLUMNS",
    "MODEL_IMPUTATIONS",
    "SeedEstimates",
    "SplitParts",
    "estimator_heldout",
    "evaluate_estimators",
    "fit_imputation",
    "imputation_of",
    "model_imputations",
    "propensity_model",
]


MODEL_IMPUTATIONS = ("logistic_mf",)
"""Imputations fitted by their own rule (``e1_impute``), once per seed and estimator."""

DIAGNOSTICS_COLUMNS = [
    "recommender",
    "seed",
    "estimator",
    *ESTIMATE_COLUMNS,
    *WEIGHT_COLUMNS,
    "imputed_mass_ratio",
    "propensity_scale",
]
"""Columns of ``estimators.diagnostics.parquet``: per recommender, estimator, metric and k, the
users averaged over and left out, the per-user values outside [0, 1], DR's weight control and
its threshold, the weights' effective sample size, Pareto k̂, concentration and calibration,
DR's imputed mass against the MAR-implied relevant count, and the propensities' scale."""


class SplitParts:
    """The parts of a seed's split that the weighting estimators read, each selected once.

    ``train``, ``heldout`` (H), ``weights`` (the MAR weights part) and ``mnar`` (train and
    held-out) hold the columns ``user``, ``item`` and ``rating`` of their rows, in the split's
    order and dtypes: the values of ``split[split["part"] == part]``. A part is selected the
    first time it is read (one comparison of ``part``, a gather of three numeric columns, no
    copy of the string column) and shared by every estimator and propensity model of the seed.
    ``train``, when given, is the training part already selected by the caller
    (``split[split["part"] == "train"]``): its columns are taken as they are, not selected again.
    """

    COLUMNS = ("user", "item", "rating")

    def __init__(self, split: pd.DataFrame, *, train: pd.DataFrame | None = None) -> None:
        self.split = split
        self._rows: dict[str, np.ndarray] = {}
        self._frames: dict[str, pd.DataFrame] = {}
        if train is not None:
            columns = [c for c in self.COLUMNS if c in split.columns]
            self._frames["train"] = pd.DataFrame(
                {c: train[c].to_numpy() for c in columns}, copy=False
            )

    def rows(self, part: str) -> np.ndarray:
        """The positions of ``part``'s rows in the split, ascending (mnar: train and held-out)."""
        if part not in self._rows:
            if part == "mnar":
                mask = np.zeros(len(self.split), dtype=bool)
                mask[self.rows("train")] = True
                mask[self.rows("heldout")] = True
            else:
                mask = (self.split["part"] == part).to_numpy(dtype=bool)
            self._rows[part] = np.flatnonzero(mask)
        return self._rows[part]

    def frame(self, part: str) -> pd.DataFrame:
        """``part``'s rows (columns :attr:`COLUMNS` the split has), computed once."""
        if part not in self._frames:
            rows = self.rows(part)
            columns = [c for c in self.COLUMNS if c in self.split.columns]
            self._frames[part] = pd.DataFrame({c: self.split[c].to_numpy()[rows] for c in columns})
        return self._frames[part]

    def candidates(self, n_users: int, n_items: int) -> np.ndarray:
        """|C_u| per user, the items without a training pair (computed once)."""
        if "candidates" not in self._rows:
            self._rows["candidates"] = candidate_counts(
                self.train, n_users=n_users, n_items=n_items
            )
        return self._rows["candidates"]

    @property
    def train(self) -> pd.DataFrame:
        return self.frame("train")

    @property
    def heldout(self) -> pd.DataFrame:
        return self.frame("heldout")

    @property
    def weights(self) -> pd.DataFrame:
        return self.frame("weights")

    @property
    def mnar(self) -> pd.DataFrame:
        return self.frame("mnar")


def propensity_model(
    split: pd.DataFrame,
    spec: Mapping[str, Any],
    *,
    n_users: int,
    n_items: int,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
    parts: SplitParts | None = None,
) -> PropensityModel:
    """The propensity model ``spec["propensity"]`` of one estimator of ``e1.estimators``.

    naive_bayes: P(O=1 | Y=r) from the MNAR ratings (train and held-out) and the MAR
    ``weights`` part; popularity: the training counts to the power ``gamma``;
    popularity_nb: the training pairs' items times naive_bayes's rating factor
    (:func:`~debiaseval.debiasing.rating_popularity.rating_popularity`; P(Y=r) uniform
    without a MAR part); logistic:
    user and item ``features`` fitted on the MNAR pairs; wtd: 1/(w_u w_i^2) of [SAC20]
    (reference the training part, P_mar of ``mar_posterior``); known: the ``truth``
    propensities (users × items) of a synthetic dataset. ``parts``: the split's parts when
    already selected (:class:`SplitParts`, shared by a seed's estimators).
    """
    name = spec.get("propensity", "naive_bayes")
    sizes = {"n_users": n_users, "n_items": n_items}
    parts = SplitParts(split) if parts is None else parts
    smoothing = float(spec.get("smoothing", 1.0))
    if name == "naive_bayes":
        return as_model(
            naive_bayes(parts.mnar["rating"], parts.weights["rating"], **sizes), **sizes
        )
    if name == "popularity_nb":
        return rating_popularity(
            parts.train, parts.mnar["rating"], parts.weights["rating"], **sizes, smoothing=smoothing
        )
    if name == "popularity":
        table = popularity(
            parts.train, **sizes, smoothing=smoothing, exponent=spec.get("gamma", 1.0)
        )
        return as_model(table, **sizes)
    if name == "wtd":
        uniform = spec.get("mar_posterior", "weights") == "uniform"
        train, mar = parts.train, None if uniform else parts.weights
        return wtd(
            **sizes,
            reference_users=train["user"].to_numpy(),
            reference_items=train["item"].to_numpy(),
            mar_users=None if mar is None else mar["user"].to_numpy(),
            mar_items=None if mar is None else mar["item"].to_numpy(),
            smoothing=smoothing,
        )
    if name == "logistic":
        if features is None:
            raise ValueError("logistic propensities need the users' and items' features")
        users, items = features[0].sort_values("user"), features[1].sort_values("item")
        xu = users.drop(columns=["user", "raw_user"], errors="ignore").to_numpy(float)
        xi = items.drop(columns=["item", "raw_item"], errors="ignore").to_numpy(float)
        return as_model(logistic(parts.mnar, xu, xi), **sizes)
    if name == "known":
        if truth is None:
            raise ValueError("known propensities need the dataset's true propensities")
        return PropensityModel(n_users, n_items, matrix=np.asarray(truth, dtype=np.float64))
    raise ValueError(f"unknown propensity model {name!r}")


def imputation_of(spec: Mapping[str, Any]) -> str:
    """The imputation a dr spec uses: its ``imputation``, else :data:`DEFAULT_IMPUTATION`."""
    return spec.get("imputation") or DEFAULT_IMPUTATION


def model_imputations(estimators: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The dr estimators whose imputation is fitted by ``e1_impute`` (config order)."""
    return [
        name
        for name, spec in estimators.items()
        if spec["estimator"] == "dr" and imputation_of(spec) in MODEL_IMPUTATIONS
    ]


def _training_propensities(model: PropensityModel, parts: SplitParts) -> np.ndarray:
    """P((u, i) in the training part) of the training pairs: the training pairs are a random
    share of the MNAR sample, so share · P(O = 1)."""
    train, n_observed = parts.train, len(parts.train) + len(parts.heldout)
    p_obs, _ = observation(model, train, n_observed=n_observed)
    return p_obs * (len(train) / n_observed)


def fit_imputation(
    split: pd.DataFrame,
    spec: Mapping[str, Any],
    *,
    seed: int,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
    model: PropensityModel | None = None,
    parts: SplitParts | None = None,
) -> Imputation:
    """Rule ``e1_impute`` (and DR's held-out part): the imputation of a dr spec fitted on the
    training part with the inclusion probabilities of its pairs (:func:`imputation_of`,
    ``imputation_params`` its hyperparameters). Not yet calibrated."""
    parts = SplitParts(split) if parts is None else parts
    if model is None:
        model = propensity_model(
            split,
            spec,
            n_users=n_users,
            n_items=n_items,
            features=features,
            truth=truth,
            parts=parts,
        )
    return build_imputation(
        imputation_of(spec),
        parts.train,
        _training_propensities(model, parts),
        n_users=n_users,
        n_items=n_items,
        positive_threshold=positive_threshold,
        seed=seed,
        params=dict(spec.get("imputation_params") or {}),
    )


def _candidate_mar(
    parts: SplitParts, n_items: int, positive_threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The MAR ``weights`` pairs that are candidates (no training pair): users, items, labels."""
    mar, keys = parts.weights, sorted_pair_keys(parts.train, n_items)
    users, items = mar["user"].to_numpy(np.int64), mar["item"].to_numpy(np.int64)
    query = users * n_items + items
    at = np.minimum(np.searchsorted(keys, query), max(keys.size - 1, 0))
    seen = keys[at] == query if keys.size else np.zeros(query.size, dtype=bool)
    labels = (mar["rating"].to_numpy() > positive_threshold).astype(np.float64)
    return users[~seen], items[~seen], labels[~seen]


def estimator_heldout(
    split: pd.DataFrame,
    spec: Mapping[str, Any],
    *,
    seed: int,
    n_users: int,
    n_items: int,
    positive_threshold: float,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
    model: PropensityModel | None = None,
    parts: SplitParts | None = None,
    imputation: Imputation | None = None,
) -> tuple[HeldOut, float, float]:
    """One estimator's recommender-independent part of a seed: the held-out part with its
    propensities conditioned on E1's random train/held-out split (and clipped;
    :func:`~debiaseval.debiasing.propensities.scaled`) and, for dr, its imputation
    (``imputation`` when fitted already by ``e1_impute``, else :func:`fit_imputation`),
    recalibrated on the MAR ``weights`` part when the spec says ``calibrate``. Returns it,
    the propensities' scale factor and DR's imputed mass against the relevant count the
    MAR ``weights`` part implies (NaN otherwise). ``model``: the propensity model when
    already fitted (:func:`propensity_model`); ``parts``: the split's parts when already
    selected (:class:`SplitParts`)."""
    parts = SplitParts(split) if parts is None else parts
    train, held = parts.train, parts.heldout
    estimator = spec["estimator"]
    if estimator == "naive":
        return (
            prepare("naive", held, None, n_users=n_users, positive_threshold=positive_threshold),
            1.0,
            np.nan,
        )
    if model is None:
        model = propensity_model(
            split,
            spec,
            n_users=n_users,
            n_items=n_items,
            features=features,
            truth=truth,
            parts=parts,
        )
    n_observed = len(train) + len(held)
    p, factor = scaled(
        model, held, train=train, n_pairs=len(held), floor=spec.get("clip"), n_observed=n_observed
    )
    ratio, mar = np.nan, None
    if estimator == "dr":
        if imputation is None:
            imputation = fit_imputation(
                split,
                spec,
                seed=seed,
                n_users=n_users,
                n_items=n_items,
                positive_threshold=positive_threshold,
                model=model,
                parts=parts,
            )
        mar = _candidate_mar(parts, n_items, positive_threshold) if len(parts.weights) else None
        if spec.get("calibrate") and mar is not None:
            imputation = calibrate(imputation, *mar)
    held_out = prepare(
        estimator,
        held,
        p,
        n_users=n_users,
        positive_threshold=positive_threshold,
        imputation=imputation,
        train=train,
        form=spec.get("form") or "one_step",
        candidates=parts.candidates(n_users, n_items),
        scale=spec.get("scale"),
    )
    if estimator == "dr" and mar is not None:
        ratio = mar_mass_ratio(held_out.mass, held_out.candidates, mar[0], mar[2])
    return held_out, factor, ratio


def weight_control_of(spec: Mapping[str, Any]) -> WeightControl:
    """The weight control of a dr spec (``weight_control``: method, value or quantile; none by
    default)."""
    control = spec.get("weight_control") or {}
    method = control.get("method", "none")
    return WeightControl(method, control.get("value"), control.get("quantile"))


@dataclass
class SeedEstimates:
    """:func:`evaluate_estimators`' results for one seed."""

    table: pd.DataFrame
    """Means in ``evaluate_recommenders``' layout (``testset`` = the estimator's name)."""
    per_user: dict[str, dict[str, BlockValues]]
    """Recommender -> estimator -> per-user values."""
    diagnostics: pd.DataFrame
    """:data:`DIAGNOSTICS_COLUMNS`, estimator-major."""
    sensitivity: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    )
    """SNIPS bounds at each Γ (:func:`~debiaseval.estimation.sensitivity.sensitivity`)."""
    gamma_stars: dict[str, pd.DataFrame] = field(default_factory=dict)
    """SNIPS estimator -> Γ* of every pair of recommenders and the side it protects, in the
    comparisons' order (:data:`~debiaseval.estimation.sensitivity.STAR_COLUMNS`)."""


def evaluate_estimators(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    estimators: Mapping[str, Mapping[str, Any]],
    *,
    seed: int,
    n_users: int,
    n_items: int,
    ks: Sequence[int],
    metrics: Sequence[str],
    positive_threshold: float,
    features: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    truth: np.ndarray | None = None,
    parts: SplitParts | None = None,
    imputations: Mapping[str, Imputation] | None = None,
    gammas: Sequence[float] = (),
    resamples: int = 0,
    confidence: float = 0.95,
) -> SeedEstimates:
    """Every recommender's lists under every weighting estimator (docs/estimators.md).

    ``imputations``: estimator -> its fitted model imputation (``e1_impute``'s), else fitted
    here; ``gammas``: the Γ at which every SNIPS estimate is bounded, with Γ* of every pair
    of recommenders from the lower confidence bound at ``confidence`` over ``resamples`` bootstrap
    resamples of the users, drawn for each SNIPS estimator from the seed's own stream
    ``run_rng(seed, "sensitivity")`` (the same counts for estimators that average the same
    users; :func:`~debiaseval.estimation.sensitivity.sensitivity`). ``parts``: the split's
    parts when the caller has selected some already.
    """
    parts = SplitParts(split) if parts is None else parts
    held_pairs = parts.heldout
    n_held = len(held_pairs)
    depth = max(int(k) for k in ks)
    index = PairIndex(held_pairs["user"].to_numpy(), held_pairs["item"].to_numpy(), n_items=n_items)
    small = np.min_scalar_type(depth)
    ranks = {rec: index.ranks(lists, depth=depth).astype(small) for rec, lists in recs.items()}
    blocks = [(m, int(k)) for m in metrics for k in dict.fromkeys(ks)]
    tables, per_user, diagnostics, bounds = [], {}, [], []
    stars: dict[str, pd.DataFrame] = {}
    models: dict[tuple[Any, ...], PropensityModel] = {}  # one fit per model, shared
    for name, spec in estimators.items():
        key = tuple(spec.get(k) for k in ("propensity", "gamma", "smoothing", "mar_posterior"))
        if spec["estimator"] != "naive" and key not in models:
            models[key] = propensity_model(
                split,
                spec,
                n_users=n_users,
                n_items=n_items,
                features=features,
                truth=truth,
                parts=parts,
            )
        held, factor, mass_ratio = estimator_heldout(
            split,
            spec,
            seed=seed,
            n_users=n_users,
            n_items=n_items,
            positive_threshold=positive_threshold,
            features=features,
            truth=truth,
            model=models.get(key),
            parts=parts,
            imputation=(imputations or {}).get(name),
        )
        out = estimate_all(
            held,
            recs,
            ks=ks,
            metrics=metrics,
            n_items=n_items,
            ranks=ranks,
            control=weight_control_of(spec),
        )
        weights = weight_diagnostics(held)
        for rec, lists in recs.items():
            block_values = BlockValues(out.users.astype(np.int32), out.values[rec], out.blocks)
            per_user.setdefault(rec, {})[name] = block_values
            values = block_values.frame()
            summary = summarise(values)
            short = values.assign(short=short_list_counts(lists, values))
            counts = short.groupby(["metric", "k"], sort=False, observed=True)["short"].sum()
            summary.insert(0, "testset", name)
            summary.insert(0, "recommender", rec)
            summary["n_test_pairs"] = np.int64(n_held)
            summary["n_train_overlap"] = np.int64(0)
            summary["n_short_lists"] = (
                counts.reindex(pd.MultiIndex.from_frame(summary[["metric", "k"]]))
                .fillna(0)
                .to_numpy()
                .astype(np.int64)
            )
            tables.append(summary)
            diag = out.table(rec).assign(
                **weights, imputed_mass_ratio=mass_ratio, propensity_scale=factor
            )
            diag.insert(0, "estimator", name)
            diag.insert(0, "seed", seed)
            diag.insert(0, "recommender", rec)
            diagnostics.append(diag)
        if spec["estimator"] == "snips" and gammas:
            gain_blocks = [b for b in blocks if b[0] in GAINS]
            table, stars[name] = sensitivity(
                held,
                ranks,
                estimator=name,
                blocks=gain_blocks,
                gammas=gammas,
                resamples=resamples,
                rng=run_rng(seed, "sensitivity"),
                confidence=confidence,
            )
            bounds.append(table)
    table = pd.concat(tables, ignore_index=True)
    table.insert(1, "seed", seed)
    # recommender-major order, as evaluate_recommenders
    order = {rec: j for j, rec in enumerate(recs)}
    table = table.sort_values("recommender", key=lambda c: c.map(order), kind="stable")
    sensitive = (
        pd.concat(bounds, ignore_index=True)
        if bounds
        else pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    )
    sensitive.insert(1, "seed", np.int64(seed))
    return SeedEstimates(
        table.reset_index(drop=True),
        per_user,
        pd.concat(diagnostics, ignore_index=True)[DIAGNOSTICS_COLUMNS],
        sensitive,
        stars,
    )
