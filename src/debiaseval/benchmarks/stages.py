"""The ``stages`` section of ``python -m debiaseval.benchmark`` (docs/performance.md).

Every E1 stage on the synthetic generator scaled up to about 1M observed MNAR
interactions, in seconds and throughput, plus weighted sampling vs
``Generator.choice`` and top-k by ``argpartition`` vs a sort.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from debiaseval.benchmarks.common import timed
from debiaseval.data.interactions import rating_matrix
from debiaseval.data.preprocess import build_interactions
from debiaseval.data.splits import run_rng, split_e1
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.debiasing.interventions import DEFAULT_TESTSETS, intervene
from debiaseval.debiasing.sampling import weighted_sample_without_replacement
from debiaseval.evaluation.testsets import evaluate_on_testsets
from debiaseval.recommenders import make_recommender
from debiaseval.recommenders.ranking import top_k

__all__ = ["run"]


def _baselines(rng: np.random.Generator, n: int, n_users: int, n_items: int) -> None:
    weights = rng.random(n) ** 4
    size = n // 2
    t0 = time.perf_counter()
    weighted_sample_without_replacement(weights, size, rng)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    rng.choice(n, size=size, replace=False, p=weights / weights.sum())
    naive = time.perf_counter() - t0
    print(
        f"weighted sampling of {size:,} from {n:,}: {ours:.3f} s vs Generator.choice "
        f"{naive:.3f} s (ratio {naive / ours:.1f}x)"
    )
    scores = rng.random((min(n_users, 4096), n_items))
    t0 = time.perf_counter()
    part = np.argpartition(-scores, 9, axis=1)[:, :10]
    np.take_along_axis(scores, part, axis=1).argsort(axis=1)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    np.argsort(-scores, axis=1)[:, :10]
    naive = time.perf_counter() - t0
    print(
        f"top-10 of {scores.shape[1]:,} items for {scores.shape[0]:,} users: argpartition "
        f"{ours:.3f} s vs argsort {naive:.3f} s (ratio {naive / ours:.1f}x)"
    )


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """Time every E1 stage at ``--users`` × ``--items``; add ``stage <name> [s]`` to ``rows``."""
    pairs = args.users * args.items
    data = timed(
        rows,
        "generate synthetic",
        pairs,
        "pairs",
        lambda: generate_synthetic(
            n_users=args.users, n_items=args.items, density=args.density, n_mar=args.n_mar, seed=0
        ),
    )
    raw = data.to_raw()
    n_obs = len(raw.mnar) + len(raw.mar)
    print(f"  {len(raw.mnar):,} MNAR + {len(raw.mar):,} MAR interactions")
    interactions, users, items = timed(
        rows, "preprocess", n_obs, "interactions", lambda: build_interactions(raw)
    )
    split = timed(
        rows,
        "split",
        len(interactions),
        "interactions",
        lambda: split_e1(
            interactions,
            mnar_split={"train": 0.6, "heldout": 0.4},
            mar_split={"weights": 0.15, "val": 0.15, "gt": 0.7},
            rng=run_rng(0, "bench", "split"),
        ),
    )
    parts = {name: frame for name, frame in split.groupby("part")}
    n_users, n_items = len(users), len(items)
    testsets = {"gt": parts["gt"]}
    for name, spec in DEFAULT_TESTSETS.items():
        testsets[name] = timed(
            rows,
            f"intervene {name}",
            len(parts["heldout"]),
            "pairs",
            lambda spec=spec: intervene(
                parts["heldout"],
                spec,
                rho=0.5,
                rng=run_rng(0, "bench", spec.name),
                n_users=n_users,
                n_items=n_items,
                train=parts["train"],
                mar_weights=parts["weights"],
            ),
        )
    train = rating_matrix(parts["train"], n_users, n_items)
    for name in args.recommenders:
        model = timed(
            rows,
            f"fit {name}",
            train.nnz,
            "interactions",
            lambda name=name: make_recommender(name).fit(train, seed=0),
        )
        recs = timed(
            rows,
            f"rank {name} (top-10)",
            n_users,
            "users",
            lambda model=model: top_k(model, train, 10),
        )
        timed(
            rows,
            f"evaluate {name}",
            sum(len(t) for t in testsets.values()),
            "test pairs",
            lambda recs=recs: evaluate_on_testsets(
                recs,
                testsets,
                parts["train"],
                n_items=n_items,
                ks=[10],
                metrics=["precision", "recall", "map", "ndcg", "hitrate"],
                positive_threshold=3.0,
                drop_train_overlap=False,
            ),
        )
    _baselines(np.random.default_rng(0), len(parts["heldout"]), n_users, n_items)
