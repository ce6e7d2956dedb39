"""Built-in recommenders ([SAC20] §4): one shared contract check plus hand-computed cases.

See docs/experiments/e1.md.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from debiaseval.recommenders import (
    RECOMMENDERS,
    AvgRating,
    ContractError,
    ItemKNN,
    LightFMRanker,
    PosPop,
    Random,
    Recommender,
    UserKNN,
    check_recommender,
    make_recommender,
)
from debiaseval.recommenders.ranking import top_k

# Small, fast settings for the shared check; defaults elsewhere.
FAST_PARAMS: dict[str, dict] = {name: {"epochs": 3, "factors": 8} for name in ("mf", "mf_ips")}


def random_ratings(n_users: int, n_items: int, density: float, seed: int, *, integer: bool):
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    values = rng.integers(1, 6, mask.sum()) if integer else rng.uniform(1, 5, mask.sum())
    rows, cols = np.nonzero(mask)
    return sp.csr_matrix((values.astype(np.float64), (rows, cols)), shape=(n_users, n_items))


@pytest.fixture(scope="module")
def train() -> sp.csr_matrix:
    return random_ratings(40, 25, 0.3, seed=7, integer=True)


# -- the shared check over every registered recommender -----------------------


@pytest.mark.parametrize("name", sorted(RECOMMENDERS))
def test_contract(name: str, train: sp.csr_matrix) -> None:
    cls = RECOMMENDERS[name]
    assert cls.name == name and issubclass(cls, Recommender)
    params = FAST_PARAMS.get(name, {})
    check_recommender(cls, params, train=train)
    assert isinstance(make_recommender(name, **params), cls)
    # a fitted model survives pickling (workflow caches)
    model = make_recommender(name, **params).fit(train, seed=3)
    users = np.arange(train.shape[0])
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(model)).score(users), model.score(users)
    )


class _Counter(Recommender):
    """A valid recommender whose behaviour each test below breaks in one way."""

    name = "counter"

    def __init__(self, *, shift: float = 0.0) -> None:
        self.shift = shift

    def _fit(self, train, seed):
        self.counts_ = np.bincount(train.indices, minlength=self.n_items_).astype(np.float64)

    def _score(self, users):
        return np.tile(self.counts_ + self.shift, (users.size, 1))


def test_check_recommender_passes_a_valid_class() -> None:
    check_recommender(_Counter, {"shift": 1.0})


class _Keeps(_Counter):
    def _fit(self, train, seed):
        super()._fit(train, seed)
        self.cache = 1  # learned state without a trailing underscore


class _Shared(_Counter):
    def _fit(self, train, seed):
        super()._fit(train, seed)
        self.table_ = np.tile(self.counts_, (self.n_users_, 1))

    def _score(self, users):
        if users.size == self.n_users_ and np.array_equal(users, np.arange(self.n_users_)):
            return self.table_  # the caller's array is the model's own
        return self.table_[users]


class _Unseeded(_Counter):
    def _fit(self, train, seed):
        super()._fit(train, seed)
        self.counts_ = self.counts_ + np.random.default_rng().random(self.n_items_)


class _Stores(_Counter):
    def __init__(self, *, shift: float = 0.0) -> None:
        self.shift = shift
        self.extra = []


class _Stepped(_Counter):
    def __init__(self, *, shift: float = 0.0, epochs: int = 3) -> None:
        self.shift = shift
        self.epochs = epochs

    def _fit(self, train, seed):
        super()._fit(train, seed)
        self.counts_ = self.counts_ * self.epochs

    def _fit_partial(self, train, epochs):
        self.counts_ = self.counts_ + 2 * epochs  # not what more epochs of _fit give


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (_Keeps, "learned attributes must end in '_': cache"),
        (_Shared, "returns an array it keeps"),
        (_Unseeded, "fitted with the same seed scores differently"),
        (_Stores, "stores more than its parameters"),
        (_Stepped, "fit_partial"),
    ],
)
def test_check_recommender_names_the_broken_rule(cls, message: str) -> None:
    with pytest.raises(ContractError, match=message) as err:
        check_recommender(cls)
    assert "\n" not in str(err.value) and str(err.value).startswith(cls.__qualname__)


def test_make_recommender_errors() -> None:
    with pytest.raises(ValueError, match="unknown recommender 'svd'") as err:
        make_recommender("svd")
    assert "\n" not in str(err.value) and "userknn" in str(err.value)
    with pytest.raises(ValueError, match="'userknn': neighbours") as err:
        make_recommender("userknn", k=5, neighbours=3)
    assert "\n" not in str(err.value)
    assert make_recommender("itemknn", k=7).k == 7
    assert set(RECOMMENDERS) == {
        "random",
        "pospop",
        "avgrating",
        "userknn",
        "itemknn",
        "mf",
        "mf_ips",
    }


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("userknn", {"k": 0}),
        ("itemknn", {"k": 2.5}),
        ("avgrating", {"damping": -1}),
        ("pospop", {"positive_threshold": "3"}),
        ("mf", {"loss": "logistic"}),
        ("mf", {"factors": 0}),
        ("mf", {"learning_rate": 0}),
        ("mf", {"alpha": float("nan")}),
    ],
)
def test_invalid_hyperparameters(name: str, params: dict, train: sp.csr_matrix) -> None:
    model = RECOMMENDERS[name](**params)  # __init__ stores, never checks
    with pytest.raises(ValueError, match=next(iter(params))):
        model.fit(train)
    with pytest.raises(ValueError, match=next(iter(params))) as err:
        make_recommender(name, **params)  # the factory checks eagerly (config validation)
    assert "\n" not in str(err.value)


def test_invalid_fit_arguments(train: sp.csr_matrix) -> None:
    with pytest.raises(ValueError, match="seed"):
        PosPop().fit(train, seed=-1)
    with pytest.raises(ValueError):
        PosPop().fit(train.toarray())


# -- baselines ------------------------------------------------------------------

TINY = sp.csr_matrix(
    np.array(
        [
            [5, 3, 0, 0],
            [4, 0, 0, 1],
            [3.5, 4, 0, 2],
        ],
        dtype=np.float64,
    )
)


def test_random_depends_only_on_seed_and_pair(train: sp.csr_matrix) -> None:
    a = Random().fit(train, seed=1).score(np.arange(40))
    b = Random().fit(train, seed=2).score(np.arange(40))
    assert not np.allclose(a, b)
    assert a.min() >= 0 and a.max() < 1
    # a matrix with more users gives the same scores to the shared users
    bigger = sp.vstack([train, train]).tocsr()
    np.testing.assert_array_equal(Random().fit(bigger, seed=1).score(np.arange(40)), a)


def test_pospop_counts_strictly_positive_ratings() -> None:
    scores = PosPop().fit(TINY).score(np.array([0, 2]))
    np.testing.assert_array_equal(scores, [[3, 1, 0, 0], [3, 1, 0, 0]])  # 3.0 is not positive
    lenient = PosPop(positive_threshold=1.5).fit(TINY).score(np.array([1]))
    np.testing.assert_array_equal(lenient, [[3, 2, 0, 1]])


def test_avgrating_undamped_and_damped() -> None:
    mu = (5 + 3 + 4 + 1 + 3.5 + 4 + 2) / 7
    plain = AvgRating().fit(TINY).score(np.array([0]))[0]
    np.testing.assert_allclose(plain, [12.5 / 3, 3.5, mu, 1.5])  # unrated item -> mu
    damped = AvgRating(damping=2).fit(TINY).score(np.array([1]))[0]
    np.testing.assert_allclose(
        damped, [(12.5 + 2 * mu) / 5, (7 + 2 * mu) / 4, mu, (3 + 2 * mu) / 4]
    )
    empty = AvgRating().fit(sp.csr_matrix((2, 3))).score(np.array([0, 1]))
    np.testing.assert_array_equal(empty, np.zeros((2, 3)))


# -- neighbourhood models against a dense brute-force reference ----------------


def cosine(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1)
    norms[norms == 0] = 1
    unit = m / norms[:, None]
    return unit @ unit.T


def top_neighbours(sim_row: np.ndarray, self_index: int, k: int) -> np.ndarray:
    others = np.array([j for j in range(sim_row.size) if j != self_index])
    order = sorted(others, key=lambda j: (-sim_row[j], j))  # ties: smaller index
    return np.array(order[:k], dtype=int)


def brute_userknn(r: np.ndarray, k: int) -> np.ndarray:
    sim = cosine(r)
    out = np.zeros_like(r)
    for u in range(r.shape[0]):
        for v in top_neighbours(sim[u], u, k):
            out[u] += sim[u, v] * r[v]  # r[v, i] = 0 when v did not rate i
    return out


def brute_itemknn(r: np.ndarray, k: int, direction: str = "rated_to_candidate") -> np.ndarray:
    sim = cosine(r.T)
    out = np.zeros_like(r)
    for j in range(r.shape[1]):
        for i in top_neighbours(sim[j], j, k):
            if direction == "rated_to_candidate":  # RankSys: rated j votes for i in N_k(j)
                out[:, i] += sim[i, j] * r[:, j]  # r[u, j] = 0 when u did not rate j
            else:  # candidate j collects the votes of the rated i in N_k(j)
                out[:, j] += sim[i, j] * r[:, i]
    return out


@pytest.mark.parametrize("k", [1, 3, 10, 100])
@pytest.mark.parametrize(
    ("cls", "params", "brute"),
    [
        (UserKNN, {}, brute_userknn),
        (ItemKNN, {}, brute_itemknn),
        (ItemKNN, {"direction": "rated_to_candidate"}, brute_itemknn),
        (
            ItemKNN,
            {"direction": "candidate_to_rated"},
            lambda r, k: brute_itemknn(r, k, "candidate_to_rated"),
        ),
    ],
)
def test_knn_matches_brute_force(cls, params, brute, k: int) -> None:
    dense = random_ratings(30, 20, 0.25, seed=k, integer=False).toarray()
    dense[3] = 0  # a user without ratings
    dense[:, 4] = 0  # an item without ratings
    x = sp.csr_matrix(dense)
    scores = cls(k=k, **params).fit(x).score(np.arange(30))
    np.testing.assert_allclose(scores, brute(x.toarray(), k), rtol=1e-10, atol=1e-12)


def test_knn_neighbour_ties_broken_by_smaller_index() -> None:
    # users 1 and 2 are equally similar to user 0 but rated different items
    r = sp.csr_matrix(np.array([[1.0, 0, 0], [1, 1, 0], [1, 0, 1]]))
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(UserKNN(k=1).fit(r).score(np.array([0])), [[s, s, 0]])
    # items 1 and 2 are equally similar to item 0; user 1 rated only item 1
    np.testing.assert_allclose(ItemKNN(k=1).fit(r.T.tocsr()).score(np.array([1])), [[s, 0, 0]])


def test_knn_thread_count_does_not_matter() -> None:
    from debiaseval.recommenders import knn

    x = random_ratings(30, 20, 0.3, seed=1, integer=True)
    lists = [knn._neighbour_lists(knn._row_normalize(x), 5, threads) for threads in (1, 2, 7)]
    for other in lists[1:]:
        np.testing.assert_array_equal(other.indices, lists[0].indices)
        np.testing.assert_array_equal(other.data, lists[0].data)


# -- LightFM ranking MF ---------------------------------------------------------


def block_data(seed: int = 0):
    """Users like exactly the items of their block; half the likes are held out."""
    rng = np.random.default_rng(seed)
    n_users, n_items, n_blocks = 120, 60, 4
    ub, ib = np.arange(n_users) % n_blocks, np.arange(n_items) % n_blocks
    liked = ub[:, None] == ib[None, :]
    in_train = liked & (rng.random(liked.shape) < 0.5)
    rows, cols = np.nonzero(in_train)
    train = sp.csr_matrix((np.full(rows.size, 5.0), (rows, cols)), shape=liked.shape)
    return train, liked & ~in_train


def hit_rate(model: Recommender, train: sp.csr_matrix, test: np.ndarray) -> float:
    """Share of the top-10 recommendations that are held-out likes (at most about 0.75)."""
    recs = top_k(model.fit(train, seed=0), train, 10)
    return float(test[recs["user"], recs["item"]].mean())


@pytest.mark.parametrize(("loss", "alpha"), [("warp", 1e-4), ("bpr", 1e-5)])
def test_mf_learns_block_structure(loss: str, alpha: float) -> None:
    train, test = block_data()
    mf = hit_rate(LightFMRanker(loss=loss, alpha=alpha, factors=8, epochs=20), train, test)
    rnd = hit_rate(Random(), train, test)
    assert rnd < 0.3 and mf > 0.6, (mf, rnd)


def test_mf_scores_equal_lightfm_predict() -> None:
    from lightfm import LightFM

    train, _ = block_data()
    model = LightFMRanker(factors=8, epochs=2, alpha=0.02, learning_rate=0.07).fit(train, seed=5)
    lfm = LightFM(
        no_components=8,
        loss="warp",
        learning_rate=0.07,
        item_alpha=0.02,
        user_alpha=0.02,
        random_state=np.random.RandomState(5),
    ).fit(sp.coo_matrix(train > 3, dtype=np.float32), epochs=2)
    users = np.repeat([0, 7], train.shape[1]).astype(np.int32)
    items = np.tile(np.arange(train.shape[1]), 2).astype(np.int32)
    expected = lfm.predict(users, items).reshape(2, -1)
    np.testing.assert_allclose(model.score(np.array([0, 7])), expected, rtol=1e-5, atol=1e-5)


def test_mf_positives_only_changes_training_data(train: sp.csr_matrix) -> None:
    a = LightFMRanker(factors=4, epochs=2).fit(train).score(np.arange(5))
    b = LightFMRanker(factors=4, epochs=2, positives_only=False).fit(train).score(np.arange(5))
    assert not np.allclose(a, b)


def test_mf_epoch_steps_equal_a_fit_of_as_many_epochs() -> None:
    train, _ = block_data()
    stepped = LightFMRanker(factors=8, epochs=6)
    done = list(stepped.iter_epochs(train, seed=3, step=4))
    assert done == [4, 6] and stepped.epochs_ == 6
    fitted = LightFMRanker(factors=8, epochs=6).fit(train, seed=3)
    users = np.arange(train.shape[0])
    np.testing.assert_array_equal(stepped.score(users), fitted.score(users))


def test_mf_health_flags_collapse_and_divergence() -> None:
    from debiaseval.data.synthetic import generate_synthetic

    data = generate_synthetic(n_users=200, n_items=300, density=0.05, n_mar=2, seed=0)
    mnar = data.mnar_frame()
    train = sp.csr_matrix((mnar["rating"], (mnar["user"], mnar["item"])), shape=(200, 300))
    assert LightFMRanker(factors=8, epochs=30, alpha=1e-5).fit(train).health() is None
    collapsed = LightFMRanker(factors=8, epochs=30, alpha=0.06).fit(train).health()
    assert collapsed is not None and collapsed.startswith("collapsed"), collapsed
    diverged = LightFMRanker(factors=16, epochs=20, alpha=0.6).fit(train).health()
    assert diverged is not None and diverged.startswith("diverged"), diverged
    model = LightFMRanker(factors=8, epochs=2).fit(train)
    model.item_embeddings_[0, 0] = np.inf
    assert model.health() == "diverged: non-finite embeddings"
    model.item_embeddings_[0, 0] = 1e6
    assert model.health().startswith("diverged: |embedding|")


class _NoInit(Recommender):
    """No __init__ of its own: a recommender without hyperparameters."""

    name = "no_init"

    def _fit(self, train, seed):
        self.counts_ = np.bincount(train.indices, minlength=self.n_items_).astype(np.float64)

    def _score(self, users):
        return np.tile(self.counts_, (users.size, 1))


def test_a_class_without_init_has_no_hyperparameters() -> None:
    assert _NoInit().get_params() == {}
    check_recommender(_NoInit)


class _NoisyScores(_Counter):
    def _score(self, users):
        return super()._score(users) + np.random.default_rng().random((users.size, 1))


class _KeepsRng(_Counter):
    """Seeded once per fit, but each score draws on: the second call differs from the first."""

    def _fit(self, train, seed):
        super()._fit(train, seed)
        self.rng_ = np.random.default_rng(seed)

    def _score(self, users):
        return super()._score(users) + self.rng_.random((users.size, 1))


@pytest.mark.parametrize(
    ("cls", "what"),
    [
        (_Counter, None),
        (_Unseeded, "a fresh instance fitted with the same seed scores differently"),
        (_NoisyScores, "scoring the same users twice gives different scores"),
        (_KeepsRng, "scoring the same users twice gives different scores"),
    ],
)
def test_check_determinism_on_hand_made_classes(cls, what) -> None:
    from debiaseval.recommenders.checks import check_determinism

    if what is None:
        check_determinism(cls, {"shift": 2.0})
        return
    with pytest.raises(ContractError) as err:
        check_determinism(cls, label="'mine'")
    assert str(err.value) == (
        f"'mine' is not deterministic: {what} on a 40 × 25 sample; expected the same scores for "
        "the same seed (draw every random choice from the `seed` that _fit is given, never from "
        "global or fresh random state)"
    )
