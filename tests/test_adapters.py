"""Adapters for implicit and Cornac: the shared contract check, determinism, equality with
the libraries' own computations, the one-line error without the extra, entry points, tuning
(early-stopped epochs, diverged fits never selected) and Coat, where each beats Random."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from debiaseval import api
from debiaseval.io.errors import ConfigError
from debiaseval.recommenders import check_recommender, positive_mask, resolve_recommender
from debiaseval.recommenders.adapters import MissingExtraError
from debiaseval.recommenders.checks import check_train_matrix
from debiaseval.selection.specs import check_recommender_spec
from debiaseval.selection.tuning import EarlyStopping, tune_recommender
from debiaseval.workflow.config import validate_config

implicit = pytest.importorskip("implicit", reason="the implicit extra is not installed")
cornac = pytest.importorskip("cornac", reason="the cornac extra is not installed")

from debiaseval.recommenders.adapters.cornac import CornacEASE, CornacHPF  # noqa: E402
from debiaseval.recommenders.adapters.implicit import ImplicitALS, ImplicitBPR  # noqa: E402

ADAPTERS = {
    "implicit_als": (ImplicitALS, {"factors": 8, "epochs": 3}),
    "implicit_bpr": (ImplicitBPR, {"factors": 8, "epochs": 3, "learning_rate": 0.05}),
    "cornac_ease": (CornacEASE, {"regularization": 10.0}),
    "cornac_hpf": (CornacHPF, {"factors": 4, "iterations": 20}),
}
SEEDED = ("implicit_als", "implicit_bpr", "cornac_hpf")  # EASE is closed-form
EXTRA = {"implicit_als": "implicit", "implicit_bpr": "implicit"}  # the others: cornac


@pytest.fixture(scope="module")
def train() -> sp.csr_matrix:
    return check_train_matrix()


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_contract_and_entry_point(name, train):
    cls, params = ADAPTERS[name]
    assert resolve_recommender(name) is cls and cls.name == name  # pyproject's entry point
    check_recommender(cls, params, train=train)  # includes fit + fit_partial == longer fit
    model = cls(**params).fit(train, seed=3)
    users = np.arange(train.shape[0])
    np.testing.assert_array_equal(
        pickle.loads(pickle.dumps(model)).score(users), model.score(users)
    )


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_same_seed_same_scores_and_the_seed_is_used(name, train):
    cls, params = ADAPTERS[name]
    users = np.arange(train.shape[0])
    first = cls(**params).fit(train, seed=5).score(users)
    np.testing.assert_array_equal(cls(**params).fit(train, seed=5).score(users), first)
    other = cls(**params).fit(train, seed=6).score(users)
    assert np.array_equal(other, first) == (name not in SEEDED)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_ratings_at_or_below_the_threshold_are_not_feedback(name, train):
    cls, params = ADAPTERS[name]
    users = np.arange(train.shape[0])
    low = train.copy()
    low.data[low.data > 3] = 0  # keep only the non-positive ratings
    low.eliminate_zeros()
    positives = train - low
    # the positives alone give the same model as all ratings: the others are not feedback
    np.testing.assert_array_equal(
        cls(**params).fit(positives, seed=2).score(users),
        cls(**params).fit(train, seed=2).score(users),
    )
    everything = cls(**params, positives_only=False).fit(train, seed=2).score(users)
    assert not np.array_equal(everything, cls(**params).fit(train, seed=2).score(users))


def test_als_equals_implicit_with_confidence_one_plus_alpha(train):
    """The adapter = implicit's ALS on the positives with stored confidence 1 + alpha."""
    from implicit.cpu.als import AlternatingLeastSquares

    alpha, seed = 4.0, 11
    model = ImplicitALS(factors=6, regularization=0.5, alpha=alpha, epochs=4).fit(train, seed=seed)
    with threadpool_limits(limits=1, user_api="blas"):
        reference = AlternatingLeastSquares(
            factors=6,
            regularization=0.5,
            iterations=4,
            num_threads=1,
            random_state=np.random.default_rng(seed),
        )
        confidence = positive_mask(train, 3.0).astype(np.float32) * np.float32(1 + alpha)
        reference.fit(confidence, show_progress=False)
    expected = reference.user_factors.astype(np.float64) @ reference.item_factors.T.astype(float)
    np.testing.assert_array_equal(model.score(np.arange(train.shape[0])), expected)
    # a different alpha is a different confidence, hence a different model
    other = ImplicitALS(factors=6, regularization=0.5, alpha=0.0, epochs=4).fit(train, seed=seed)
    assert not np.allclose(other.score(np.arange(train.shape[0])), expected)


def test_bpr_epochs_continue_one_stream(train):
    """One implicit call per epoch from one Generator: 2 + 3 epochs = 5 epochs, and the
    item bias (implicit's last factor column, user side fixed at 1) is part of the score."""
    users = np.arange(train.shape[0])
    whole = ImplicitBPR(factors=4, epochs=5).fit(train, seed=1)
    stepped = ImplicitBPR(factors=4, epochs=2).fit(train, seed=1).fit_partial(train, epochs=3)
    np.testing.assert_array_equal(stepped.score(users), whole.score(users))
    assert stepped.epochs_ == 5
    user_factors, item_factors = whole.model_.user_factors, whole.model_.item_factors
    assert np.all(user_factors[:, -1] == 1.0)
    expected = user_factors[:, :-1].astype(float) @ item_factors[:, :-1].T.astype(float)
    np.testing.assert_allclose(whole.score(users), expected + item_factors[:, -1], rtol=1e-12)


def test_ease_is_steck_closed_form(train):
    """B = -P / diag(P) column-wise, zero diagonal, P = (XᵀX + λI)⁻¹; scores X·B."""
    x = positive_mask(train, 3.0).toarray()
    p = np.linalg.inv(x.T @ x + 10.0 * np.eye(x.shape[1]))
    b = -p / np.diag(p)
    np.fill_diagonal(b, 0.0)
    users = np.arange(train.shape[0])
    signed = CornacEASE(regularization=10.0, nonnegative=False).fit(train).score(users)
    np.testing.assert_allclose(signed, x @ b, rtol=1e-10, atol=1e-12)
    clipped = CornacEASE(regularization=10.0).fit(train).score(users)
    np.testing.assert_allclose(clipped, x @ np.maximum(b, 0.0), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["cornac_ease", "cornac_hpf"])
def test_cornac_scores_equal_cornacs_own(name, train):
    """The training Dataset keeps the project's ids, and the numpy scores are Cornac's score()."""
    cls, params = ADAPTERS[name]
    adapter = cls(**params).fit(train, seed=4)
    dataset = adapter._dataset(train, 4)
    assert list(dataset.uid_map) == list(range(train.shape[0]))
    assert (dataset.csr_matrix != positive_mask(train, 3.0)).nnz == 0
    if name == "cornac_ease":
        library = cornac.models.EASE(lamb=10.0, posB=True, verbose=False)
    else:
        library = cornac.models.HPF(k=4, max_iter=20, verbose=False, seed=4)
    library.fit(dataset)
    for user in range(train.shape[0]):
        np.testing.assert_allclose(
            adapter.score(np.array([user]))[0],
            np.ravel(library.score(user)),
            rtol=1e-12,
            atol=1e-15,
        )


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_without_the_extra_one_line_error_naming_it(name, train, monkeypatch):
    extra = EXTRA.get(name, "cornac")
    for module in [m for m in sys.modules if m == extra or m.startswith(f"{extra}.")]:
        monkeypatch.setitem(sys.modules, module, None)  # as if the library were not installed
    monkeypatch.setitem(sys.modules, extra, None)
    message = f"algorithm '{name}' needs the {extra} package: pip install -e '.[{extra}]'"
    cls, params = ADAPTERS[name]
    with pytest.raises(MissingExtraError) as error:
        cls(**params).fit(train)
    assert str(error.value) == message and isinstance(error.value, ImportError)
    with pytest.raises(ConfigError) as config_error:  # the config check, before any job
        check_recommender_spec({"algorithm": name, "params": params}, "e1.recommenders.M")
    assert str(config_error.value) == f"config error at 'e1.recommenders.M': {message}"


def test_the_package_imports_and_resolves_without_the_extras():
    code = (
        "import sys\n"
        "sys.modules['implicit'] = sys.modules['cornac'] = None\n"
        "from debiaseval.recommenders import resolve_recommender\n"
        "print(resolve_recommender('implicit_als').name, resolve_recommender('cornac_ease').name)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["implicit_als", "cornac_ease"]


def _synthetic_parts(seed: int = 0):
    interactions, users, items = api.load_dataset(
        "synthetic", config={"synthetic": {"n_users": 80, "n_items": 60, "seed": seed}}
    )
    rng = np.random.default_rng(seed)
    mnar = interactions[interactions["part"] == "mnar"]
    is_val = rng.random(len(mnar)) < 0.2
    return mnar[~is_val], mnar[is_val], len(users), len(items)


def test_tuning_early_stops_implicit_epochs_and_never_selects_a_diverged_fit():
    train, val, n_users, n_items = _synthetic_parts()
    common = dict(
        n_users=n_users,
        n_items=n_items,
        metric="recall",
        k=10,
        positive_threshold=3.0,
        batch_size=64,
        seed=0,
        early_stopping=EarlyStopping(max_epochs=12, eval_every=3),
    )
    selected, table = tune_recommender(
        train,
        val,
        algorithm="implicit_als",
        params={"factors": 4},
        grid={"alpha": [0.0, 5.0]},
        **common,
    )
    assert set(table["epochs"]) <= {3, 6, 9, 12} and (table["status"] == "ok").all()
    assert selected["epochs"] == int(table.loc[table["selected"], "epochs"].iloc[0])
    selected, table = tune_recommender(
        train,
        val,
        algorithm="implicit_bpr",
        params={"factors": 4},
        grid={"learning_rate": [1e30, 0.05]},
        **common,
    )
    assert table["status"].tolist()[0].startswith("diverged: non-finite")
    assert table["selected"].tolist() == [False, True] and selected["learning_rate"] == 0.05


# -- Coat (the paper's E1 protocol through the API) -------------------------------------------

COAT_RECOMMENDERS = {
    "Random": {"algorithm": "random"},
    "ALS": {
        "algorithm": "implicit_als",
        "params": {"alpha": 2.0},
        "grid": {"factors": [20, 60], "regularization": [1.0, 10.0]},
    },
    "BPR": {
        "algorithm": "implicit_bpr",
        "params": {"factors": 64, "epochs": 100},
        "grid": {"learning_rate": [0.05, 0.1]},
    },
    "EASE": {"algorithm": "cornac_ease", "grid": {"regularization": [10.0, 100.0, 500.0]}},
    "HPF": {"algorithm": "cornac_hpf", "grid": {"factors": [10, 20]}},
}


@pytest.mark.realdata
@pytest.mark.slow
def test_each_adapter_beats_random_on_coat_gt(monkeypatch, tmp_path):
    if not os.environ.get("DEBIASEVAL_MIRROR"):
        pytest.skip("DEBIASEVAL_MIRROR not set: no local copy of the Coat dataset")
    monkeypatch.setenv("DEBIASEVAL_DATA", str(tmp_path / "cache"))
    config = {
        "e1": {
            "recommenders": COAT_RECOMMENDERS,
            "ks": [10],
            "metrics": ["recall"],
            # fixed epochs: early stopping with patience 2 every 5 epochs stops BPR in the
            # plateau of its first tens of epochs on Coat (see docs/own-recommender.md), which
            # is the protocol's choice, not the adapter's; tuning's early stopping is tested above
            "tuning": {"early_stopping": None},
        }
    }
    summary = api.run("e1", "coat", config, seeds=2)["summary"]
    gt = summary.query("metric == 'recall' and k == 10 and testset == 'gt'")
    recall = gt.set_index("recommender")["mean"]
    assert set(recall.index) == set(COAT_RECOMMENDERS)
    for name in ("ALS", "BPR", "EASE", "HPF"):
        assert recall[name] > recall["Random"], recall.round(4).to_dict()


def _docs_section() -> str:
    """The section of docs/own-recommender.md on the adapters."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "own-recommender.md").read_text()
    return page.split("\n## Models from implicit and Cornac\n", 1)[1].split("\n## ", 1)[0]


def test_docs_section_config_validates_and_its_error_is_the_one_shown(monkeypatch):
    import yaml

    section = _docs_section()
    config = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
    validated = validate_config(config, "e1")["e1"]["recommenders"]
    assert {spec["algorithm"] for spec in validated.values()} == {"implicit_als", "cornac_ease"}
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1).strip()
    for module in [m for m in sys.modules if m == "implicit" or m.startswith("implicit.")]:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigError) as error:
        validate_config(config, "e1")
    assert str(error.value) == shown


def test_the_adapters_config_joins_the_paper_config():
    """config/adapters.yaml merged into config/paper.yaml as Snakemake merges config files."""
    import yaml
    from snakemake.utils import update_config

    root = Path(__file__).resolve().parents[1] / "config"
    config = yaml.safe_load((root / "paper.yaml").read_text())
    update_config(config, yaml.safe_load((root / "adapters.yaml").read_text()))
    block = validate_config(config, "e1")["e1"]
    assert list(block["recommenders"]) == [
        "Random",
        "PosPop",
        "AvgRating",
        "UserKNN",
        "ItemKNN",
        "MF",
        "ALS",
        "BPR",
        "EASE",
        "HPF",
    ]
    assert block["datasets"] == ["coat"] and config["seeds"] == 10
    assert block["tuning"]["early_stopping"] == {"max_epochs": 60, "eval_every": 5, "patience": 2}
