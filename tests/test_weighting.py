"""Weighting estimators of ranking metrics (SNIPS, DR), their propensity models and imputations.

Synthetic worlds with known propensities and a known full truth: the estimates are compared
with the exact per-user metric over every candidate item, over many draws of the held-out part.
"""

import math

import numpy as np
import pandas as pd
import pytest

from debiaseval.debiasing.interventions import wtd_weights
from debiaseval.debiasing.propensities import (
    PropensityModel,
    as_model,
    naive_bayes,
    observation,
    popularity,
    scaled,
    wtd,
)
from debiaseval.estimation.diagnostics import weight_diagnostics
from debiaseval.estimation.heldout import gains, list_ranks, prepare
from debiaseval.estimation.imputation import ItemRate, Predicted, build_imputation, item_rate
from debiaseval.estimation.ranking_estimators import estimate
from debiaseval.estimation.weight_control import WeightControl
from debiaseval.evaluation.metrics import evaluate_topk

N_USERS, N_ITEMS, K = 200, 300, 10


def _frame(users, items, ratings):
    return pd.DataFrame(
        {
            "user": np.asarray(users, dtype=np.int32),
            "item": np.asarray(items, dtype=np.int32),
            "rating": np.asarray(ratings, dtype=np.float32),
        }
    )


def _recs_from_scores(scores: np.ndarray, train_mask: np.ndarray, k: int) -> pd.DataFrame:
    s = np.where(train_mask, -np.inf, scores)
    top = np.argsort(-s, axis=1, kind="stable")[:, :k]
    n_users = scores.shape[0]
    return pd.DataFrame(
        {
            "user": np.repeat(np.arange(n_users), k).astype(np.int32),
            "item": top.ravel().astype(np.int32),
            "rank": np.tile(np.arange(1, k + 1), n_users).astype(np.int16),
        }
    )


class World:
    """A full truth Y, a training part T and MNAR propensities P of the held-out part."""

    def __init__(self, seed: int = 0, *, scale: float = 1.0, positive_boost: float = 3.0):
        rng = np.random.default_rng(seed)
        self.rng = rng
        pop = rng.pareto(1.5, N_ITEMS) + 0.2
        self.pop = pop / pop.mean()
        affinity = rng.normal(size=(N_USERS, 4)) @ rng.normal(size=(4, N_ITEMS)) / 2
        self.q = 1 / (1 + np.exp(-(affinity + 0.8 * np.log(self.pop)[None, :] - 1.5)))
        self.y = rng.random((N_USERS, N_ITEMS)) < self.q
        self.train = rng.random((N_USERS, N_ITEMS)) < 0.04 * self.pop[None, :].clip(max=10)
        # observation depends on the pair's relevance probability q (MNAR: relevant pairs are
        # observed more often) but not on the draw y given q, so q is the right imputation
        base = 0.02 * self.pop[None, :].clip(0.5, 2) * (1.0 + positive_boost * self.q)
        self.p = np.clip(scale * base, 1e-4, 1.0)
        # the recommender scores q, not the draw y: given q, y is independent of the ranks
        noisy = self.q + rng.normal(scale=0.3, size=self.y.shape) + 0.05 * np.log(self.pop)
        self.recs = _recs_from_scores(noisy, self.train, K)
        tu, ti = np.nonzero(self.train)
        self.train_frame = _frame(tu, ti, np.where(self.y[tu, ti], 5.0, 1.0))

    def truth(self, metric: str = "recall", k: int = K) -> pd.Series:
        """Exact per-user metric over every candidate (non-training) item."""
        cu, ci = np.nonzero(self.y & ~self.train)
        full = _frame(cu, ci, np.full(cu.size, 5.0))
        values = evaluate_topk(self.recs, full, [k], n_items=N_ITEMS, metrics=[metric])
        return values.set_index("user")["value"]

    def heldout(self) -> pd.DataFrame:
        draw = (self.rng.random(self.p.shape) < self.p) & ~self.train
        hu, hi = np.nonzero(draw)
        return _frame(hu, hi, np.where(self.y[hu, hi], 5.0, 1.0))


def _bias(world, held, estimator, model, *, imputation=None, metric="recall", form="one_step"):
    p = None
    if model is not None:
        p, _ = scaled(model, held, train=world.train_frame, n_pairs=len(held))
    h = prepare(
        estimator,
        held,
        p,
        n_users=N_USERS,
        positive_threshold=3.0,
        imputation=imputation,
        train=world.train_frame,
        form=form,
    )
    per_user, _ = estimate(h, world.recs, ks=[K], metrics=[metric], n_items=N_ITEMS)
    est = per_user.set_index("user")["value"]
    truth = world.truth(metric)
    common = est.index.intersection(truth.index)
    return float(est[common].mean() - truth[common].mean())


def _mean_bias(
    estimator, model_of, *, draws=12, scale=1.0, imputation_of=None, seed=0, form="one_step"
):
    world = World(seed, scale=scale)
    out = []
    for _ in range(draws):
        held = world.heldout()
        imp = None if imputation_of is None else imputation_of(world)
        out.append(_bias(world, held, estimator, model_of(world), imputation=imp, form=form))
    return float(np.mean(out))


def _true(world):
    return PropensityModel(N_USERS, N_ITEMS, matrix=world.p)


def _uniform(world):
    return PropensityModel(N_USERS, N_ITEMS)


def _right_imputation(world):
    q = world.q
    return Predicted(lambda u, i: q[u, i], lambda users: q[users], lambda s: s)


def _wrong_imputation(world):
    # the items' mean relevance rates, dealt to the wrong items
    return ItemRate(np.random.default_rng(1).permutation(world.q.mean(axis=0)))


# -- hand-computed small cases -------------------------------------------------------------


def _small():
    # 2 users, 6 items; user 0 trained on item 5, user 1 on item 0.
    train = _frame([0, 1], [5, 0], [5, 5])
    recs = pd.DataFrame({"user": [0, 0, 1, 1], "item": [0, 1, 1, 2], "rank": [1, 2, 1, 2]})
    held = _frame([0, 0, 0, 1, 1], [0, 2, 3, 2, 4], [5, 4, 1, 5, 2])
    p = np.array([0.5, 0.25, 0.5, 0.2, 0.4])
    return train, recs, held, p


def test_snips_hand_computed():
    _train, recs, held, p = _small()
    h = prepare("snips", held, p, n_users=2, positive_threshold=3.0)
    per_user, counts = estimate(h, recs, ks=[2], metrics=["recall", "avgdcg"], n_items=6)
    # user 0: positives item 0 (rank 1, w 2) and item 2 (not listed, w 4) -> 2 / 6
    # user 1: positive item 2 (rank 2, w 5) -> 1; avgdcg: 1/log2(3)
    np.testing.assert_allclose(per_user["value"], [2 / 6, 1.0, 2 / 6, 1 / math.log2(3)])
    assert per_user["metric"].tolist() == ["recall", "recall", "avgdcg", "avgdcg"]
    assert counts["n_users"].tolist() == [2, 2] and counts["n_negative"].tolist() == [0, 0]
    diag = weight_diagnostics(h)
    # ESS of user 0: (2+4)^2/(4+16) = 1.8; user 1: 1
    assert diag["ess_mean"] == pytest.approx(1.4) and diag["ess_min"] == pytest.approx(1.0)
    assert diag["max_weight_share"] == pytest.approx(5 / 11)


def test_naive_is_the_full_test_set_value():
    _train, recs, held, _ = _small()
    h = prepare("naive", held, None, n_users=2, positive_threshold=3.0)
    per_user, _ = estimate(h, recs, ks=[2], metrics=["recall"], n_items=6)
    plain = evaluate_topk(recs, held, [2], n_items=6, metrics=["recall"])
    np.testing.assert_allclose(per_user["value"], plain["value"])


RATES = np.array([0.5, 0.1, 0.2, 0.3, 0.4, 0.6])


def test_dr_one_step_hand_computed():
    """m̂_u = ψ_u + (1/M_u) Σ_{H_u} w (c − ψ_u)(y − r̂), ψ_u = Σ_{C_u} c r̂ / M_u."""
    train, recs, held, p = _small()
    h = prepare(
        "dr", held, p, n_users=2, positive_threshold=3.0, imputation=ItemRate(RATES), train=train
    )
    per_user, counts = estimate(h, recs, ks=[2], metrics=["recall"], n_items=6)
    # user 0: candidates 0..4, M = 1.5; top-2 items 0, 1: ψ = (.5 + .1) / 1.5 = .4
    #   held: item 0 (c 1, y 1, r̂ .5, w 2): 2 (1 − .4)(.5) = .6
    #         item 2 (c 0, y 1, r̂ .2, w 4): 4 (−.4)(.8) = −1.28
    #         item 3 (c 0, y 0, r̂ .3, w 2): 2 (−.4)(−.3) = .24   -> .4 + (−.44) / 1.5
    # user 1: candidates 1..5, M = 1.6; top-2 items 1, 2: ψ = .3 / 1.6 = .1875
    #   held: item 2 (c 1, y 1, r̂ .2, w 5): 5 (.8125)(.8) = 3.25
    #         item 4 (c 0, y 0, r̂ .4, w 2.5): 2.5 (−.1875)(−.4) = .1875 -> .1875 + 3.4375 / 1.6
    np.testing.assert_allclose(per_user["value"], [0.4 - 0.44 / 1.5, 0.1875 + 3.4375 / 1.6])
    assert counts.loc[0, "n_left_out"] == 0 and counts.loc[0, "n_above_one"] == 1


def test_dr_ratio_hand_computed():
    train, recs, held, p = _small()
    h = prepare(
        "dr",
        held,
        p,
        n_users=2,
        positive_threshold=3.0,
        imputation=ItemRate(RATES),
        train=train,
        form="ratio",
    )
    per_user, counts = estimate(h, recs, ks=[2], metrics=["recall"], n_items=6)
    # user 0: candidates 0..4, Σ r̂ = 1.5; corrections (y - r̂)/P: item 0 (1-.5)/.5 = 1,
    # item 2 (1-.2)/.25 = 3.2, item 3 (0-.3)/.5 = -.6 -> D = 1.5 + 3.6 = 5.1;
    # N: top-2 items 0, 1 imputed .5 + .1, plus item 0's correction 1 -> 1.6
    # user 1: candidates 1..5, Σ r̂ = 1.6; item 2 (1-.2)/.2 = 4, item 4 (0-.4)/.4 = -1
    # -> D = 4.6; N: items 1, 2 imputed .1 + .2, plus item 2's correction 4 -> 4.3
    np.testing.assert_allclose(per_user["value"], [1.6 / 5.1, 4.3 / 4.6])
    assert counts.loc[0, "n_left_out"] == 0


def test_dr_ratio_leaves_out_users_without_mass_and_one_step_without_imputed_mass():
    train, recs, held, p = _small()
    h = prepare(
        "dr",
        held,
        p,
        n_users=2,
        positive_threshold=3.0,
        imputation=ItemRate(np.zeros(6)),
        train=train,
        form="ratio",
    )
    per_user, _counts = estimate(h, recs, ks=[2], metrics=["recall"], n_items=6)
    # zero imputation: the ratio form is SNIPS on the positives
    np.testing.assert_allclose(per_user["value"], [2 / 6, 1.0])
    one_step = prepare(
        "dr",
        held,
        p,
        n_users=2,
        positive_threshold=3.0,
        imputation=ItemRate(np.zeros(6)),
        train=train,
    )
    values, counts = estimate(one_step, recs, ks=[2], metrics=["recall"], n_items=6)
    assert values.empty and counts.loc[0, "n_left_out"] == 2  # M_u = 0: no direct method
    # a large weight on a negative pair takes user 0's D_u below 0: left out, and counted
    held2 = _frame([0, 0, 1], [0, 3, 2], [5, 1, 5])
    h3 = prepare(
        "dr",
        held2,
        np.array([0.5, 0.02, 0.5]),
        n_users=2,
        positive_threshold=3.0,
        imputation=ItemRate(np.full(6, 0.1)),
        train=train,
        form="ratio",
    )
    per_user3, counts3 = estimate(h3, recs, ks=[2], metrics=["recall"], n_items=6)
    assert per_user3["user"].tolist() == [1] and counts3.loc[0, "n_left_out"] == 1


def test_gains_and_ranks():
    np.testing.assert_allclose(gains("avgdcg", np.array([0, 1, 3, 11]), 10), [0, 1, 0.5, 0])
    with pytest.raises(ValueError, match="not estimated by weighting"):
        gains("ndcg", np.array([1]), 10)
    recs = pd.DataFrame({"user": [0, 0, 1], "item": [4, 2, 4], "rank": [1, 2, 1]})
    np.testing.assert_array_equal(
        list_ranks(recs, np.array([0, 0, 1, 1]), np.array([2, 4, 2, 4]), n_items=5, depth=1),
        [0, 1, 0, 1],
    )


# -- consistency and double robustness over many draws --------------------------------------


def test_snips_is_consistent_and_beats_naive():
    """SNIPS Recall@10 with the true propensities: |bias| shrinks as H grows (about 6, 19
    and 37 held-out pairs per user); within 0.03 at the largest, where Naive is off by
    more than 4 times as much."""
    biases = [abs(_mean_bias("snips", _true, scale=s)) for s in (1.0, 3.0, 6.0)]
    naive = abs(_mean_bias("naive", lambda w: None, scale=6.0))
    assert biases[0] > biases[1] > biases[2]
    assert biases[2] < 0.03
    assert naive > 4 * biases[2]


def test_dr_is_doubly_robust():
    """DR Recall@10 at about 60 held-out pairs per user: the true propensities with a wrong
    imputation, or uniform propensities with the right imputation, are within 0.02 of the
    truth; both wrong is off by more than 0.05 and 3 times either."""
    kw = {"scale": 10.0}
    right_p_wrong_imp = _mean_bias("dr", _true, imputation_of=_wrong_imputation, **kw)
    wrong_p_right_imp = _mean_bias("dr", _uniform, imputation_of=_right_imputation, **kw)
    both_wrong = _mean_bias("dr", _uniform, imputation_of=_wrong_imputation, **kw)
    assert abs(right_p_wrong_imp) < 0.02
    assert abs(wrong_p_right_imp) < 0.02
    assert abs(both_wrong) > 0.05
    assert abs(both_wrong) > 3 * max(abs(right_p_wrong_imp), abs(wrong_p_right_imp))


def _scaled_imputation(factor):
    def build(world):
        q = factor * world.q
        return Predicted(lambda u, i: q[u, i], lambda users: q[users], lambda s: s)

    return build


def test_dr_one_step_bias_is_a_product_of_the_imputations_two_errors():
    """With the true propensities, the one-step form's bias is (ψ_u − m_u)(1 − B_u/M_u): an
    imputation whose ratio is right (r̂ ∝ P(y = 1)) but whose mass is 2.5 times too small is
    unbiased; one whose ratio and mass are both wrong (the items' rates dealt to the wrong
    items, scaled as much) is not."""
    kw = {"scale": 10.0}
    right_ratio = _mean_bias("dr", _true, imputation_of=_scaled_imputation(0.4), **kw)

    def wrong_both(world):
        return ItemRate(0.4 * _wrong_imputation(world).rates)

    wrong = _mean_bias("dr", _true, imputation_of=wrong_both, **kw)
    assert abs(right_ratio) < 0.015
    assert abs(wrong) > 0.04 and abs(wrong) > 3 * abs(right_ratio)


def test_dr_chooses_its_weight_control_from_the_data_and_records_it():
    """One held-out negative of weight 10,000 in a user's list drags DR's correction: the
    estimated-MSE rule switches it off (a finite τ, recorded), and a fixed threshold is used
    as given."""
    world = World(7, scale=3.0)
    held = world.heldout()
    p, _ = scaled(_true(world), held, train=world.train_frame, n_pairs=len(held))
    pairs = held.reset_index(drop=True)
    row = int(np.flatnonzero(pairs["rating"].to_numpy() < 3)[0])
    user = int(pairs.loc[row, "user"])
    recs = pd.concat(
        [
            world.recs[world.recs["user"] != user],
            pd.DataFrame({"user": [user], "item": [int(pairs.loc[row, "item"])], "rank": [1]}),
        ],
        ignore_index=True,
    )
    p = p.copy()
    p[row] = 1e-4
    h = prepare(
        "dr",
        held,
        p,
        n_users=N_USERS,
        positive_threshold=3.0,
        imputation=ItemRate(world.q.mean(axis=0)),
        train=world.train_frame,
    )
    plain, plain_counts = estimate(h, recs, ks=[K], metrics=["recall"], n_items=N_ITEMS)
    auto, counts = estimate(
        h, recs, ks=[K], metrics=["recall"], n_items=N_ITEMS, control=WeightControl("switch")
    )
    assert np.isinf(plain_counts.loc[0, "control_value"])
    assert counts.loc[0, "weight_control"] == "switch"
    assert np.isfinite(counts.loc[0, "control_value"])
    value = plain.set_index("user")["value"]
    assert value[user] < -10  # the heavy pair's correction, unchecked
    assert auto.set_index("user")["value"][user] > -1
    _, fixed_counts = estimate(
        h, recs, ks=[K], metrics=["recall"], n_items=N_ITEMS, control=WeightControl("clip", 50.0)
    )
    assert fixed_counts.loc[0, "control_value"] == 50.0


def test_dr_with_item_rate_imputation_and_model_imputation_run_and_are_close():
    world = World(1, scale=10.0)
    held = world.heldout()
    tr = world.train_frame
    # the training pairs' inclusion probabilities: World draws them with 0.04 · pop (pop ≤ 10)
    p_train = 0.04 * world.pop.clip(max=10)[tr["item"].to_numpy()]
    for name in ("item_rate", "candidate_rate", "logistic_mf"):
        imp = build_imputation(
            name,
            world.train_frame,
            p_train,
            n_users=N_USERS,
            n_items=N_ITEMS,
            positive_threshold=3.0,
            seed=0,
        )
        assert abs(_bias(world, held, "dr", _true(world), imputation=imp)) < 0.1


def test_item_rate_recovers_item_rates_under_known_propensities():
    rng = np.random.default_rng(3)
    rate = rng.uniform(0.1, 0.9, 50)
    y = rng.random((2000, 50)) < rate
    p = np.where(y, 0.3, 0.05)
    obs = rng.random(y.shape) < p
    u, i = np.nonzero(obs)
    train = _frame(u, i, np.where(y[u, i], 5.0, 1.0))
    fitted = item_rate(train, p[u, i], n_users=2000, n_items=50, positive_threshold=3.0)
    error = np.abs(fitted.rates - rate)
    assert error.mean() < 0.04 and error.max() < 0.12
    naive = item_rate(train, np.ones(u.size), n_users=2000, n_items=50, positive_threshold=3.0)
    assert np.abs(naive.rates - rate).mean() > 3 * error.mean()


def test_imputation_candidate_mass_matches_dense_sum():
    world = World(2)
    rates = world.rng.random(N_ITEMS)
    dense = np.where(world.train, 0.0, rates[None, :]).sum(axis=1)
    tr = world.train_frame
    np.testing.assert_allclose(
        ItemRate(rates).candidate_mass(tr["user"], tr["item"], N_USERS), dense
    )
    pred = Predicted(
        lambda u, i: world.q[u, i], lambda users: world.q[users], lambda s: s, batch_size=7
    )
    np.testing.assert_allclose(
        pred.candidate_mass(tr["user"], tr["item"], N_USERS),
        np.where(world.train, 0.0, world.q).sum(axis=1),
    )


# -- propensity models: scaling and recovery ---------------------------------------------------


def test_candidate_mass_matches_a_dense_sum_for_factorised_models():
    world = World(4)
    f, g = world.rng.random(N_USERS) + 0.1, world.rng.random(N_ITEMS) + 0.1
    tr = world.train_frame
    dense = np.outer(f, g)
    expected = dense[~world.train].sum()
    model = PropensityModel(N_USERS, N_ITEMS, user=f, item=g)
    assert model.candidate_mass(tr["user"], tr["item"]) == pytest.approx(expected)
    m = world.p
    with_matrix = PropensityModel(N_USERS, N_ITEMS, user=f, matrix=m)
    expected = (f[:, None] * m)[~world.train].sum()
    assert with_matrix.candidate_mass(tr["user"], tr["item"]) == pytest.approx(expected)


def test_scaled_propensities_sum_to_the_held_out_size_and_clip():
    world = World(5)
    held = world.heldout()
    model = PropensityModel(N_USERS, N_ITEMS, matrix=world.p * 7.0)
    p, factor = scaled(model, held, train=world.train_frame, n_pairs=len(held))
    # the true P already sums to E|H| over the candidates: the scale undoes the 7
    assert factor * 7.0 == pytest.approx(1.0, rel=0.05)
    floored, _ = scaled(model, held, train=world.train_frame, n_pairs=len(held), floor=0.05)
    assert floored.min() >= 0.05 and np.all(floored >= p)


def test_known_recovers_the_generating_propensities():
    world = World(6)
    held = world.heldout()
    rows = np.indices((N_USERS, N_ITEMS)).reshape(2, -1)
    table = pd.DataFrame({"user": rows[0], "item": rows[1], "propensity": world.p.ravel()})
    model = as_model(table, n_users=N_USERS, n_items=N_ITEMS)
    p, _ = scaled(model, held, train=world.train_frame, n_pairs=len(held))
    truth = world.p[held["user"], held["item"]]
    np.testing.assert_allclose(p, truth, rtol=0.05)
    with pytest.raises(ValueError, match="need every pair"):
        as_model(table.iloc[:10], n_users=N_USERS, n_items=N_ITEMS)


def test_naive_bayes_model_recovers_rating_propensities():
    rng = np.random.default_rng(7)
    n_users, n_items = 400, 300
    y = rng.choice([1, 2, 3, 4, 5], p=[0.3, 0.25, 0.2, 0.15, 0.1], size=(n_users, n_items))
    true = np.array([0.005, 0.01, 0.02, 0.06, 0.12])
    obs = rng.random(y.shape) < true[y - 1]
    u, i = np.nonzero(obs)
    mar = rng.choice(y.ravel(), 5000)
    table = naive_bayes(y[u, i], mar, n_users=n_users, n_items=n_items)
    model = as_model(table, n_users=n_users, n_items=n_items)
    held = _frame(u, i, y[u, i])
    empty = _frame([], [], [])
    p, _ = scaled(model, held, train=empty, n_pairs=len(held))
    np.testing.assert_allclose(p, true[y[u, i] - 1], rtol=0.2)


@pytest.mark.parametrize("gamma", [0.5, 1.0, 1.5])
def test_popularity_model_recovers_its_power_law(gamma):
    """Held-out pairs drawn with P_ui = c · n_i^γ (n_i = training count): the popularity
    model with exponent γ, scaled to |H|, gives back P."""
    rng = np.random.default_rng(8)
    n_users, n_items = 3000, 200
    train = rng.random((n_users, n_items)) < rng.uniform(0.01, 0.3, n_items)[None, :]
    counts = train.sum(axis=0)
    p_item = 0.2 * (counts / counts.max()) ** gamma
    held = (rng.random(train.shape) < p_item[None, :]) & ~train
    tu, ti = np.nonzero(train)
    hu, hi = np.nonzero(held)
    train_f, held_f = _frame(tu, ti, np.ones(tu.size)), _frame(hu, hi, np.ones(hu.size))
    table = popularity(train_f, n_users=n_users, n_items=n_items, smoothing=0.0, exponent=gamma)
    model = as_model(table, n_users=n_users, n_items=n_items)
    p, _ = scaled(model, held_f, train=train_f, n_pairs=len(held_f))
    np.testing.assert_allclose(p, p_item[hi], rtol=0.03)
    base = popularity(train_f, n_users=n_users, n_items=n_items)
    powered = popularity(train_f, n_users=n_users, n_items=n_items, exponent=gamma)
    np.testing.assert_allclose(powered["propensity"], base["propensity"] ** gamma)


def test_wtd_propensities_are_the_inverse_of_the_wtd_weights():
    rng = np.random.default_rng(9)
    n_users, n_items = 50, 40
    tr = (rng.integers(0, n_users, 800), rng.integers(0, n_items, 800))
    mar = (rng.integers(0, n_users, 300), rng.integers(0, n_items, 300))
    space = (rng.integers(0, n_users, 200), rng.integers(0, n_items, 200))
    kw = dict(
        n_users=n_users,
        n_items=n_items,
        reference_users=tr[0],
        reference_items=tr[1],
        mar_users=mar[0],
        mar_items=mar[1],
        smoothing=1.0,
    )
    weights = wtd_weights(space[0], space[1], **kw)
    model = wtd(**kw)
    np.testing.assert_allclose(model.pairs(space[0], space[1]) * weights, 1.0)
    with pytest.raises(ValueError, match="smoothing > 0"):
        wtd(**{**kw, "mar_users": mar[0][:5], "mar_items": mar[1][:5], "smoothing": 0.0})
    uniform = wtd(**{**kw, "mar_users": None, "mar_items": None})
    assert np.all(np.isfinite(uniform.pairs(space[0], space[1])))


# -- E1's split: the default synthetic generator, known propensities, exact truth -------------


def _e1_arena(n_splits: int = 10):
    """Bias of Recall@10 against the exact truth over ``n_splits`` random 60/40 splits of the
    default synthetic MNAR sample, as E1 draws them, for four scorers (Random, popularity,
    positive popularity, a noisy truth): estimator -> scorer -> mean bias."""
    from debiaseval.data.splits import assign_parts
    from debiaseval.data.synthetic import generate_synthetic
    from debiaseval.estimation.arena import estimator_heldout

    data = generate_synthetic()
    y, truth_p = data.ratings, data.propensities.astype(np.float64)
    n_users, n_items = y.shape
    mnar = data.mnar_frame().drop(columns="propensity")
    specs = {
        "naive": {"estimator": "naive"},
        "snips": {"estimator": "snips", "propensity": "known"},
        "dr": {"estimator": "dr", "propensity": "known", "imputation": "candidate_rate"},
    }
    bias = {name: {} for name in specs}
    for seed in range(n_splits):
        rng = np.random.default_rng(seed)
        split = mnar.assign(part=assign_parts(len(mnar), {"train": 0.6, "heldout": 0.4}, rng))
        train = split[split["part"] == "train"]
        seen = np.zeros(y.shape, dtype=bool)
        seen[train["user"], train["item"]] = True
        counts = np.bincount(train["item"], minlength=n_items).astype(np.float64)
        positives = np.bincount(train["item"], weights=train["rating"] > 3, minlength=n_items)
        jitter = rng.random(y.shape) * 1e-3
        scorers = {
            "Random": rng.random(y.shape),
            "Pop": counts[None, :] + jitter,
            "PosPop": positives[None, :] + jitter,
            "Noisy": y + rng.normal(scale=1.5, size=y.shape),
        }
        cu, ci = np.nonzero((y > 3) & ~seen)
        full = _frame(cu, ci, np.full(cu.size, 5.0))
        helds = {
            name: estimator_heldout(
                split,
                spec,
                seed=seed,
                n_users=n_users,
                n_items=n_items,
                positive_threshold=3.0,
                truth=truth_p,
            )[0]
            for name, spec in specs.items()
        }
        for scorer, scores in scorers.items():
            s = np.where(seen, -np.inf, scores)
            top = np.argsort(-s, axis=1, kind="stable")[:, :K]
            recs = pd.DataFrame(
                {
                    "user": np.repeat(np.arange(n_users), K).astype(np.int32),
                    "item": top.ravel().astype(np.int32),
                    "rank": np.tile(np.arange(1, K + 1), n_users).astype(np.int16),
                }
            )
            truth = evaluate_topk(recs, full, [K], n_items=n_items, metrics=["recall"])
            for name, held in helds.items():
                values, _ = estimate(held, recs, ks=[K], metrics=["recall"], n_items=n_items)
                error = values["value"].mean() - truth["value"].mean()
                bias[name][scorer] = bias[name].get(scorer, 0.0) + error / n_splits
    return bias


@pytest.fixture(scope="module")
def e1_arena():
    return _e1_arena()


def test_known_propensities_are_conditioned_on_e1s_split(e1_arena):
    """The calibration run (default synthetic, known propensities, 10 splits): FULL's mean
    |bias| of Recall@10 is about .15; SNIPS and DR with the true propensities, conditioned on
    the random train/held-out split, stay well below it (DR's one-step form with the
    candidate-rate imputation: .006, every scorer within .01). Unconditioned (P ∝ p, the
    generator's observation probability) SNIPS keeps +.13 on the popularity scorers."""
    mean_abs = {name: np.mean(np.abs(list(b.values()))) for name, b in e1_arena.items()}
    assert mean_abs["naive"] > 0.12
    assert mean_abs["dr"] <= 0.015
    assert all(abs(b) <= 0.02 for b in e1_arena["dr"].values()), e1_arena["dr"]
    assert mean_abs["snips"] <= 0.05
    assert all(abs(b) <= 0.1 for b in e1_arena["snips"].values()), e1_arena["snips"]


def test_split_conditioning_of_held_out_propensities():
    """P(in H | candidate) = h·p / (1 − (1 − h)·p): a pair observed for sure (p = 1) is in H
    with probability 1 given that it is not in the training part."""
    n_users, n_items = 4, 5
    matrix = np.full((n_users, n_items), 0.1)
    matrix[0, 0] = 1.0
    model = PropensityModel(n_users, n_items, matrix=matrix)
    pairs = _frame([0, 1], [0, 1], [5.0, 5.0])
    total = matrix.sum()  # = 2.9: scaled to a sample of 2.9 pairs, p is the matrix itself
    p_obs, factor = observation(model, pairs, n_observed=2.9)
    np.testing.assert_allclose(p_obs, [1.0, 0.1])
    assert factor == pytest.approx(2.9 / total)
    p, _ = scaled(model, pairs, train=pairs.iloc[:0], n_pairs=1.16, n_observed=2.9)
    h = 0.4
    np.testing.assert_allclose(p, [1.0, h * 0.1 / (1 - (1 - h) * 0.1)])
    with pytest.raises(ValueError, match="non-empty part of the MNAR sample"):
        scaled(model, pairs, train=pairs.iloc[:0], n_pairs=5, n_observed=2.9)


def test_candidate_rate_recovers_the_relevance_rate_among_candidates():
    """With the true inclusion probabilities, candidate_rate estimates an item's positive rate
    among the pairs outside the training part without bias; item_rate, a ratio over the
    observed pairs, is pulled up where the observed negatives are few and heavily weighted."""
    rng = np.random.default_rng(3)
    n_users, n_items = 2000, 50
    rate = rng.uniform(0.05, 0.5, n_items)
    y = rng.random((n_users, n_items)) < rate
    pi = np.where(y, 0.4, 0.01)
    obs = rng.random(y.shape) < pi
    u, i = np.nonzero(obs)
    train = _frame(u, i, np.where(y[u, i], 5.0, 1.0))
    target = (y & ~obs).sum(axis=0) / (~obs).sum(axis=0)
    fitted = build_imputation(
        "candidate_rate", train, pi[u, i], n_users=n_users, n_items=n_items, positive_threshold=3.0
    )
    error = np.abs(fitted.rates - target)
    assert error.mean() < 0.04 and abs(np.mean(fitted.rates - target)) < 0.01
    ratio = item_rate(train, pi[u, i], n_users=n_users, n_items=n_items, positive_threshold=3.0)
    assert np.mean(ratio.rates - target) > 3 * abs(np.mean(fitted.rates - target))
    with pytest.raises(ValueError, match="inclusion probabilities"):
        build_imputation(
            "candidate_rate",
            train,
            pi[u, i] * 10,
            n_users=n_users,
            n_items=n_items,
            positive_threshold=3.0,
        )


# -- shared work across a seed's estimators (docs/performance.md) ------------------------------


def _e1_split(seed: int = 0) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """A random E1-like split (MNAR train/heldout, MAR gt/val/weights; extra columns, a string
    ``part``) and three recommenders' lists, one with short and missing lists."""
    rng = np.random.default_rng(seed)
    n_users, n_items = 60, 80
    cells = rng.choice(n_users * n_items, size=1500, replace=False)
    users, items = np.divmod(cells, n_items)
    parts = rng.choice(
        ["train", "heldout", "gt", "val", "weights"],
        size=cells.size,
        p=[0.45, 0.3, 0.15, 0.05, 0.05],
    )
    split = pd.DataFrame(
        {
            "user": users.astype(np.int32),
            "item": items.astype(np.int32),
            "rating": rng.integers(1, 6, cells.size).astype(np.float32),
            "part": pd.Series(parts, dtype="str"),
            "propensity": rng.random(cells.size),
        }
    )
    seen = np.zeros((n_users, n_items), dtype=bool)
    train = split[split["part"] == "train"]
    seen[train["user"], train["item"]] = True
    recs = {name: _recs_from_scores(rng.random((n_users, n_items)), seen, K) for name in "ABC"}
    short = recs["C"]
    recs["C"] = short[(short["user"] % 7 != 0) & ((short["user"] % 5 != 0) | (short["rank"] < 4))]
    return split, recs


def test_split_parts_select_the_rows_of_each_part():
    from debiaseval.estimation.arena import SplitParts

    split, _ = _e1_split()
    parts = SplitParts(split)
    columns = ["user", "item", "rating"]
    for part in ("train", "heldout", "weights"):
        expected = split.loc[split["part"] == part, columns].reset_index(drop=True)
        pd.testing.assert_frame_equal(parts.frame(part), expected)
        assert parts.frame(part) is parts.frame(part)  # selected once
    mnar = split.loc[split["part"].isin(["train", "heldout"]), columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(parts.mnar, mnar)
    pd.testing.assert_frame_equal(parts.train, parts.frame("train"))
    # the caller's training part is taken as it is (not selected again), and gives the same
    selected = split[split["part"] == "train"]
    given = SplitParts(split, train=selected)
    assert not given._rows  # no comparison of the part column
    pd.testing.assert_frame_equal(given.train, parts.train)
    assert np.shares_memory(given.train["item"].to_numpy(), selected["item"].to_numpy())
    pd.testing.assert_frame_equal(given.mnar, mnar)


def test_member_is_isin():
    from debiaseval.estimation.heldout import member as _member

    rng = np.random.default_rng(3)
    ids = rng.integers(0, 50, 400)
    chosen = np.unique(rng.integers(0, 40, 15))
    np.testing.assert_array_equal(_member(ids, chosen, 40), np.isin(ids, chosen))
    assert _member(ids[:0], chosen, 40).shape == (0,)


def test_shared_parts_and_ranks_give_the_per_estimator_values():
    """evaluate_estimators selects the split's parts once, fits each propensity model once and
    looks up each recommender's ranks once: exactly the values (per user, diagnostics, means)
    of every estimator prepared alone from the split and estimated with its own rank look-up."""
    from debiaseval.estimation.arena import estimator_heldout, evaluate_estimators
    from debiaseval.evaluation.metrics import summarise

    split, recs = _e1_split()
    n_users, n_items = 60, 80
    specs = {
        "NAIVE": {"estimator": "naive"},
        "SNIPS_WTD": {"estimator": "snips", "propensity": "wtd"},
        "SNIPS_NB": {"estimator": "snips", "propensity": "naive_bayes", "clip": 0.05},
        "DR_POP": {"estimator": "dr", "propensity": "popularity", "imputation": "item_rate"},
        "DR_WTD": {
            "estimator": "dr",
            "propensity": "wtd",
            "mar_posterior": "uniform",
            "imputation": "candidate_rate",
        },
        "DR_POP2": {
            "estimator": "dr",
            "propensity": "popularity",
            "gamma": 0.5,
            "imputation": "item_rate",
        },
    }
    sizes = {"n_users": n_users, "n_items": n_items, "positive_threshold": 3.0}
    ks, metrics = [5, 10], ["recall", "avgdcg"]
    out = evaluate_estimators(split, recs, specs, seed=4, ks=ks, metrics=metrics, **sizes)
    table, per_user, diagnostics = out.table, out.per_user, out.diagnostics
    assert list(per_user) == list(recs)
    assert table[["recommender", "testset"]].values.tolist() == [
        [rec, name] for rec in recs for name in specs for _ in range(len(ks) * len(metrics))
    ]
    assert diagnostics[["estimator", "recommender"]].values.tolist() == [
        [name, rec] for name in specs for rec in recs for _ in range(len(ks) * len(metrics))
    ]
    for name, spec in specs.items():
        held, factor, _ = estimator_heldout(split, spec, seed=4, **sizes)
        for rec, lists in recs.items():
            values, diag = estimate(held, lists, ks=ks, metrics=metrics, n_items=n_items)
            pd.testing.assert_frame_equal(per_user[rec][name].frame(), values)
            rows = diagnostics[
                (diagnostics["estimator"] == name) & (diagnostics["recommender"] == rec)
            ]
            pd.testing.assert_frame_equal(
                rows[diag.columns].reset_index(drop=True), diag, check_dtype=True
            )
            assert (rows["propensity_scale"] == factor).all()
            means = table[(table["testset"] == name) & (table["recommender"] == rec)]
            np.testing.assert_array_equal(means["value"], summarise(values)["value"])
            # ranks looked up deeper than max(ks) give the same values
            deeper = list_ranks(lists, held.users, held.items, n_items=n_items, depth=50)
            again, _ = estimate(held, lists, ks=ks, metrics=metrics, n_items=n_items, ranks=deeper)
            pd.testing.assert_frame_equal(again, values)
    with pytest.raises(ValueError, match="one rank per held-out pair"):
        estimate(held, lists, ks=ks, metrics=metrics, n_items=n_items, ranks=deeper[:-1])


@pytest.mark.parametrize("case", ["distinct", "queries_twice", "listed_twice", "empty"])
def test_list_ranks_match_a_lookup_table(case):
    """Both look-up directions of list_ranks give every pair's rank in the lists (the first
    row of a pair listed twice), 0 beyond ``depth`` or unlisted."""
    rng = np.random.default_rng(["distinct", "queries_twice", "listed_twice", "empty"].index(case))
    n_users, n_items, k = 30, 40, 8
    recs = _recs_from_scores(rng.random((n_users, n_items)), np.zeros((n_users, n_items), bool), k)
    recs = recs.sample(frac=0.9, random_state=1)  # unsorted, some users with short lists
    if case == "listed_twice":
        recs = pd.concat([recs, recs.iloc[:20].assign(rank=np.int16(1))], ignore_index=True)
    if case == "empty":
        recs = recs.iloc[:0]
    cells = rng.choice(n_users * n_items, size=500, replace=case == "queries_twice")
    users, items = np.divmod(cells, n_items)
    expected = {}
    for u, i, r in zip(recs["user"], recs["item"], recs["rank"], strict=True):
        if r <= 5:
            expected.setdefault((u, i), r)
    want = [expected.get((u, i), 0) for u, i in zip(users, items, strict=True)]
    got = list_ranks(recs, users, items, n_items=n_items, depth=5)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
