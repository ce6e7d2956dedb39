"""Rule params that Snakemake tracks by a short digest (docs/report.md#rule-params).

Snakemake reruns a job whose params changed: it records ``repr()`` of each param value in
``.snakemake/metadata`` and, after a config change, prints every changed value in one line
("Params have changed since last execution: ..."). An experiment's block or a provenance
record, given as a param, made that line about 10,000 characters long.

:func:`job_params` gives every mapping among a rule's params as a :class:`Digested`: to the
params trigger it is ``sha256:<12 hex>``, the SHA-256 of the mapping's own ``repr()``, so the
digest changes exactly when the text Snakemake compared before does, and a job reruns exactly
when it did before. The job's script receives the plain mapping (pickling gives a ``dict``);
the HTML report, which writes each param as text (``str()``) into a ``<script>`` block, shows
the whole mapping with ``</`` and ``<!--`` made harmless
(:func:`debiaseval.io.markup.script_safe`). Which keys changed is said before the first
job, in a few lines (:func:`debiaseval.workflow.studies.config_notice`).

It imports only :mod:`debiaseval.io.markup`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from debiaseval.io.markup import script_safe

__all__ = ["DIGEST_HEX", "Digested", "digest", "job_params"]

DIGEST_HEX = 12
"""Hex digits of a :class:`Digested` mapping's digest (48 bits: no two blocks a rule sees in
practice share one)."""


def digest(text: str) -> str:
    """``sha256:`` and the first :data:`DIGEST_HEX` hex digits of the SHA-256 of ``text``."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_HEX]


class Digested(dict):  # type: ignore[type-arg]
    """A job's params mapping that Snakemake's params trigger sees as a short digest.

    - ``repr()``: :func:`digest` of the plain dict's ``repr()`` (what Snakemake records and
      compares, and prints when it changed);
    - ``str()``: the plain dict's ``repr()`` through :func:`script_safe` (what the HTML
      report shows in its ``<script>`` block);
    - pickling gives a plain ``dict`` (what a job's script receives); equality is the dict's.
    """

    def plain_repr(self) -> str:
        """The ``repr()`` of the mapping as a plain dict."""
        return dict.__repr__(self)

    def __repr__(self) -> str:
        return digest(self.plain_repr())

    def __str__(self) -> str:
        return script_safe(self.plain_repr())

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:
        return (dict, (dict(self),))


def _digested(value: Any) -> Any:
    return Digested(value) if isinstance(value, Mapping) else value


def job_params(**params: Any) -> dict[str, Any]:
    """A rule's ``params:`` (``params: **job_params(...)``): each mapping as a
    :class:`Digested`, and each params function wrapped so that the mapping it returns is one
    (its signature kept: Snakemake passes what it names). Strings, numbers and lists (short:
    names, seeds, cut-offs) are left as they are, so Snakemake still applies wildcards to them
    and shows them as written."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def digested(*args: Any, **kwargs: Any) -> Any:
            return _digested(function(*args, **kwargs))

        return digested

    return {name: wrap(v) if callable(v) else _digested(v) for name, v in params.items()}
