"""Rule params whose mappings Snakemake's params trigger sees as one short digest
(docs/report.md#rule-params).

Snakemake 9 records, for each job, the ``repr()`` of every param value of a builtin type
(``str``, numbers, ``list``, ``dict``, ...) in ``.snakemake/metadata``, reruns the job when
that set of texts changes, and prints every changed text in one line ("Params have changed
since last execution: ..."); a value of any other type it leaves out of the comparison
(``snakemake.persistence.Persistence._params``). An experiment's block or a provenance
record, given as a plain ``dict``, made that line about 10,000 characters long.

:func:`job_params` therefore gives every mapping among a rule's params as a :class:`Slice`
(the job's values, which the trigger leaves out) and adds one param, ``digest``: a string,
``sha256:<12 hex>`` of the canonical JSON text of every mapping of the job (:func:`digest`),
which the trigger compares by value. It changes exactly when a value of a mapping, or the
order of its keys, does. The job's script receives each mapping as a plain ``dict``
(pickling gives one); the HTML report, which writes each param as text (``str()``) into a
``<script>`` block, shows a mapping's JSON text with ``</`` and ``<!--`` made harmless
(:func:`debiaseval.io.markup.script_safe`). Which keys changed is said before the first job,
in a few lines (:func:`debiaseval.workflow.studies.config_notice`).

It imports only :mod:`debiaseval.io.markup`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from debiaseval.io.markup import script_safe

__all__ = ["DIGEST_HEX", "DIGEST_PARAM", "Slice", "canonical_json", "digest", "job_params"]

DIGEST_HEX = 12
"""Hex digits of a digest (48 bits: no two sets of blocks a rule sees in practice share one)."""

DIGEST_PARAM = "digest"
"""The name of the param that stands for a job's mappings in the params trigger."""


def canonical_json(value: Any) -> str:
    """``value`` as compact JSON, keys in their own order (an order the outputs may follow);
    a value JSON cannot write is a TypeError."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def digest(value: Any) -> str:
    """``sha256:`` and the first :data:`DIGEST_HEX` hex digits of the SHA-256 of
    :func:`canonical_json` of ``value``."""
    text = canonical_json(value).encode("utf-8")
    return "sha256:" + hashlib.sha256(text).hexdigest()[:DIGEST_HEX]


class Slice(Mapping[str, Any]):
    """A job's params mapping, read-only: not a builtin type, so Snakemake's params trigger
    leaves it to the rule's ``digest`` param; pickled, a plain ``dict`` (what the job's script
    receives); as text, its JSON with ``</`` and ``<!--`` made harmless (what the HTML report
    shows)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return self._values == (other._values if isinstance(other, Slice) else other)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return script_safe(canonical_json(self._values))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:
        return (dict, (dict(self._values),))


def _sliced(value: Any) -> Any:
    return Slice(value) if isinstance(value, Mapping) else value


def job_params(**params: Any) -> dict[str, Any]:
    """A rule's ``params:`` (``params: **job_params(...)``): each mapping as a :class:`Slice`,
    each params function wrapped so that the mapping it returns is one (its signature kept:
    Snakemake passes what it names), and :data:`DIGEST_PARAM`, a params function giving
    :func:`digest` of every mapping of the job by name. Strings, numbers and lists (short:
    names, seeds, cut-offs) are left as they are, so Snakemake still applies wildcards to them,
    compares them and shows them as written. A params function that names ``input`` or
    ``output`` derives from files, as Snakemake, which compares no such value, sees it: the
    digest leaves its mapping out too."""
    if DIGEST_PARAM in params:
        raise ValueError(f"a rule's param may not be named {DIGEST_PARAM!r}")
    functions = {}  # the params functions of the wildcards alone, whose mappings it digests
    for name, function in params.items():
        if not callable(function):
            continue
        named = list(inspect.signature(function).parameters)[1:]
        if not named:
            functions[name] = function
        elif not {"input", "output"} & set(named):
            raise ValueError(f"params function {name!r} may name input or output, not {named}")
    fixed = {name: value for name, value in params.items() if isinstance(value, Mapping)}

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def sliced(*args: Any, **kwargs: Any) -> Any:
            return _sliced(function(*args, **kwargs))

        return sliced

    def mappings_digest(wildcards: Any) -> str:
        returned = {name: function(wildcards) for name, function in functions.items()}
        found = {**fixed, **{k: v for k, v in returned.items() if isinstance(v, Mapping)}}
        return digest({name: dict(found[name]) for name in params if name in found})

    wrapped = {name: wrap(v) if callable(v) else _sliced(v) for name, v in params.items()}
    return {**wrapped, DIGEST_PARAM: mappings_digest}
