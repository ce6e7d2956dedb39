"""Real datasets: where they come from, how they are fetched, parsed and preprocessed (SPEC §2)."""

from debiaseval.data.download import (
    DATA_ENV,
    MIRROR_ENV,
    DatasetError,
    cache_folder,
    download_file,
    fetch_dataset,
    safe_extract,
    sha256_file,
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

GENERATED: tuple[str, ...] = ("synthetic", "ml-100k-semi")
"""Datasets the workflow generates itself (``ml-100k-semi`` from ML-100K's files, SPEC 2.2)."""

DATASET_NAMES: tuple[str, ...] = (*GENERATED, *SOURCES)
"""Every dataset name a config may use."""

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
    "RawDataset",
    "build_interactions",
    "cache_folder",
    "download_file",
    "fetch_dataset",
    "filter_users_by_count",
    "load_coat",
    "load_librarything",
    "load_ml_1m",
    "load_ml_100k",
    "load_raw",
    "load_yahoo_r3",
    "safe_extract",
    "sha256_file",
]
