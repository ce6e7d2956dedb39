"""Stage timings and speed ratios: ``python -m debiaseval.benchmark [--quick]``.

The command; its sections live in :mod:`debiaseval.benchmarks`, one module each
(``--sections stages ratios batching startup scale e4 ranking knn``; the first three by
default), which also holds the reference implementations the tests compare against.
``--help`` lists every option. See docs/performance.md.
"""

from debiaseval.benchmarks.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
