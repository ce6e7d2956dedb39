"""Semi-real Jester (jester5k-semi): the synthetic observation model on a real fully observed
block (debiaseval.data.semireal), drawn per seed, and E1's exact TRUE row from the block.

The blocks are the tests' own: generated arrays, or tiny R data files (tests/jester_rda.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jester_rda import write_jester

from debiaseval.data.draws import per_seed_draws, seed_block
from debiaseval.data.jester import JESTER5K_FILE, JESTER_SCALE
from debiaseval.data.semireal import (
    FullBlock,
    draw_semireal,
    selection_exponent,
    semireal_propensities,
)
from debiaseval.datasets.build import build_dataset
from debiaseval.datasets.truth import full_rating_rows_of
from debiaseval.experiments.e1 import truth_step
from debiaseval.workflow.config import validate_config

NAN = np.nan


def _block(n_users: int = 600, n_items: int = 100, seed: int = 1) -> FullBlock:
    rng = np.random.default_rng(seed)
    ratings = np.round(rng.uniform(-10, 10, (n_users, n_items)), 2)
    users, items = np.arange(n_users) + 7, np.arange(n_items) + 1
    return FullBlock(ratings, users, items, JESTER_SCALE)


def test_selection_exponent_maps_jester_to_the_synthetic_stars() -> None:
    ratings = np.array([-10.0, -5.0, 0.0, 4.99, 5.0, 10.0])
    assert selection_exponent(ratings, JESTER_SCALE) == pytest.approx(
        [3.0, 2.0, 1.0, 0.002, 0.0, 0.0]
    )
    stars = np.arange(1.0, 6.0)  # on a 1..5 scale it is synthetic's max(0, 4 - Y)
    assert selection_exponent(stars, (1.0, 5.0)).tolist() == [3.0, 2.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("alpha", [0.1, 0.25, 1.0])
@pytest.mark.slow
def test_the_observation_rate_meets_its_target(alpha: float) -> None:
    """sum(P) is density · U · I exactly, and the MNAR draws' mean rate is within 4 standard
    errors of it; P grows with the rating and alpha = 1 is uniform."""
    block = _block()
    n_pairs = block.ratings.size
    rates = []
    for seed in range(5):
        draw = draw_semireal(block, alpha=alpha, density=0.2, n_mar=10, seed=seed)
        assert draw.propensities.sum() == pytest.approx(0.2 * n_pairs, rel=1e-9)
        rates.append(draw.observed.mean())
    spread = np.sqrt((draw.propensities * (1 - draw.propensities)).sum()) / n_pairs
    assert abs(np.mean(rates) - 0.2) < 4 * spread / np.sqrt(5)
    if alpha == 1.0:
        assert np.allclose(draw.propensities, 0.2)
    else:
        flat = np.ones(block.ratings.shape[1])
        p = semireal_propensities(block.ratings, flat, alpha=alpha, density=0.2, scale=JESTER_SCALE)
        order = np.argsort(block.ratings[:, 0])
        assert np.all(np.diff(p[order, 0]) >= 0)  # a better rating is never less likely seen


@pytest.mark.slow
def test_the_mar_sample_comes_from_the_unobserved_rest() -> None:
    block = _block()
    draw = draw_semireal(block, density=0.2, n_mar=10, seed=3)
    assert (draw.mar.sum(axis=1) == 10).all() and not (draw.mar & draw.observed).any()
    crowded = draw_semireal(block, density=0.95, n_mar=10, alpha=1.0, seed=3)
    left = (~crowded.observed).sum(axis=1)
    assert (crowded.mar.sum(axis=1) == np.minimum(10, left)).all()  # all the rest when fewer
    uniform = draw_semireal(block, density=0.2, n_mar=10, mar_from="all", seed=3)
    assert (uniform.mar.sum(axis=1) == 10).all() and (uniform.mar & uniform.observed).any()


@pytest.mark.slow
def test_the_real_block_observed_at_its_target(tmp_path: Path) -> None:
    """On Jester5k's block (skips without the mirror): the draw's rate is the density."""
    import os

    mirror = os.environ.get("DEBIASEVAL_MIRROR", "").strip()
    if not mirror or not (Path(mirror) / "jester5k" / JESTER5K_FILE).is_file():
        pytest.skip("DEBIASEVAL_MIRROR not set or without jester5k: the real block is not here")
    from debiaseval.data.jester import jester5k_block

    block = jester5k_block(Path(mirror) / "jester5k")
    assert block.ratings.shape == (1_473, 100) and not np.isnan(block.ratings).any()
    assert (block.ratings == 0.0).sum() == 423
    for alpha in (0.25, 1.0):
        rates = [draw_semireal(block, alpha=alpha, seed=s).observed.mean() for s in range(3)]
        assert np.mean(rates) == pytest.approx(0.2, abs=0.002)
    draw = draw_semireal(block, alpha=0.25, seed=0)
    logged = block.ratings[draw.observed]
    assert (logged > 5).mean() > 1.5 * (block.ratings > 5).mean()  # self-selection shows


# --------------------------------------------------------------------------- the dataset


@pytest.fixture
def tiny_block(tmp_path: Path) -> Path:
    """A Jester5k.rda with a block of 3 users × 4 jokes (u10, u12, u13) and a user u11 who
    rated two jokes; one 0.00 in the block."""
    ratings = np.array(
        [
            [7.0, -2.0, 6.5, 0.0],
            [NAN, 9.0, NAN, -1.0],
            [5.0, 5.5, -8.0, 8.25],
            [-3.0, 9.5, 6.0, 1.0],
        ]
    )
    folder = tmp_path / "jester5k"
    folder.mkdir()
    write_jester(folder / JESTER5K_FILE, ratings)
    return folder


def test_jester5k_semi_is_drawn_per_seed_from_the_block(tiny_block: Path) -> None:
    config = validate_config({"datasets": ["jester5k-semi"], "semireal": {"density": 0.5}})
    assert config["e1"]["datasets"] == ["jester5k-semi"] and per_seed_draws(config, "jester5k-semi")

    def draw(seed: int):
        return build_dataset(
            "jester5k-semi", tiny_block, generator=seed_block(config, "jester5k-semi", seed)
        )

    first, again, other = draw(0), draw(0), draw(1)
    for a, b in zip(first[:3], again[:3], strict=True):
        pd.testing.assert_frame_equal(a, b)
    interactions, users, items, _ = first
    assert users["source_user"].tolist() == [10, 12, 13]  # the block's users, not u11
    assert users["raw_user"].tolist() == [0, 1, 2] and items["source_item"].tolist() == [1, 2, 3, 4]
    assert set(interactions["part"]) == {"mnar", "mar"} and interactions["propensity"].notna().all()
    mnar = interactions[interactions["part"] == "mnar"]
    mar = interactions[interactions["part"] == "mar"]
    logged = mnar.groupby("user").size().reindex(range(3), fill_value=0)
    sampled = mar.groupby("user").size().reindex(range(3), fill_value=0)
    assert (sampled == 4 - logged).all()  # n_mar 10 > 4 jokes: all the unobserved rest
    block = np.array([[7.0, -2.0, 6.5, 0.0], [5.0, 5.5, -8.0, 8.25], [-3.0, 9.5, 6.0, 1.0]])
    ratings = interactions["rating"].to_numpy()
    assert (ratings == block[interactions["user"], interactions["item"]].astype(np.float32)).all()
    assert not interactions[["user", "item", "part"]].equals(other[0][["user", "item", "part"]])


def test_true_on_a_hand_built_block(tiny_block: Path) -> None:
    """TRUE on the 3 × 4 block: Rel_u = the jokes rated above 5.0 outside u's training pairs.

    Block (rows u10, u12, u13; jokes j1..j4):  u10  7.0 -2.0  6.5  0.0
                                               u12  5.0  5.5 -8.0  8.25
                                               u13 -3.0  9.5  6.0  1.0
    """
    rows = full_rating_rows_of("jester5k-semi", None, tiny_block)
    assert rows(np.array([2, 0]))[:, 1].tolist() == [9.5, -2.0]
    split = pd.DataFrame(
        {"user": [0, 1, 2], "item": [0, 3, 2], "rating": [7.0, 8.25, 6.0], "part": "train"}
    )
    # user 0 (u10): candidates j2..j4, relevant {j3}; user 1 (u12): j1..j3 (5.0 is not above
    # 5.0), relevant {j2}; user 2 (u13): j1, j2, j4, relevant {j2}
    recs = pd.DataFrame({"user": [0, 0, 1, 1, 2, 2], "item": [2, 1, 0, 2, 0, 3],
                         "rank": [1, 2, 1, 2, 1, 2]})  # fmt: skip
    table, per_user = truth_step(
        split, {"M": recs}, rating_rows=rows, raw_users=np.arange(3), raw_items=np.arange(4),
        seed=0, ks=[1, 2], metrics=["recall", "precision"], positive_threshold=5.0,
    )  # fmt: skip
    got = table.set_index(["metric", "k"])["value"]
    assert got.loc[("recall", 1)] == pytest.approx(1 / 3)  # only u10's first item is relevant
    assert got.loc[("recall", 2)] == pytest.approx(1 / 3)
    assert got.loc[("precision", 2)] == pytest.approx((1 / 2) / 3)
    assert table["n_test_pairs"].iloc[0] == 3 and (table["testset"] == "TRUE").all()
    assert set(per_user["user"]) == {0, 1, 2}


def test_naive_bayes_is_refused_on_continuous_ratings() -> None:
    from debiaseval.io.errors import ConfigError

    estimators = {"SNIPS_NB": {"estimator": "snips", "propensity": "naive_bayes"}}
    with pytest.raises(ConfigError, match=r"'e1.estimators.SNIPS_NB.propensity'.*continuous"):
        validate_config({"datasets": ["jester5k-semi"], "e1": {"estimators": estimators}})


@pytest.mark.slow
def test_e1_runs_on_semi_real_jester_in_process(monkeypatch, tmp_path: Path) -> None:
    """E1 on Jester5k's block with the mirror (skips without it): each seed its own exposure,
    the exact TRUE row from the block, gt scored against it."""
    import os

    mirror = os.environ.get("DEBIASEVAL_MIRROR", "").strip()
    if not mirror or not (Path(mirror) / "jester5k" / JESTER5K_FILE).is_file():
        pytest.skip("DEBIASEVAL_MIRROR not set or without jester5k: the real block is not here")
    from debiaseval import api

    monkeypatch.setenv("DEBIASEVAL_DATA", str(tmp_path / "cache"))
    config = {
        "seeds": 2,
        "e1": {
            "ks": [10], "metrics": ["recall"], "tuning": {"metric": "recall", "k": 10},
            "recommenders": {"Random": {"algorithm": "random"}, "PosPop": {"algorithm": "pospop"}},
            "kendall_exclude": ["Random"],
        },
    }  # fmt: skip
    out = api.run_e1("jester5k-semi", config)
    metrics = out["metrics"]
    true = metrics[metrics["testset"] == "TRUE"]
    assert sorted(true["seed"].unique()) == [0, 1] and len(true) == 4
    assert (true["n_users"] > 1_300).all()  # nearly every block user has a relevant candidate
    board = out["estimator_accuracy"]
    assert set(board["truth"]) == {"TRUE"} and set(board["draws"]) == {"independent"}
    assert "gt" in set(board["testset"])
    assert out["dropped"]["seed"].tolist().count(0) >= 1  # each seed's own draw
