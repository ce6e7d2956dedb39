"""The recommender contract (docs/own-recommender.md), after scikit-learn's estimator API.

A :class:`Recommender` stores its keyword-only hyperparameters in ``__init__``
and nothing else; :meth:`Recommender.fit` learns from an n_users × n_items CSR
matrix of training ratings and returns ``self``; learned state ends in ``_``;
:meth:`Recommender.score` gives a dense float64 score for every item of the
requested users (higher = better). Top-N lists over the candidate set are made
by :func:`debiaseval.recommenders.ranking.top_k`, from the dense scores or from the
optional ``_rank`` of a model that ranks without them.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar, Self

import numpy as np
import scipy.sparse as sp

from debiaseval.io.errors import ContractError

__all__ = [
    "NotFittedError",
    "Recommender",
    "check_bool",
    "check_int",
    "check_real",
    "check_train",
    "implicit_feedback",
    "positive_mask",
    "trains_by_epochs",
]


class NotFittedError(ValueError, AttributeError):
    """Raised when :meth:`Recommender.score` is called before :meth:`Recommender.fit`."""


def check_int(key: str, value: object, *, low: int = 1) -> int:
    """``value`` as an int ≥ ``low``, else a one-line ``ValueError`` naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{key} must be an int >= {low}, got {value!r}")
    return int(value)


def check_bool(key: str, value: object) -> bool:
    """``value`` as a bool (numpy's included), else a one-line ``ValueError`` naming ``key``."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{key} must be a bool, got {value!r}")
    return bool(value)


def check_real(key: str, value: object, *, low: float = -np.inf, strict: bool = False) -> float:
    """``value`` as a finite float ≥ ``low`` (> ``low`` if ``strict``), else ``ValueError``."""
    ok = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    if not (ok and np.isfinite(value) and (value > low if strict else value >= low)):
        bound = f" {'>' if strict else '>='} {low}" if np.isfinite(low) else ""
        raise ValueError(f"{key} must be a finite number{bound}, got {value!r}")
    return float(value)


def check_train(train: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """Return a float64 CSR copy of ``train`` with duplicates summed and zeros dropped.

    The caller's matrix is never modified. Raises ``ValueError`` for a non-sparse,
    non-2-D or non-finite input.
    """
    if not sp.issparse(train) or train.ndim != 2:
        raise ValueError(f"train must be a 2-D scipy sparse matrix, got {type(train).__name__}")
    x = sp.csr_matrix(train, dtype=np.float64, copy=True)
    x.sum_duplicates()
    x.eliminate_zeros()
    x.sort_indices()
    if not np.all(np.isfinite(x.data)):
        raise ValueError("train contains NaN or infinite ratings")
    return x


def positive_mask(train: sp.csr_matrix, threshold: float) -> sp.csr_matrix:
    """0/1 float64 CSR matrix of the positive pairs, rating > ``threshold`` (strictly).

    See docs/datasets.md.
    """
    pos = sp.csr_matrix(
        ((train.data > threshold).astype(np.float64), train.indices.copy(), train.indptr.copy()),
        shape=train.shape,
    )
    pos.eliminate_zeros()
    return pos


def implicit_feedback(
    train: sp.csr_matrix, *, positives_only: bool, positive_threshold: float
) -> sp.csr_matrix:
    """0/1 float64 CSR matrix of the pairs a model trained on implicit feedback learns from.

    The positive pairs (rating > ``positive_threshold``, :func:`positive_mask`) when
    ``positives_only``, else every observed pair (E2's BIN trains on every known pair).
    """
    if positives_only:
        return positive_mask(train, float(positive_threshold))
    return sp.csr_matrix(
        (np.ones(train.nnz), train.indices.copy(), train.indptr.copy()), shape=train.shape
    )


def trains_by_epochs(cls: type) -> bool:
    """Whether recommender class ``cls`` trains by epochs: it has an ``epochs`` hyperparameter
    and implements ``_fit_partial`` (then tuning chooses its epochs by early stopping)."""
    return (
        isinstance(cls, type)
        and issubclass(cls, Recommender)
        and "epochs" in cls._param_names()
        and callable(getattr(cls, "_fit_partial", None))
    )


_SCORE_KINDS = "fiu"
"""dtype kinds of scores that mean numbers: float, signed and unsigned integers."""


def _checked_scores(result: object, cls: type, shape: tuple[int, int]) -> np.ndarray:
    """``_score``'s result as an array of ``shape`` (float32 kept, any other real dtype
    as float64), or a one-line ``ContractError``
    naming the class, what was expected and what came back. A scipy sparse matrix is made
    dense (its unset entries score 0); complex, object, string and boolean scores are refused,
    never cast."""
    expected = f"a float64 array of shape {shape} (users × items)"
    label = f"{cls.__module__}.{cls.__qualname__}._score()"
    if sp.issparse(result):
        if result.shape != shape:
            raise ContractError(
                f"{label} returned a sparse matrix of shape {result.shape}; expected {expected}"
            )
        result = result.toarray()
    result = np.asarray(result)
    if result.dtype.kind not in _SCORE_KINDS:
        raise ContractError(
            f"{label} returned dtype {result.dtype} (shape {result.shape}); expected {expected}"
        )
    if result.shape != shape:
        hint = " (transposed?)" if result.shape == shape[::-1] else ""
        raise ContractError(
            f"{label} returned shape {result.shape}{hint} (dtype {result.dtype}); "
            f"expected {expected}"
        )
    if result.dtype == np.float32:
        return result
    return np.asarray(result, dtype=np.float64)


class Recommender(ABC):
    """Base class of every recommender (docs/own-recommender.md).

    Subclasses define ``__init__`` with keyword-only hyperparameters that it
    stores unchanged under the same attribute names (validation happens in
    ``fit``, through :meth:`validate_params`), set the class attribute
    :attr:`name` (the registry key), and implement :meth:`_fit` and :meth:`_score`.
    A model trained by epochs also has an ``epochs`` hyperparameter and implements
    ``_fit_partial(train, epochs)``, which trains that many more epochs of the fitted
    model (see :meth:`fit_partial`); tuning then chooses its epochs by early stopping.
    A model that can list its top k without a dense score matrix may implement
    ``_rank(users, k, exclude)``, returning (items, scores), each (len(users), k), best
    first by (score descending, item id ascending), item -1 after the last candidate,
    where row u of the CSR matrix ``exclude`` (sorted indices) holds the items that are
    not candidates of user u; :func:`~debiaseval.recommenders.ranking.top_k` then uses it,
    and it must equal the dense path (checked by ``check_recommender``).
    The contract is written down in docs/own-recommender.md.
    """

    name: ClassVar[str]

    # -- hyperparameters -------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        if cls.__init__ is object.__init__:  # no __init__ of its own: no hyperparameters
            return []
        sig = inspect.signature(cls.__init__)
        return [
            p.name
            for p in sig.parameters.values()
            if p.name != "self" and p.kind is not inspect.Parameter.VAR_KEYWORD
        ]

    def get_params(self) -> dict[str, Any]:
        """Hyperparameters as a dict; ``type(self)(**self.get_params())`` is an unfitted twin."""
        return {p: getattr(self, p) for p in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set hyperparameters by name (unknown names raise ``ValueError``); returns ``self``."""
        valid = self._param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(
                f"unknown parameter(s) for {self.name!r}: {', '.join(unknown)}; "
                f"valid: {', '.join(valid)}"
            )
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def validate_params(self) -> None:
        """Raise ``ValueError`` for an invalid hyperparameter value (called by ``fit``)."""
        return  # a hook: subclasses with hyperparameters override it

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- learning and scoring --------------------------------------------
    def _prepare(self, train: sp.spmatrix | sp.sparray, seed: int) -> sp.csr_matrix:
        """Validate ``seed``, the hyperparameters and ``train``; set ``n_users_``, ``n_items_``,
        ``seed_``; return the validated CSR training matrix."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.validate_params()
        x = check_train(train)
        self.n_users_, self.n_items_ = x.shape
        self.seed_ = int(seed)
        return x

    def fit(self, train: sp.spmatrix | sp.sparray, *, seed: int = 0) -> Self:
        """Learn from ``train`` (n_users × n_items ratings, absent = unobserved); return ``self``.

        ``seed`` (a non-negative int) makes every random choice reproducible.
        A model trained by epochs records the epochs trained in ``epochs_``.
        """
        x = self._prepare(train, seed)
        self._fit(x, int(seed))
        if trains_by_epochs(type(self)):
            self.epochs_ = int(self.epochs)
        return self

    def fit_partial(self, train: sp.spmatrix | sp.sparray, *, epochs: int) -> Self:
        """Train a fitted model trained by epochs ``epochs`` more epochs on the same ``train``.

        ``fit`` with ``epochs = a`` then ``fit_partial(train, epochs=b)`` gives the model
        that ``fit`` with ``epochs = a + b`` gives (the same random stream continues).
        Raises ``TypeError`` for a model not trained by epochs (:func:`trains_by_epochs`).
        """
        if not trains_by_epochs(type(self)):
            raise TypeError(f"{type(self).__name__} does not train by epochs (no _fit_partial)")
        if not hasattr(self, "n_items_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit() first")
        n = check_int("epochs", epochs)
        x = check_train(train)
        if x.shape != (self.n_users_, self.n_items_):
            raise ValueError(
                f"train has shape {x.shape}, the model was fitted on "
                f"{(self.n_users_, self.n_items_)}"
            )
        self._fit_partial(x, n)
        self.epochs_ = int(getattr(self, "epochs_", 0)) + n
        return self

    def iter_epochs(
        self, train: sp.spmatrix | sp.sparray, *, seed: int = 0, step: int = 1
    ) -> Iterator[int]:
        """Train ``epochs`` epochs, ``step`` at a time, yielding the epochs done so far.

        After each yield the model is fitted (``score`` works) as if ``fit`` had been
        called with that many epochs: the first step is ``_fit`` with ``epochs = step``,
        the next ones ``_fit_partial``. Early stopping
        (:func:`debiaseval.selection.tuning.tune_points`) evaluates between steps.
        """
        if not trains_by_epochs(type(self)):
            raise TypeError(f"{type(self).__name__} does not train by epochs (no _fit_partial)")
        step = check_int("step", step)
        x = self._prepare(train, seed)
        total = check_int("epochs", self.epochs)
        done = min(step, total)
        self.epochs = done
        try:
            self._fit(x, int(seed))
        finally:
            self.epochs = total
        self.epochs_ = done
        yield done
        while done < total:
            n = min(step, total - done)
            self._fit_partial(x, n)
            done += n
            self.epochs_ = done
            yield done

    def score(self, users: np.ndarray) -> np.ndarray:
        """Scores of every item for ``users``: a new float64 array (len(users), n_items).

        Higher is better. The array belongs to the caller, who may modify it.
        """
        return np.asarray(self._native_scores(users), dtype=np.float64)

    def _native_scores(self, users: np.ndarray) -> np.ndarray:
        """:meth:`score` before its cast to float64: float32 when ``_score`` gives float32.

        The cast is exact, so ranking by these scores equals ranking by :meth:`score`;
        :func:`~debiaseval.recommenders.ranking.top_k` uses them to rank in the model's own
        precision.
        """
        if not hasattr(self, "n_items_"):
            raise NotFittedError(f"{type(self).__name__} is not fitted; call fit() first")
        u = np.asarray(users)
        if u.ndim != 1 or (u.size and not np.issubdtype(u.dtype, np.integer)):
            raise ValueError("users must be a 1-D array of integer user ids")
        u = u.astype(np.int64, copy=False)
        if u.size and (u.min() < 0 or u.max() >= self.n_users_):
            raise ValueError(f"user ids must lie in [0, {self.n_users_}), got {u.min()}..{u.max()}")
        return _checked_scores(self._score(u), type(self), (u.size, self.n_items_))

    @abstractmethod
    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        """Learn state (attributes ending in ``_``) from a validated float64 CSR ``train``."""

    @abstractmethod
    def _score(self, users: np.ndarray) -> np.ndarray:
        """Score every item for validated int64 ``users``; return a fresh (len(users), n_items)."""
