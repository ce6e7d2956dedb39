"""A config's recommender entry (``e1.recommenders.<Name>``, ``e5.models.<Name>``, ``e2.mf``)
and its cross-field check, run before any job.

An entry is ``{algorithm, params, grid}``, or ``{algorithm: external, recs, ids,
on_train_items}`` for precomputed lists. The check resolves the algorithm (importing a
plugin, see :mod:`debiaseval.recommenders.registry`) and builds every grid point, so a
missing module, a missing class, a class that breaks the contract or a bad
hyperparameter stops the run with one line naming the config key. A plugin (a class whose
code lies outside this package) is also fitted twice on a small sample
(:func:`check_plugin_determinism`), so a model that draws fresh noise on every call is refused
before any job instead of changing ``summary.parquet`` from one run to the next.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from debiaseval.io.errors import ConfigError
from debiaseval.io.schema import expand_grid
from debiaseval.io.source_hash import sources_hash
from debiaseval.recommenders.base import Recommender
from debiaseval.recommenders.registry import (
    EXTERNAL,
    ContractError,
    make_recommender,
    resolve_recommender,
)

__all__ = ["CHECKED_ENV", "EXTERNAL_DEFAULTS", "check_plugin_determinism", "check_recommender_spec"]

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
    points = expand_grid(grid)
    for point in points:
        try:
            make_recommender(algorithm, **params, **point)
        except (TypeError, ValueError) as exc:
            message = " ".join(str(exc).split())
            raise ConfigError(f"config error at '{where}': {message}") from None
    check_plugin_determinism(cls, algorithm, {**params, **points[0]}, where)
    return cls


CHECKED_ENV = "DEBIASEVAL_CHECKED_PLUGINS"
"""Environment variable: digests of the (plugin, hyperparameters) that passed
:func:`check_plugin_determinism` in this run; the workflow's job processes inherit it and do
not fit them again (the config check runs in every job)."""

DETERMINISM_SAMPLE = (40, 25)
"""Users and items of the random ratings :func:`check_plugin_determinism` fits a plugin on
(:func:`~debiaseval.recommenders.checks.check_train_matrix`, density 0.3): two fits of a
normal model take milliseconds."""


def _is_plugin(cls: type[Recommender]) -> bool:
    """A class whose code lies outside this package (the built-ins and the adapters of
    implicit and Cornac are checked by the package's own tests)."""
    return cls.__module__.split(".")[0] != "debiaseval"


def _checked_key(cls: type[Recommender], algorithm: str, params: Mapping[str, Any]) -> str:
    """16 hex digits naming (algorithm, class, its code, hyperparameters) in
    :data:`CHECKED_ENV`: an edit of the plugin's code between two checks of one process (a
    notebook that reloads it) checks it again."""
    try:
        code = sources_hash(cls.__module__)
    except Exception:  # a module without source (defined in a notebook, say)
        code = ""
    text = json.dumps(
        [algorithm, cls.__module__, cls.__qualname__, code, dict(params)],
        sort_keys=True,
        default=repr,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_plugin_determinism(
    cls: type[Recommender], algorithm: str, params: Mapping[str, Any], where: str
) -> None:
    """Refuse a plugin ``cls`` (named ``algorithm`` at config key ``where``) that is not
    deterministic: the determinism part of ``check_recommender``
    (:func:`~debiaseval.recommenders.checks.check_determinism`), with hyperparameters
    ``params`` (the entry's params and its grid's first point), on a sample of
    :data:`DETERMINISM_SAMPLE` random ratings. Raises :class:`ConfigError` in one line naming
    ``where`` and what was expected.

    Built-in classes are skipped, and so is a (plugin, params) already checked in this run
    (:data:`CHECKED_ENV`). A plugin whose scores break the contract on the sample (a
    :class:`ContractError`: wrong shape or dtype, say) is refused the same way. One that raises
    anything else there (a model that needs more users or items than the sample has, say) is
    left to the jobs, which report its error on the real data: the check refuses only what it
    has seen to break the contract.
    """
    if not _is_plugin(cls):
        return
    key = _checked_key(cls, algorithm, params)
    checked = [k for k in os.environ.get(CHECKED_ENV, "").split(",") if k]
    if key in checked:
        return
    from debiaseval.recommenders.checks import check_determinism, check_train_matrix

    train = check_train_matrix(*DETERMINISM_SAMPLE)
    try:
        check_determinism(cls, params, train=train, label=repr(algorithm))
    except ContractError as exc:
        raise ConfigError(f"config error at '{where}': {exc}") from None
    except Exception:  # the model fails on the sample: left to the jobs (see above)
        return
    os.environ[CHECKED_ENV] = ",".join([*checked, key])
