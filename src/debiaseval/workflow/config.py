"""Configuration: JSON-schema validation with defaults, and one-line errors.

The workflow calls :func:`validate_config` before any job is scheduled, so a
bad config fails at once with a message naming the offending key.
"""

from __future__ import annotations

import copy
import importlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from debiaseval.data.source_checks import (
    check_dataset_names,
    check_own_datasets,
    check_reserved_sources,
)
from debiaseval.io.errors import ConfigError
from debiaseval.io.schema import (
    _check_finite,
    _fill_defaults,
    _one_line,
    coerce_strings,
    experiment_names,
    load_schema,
)
from debiaseval.workflow.names import check_name_limits

__all__ = [
    "DEFAULT_STUDY",
    "memory_bytes",
    "study_as_written",
    "study_name",
    "synthetic_memory",
    "validate_config",
]


RANK_LIMIT = 32767
"""The largest cut-off k: :func:`debiaseval.recommenders.ranking.top_k` stores ranks as int16."""
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


MAX_SEEDS = 1000
"""The most seeds a study (or an experiment) runs: Snakemake plans every job before the first."""
PLAN_PER_SEED = (28, 0.09, 0.8 * 2**20)
"""Jobs, seconds and bytes one seed adds to Snakemake's planning of the default study
(``snakemake -n`` at 100 and 400 seeds: 2,811 and 11,211 jobs, 11.7 and 38.0 s, 293 and 530 MB
peak; docs/troubleshooting.md)."""
MAX_RESAMPLES = 100_000
"""The most bootstrap resamples: a 95% bound's Monte-Carlo error at 10,000 is already under 1%
of the interval's width (normal case), and each resample keeps 8 bytes per table column."""
RESAMPLE_KEYS = (
    "e1.bootstrap.resamples",
    "e1.scoreboard.resamples",
    "e5.bootstrap.resamples",
    "e6.resamples",
)


RENAMED: dict[str, str | tuple[str, str]] = {
    "e6.level": "e6.confidence",
    "e6.n_boot": "e6.resamples",
    "e2.alpha": ("e2.confidence", "= 1 - alpha"),
}
"""Config keys renamed (old: new, or old: (new, note) where the value changes meaning), one
name per concept across experiments: an old key is refused in one line naming the new one,
and the note."""


def _check_renamed(config: Mapping[str, Any]) -> None:
    """Refuse a key of :data:`RENAMED` by its old name, naming the new one (and its note)."""
    for old, renamed in RENAMED.items():
        new, note = (renamed, "") if isinstance(renamed, str) else renamed
        *path, key = old.split(".")
        block: Any = config
        for part in path:
            block = block.get(part) if isinstance(block, Mapping) else None
        if isinstance(block, Mapping) and key in block:
            raise ConfigError(
                f"config error at '{old}': renamed to '{new}'" + (f" ({note})" if note else "")
            )


def _check_sizes(config: Mapping[str, Any]) -> None:
    """Refuse seeds and bootstrap resamples so many that planning or a job would exhaust the
    machine, with the estimated cost in the message (docs/troubleshooting.md)."""
    seeds = [("seeds", config["seeds"])]
    seeds += [(f"{name}.seeds", config[name].get("seeds")) for name in config["experiments"]]
    for key, n in seeds:
        if isinstance(n, int) and n > MAX_SEEDS:
            jobs, seconds, size = (n * per_seed for per_seed in PLAN_PER_SEED)
            raise ConfigError(
                f"config error at '{key}': {n:,} seeds; expected at most {MAX_SEEDS:,}: "
                f"Snakemake plans every job before the first runs, and on the default study "
                f"{n:,} seeds are about {jobs:,.0f} jobs, {seconds / 60:,.0f} min and "
                f"{_bytes(size)} of planning alone"
            )
    for key in RESAMPLE_KEYS:
        block, *path = key.split(".")
        if block not in config["experiments"]:
            continue
        n = config[block]
        for part in path:
            n = n[part]
        if n > MAX_RESAMPLES:
            raise ConfigError(
                f"config error at '{key}': {n:,} resamples keep {_bytes(8 * n)} of means per "
                f"column of the table they bound (one per estimate, k and model); expected at "
                f"most {MAX_RESAMPLES:,} (at 10,000 a 95% bound is within 1% of its interval's "
                "width)"
            )


def _bytes(n: float) -> str:
    return _gib(n) if n >= 2**30 else f"{n / 2**20:,.0f} MiB"


def _check_job_limits(config: Mapping[str, Any]) -> None:
    """Refuse now what would fail in a job: all-zero marginals, cut-offs beyond the ranking's
    limit, an exposure that leaves nothing unexposed, a synthetic matrix larger than memory,
    too many seeds or resamples (:func:`_check_sizes`)."""
    _check_sizes(config)
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
            check_dataset_names(f"{name}.datasets", block["datasets"], sources)
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
    characters, and not ``null`` (YAML's null, as ``--config study=null`` passes it). See
    docs/getting-started.md#studies.
    """
    origin = ""
    if study is None and configfiles:
        study = Path(configfiles[-1]).stem
        origin = f" (the stem of --configfile {Path(configfiles[-1]).name}; set study instead)"
    elif study is None:
        study = DEFAULT_STUDY
    if study.lower() == "null":  # --config study=null passes the text, not YAML's null
        raise ConfigError(
            f"config error at 'study': {study!r} is YAML's null written as a name; expected a "
            "folder name, or no study at all (leave the key out, or --config study=) for the "
            "config file's stem"
        )
    if not _STUDY.fullmatch(study):
        raise ConfigError(
            f"config error at 'study': {study!r} is not a folder name{origin}: expected "
            "letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 "
            "characters"
        )
    return study


def _config_entries(argv: Sequence[str]) -> list[str]:
    """The ``KEY=VALUE`` entries of the ``--config`` (``-C``) options of a command line."""
    entries, taking = [], False
    for arg in argv:
        if arg in ("--config", "-C"):
            taking = True
        elif arg.startswith("--config="):
            entries.append(arg.removeprefix("--config="))
            taking = True
        elif arg.startswith("-"):
            taking = False
        elif taking:
            entries.append(arg)
    return entries


def _written_in(configfiles: Sequence[str | os.PathLike[str]]) -> str | None:
    """The top-level ``study`` of the last of ``configfiles`` that sets it, as written."""
    import yaml

    for path in reversed(configfiles):
        try:
            text = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
        except (OSError, ValueError, yaml.YAMLError):
            continue
        if isinstance(text, dict) and isinstance(text.get("study"), str):
            return text["study"]
    return None


def study_as_written(
    study: Any, argv: Sequence[str] = (), configfiles: Sequence[str | os.PathLike[str]] = ()
) -> Any:
    """The config key ``study`` as the user wrote it, where YAML or Snakemake read it as a
    number (``2024``, ``1.50``, ``1e3``, ``inf``, ``nan``): each is a folder name.

    ``argv``: the command line, whose ``--config study=...`` wins; ``configfiles``: the config
    files read, the last one first. A name from a config file is taken as written there (every
    job reads the same file). Snakemake hands ``--config`` values to the jobs it starts on a
    cluster as the number's ``repr`` (``1e3`` as ``1000.0``), so a ``--config`` name is taken
    only when it is written so; else :class:`ConfigError` says where to write it instead.
    Without either source, a whole number is taken as its digits and another number refused.
    Any other value is returned unchanged.
    """
    if isinstance(study, bool) or not isinstance(study, int | float):
        return study
    given = [e for e in _config_entries(argv) if e.partition("=")[0] == "study"]
    if given:
        text = given[-1].partition("=")[2].strip("'\"")  # as Snakemake strips it
        if text == repr(study):
            return text
        raise ConfigError(
            f"config error at 'study': --config study={text} is read as the number "
            f"{study!r}, and Snakemake hands it to its jobs as {study!r}; write the name in a "
            f'config file (study: "{text}"), or start it with a letter'
        )
    written = _written_in(configfiles)
    if written is not None:
        return written
    if isinstance(study, int):
        return str(study)
    raise ConfigError(
        f"config error at 'study': {study!r} is a number, not a folder name; give the name as "
        f'text (study: "{study!r}" in YAML, a str in Python)'
    )


def validate_config(
    config: Mapping[str, Any],
    only: str | tuple[str, ...] | None = None,
    *,
    configfiles: Sequence[str | os.PathLike[str]] = (),
) -> dict[str, Any]:
    """Return a validated deep copy of ``config`` with every default filled in.

    With ``only`` (one experiment, as the Python API's ``run_eN`` pass, or ``()``
    for none), the config is checked as one that runs just those experiments:
    the others' blocks get their defaults but not their cross-field checks.
    Strings that Snakemake's ``--config`` passed for non-string keys are parsed
    first (:func:`coerce_strings`). The ``plugin_paths`` folders, then the folders of
    ``configfiles`` (the config files the run read: a plugin next to its config), become
    importable (:func:`debiaseval.recommenders.registry.add_plugin_paths`) and the
    experiments' checks import every plugin recommender the config names. Raises
    :class:`ConfigError` with one line naming the first offending key.
    """
    schema = load_schema()
    filled = coerce_strings(copy.deepcopy(dict(config)), schema)
    filled["study"] = study_as_written(filled.get("study"))  # study: 2024 is "2024"
    _check_renamed(filled)
    check_reserved_sources(filled.get("sources"))
    _fill_defaults(filled, schema, schema)
    _check_finite(filled)
    import jsonschema  # lazy: 0.1 s of every job, which only needs ConfigError

    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(filled))
    if error is not None:
        raise ConfigError(_one_line(error))
    if filled["study"] is not None:
        study_name(filled["study"])
    check_own_datasets(filled["sources"])
    check_dataset_names("datasets", filled["datasets"], filled["sources"])
    from debiaseval.recommenders.registry import add_plugin_paths

    beside = [Path(os.path.abspath(f)).parent for f in reversed(configfiles)]
    add_plugin_paths([*filled["plugin_paths"], *beside])  # before the checks import any plugin
    if only is not None:
        filled["experiments"] = [only] if isinstance(only, str) else list(only)
    _resolve_experiments(filled)
    _check_job_limits(filled)
    check_name_limits(filled)
    return filled
