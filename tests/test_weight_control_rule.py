"""DR's weight-control rule: the estimated MSE with a signed bias estimate and its standard
error (Su et al. 2020, §5) chooses a control where shrinking is clearly right and none where it
is clearly wrong."""

import numpy as np
from test_weighting import N_ITEMS, N_USERS, K, World, _right_imputation, _true, _wrong_imputation

from debiaseval.debiasing.propensities import scaled
from debiaseval.estimation.heldout import prepare
from debiaseval.estimation.ranking_estimators import estimate_all
from debiaseval.estimation.weight_control import WeightControl, candidates, estimated_mse


def test_estimated_mse_counts_a_bias_beyond_its_noise_only():
    users = np.arange(4)
    none = {"A": np.array([[0.2, 0.4, 0.6, 0.8]])}
    noise = {"A": np.array([[0.25, 0.35, 0.65, 0.75]])}  # changes of ±0.05 with mean 0
    shifted = {"A": none["A"] - 0.3}  # every user moved by −0.3: a bias of 0.3, no noise
    mse = estimated_mse([(users, noise), (users, shifted), (users, none)])
    var = np.var(none["A"], ddof=1) / 4
    assert mse[2] == var  # no control: its variance alone
    assert mse[0] == np.var(noise["A"], ddof=1) / 4  # a change within its noise: no bias
    np.testing.assert_allclose(mse[1], var + 0.09)


def _rule(case: str, draws: int = 20) -> tuple[float, float, float]:
    """Over ``draws`` held-out parts of one world: the share of draws where the rule chose a
    shrinkage, and the RMSE of the mean Recall@10 without control and under the rule."""
    world = World(3, scale=3.0 if case == "right" else 10.0)
    imputation = (_right_imputation if case == "right" else _wrong_imputation)(world)
    truth = world.truth()
    errors: dict[str, list[float]] = {"none": [], "rule": []}
    chose = []
    for _ in range(draws):
        held = world.heldout()
        p, _ = scaled(_true(world), held, train=world.train_frame, n_pairs=len(held))
        if case == "right":
            # a fiftieth of the pairs get weights 30 times too large: noise only, since with
            # the right imputation the correction has mean 0 whatever its weights
            p = np.where(world.rng.random(p.size) < 0.02, p / 30, p)
        h = prepare(
            "dr",
            held,
            p,
            n_users=N_USERS,
            positive_threshold=3.0,
            imputation=imputation,
            train=world.train_frame,
        )
        for name, control in (("none", WeightControl()), ("rule", WeightControl("shrink"))):
            out = estimate_all(
                h, {"A": world.recs}, ks=[K], metrics=["recall"], n_items=N_ITEMS, control=control
            )
            common, at, _ = np.intersect1d(out.users, truth.index.to_numpy(), return_indices=True)
            errors[name].append(out.values["A"][0, at].mean() - truth[common].mean())
            if name == "rule":
                chose.append(np.isfinite(out.value))
    rmse = {k: float(np.sqrt(np.mean(np.square(v)))) for k, v in errors.items()}
    return float(np.mean(chose)), rmse["none"], rmse["rule"]


def test_the_rule_shrinks_when_shrinking_is_clearly_right():
    """The right imputation and a few weights far too large: shrinking removes noise and adds
    no bias. The rule shrinks in at least 90% of the draws and cuts the RMSE by a quarter."""
    share, none, rule = _rule("right")
    assert share >= 0.9
    assert rule < 0.75 * none


def test_the_rule_keeps_no_control_when_shrinking_is_clearly_wrong():
    """A wrong imputation (the items' rates dealt to the wrong items) with the right, light
    weights: the correction removes the imputation's bias, and shrinking would bring it back.
    The rule keeps no control in at least 90% of the draws, and loses nothing to none."""
    share, none, rule = _rule("wrong")
    assert share <= 0.1
    assert rule <= none + 1e-4


def test_a_fixed_quantile_is_the_one_threshold_tried():
    w = np.arange(1.0, 101.0)
    median = float(np.quantile(w, 0.5))
    assert candidates(WeightControl("clip", quantile=0.5), w).tolist() == [median]
    assert candidates(WeightControl("shrink", quantile=0.5), w).tolist() == [median**2]
    assert candidates(WeightControl("switch", quantile=0.9), w).tolist() == [np.quantile(w, 0.9)]
    # the data-driven choice tries every quantile of QUANTILES, then no control
    assert candidates(WeightControl("clip"), w)[-1] == np.inf


def test_a_weight_control_takes_a_value_or_a_quantile_not_both():
    import pytest

    with pytest.raises(ValueError, match="not both"):
        WeightControl("clip", value=3.0, quantile=0.5)
    with pytest.raises(ValueError, match=r"in \(0, 1\)"):
        WeightControl("clip", quantile=1.0)
