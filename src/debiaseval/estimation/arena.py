"""The estimator arena on one seed of E1: every weighting estimator of ``e1.estimators`` on the
held-out MNAR part, with its diagnostics and sensitivity (docs/estimators.md).

What does not depend on the estimator is computed once per seed and shared: the split's
parts (:class:`SplitParts`), each propensity model, and per recommender the ranks of the
held-out pairs in its lists. One estimator's held-out part is held at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
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
from debiaseval.estimation.estimators import ESTIMATE_COLUMNS, estimate_all
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
    LogisticMF,
    build_imputation,
    calibrate,
)
from debiaseval.estimation.resampling import ResamplingPlan
from debiaseval.estimation.scoreboard import (
    TRUE,
    scoreboard,
    scoreboard_markdown,
    truth_of,
    verdict,
)
from debiaseval.estimation.seed_scores import (
    RELIABILITY_COLUMNS,
    common_means,
    split_half_reliability,
    truth_tests,
)
from debiaseval.estimation.sensitivity import SENSITIVITY_COLUMNS, sensitivity
from debiaseval.estimation.separation import truth_separation
from debiaseval.estimation.weight_control import WeightControl
from debiaseval.evaluation.flags import short_list_counts
from debiaseval.evaluation.metrics import BlockValues, summarise
from debiaseval.io.errors import ConfigError

__all__ = [
    "DIAGNOSTICS_COLUMNS",
    "ESTIMATOR_NEEDS",
    "MODEL_IMPUTATIONS",
    "SeedEstimates",
    "SplitParts",
    "check_estimators",
    "estimator_features",
    "estimator_heldout",
    "estimator_truth",
    "evaluate_estimators",
    "fit_imputation",
    "imputation_of",
    "model_imputations",
    "propensity_model",
    "row_families",
    "score_seed",
    "scoreboard_tables",
    "seed_estimates",
    "with_gamma_stars",
]

ESTIMATOR_NEEDS = {"logistic": "features"}
"""The dataset part each propensity model of ``e1.estimators`` needs beyond MNAR and MAR
(``known`` needs a dataset whose observation model is known:
:data:`~debiaseval.datasets.truth.TRUTH_SOURCES`)."""

MODEL_IMPUTATIONS = ("logistic_mf",)
"""Imputations fitted by their own rule (``e1_impute``), once per seed and estimator."""

DIAGNOSTICS_COLUMNS = [
    "recommender", "seed", "estimator", *ESTIMATE_COLUMNS, *WEIGHT_COLUMNS,
    "imputed_mass_ratio", "propensity_scale",
]  # fmt: skip
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
            self._rows["candidates"] = candidate_counts(self.train, n_users=n_users,
                                                        n_items=n_items)  # fmt: skip
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
        return as_model(naive_bayes(parts.mnar["rating"], parts.weights["rating"], **sizes),
                        **sizes)  # fmt: skip
    if name == "popularity_nb":
        return rating_popularity(parts.train, parts.mnar["rating"], parts.weights["rating"],
                                 **sizes, smoothing=smoothing)  # fmt: skip
    if name == "popularity":
        table = popularity(parts.train, **sizes, smoothing=smoothing,
                           exponent=spec.get("gamma", 1.0))  # fmt: skip
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


def estimator_features(
    block: Mapping[str, Any], users: pd.DataFrame | None, items: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The users' and items' frames when an estimator of ``block`` has logistic propensities."""
    wanted = any(s.get("propensity") == "logistic" for s in block["estimators"].values())
    return (users, items) if wanted and users is not None and items is not None else None


def estimator_truth(
    block: Mapping[str, Any],
    dataset: str,
    synthetic: Mapping[str, Any] | None,
    users: pd.DataFrame | None,
    items: pd.DataFrame | None,
    raw: str | Path | None = None,
) -> np.ndarray | None:
    """The true propensities (E1's users × items) when an estimator of ``block`` has known
    propensities: the observation model of ``dataset`` (one of
    :data:`~debiaseval.datasets.truth.TRUTH_SOURCES`) for the generator block ``synthetic``
    (the seed's own draw, :func:`~debiaseval.data.draws.seed_block`; ``raw``: the folder of
    the real block ``jester5k-semi`` is drawn on), at the kept users' and items' raw ids
    (``raw_user``/``raw_item`` of the data step's users and items, when it re-indexed)."""
    if not any(s.get("propensity") == "known" for s in block["estimators"].values()):
        return None
    from debiaseval.datasets.truth import full_propensities_of

    matrix = full_propensities_of(dataset, synthetic, raw)
    rows = _raw_ids(users, "user", matrix.shape[0])
    cols = _raw_ids(items, "item", matrix.shape[1])
    return matrix[np.ix_(rows, cols)]


def _raw_ids(frame: pd.DataFrame | None, what: str, n: int) -> np.ndarray:
    if frame is None:
        return np.arange(n)
    frame = frame.sort_values(what)
    for column in (f"raw_{what}", "raw", "raw_id", what):
        if column in frame.columns:
            return frame[column].to_numpy().astype(np.int64)
    return np.arange(n)


def imputation_of(spec: Mapping[str, Any]) -> str:
    """The imputation a dr spec uses: its ``imputation``, else :data:`DEFAULT_IMPUTATION`."""
    return spec.get("imputation") or DEFAULT_IMPUTATION


def model_imputations(estimators: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The dr estimators whose imputation is fitted by ``e1_impute`` (config order)."""
    return [
        name for name, spec in estimators.items()
        if spec["estimator"] == "dr" and imputation_of(spec) in MODEL_IMPUTATIONS
    ]  # fmt: skip


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
        model = propensity_model(split, spec, n_users=n_users, n_items=n_items,
                                 features=features, truth=truth, parts=parts)  # fmt: skip
    return build_imputation(
        imputation_of(spec), parts.train, _training_propensities(model, parts),
        n_users=n_users, n_items=n_items, positive_threshold=positive_threshold, seed=seed,
        params=dict(spec.get("imputation_params") or {}),
    )  # fmt: skip


def _candidate_mar(parts: SplitParts, n_items: int, positive_threshold: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
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
        return prepare("naive", held, None, n_users=n_users,
                       positive_threshold=positive_threshold), 1.0, np.nan  # fmt: skip
    if model is None:
        model = propensity_model(split, spec, n_users=n_users, n_items=n_items,
                                 features=features, truth=truth, parts=parts)  # fmt: skip
    n_observed = len(train) + len(held)
    p, factor = scaled(model, held, train=train, n_pairs=len(held), floor=spec.get("clip"),
                       n_observed=n_observed)  # fmt: skip
    ratio, mar = np.nan, None
    if estimator == "dr":
        if imputation is None:
            imputation = fit_imputation(split, spec, seed=seed, n_users=n_users, n_items=n_items,
                                        positive_threshold=positive_threshold, model=model,
                                        parts=parts)  # fmt: skip
        mar = _candidate_mar(parts, n_items, positive_threshold) if len(parts.weights) else None
        if spec.get("calibrate") and mar is not None:
            imputation = calibrate(imputation, *mar)
    held_out = prepare(estimator, held, p, n_users=n_users, positive_threshold=positive_threshold,
                       imputation=imputation, train=train, form=spec.get("form") or "one_step",
                       candidates=parts.candidates(n_users, n_items),
                       scale=spec.get("scale"))  # fmt: skip
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
    sensitivity: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=SENSITIVITY_COLUMNS))  # fmt: skip
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
    level: float = 0.95,
) -> SeedEstimates:
    """Every recommender's lists under every weighting estimator (docs/estimators.md).

    ``imputations``: estimator -> its fitted model imputation (``e1_impute``'s), else fitted
    here; ``gammas``: the Γ at which every SNIPS estimate is bounded, with Γ* of every pair
    of recommenders from the lower confidence bound at ``level`` over ``resamples`` bootstrap
    resamples of the users, drawn for each SNIPS estimator from the seed's own stream
    ``run_rng(seed, "sensitivity")`` (the same counts for estimators that average the same
    users; :func:`~debiaseval.estimation.sensitivity.sensitivity`). ``parts``: the split's
    parts when the caller has selected some already.
    """
    parts = SplitParts(split) if parts is None else parts
    held_pairs = parts.heldout
    n_held = len(held_pairs)
    depth = max(int(k) for k in ks)
    index = PairIndex(held_pairs["user"].to_numpy(), held_pairs["item"].to_numpy(),
                      n_items=n_items)  # fmt: skip
    small = np.min_scalar_type(depth)
    ranks = {rec: index.ranks(lists, depth=depth).astype(small) for rec, lists in recs.items()}
    blocks = [(m, int(k)) for m in metrics for k in dict.fromkeys(ks)]
    tables, per_user, diagnostics, bounds = [], {}, [], []
    stars: dict[str, pd.DataFrame] = {}
    models: dict[tuple[Any, ...], PropensityModel] = {}  # one fit per model, shared
    for name, spec in estimators.items():
        key = tuple(spec.get(k) for k in ("propensity", "gamma", "smoothing", "mar_posterior"))
        if spec["estimator"] != "naive" and key not in models:
            models[key] = propensity_model(split, spec, n_users=n_users, n_items=n_items,
                                           features=features, truth=truth, parts=parts)  # fmt: skip
        held, factor, mass_ratio = estimator_heldout(
            split, spec, seed=seed, n_users=n_users, n_items=n_items,
            positive_threshold=positive_threshold, features=features, truth=truth,
            model=models.get(key), parts=parts, imputation=(imputations or {}).get(name),
        )  # fmt: skip
        out = estimate_all(held, recs, ks=ks, metrics=metrics, n_items=n_items, ranks=ranks,
                           control=weight_control_of(spec))  # fmt: skip
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
            diag = out.table(rec).assign(**weights, imputed_mass_ratio=mass_ratio,
                                         propensity_scale=factor)  # fmt: skip
            diag.insert(0, "estimator", name)
            diag.insert(0, "seed", seed)
            diag.insert(0, "recommender", rec)
            diagnostics.append(diag)
        if spec["estimator"] == "snips" and gammas:
            gain_blocks = [b for b in blocks if b[0] in GAINS]
            table, stars[name] = sensitivity(
                held, ranks, estimator=name, blocks=gain_blocks, gammas=gammas,
                resamples=resamples, rng=run_rng(seed, "sensitivity"), level=level,
            )  # fmt: skip
            bounds.append(table)
    table = pd.concat(tables, ignore_index=True)
    table.insert(1, "seed", seed)
    # recommender-major order, as evaluate_recommenders
    order = {rec: j for j, rec in enumerate(recs)}
    table = table.sort_values("recommender", key=lambda c: c.map(order), kind="stable")
    sensitive = (
        pd.concat(bounds, ignore_index=True) if bounds
        else pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    )  # fmt: skip
    sensitive.insert(1, "seed", np.int64(seed))
    return SeedEstimates(
        table.reset_index(drop=True),
        per_user,
        pd.concat(diagnostics, ignore_index=True)[DIAGNOSTICS_COLUMNS],
        sensitive,
        stars,
    )


def imputation_frame(imputation: Imputation) -> pd.DataFrame:
    """``e1_impute``'s file of a fitted model imputation (:meth:`LogisticMF.to_frame`)."""
    if not isinstance(imputation, LogisticMF):
        raise TypeError(f"{type(imputation).__name__} is not a model imputation")
    return imputation.to_frame()


def check_estimators(config: Mapping[str, Any]) -> None:
    """Cross-field checks of ``e1.estimators`` (after schema validation): no name of a test
    set, dr's keys on dr rows only, and the dataset parts each propensity model needs; raise
    ``ConfigError`` naming the key."""
    from debiaseval.data.catalog import CONTINUOUS_RATINGS, dataset_parts, missing_text
    from debiaseval.datasets.truth import TRUTH_SOURCES

    block, sources = config["e1"], config["sources"]
    clash = [name for name in block["estimators"] if name in block["testsets"]]
    if clash:
        raise ConfigError(
            f"config error at 'e1.estimators.{clash[0]}': the name of a test set of e1.testsets"
        )
    datasets = block["datasets"] if block["datasets"] is not None else config["datasets"]
    for name, spec in block["estimators"].items():
        where = f"config error at 'e1.estimators.{name}"
        if spec["estimator"] != "dr":
            dr_only = {
                "imputation": spec.get("imputation") is not None,
                "weight_control": (spec.get("weight_control") or {}).get("method", "none")
                != "none",
                "form": spec.get("form", "one_step") != "one_step",
                "calibrate": bool(spec.get("calibrate")),
            }
            dr_only["scale"] = spec.get("scale") is not None
            for key in (key for key, given in dr_only.items() if given):
                raise ConfigError(
                    f"{where}.{key}': only dr has an imputation, a form and a weight "
                    f"control; {spec['estimator']} is self-normalised (bound its weights "
                    "with clip)"
                )
        elif spec.get("form") == "scaled":
            if (spec.get("weight_control") or {}).get("method", "none") != "none":
                raise ConfigError(
                    f"{where}.weight_control': the scaled form takes no weight control (its "
                    "imputation scale trades the correction's variance instead)"
                )
        elif spec.get("scale") is not None:
            raise ConfigError(f"{where}.scale': only the scaled form has an imputation scale")
        control = spec.get("weight_control") or {}
        if control.get("value") is not None and control.get("quantile") is not None:
            raise ConfigError(
                f"{where}.weight_control': a fixed value or a quantile of the weights, not both"
            )
        part = ESTIMATOR_NEEDS.get(spec.get("propensity", "naive_bayes"))
        continuous = [d for d in datasets or [] if d in CONTINUOUS_RATINGS]
        rating_model = spec.get("propensity", "naive_bayes") in ("naive_bayes", "popularity_nb")
        if rating_model and continuous:
            raise ConfigError(
                f"{where}.propensity': {spec.get('propensity', 'naive_bayes')} propensities "
                "model P(O | rating level) and "
                f"need ratings on a few levels; {continuous[0]}'s are continuous on [-10, 10]: "
                "use popularity or wtd propensities there"
            )
        unknown = [d for d in datasets or [] if d not in TRUTH_SOURCES]
        if spec.get("propensity") == "known" and unknown:
            raise ConfigError(
                f"{where}.propensity': known propensities need a dataset whose observation "
                f"model is known ({', '.join(TRUTH_SOURCES)}), which E1's dataset "
                f"{unknown[0]} is not"
            )
        for dataset in datasets or []:
            if part is not None and part not in dataset_parts(dataset, sources):
                raise ConfigError(
                    f"{where}.propensity': {spec['propensity']} propensities need "
                    f"{missing_text(dataset, [part], sources)}, which E1's dataset {dataset} "
                    "lacks"
                )


def score_seed(
    groups: Sequence[Mapping[str, Mapping[str, BlockValues]]],
    parts: SplitParts,
    truth_per_user: pd.DataFrame | None,
    *,
    seed: int,
    n_users: int,
    positive_threshold: float,
    excluded: Sequence[str],
    resamples: int = 1000,
    level: float = 0.95,
) -> dict[str, pd.DataFrame]:
    """The scoreboard's inputs of one seed (:mod:`~debiaseval.estimation.seed_scores`):
    ``arena`` (every row's and the truth's means over the same users, with their intervals over
    ``resamples`` user resamples at ``level``), ``arena_replicates`` (those resamples, the users
    counted alike in every seed), ``reliability`` (gt's split-half reliability, when gt is the
    truth) and ``truth_tests`` (the paired tests of every two recommenders on the truth)."""
    rows: dict[str, dict[str, BlockValues]] = {}
    for group in groups:
        for rec, by_row in group.items():
            rows.setdefault(rec, {}).update(by_row)
    held = parts.heldout
    positive = held["rating"].to_numpy() > positive_threshold
    heldout_users = np.unique(held["user"].to_numpy()[positive])
    if truth_per_user is not None:
        truth_name = TRUE
        truth = {
            rec: BlockValues.of(frame, list(dict.fromkeys(zip(frame["metric"], frame["k"],
                                                              strict=True))))
            for rec, frame in truth_per_user.groupby("recommender", sort=False)
        }  # fmt: skip
    else:
        truth_name = "gt"
        truth = {rec: by_row["gt"] for rec, by_row in rows.items()}
    arena, replicates = common_means(
        rows, truth, seed=seed, heldout_users=heldout_users, n_users=n_users,
        truth_name=truth_name, resamples=resamples, level=level,
    )  # fmt: skip
    reliability = pd.DataFrame(columns=RELIABILITY_COLUMNS)
    if truth_name == "gt":
        reliability = split_half_reliability(truth, excluded, seed=seed,
                                             rng=run_rng(seed, "reliability"))  # fmt: skip
    return {"arena": arena, "arena_replicates": replicates, "reliability": reliability,
            "truth_tests": truth_tests(truth, seed=seed)}  # fmt: skip


def row_families(testsets: Sequence[str], estimators: Sequence[str]) -> dict[str, str]:
    """Every row of E1's test-set column and its family, in the column's order: gt (the MAR
    sample), the test sets (resampling), the estimators (weighting)."""
    return {
        "gt": "MAR sample",
        **dict.fromkeys(testsets, "resampling"),
        **dict.fromkeys(estimators, "weighting"),
    }


def seed_estimates(
    split: pd.DataFrame,
    recs: Mapping[str, pd.DataFrame],
    estimators: Mapping[str, Mapping[str, Any]],
    *,
    metrics: Sequence[str],
    seed: int,
    **options: Any,
) -> SeedEstimates:
    """E1's estimator rows of one seed (``e1_evaluate``): :func:`evaluate_estimators` on the
    metrics of :data:`~debiaseval.evaluation.metrics.GAINS` (``options``: its keywords); an
    empty :class:`SeedEstimates` without estimators or such metrics."""
    gains = [metric for metric in metrics if metric in GAINS]
    if not estimators or not gains:
        sensitive = pd.DataFrame(columns=["recommender", "seed", *SENSITIVITY_COLUMNS[1:]])
        return SeedEstimates(pd.DataFrame(), {}, pd.DataFrame(columns=DIAGNOSTICS_COLUMNS),
                             sensitive)  # fmt: skip
    return evaluate_estimators(split, recs, estimators, metrics=gains, seed=seed, **options)


def with_gamma_stars(comparisons: pd.DataFrame, stars: Mapping[str, pd.DataFrame]
                     ) -> pd.DataFrame:  # fmt: skip
    """``comparisons`` (a seed's paired tests) with ``gamma_star`` and ``gamma_leader``: each
    SNIPS estimator's Γ* of its pairs (:attr:`SeedEstimates.gamma_stars`, in the comparisons'
    order) and the recommender ahead, whose lead it protects (``recommender_a`` or
    ``recommender_b`` by the sign of the estimate; missing where it is 0 or Γ* is NaN); NaN
    and missing for every other row (a test set has no propensities to get wrong)."""
    star = np.full(len(comparisons), np.nan)
    leader = np.full(len(comparisons), None, dtype=object)
    testset = comparisons["testset"].to_numpy() if len(comparisons) else np.empty(0)
    for name, values in stars.items():
        at = np.flatnonzero(testset == name)
        star[at] = values["gamma_star"].to_numpy()
        sign = np.where(np.isnan(star[at]), 0, values["leader"].to_numpy())
        a = comparisons["recommender_a"].to_numpy()[at]
        b = comparisons["recommender_b"].to_numpy()[at]
        leader[at] = np.where(sign > 0, a, np.where(sign < 0, b, None))
    return comparisons.assign(gamma_star=star, gamma_leader=leader)


def scoreboard_tables(
    arena: pd.DataFrame,
    replicates: pd.DataFrame,
    reliability: pd.DataFrame,
    truth_tests: pd.DataFrame,
    *,
    families: Mapping[str, str],
    excluded: Sequence[str],
    level: float,
    resamples: int,
    draws: str,
    dataset: str,
    flags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``estimator_accuracy`` (the scoreboard), ``estimator_pairs``, ``truth_separation`` and
    the Markdown (``estimator_accuracy_md``) from the seeds' common-user means (``arena``),
    their user resamples (``replicates``), gt's split-half ``reliability`` and the truth's paired
    tests (``truth_tests``), under one resampling plan of ``resamples`` resamples drawn from the
    dataset's own stream: seeds alone where the seeds' data are independent draws (``draws``),
    seeds and users where they re-split one dataset
    (:class:`~debiaseval.estimation.resampling.ResamplingPlan`). ``verdicts``: one line per
    (metric, k) of the scoreboard (:func:`~debiaseval.estimation.scoreboard.verdict`), with the
    rows' ``flags`` (row -> flag codes)."""
    truth = truth_of(arena["testset"])
    seeds = arena["seed"].nunique()
    user_resamples = int(replicates["replicate"].max()) + 1 if len(replicates) else 0
    plan = ResamplingPlan.of(seeds, draws=draws, resamples=resamples,
                             user_resamples=user_resamples,
                             rng=run_rng(0, dataset, "scoreboard"))  # fmt: skip
    board, pairs = scoreboard(arena, replicates, truth=truth, families=families, plan=plan,
                              excluded=excluded, reliability=reliability,
                              level=level)  # fmt: skip
    separation = truth_separation(
        truth_tests, truth=truth, excluded=excluded, alpha=1 - level, plan=plan,
        truth_means=arena[arena["testset"] == truth],
        truth_replicates=replicates[replicates["testset"] == truth],
    )  # fmt: skip
    verdicts = []
    for (metric, k), block in board.groupby(["metric", "k"], sort=True):
        same = pairs[(pairs["metric"] == metric) & (pairs["k"] == k)]
        line = verdict(block, same, separation, flags=flags, state_separation=False)
        verdicts.append(f"The estimator arena at {metric}@{k} (estimator_accuracy.md): {line}")
    return {
        "estimator_accuracy": board,
        "estimator_pairs": pairs,
        "truth_separation": separation,
        "estimator_accuracy_md": scoreboard_markdown(board, pairs, dataset, separation,
                                                     flags=flags),
        "verdicts": verdicts,
    }
