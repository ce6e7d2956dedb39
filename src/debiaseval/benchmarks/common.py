"""What the benchmark's sections share: timing helpers and the ML-1M-shaped data."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["best", "ml1m_shaped", "ratio", "timed"]


def timed(rows: dict[str, float], name: str, work: float, unit: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    out = fn()
    seconds = time.perf_counter() - start
    rows[f"stage {name} [s]"] = seconds
    print(f"{name:<28} {seconds:9.2f} s   {work / seconds:>14,.0f} {unit}/s", flush=True)
    return out


def best(
    repeat: int, clock: Callable[[], float] = time.perf_counter, **contenders: Callable[[], Any]
) -> tuple[dict[str, float], dict[str, Any]]:
    """Best-of-``repeat`` seconds of each contender (runs interleaved) and its last output.

    ``clock`` is wall time by default; ``time.process_time`` (CPU seconds of this process)
    is steadier on a machine shared with other jobs.
    """
    seconds = dict.fromkeys(contenders, np.inf)
    outputs: dict[str, Any] = {}
    for _ in range(repeat):
        for name, fn in contenders.items():
            start = clock()
            outputs[name] = fn()
            seconds[name] = min(seconds[name], clock() - start)
    return seconds, outputs


def ratio(rows: dict[str, float], name: str, slow: float, fast: float, target: str) -> None:
    rows[name] = slow / fast
    print(f"  {name:<58} {slow / fast:7.2f}x   ({target})", flush=True)


def ml1m_shaped(
    n_users: int, n_items: int, n_train: int, n_test: int, n_overlap: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Disjoint uniform train and test pairs (ratings 1–5), and test plus train pairs."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(n_users * n_items, n_train + n_test, replace=False)

    def frame(k: np.ndarray, ratings: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "user": (k // n_items).astype(np.int32),
                "item": (k % n_items).astype(np.int32),
                "rating": ratings.astype(np.float32),
            }
        )

    ratings = rng.integers(1, 6, keys.size)
    train = frame(keys[:n_train], ratings[:n_train])
    test = frame(keys[n_train:], ratings[n_train:])
    also_train = train.iloc[rng.choice(n_train, n_overlap, replace=False)]
    return train, test, pd.concat([test, also_train], ignore_index=True)
