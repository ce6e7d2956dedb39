"""E5's figures draw from its aggregated tables, with and without truth."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from debiaseval.experiments.e5.tables import agreement_table
from debiaseval.figures import e5

matplotlib.use("Agg", force=True)


def _estimates(truth: bool) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for k in (5, 10, 20):
        for model, params in (("pospop", "{}"), ("userknn", '{"k": 10}'), ("userknn", '{"k": 50}')):
            true = rng.random() * 0.3
            rows.append(
                {
                    "model": model,
                    "params": params,
                    "k": k,
                    "true_recall": true if truth else np.nan,
                    "traditional_recall": min(1.0, true * 3),
                    "ure": true + 0.01 * rng.standard_normal(),
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("truth", [True, False])
@pytest.mark.parametrize("name", sorted(e5.FIGURES))
def test_every_figure_draws(name, truth):
    est = _estimates(truth)
    tables = {"estimates": est, "agreement": agreement_table(est)}
    assert set(tables) == set(e5.TABLES)
    fig = e5.draw(name, tables, "synthetic")
    assert fig.axes


def test_unknown_figure():
    with pytest.raises(ValueError, match="no figure"):
        e5.draw("bars", {}, "synthetic")


def test_the_scatter_gives_every_model_its_own_colour():
    """Issue 43, case 19: the scatter took matplotlib's 10-colour cycle, so the 11th model
    repeated the first's colour; every model now has its own (the figures' shared palette)."""
    models = [f"m{j:02d}" for j in range(12)]
    est = pd.DataFrame(
        {
            "model": models,
            "params": "{}",
            "k": 10,
            "true_recall": np.linspace(0.1, 0.4, 12),
            "traditional_recall": np.linspace(0.2, 0.8, 12),
            "ure": np.linspace(0.1, 0.4, 12),
        }
    )
    fig = e5.draw("scatter", {"estimates": est, "agreement": agreement_table(est)}, "synthetic")
    for ax in fig.axes:
        colours = [tuple(c.get_facecolor()[0]) for c in ax.collections]
        assert len(colours) == 12 and len(set(colours)) == 12
