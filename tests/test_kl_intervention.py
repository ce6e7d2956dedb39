"""The KL intervention ([MYT14]): P_S ∝ ω_i / Σ_{j∈I_u} ω_j, users uniform.

See docs/experiments/e6.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from debiaseval.debiasing.interventions import (
    TestSetSpec,
    intervene,
    kl_pair_weights,
    kl_to_uniform,
    posteriors,
)


@pytest.fixture(scope="module")
def space() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n_users, n_items = 120, 40
    popularity = 1.0 / np.arange(1, n_items + 1)
    mask = rng.random((n_users, n_items)) < 0.6 * popularity / popularity.max()
    users, items = np.nonzero(mask)
    return pd.DataFrame({"user": users, "item": items, "rating": np.ones(users.size)})


def test_pair_weights_sum_to_one_per_user_and_match_the_reference(space) -> None:
    users, items = space["user"].to_numpy(), space["item"].to_numpy()
    w = kl_pair_weights(users, items, n_users=120, n_items=40)
    per_user = np.bincount(users, weights=w, minlength=120)
    present = np.bincount(users, minlength=120) > 0
    np.testing.assert_allclose(per_user[present], 1.0)
    # the weighted classic marginal is much nearer the uniform reference than the plain one
    # (uniform is out of reach: an item held by c users has P(i|ω) <= c/|U|)
    marginal = np.bincount(items, weights=w, minlength=40) / present.sum()
    plain = np.bincount(items, weights=1.0 / np.bincount(users)[users], minlength=40)
    plain /= present.sum()
    support = np.bincount(items, minlength=40) > 0
    target = support / support.sum()

    def kl(p: np.ndarray) -> float:
        return float(np.sum(target[support] * np.log(target[support] / p[support])))

    assert kl(marginal) < 0.25 * kl(plain)
    # a MAR reference: the posterior of the given items
    mar = np.repeat(np.arange(40), 3)
    w_mar = kl_pair_weights(users, items, n_users=120, n_items=40, mar_items=mar)
    np.testing.assert_allclose(w_mar, w, rtol=1e-3)  # uniform MAR counts = uniform reference
    assert np.allclose(posteriors(mar, 40), 1 / 40)
    # p = 0: unit weights, plain 1/|I_u|
    w0 = kl_pair_weights(users, items, n_users=120, n_items=40, active_items=0)
    np.testing.assert_allclose(w0, 1.0 / np.bincount(users)[users])


def test_kl_test_sets_are_less_popularity_skewed_than_reg(space) -> None:
    spec = TestSetSpec("KL_H", "kl", mar_posterior="uniform")
    reg = TestSetSpec("REG", "reg")
    kl_div, reg_div = [], []
    for seed in range(20):
        sample = intervene(
            space, spec, rho=0.3, rng=np.random.default_rng(seed), n_users=120, n_items=40
        )
        assert len(sample) == round(0.3 * len(space))
        assert not sample.duplicated(["user", "item"]).any()
        kl_div.append(kl_to_uniform(sample["item"].to_numpy(), 40))
        base = intervene(
            space, reg, rho=0.3, rng=np.random.default_rng(seed), n_users=120, n_items=40
        )
        reg_div.append(kl_to_uniform(base["item"].to_numpy(), 40))
    # over 20 draws each: the KL intervention's samples are clearly closer to uniform
    assert np.mean(kl_div) < np.mean(reg_div) - 3 * np.std(reg_div) / np.sqrt(20)


def test_kl_spec_checks(space) -> None:
    with pytest.raises(ValueError, match="active_items"):
        TestSetSpec("K", "kl", active_items=-1)
    with pytest.raises(ValueError, match="mar_weights=None"):
        intervene(
            space,
            TestSetSpec("K", "kl"),
            rho=0.5,
            rng=np.random.default_rng(0),
            n_users=120,
            n_items=40,
        )
