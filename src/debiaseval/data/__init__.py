"""Datasets: the built-in ones (where they come from, how they are fetched, parsed and
preprocessed) and a user's own rating logs (:mod:`~debiaseval.data.user_logs`); which parts
each has (:mod:`~debiaseval.data.catalog`)."""

from debiaseval.data.catalog import DATASET_NAMES, GENERATED, dataset_names, dataset_parts
from debiaseval.data.download import (
    DATA_ENV,
    MIRROR_ENV,
    cache_folder,
    download_file,
    fetch_dataset,
    safe_extract,
    sha256_file,
)
from debiaseval.data.filters import (
    Filtered,
    apply_filter,
    common_users_items,
    dropped_markdown,
    dropped_report,
    dropped_warnings,
    part_sizes,
)
from debiaseval.data.loaders import (
    LOADERS,
    RawDataset,
    load_coat,
    load_librarything,
    load_ml_1m,
    load_ml_100k,
    load_raw,
    load_yahoo_r3,
)
from debiaseval.data.preprocess import PARTS, build_interactions, filter_users_by_count
from debiaseval.data.registry import SOURCES, DatasetSource
from debiaseval.data.user_logs import load_user_log
from debiaseval.io.errors import DatasetError

__all__ = [
    "DATASET_NAMES",
    "DATA_ENV",
    "GENERATED",
    "LOADERS",
    "MIRROR_ENV",
    "PARTS",
    "SOURCES",
    "DatasetError",
    "DatasetSource",
    "Filtered",
    "RawDataset",
    "apply_filter",
    "build_interactions",
    "cache_folder",
    "common_users_items",
    "dataset_names",
    "dataset_parts",
    "download_file",
    "dropped_markdown",
    "dropped_report",
    "dropped_warnings",
    "fetch_dataset",
    "filter_users_by_count",
    "load_coat",
    "load_librarything",
    "load_ml_1m",
    "load_ml_100k",
    "load_raw",
    "load_user_log",
    "load_yahoo_r3",
    "part_sizes",
    "safe_extract",
    "sha256_file",
]
