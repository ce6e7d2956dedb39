"""Configuration: JSON-schema validation with defaults, and one-line errors.

The workflow calls :func:`validate_config` before any job is scheduled, so a
bad config fails at once with a message naming the offending key.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "DEFAULT_STUDY",
    "ConfigError",
    "coerce_strings",
    "expand_grid",
    "experiment_names",
    "load_schema",
    "memory_bytes",
    "study_name",
    "synthetic_memory",
    "validate_config",
]


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


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
    """
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


def coerce_strings(
    instance: Any, schema: Mapping[str, Any], root: Mapping[str, Any] | None = None
) -> Any:
    """Return ``instance`` with strings YAML-parsed where the schema wants another type.

    Snakemake passes the values inside ``--config 'e1={rho: 0.4}'`` as strings
    (``{'rho': '0.4'}``); wherever the schema (followed through ``$ref``,
    ``oneOf``/``anyOf``, ``properties``, ``additionalProperties`` and ``items``)
    expects a number, an integer, a boolean, null, a list or a mapping and not
    a string, the string is parsed as YAML. Anything that does not parse is
    left for validation to report. ``instance`` is not modified.
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
        return (
            f"config error at '{where}': invalid name {error.instance!r} "
            "(a letter then letters, digits or '_'; 'gt' and 'TRUE' are reserved)"
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


def _check_dataset_names(where: str, names: Iterable[str], sources: Mapping[str, Any]) -> None:
    from debiaseval.data.catalog import dataset_names

    known = dataset_names(sources)
    for position, name in enumerate(names):
        if name not in known:
            raise ConfigError(
                f"config error at '{where}.{position}': unknown dataset {name!r}; "
                f"known: {', '.join(known)} (declare your own under sources.{name})"
            )


_OWN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _check_reserved_sources(sources: Any) -> None:
    """A built-in name under ``sources`` takes path/url only (before the schema's message)."""
    from debiaseval.data.catalog import RESERVED_NAMES, is_user_source

    if not isinstance(sources, Mapping):
        return
    for name, entry in sources.items():
        if name in RESERVED_NAMES and is_user_source(entry):
            raise ConfigError(
                f"config error at 'sources.{name}': {name!r} is a built-in dataset; "
                "give your own data another name"
            )


def _check_own_datasets(sources: Mapping[str, Any]) -> None:
    """Cross-field checks of the user datasets under ``sources`` (docs/own-data.md)."""
    from debiaseval.data.catalog import user_sources
    from debiaseval.data.user_logs import file_format

    for name, spec in user_sources(sources).items():
        where = f"sources.{name}"
        if not _OWN_NAME.fullmatch(name):
            raise ConfigError(
                f"config error at '{where}': invalid dataset name {name!r} (a letter or digit "
                "then letters, digits, '_', '.' or '-')"
            )
        for key in ("ratings", "mar"):
            if spec[key] is not None and file_format(spec[key]) is None:
                raise ConfigError(
                    f"config error at '{where}.{key}': {spec[key]!r} is not a .csv, .tsv, .txt "
                    "or .parquet file"
                )
        scale, threshold = spec["rating_scale"], spec["positive_threshold"]
        if scale is not None and not scale[0] < scale[1]:
            raise ConfigError(
                f"config error at '{where}.rating_scale': expected [lo, hi] with lo < hi, "
                f"got {scale}"
            )
        if scale is not None and threshold is not None and not scale[0] <= threshold < scale[1]:
            raise ConfigError(
                f"config error at '{where}.positive_threshold': {threshold} leaves no rating or "
                f"every rating of the scale {scale} positive"
            )
        if spec["duplicates"] == "last" and not spec["columns"]["timestamp"]:
            raise ConfigError(
                f"config error at '{where}.duplicates': 'last' keeps the latest rating by "
                "timestamp; map columns.timestamp"
            )


RANK_LIMIT = 32767
"""The largest cut-off k: :func:`debiaseval.evaluation.ranking.top_k` stores ranks as int16."""
_CELL_BYTES = 28
"""Peak bytes per (user, item) cell that :func:`debiaseval.data.synthetic.generate_synthetic`
draws at once (float32 latent scores, ratings, propensities, draws, masks and the raw frames),
measured with tracemalloc (26); the pair sampler of larger sizes draws blocks of at most
``DENSE_CELLS`` cells."""
_PAIR_BYTES = 24
"""Bytes per sampled pair kept (user, item, rating, propensity and the frames' copies)."""


def synthetic_memory(block: Mapping[str, Any]) -> int:
    """Estimated peak bytes of building the ``synthetic`` dataset of config block ``block``:
    the cells drawn at once, the float32 latent factors and the sampled MNAR and MAR pairs."""
    from debiaseval.data.synthetic import DENSE_CELLS

    n_users, n_items = block["n_users"], block["n_items"]
    cells = n_users * n_items
    pairs = block["density"] * cells + block["n_mar"] * n_users
    factors = 4 * block["rank"] * (n_users + n_items)
    return int(_CELL_BYTES * min(cells, DENSE_CELLS) + 2 * factors + _PAIR_BYTES * pairs)


def memory_bytes() -> int | None:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB"


def _check_job_limits(config: Mapping[str, Any]) -> None:
    """Refuse now what would fail in a job: all-zero marginals, cut-offs beyond the ranking's
    limit, an exposure that leaves nothing unexposed, a synthetic matrix larger than memory."""
    for block in ("synthetic", "semisynthetic"):
        if not any(share > 0 for share in config[block]["marginal"]):
            raise ConfigError(
                f"config error at '{block}.marginal': every share is 0; expected the shares of "
                "ratings 1..5, at least one of them positive"
            )
    for name in experiment_names():
        ks = config[name].get("ks")
        for position, k in enumerate(ks if isinstance(ks, list) else []):
            if isinstance(k, int) and k > RANK_LIMIT:
                raise ConfigError(
                    f"config error at '{name}.ks.{position}': {k} is beyond the ranking's limit; "
                    f"expected a cut-off in [1, {RANK_LIMIT}]"
                )
    synthetic = config["synthetic"]
    n_users, n_items = synthetic["n_users"], synthetic["n_items"]
    used = {d for name in config["experiments"] for d in config[name]["datasets"]}
    need, have = synthetic_memory(synthetic), memory_bytes()
    if "synthetic" in used and have is not None and need > have:
        raise ConfigError(
            f"config error at 'synthetic': {n_users:,} users × {n_items:,} items need about "
            f"{_gib(need)} of memory to generate, more than this machine's {_gib(have)}; "
            "expected a smaller synthetic.n_users, n_items or density"
        )
    if synthetic["n_mar"] > n_items:
        raise ConfigError(
            f"config error at 'synthetic.n_mar': {synthetic['n_mar']} MAR ratings per user, "
            f"more than the {n_items} items; expected at most synthetic.n_items"
        )
    exposure = config["e5"]["exposure"]
    if "e5" in config["experiments"] and "synthetic" in config["e5"]["datasets"]:
        rest = n_items - round(exposure["train_fraction"] * n_items)
        if exposure["n_exposed"] >= rest:
            raise ConfigError(
                f"config error at 'e5.exposure.n_exposed': {exposure['n_exposed']} exposed items "
                f"leave none unexposed on synthetic ({n_items} items, {n_items - rest} of them "
                f"a user's training set), so the true recall is undefined; expected at most "
                f"{rest - 1}"
            )


def _experiment(name: str) -> Any:
    return importlib.import_module(f"debiaseval.experiments.{name}")


def _check_parts(name: str, block: Mapping[str, Any], sources: Any) -> None:
    """Every dataset of experiment ``name`` has the parts the experiment needs."""
    from debiaseval.experiments import unsupported

    for position, dataset in enumerate(block["datasets"]):
        reason = unsupported(name, dataset, sources)
        if reason is not None:
            raise ConfigError(f"config error at '{name}.datasets.{position}': {reason}")


def _resolve_experiments(config: dict[str, Any]) -> None:
    """Fill each experiment's null ``datasets`` and ``seeds`` from the top level; check the
    experiments the config runs (``experiments``) with their module's ``check_config``.

    A null ``datasets`` becomes the top-level datasets that have the parts the
    experiment needs (its module's ``NEEDS``); an explicit list of an experiment
    the config runs must have them, else the error names the missing part.
    """
    from debiaseval.data.catalog import dataset_parts, missing_parts

    sources = config["sources"]
    for name in experiment_names():
        block, module = config[name], _experiment(name)
        if block["datasets"] is None:
            block["datasets"] = [
                d
                for d in config["datasets"]
                if not missing_parts(module.NEEDS, dataset_parts(d, sources))
            ]
        else:
            _check_dataset_names(f"{name}.datasets", block["datasets"], sources)
        if block["seeds"] is None:
            block["seeds"] = config["seeds"]
        if name in config["experiments"]:
            _check_parts(name, block, sources)
            check = getattr(module, "check_config", None)
            if check is not None:
                check(config)


DEFAULT_STUDY = "default"
"""The study of a run given no config file and no ``study`` key."""

_STUDY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def study_name(study: str | None, configfiles: Sequence[str | os.PathLike[str]] = ()) -> str:
    """The folder a run's files go under (``results/<study>/``, ``logs/<study>/``,
    ``benchmarks/<study>/``): the config key ``study``, else the stem of the last of
    ``configfiles`` (those given with ``--configfile``), else ``default``.

    Raises :class:`ConfigError` naming ``study`` when the name is not a safe folder name:
    letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit, at most 64
    characters. See docs/getting-started.md#studies.
    """
    origin = ""
    if study is None and configfiles:
        study = Path(configfiles[-1]).stem
        origin = f" (the stem of --configfile {Path(configfiles[-1]).name}; set study instead)"
    elif study is None:
        study = DEFAULT_STUDY
    if not _STUDY.fullmatch(study):
        raise ConfigError(
            f"config error at 'study': {study!r} is not a folder name{origin}: expected "
            "letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 "
            "characters"
        )
    return study


def validate_config(
    config: Mapping[str, Any], only: str | tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Return a validated deep copy of ``config`` with every default filled in.

    With ``only`` (one experiment, as the Python API's ``run_eN`` pass, or ``()``
    for none), the config is checked as one that runs just those experiments:
    the others' blocks get their defaults but not their cross-field checks.
    Strings that Snakemake's ``--config`` passed for non-string keys are parsed
    first (:func:`coerce_strings`). The ``plugin_paths`` folders become importable
    (:func:`debiaseval.recommenders.registry.add_plugin_paths`) and the experiments'
    checks import every plugin recommender the config names. Raises
    :class:`ConfigError` with one line naming the first offending key.
    """
    schema = load_schema()
    filled = coerce_strings(copy.deepcopy(dict(config)), schema)
    _check_reserved_sources(filled.get("sources"))
    _fill_defaults(filled, schema, schema)
    _check_finite(filled)
    import jsonschema  # lazy: 0.1 s of every job, which only needs ConfigError

    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(filled))
    if error is not None:
        raise ConfigError(_one_line(error))
    if filled["study"] is not None:
        study_name(filled["study"])
    _check_own_datasets(filled["sources"])
    _check_dataset_names("datasets", filled["datasets"], filled["sources"])
    from debiaseval.recommenders.registry import add_plugin_paths

    add_plugin_paths(filled["plugin_paths"])  # before the checks import any plugin
    if only is not None:
        filled["experiments"] = [only] if isinstance(only, str) else list(only)
    _resolve_experiments(filled)
    _check_job_limits(filled)
    return filled


def expand_grid(grid: Mapping[str, list[Any]]) -> list[dict[str, Any]]:
    """Cartesian product of a hyperparameter grid, in key order then value order."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]
