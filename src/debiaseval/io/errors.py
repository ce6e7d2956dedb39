"""Errors a user fixes by changing the config or the data (one-line messages).

Every such error of the package is defined here, on the ground floor, so that any module
may raise it and :mod:`debiaseval.workflow.runtime` recognises them all in every job
(:data:`debiaseval.workflow.runtime.USER_ERRORS`). The module imports nothing.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "ContractError",
    "DatasetError",
    "EmptyTestSetError",
    "ListsError",
    "UnreadableFileError",
]


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


class DatasetError(ValueError):
    """A dataset cannot be obtained, verified or parsed; the message is one line."""


class EmptyTestSetError(ValueError):
    """An intervened test set has no pair, or no relevant pair, so its metrics would be missing."""


class ListsError(ValueError):
    """Precomputed recommendation lists fail a check: unknown ids, duplicated pairs, training
    items (leakage), a rank that disagrees with the score, lists too short for a K."""


class ContractError(TypeError):
    """A recommender class breaks the contract of
    :class:`~debiaseval.recommenders.base.Recommender` (one line), e.g. scores of the wrong
    shape or dtype; :mod:`debiaseval.recommenders.registry` exports it."""


class UnreadableFileError(OSError):
    """A Parquet file a job reads is damaged (truncated, overwritten, not Parquet)."""
