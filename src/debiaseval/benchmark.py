"""Stage timings and speed ratios: ``python -m debiaseval.benchmark [--quick]``.

The command; its sections live in :mod:`debiaseval.benchmarks`, one module each
(``--sections stages ratios batching startup scale e4 ranking knn``; the first three by
default). ``--help`` lists every option. See docs/performance.md.
"""

from debiaseval.benchmarks import (
    ReferenceWeightedMF,
    main,
    reference_neighbour_lists,
    reference_ridge_rows,
    reference_topk_metrics,
    script_imports,
)

__all__ = [
    "ReferenceWeightedMF",
    "main",
    "reference_neighbour_lists",
    "reference_ridge_rows",
    "reference_topk_metrics",
    "script_imports",
]

if __name__ == "__main__":
    main()
