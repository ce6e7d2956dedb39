"""The shared behavioural check of the recommender contract, after scikit-learn's
``check_estimator``: every built-in runs through it in the tests, and a user calls it on
their own class in theirs (see docs/own-recommender.md)::

    from debiaseval.recommenders import check_recommender

    def test_my_model():
        check_recommender(MyModel, {"factors": 8})
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from debiaseval.recommenders.base import NotFittedError, Recommender, trains_by_epochs
from debiaseval.recommenders.ranking import nan_scores_message, top_k
from debiaseval.recommenders.registry import ContractError, check_recommender_class

__all__ = ["check_determinism", "check_recommender", "check_train_matrix"]


def check_train_matrix(
    n_users: int = 40, n_items: int = 25, density: float = 0.3, seed: int = 7
) -> sp.csr_matrix:
    """A small random matrix of integer ratings 1..5 (the check's training data)."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    rows, cols = np.nonzero(mask)
    values = rng.integers(1, 6, rows.size).astype(np.float64)
    return sp.csr_matrix((values, (rows, cols)), shape=(n_users, n_items))


def _require(condition: bool, label: str, message: str) -> None:
    if not condition:
        raise ContractError(f"{label}: {message}")


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same shape and values, NaN equal to NaN (its own rule reports NaN scores)."""
    try:
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:  # not a numeric dtype: NaN has no meaning there
        return a.shape == b.shape and bool(np.array_equal(a, b))


class _Dense:
    """A fitted model seen through ``score`` alone: :func:`top_k` ranks its dense scores."""

    def __init__(self, model: Recommender) -> None:
        self.model = model

    def score(self, users: np.ndarray) -> np.ndarray:
        return self.model.score(users)


def _check_rank(model: Recommender, x: sp.csr_matrix, label: str) -> None:
    """A model's own ``_rank`` lists equal the lists of its dense scores (ties included)."""
    n_users, n_items = x.shape
    subset = np.array([0, 2, min(17, n_users - 1)])
    for k in (1, 3, n_items + 2):  # the last: more than any user's candidates
        for exclude in (True, False):
            for users, batch in ((None, 7), (subset, 1)):
                ranked = top_k(model, x, k, users=users, batch_size=batch, exclude_train=exclude)
                dense = top_k(_Dense(model), x, k, users=users, exclude_train=exclude)  # type: ignore[arg-type]
                _require(
                    ranked.equals(dense),
                    label,
                    f"_rank lists differ from the ranking of score() (k = {k}, "
                    f"exclude_train = {exclude})",
                )


DETERMINISM_EXPECTED = (
    "expected the same scores for the same seed (draw every random choice from the `seed` "
    "that _fit is given, never from global or fresh random state)"
)
"""What the determinism rules expect, the end of each of their messages."""


def check_determinism(
    cls: type[Recommender],
    params: Mapping[str, Any] | None = None,
    *,
    train: sp.spmatrix | sp.sparray | None = None,
    seed: int = 3,
    label: str | None = None,
) -> None:
    """The determinism part of :func:`check_recommender`: same seed, same model.

    Two fresh instances of ``cls`` with hyperparameters ``params``, fitted on ``train``
    (default :func:`check_train_matrix`) with the same ``seed``, must give equal scores;
    scoring the same users twice must give equal scores; a ``copy.deepcopy`` of the fitted
    model (tuning copies models) must score the same; and a model with the optional
    ``_rank`` must list the same top 10 twice. The workflow's results are byte-identical
    for the same config and seed only if every model keeps these rules: a model that draws
    fresh noise on every call would change ``summary.parquet`` from one run to the next
    under the same config. Raises :class:`ContractError` in one line that starts with
    ``label`` (default the class's qualified name) and ends with what was expected; scores
    with NaN (never equal to themselves) raise the ranking's NaN line instead.
    """
    label = label or cls.__qualname__
    x = check_train_matrix() if train is None else sp.csr_matrix(train)

    def fitted() -> Recommender:
        model = cls().set_params(**dict(params or {}))
        return model.fit(x, seed=seed)

    def refuse(what: str) -> None:
        shape = f"{x.shape[0]} × {x.shape[1]}"
        raise ContractError(
            f"{label} is not deterministic: {what} on a {shape} sample; {DETERMINISM_EXPECTED}"
        )

    users = np.arange(x.shape[0])
    model = fitted()
    scores = model.score(users)
    nan = np.isnan(scores).any(axis=1) if scores.dtype.kind == "f" else None
    if nan is not None and nan.any():  # NaN != NaN: not a question of determinism
        raise ContractError(nan_scores_message(cls, nan, users))
    if not _equal(model.score(users), scores):
        refuse("scoring the same users twice gives different scores")
    if not _equal(fitted().score(users), scores):
        refuse("a fresh instance fitted with the same seed scores differently")
    if not _equal(copy.deepcopy(model).score(users), scores):
        refuse("a deep copy of the fitted model scores differently")
    if callable(getattr(model, "_rank", None)):
        first = top_k(model, x, 10, exclude_train=True)
        if not first.equals(top_k(model, x, 10, exclude_train=True)):
            refuse("ranking the same users twice gives different lists")


def check_recommender(
    cls: type[Recommender],
    params: Mapping[str, Any] | None = None,
    *,
    train: sp.spmatrix | sp.sparray | None = None,
    seed: int = 3,
) -> None:
    """Check that ``cls`` with hyperparameters ``params`` keeps the recommender contract.

    Raises :class:`ContractError` naming the first broken rule. The rules: the class
    contract (:func:`check_recommender_class`); ``__init__`` stores only the
    hyperparameters; scoring before ``fit`` raises ``NotFittedError``; ``fit`` returns
    ``self``, leaves ``train`` and the hyperparameters unchanged and learns only
    attributes ending in ``_``; ``score`` gives finite float64 scores of shape
    (users, items), the same for any subset or order of users, a fresh array, and
    deterministic (:func:`check_determinism`: the same again, for a fresh instance fitted
    with the same seed and after ``copy.deepcopy``, as tuning copies models); a model
    with the optional ``_rank`` lists exactly what
    :func:`~debiaseval.recommenders.ranking.top_k` lists from its scores; and, for a model
    trained by epochs
    (:func:`~debiaseval.recommenders.base.trains_by_epochs`), ``fit`` with ``epochs = 2``
    then ``fit_partial(epochs=1)`` equals ``fit`` with ``epochs = 3``. ``train``
    defaults to :func:`check_train_matrix`.
    """
    check_recommender_class(cls)
    label = cls.__qualname__
    params = dict(params or {})
    x = check_train_matrix() if train is None else sp.csr_matrix(train)

    def fresh() -> Recommender:
        model = cls().set_params(**params)
        model.validate_params()
        return model

    model = fresh()
    _require(vars(model) == model.get_params(), label, "__init__ stores more than its parameters")
    _require(
        type(model)(**model.get_params()).get_params() == model.get_params(),
        label,
        "cls(**get_params()) does not rebuild the same parameters",
    )
    try:
        model.score(np.arange(3))
    except NotFittedError:
        pass
    else:
        raise ContractError(f"{label}: score() before fit() does not raise NotFittedError")

    before = x.copy()
    _require(model.fit(x, seed=seed) is model, label, "fit() does not return self")
    _require((x != before).nnz == 0, label, "fit() modifies the training matrix")
    learned = set(vars(model)) - set(model.get_params())
    _require(bool(learned), label, "fit() learns no attribute")
    odd = sorted(a for a in learned if not a.endswith("_"))
    _require(not odd, label, f"learned attributes must end in '_': {', '.join(odd)}")
    _require(model.get_params() == fresh().get_params(), label, "fit() changes the hyperparameters")

    users = np.arange(x.shape[0])
    scores = model.score(users)
    _require(scores.shape == x.shape, label, f"score() shape {scores.shape}, expected {x.shape}")
    _require(scores.dtype == np.float64, label, "score() is not float64")
    _require(bool(np.all(np.isfinite(scores))), label, "score() has NaN or infinite values")
    subset = np.array([5, 0, min(17, x.shape[0] - 1), 5])
    _require(
        _equal(model.score(subset), scores[subset]),
        label,
        "scores of a subset of users, in another order, differ from their full rows",
    )
    _require(
        model.score(np.array([], dtype=np.int64)).shape == (0, x.shape[1]),
        label,
        "score() of no user is not an empty (0, n_items) array",
    )
    check_determinism(cls, params, train=x, seed=seed, label=label)
    again = scores.copy()
    scores[:] = 0
    _require(_equal(model.score(users), again), label, "score() returns an array it keeps")
    try:
        model.score(np.array([x.shape[0]]))
    except ValueError:
        pass
    else:
        raise ContractError(f"{label}: score() of an unknown user does not raise ValueError")

    if callable(getattr(model, "_rank", None)):
        _check_rank(model, x, label)

    if trains_by_epochs(cls):
        stepped = fresh().set_params(epochs=2).fit(x, seed=seed).fit_partial(x, epochs=1)
        whole = fresh().set_params(epochs=3).fit(x, seed=seed)
        _require(
            stepped.epochs_ == 3 and _equal(stepped.score(users), whole.score(users)),
            label,
            "fit(epochs=2) then fit_partial(epochs=1) differs from fit(epochs=3)",
        )
