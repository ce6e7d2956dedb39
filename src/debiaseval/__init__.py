"""debiaseval: debiased offline evaluation of recommender systems.

The science lives in this package as plain functions on arrays and DataFrames;
the Snakemake workflow in ``workflow/`` only reads, calls and writes.
"""

from debiaseval._version import __version__

__all__ = ["__version__"]
