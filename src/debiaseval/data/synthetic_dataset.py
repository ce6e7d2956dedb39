"""The ``synthetic`` dataset as the workflow builds it, at any size (docs/performance.md).

Up to :data:`~debiaseval.data.synthetic.DENSE_CELLS` cells the full matrix is drawn by
:mod:`debiaseval.data.synthetic`; beyond, the pairs are sampled in O(pairs) by
:mod:`debiaseval.data.synthetic_pairs` (same model, a different draw). This module chooses; the
two generators do not import each other's dispatch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from debiaseval.data import synthetic as dense
from debiaseval.data.draws import generator_block
from debiaseval.data.synthetic_pairs import pair_rating_rows, sample_synthetic

__all__ = ["full_rating_rows", "synthetic_raw"]


def synthetic_raw(**params: Any):  # -> RawDataset
    """The ``synthetic`` dataset in raw form, as the workflow builds it.

    Up to :data:`~debiaseval.data.synthetic.DENSE_CELLS` cells (n_users × n_items) the full
    matrix is drawn by :func:`~debiaseval.data.synthetic.generate_synthetic` (the files of every
    existing config are unchanged); beyond, the pairs are sampled in O(pairs) by
    :func:`debiaseval.data.synthetic_pairs.sample_synthetic` (same model, a different draw; see
    docs/performance.md). Keys that say how the workflow draws (``per_seed``) are ignored.
    """
    params = generator_block(params)
    n_users = params.get("n_users", 300)
    n_items = params.get("n_items", 400)
    if n_users * n_items <= dense.DENSE_CELLS:
        return dense.generate_synthetic(**params).to_raw()
    return sample_synthetic(**params).to_raw()


def full_rating_rows(**params: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The full rating matrix Y of the ``synthetic`` dataset :func:`synthetic_raw` builds,
    row by row: ``rows(users)`` gives Y of ``users`` × every item (int8, 1..5).

    Up to :data:`~debiaseval.data.synthetic.DENSE_CELLS` cells Y is generated once as
    :func:`~debiaseval.data.synthetic.generate_synthetic` draws it (int8); beyond, each call
    evaluates the rows of the pair sampler's model
    (:func:`debiaseval.data.synthetic_pairs.pair_rating_rows`), so memory follows the batch of
    users asked for, never users × items.
    """
    params = generator_block(params)
    n_users = params.get("n_users", 300)
    n_items = params.get("n_items", 400)
    if n_users * n_items <= dense.DENSE_CELLS:
        ratings = dense.generate_synthetic(**params).ratings

        def rows(users: np.ndarray) -> np.ndarray:
            return ratings[np.asarray(users, dtype=np.int64)]

        return rows
    return pair_rating_rows(**params)
