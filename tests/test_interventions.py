"""Tests of the intervened test sets of [SAC20] (docs/experiments/e1.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from debiaseval.debiasing.interventions import (
    DEFAULT_TESTSETS,
    VARIANT_TESTSETS,
    TestSetSpec,
    intervene,
    kl_to_uniform,
    posteriors,
    skew_weights,
    wtd_weights,
)
from debiaseval.debiasing.sampling import weighted_sample_without_replacement

N_USERS, N_ITEMS = 300, 200
SEEDS = (0, 1, 2)


def _skewed(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """MNAR train/space with skewed users (lognormal activity) and Zipf items; uniform MAR."""
    rng = np.random.default_rng(seed)
    activity = rng.lognormal(0.0, 1.5, N_USERS)
    pop = 1.0 / np.arange(1, N_ITEMS + 1)
    rng.shuffle(pop)
    p = np.outer(activity / activity.sum(), pop / pop.sum()).ravel()
    keys = np.unique(rng.choice(p.size, 20_000, p=p))
    df = pd.DataFrame(
        {
            "user": (keys // N_ITEMS).astype(np.int32),
            "item": (keys % N_ITEMS).astype(np.int32),
            "rating": rng.integers(1, 6, keys.size).astype(np.float32),
            "row": np.arange(keys.size),
        }
    )
    in_train = rng.random(len(df)) < 0.6
    train = df[in_train].reset_index(drop=True)
    space = df[~in_train].reset_index(drop=True)
    mar = pd.DataFrame(
        {
            "user": np.repeat(np.arange(N_USERS, dtype=np.int32), 40),
            "item": np.concatenate(
                [rng.choice(N_ITEMS, 40, replace=False) for _ in range(N_USERS)]
            ).astype(np.int32),
        }
    )
    return train, space, mar


def _kls(name: str, spec: TestSetSpec | None = None) -> tuple[float, float]:
    """Mean (over seeds) KL to uniform of the sampled users and items, rho = 0.5."""
    spec = spec or DEFAULT_TESTSETS[name]
    ku, ki = [], []
    for seed in SEEDS:
        train, space, mar = _skewed(seed)
        s = intervene(
            space,
            spec,
            rho=0.5,
            rng=np.random.default_rng(100 + seed),
            n_users=N_USERS,
            n_items=N_ITEMS,
            train=train,
            mar_weights=mar,
        )
        ku.append(kl_to_uniform(s["user"].to_numpy(), N_USERS))
        ki.append(kl_to_uniform(s["item"].to_numpy(), N_ITEMS))
    return float(np.mean(ku)), float(np.mean(ki))


@pytest.fixture(scope="module")
def kls() -> dict[str, tuple[float, float]]:
    return {name: _kls(name) for name in ("REG", "SKEW", "WTD", "WTD_H")}


# --- posteriors and weights, by hand ---------------------------------------------------------


def test_posteriors_hand_computed():
    np.testing.assert_allclose(posteriors(np.array([0, 0, 2]), 4), [2 / 3, 0, 1 / 3, 0])
    np.testing.assert_allclose(
        posteriors(np.array([0, 0, 2]), 4, smoothing=1.0), [3 / 7, 1 / 7, 2 / 7, 1 / 7]
    )
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        posteriors(np.array([0, 4]), 4)


# reference: users [0, 0, 0, 1] -> counts [3, 1, 0] -> floored [3, 1, 1] -> P = [3/4, 1/4, 1/4]
#            items [0, 0, 1, 1] -> counts [2, 2, 0] -> floored [2, 2, 1] -> P = [1/2, 1/2, 1/4]
REF_U, REF_I = np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1])
# MAR: users [0, 1, 0, 1] -> P = [1/2, 1/2, 0]; items [0, 0, 1, 1] -> P = [1/2, 1/2, 0]
MAR_U, MAR_I = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
SPACE_U, SPACE_I = np.array([0, 1, 2, 0]), np.array([0, 1, 2, 2])


def _w(**kw) -> np.ndarray:
    return wtd_weights(
        SPACE_U, SPACE_I, n_users=3, n_items=3, reference_users=REF_U, reference_items=REF_I, **kw
    )


def test_wtd_h_weights_hand_computed_with_absent_from_reference():
    # uniform hypothesis: w_u = (1/3)/[3/4, 1/4, 1/4] = [4/9, 4/3, 4/3]
    #                     w_i = (1/3)/[1/2, 1/2, 1/4] = [2/3, 2/3, 4/3]
    # user 2 and item 2 are absent from the reference set: treated as seen once
    expected = np.array(
        [4 / 9 * (2 / 3) ** 2, 4 / 3 * (2 / 3) ** 2, 4 / 3 * (4 / 3) ** 2, 4 / 9 * (4 / 3) ** 2]
    )
    np.testing.assert_allclose(_w(), expected)
    np.testing.assert_allclose(_w(), [16 / 81, 16 / 27, 64 / 27, 64 / 81])
    # plain product (1, 1)
    np.testing.assert_allclose(_w(item_exponent=1.0), [8 / 27, 8 / 9, 16 / 9, 16 / 27])
    assert np.all(np.isfinite(_w()))


def test_wtd_weights_hand_computed_with_absent_from_mar():
    # w_u = [1/2 / 3/4, 1/2 / 1/4, 0] = [2/3, 2, 0]; w_i = [1, 1, 0]
    np.testing.assert_allclose(_w(mar_users=MAR_U, mar_items=MAR_I), [2 / 3, 2.0, 0.0, 0.0])
    # smoothing 1 on the MAR posteriors only: P_mar = (c + 1)/(4 + 3) = [3/7, 3/7, 1/7]
    # w_u = [4/7, 12/7, 4/7], w_i = [6/7, 6/7, 4/7]
    got = _w(mar_users=MAR_U, mar_items=MAR_I, smoothing=1.0)
    np.testing.assert_allclose(
        got,
        [4 / 7 * (6 / 7) ** 2, 12 / 7 * (6 / 7) ** 2, 4 / 7 * (4 / 7) ** 2, 4 / 7 * (4 / 7) ** 2],
    )
    with pytest.raises(ValueError, match="mar_users"):
        _w(mar_users=MAR_U)


def test_skew_weights_hand_computed():
    train_items = np.array([0, 0, 1])  # pop = [2, 1, 0]
    np.testing.assert_allclose(
        skew_weights(np.array([0, 1, 2, 0]), train_items, 3), [1 / 2, 1, 1, 1 / 2]
    )
    np.testing.assert_allclose(skew_weights(np.array([2]), train_items, 3, min_pop=0.5), [2.0])
    with pytest.raises(ValueError, match="min_pop"):
        skew_weights(np.array([2]), train_items, 3, min_pop=0.0)


def test_kl_to_uniform():
    assert kl_to_uniform(np.array([0, 1, 2, 3]), 4) == pytest.approx(0.0)
    assert kl_to_uniform(np.array([2, 2, 2]), 4) == pytest.approx(np.log(4))
    # p = [1/2, 1/2, 0, 0] -> log 2
    assert kl_to_uniform(np.array([0, 1]), 4) == pytest.approx(np.log(2))


# --- the test-set specs ------------------------------------------------------------------------


def test_default_and_variant_testsets():
    assert list(DEFAULT_TESTSETS) == ["FULL", "REG", "SKEW", "WTD", "WTD_H"]
    assert all(spec.name == name for name, spec in DEFAULT_TESTSETS.items())
    assert DEFAULT_TESTSETS["WTD"].mar_posterior == "weights"
    assert DEFAULT_TESTSETS["WTD_H"].mar_posterior == "uniform"
    wtd = DEFAULT_TESTSETS["WTD"]
    assert (wtd.user_exponent, wtd.item_exponent, wtd.reference) == (1.0, 2.0, "train")
    plain = VARIANT_TESTSETS["WTD_PLAIN"]
    assert (plain.strategy, plain.user_exponent, plain.item_exponent) == ("wtd", 1.0, 1.0)
    assert "WTD_PLAIN" not in DEFAULT_TESTSETS


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"strategy": "random"}, "strategy"),
        ({"strategy": "wtd", "mar_posterior": "mar"}, "mar_posterior"),
        ({"strategy": "wtd", "reference": "test"}, "reference"),
        ({"strategy": "wtd", "smoothing": -1.0}, "smoothing"),
        ({"strategy": "skew", "min_pop": 0.0}, "min_pop"),
    ],
)
def test_bad_spec_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TestSetSpec(name="X", **kwargs)


# --- intervene ------------------------------------------------------------------------------


def _intervene(name: str, rho: float, seed: int = 0, **kw) -> pd.DataFrame:
    train, space, mar = _skewed(0)
    return intervene(
        space,
        DEFAULT_TESTSETS[name],
        rho=rho,
        rng=np.random.default_rng(seed),
        n_users=N_USERS,
        n_items=N_ITEMS,
        train=train,
        mar_weights=mar,
        **kw,
    )


def test_full_returns_everything():
    _, space, _ = _skewed(0)
    out = _intervene("FULL", rho=0.3)
    pd.testing.assert_frame_equal(out, space)


@pytest.mark.parametrize("name", ["REG", "SKEW", "WTD", "WTD_H"])
@pytest.mark.parametrize("rho", [0.1, 0.25, 0.5, 0.77, 1.0])
def test_sizes_rows_and_dtypes(name, rho):
    _, space, _ = _skewed(0)
    out = _intervene(name, rho)
    assert len(out) == round(rho * len(space))
    assert out.dtypes.equals(space.dtypes)
    rows = out["row"].to_numpy()
    assert np.all(np.diff(rows) > 0)  # original order, no duplicates
    pd.testing.assert_frame_equal(
        out, space.set_index("row").loc[rows].reset_index()[space.columns]
    )


def test_same_seed_same_sample_and_seeds_differ():
    a, b, c = _intervene("WTD_H", 0.5, 3), _intervene("WTD_H", 0.5, 3), _intervene("WTD_H", 0.5, 4)
    pd.testing.assert_frame_equal(a, b)
    assert not a["row"].equals(c["row"])


@pytest.mark.parametrize("rho", [0.0, -0.1, 1.5, float("nan"), "0.5"])
@pytest.mark.parametrize("name", ["FULL", "REG"])
def test_bad_rho_raises(rho, name):
    with pytest.raises(ValueError, match="rho"):
        _intervene(name, rho)


def test_missing_inputs_raise():
    _, space, _ = _skewed(0)
    kw = {"rho": 0.5, "rng": np.random.default_rng(0), "n_users": N_USERS, "n_items": N_ITEMS}
    with pytest.raises(ValueError, match="train"):
        intervene(space, DEFAULT_TESTSETS["SKEW"], **kw)
    with pytest.raises(ValueError, match="mar_weights"):
        intervene(space, DEFAULT_TESTSETS["WTD"], train=space, **kw)
    with pytest.raises(ValueError, match="space items"):
        intervene(space, DEFAULT_TESTSETS["REG"], **{**kw, "n_items": 10})


def test_intervene_wires_the_documented_weights():
    """Same rng -> intervene equals the sampler applied to the documented weights."""
    train, space, mar = _skewed(1)
    su, si = space["user"].to_numpy(), space["item"].to_numpy()
    tu, ti = train["user"].to_numpy(), train["item"].to_numpy()
    common = {"n_users": N_USERS, "n_items": N_ITEMS}
    cases = {
        DEFAULT_TESTSETS["REG"]: np.ones(len(space)),
        DEFAULT_TESTSETS["SKEW"]: skew_weights(si, ti, N_ITEMS),
        DEFAULT_TESTSETS["WTD"]: wtd_weights(
            su,
            si,
            reference_users=tu,
            reference_items=ti,
            mar_users=mar["user"].to_numpy(),
            mar_items=mar["item"].to_numpy(),
            **common,
        ),
        DEFAULT_TESTSETS["WTD_H"]: wtd_weights(
            su, si, reference_users=tu, reference_items=ti, **common
        ),
        dataclasses.replace(
            DEFAULT_TESTSETS["WTD_H"], reference="space", item_exponent=1.0
        ): wtd_weights(su, si, reference_users=su, reference_items=si, item_exponent=1.0, **common),
    }
    size = round(0.4 * len(space))
    for spec, weights in cases.items():
        got = intervene(
            space,
            spec,
            rho=0.4,
            rng=np.random.default_rng(9),
            train=train,
            mar_weights=mar,
            **common,
        )
        idx = weighted_sample_without_replacement(weights, size, np.random.default_rng(9))
        pd.testing.assert_frame_equal(got, space.iloc[idx].reset_index(drop=True))


# --- behaviour on a popularity-skewed space -------------------------------------------------------


def test_wtd_h_moves_users_and_items_toward_uniform(kls):
    reg_u, reg_i = kls["REG"]
    wtdh_u, wtdh_i = kls["WTD_H"]
    assert wtdh_u < reg_u
    assert wtdh_i < reg_i


def test_skew_flattens_item_exposure(kls):
    assert kls["SKEW"][1] < kls["REG"][1]


def test_wtd_with_uniform_mar_behaves_like_wtd_h(kls):
    reg_u, reg_i = kls["REG"]
    (wtd_u, wtd_i), (wtdh_u, wtdh_i) = kls["WTD"], kls["WTD_H"]
    assert wtd_u < reg_u and wtd_i < reg_i
    assert abs(wtd_u - wtdh_u) < 0.25 * (reg_u - wtdh_u)
    assert abs(wtd_i - wtdh_i) < 0.25 * (reg_i - wtdh_i)
    # and the weights themselves agree closely (log scale)
    train, space, mar = _skewed(0)
    kw = {
        "n_users": N_USERS,
        "n_items": N_ITEMS,
        "reference_users": train["user"].to_numpy(),
        "reference_items": train["item"].to_numpy(),
    }
    su, si = space["user"].to_numpy(), space["item"].to_numpy()
    w = wtd_weights(
        su,
        si,
        mar_users=mar["user"].to_numpy(),
        mar_items=mar["item"].to_numpy(),
        smoothing=0.5,
        **kw,
    )
    wh = wtd_weights(su, si, **kw)
    assert np.corrcoef(np.log(w), np.log(wh))[0, 1] > 0.9
