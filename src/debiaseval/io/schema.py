"""The config schema and the checks it alone makes: defaults filled in, strings coerced,
one-line errors (docs/configuration.md).

It imports nothing of the package but the ground floor's errors, so that every layer may use
it: ``data`` reads a config through it (:func:`schema_checked`) without importing the
workflow's glue (:mod:`debiaseval.workflow.config`, which adds the checks that need the
experiments and the recommenders), and the recommenders expand their grids with
:func:`expand_grid`.
"""

from __future__ import annotations

import copy
import functools
import itertools
import math
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from debiaseval.io.errors import ConfigError

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "coerce_strings",
    "expand_grid",
    "experiment_names",
    "load_schema",
    "schema_checked",
]


def _schema_text(name: str) -> str:
    return resources.files("debiaseval").joinpath(f"schemas/{name}").read_text()


def experiment_names() -> list[str]:
    """The experiments that have a config block: one ``schemas/<name>.schema.yaml`` each."""
    folder = resources.files("debiaseval").joinpath("schemas")
    suffix = ".schema.yaml"
    names = [f.name.removesuffix(suffix) for f in folder.iterdir() if f.name.endswith(suffix)]
    return sorted(n for n in names if n != "config")


def load_schema() -> dict[str, Any]:
    """The config schema shipped with the package (draft 2020-12).

    The main schema ``schemas/config.schema.yaml`` plus one block per experiment,
    ``schemas/<name>.schema.yaml``, inserted as ``properties.<name>``; the
    top-level ``experiments`` list may name those experiments and defaults to all.
    Parsed once per process (pure-Python YAML takes a tenth of a second); each call returns
    its own copy.
    """
    return copy.deepcopy(_parsed_schema())


@functools.cache
def _parsed_schema() -> dict[str, Any]:
    schema = yaml.safe_load(_schema_text("config.schema.yaml"))
    names = experiment_names()
    for name in names:
        schema["properties"][name] = yaml.safe_load(_schema_text(f"{name}.schema.yaml"))
    listing = schema["properties"]["experiments"]
    listing["items"] = {"enum": names}
    listing["default"] = names
    return schema


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


def _alternatives(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The schema and its ``oneOf``/``anyOf`` branches, each with its ``$ref`` resolved."""
    schema = _resolve(schema, root)
    branches = [*schema.get("oneOf", []), *schema.get("anyOf", [])]
    result = [schema]
    for branch in branches:
        result += _alternatives(branch, root)
    return result


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type", [])
    return {kind} if isinstance(kind, str) else set(kind)


def _wants_string(value: str, alternatives: list[Mapping[str, Any]]) -> bool:
    """Whether a string is a valid kind of value here (type string, or a matching const/enum)."""
    for alt in alternatives:
        if "string" in _types(alt) or alt.get("const") == value or value in alt.get("enum", []):
            return True
    return False


_YAML12_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
"""A number in YAML 1.2's core schema: ``1e-300`` is one, though YAML 1.1 reads it as a string."""


def coerce_strings(
    instance: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None
) -> Any:
    """Return ``instance`` with strings YAML-parsed where the schema wants another type.

    Snakemake passes the values inside ``--config 'e1={rho: 0.4}'`` as strings
    (``{'rho': '0.4'}``); wherever the schema (followed through ``$ref``,
    ``oneOf``/``anyOf``, ``properties``, ``additionalProperties`` and ``items``)
    expects a number, an integer, a boolean, null, a list or a mapping and not
    a string, the string is parsed as YAML. A number YAML 1.2 reads and YAML 1.1
    (PyYAML, Snakemake's reader) does not, such as ``1e-300`` (no dot), counts as
    one. Anything that does not parse is left for validation to report.
    ``instance`` is not modified.
    """
    root = schema if root is None else root
    alternatives = _alternatives(schema, root)
    if isinstance(instance, str) and not _wants_string(instance, alternatives):
        wanted = set().union(*(_types(alt) for alt in alternatives))
        if wanted & {"number", "integer", "boolean", "null", "array", "object"}:
            try:
                parsed = yaml.safe_load(instance)
            except yaml.YAMLError:
                return instance
            if not isinstance(parsed, str):
                instance = parsed
            elif "number" in wanted and _YAML12_FLOAT.fullmatch(instance.strip()):
                instance = float(instance)  # 1e-300: YAML 1.1 (PyYAML) wants a dot, 1.2 does not
    if isinstance(instance, dict):
        result = {}
        for key, value in instance.items():
            sub = next(
                (
                    alt["properties"][key]
                    if key in alt.get("properties", {})
                    else alt["additionalProperties"]
                    for alt in alternatives
                    if key in alt.get("properties", {})
                    or isinstance(alt.get("additionalProperties"), dict)
                ),
                None,
            )
            result[key] = value if sub is None else coerce_strings(value, sub, root)
        return result
    if isinstance(instance, list):
        items = next(
            (alt["items"] for alt in alternatives if isinstance(alt.get("items"), dict)), None
        )
        return instance if items is None else [coerce_strings(v, items, root) for v in instance]
    return instance


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
        schema = error.schema if isinstance(error.schema, dict) else {}
        names = schema.get("not", {}).get("enum", [])
        reserved = f"; {', '.join(map(repr, names))} are reserved" if names else ""
        return (
            f"config error at '{where}': invalid name {error.instance!r} "
            f"(a letter then letters, digits or '_'{reserved})"
        )
    message = error.message.replace("\n", " ")
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    hint = f" (expected: {description.strip()})" if description else ""
    return f"config error at '{where}': {message}{hint}"


def _check_finite(instance: Any, path: tuple[Any, ...] = ()) -> None:
    """Refuse NaN and ±inf anywhere in the config: JSON Schema's bounds let NaN through
    (every comparison with it is false), and no key of ours means anything by them."""
    if isinstance(instance, float) and not math.isfinite(instance):
        raise ConfigError(
            f"config error at '{_key_path(path)}': got {instance}; expected a finite number"
        )
    if isinstance(instance, Mapping):
        for key, value in instance.items():
            _check_finite(value, (*path, key))
    elif isinstance(instance, list | tuple):
        for position, value in enumerate(instance):
            _check_finite(value, (*path, position))


def schema_checked(config: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``config`` with strings coerced (:func:`coerce_strings`), every default
    filled in, and checked against the schema alone (no experiment's or dataset's check).

    Raises :class:`ConfigError` with one line naming the first offending key.
    """
    schema = load_schema()
    filled = coerce_strings(copy.deepcopy(dict(config)), schema)
    _fill_defaults(filled, schema, schema)
    _check_finite(filled)
    import jsonschema  # lazy: 0.1 s of every job, which only needs ConfigError

    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(filled)
    )
    if error is not None:
        raise ConfigError(_one_line(error))
    return filled


def expand_grid(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a hyperparameter grid (a config's ``grid:`` mapping of each
    hyperparameter to its values), in key order then value order."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]
