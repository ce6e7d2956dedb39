"""Errors a user fixes by changing the config or the data (one-line messages).

Every such error of the package is defined here, on the ground floor, so that any module
may raise it and :mod:`debiaseval.workflow.runtime` recognises them all in every job
(:data:`debiaseval.workflow.runtime.USER_ERRORS`). Their text is inert for a terminal: a control
or bidirectional character of a user's name or file is shown escaped
(:func:`debiaseval.io.terminal.inert_terminal`), so the line stays one line. The module imports
only :mod:`debiaseval.io.terminal`, the ground floor's.
"""

from __future__ import annotations

from debiaseval.io.terminal import inert_terminal

__all__ = [
    "ConfigError",
    "ContractError",
    "DatasetError",
    "EmptyTestSetError",
    "ListsError",
    "UnreadableFileError",
]


class _Inert:
    """An error whose text shows user-given control characters escaped."""

    def __str__(self) -> str:
        return inert_terminal(super().__str__())


class ConfigError(_Inert, ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


class DatasetError(_Inert, ValueError):
    """A dataset cannot be obtained, verified or parsed; the message is one line."""


class EmptyTestSetError(_Inert, ValueError):
    """An intervened test set has no pair, or no relevant pair, so its metrics would be missing."""


class ListsError(_Inert, ValueError):
    """Precomputed recommendation lists fail a check: unknown ids, duplicated pairs, training
    items (leakage), a rank that disagrees with the score, lists too short for a K."""


class ContractError(_Inert, TypeError):
    """A recommender class breaks the contract of
    :class:`~debiaseval.recommenders.base.Recommender` (one line), e.g. scores of the wrong
    shape or dtype; :mod:`debiaseval.recommenders.registry` exports it."""


class UnreadableFileError(_Inert, OSError):
    """A Parquet file a job reads is damaged (truncated, overwritten, not Parquet)."""

    path: str | None = None
    """The damaged file, where known."""
