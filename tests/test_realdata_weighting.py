"""E1's weighting estimators on real Coat, from the local mirror ($DEBIASEVAL_MIRROR)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from debiaseval import api
from debiaseval.data import MIRROR_ENV

pytestmark = [pytest.mark.realdata, pytest.mark.slow]


def test_coat_estimator_rows_with_the_default_estimators(monkeypatch, tmp_path: Path) -> None:
    mirror = os.environ.get(MIRROR_ENV, "").strip()
    if not mirror or not (Path(mirror) / "coat").is_dir():
        pytest.skip(f"coat is not in the mirror ({MIRROR_ENV})")
    monkeypatch.setenv("DEBIASEVAL_DATA", str(tmp_path))  # the fetched copy, not the user's cache
    config = {
        "mirror": mirror,
        "e1": {
            "seeds": 2,
            "metrics": ["recall", "avgdcg"],
            "bootstrap": {"resamples": 0},
            "recommenders": {"Random": {"algorithm": "random"}, "PosPop": {"algorithm": "pospop"}},
        },
    }
    out = api.run_e1("coat", config)
    summary = out["summary"].set_index(["recommender", "testset", "metric"])["mean"]
    for name in ("SNIPS_WTD", "DR_POP"):  # the defaults
        assert np.isfinite(summary.xs(name, level="testset")).all()
    diagnostics = out["estimators_diagnostics"]
    assert (diagnostics.loc[diagnostics["estimator"] == "SNIPS_WTD", "n_left_out"] == 0).all()
    # PosPop's Recall@10 on the MNAR held-out part is far above gt's; SNIPS with the inverse
    # of WTD's weights takes most of the gap away (3 seeds: FULL 0.154, SNIPS_WTD 0.090, gt 0.065)
    gap = {
        t: abs(summary["PosPop", t, "recall"] - summary["PosPop", "gt", "recall"])
        for t in ("FULL", "SNIPS_WTD")
    }
    assert gap["SNIPS_WTD"] < gap["FULL"]
