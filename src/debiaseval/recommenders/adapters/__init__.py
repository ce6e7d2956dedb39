"""Adapters for recommender libraries users already have, installed as optional extras.

Each module wraps one library on the contract of
:class:`~debiaseval.recommenders.base.Recommender` and imports the library only when
a model is validated or trained, so ``debiaseval`` imports without it:

- :mod:`~debiaseval.recommenders.adapters.implicit` (``pip install -e '.[implicit]'``):
  ``implicit_als`` (ALS, Hu, Koren & Volinsky, ICDM 2008) and ``implicit_bpr`` (BPR,
  Rendle et al., UAI 2009), both trained by epochs, so tuning early-stops them;
- :mod:`~debiaseval.recommenders.adapters.cornac` (``pip install -e '.[cornac]'``):
  ``cornac_ease`` (EASEᴿ, Steck, WWW 2019) and ``cornac_hpf`` (hierarchical Poisson
  factorisation, Gopalan, Hofman & Blei, UAI 2015).

The package's ``pyproject.toml`` registers the short names in the entry-point group
``debiaseval.recommenders``, so a config names them like built-in models. Without the
library, validating a model (the config check does it before any job runs) raises
:class:`MissingExtraError`, one line naming the extra. See docs/own-recommender.md,
"Models from implicit and Cornac".
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import ClassVar

import scipy.sparse as sp

from debiaseval.recommenders.base import Recommender, check_bool, check_real, implicit_feedback

__all__ = ["LibraryAdapter", "MissingExtraError", "require"]


class MissingExtraError(ImportError, ValueError):
    """A model needs a library that is not installed (one line naming the extra).

    An ``ImportError``, and a ``ValueError`` so that the config check, which reports a
    bad recommender entry's ``ValueError`` with its config key, reports it too.
    """


def require(module: str, algorithm: str, extra: str) -> ModuleType:
    """Import ``module`` for ``algorithm``, or raise :class:`MissingExtraError` naming ``extra``.

    Only a missing ``module`` (or its top-level package) is turned into the one-line
    error; any other import failure propagates unchanged.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != top:
            raise
        raise MissingExtraError(
            f"algorithm {algorithm!r} needs the {top} package: pip install -e '.[{extra}]'",
            name=top,
        ) from None


class LibraryAdapter(Recommender):
    """Shared part of the adapters: the library check and the feedback they learn from.

    A subclass sets ``extra`` (the library's top-level package, also the name of the
    pip extra that installs it) and has the hyperparameters ``positives_only`` and
    ``positive_threshold`` of :func:`~debiaseval.recommenders.base.implicit_feedback`.
    """

    extra: ClassVar[str]

    def validate_params(self) -> None:
        """Check that the library is installed (:class:`MissingExtraError`) and the feedback
        hyperparameters; subclasses add their own checks."""
        require(self.extra, self.name, self.extra)
        check_real("positive_threshold", self.positive_threshold)
        check_bool("positives_only", self.positives_only)

    def _feedback(self, train: sp.csr_matrix) -> sp.csr_matrix:
        """The 0/1 float64 CSR matrix of the training pairs learnt from; a one-line
        ``ValueError`` when there is none."""
        feedback = implicit_feedback(
            train,
            positives_only=bool(self.positives_only),
            positive_threshold=float(self.positive_threshold),
        )
        if feedback.nnz == 0:
            kind = f"rating > {self.positive_threshold}" if self.positives_only else "rating"
            raise ValueError(f"{self.name}: no training pair ({kind}) to learn from")
        return feedback
