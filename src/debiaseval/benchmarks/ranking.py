"""The ``ranking`` section of ``python -m debiaseval.benchmark`` (docs/performance.md).

Top-10 of every item for every user, training items excluded, at ML-1M's and ML-20M's
shapes (``--ranking-shapes``) on 1 and 2 threads (``--ranking-threads``):
:func:`~debiaseval.recommenders.ranking.top_k` on float32 MF scores vs implicit's
``recommend`` on the same factors (when installed) vs the bare float32 products, in CPU
and wall seconds with their ratios, and E1's tune+rank stage of PosPop.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import time
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from debiaseval.benchmarks.common import ratio
from debiaseval.recommenders import Recommender
from debiaseval.recommenders.ranking import top_k

__all__ = ["RANK_SHAPES", "run"]


RANK_SHAPES = {"ML-1M": (6_040, 3_706, 850_000), "ML-20M": (138_493, 26_744, 17_000_000)}
"""Users, items and training pairs of the ranking section's shapes (85% of each dataset)."""


class _FloatFactors(Recommender):
    """MF scores p_u·q_i from given float32 factors (no training): the ranking section's model,
    scored in float32 as implicit's factor models are."""

    name = "bench_factors"

    def __init__(self) -> None:
        pass

    def _fit(self, train: sp.csr_matrix, seed: int) -> None:
        rng = np.random.default_rng(seed)
        n_users, n_items = train.shape
        d = _FloatFactors.factors
        self.user_factors_ = rng.standard_normal((n_users, d), dtype=np.float32)
        self.item_factors_ = rng.standard_normal((n_items, d), dtype=np.float32)

    def _score(self, users: np.ndarray) -> np.ndarray:
        return self.user_factors_[users] @ self.item_factors_.T

    factors: ClassVar[int] = 64


def _ranking_data(n_users: int, n_items: int, n_pairs: int, seed: int) -> sp.csr_matrix:
    """About ``n_pairs`` distinct uniform (user, item) pairs with ratings 1–5, as CSR."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, n_users, n_pairs, dtype=np.int32)
    items = rng.integers(0, n_items, n_pairs, dtype=np.int32)
    x = sp.csr_matrix((np.ones(n_pairs, np.float32), (users, items)), shape=(n_users, n_items))
    x.data = rng.integers(1, 6, x.nnz).astype(np.float32)  # duplicates were summed: re-draw
    return x


def _pospop_tune_rank(train: sp.csr_matrix, seed: int) -> Callable[[], Any]:
    """E1's tune+rank stage of PosPop (``e1.tune_step``, the default e1 config) on ``train``
    and 3 MAR ``val`` pairs per user: the stage the ``scale`` section times."""
    from debiaseval.experiments import e1
    from debiaseval.workflow.config import validate_config

    full = validate_config({}, "e1")
    step = e1.E1Train.of(full, "synthetic")
    step = dataclasses.replace(
        step, tuning={**step.tuning, "early_stopping": None}, positive_threshold=3.0
    )
    rng = np.random.default_rng(seed)
    n_users, n_items = train.shape
    coo = train.tocoo()
    split = pd.concat(
        [
            pd.DataFrame({"user": coo.row, "item": coo.col, "rating": coo.data, "part": "train"}),
            pd.DataFrame(
                {
                    "user": np.repeat(np.arange(n_users, dtype=np.int32), 3),
                    "item": rng.integers(0, n_items, 3 * n_users).astype(np.int32),
                    "rating": rng.integers(1, 6, 3 * n_users).astype(np.float32),
                    "part": "val",
                }
            ),
        ],
        ignore_index=True,
    )
    spec = {"algorithm": "pospop", "grid": {}, "params": {}}
    return lambda: e1.tune_step(
        split,
        "PosPop",
        spec,
        step,
        chunk=0,
        dataset="synthetic",
        seed=seed,
        n_users=n_users,
        n_items=n_items,
    )


def _best_cpu_wall(
    repeat: int, **contenders: Callable[[], Any]
) -> tuple[dict[str, float], dict[str, float], dict[str, Any]]:
    """:func:`~debiaseval.benchmarks.common.best` in CPU seconds of the process and in wall
    seconds, from the same runs."""
    cpu, wall = dict.fromkeys(contenders, np.inf), dict.fromkeys(contenders, np.inf)
    outputs: dict[str, Any] = {}
    for _ in range(repeat):
        for name, fn in contenders.items():
            start_cpu, start_wall = time.process_time(), time.perf_counter()
            outputs[name] = fn()
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
            wall[name] = min(wall[name], time.perf_counter() - start_wall)
    return cpu, wall, outputs


def _bare_products(user_factors: np.ndarray, item_factors: np.ndarray, batch: int) -> None:
    """The float32 score products of every user, in batches of ``batch``, thrown away."""
    for start in range(0, user_factors.shape[0], batch):
        user_factors[start : start + batch] @ item_factors.T


def _ranking_shape(args: argparse.Namespace, rows: dict[str, float], shape: str) -> None:
    """The ranking section at one data shape (see :func:`_ranking`)."""
    import numba

    implicit_als = None
    if importlib.util.find_spec("implicit") is not None:
        from implicit.cpu.als import AlternatingLeastSquares as implicit_als
    k = args.ranking_k
    n_users, n_items, n_pairs = (max(1, round(n * args.ranking_scale)) for n in RANK_SHAPES[shape])
    train = _ranking_data(n_users, n_items, n_pairs, seed=0)
    _FloatFactors.factors = args.ranking_factors
    model = _FloatFactors().fit(train, seed=0)
    users = np.arange(n_users)
    print(
        f"\n== ranking at {shape} shape: {n_users:,} x {n_items:,}, {train.nnz:,} train "
        f"pairs, d = {args.ranking_factors}, top-{k}, best of {args.repeat}; ratios of CPU "
        "seconds (all the process's threads: steadier than wall time on a shared machine)"
    )
    tune_rank = _pospop_tune_rank(train, seed=0)
    for threads in args.ranking_threads:
        label = f"{shape} {threads} thread{'s' if threads > 1 else ''}"
        contenders: dict[str, Callable[[], Any]] = {
            "debiaseval": lambda threads=threads: top_k(model, train, k, threads=threads),
            "product": lambda: _bare_products(model.user_factors_, model.item_factors_, 1024),
        }
        if implicit_als is not None:
            with threadpool_limits(limits=1, user_api="blas"):  # implicit checks it here
                peer = implicit_als(factors=args.ranking_factors, num_threads=threads)
            peer.user_factors, peer.item_factors = model.user_factors_, model.item_factors_
            contenders["implicit"] = lambda peer=peer: peer.recommend(
                users, train, N=k, filter_already_liked_items=True
            )
        with threadpool_limits(limits=threads):
            seconds, wall, outputs = _best_cpu_wall(args.repeat, **contenders)
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            pospop, pospop_wall, _ = _best_cpu_wall(args.repeat, tune_rank=tune_rank)
        for name, value in seconds.items():
            rows[f"ranking {label}: {name} cpu [s]"] = value
            rows[f"ranking {label}: {name} wall [s]"] = wall[name]
        cells = ", ".join(
            f"{name} {value:.2f} ({wall[name]:.2f})" for name, value in seconds.items()
        )
        print(f"  {label}, cpu (wall) s: {cells}", flush=True)
        ratio(
            rows,
            f"ranking {label}: debiaseval / product",
            seconds["debiaseval"],
            seconds["product"],
            "target <= 1.5",
        )
        if "implicit" in seconds:
            ratio(
                rows,
                f"ranking {label}: implicit / debiaseval",
                seconds["implicit"],
                seconds["debiaseval"],
                "target >= 1",
            )
            ours = outputs["debiaseval"]
            ids = outputs["implicit"][0][ours["user"], ours["rank"] - 1]
            agree = float(np.mean(ids == ours["item"].to_numpy()))
            rows[f"ranking {label}: lists agree with implicit"] = agree
            print(f"  lists agree with implicit's on {agree:.2%} of the items")
        rows[f"ranking {label}: E1 tune+rank PosPop cpu [s]"] = pospop["tune_rank"]
        rows[f"ranking {label}: E1 tune+rank PosPop wall [s]"] = pospop_wall["tune_rank"]
        print(
            f"  {label}: E1 tune+rank PosPop {pospop['tune_rank']:.2f} s cpu "
            f"({pospop_wall['tune_rank']:.2f} wall)",
            flush=True,
        )


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """Top-k of every item for every user, training items excluded: ``top_k`` vs implicit's
    ``recommend`` (the same float32 factors) vs the bare float32 products in batches of 1,024;
    and E1's tune+rank stage of PosPop, which ranks without a product."""
    import numba

    before = numba.get_num_threads()
    try:
        for shape in args.ranking_shapes:
            _ranking_shape(args, rows, shape)
    finally:
        numba.set_num_threads(before)
