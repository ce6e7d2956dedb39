"""Errors a user fixes by changing the config or the data (one-line messages).

Kept in a module with no heavy imports so that :mod:`debiaseval.workflow.runtime` can
recognise them in every job.
"""

from __future__ import annotations

__all__ = ["ContractError", "EmptyTestSetError", "ListsError"]


class EmptyTestSetError(ValueError):
    """An intervened test set has no pair, or no relevant pair, so its metrics would be missing."""


class ListsError(ValueError):
    """Precomputed recommendation lists fail a check: unknown ids, duplicated pairs, training
    items (leakage), a rank that disagrees with the score, lists too short for a K."""


class ContractError(TypeError):
    """A recommender class breaks the contract of
    :class:`~debiaseval.recommenders.base.Recommender` (one line), e.g. scores of the wrong
    shape or dtype; :mod:`debiaseval.recommenders.registry` exports it."""
