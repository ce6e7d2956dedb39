"""KL item weights of [MYT14] (docs/experiments/e6.md): gradient, optimum, p-restriction, speed."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
import scipy.sparse as sp

from debiaseval.debiasing.kl_weights import (
    active_items,
    fit_kl_weight_path,
    fit_kl_weights,
    item_marginal,
    kl_objective,
    pair_weights,
    profile_matrix,
)


def random_profiles(n_users: int, n_items: int, density: float, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[np.arange(n_users), rng.integers(0, n_items, n_users)] = True  # no empty profile
    return sp.csr_matrix(mask.astype(np.float64))


@pytest.fixture(scope="module")
def profiles() -> sp.csr_matrix:
    return random_profiles(60, 25, 0.25, seed=1)


def test_marginal_by_hand() -> None:
    # user 0 holds items 0, 1; user 1 holds item 1; user 2 holds nothing (not in U)
    x = profile_matrix(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1]), 3, 3)
    np.testing.assert_allclose(item_marginal(x), [0.25, 0.75, 0.0])
    # ω = (3, 1, 1): user 0 draws item 0 w.p. 3/4
    np.testing.assert_allclose(item_marginal(x, np.array([3.0, 1.0, 1.0])), [0.375, 0.625, 0])
    w = pair_weights(x, np.array([3.0, 1.0, 1.0]))
    np.testing.assert_allclose(w.toarray(), [[0.75, 0.25, 0], [0, 1, 0], [0, 0, 0]])


def test_gradient_matches_finite_differences(profiles: sp.csr_matrix) -> None:
    rng = np.random.default_rng(2)
    n = profiles.shape[1]
    p_ref = rng.dirichlet(np.ones(n))
    p_ref[3] = 0.0  # an item the reference lacks
    w = rng.uniform(0.3, 3.0, n)
    value, grad = kl_objective(profiles, p_ref, w)
    assert value > 0
    eps = 1e-6
    numeric = np.empty(n)
    for k in range(n):
        step = np.zeros(n)
        step[k] = eps * w[k]
        numeric[k] = (
            kl_objective(profiles, p_ref, w + step)[0] - kl_objective(profiles, p_ref, w - step)[0]
        ) / (2 * eps * w[k])
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-9)


def test_reference_equal_to_marginal_gives_unit_weights(profiles: sp.csr_matrix) -> None:
    fit = fit_kl_weights(profiles, item_marginal(profiles))
    np.testing.assert_array_equal(fit.weights, np.ones(profiles.shape[1]))
    assert fit.divergence == pytest.approx(0.0, abs=1e-12)
    assert fit.converged


def test_fit_reaches_a_reachable_reference(profiles: sp.csr_matrix) -> None:
    target_w = np.random.default_rng(3).uniform(0.2, 5.0, profiles.shape[1])
    p_ref = item_marginal(profiles, target_w)
    fit = fit_kl_weights(profiles, p_ref)
    assert fit.initial_divergence > 1e-2
    assert fit.divergence < 1e-8
    np.testing.assert_allclose(item_marginal(profiles, fit.weights), p_ref, atol=1e-5)
    # scale invariance is pinned: geometric mean 1
    assert np.mean(np.log(fit.weights)) == pytest.approx(0.0, abs=1e-8)


def test_increasing_p_never_increases_optimal_d(profiles: sp.csr_matrix) -> None:
    p_ref = np.random.default_rng(4).dirichlet(np.ones(profiles.shape[1]))
    ps = [0, 1, 3, 5, 10, 15, 20, None]
    path = fit_kl_weight_path(profiles, p_ref, ps)
    values = [f.divergence for f in path]
    assert all(b <= a for a, b in itertools.pairwise(values))
    assert values[0] == pytest.approx(kl_objective(profiles, p_ref)[0])
    assert values[-1] < 0.5 * values[0]
    # independent fits (cold start) agree with the path up to the optimiser's tolerance
    for p, fit in zip(ps, path, strict=True):
        alone = fit_kl_weights(profiles, p_ref, p=p)
        assert alone.divergence == pytest.approx(fit.divergence, rel=1e-4, abs=1e-9)
        assert alone.active.size == (profiles.shape[1] if p is None else p)
        # only active items move
        moved = np.flatnonzero(fit.weights != 1.0)
        assert np.isin(moved, fit.active).all()


def test_active_items_are_the_largest_changes() -> None:
    x = profile_matrix(np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2]), 3, 4)
    current = item_marginal(x)  # [1/6, 1/2, 1/3, 0]
    p_ref = np.array([0.5, 0.3, 0.2, 0.0])
    change = np.abs(current - p_ref)  # [1/3, 0.2, 0.133, 0]
    assert change.argmax() == 0
    np.testing.assert_array_equal(active_items(x, p_ref, 1), [0])
    np.testing.assert_array_equal(active_items(x, p_ref, 2), [0, 1])
    np.testing.assert_array_equal(active_items(x, p_ref, None), [0, 1, 2])  # item 3 absent


def test_reference_outside_the_support_is_renormalised() -> None:
    x = profile_matrix(np.array([0, 1]), np.array([0, 1]), 2, 3)
    value, _ = kl_objective(x, np.array([0.25, 0.25, 0.5]))  # item 2 is held by nobody
    assert value == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"p": -1}, "p"),
        ({"min_weight": 0.0}, "bounds"),
        ({"max_iter": 0}, "max_iter"),
        ({"init": np.zeros(3)}, "weights"),
    ],
)
def test_invalid_arguments(kwargs: dict, match: str) -> None:
    x = profile_matrix(np.array([0, 1]), np.array([0, 1]), 2, 3)
    with pytest.raises(ValueError, match=match):
        fit_kl_weights(x, np.array([0.5, 0.5, 0.0]), **kwargs)


def test_invalid_reference() -> None:
    x = profile_matrix(np.array([0]), np.array([0]), 1, 2)
    with pytest.raises(ValueError, match="no mass"):
        kl_objective(x, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="shape"):
        kl_objective(x, np.array([1.0]))
    with pytest.raises(ValueError, match="empty"):
        item_marginal(sp.csr_matrix((2, 2)))


@pytest.mark.slow
def test_ml1m_sized_fit_takes_seconds() -> None:
    """6,040 × 3,706 with about 1M pairs, every item active (the issue's performance check)."""
    rng = np.random.default_rng(0)
    n_users, n_items, n_draws = 6040, 3706, 1_250_000
    activity = rng.lognormal(0.0, 1.0, n_users)
    popularity = 1.0 / np.arange(1, n_items + 1) ** 0.8
    users = rng.choice(n_users, n_draws, p=activity / activity.sum())
    items = rng.choice(n_items, n_draws, p=popularity / popularity.sum())
    x = profile_matrix(users, items, n_users, n_items)
    assert 0.9e6 < x.nnz < 1.1e6
    earlier = rng.random(x.nnz) < 0.5
    coo = x.tocoo()
    p_ref = item_marginal(profile_matrix(coo.row[earlier], coo.col[earlier], n_users, n_items))
    start = time.perf_counter()
    fit = fit_kl_weights(x, p_ref)
    seconds = time.perf_counter() - start
    print(
        f"ml-1m-sized KL fit: {seconds:.2f} s, {fit.n_iterations} L-BFGS-B iterations, "
        f"D {fit.initial_divergence:.3g} -> {fit.divergence:.3g}"
    )
    assert fit.converged and fit.divergence < 1e-3 * fit.initial_divergence
