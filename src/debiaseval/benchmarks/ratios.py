"""The ``ratios`` section of ``python -m debiaseval.benchmark`` (docs/performance.md).

At ML-1M shape (6,040 users × 3,706 items, 600k train and 400k test pairs drawn
uniformly; ``--shape`` changes it), with a LightFM WARP model: scores →
Precision/Recall/NDCG@10 by the project (``top_k``, ``evaluate_topk``, ``summarise``)
vs a plain numpy reference (:func:`reference_topk_metrics`: batched scores, masked
train items, ``argpartition``, vectorised metrics) vs LightFM's own ``precision_at_k``
+ ``recall_at_k``; ``train_overlap_mask`` vs numpy's default ``isin`` (the hash path it
replaced); UserKNN and ItemKNN over a k grid from one fit
(:func:`debiaseval.recommenders.fit_grid`) vs a refit per k.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from debiaseval.benchmarks.common import best, ml1m_shaped, ratio
from debiaseval.data.interactions import rating_matrix
from debiaseval.evaluation.metrics import evaluate_topk, summarise, train_overlap_mask
from debiaseval.recommenders import LightFMRanker, Recommender, fit_grid, make_recommender
from debiaseval.recommenders.ranking import top_k

__all__ = ["reference_topk_metrics", "run"]

_METRICS = ["precision", "recall", "ndcg"]


def reference_topk_metrics(
    model: Recommender,
    train: sp.csr_matrix,
    relevant: sp.csr_matrix,
    k: int,
    *,
    batch_size: int = 1024,
) -> dict[str, float]:
    """Plain numpy Precision/Recall/NDCG@k: the yardstick of the project's evaluation path.

    Batched ``model.score``, training items set to -inf, ``argpartition`` and a
    sort of the k picks, hits looked up in the dense rows of the boolean
    ``relevant`` matrix; means over the users with ≥ 1 relevant pair. Ties are
    not broken deterministically (the project's path breaks them by item id).
    """
    n_users, n_items = train.shape
    n_relevant = np.diff(relevant.indptr)
    discount = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = np.concatenate(([0.0], np.cumsum(discount)))
    total = np.zeros(3)
    for start in range(0, n_users, batch_size):
        users = np.arange(start, min(start + batch_size, n_users))
        scores = model.score(users)
        seen = train[users]
        scores[np.repeat(np.arange(users.size), np.diff(seen.indptr)), seen.indices] = -np.inf
        top = np.argpartition(scores, n_items - k, axis=1)[:, n_items - k :]
        order = np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1)
        top = np.take_along_axis(top, order, axis=1)
        hits = np.take_along_axis(relevant[users].toarray(), top, axis=1)
        n_rel = n_relevant[users]
        hits, n_rel = hits[n_rel > 0], n_rel[n_rel > 0]
        n_hits = hits.sum(axis=1)
        total += (
            n_hits.sum() / k,
            (n_hits / n_rel).sum(),
            ((hits @ discount) / ideal[np.minimum(k, n_rel)]).sum(),
        )
    return dict(zip(_METRICS, (total / np.count_nonzero(n_relevant)).tolist(), strict=True))


def _lightfm_model(train: sp.csr_matrix, factors: int, epochs: int, seed: int) -> tuple[Any, Any]:
    """A LightFM WARP model on the positive pairs, and the project's ranker with its embeddings."""
    from lightfm import LightFM

    positives = sp.coo_matrix((train > 3).astype(np.float32))
    lfm = LightFM(no_components=factors, loss="warp", random_state=np.random.RandomState(seed))
    lfm.fit(positives, epochs=epochs)
    ranker = LightFMRanker(factors=factors, epochs=epochs)  # the same model, scored by numpy
    ranker.n_users_, ranker.n_items_ = train.shape
    ranker.seed_ = seed
    ranker.user_embeddings_ = lfm.user_embeddings.astype(np.float64)
    ranker.item_embeddings_ = lfm.item_embeddings.astype(np.float64)
    ranker.user_biases_ = lfm.user_biases.astype(np.float64)
    ranker.item_biases_ = lfm.item_biases.astype(np.float64)
    return lfm, ranker


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """Time the project against its references at ``--shape``; add the ratios to ``rows``."""
    from lightfm.evaluation import precision_at_k, recall_at_k

    n_users, n_items, n_train, n_test = args.shape
    k, repeat = 10, args.repeat
    print(f"\n== ratios at {n_users:,} x {n_items:,}, {n_train:,} train, {n_test:,} test pairs")
    train_df, test_df, test_with_train = ml1m_shaped(
        n_users, n_items, n_train, n_test, n_overlap=n_test // 20, seed=0
    )
    train = rating_matrix(train_df, n_users, n_items)
    rel = test_df[test_df["rating"] > 3]
    relevant = sp.csr_matrix(
        (np.ones(len(rel), dtype=bool), (rel["user"], rel["item"])), shape=train.shape
    )
    lfm, ranker = _lightfm_model(train, args.mf_factors, args.mf_epochs, seed=0)

    def ours() -> dict[str, float]:
        recs = top_k(ranker, train, k)
        table = summarise(evaluate_topk(recs, test_df, [k], n_items=n_items, metrics=_METRICS))
        return dict(zip(table["metric"], table["value"], strict=True))

    test_coo, train_coo = sp.coo_matrix(relevant, dtype=np.float32), train.tocoo()

    def lightfm() -> dict[str, float]:
        return {
            "precision": float(precision_at_k(lfm, test_coo, train_coo, k=k).mean()),
            "recall": float(recall_at_k(lfm, test_coo, train_coo, k=k).mean()),
        }

    # more runs for the two fast contenders: their best of many is robust to a busy machine
    seconds, out = best(
        2 * repeat + 1,
        ours=ours,
        reference=lambda: reference_topk_metrics(ranker, train, relevant, k),
    )
    more_seconds, more_out = best(repeat, lightfm=lightfm)
    seconds |= more_seconds
    out |= more_out
    for name, values in out.items():
        shown = ", ".join(f"{m}@{k} {v:.5f}" for m, v in values.items())
        print(f"  {name:<10} {seconds[name]:7.3f} s   {shown}")
    ratio(
        rows,
        "scores->P/R/NDCG@10: project / numpy reference",
        seconds["ours"],
        seconds["reference"],
        "target <= 1.2",
    )
    ratio(
        rows,
        "scores->P/R@10: LightFM evaluation / project",
        seconds["lightfm"],
        seconds["ours"],
        "target >= 10",
    )

    def keys(frame: pd.DataFrame) -> np.ndarray:
        return frame["user"].to_numpy(np.int64) * n_items + frame["item"].to_numpy(np.int64)

    t_keys, r_keys = keys(test_with_train), keys(train_df)
    seconds, out = best(
        repeat,
        before=lambda: np.isin(t_keys, r_keys),  # the former implementation
        after=lambda: train_overlap_mask(test_with_train, train_df),
    )
    assert np.array_equal(out["before"], out["after"])
    print(f"  train_overlap_mask: {seconds['after']:.4f} s, numpy's isin {seconds['before']:.4f} s")
    ratio(
        rows, "train_overlap_mask: before / after", seconds["before"], seconds["after"], "speed-up"
    )

    grid = args.knn_grid
    for name in ("userknn", "itemknn"):

        def refit(name: str = name) -> list[pd.DataFrame]:
            return [top_k(make_recommender(name, k=kk).fit(train, seed=0), train, k) for kk in grid]

        def shared(name: str = name) -> list[pd.DataFrame]:
            points = [{"k": kk} for kk in grid]
            return [
                top_k(model, train, k) for _, model in fit_grid(name, {}, points, train, seed=0)
            ]

        seconds, out = best(1, refit=refit, shared=shared)
        for a, b in zip(out["refit"], out["shared"], strict=True):
            pd.testing.assert_frame_equal(a, b)  # the same lists, not just the same speed
        print(
            f"  {name} grid k={grid}: refit per k {seconds['refit']:.2f} s, "
            f"one fit {seconds['shared']:.2f} s (fit + top-10 of every user per k)"
        )
        ratio(
            rows,
            f"{name} grid: refit per k / one fit",
            seconds["refit"],
            seconds["shared"],
            "speed-up",
        )
