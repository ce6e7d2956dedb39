"""The benchmark behind ``python -m debiaseval.benchmark``: one module per section.

Each section is measured in one process (no timing is asserted anywhere) by the
``run(args, rows)`` of its module; the first three run by default:

- :mod:`~debiaseval.benchmarks.stages`: every E1 stage at about 1M MNAR pairs;
- :mod:`~debiaseval.benchmarks.ratios`: the project's metrics, ``train_overlap_mask`` and
  the k-NN grid against their references at ML-1M shape;
- :mod:`~debiaseval.benchmarks.batching`: a job's imports, N evaluate jobs vs one;
- :mod:`~debiaseval.benchmarks.startup`: the start-up of each workflow script;
- :mod:`~debiaseval.benchmarks.scale`: E1, E5 and E6 at 1M, 5M and 20M pairs, a child
  process per size, with peak RSS and the growth exponent of time;
- :mod:`~debiaseval.benchmarks.e4`: E4's weighted ALS against the former Gram builder;
- :mod:`~debiaseval.benchmarks.ranking`: top-k of every item at ML-1M's and ML-20M's shapes;
- :mod:`~debiaseval.benchmarks.knn`: the k-NN neighbour lists against the former path.

:mod:`~debiaseval.benchmarks.common` holds the timing helpers the sections share and
:mod:`~debiaseval.benchmarks.cli` the command line (:func:`main`). Each timing is the best
of ``--repeat`` runs, with the contenders interleaved; BLAS pools are capped at
``--threads`` (1, as in the workflow's jobs). See docs/performance.md.
"""

from debiaseval.benchmarks.cli import main
from debiaseval.benchmarks.e4 import ReferenceWeightedMF, reference_ridge_rows
from debiaseval.benchmarks.knn import reference_neighbour_lists
from debiaseval.benchmarks.ratios import reference_topk_metrics
from debiaseval.benchmarks.startup import script_imports

__all__ = [
    "ReferenceWeightedMF",
    "main",
    "reference_neighbour_lists",
    "reference_ridge_rows",
    "reference_topk_metrics",
    "script_imports",
]
