"""Job resources that grow with a job's input: ``mem_mb`` and ``runtime`` callables for the rules.

Snakemake calls a rule's resource callables when the job is about to run, with its
input files known (``input.size_mb``), so one request fits Coat and ML-20M alike
(see docs/cluster.md and docs/performance.md). A request is

    mem_mb  = (floor + slope · input MB) · attempt,
    runtime = (floor + slope · input MB) · attempt   (minutes),

rounded up, with the floor and slope of the rule's stage in :data:`SCALING`,
calibrated on ``python -m debiaseval.benchmark --sections scale`` (peak RSS and
CPU time of each stage at 1M, 5M and 20M pairs, plus a margin) against the size of
the stage's input files at those sizes. A job retried (``--retries``) asks for
``attempt`` times as much. A number set in the config's ``resources`` block
(``mem_mb``, ``runtime``) is used as is instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SCALING", "Scaling", "expected_input_mb", "mem_mb", "runtime"]


@dataclass(frozen=True)
class Scaling:
    """Floors and slopes per MB of input of one stage's memory (MB) and runtime (minutes)."""

    mem_floor: float
    mem_per_mb: float
    min_floor: float
    min_per_mb: float


SCALING: dict[str, Scaling] = {
    # Python, numpy/pandas/scipy and the package take ~0.3 GB; 1 GB covers Coat/Yahoo!-sized jobs.
    "preprocess": Scaling(1000, 8, 10, 0.05),  # input: raw files (CSV-like, ~27 bytes a rating)
    "train": Scaling(1000, 60, 15, 1.5),  # input: a seed's split (Parquet, ~3.4 bytes a pair)
    "evaluate": Scaling(1000, 40, 10, 0.3),
    "e2": Scaling(1000, 60, 30, 1.5),
    "e3": Scaling(1000, 60, 30, 1.5),
    "e4": Scaling(1000, 60, 60, 3.0),
    "e5": Scaling(1000, 60, 15, 1.5),
    "e6": Scaling(1000, 60, 15, 3.0),
}
"""Per stage: a rule's memory and runtime requests as functions of its input size."""

_BYTES_PER_PAIR = 27.0  # a rating's share of a raw ratings file (ML-20M's ratings.csv: 533 MB)


def expected_input_mb(synthetic: Mapping[str, Any] | None) -> float:
    """The input MB a ``synthetic`` block stands for (its data has no input file): its
    expected MNAR pairs (density · users · items) plus the MAR part, at the bytes a rating
    takes in a raw ratings file, so that generated and downloaded data scale alike."""
    if not synthetic:
        return 0.0
    n_users, n_items = int(synthetic.get("n_users", 300)), int(synthetic.get("n_items", 400))
    pairs = float(synthetic.get("density", 0.05)) * n_users * n_items
    pairs += int(synthetic.get("n_mar", 20)) * n_users
    return pairs * _BYTES_PER_PAIR / 1e6


def _request(
    stage: str, fixed: int | None, field: str, extra: Callable[[Any], float] | None
) -> Callable[..., int] | int:
    if stage not in SCALING:
        known = ", ".join(sorted(SCALING))
        raise ValueError(f"no resource scaling for stage {stage!r}; expected one of {known}")
    if fixed is not None:
        return int(fixed)
    scaling = SCALING[stage]
    floor = getattr(scaling, f"{field}_floor")
    slope = getattr(scaling, f"{field}_per_mb")

    def request(wildcards, input, attempt: int = 1) -> int:
        size = float(getattr(input, "size_mb", 0.0) or 0.0)
        if extra is not None:
            size += extra(wildcards)
        return math.ceil((floor + slope * size) * max(int(attempt), 1))

    return request


def mem_mb(
    stage: str, fixed: int | None = None, *, extra: Callable[[Any], float] | None = None
) -> Callable[..., int] | int:
    """A rule's ``mem_mb``: ``fixed`` if the config sets it, else a callable of the job's input
    (plus ``extra(wildcards)`` MB, e.g. :func:`expected_input_mb` of generated data)."""
    return _request(stage, fixed, "mem", extra)


def runtime(
    stage: str, fixed: int | None = None, *, extra: Callable[[Any], float] | None = None
) -> Callable[..., int] | int:
    """A rule's ``runtime`` in minutes, as :func:`mem_mb`."""
    return _request(stage, fixed, "min", extra)
