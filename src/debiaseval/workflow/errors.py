"""Errors a user fixes by changing the config or the data (one-line messages).

Kept in a module with no heavy imports so that :mod:`debiaseval.workflow.runtime` can
recognise them in every job.
"""

from __future__ import annotations

__all__ = ["EmptyTestSetError"]


class EmptyTestSetError(ValueError):
    """An intervened test set has no pair, or no relevant pair, so its metrics would be missing."""
