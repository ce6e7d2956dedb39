"""One draw of a generated dataset per seed (docs/datasets.md, "One draw per seed").

A verdict about estimators is a claim about the process that generates the data, not about one
draw of it. On a generated dataset the workflow can draw the data afresh for every seed of an
experiment: the generator's seed is derived from the dataset block's ``seed`` and the
experiment's seed (:func:`draw_seed`), so the seeds are independent draws of the whole process
(ratings, exposure, MAR sample, then the split, the test sets and the training), and a
bootstrap over seeds describes what a new study would meet. With ``per_seed: false`` every seed
reuses the one draw at the block's ``seed`` and re-splits it; intervals are then conditional on
that draw.

:data:`DRAW_BLOCKS` names the config block of each dataset that can be drawn per seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "DRAW_BLOCKS",
    "DRAW_KEYS",
    "draw_seed",
    "drawn_datasets",
    "generator_block",
    "per_seed_draws",
    "seed_block",
    "seed_config",
]

DRAW_BLOCKS: dict[str, str] = {"synthetic": "synthetic", "jester5k-semi": "semireal"}
"""Dataset -> the config block that generates it (and holds its ``seed`` and ``per_seed``):
``synthetic`` its whole data, ``jester5k-semi`` the exposure on Jester's real block."""

DRAW_KEYS = ("per_seed",)
"""Keys of a generator block that say how the workflow draws, not what the generator makes."""


def draw_seed(base: int, seed: int) -> int:
    """The generator seed of seed ``seed``'s draw: the first 32-bit word of numpy's
    ``SeedSequence([base, seed])``, so distinct (base, seed) give independent streams and
    the same pair always the same draw."""
    return int(np.random.SeedSequence([int(base), int(seed)]).generate_state(1)[0])


def per_seed_draws(config: Mapping[str, Any], dataset: str) -> bool:
    """Whether each seed of an experiment draws its own copy of ``dataset``: a dataset of
    :data:`DRAW_BLOCKS` whose block leaves ``per_seed`` true (the default)."""
    block = DRAW_BLOCKS.get(dataset)
    return block is not None and bool(config.get(block, {}).get("per_seed", True))


def drawn_datasets(config: Mapping[str, Any], datasets: Any) -> list[str]:
    """The names of ``datasets`` drawn per seed under ``config`` (:func:`per_seed_draws`)."""
    return [name for name in datasets if per_seed_draws(config, name)]


def generator_block(block: Mapping[str, Any] | None) -> dict[str, Any]:
    """The generator's own parameters of a dataset ``block``: without :data:`DRAW_KEYS`."""
    return {key: value for key, value in (block or {}).items() if key not in DRAW_KEYS}


def seed_block(config: Mapping[str, Any], dataset: str, seed: int) -> dict[str, Any] | None:
    """The generator's parameters of ``dataset`` for seed ``seed`` (:func:`generator_block`):
    ``None`` for a dataset not generated from a block; with per-seed draws its ``seed``
    replaced by :func:`draw_seed` of (its seed, ``seed``); else the block's one draw."""
    name = DRAW_BLOCKS.get(dataset)
    if name is None:
        return None
    block = generator_block(config.get(name, {}))
    if per_seed_draws(config, dataset):
        block["seed"] = draw_seed(block.get("seed", 0), seed)
    return block


def seed_config(config: Mapping[str, Any], dataset: str, seed: int) -> Mapping[str, Any]:
    """``config`` as seed ``seed`` of an experiment on ``dataset`` loads it: the dataset's
    generator block replaced by the seed's own draw (:func:`seed_block`) where it is drawn per
    seed, else ``config`` itself."""
    if not per_seed_draws(config, dataset):
        return config
    return {**config, DRAW_BLOCKS[dataset]: seed_block(config, dataset, seed)}
