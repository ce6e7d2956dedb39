"""Job resources scaled with the input: a floor for Coat-sized jobs, enough at ML-20M's shape."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from debiaseval.workflow.resources import SCALING, expected_input_mb, mem_mb, runtime

ML20M = {"n_users": 138_493, "n_items": 26_744, "density": 0.0054, "n_mar": 20}
COAT_MB = 0.2  # Coat's raw files (290 users x 300 items, 6,960 + 4,640 ratings) are ~0.1 MB
ML20M_SPLIT_MB = 3.4 * (20e6 + 20 * 138_493) / 1e6  # a seed's split at 20M pairs (Parquet)


def files(size_mb: float) -> SimpleNamespace:
    return SimpleNamespace(size_mb=size_mb)  # what Snakemake's `input` offers


@pytest.mark.parametrize("stage", sorted(SCALING))
def test_requests_grow_with_the_input_and_double_on_retry(stage: str) -> None:
    mem, minutes = mem_mb(stage), runtime(stage)
    small = mem(None, files(COAT_MB))
    assert 1000 <= small <= 1100  # Coat: the floor, about 1 GB
    assert mem(None, files(100.0)) > small
    assert mem(None, files(COAT_MB), attempt=2) == 2 * small
    assert minutes(None, files(COAT_MB)) <= SCALING[stage].min_floor + 1
    assert minutes(None, files(100.0), attempt=3) == 3 * minutes(None, files(100.0))


def test_ml20m_shape_gets_what_the_scale_benchmark_measured() -> None:
    # peak RSS of the whole 20M scale run (every stage in one process) < 12 GB; a single
    # E1 train job on a 20M split holds less, and gets more than 5 GB
    assert mem_mb("train")(None, files(ML20M_SPLIT_MB)) >= 5000
    # generated ML-20M-shaped data stands for a ratings file like ML-20M's (533 MB)
    assert expected_input_mb(ML20M) == pytest.approx(27 * 22.77, rel=0.01)
    preprocess = mem_mb("preprocess", extra=lambda w: expected_input_mb(ML20M))
    assert preprocess(None, files(0.0)) >= 5000  # generation + preprocessing at 20M: 4.8 GB
    assert mem_mb("preprocess")(None, files(533.0)) >= 5000  # ML-20M's ratings.csv
    assert expected_input_mb(None) == 0.0


def test_a_configured_number_is_used_as_is_and_stages_are_checked() -> None:
    assert mem_mb("train", 16000) == 16000
    assert runtime("evaluate", 30) == 30
    with pytest.raises(ValueError, match="no resource scaling for stage 'nope'"):
        mem_mb("nope")
