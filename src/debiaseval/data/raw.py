"""The form every dataset takes as read from disk, before preprocessing: :class:`RawDataset`.

Its own module, below the loaders and the generators that produce it, so that a reader
(:mod:`~debiaseval.data.jester`) and the loaders' registry (:mod:`~debiaseval.data.loaders`)
need not import each other for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["RawDataset"]


@dataclass
class RawDataset:
    """A dataset as read from disk, with raw ids.

    ``mnar``/``mar``: columns ``user``, ``item`` (int64; strings in a user's own log),
    ``rating`` (float64), optional ``timestamp`` (int64). ``users``/``items``: raw id
    column ``user``/``item`` plus features. ``propensities``: long format ``user``,
    ``item``, ``propensity``.
    """

    mnar: pd.DataFrame
    mar: pd.DataFrame | None = None
    users: pd.DataFrame | None = None
    items: pd.DataFrame | None = None
    propensities: pd.DataFrame | None = None
    name: str = ""
