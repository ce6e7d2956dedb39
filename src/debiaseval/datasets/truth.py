"""The full rating matrix of a dataset whose every rating is known, row by row: the source of
E1's exact ``TRUE`` row (docs/estimators.md).

``synthetic`` knows its whole matrix (the generator's, :mod:`debiaseval.data.synthetic_dataset`);
``jester5k-semi`` knows Jester5k's real fully observed block (Goldberg et al. 2001), on which
only the exposure is simulated (:mod:`debiaseval.data.semireal`). Both take the ids of their
own canonical data as rows and columns (the raw ids of their users and items tables).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TRUTH_SOURCES", "full_propensities_of", "full_rating_rows_of"]

TRUTH_SOURCES: tuple[str, ...] = ("synthetic", "jester5k-semi")
"""The datasets whose full rating matrix and observation model are known
(:func:`full_rating_rows_of`, :func:`full_propensities_of`)."""


def full_rating_rows_of(
    dataset: str, generator: Mapping[str, Any] | None, raw: str | Path | None = None
) -> Callable[[np.ndarray], np.ndarray]:
    """``rows(users)``: the full rating rows of ``users`` (raw ids) over every item of
    ``dataset``, one of :data:`TRUTH_SOURCES`. ``synthetic``'s come from its generator block
    ``generator`` (the seed's own draw); ``jester5k-semi``'s are Jester5k's block, read from
    the folder ``raw`` of its file (the block does not depend on the exposure's draw)."""
    if dataset == "synthetic":
        from debiaseval.data.synthetic_dataset import full_rating_rows

        return full_rating_rows(**(generator or {}))
    if dataset == "jester5k-semi":
        if raw is None:
            raise ValueError("jester5k-semi's truth needs the folder of Jester5k's file")
        from debiaseval.data.jester import jester5k_block

        ratings = jester5k_block(Path(raw)).ratings

        def rows(users: np.ndarray) -> np.ndarray:
            return ratings[np.asarray(users, dtype=np.int64)]

        return rows
    raise ValueError(
        f"no full rating matrix is known for dataset {dataset!r}; known: {', '.join(TRUTH_SOURCES)}"
    )


def full_propensities_of(
    dataset: str, generator: Mapping[str, Any] | None, raw: str | Path | None = None
) -> np.ndarray:
    """The observation model's P(u, i) of every user and item of ``dataset`` (one of
    :data:`TRUTH_SOURCES`; rows and columns its raw ids) for the draw of the generator block
    ``generator`` (the seed's own): ``synthetic``'s generator propensities, or the exposure
    model of ``jester5k-semi`` on Jester5k's block read from the folder ``raw``
    (:func:`~debiaseval.data.semireal.draw_semireal`)."""
    from debiaseval.data.draws import generator_block

    params = generator_block(generator)
    if dataset == "synthetic":
        from debiaseval.data.synthetic import generate_synthetic

        return np.asarray(generate_synthetic(**params).propensities, dtype=np.float64)
    if dataset == "jester5k-semi":
        if raw is None:
            raise ValueError("jester5k-semi's propensities need the folder of Jester5k's file")
        from debiaseval.data.jester import jester5k_block
        from debiaseval.data.semireal import draw_semireal

        return draw_semireal(jester5k_block(Path(raw)), **params).propensities
    raise ValueError(
        f"no observation model is known for dataset {dataset!r}; known: {', '.join(TRUTH_SOURCES)}"
    )
