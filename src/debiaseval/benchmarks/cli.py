"""Stage timings and speed ratios: ``python -m debiaseval.benchmark [--quick]``.

The command line: its options, their defaults (full and ``--quick``), and the sections it
runs, each from its own module of :mod:`debiaseval.benchmarks`.
"""

from __future__ import annotations

import argparse

from threadpoolctl import threadpool_limits

from debiaseval.benchmarks import batching, e4, knn, ranking, ratios, scale, stages, startup
from debiaseval.benchmarks.e4 import E4_SHAPES
from debiaseval.benchmarks.knn import KNN_SHAPE
from debiaseval.benchmarks.ranking import RANK_SHAPES

__all__ = ["main"]


PAPER_K_GRID = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
"""The k grid of [SAC20]'s k-NN tuning, the full runs' ``--knn-grid``."""


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the benchmark; return every measurement (seconds ``[s]`` or ratios) by name."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=["stages", "ratios", "batching", "startup", "scale", "e4", "ranking", "knn"],
        default=["stages", "ratios", "batching"],
        help="startup, scale, e4, ranking and knn are not run by default; scale: E1, E5 and E6 at "
        "1M/5M/20M pairs, a child per size",
    )
    parser.add_argument(
        "--ranking-shapes",
        nargs="+",
        choices=list(RANK_SHAPES),
        default=list(RANK_SHAPES),
        help="ranking: data shapes (ML-1M's, ML-20M's)",
    )
    parser.add_argument(
        "--ranking-threads", type=int, nargs="+", default=[1, 2], help="ranking: thread counts"
    )
    parser.add_argument("--ranking-factors", type=int, default=64, help="ranking: MF factors d")
    parser.add_argument("--ranking-k", type=int, default=10, help="ranking: list length")
    parser.add_argument(
        "--ranking-scale", type=float, default=1.0, help="ranking: multiply the shapes (tests)"
    )
    parser.add_argument(
        "--scale-sizes",
        default="1,5,20",
        help="scale: sizes in million MNAR pairs, comma-separated (20 = ML-20M's shape)",
    )
    parser.add_argument(
        "--scale-recommenders",
        default="Random,PosPop,AvgRating,UserKNN,ItemKNN,MF",
        help="scale: E1 recommenders, one grid point each",
    )
    parser.add_argument(
        "--scale-stages",
        default="e1,e5,e6",
        help="scale: the experiments whose stages run, comma-separated (e1 alone: E1's stages, "
        "with its evaluate stage without and with the default estimators)",
    )
    parser.add_argument("--scale-mf-epochs", type=int, default=5, help="scale: MF epochs")
    parser.add_argument(
        "--scale-evaluate-repeat",
        type=int,
        default=1,
        help="scale: run E1's three evaluate stages in turn this many times, keep each one's best",
    )
    parser.add_argument(
        "--scale-e6-users", type=int, default=2000, help="scale: E6 leave-one-out user sample"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smaller stage data, one repeat, a 3-point k grid, 3 batched jobs",
    )
    parser.add_argument("--users", type=int, help="stages: synthetic users (20,000; quick 5,000)")
    parser.add_argument("--items", type=int, help="stages: synthetic items (5,000; quick 2,000)")
    parser.add_argument("--density", type=float, default=0.01)
    parser.add_argument("--n-mar", type=int, default=20)
    parser.add_argument(
        "--recommenders",
        nargs="*",
        default=["random", "pospop", "avgrating", "userknn", "itemknn", "mf"],
    )
    parser.add_argument(
        "--shape",
        type=int,
        nargs=4,
        default=[6_040, 3_706, 600_000, 400_000],
        metavar=("USERS", "ITEMS", "TRAIN", "TEST"),
        help="ratios and batching: data shape (default: ML-1M's)",
    )
    parser.add_argument("--repeat", type=int, help="best of this many runs (3; quick 1)")
    parser.add_argument(
        "--knn-grid", type=int, nargs="+", help="k grid (the paper's 10..100; quick 10 50 100)"
    )
    parser.add_argument("--mf-factors", type=int, default=40)
    parser.add_argument("--mf-epochs", type=int, default=3)
    parser.add_argument(
        "--batch-recommenders", type=int, help="evaluate jobs to batch (6; quick 3)"
    )
    parser.add_argument(
        "--e4-shapes",
        nargs="+",
        choices=list(E4_SHAPES),
        default=list(E4_SHAPES),
        help="e4: data shapes (Coat's, Yahoo! R3's)",
    )
    parser.add_argument(
        "--e4-factors", type=int, nargs="+", help="e4: d values (40; the paper's d = 5 10 20 40)"
    )
    parser.add_argument(
        "--e4-losses", nargs="+", choices=["squared", "absolute"], default=["squared", "absolute"]
    )
    parser.add_argument("--e4-sweeps", type=int, default=10, help="e4: ALS sweeps per fit")
    parser.add_argument(
        "--e4-scale", type=float, default=1.0, help="e4: multiply the shapes (tests: 0.1)"
    )
    parser.add_argument(
        "--knn-shape",
        type=int,
        nargs=3,
        default=list(KNN_SHAPE),
        metavar=("USERS", "ITEMS", "PAIRS"),
        help="knn: ItemKNN's data (61,935 11,960 5M)",
    )
    parser.add_argument(
        "--knn-user-shape",
        type=int,
        nargs=3,
        default=[30_968, 5_980, 1_000_000],
        metavar=("USERS", "ITEMS", "PAIRS"),
        help="knn: UserKNN's data (ML-20M's aspect, 1M)",
    )
    parser.add_argument("--knn-k", type=int, default=100, help="knn: neighbours per list")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads")
    parser.add_argument(
        "--reference-src",
        help="startup: another checkout's src folder (its package and ../workflow/scripts) "
        "to measure beside this one, e.g. main's, for a before/after table",
    )
    args = parser.parse_args(argv)
    defaults = {
        "users": (20_000, 5_000),
        "items": (5_000, 2_000),
        "repeat": (3, 1),
        "knn_grid": (PAPER_K_GRID, [10, 50, 100]),
        "batch_recommenders": (6, 3),
        "e4_factors": ([40], [40]),
    }
    for key, (full, quick) in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, quick if args.quick else full)
    rows: dict[str, float] = {}
    with threadpool_limits(limits=args.threads):
        if "stages" in args.sections:
            stages.run(args, rows)
        if "ratios" in args.sections:
            ratios.run(args, rows)
        if "batching" in args.sections:
            batching.run(args, rows)
        if "startup" in args.sections:
            startup.run(args, rows)
        if "e4" in args.sections:
            e4.run(args, rows)
        if "ranking" in args.sections:
            ranking.run(args, rows)
        if "knn" in args.sections:
            knn.run(args, rows)
    if "scale" in args.sections:  # children set their own thread limits
        scale.run(args, rows)
    return rows
