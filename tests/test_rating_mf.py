"""Weighted rating MF (MF-Naive / MF-IPS, [ICML16] eq. 14) and IPS cross-validation."""

from __future__ import annotations

import numpy as np
import pytest

from debiaseval.data.synthetic import generate_synthetic
from debiaseval.recommenders.rating_mf import WeightedMF, normalise_weights
from debiaseval.selection.ips_cv import cv_select, fold_labels, pair_losses


@pytest.fixture(scope="module")
def biased():
    """A strongly biased synthetic set: alpha = 0.1 (observations favour high ratings)."""
    data = generate_synthetic(n_users=200, n_items=250, alpha=0.1, density=0.08, seed=3)
    return data, data.mnar_frame()


def _fit(frame, weights=None, init=None, **params):
    return WeightedMF(**params).fit(
        frame["user"].to_numpy(),
        frame["item"].to_numpy(),
        frame["rating"].to_numpy(),
        n_users=200,
        n_items=250,
        weights=weights,
        rng=np.random.default_rng(0),
        init=init,
    )


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_objective_never_increases(biased, loss: str) -> None:
    _, frame = biased
    for weights in (None, 1.0 / frame["propensity"].to_numpy()):
        model = _fit(frame, weights, factors=5, l2=3.0, loss=loss, max_iter=30, tol=0.0)
        obj = model.objective_
        assert len(obj) == 31
        assert np.all(np.diff(obj) <= 1e-9 * obj[:-1]), np.diff(obj).max()
        assert obj[-1] < 0.9 * obj[0]


def test_squared_als_reaches_a_stationary_point(biased) -> None:
    """At convergence the gradient of the objective w.r.t. the user block is ~0."""
    _, frame = biased
    model = _fit(frame, factors=4, l2=2.0, max_iter=500, tol=1e-12)
    u, i = frame["user"].to_numpy(), frame["item"].to_numpy()
    r = frame["rating"].to_numpy() - model.predict(u, i)
    grad_v = np.zeros_like(model.user_factors_)
    np.add.at(grad_v, u, -2 * r[:, None] * model.item_factors_[i])
    grad_v += 2 * 2.0 * model.user_factors_
    assert np.abs(grad_v).max() < 1e-3
    assert abs(r.sum()) < 1e-6  # the unregularised offset: residuals sum to zero


@pytest.mark.parametrize("penalise_biases", [False, True])
def test_biases_are_unpenalised_as_in_eq_14(biased, penalise_biases: bool) -> None:
    """At convergence ∂/∂a_u = −2 Σ_i w r_ui + 2λ a_u·[penalised] = 0: without a bias
    penalty ([ICML16] eq. 14) every user's and item's weighted residuals sum to zero."""
    _, frame = biased
    w = 1.0 / frame["propensity"].to_numpy()
    model = _fit(
        frame, w, factors=4, l2=2.0, max_iter=2000, tol=0.0, penalise_biases=penalise_biases
    )
    u, i = frame["user"].to_numpy(), frame["item"].to_numpy()
    r = normalise_weights(w, w.size) * (frame["rating"].to_numpy() - model.predict(u, i))
    lam = 2.0 if penalise_biases else 0.0
    np.testing.assert_allclose(np.bincount(u, r, 200), lam * model.user_bias_, atol=1e-4)
    np.testing.assert_allclose(np.bincount(i, r, 250), lam * model.item_bias_, atol=1e-4)
    assert np.abs(model.user_bias_).max() > 0.1  # the check is not vacuous
    penalty = 2.0 * (np.sum(model.user_factors_**2) + np.sum(model.item_factors_**2))
    if penalise_biases:
        penalty += 2.0 * (np.sum(model.user_bias_**2) + np.sum(model.item_bias_**2))
    y = frame["rating"].to_numpy()
    objective = model.objective(u, i, y, w)
    assert objective == pytest.approx(np.sum(r * (y - model.predict(u, i))) + penalty)


def test_unit_weights_equal_unweighted(biased) -> None:
    _, frame = biased
    plain = _fit(frame, None, factors=5, l2=3.0)
    for w in (np.ones(len(frame)), np.full(len(frame), 7.5)):  # normalised to mean 1
        weighted = _fit(frame, w, factors=5, l2=3.0)
        np.testing.assert_array_equal(weighted.predict_matrix(), plain.predict_matrix())


def test_weights_are_normalised_to_mean_one() -> None:
    w = normalise_weights(np.array([1.0, 3.0, 8.0]), 3)
    assert w.mean() == pytest.approx(1.0)
    np.testing.assert_allclose(w, [0.25, 0.75, 2.0])
    for bad in (np.array([1.0, 0.0, 2.0]), np.array([1.0, np.nan, 2.0])):
        with pytest.raises(ValueError, match="finite and > 0"):
            normalise_weights(bad, 3)
    with pytest.raises(ValueError, match="shape"):
        normalise_weights(np.ones(2), 3)


def test_mf_ips_beats_mf_naive_on_biased_data(biased) -> None:
    """Test MSE on the full matrix: known-propensity MF-IPS beats MF-Naive by a clear margin."""
    data, frame = biased
    naive = _fit(frame, None, factors=5, l2=5.0)
    ips = _fit(frame, 1.0 / frame["propensity"].to_numpy(), factors=5, l2=5.0)
    mse_naive = np.mean((naive.predict_matrix() - data.ratings) ** 2)
    mse_ips = np.mean((ips.predict_matrix() - data.ratings) ** 2)
    assert mse_ips < 0.7 * mse_naive, (mse_ips, mse_naive)


def test_bad_input_raises(biased) -> None:
    _, frame = biased
    with pytest.raises(ValueError, match="loss"):
        _fit(frame, loss="huber")
    with pytest.raises(ValueError, match="l2"):
        _fit(frame, l2=0.0)
    y = frame["rating"].to_numpy().copy()
    y[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        WeightedMF().fit(
            frame["user"].to_numpy(),
            frame["item"].to_numpy(),
            y,
            n_users=200,
            n_items=250,
            rng=np.random.default_rng(0),
        )
    with pytest.raises(ValueError, match="item ids"):
        WeightedMF().fit(
            frame["user"].to_numpy(),
            frame["item"].to_numpy(),
            frame["rating"].to_numpy(),
            n_users=200,
            n_items=10,
            rng=np.random.default_rng(0),
        )


def test_fold_labels_are_balanced() -> None:
    folds = fold_labels(103, 5, np.random.default_rng(0))
    counts = np.bincount(folds)
    assert counts.max() - counts.min() <= 1 and counts.sum() == 103
    with pytest.raises(ValueError, match="n_folds"):
        fold_labels(3, 5, np.random.default_rng(0))


def test_pair_losses() -> None:
    np.testing.assert_allclose(pair_losses("mse", [1, 4], [2, 2]), [1, 4])
    np.testing.assert_allclose(pair_losses("mae", [1, 4], [2, 2]), [1, 2])


def test_cv_select_scales_propensities_and_picks_the_minimum(biased) -> None:
    _, frame = biased
    args = (frame["user"].to_numpy(), frame["item"].to_numpy(), frame["rating"].to_numpy())
    p = frame["propensity"].to_numpy()
    grid = [{"factors": 3, "l2": 0.1}, {"factors": 3, "l2": 10.0}, {"factors": 3, "l2": 1e3}]
    kwargs = dict(n_users=200, n_items=250, grid=grid, metric="mse", n_folds=3)
    best, table = cv_select(*args, p, **kwargs, rng=np.random.default_rng(1))
    means = table.groupby("params", sort=False)["value"].mean()
    assert best == grid[int(np.argmin(means.to_numpy()))]
    assert len(table) == 9 and table["selected"].sum() == 3
    # the validation fold's propensities are P/k: the IPS estimate of a fold is k times
    # (1/(U·I)) Σ δ/P over the fold, so its mean over folds is about the error over all
    # U·I pairs (order of the MSE, 0.5..3), not a 1/k fraction of it
    assert 0.3 < means.min() < 5.0
    again, _ = cv_select(*args, p, **kwargs, rng=np.random.default_rng(1))
    assert again == best
    naive_best, naive_table = cv_select(*args, None, **kwargs, rng=np.random.default_rng(1))
    naive_means = naive_table.groupby("params", sort=False)["value"].mean()
    assert naive_best == grid[int(np.argmin(naive_means.to_numpy()))]


@pytest.mark.parametrize("blas_rows", [1, 10**9])
@pytest.mark.parametrize("free_last", [False, True])
@pytest.mark.parametrize("column_gram", ["gathered", "built"])
def test_ridge_rows_equal_the_reference_half_step(
    monkeypatch, column_gram: str, free_last: bool, blas_rows: int
) -> None:
    """Every row's weighted ridge solution equals the former Gram builder's, in every form:
    dual gathered from X Xᵀ (also for rows somewhat longer than k, where it is cheaper),
    dual built from the rows, primal (its system built by BLAS or pair by pair), empty rows;
    with ``free_last`` (an unpenalised bias against a column of ones: the dual's free
    intercept) as well."""
    from debiaseval.benchmarks import reference_ridge_rows
    from debiaseval.recommenders import ridge

    if column_gram == "built":
        monkeypatch.setattr(ridge, "_MAX_COLUMN_GRAM", 0)
    else:  # formed whatever it saves
        monkeypatch.setattr(ridge, "GRAM_COST", 0.0)
    monkeypatch.setattr(ridge, "BLAS_ROWS", blas_rows)
    rng = np.random.default_rng(5)
    n_rows, n_cols = 60, 80
    counts = np.concatenate([np.zeros(3, int), rng.integers(1, 70, n_rows - 3)])  # empty rows
    rows = np.repeat(np.arange(n_rows), counts)
    cols = np.concatenate([rng.choice(n_cols, c, replace=False) for c in counts])
    shuffle = rng.permutation(rows.size)
    rows, cols = rows[shuffle], cols[shuffle]
    weight, target = rng.uniform(0.01, 50.0, rows.size), rng.normal(size=rows.size)
    groups = ridge.RowGroups(rows, cols, n_rows, n_cols)
    for k in (3, 12, 41):  # every row primal; a mix; mostly dual
        x = rng.normal(size=(n_cols, k))
        if free_last:
            x[:, -1] = 1.0
        theta, fitted = groups.solve(weight, target, x, 2.5, free_last=free_last)
        expected = reference_ridge_rows(groups, weight, target, x, 2.5, free_last=free_last)
        np.testing.assert_allclose(theta, expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(
            fitted, np.einsum("nk,nk->n", x[cols], expected[rows]), rtol=1e-9, atol=1e-12
        )
        assert np.all(theta[:3] == 0)


def test_column_gram_is_formed_only_where_it_pays() -> None:
    """Short rows (Yahoo! R3's users, about 20 ratings of 1,000 items) gather their dual systems
    from X Xᵀ; long rows (ML-100K's, mostly primal) do not form it."""
    from debiaseval.recommenders.ridge import RowGroups

    rng = np.random.default_rng(0)
    short = RowGroups(np.repeat(np.arange(2000), 20), rng.integers(0, 1000, 40_000), 2000, 1000)
    long = RowGroups(np.repeat(np.arange(100), 200), rng.integers(0, 1600, 20_000), 100, 1600)
    assert short._gram_pays(41, 40)
    assert not long._gram_pays(21, 20)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_new_solver_reaches_the_reference_objective(biased, loss: str) -> None:
    """Converged fits of the batched solver and the former one ([ICML16] eq. 14) end at the
    same objective (1e-6 relative) from the same start, weighted and unweighted."""
    from debiaseval.benchmarks import ReferenceWeightedMF

    _, frame = biased
    for weights in (None, 1.0 / frame["propensity"].to_numpy()):
        params = dict(factors=8, l2=3.0, loss=loss, max_iter=300, tol=1e-10)
        new = _fit(frame, weights, **params)
        ref = ReferenceWeightedMF(**params).fit(
            frame["user"].to_numpy(),
            frame["item"].to_numpy(),
            frame["rating"].to_numpy(),
            n_users=200,
            n_items=250,
            weights=weights,
            rng=np.random.default_rng(0),
        )
        assert new.objective_[-1] == pytest.approx(ref.objective_[-1], rel=1e-6)
        assert new.objective_[0] == pytest.approx(ref.objective_[0], rel=1e-12)


def test_warm_start_continues_from_the_given_model(biased) -> None:
    _, frame = biased
    first = _fit(frame, None, factors=5, l2=3.0, tol=1e-4)
    again = WeightedMF(factors=5, l2=3.0, tol=1e-4).fit(
        frame["user"].to_numpy(),
        frame["item"].to_numpy(),
        frame["rating"].to_numpy(),
        n_users=200,
        n_items=250,
        rng=np.random.default_rng(0),
        init=first,
    )
    assert again.objective_[0] == pytest.approx(first.objective_[-1], rel=1e-12)
    assert len(again.objective_) <= 3  # converged already: one or two sweeps
    with pytest.raises(ValueError, match="init must be a fitted WeightedMF with 6 factors"):
        _fit(frame, None, factors=6, init=first)


def test_cv_select_warm_start_draws_the_same_random_stream(biased) -> None:
    _, frame = biased
    args = (frame["user"].to_numpy(), frame["item"].to_numpy(), frame["rating"].to_numpy())
    grid = [{"factors": 3, "l2": 1.0}, {"factors": 3, "l2": 10.0}, {"factors": 4, "l2": 10.0}]
    kwargs = dict(n_users=200, n_items=250, grid=grid, metric="mse", n_folds=2)
    streams, tables = [], []
    for warm in (False, True):
        rng = np.random.default_rng(4)
        _, table = cv_select(
            *args, frame["propensity"].to_numpy(), **kwargs, rng=rng, warm_start=warm
        )
        streams.append(rng.random())
        tables.append(table)
    assert streams[0] == streams[1]
    first = tables[0]["params"] == tables[0]["params"].iloc[0]  # cold in both runs
    np.testing.assert_array_equal(tables[0]["value"][first], tables[1]["value"][first])
    assert not np.array_equal(tables[0]["value"][~first], tables[1]["value"][~first])


def test_cv_select_per_pair_l2_is_the_summed_l2_over_training_pairs(biased) -> None:
    """``l2_per_pair``: a grid value c is λ = c · n_train ([ICML16]'s grid read per pair)."""
    from debiaseval.selection.ips_cv import model_l2

    _, frame = biased
    frame = frame.iloc[: 2 * (len(frame) // 2)]  # two folds of n/2 training pairs each
    args = (
        frame["user"].to_numpy(),
        frame["item"].to_numpy(),
        frame["rating"].to_numpy(),
        frame["propensity"].to_numpy(),
    )
    half = len(frame) // 2
    kwargs = dict(n_users=200, n_items=250, metric="mse", n_folds=2)
    _, summed = cv_select(
        *args, **kwargs, grid=[{"factors": 3, "l2": 5.0}], rng=np.random.default_rng(2)
    )
    _, per_pair = cv_select(
        *args,
        **kwargs,
        grid=[{"factors": 3, "l2": 5.0 / half}],
        rng=np.random.default_rng(2),
        l2_per_pair=True,
    )
    np.testing.assert_allclose(per_pair["value"], summed["value"], rtol=1e-10)
    assert model_l2(1e-3, 5220, True) == pytest.approx(5.22) and model_l2(3.0, 10, False) == 3.0
