"""The single registry of recommenders: built-in, installed, registered at run time, imported.

Wherever a config or the API names a recommender's ``algorithm``,
:func:`resolve_recommender` turns the name into a class, trying in order:

1. a built-in short name (:data:`RECOMMENDERS`: random, pospop, avgrating,
   userknn, itemknn, mf, mf_ips);
2. a short name registered at run time by :func:`register_recommender`
   (``debiaseval.api.register_recommender``);
3. a short name that an installed package registers in the entry-point group
   :data:`ENTRY_POINT_GROUP` (value ``"package.module:Class"``);
4. an import path ``"package.module:Class"``, the module imported from the
   installed packages or from the folders of the config's ``plugin_paths``
   (:func:`add_plugin_paths`).

The class must follow the contract of :class:`~debiaseval.recommenders.base.Recommender`,
checked by :func:`check_recommender_class` (one-line :class:`ContractError`);
docs/own-recommender.md writes the contract down.
:func:`plugin_source_hash` fingerprints a plugin's code and that of the modules of one's own it
imports, so that the workflow reruns the jobs that use a plugin when that code changes.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import scipy.sparse as sp

from debiaseval.io.errors import ContractError
from debiaseval.io.processes import run_bounded
from debiaseval.io.source_hash import module_origin, sources_hash
from debiaseval.recommenders.base import Recommender
from debiaseval.recommenders.baselines import AvgRating, PosPop, Random
from debiaseval.recommenders.knn import ItemKNN, KNNRecommender, UserKNN
from debiaseval.recommenders.mf import LightFMRanker
from debiaseval.recommenders.mf_ips import IPSMF

__all__ = [
    "ENTRY_POINT_GROUP",
    "EXTERNAL",
    "PLUGIN_PATHS_ENV",
    "PROBED_ENV",
    "PROBE_DEADLINE",
    "RECOMMENDERS",
    "ContractError",
    "add_plugin_paths",
    "check_recommender_class",
    "fit_grid",
    "known_names",
    "make_recommender",
    "plugin_source_hash",
    "probe_import",
    "register_recommender",
    "resolve_recommender",
]

RECOMMENDERS: dict[str, type[Recommender]] = {
    cls.name: cls for cls in (Random, PosPop, AvgRating, UserKNN, ItemKNN, LightFMRanker, IPSMF)
}
"""The built-in recommenders by short name."""

ENTRY_POINT_GROUP = "debiaseval.recommenders"
"""Entry-point group in which installed packages register recommenders by short name."""

EXTERNAL = "external"
"""The reserved algorithm of precomputed recommendation lists (no class)."""

PLUGIN_PATHS_ENV = "DEBIASEVAL_PLUGIN_PATHS"
"""Environment variable carrying the plugin folders (``os.pathsep``-separated, absolute) to the
workflow's job processes, which import plugins the same way the config check does."""

_REGISTERED: dict[str, type[Recommender]] = {}


def check_recommender_class(cls: object, what: str | None = None) -> type[Recommender]:
    """``cls`` if it follows the recommender contract, else a one-line :class:`ContractError`.

    The contract: a concrete subclass of :class:`Recommender` with a non-empty string
    ``name``, implementing ``_fit`` and ``_score``, whose ``__init__`` takes only
    keyword-only hyperparameters, each with a default, and stores them unchanged under
    their own names (so ``cls()`` works and ``get_params`` returns them). ``what``
    names the class in the message (default its qualified name).
    """
    label = what or (getattr(cls, "__qualname__", None) or repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, Recommender)):
        raise ContractError(f"{label} is not a subclass of debiaseval.recommenders.Recommender")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ContractError(f"{label} has no class attribute `name` (a non-empty string)")
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise ContractError(f"{label} does not implement {missing}")
    init = cls.__init__
    parameters = (
        [] if init is object.__init__ else list(inspect.signature(init).parameters.values())[1:]
    )
    for p in parameters:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise ContractError(
                f"{label}.__init__ parameter {p.name!r} is not keyword-only "
                "(write `def __init__(self, *, ...)`)"
            )
        if p.default is inspect.Parameter.empty:
            raise ContractError(f"{label}.__init__ parameter {p.name!r} has no default")
    try:
        model = cls()
    except Exception as exc:  # any failure of the user's __init__ is reported
        raise ContractError(f"{label}() fails: {type(exc).__name__}: {exc}") from None
    defaults = {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    for key, default in defaults.items():
        if key not in vars(model) or not _same(vars(model)[key], default):
            raise ContractError(
                f"{label}.__init__ does not store parameter {key!r} unchanged as self.{key}"
            )
    return cls


def _same(value: object, default: object) -> bool:
    if value is default:
        return True
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):  # e.g. arrays: == is elementwise
        return False


def add_plugin_paths(paths: Iterable[str | os.PathLike[str]], base: str | None = None) -> list[str]:
    """Let plugin modules be imported from ``paths`` (relative to ``base``, default the cwd).

    The folders, made absolute, are appended to ``sys.path`` (after the installed
    packages, so a plugin file never shadows an installed module) and recorded in
    :data:`PLUGIN_PATHS_ENV`, which the workflow's job processes inherit. Returns them.
    """
    root = Path(base) if base is not None else Path.cwd()
    folders = [str((root / Path(p)).resolve()) for p in paths]
    known = [p for p in os.environ.get(PLUGIN_PATHS_ENV, "").split(os.pathsep) if p]
    os.environ[PLUGIN_PATHS_ENV] = os.pathsep.join(dict.fromkeys([*known, *folders]))
    _extend_sys_path()
    return folders


def _extend_sys_path() -> None:
    for folder in os.environ.get(PLUGIN_PATHS_ENV, "").split(os.pathsep):
        if folder and folder not in sys.path:
            sys.path.append(folder)


def register_recommender(cls: type[Recommender]) -> type[Recommender]:
    """Make ``cls`` resolvable by its ``name`` in this process; returns ``cls`` (a decorator).

    Registering the same name again replaces the class (a notebook cell run twice);
    a built-in name cannot be taken. Raises :class:`ContractError` for a class that
    breaks the contract.
    """
    check_recommender_class(cls)
    if cls.name in RECOMMENDERS or cls.name == EXTERNAL:
        raise ValueError(f"{cls.name!r} is a built-in recommender name; choose another `name`")
    _REGISTERED[cls.name] = cls
    return cls


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _import_failure(module: str, error: BaseException) -> str:
    """What went wrong importing ``module``, in one line: the error's text, or which exit or
    interrupt the module's own code raised (uncaught, ``sys.exit(3)`` would end the whole
    run silently with status 3)."""
    if isinstance(error, SystemExit | KeyboardInterrupt):
        code = f"({error.code!r})" if isinstance(error, SystemExit) else ""
        return (
            f"importing module {module!r} raised {type(error).__name__}{code}; a plugin module "
            "must not exit or stop the process when imported"
        )
    return " ".join(str(error).split())


def _not_found(module: str, error: BaseException) -> str:
    """Where a plugin module that is not found was looked for, and how to point there; empty
    for any other failure (a module the plugin itself imports is missing, say)."""
    missing = getattr(error, "name", None)
    if not isinstance(error, ModuleNotFoundError) or not missing:
        return ""
    if module != missing and not module.startswith(f"{missing}."):
        return ""
    folders = [p for p in os.environ.get(PLUGIN_PATHS_ENV, "").split(os.pathsep) if p]
    where = ", ".join(folders) or "none"
    return (
        f" (looked in the installed packages and in the plugin folders: {where}); put "
        f"{missing.partition('.')[0]}.py in one of them, or its folder in the config key "
        "plugin_paths"
    )


PROBED_ENV = "DEBIASEVAL_PROBED_PLUGINS"
"""Environment variable: the plugin modules a child process imported to the end (see
:func:`probe_import`), each as ``module=digest`` of the code it was probed with; the job
processes inherit it and do not probe them again while that code is unchanged."""

PROBE_DEADLINE = 120.0
"""Seconds the import probe of a plugin module may take before it is killed, with every process
the import started."""

_PROBE = (
    "import importlib, os, sys\n"
    "sys.path += [p for p in os.environ.get({env!r}, '').split(os.pathsep) if p]\n"
    "try:\n"
    "    importlib.import_module(sys.argv[1])\n"
    "except BaseException:\n"
    "    pass\n"
    "sys.stdout.flush()\n"
    "left = False\n"
    "try:\n"  # a child still running (waitpid gives 0); an exited one is reaped
    "    while not left:\n"
    "        left = os.waitpid(-1, os.WNOHANG)[0] == 0\n"
    "except ChildProcessError:\n"
    "    pass\n"
    "os.write(1, {left!r} if left else {done!r})\n"
    "os._exit(0)\n"
)
_PROBE_DONE = "\n-- debiaseval: import done --"
_PROBE_LEFT = "\n-- debiaseval: import done, a child process left running --"


def _probe_digest(module: str) -> str:
    """What an entry of :data:`PROBED_ENV` vouches for: the code of ``module`` and of the modules
    of one's own it imports (:func:`sources_hash`), and the file it is loaded from with its
    size and time (for a module without source), under this interpreter."""
    origin = module_origin(module) or ""
    try:
        stat = os.stat(origin)
        mark = f"{stat.st_size}:{stat.st_mtime_ns}"
    except (OSError, ValueError):
        mark = ""
    text = "\0".join([sys.executable, origin, mark, sources_hash(module)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _probed() -> dict[str, str]:
    """The modules :data:`PROBED_ENV` vouches for, with the digest each was probed with (an
    entry without a digest, as an older run wrote it, vouches for nothing)."""
    entries = os.environ.get(PROBED_ENV, "").split(os.pathsep)
    return dict(entry.split("=", 1) for entry in entries if "=" in entry)


def probe_import(module: str) -> None:
    """Import ``module`` first in a child Python, so that one ending its process when imported
    (``os._exit``, a signal, an interpreter abort: what no ``except`` catches), leaving a
    process it started running (``os.fork``, ``subprocess.Popen``) or never finishing (serving,
    looping) stops the config check with one line naming it instead of ending, forking or
    hanging the run. The child has :data:`PROBE_DEADLINE` seconds, and is then killed with
    every process it started. An import that merely raises is left for the caller's own import
    to report.

    Once per module, code and run: the modules probed are kept in :data:`PROBED_ENV` with the
    digest of their code (:func:`_probe_digest`), which job processes inherit; a digest that
    no longer matches the code, or an entry without one, is probed again."""
    if module in sys.modules:
        return
    probed = _probed()
    digest = _probe_digest(module)
    if probed.get(module) == digest:
        return
    code = _PROBE.format(env=PLUGIN_PATHS_ENV, done=_PROBE_DONE.encode(), left=_PROBE_LEFT.encode())
    child = run_bounded([sys.executable, "-c", code, module], deadline=PROBE_DEADLINE)
    if child.timed_out:
        raise ValueError(
            f"importing module {module!r} did not finish within {PROBE_DEADLINE:g} s; a plugin "
            "module must not wait, serve or start processes when imported (guard that code "
            'with `if __name__ == "__main__":`)'
        )
    if child.stdout.endswith(_PROBE_LEFT.encode()):
        raise ValueError(
            f"importing module {module!r} started a process that was still running when the "
            "import finished; a plugin module must not start processes when imported (guard "
            'that code with `if __name__ == "__main__":`)'
        )
    if not child.stdout.endswith(_PROBE_DONE.encode()):
        assert child.returncode is not None
        raise ValueError(
            f"importing module {module!r} ended the process ({_ended(child.returncode)}) "
            "before the import finished; a plugin module must not exit or stop the process "
            "when imported"
        )
    probed[module] = digest
    os.environ[PROBED_ENV] = os.pathsep.join(f"{m}={d}" for m, d in probed.items())


def _ended(returncode: int) -> str:
    """How a child process ended, from its return code (negative: the signal)."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"signal {signal.Signals(-returncode).name}"
    except ValueError:
        return f"signal {-returncode}"


def _import_path(path: str) -> object:
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"cannot import {path!r}: expected 'package.module:Class'")
    _extend_sys_path()
    try:
        probe_import(module_name)
    except ValueError as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from None
    try:
        target: object = importlib.import_module(module_name)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # any failure, in one line
        reason = _import_failure(module_name, exc) + _not_found(module_name, exc)
        raise ValueError(f"cannot import {path!r}: {reason}") from None
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(
                f"cannot import {path!r}: module {module_name!r} has no attribute {attribute!r}"
            ) from None
    return target


def known_names() -> list[str]:
    """Every short name that resolves: built-in, registered at run time, entry points."""
    return list(dict.fromkeys([*RECOMMENDERS, *_REGISTERED, *_entry_points()]))


def resolve_recommender(algorithm: str) -> type[Recommender]:
    """The recommender class named ``algorithm`` (see the module for the four forms).

    Raises ``ValueError`` with one line for an unknown name, a module that cannot be
    imported or a missing attribute, and :class:`ContractError` (a ``TypeError``)
    for a class that breaks the contract; both name ``algorithm``.
    """
    if not isinstance(algorithm, str) or not algorithm:
        raise ValueError(f"algorithm must be a non-empty string, got {algorithm!r}")
    if algorithm in RECOMMENDERS:
        return RECOMMENDERS[algorithm]
    if algorithm in _REGISTERED:
        return _REGISTERED[algorithm]
    if algorithm == EXTERNAL:
        raise ValueError(f"{EXTERNAL!r} names precomputed lists, not a recommender class")
    if ":" in algorithm:
        target = _import_path(algorithm)
        return check_recommender_class(target, repr(algorithm))
    entry = _entry_points().get(algorithm)
    if entry is None:
        raise ValueError(
            f"unknown recommender {algorithm!r}; known: {', '.join(known_names())}, "
            "or an import path 'package.module:Class'"
        )
    what = f"{algorithm!r} (entry point {entry.value!r})"
    try:
        probe_import(entry.value.partition(":")[0])
    except ValueError as exc:
        raise ValueError(f"cannot import {what}: {exc}") from None
    try:
        target = entry.load()
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # any failure, in one line
        module_name = entry.value.partition(":")[0]
        raise ValueError(f"cannot import {what}: {_import_failure(module_name, exc)}") from None
    return check_recommender_class(target, what)


def plugin_source_hash(algorithm: str) -> str:
    """SHA-256 (16 hex digits) of the code of ``algorithm``'s class: its module and the modules
    of one's own that it imports (:func:`~debiaseval.io.source_hash.sources_hash`);
    "" for code of this package (covered by each job's code stamp,
    :mod:`debiaseval.workflow.code_stamps`).

    The workflow carries the hash in the ``params`` of the jobs that use the recommender, so
    that a code edit of the plugin or of its own helpers reruns exactly those jobs, and an
    edit of comments or docstrings none.
    """
    if algorithm == EXTERNAL:
        return ""
    return sources_hash(resolve_recommender(algorithm).__module__)


def make_recommender(name: str, **params: Any) -> Recommender:
    """An unfitted recommender from its ``name`` (any form :func:`resolve_recommender` takes)
    and hyperparameters.

    Raises a one-line ``ValueError`` naming an unknown recommender or unknown
    parameters, together with the valid choices, or an invalid value (checked
    eagerly by :meth:`Recommender.validate_params`, so a bad config fails early).
    """
    model = resolve_recommender(name)().set_params(**params)
    model.validate_params()
    return model


def fit_grid(
    name: str,
    params: Mapping[str, Any],
    points: Sequence[Mapping[str, Any]],
    train: sp.spmatrix | sp.sparray,
    *,
    seed: int,
) -> Iterator[tuple[dict[str, Any], Recommender]]:
    """Yield ``(point, fitted model)`` for every grid point, in the given order.

    The model equals ``make_recommender(name, **params, **point).fit(train,
    seed=seed)``. For a :class:`KNNRecommender` the points that differ only in
    ``k`` share one fit at their largest k, and each model is its
    :meth:`KNNRecommender.with_k` twin (bit-identical to a refit), so a grid
    over k costs one similarity computation. Other recommenders are fitted
    lazily, one point at a time.
    """
    points = [dict(p) for p in points]
    cls = resolve_recommender(name)
    if not issubclass(cls, KNNRecommender):
        for point in points:
            yield point, make_recommender(name, **{**params, **point}).fit(train, seed=seed)
        return
    models = [make_recommender(name, **{**params, **point}) for point in points]

    def others(model: Recommender) -> str:  # every hyperparameter but k
        return json.dumps({**model.get_params(), "k": None}, sort_keys=True, default=repr)

    largest: dict[str, int] = {}
    for model in models:
        largest[others(model)] = max(largest.get(others(model), 0), int(model.get_params()["k"]))
    fitted: dict[str, Recommender] = {}
    for point, model in zip(points, models, strict=True):
        key = others(model)
        if key not in fitted:
            twin = make_recommender(name, **{**model.get_params(), "k": largest[key]})
            fitted[key] = twin.fit(train, seed=seed)
        base = fitted[key]
        assert isinstance(base, KNNRecommender)
        yield point, base.with_k(model.get_params()["k"])
