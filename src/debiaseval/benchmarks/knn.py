"""The ``knn`` section of ``python -m debiaseval.benchmark`` (docs/performance.md).

The k-NN neighbour lists (k = ``--knn-k``) of ItemKNN at 5M popularity-skewed pairs
(61,935 × 11,960, ``--knn-shape``) and of UserKNN at ``--knn-user-shape``: the former
blockwise path (:func:`reference_neighbour_lists`) vs the compiled kernel (the same
lists, checked) vs the model's ``fit`` vs implicit's ``CosineRecommender.fit`` (when
installed), CPU seconds on one thread; and the kernel's wall time on 1 and 2 threads.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from debiaseval.benchmarks.common import best, ratio
from debiaseval.benchmarks.e4 import e4_problem

__all__ = ["KNN_SHAPE", "reference_neighbour_lists", "run"]


_REFERENCE_KNN_CELLS = 1 << 22
"""Dense similarity cells per block of the reference neighbour lists (32 MiB of float64)."""


def reference_neighbour_lists(unit: sp.csr_matrix, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The neighbour lists as k-NN built them before the compiled kernel: blocks of rows,
    scipy's sparse product made dense, the diagonal at -inf, ``top_k_indices``.

    Returns the (n × k) neighbour ids and similarities, best first.
    """
    from debiaseval.recommenders.ranking import top_k_indices

    n = unit.shape[0]
    cols = np.empty((n, k), dtype=np.int64)
    vals = np.empty((n, k), dtype=np.float64)
    if k > 0:
        unit_t = sp.csr_matrix(unit.T)
        step = max(1, _REFERENCE_KNN_CELLS // n)
        for start in range(0, n, step):
            block = np.arange(start, min(start + step, n))
            sims = (unit[block] @ unit_t).toarray()
            sims[np.arange(block.size), block] = -np.inf  # never one's own neighbour
            cols[block] = top_k_indices(sims, k)
            vals[block] = np.take_along_axis(sims, cols[block], axis=1)
    return cols, vals


KNN_SHAPE = (61_935, 11_960, 5_000_000)
"""The knn section's default data: users, items and pairs of the 5M-pair comparison with
implicit (about ML-20M's aspect)."""


def _knn_matrix(n_users: int, n_items: int, n_pairs: int, seed: int) -> sp.csr_matrix:
    """Distinct pairs with popularity-skewed items and ratings 1–5 (E4's generator)."""
    p = e4_problem(n_users, n_items, n_pairs, seed)
    shape = (n_users, n_items)
    return sp.csr_matrix((p["ratings"], (p["users"], p["items"])), shape=shape)


def _implicit_cosine(x: sp.csr_matrix, k: int) -> Callable[[], Any] | None:
    """implicit's CosineRecommender.fit on ``x`` (its item lists) on one thread, if installed."""
    try:
        from implicit.nearest_neighbours import CosineRecommender
    except ImportError:
        return None

    def fit() -> Any:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = CosineRecommender(K=k, num_threads=1)
            model.fit(x, show_progress=False)
        return model

    return fit


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """k-NN neighbour lists: the former blockwise path, the compiled kernel, implicit."""
    from debiaseval.recommenders import ItemKNN, UserKNN, knn

    k = args.knn_k
    users, items, pairs = args.knn_shape
    x = _knn_matrix(users, items, pairs, seed=0)
    print(
        f"\n== k-NN neighbour lists, k = {k}, CPU seconds on one thread (best of "
        f"{args.repeat}); {x.shape[0]:,} x {x.shape[1]:,}, {x.nnz:,} pairs"
    )
    for label, cls, rows_of in (
        ("itemknn", ItemKNN, lambda m: sp.csr_matrix(m.T)),
        ("userknn", UserKNN, lambda m: m),
    ):
        data = x if label == "itemknn" else _knn_matrix(*args.knn_user_shape, seed=0)
        unit = knn._row_normalize(rows_of(data))
        cls(k=2).fit(data[:50])  # compile (or load) the kernel outside the timings
        contenders: dict[str, Callable[[], Any]] = {
            "former": lambda u=unit: reference_neighbour_lists(u, k),
            "kernel": lambda u=unit: knn._neighbour_lists(u, k, 1),
            "fit": lambda c=cls, d=data: c(k=k).fit(d),
        }
        # implicit's CosineRecommender builds item lists; given the transpose, user lists
        peer = _implicit_cosine(data if label == "itemknn" else sp.csr_matrix(data.T), k)
        if peer is not None:
            contenders["implicit"] = peer
        seconds, out = best(args.repeat, time.process_time, **contenders)
        n = unit.shape[0]
        lists = out["kernel"]
        assert np.array_equal(lists.indices.reshape(n, k), out["former"][0])  # the same lists
        assert np.array_equal(lists.data.reshape(n, k), out["former"][1])
        if label == "userknn":
            print(f"  users: {data.shape[0]:,} x {data.shape[1]:,}, {data.nnz:,} pairs")
        for name, value in seconds.items():
            rows[f"knn {label} {name} [s]"] = value
        print(
            f"  {label}: former lists {seconds['former']:.2f} s, kernel lists "
            f"{seconds['kernel']:.2f} s, {cls.__name__}.fit {seconds['fit']:.2f} s"
            + (
                f", implicit CosineRecommender.fit {seconds['implicit']:.2f} s"
                if "implicit" in seconds
                else ", implicit not installed"
            )
        )
        ratio(
            rows,
            f"knn {label}: former lists / kernel",
            seconds["former"],
            seconds["kernel"],
            "speed-up",
        )
        if "implicit" in seconds:
            ratio(
                rows,
                f"knn {label}: implicit fit / {cls.__name__}.fit",
                seconds["implicit"],
                seconds["fit"],
                "target >= 1",
            )
        wall, _ = best(
            args.repeat,
            one=lambda u=unit: knn._neighbour_lists(u, k, 1),
            two=lambda u=unit: knn._neighbour_lists(u, k, 2),
        )
        rows[f"knn {label} kernel 1 thread wall [s]"] = wall["one"]
        rows[f"knn {label} kernel 2 threads wall [s]"] = wall["two"]
        print(f"  {label} kernel wall: 1 thread {wall['one']:.2f} s, 2 threads {wall['two']:.2f} s")
        ratio(
            rows,
            f"knn {label}: kernel 1 / 2 threads (wall)",
            wall["one"],
            wall["two"],
            "at most 2 on 2 free cores",
        )
