"""A config's recommender entry (``e1.recommenders.<Name>``, ``e5.models.<Name>``, ``e2.mf``)
and its cross-field check, run before any job.

An entry is ``{algorithm, params, grid}``, or ``{algorithm: external, recs, ids,
on_train_items}`` for precomputed lists. The check resolves the algorithm (importing a
plugin, see :mod:`debiaseval.recommenders.registry`) and builds every grid point, so a
missing module, a missing class, a class that breaks the contract or a bad
hyperparameter stops the run with one line naming the config key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from debiaseval.recommenders.base import Recommender
from debiaseval.recommenders.registry import (
    EXTERNAL,
    make_recommender,
    resolve_recommender,
)
from debiaseval.workflow.config import ConfigError, expand_grid

__all__ = ["EXTERNAL_DEFAULTS", "check_recommender_spec"]

EXTERNAL_DEFAULTS = {"recs": None, "ids": "raw", "on_train_items": "error"}
"""The keys that only precomputed lists (algorithm ``external``) take, with their defaults."""


def check_recommender_spec(spec: Mapping[str, Any], where: str) -> type[Recommender] | None:
    """Check the recommender entry ``spec`` at config key ``where``; return its class
    (None for ``external`` lists). Raises :class:`ConfigError` with one line.

    ``recs`` is required iff the algorithm is ``external``, and ``external`` takes no
    ``params`` or ``grid``; any other algorithm is resolved (plugins imported), its
    ``params`` and ``grid`` must not share a key, and every grid point must build.
    """
    algorithm = spec["algorithm"]
    params, grid = spec.get("params", {}), spec.get("grid", {})
    if algorithm == EXTERNAL:
        if spec.get("recs") is None:
            raise ConfigError(
                f"config error at '{where}': algorithm external needs `recs`, the path of the "
                "lists with {dataset} and {seed}"
            )
        for key, value in (("params", params), ("grid", grid)):
            if value:
                raise ConfigError(
                    f"config error at '{where}.{key}': precomputed lists (algorithm external) "
                    "take no params or grid"
                )
        from debiaseval.evaluation.external_lists import check_template

        try:
            check_template(spec["recs"])
        except ValueError as exc:
            raise ConfigError(f"config error at '{where}.recs': {exc}") from None
        return None
    extra = [k for k, default in EXTERNAL_DEFAULTS.items() if spec.get(k, default) != default]
    if extra:
        raise ConfigError(
            f"config error at '{where}.{extra[0]}': only precomputed lists (algorithm external) "
            f"take {', '.join(EXTERNAL_DEFAULTS)}"
        )
    try:
        cls = resolve_recommender(algorithm)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"config error at '{where}.algorithm': {exc}") from None
    overlap = set(params) & set(grid)
    if overlap:
        raise ConfigError(f"config error at '{where}': {sorted(overlap)} in both params and grid")
    for point in expand_grid(grid):
        try:
            make_recommender(algorithm, **params, **point)
        except (TypeError, ValueError) as exc:
            message = " ".join(str(exc).split())
            raise ConfigError(f"config error at '{where}': {message}") from None
    return cls
