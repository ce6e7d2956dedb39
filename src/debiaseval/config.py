"""Configuration: JSON-schema validation with defaults, and one-line errors.

The workflow calls :func:`validate_config` before any job is scheduled, so a
bad config fails at once with a message naming the offending key.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

import jsonschema
import yaml

__all__ = [
    "E1_DATASETS",
    "ConfigError",
    "expand_grid",
    "load_schema",
    "validate_config",
]


E1_DATASETS = ("synthetic", "coat", "yahoo-r3")
"""Datasets with both a MAR and an MNAR part, which experiment E1 needs."""


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


def load_schema() -> dict[str, Any]:
    """The config schema shipped with the package (draft 2020-12)."""
    text = resources.files("debiaseval").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Merge a local ``$ref`` (``#/$defs/...``) with its sibling keywords."""
    ref = schema.get("$ref")
    if ref is None:
        return schema
    target: Any = root
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    merged = dict(_resolve(target, root))
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged


def _fill_defaults(instance: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> None:
    """Insert the schema's defaults for missing object keys, recursively, in place."""
    schema = _resolve(schema, root)
    if not isinstance(instance, dict):
        return
    properties = schema.get("properties", {})
    for key, sub in properties.items():
        sub = _resolve(sub, root)
        if key not in instance and "default" in sub:
            instance[key] = copy.deepcopy(sub["default"])
        if key in instance:
            _fill_defaults(instance[key], sub, root)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for key, value in instance.items():
            if key not in properties:
                _fill_defaults(value, extra, root)


def _key_path(path: Iterable[Any]) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "<top level>"


def _one_line(error: jsonschema.ValidationError) -> str:
    where = _key_path(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(allowed))
        hint = f"; allowed: {', '.join(allowed)}" if allowed else ""
        key = f"{where}.{unknown[0]}" if where != "<top level>" else unknown[0]
        return f"config error at '{key}': unknown key{hint}"
    if "propertyNames" in error.schema_path:
        return (
            f"config error at '{where}': invalid name {error.instance!r} "
            "(a letter then letters, digits or '_'; 'gt' is reserved)"
        )
    message = error.message.replace("\n", " ")
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    hint = f" (expected: {description.strip()})" if description else ""
    return f"config error at '{where}': {message}{hint}"


def _check_fractions(config: Mapping[str, Any]) -> None:
    for key in ("mnar_split", "mar_split"):
        parts = config["e1"][key]
        total = sum(parts.values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ConfigError(
                f"config error at 'e1.{key}': fractions {parts} sum to {total:g}, expected 1"
            )


def _check_datasets(config: Mapping[str, Any]) -> None:
    for position, name in enumerate(config["datasets"]):
        if name not in E1_DATASETS:
            raise ConfigError(
                f"config error at 'datasets.{position}': E1 needs a MAR part, which {name!r} "
                f"lacks (E1 datasets: {', '.join(E1_DATASETS)})"
            )


def _check_recommenders(config: Mapping[str, Any]) -> None:
    from debiaseval.recommenders import make_recommender

    for name, spec in config["e1"]["recommenders"].items():
        where = f"e1.recommenders.{name}"
        overlap = set(spec["params"]) & set(spec["grid"])
        if overlap:
            raise ConfigError(
                f"config error at '{where}': {sorted(overlap)} in both params and grid"
            )
        for point in expand_grid(spec["grid"]):
            try:
                make_recommender(spec["algorithm"], **spec["params"], **point)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"config error at '{where}': {exc}") from None


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Return a validated deep copy of ``config`` with every default filled in.

    Raises :class:`ConfigError` with one line naming the first offending key.
    """
    schema = load_schema()
    filled = copy.deepcopy(dict(config))
    _fill_defaults(filled, schema, schema)
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(filled))
    if error is not None:
        raise ConfigError(_one_line(error))
    _check_datasets(filled)
    _check_fractions(filled)
    _check_recommenders(filled)
    return filled


def expand_grid(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a hyperparameter grid, in key order then value order."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]
