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
    block_frames,
    draw_semireal,
    selection_exponent,
    semireal_propensities,
)
from debiaseval.datasets.build import build_dataset
from debiaseval.datasets.truth import full_propensities_of, full_rating_rows_of
from debiaseval.experiments.e1 import E1Truth, truth_step
from debiaseval.experiments.e5 import fully_exposed_frames
from debiaseval.io.errors import ConfigError
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


def test_known_propensities_are_the_draws_own(tiny_block: Path) -> None:
    """The known propensities of a seed of jester5k-semi (E1's ``known`` rows) are the exposure
    model of that seed's draw: at every logged and sampled pair, the propensity it was drawn
    with; a config with them on a dataset without an observation model is refused."""
    config = validate_config({"datasets": ["jester5k-semi"], "semireal": {"density": 0.5}})
    generator = seed_block(config, "jester5k-semi", 3)
    interactions = build_dataset("jester5k-semi", tiny_block, generator=generator)[0]
    matrix = full_propensities_of("jester5k-semi", generator, tiny_block)
    assert matrix.shape == (3, 4) and ((matrix > 0) & (matrix <= 1)).all()
    at = matrix[interactions["user"], interactions["item"]]
    assert np.allclose(at, interactions["propensity"].to_numpy(), rtol=1e-6)
    known = {"e1": {"estimators": {"S": {"estimator": "snips", "propensity": "known"}}}}
    validate_config({"datasets": ["jester5k-semi"], **known})
    with pytest.raises(ConfigError, match=r"e1\.estimators\.S\.propensity.*observation model"):
        validate_config({"datasets": ["coat"], **known})


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
    recs = pd.DataFrame(
        {"user": [0, 0, 1, 1, 2, 2], "item": [2, 1, 0, 2, 0, 3], "rank": [1, 2, 1, 2, 1, 2]}
    )
    table, per_user = truth_step(
        split,
        {"M": recs},
        E1Truth(ks=[1, 2], metrics=["recall", "precision"], positive_threshold=5.0),
        rating_rows=rows,
        raw_users=np.arange(3),
        raw_items=np.arange(4),
        seed=0,
    )
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
            "ks": [10],
            "metrics": ["recall"],
            "tuning": {"metric": "recall", "k": 10},
            "recommenders": {"Random": {"algorithm": "random"}, "PosPop": {"algorithm": "pospop"}},
            "kendall_exclude": ["Random"],
        },
    }
    out = api.run_e1("jester5k-semi", config)
    metrics = out["metrics"]
    true = metrics[metrics["testset"] == "TRUE"]
    assert sorted(true["seed"].unique()) == [0, 1] and len(true) == 4
    assert (true["n_users"] > 1_300).all()  # nearly every block user has a relevant candidate
    board = out["estimator_accuracy"]
    assert set(board["truth"]) == {"TRUE"} and set(board["draws"]) == {"independent"}
    assert "gt" in set(board["testset"])
    assert out["dropped"]["seed"].tolist().count(0) >= 1  # each seed's own draw


# --------------------------------------------------------------------------- E5 on the block


def test_the_block_is_e5s_fully_exposed_data(tiny_block: Path) -> None:
    """jester5k's fully observed block (u10, u12, u13 of tiny_block) as E5's fully exposed
    pairs: every cell once, contiguous ids mapping back to Jester5k's, the 0.00 kept."""
    inter, users, items = fully_exposed_frames("jester5k", tiny_block)
    assert len(inter) == 12 and set(inter["part"]) == {"full"}
    assert users["raw_user"].tolist() == [10, 12, 13] and items["raw_item"].tolist() == [1, 2, 3, 4]
    wide = inter.pivot(index="user", columns="item", values="rating").to_numpy()
    assert np.array_equal(
        wide, [[7.0, -2.0, 6.5, 0.0], [5.0, 5.5, -8.0, 8.25], [-3.0, 9.5, 6.0, 1.0]]
    )
    block = FullBlock(
        np.arange(6.0).reshape(2, 3), np.array([4, 9]), np.array([2, 5, 7]), JESTER_SCALE
    )
    pairs, users, items = block_frames(block)
    assert pairs[["user", "item"]].to_numpy().tolist() == [
        [0, 0],
        [0, 1],
        [0, 2],
        [1, 0],
        [1, 1],
        [1, 2],
    ]
    assert pairs["rating"].tolist() == [0, 1, 2, 3, 4, 5]
    assert users["raw_user"].tolist() == [4, 9] and items["raw_item"].tolist() == [2, 5, 7]


def test_e5_runs_on_jester5ks_block_with_tau_intervals(monkeypatch, tmp_path: Path) -> None:
    """E5 on Jester5k's real block (skips without the mirror): 1,473 users × 100 jokes exposed
    per seed, τ of both estimators against the true recall, with an interval over 5 seeds."""
    import os

    mirror = os.environ.get("DEBIASEVAL_MIRROR", "").strip()
    if not mirror or not (Path(mirror) / "jester5k" / JESTER5K_FILE).is_file():
        pytest.skip("DEBIASEVAL_MIRROR not set or without jester5k: the real block is not here")
    from debiaseval import api

    monkeypatch.setenv("DEBIASEVAL_DATA", str(tmp_path / "cache"))
    models = {
        "random": {"algorithm": "random"},
        "pospop": {"algorithm": "pospop"},
        "userknn": {"algorithm": "userknn", "grid": {"k": [5, 50]}},
    }
    out = api.run_e5("jester5k", {"seeds": 5, "e5": {"ks": [5, 10], "models": models}})
    agreement = out["agreement"]
    assert set(agreement["reference"]) == {"true_recall"} and len(agreement) == 4
    finite = agreement[np.isfinite(agreement["kendall_tau"])]
    assert len(finite) and (finite["tau_low"] <= finite["kendall_tau"] + 1e-12).all()
    assert (finite["tau_high"] >= finite["kendall_tau"] - 1e-12).all()
    per_seed = out["per_seed"]
    assert (per_seed["n_users_true"] > 1_000).all()  # nearly every block user has a positive
