"""Rating-aware popularity propensities (item popularity × P(O = 1 | rating)): their mass and
the candidate-rate imputation they feed, against a simulated world whose MAR rate is known."""

import numpy as np
import pandas as pd
import pytest

from debiaseval.debiasing.propensities import scaled
from debiaseval.debiasing.rating_popularity import rating_popularity
from debiaseval.estimation.arena import SplitParts, estimator_heldout, propensity_model

N_USERS, N_ITEMS = 400, 300
SELF_SELECTION = np.array([0.02, 0.06, 0.2, 0.7, 1.0])  # P(O | rating) up to a constant


def _world(seed: int) -> tuple[np.ndarray, pd.DataFrame]:
    """Ratings 1..5 of every pair (the item's quality plus noise), an MNAR sample observed
    with P = s · popularity_i · h(rating) (never capped at 1), split 60/40 into train and
    held-out, and a MAR part of 20 random items per user (``weights``)."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=N_ITEMS)[None, :] + rng.normal(scale=1.2, size=(N_USERS, N_ITEMS))
    ratings = 1 + np.searchsorted(np.quantile(latent, [0.45, 0.7, 0.85, 0.94]), latent)
    pop = rng.pareto(1.5, N_ITEMS) + 0.3
    pop = np.minimum(pop / pop.mean(), 3.0)
    p = 0.3 * pop[None, :] * SELF_SELECTION[ratings - 1]
    assert p.max() <= 1.0
    observed = rng.random(p.shape) < p
    users, items = np.nonzero(observed)
    mar_items = np.argsort(rng.random((N_USERS, N_ITEMS)), axis=1)[:, :20]
    mar_users = np.repeat(np.arange(N_USERS), 20)
    parts = np.where(rng.random(users.size) < 0.6, "train", "heldout")
    frame = pd.DataFrame(
        {
            "user": np.concatenate([users, mar_users]).astype(np.int32),
            "item": np.concatenate([items, mar_items.ravel()]).astype(np.int32),
            "rating": np.concatenate(
                [ratings[users, items], ratings[mar_users, mar_items.ravel()]]
            ).astype(np.float32),
            "part": np.concatenate([parts, np.full(mar_users.size, "weights")]),
        }
    )
    return ratings, frame


def _heldout(split: pd.DataFrame, propensity: str):
    return estimator_heldout(
        split,
        {"estimator": "dr", "propensity": propensity},
        seed=0,
        n_users=N_USERS,
        n_items=N_ITEMS,
        positive_threshold=3.0,
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_rating_aware_mass_matches_the_simulated_mar_rate(seed):
    """The imputed relevant mass Σ_u M_u against the exact count of relevant candidates of the
    simulated matrix, and against the count the MAR part implies: within 15% with rating-aware
    propensities, more than twice too large with item popularity alone (the rated-pair share)."""
    ratings, split = _world(seed)
    train = split[split["part"] == "train"]
    seen = np.zeros(ratings.shape, dtype=bool)
    seen[train["user"], train["item"]] = True
    exact = float(((ratings > 3) & ~seen).sum())
    held, _, ratio = _heldout(split, "popularity_nb")
    assert held.mass.sum() / exact == pytest.approx(1.0, abs=0.15)
    assert ratio == pytest.approx(1.0, abs=0.15)
    plain, _, plain_ratio = _heldout(split, "popularity")
    assert plain.mass.sum() / exact > 2.0 and plain_ratio > 2.0


def test_rating_aware_propensities_sum_to_the_held_out_size_over_the_candidates():
    """Σ_{u, i∈C_u} P_ui = |H| (in expectation over E1's split), computed with every candidate
    pair's true rating and the items' estimated rating mixes."""
    ratings, split = _world(2)
    parts = SplitParts(split)
    train, held = parts.train, parts.heldout
    model = propensity_model(
        split, {"propensity": "popularity_nb"}, n_users=N_USERS, n_items=N_ITEMS, parts=parts
    )
    seen = np.zeros(ratings.shape, dtype=bool)
    seen[train["user"], train["item"]] = True
    cu, ci = np.nonzero(~seen)
    candidates = pd.DataFrame({"user": cu, "item": ci, "rating": ratings[cu, ci].astype(float)})
    p, _ = scaled(
        model, candidates, train=train, n_pairs=len(held), n_observed=len(train) + len(held)
    )
    assert p.sum() / len(held) == pytest.approx(1.0, abs=0.05)


def test_without_a_mar_part_the_rating_marginal_is_uniform():
    """No MAR ratings: P(Y = r) is the Laplace prior, uniform, so h(r) ∝ the MNAR marginal (the
    stated assumption); the item factor counts every training pair."""
    _, split = _world(3)
    train = split[split["part"] == "train"]
    mnar = split[split["part"] != "weights"]["rating"]
    model = rating_popularity(train, mnar, np.empty(0), n_users=N_USERS, n_items=N_ITEMS)
    np.testing.assert_allclose(model.rating_prior, np.full(5, 0.2))
    marginal = (np.bincount(mnar.astype(int), minlength=6)[1:] + 1) / (len(mnar) + 5)
    np.testing.assert_allclose(model.rating / model.rating.sum(), marginal / marginal.sum())
    assert np.all(model.item > 0)
    with pytest.raises(ValueError, match="prior must be positive"):
        rating_popularity(train, mnar, np.empty(0), n_users=N_USERS, n_items=N_ITEMS, prior=0)
