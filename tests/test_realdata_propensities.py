"""Propensity models on real Coat ([ICML16] §6.4), from the local mirror ($DEBIASEVAL_MIRROR)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from debiaseval.data import MIRROR_ENV, fetch_dataset, load_raw
from debiaseval.debiasing import propensities as prop

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


def test_coat_logistic_propensities_track_the_provided_ones(tmp_path: Path) -> None:
    # Coat ships the authors' logistic-regression propensities (propensities.ascii); ours,
    # fitted on the same user/item features with cross features and offsets, must agree
    # closely (correlation > 0.9 over all 87,000 pairs) and match the observed count.
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror or not (Path(mirror) / "coat").is_dir():
        pytest.skip(f"coat is not in the mirror ({MIRROR_ENV})")
    raw = load_raw("coat", fetch_dataset("coat", tmp_path / "coat", mirror=Path(mirror)))
    xu = raw.users.drop(columns=["user"]).to_numpy(float)
    xi = raw.items.drop(columns=["item"]).to_numpy(float)
    with threadpool_limits(1):
        table = prop.logistic(raw.mnar, xu, xi, l2=10.0)
    ours = table["propensity"].to_numpy().reshape(290, 300)
    given = raw.propensities.pivot(index="user", columns="item", values="propensity")
    assert np.corrcoef(ours.ravel(), given.to_numpy().ravel())[0, 1] > 0.9
    assert ours.sum() == pytest.approx(len(raw.mnar), rel=1e-3)
