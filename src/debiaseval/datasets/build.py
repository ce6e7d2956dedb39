"""A dataset's canonical frames from its raw files or its generator (docs/datasets.md).

One function serves the workflow's ``preprocess`` rule and the Python API, so
both give the same interactions, users and items for the same config.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from debiaseval.data.draws import generator_block
from debiaseval.data.loaders import load_raw
from debiaseval.data.preprocess import build_interactions

__all__ = ["SOURCE_OF", "build_dataset"]

SOURCE_OF: dict[str, str] = {"ml-100k-semi": "ml-100k", "jester5k-semi": "jester5k"}
"""Derived datasets and the downloadable dataset whose raw files they are built from."""


def build_dataset(
    name: str,
    raw: str | Path | None = None,
    *,
    generator: Mapping[str, Any] | None = None,
    semisynthetic: Mapping[str, Any] | None = None,
    own: Mapping[str, Any] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """``(interactions, users, items, tuning)`` of dataset ``name``.

    ``own`` is a user dataset's ``sources.<name>`` block: its files are read by
    :func:`~debiaseval.data.user_logs.load_user_log`. ``generator`` is the block of a dataset
    drawn from one (:data:`~debiaseval.data.draws.DRAW_BLOCKS`): ``synthetic`` is generated from
    the config's ``synthetic`` block, ``jester5k-semi`` is one exposure draw of the ``semireal``
    block on Jester5k's fully observed block (its files in ``raw``). ``ml-100k-semi`` is built
    from ML-100K's files in ``raw`` with the ``semisynthetic`` block (``tuning`` is its
    MF-completion grid, else None); any other dataset is read from its canonical files in
    ``raw``.
    """
    if own is not None:
        from debiaseval.data.user_logs import load_user_log

        return (*build_interactions(load_user_log(name, own)), None)
    if name == "synthetic":
        from debiaseval.data.synthetic_dataset import synthetic_raw

        return (*build_interactions(synthetic_raw(**(generator or {}))), None)
    if raw is None:
        raise ValueError(f"dataset {name!r} needs the folder of its raw files")
    if name == "jester5k-semi":
        from debiaseval.data.jester import jester5k_block
        from debiaseval.data.semireal import semireal_raw

        block = jester5k_block(Path(raw))
        drawn = semireal_raw(block, name=name, **generator_block(generator))
        return (*build_interactions(drawn), None)
    if name in SOURCE_OF:
        from debiaseval.datasets.semisynthetic import build_ml_100k_semi

        return build_ml_100k_semi(load_raw(SOURCE_OF[name], Path(raw)), **(semisynthetic or {}))
    return (*build_interactions(load_raw(name, Path(raw))), None)
