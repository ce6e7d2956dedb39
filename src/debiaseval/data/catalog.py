"""Which datasets a config may name, what parts each has, and its positive-rating convention.

The built-in datasets declare their parts here; a user's own dataset (``sources.<name>`` with
a ``ratings`` file, :mod:`debiaseval.data.user_logs`) has the parts its config gives it. An
experiment declares the parts it needs (``NEEDS`` of ``debiaseval.experiments.<eN>``: one or
more alternatives) and runs on exactly the datasets that have them; see docs/own-data.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from debiaseval.data.registry import SOURCES

__all__ = [
    "BUILTIN_PARTS",
    "CONTINUOUS_RATINGS",
    "DATASET_NAMES",
    "DEFAULT_POSITIVE_THRESHOLD",
    "GENERATED",
    "JESTER_THRESHOLD",
    "PART_TEXT",
    "RESERVED_NAMES",
    "dataset_names",
    "dataset_parts",
    "is_user_source",
    "missing_parts",
    "missing_text",
    "needs_text",
    "positive_threshold_of",
    "user_parts",
    "user_sources",
]

GENERATED: tuple[str, ...] = ("synthetic", "ml-100k-semi", "jester5k-semi")
"""Datasets the workflow generates itself (``ml-100k-semi`` from ML-100K's files,
``jester5k-semi`` from Jester5k's)."""

DATASET_NAMES: tuple[str, ...] = (*GENERATED, *SOURCES)
"""The built-in dataset names a config may use; its own datasets come on top."""

PART_TEXT: dict[str, str] = {
    "mnar": "an MNAR part",
    "mar": "a MAR part",
    "timestamps": "timestamps",
    "propensities": "propensities",
    "features": "user and item features",
    "truth": "a full rating matrix with its observation model",
    "full": "fully exposed data",
    "campaigns": "simulated campaigns",
}
"""What each part is, as error messages name it."""

BUILTIN_PARTS: dict[str, frozenset[str]] = {
    "synthetic": frozenset(
        {"mnar", "mar", "propensities", "truth", "full", "campaigns"}
    ),  # E6 simulates campaigns on its truth
    # Its observed pairs are a draw from the completed matrix: E3 and E4 use them through the
    # truth, and no experiment takes them as a log.
    "ml-100k-semi": frozenset({"truth"}),
    # Jester's real fully observed block with a simulated exposure: an MNAR log and a MAR sample
    # drawn per seed, with their true propensities; E1 adds the exact TRUE row from the block.
    "jester5k-semi": frozenset({"mnar", "mar", "propensities"}),
    "coat": frozenset({"mnar", "mar", "propensities", "features"}),
    "yahoo-r3": frozenset({"mnar", "mar"}),
    "ml-100k": frozenset({"mnar", "timestamps"}),
    "ml-1m": frozenset({"mnar", "timestamps"}),
    # Reviews without a unixtime leave it without timestamps, so E6 does not count on them.
    "librarything": frozenset({"mnar"}),
    # E5's fully exposed matrix, read by debiaseval.data.kuairec (not a preprocess dataset).
    "kuairec": frozenset({"full"}),
    # Every rating of the 5,000 users: a log (users rated what they were shown after a gauge set
    # every user rated); its fully observed block (users.full_block) is E5's fully exposed data.
    "jester5k": frozenset({"mnar", "full"}),
}
"""The parts of every built-in dataset, as the experiments may use them."""

RESERVED_NAMES: frozenset[str] = frozenset(BUILTIN_PARTS) | frozenset(DATASET_NAMES)
"""Names a user's own dataset may not take."""

DEFAULT_POSITIVE_THRESHOLD = 3.0
"""A rating is positive when strictly greater than 3 (ratings 1..5), unless said otherwise."""

JESTER_THRESHOLD = 5.0
"""Jester's jokes are rated on [-10, 10]: a rating above 5.0 is positive (27.3% of the fully
observed block)."""

CONTINUOUS_RATINGS: frozenset[str] = frozenset({"jester5k", "jester5k-semi"})
"""Built-in datasets whose ratings are continuous (Jester's [-10, 10] in steps of 0.01), not a
few levels: a model of P(O | rating level), Naive Bayes, does not apply to them."""

_BUILTIN_THRESHOLD = {  # kuairec: watch_ratio > 2 [URE24]
    "kuairec": 2.0,
    "jester5k": JESTER_THRESHOLD,
    "jester5k-semi": JESTER_THRESHOLD,
}

_HINTS = {
    "mar": "set sources.{name}.mar to a randomly sampled log",
    "timestamps": "map sources.{name}.columns.timestamp",
    "propensities": "map sources.{name}.columns.propensity",
}


def is_user_source(entry: Any) -> bool:
    """Whether a ``sources`` entry declares a user's own dataset (it names a ``ratings`` file)."""
    return isinstance(entry, Mapping) and "ratings" in entry


def user_sources(sources: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """The user datasets of a config's ``sources`` block, by name, in config order."""
    return {
        name: entry
        for name, entry in (sources or {}).items()
        if name not in RESERVED_NAMES and is_user_source(entry)
    }


def dataset_names(sources: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """Every dataset name a config with this ``sources`` block may use: built-ins, then its own."""
    return (*DATASET_NAMES, *user_sources(sources))


def user_parts(spec: Mapping[str, Any]) -> frozenset[str]:
    """The parts of a user dataset: MNAR, plus MAR, timestamps, propensities as configured."""
    columns = spec.get("columns") or {}
    parts = {"mnar"}
    if spec.get("mar"):
        parts.add("mar")
    if columns.get("timestamp"):
        parts.add("timestamps")
    if columns.get("propensity"):
        parts.add("propensities")
    return frozenset(parts)


def dataset_parts(name: str, sources: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The parts of dataset ``name``: a built-in, or a user dataset of ``sources``."""
    own = user_sources(sources)
    if name in own:
        return user_parts(own[name])
    return BUILTIN_PARTS.get(name, frozenset())


def missing_parts(needs: Sequence[Sequence[str]], parts: frozenset[str]) -> tuple[str, ...]:
    """What ``parts`` lacks of the nearest alternative of ``needs``; ``()`` when one is met.

    ``needs`` lists alternatives, each a set of parts; the nearest is the one with the fewest
    missing parts (the first on a tie, so list the alternatives a log can meet first).
    """
    best = min(needs, key=lambda alternative: sum(p not in parts for p in alternative))
    return tuple(p for p in best if p not in parts)


def needs_text(needs: Sequence[Sequence[str]]) -> str:
    """``needs`` in words: "an MNAR part and a MAR part, or a full rating matrix ..."."""
    return ", or ".join(" and ".join(PART_TEXT[p] for p in alt) for alt in needs)


def missing_text(name: str, missing: Sequence[str], sources: Mapping[str, Any] | None) -> str:
    """The ``missing`` parts of dataset ``name`` in words ("a MAR part (set sources.mylog.mar
    to a randomly sampled log)"), saying how to give them when ``name`` is a user dataset."""
    own = name in user_sources(sources)
    words = []
    for part in missing:
        hint = _HINTS.get(part) if own else None
        words.append(PART_TEXT[part] + (f" ({hint.format(name=name)})" if hint else ""))
    return " and ".join(words)


def positive_threshold_of(
    dataset: str, configured: float | None, sources: Mapping[str, Any] | None = None
) -> float:
    """The experiment's threshold if set, else the dataset's convention.

    A user dataset's convention is its ``positive_threshold`` (3 when null); kuairec's is a
    watch_ratio > 2 [URE24]; Jester's (``jester5k``, ``jester5k-semi``) a rating > 5.0 on
    [-10, 10] (:data:`JESTER_THRESHOLD`); every other dataset's a rating > 3.
    """
    if configured is not None:
        return float(configured)
    own = user_sources(sources).get(dataset)
    if own is not None and own.get("positive_threshold") is not None:
        return float(own["positive_threshold"])
    return _BUILTIN_THRESHOLD.get(dataset, DEFAULT_POSITIVE_THRESHOLD)
