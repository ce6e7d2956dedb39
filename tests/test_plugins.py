"""Recommenders of one's own: by import path, entry point or registration, in every experiment
that names an algorithm, with one-line errors for a plugin that cannot be used."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml

from debiaseval import api
from debiaseval.io.errors import ConfigError
from debiaseval.recommenders import ContractError, check_recommender, resolve_recommender
from debiaseval.recommenders.registry import (
    PLUGIN_PATHS_ENV,
    plugin_source_hash,
    register_recommender,
)
from debiaseval.selection.specs import CHECKED_ENV
from debiaseval.workflow.config import validate_config

TINY = yaml.safe_load((Path(__file__).parent / "configs" / "tiny.yaml").read_text())

MY_POP = '''
import numpy as np

from debiaseval.recommenders import Recommender


class MyPop(Recommender):
    """PosPop written again: the positive training ratings of each item."""

    name = "mypop"

    def __init__(self, *, positive_threshold: float = 3.0) -> None:
        self.positive_threshold = positive_threshold

    def _fit(self, train, seed):
        positive = (train.data > self.positive_threshold).astype(np.float64)
        self.counts_ = np.bincount(train.indices, weights=positive, minlength=self.n_items_)

    def _score(self, users):
        return np.tile(self.counts_, (users.size, 1))
'''

# Trained by epochs: PosPop's ranking up to `peak` epochs, its reverse after, so that early
# stopping on validation must keep the first evaluation.
PEAKED = """
import numpy as np

from debiaseval.recommenders import Recommender


class Peaked(Recommender):
    name = "peaked"

    def __init__(self, *, epochs: int = 30, peak: int = 10) -> None:
        self.epochs = epochs
        self.peak = peak

    def _fit(self, train, seed):
        self.counts_ = np.bincount(
            train.indices, weights=(train.data > 3).astype(float), minlength=self.n_items_
        )
        self.trained_ = int(self.epochs)

    def _fit_partial(self, train, epochs):
        self.trained_ += int(epochs)

    def _score(self, users):
        sign = 1.0 if self.trained_ <= self.peak else -1.0
        return np.tile(sign * self.counts_, (users.size, 1))
"""


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A folder of plugin modules (write_plugin(name, source)), importable only through the
    config's plugin_paths; sys.path, the environment and sys.modules are restored after."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(PLUGIN_PATHS_ENV, raising=False)
    monkeypatch.delenv(CHECKED_ENV, raising=False)
    folder = tmp_path / "plugins"
    folder.mkdir()
    written: list[str] = []

    def write_plugin(name: str, source: str) -> Path:
        path = folder / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        sys.modules.pop(name, None)
        written.append(name)
        return path

    write_plugin.folder = folder
    yield write_plugin
    for name in written:
        sys.modules.pop(name, None)


def _config(folder: Path, **blocks) -> dict:
    return {**TINY, "plugin_paths": [str(folder)], **blocks}


def _without(frame: pd.DataFrame, column: str, old: str, new: str) -> pd.DataFrame:
    rows = frame[frame[column] == old].assign(**{column: new})
    return rows.reset_index(drop=True)


@pytest.mark.slow
def test_a_plugin_pospop_gives_the_builtin_pospop_rows_in_e1_and_e5(plugins):
    plugins("mymodels", MY_POP)
    e1 = {
        **TINY["e1"],
        "recommenders": {
            "PosPop": {"algorithm": "pospop"},
            "Mine": {"algorithm": "mymodels:MyPop"},
            "ItemKNN": {"algorithm": "itemknn", "grid": {"k": [5]}},
        },
    }
    e5 = {
        **TINY["e5"],
        "models": {
            "pospop": {"algorithm": "pospop"},
            "mine": {"algorithm": "mymodels:MyPop"},
        },
    }
    config = _config(plugins.folder, e1=e1, e5=e5)
    out = api.run("e1", "synthetic", config, seeds=2)
    summary = out["summary"]
    pd.testing.assert_frame_equal(
        _without(summary, "recommender", "Mine", "X"),
        _without(summary, "recommender", "PosPop", "X"),
    )
    assert summary["mean"].gt(0).any()
    # the default weighting estimators estimate the plugin with no extra config
    assert {"SNIPS_WTD", "DR_POP"} <= set(summary.loc[summary["recommender"] == "Mine", "testset"])
    assert out["kendall"]["n_recommenders"].max() == 3  # the plugin is ranked too
    estimates = api.run("e5", "synthetic", config, seeds=2)["estimates"]
    columns = ["params", "k", "true_recall", "traditional_recall", "ure"]
    pd.testing.assert_frame_equal(
        estimates.loc[estimates["model"] == "mine", columns].reset_index(drop=True),
        estimates.loc[estimates["model"] == "pospop", columns].reset_index(drop=True),
    )


@pytest.mark.slow
def test_e2_runs_a_plugin_as_its_model(plugins):
    plugins("mymodels", MY_POP)
    e2 = {**TINY["e2"], "seeds": 1, "mf": {"algorithm": "pospop"}}
    builtin = api.run("e2", "synthetic", _config(plugins.folder, e2=e2))
    e2["mf"] = {"algorithm": "mymodels:MyPop"}
    mine = api.run("e2", "synthetic", _config(plugins.folder, e2=e2))
    for name in ("elicited", "summary", "wilcoxon"):
        pd.testing.assert_frame_equal(mine[name], builtin[name])
    e2["strategies"] = ["RND", "BIN"]
    with pytest.raises(ConfigError, match=r"^config error at 'e2\.strategies\.1': BIN trains"):
        api.run("e2", "synthetic", _config(plugins.folder, e2=e2))


@pytest.mark.slow
def test_a_plugin_trained_by_epochs_gets_early_stopping(plugins):
    plugins("epochs_plugin", PEAKED)
    stopping = {"max_epochs": 30, "eval_every": 5, "patience": 2}
    e1 = {
        **TINY["e1"],
        "recommenders": {"P": {"algorithm": "epochs_plugin:Peaked"}},
        "tuning": {"points_per_job": 1, "early_stopping": stopping},
    }
    tuning = api.run("e1", "synthetic", _config(plugins.folder, e1=e1), seeds=1)["tuning"]
    assert tuning["epochs"].tolist() == [5]  # the earliest of the equal best evaluations
    e1["recommenders"]["P"]["params"] = {"epochs": 10}
    with pytest.raises(ConfigError, match=r"'e1\.recommenders\.P': epochs are chosen by early"):
        validate_config(_config(plugins.folder, e1=e1))


@pytest.mark.parametrize(
    ("source", "algorithm", "message"),
    [
        (
            None,
            "mymodels:ImplicitALS",
            "cannot import 'mymodels:ImplicitALS': No module named 'mymodels'",
        ),
        (
            MY_POP,
            "mymodels:ImplicitALS",
            "cannot import 'mymodels:ImplicitALS': module "
            "'mymodels' has no attribute 'ImplicitALS'",
        ),
        (MY_POP, "mymodels", "unknown recommender 'mymodels'; known: random, pospop"),
        ("def broken(:\n", "mymodels:MyPop", "cannot import 'mymodels:MyPop': invalid syntax"),
        (
            "class MyPop:\n    name = 'x'\n",
            "mymodels:MyPop",
            "'mymodels:MyPop' is not a subclass of debiaseval.recommenders.Recommender",
        ),
        (
            MY_POP.replace('    name = "mypop"\n', ""),
            "mymodels:MyPop",
            "'mymodels:MyPop' has no class attribute `name`",
        ),
        (
            MY_POP.replace("def _score", "def score_"),
            "mymodels:MyPop",
            "'mymodels:MyPop' does not implement _score",
        ),
        (
            MY_POP.replace("self, *, positive", "self, positive"),
            "mymodels:MyPop",
            "'mymodels:MyPop'.__init__ parameter 'positive_threshold' is not keyword-only",
        ),
        (
            MY_POP.replace(
                "self.positive_threshold = positive_threshold",
                "self.threshold = positive_threshold",
            ),
            "mymodels:MyPop",
            "'mymodels:MyPop'.__init__ does not store parameter 'positive_threshold' unchanged",
        ),
        (
            MY_POP.replace("float = 3.0", "float"),
            "mymodels:MyPop",
            "'mymodels:MyPop'.__init__ parameter 'positive_threshold' has no default",
        ),
    ],
)
def test_a_plugin_that_cannot_be_used_is_one_line_naming_key_and_path(
    plugins, source, algorithm, message
):
    if source is not None:
        plugins("mymodels", source)
    for block, where in (
        ({"e1": {"recommenders": {"ALS": {"algorithm": algorithm}}}}, "e1.recommenders.ALS"),
        ({"e5": {"models": {"ALS": {"algorithm": algorithm}}}}, "e5.models.ALS"),
        ({"e2": {"mf": {"algorithm": algorithm}}}, "e2.mf"),
    ):
        sys.modules.pop("mymodels", None)
        with pytest.raises(ConfigError) as error:
            validate_config({"plugin_paths": [str(plugins.folder)], **block})
        text = str(error.value)
        assert text.startswith(f"config error at '{where}.algorithm': {message}"), text
        assert "\n" not in text


def test_the_issue_s_example_message_word_for_word(plugins):
    config = {"e1": {"recommenders": {"ALS": {"algorithm": "mymodels:ImplicitALS"}}}}
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    assert str(error.value) == (
        "config error at 'e1.recommenders.ALS.algorithm': cannot import 'mymodels:ImplicitALS': "
        f"No module named 'mymodels' (looked in the installed packages and in the plugin "
        f"folders: {Path.cwd()}); put mymodels.py in one of them, or its folder in the config "
        "key plugin_paths"
    )


def test_a_plugin_next_to_the_config_file_is_found(plugins, tmp_path, monkeypatch):
    """Issue 43, case 15: docs/own-recommender.md puts mymodels.py next to the config, and the
    module was looked for in the working directory only."""
    study = tmp_path / "study"
    study.mkdir()
    (study / "mine.yaml").write_text("e1: {recommenders: {P: {algorithm: 'besidemodels:MyPop'}}}\n")
    (study / "besidemodels.py").write_text(MY_POP)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    sys.modules.pop("besidemodels", None)
    config = yaml.safe_load((study / "mine.yaml").read_text())
    try:
        validate_config(config, configfiles=[str(study / "mine.yaml")])
    finally:
        sys.modules.pop("besidemodels", None)


def test_a_plugin_that_is_not_found_names_the_folders_and_plugin_paths(plugins):
    config = {
        "plugin_paths": [str(plugins.folder)],
        "e1": {"recommenders": {"P": {"algorithm": "nowhere.models:MyPop"}}},
    }
    with pytest.raises(ConfigError) as error:
        validate_config(config)
    text = str(error.value)
    assert text.startswith(
        "config error at 'e1.recommenders.P.algorithm': cannot import 'nowhere.models:MyPop': "
        "No module named 'nowhere' (looked in the installed packages and in the plugin folders: "
    ), text
    assert str(plugins.folder) in text
    assert text.endswith(
        "put nowhere.py in one of them, or its folder in the config key plugin_paths"
    )
    plugins("brokenmodels", "import notinstalledpackage\n")
    config["e1"]["recommenders"]["P"]["algorithm"] = "brokenmodels:MyPop"
    with pytest.raises(ConfigError) as error:  # the plugin was found: its own import failed
        validate_config(config)
    assert str(error.value).endswith("No module named 'notinstalledpackage'")


def _install(site: Path, dist: str, module: str, source: str, entry_points: str) -> None:
    """A minimal installed distribution in folder ``site``: its module and dist-info."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def test_an_installed_package_registers_short_names_by_entry_point(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    _install(
        site,
        "tinyplug",
        "tinyplug",
        MY_POP,
        """
        [debiaseval.recommenders]
        tinypop = tinyplug:MyPop
        ghost = tinyplug_missing:Ghost
    """,
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "tinyplug", raising=False)
    cls = resolve_recommender("tinypop")
    assert cls.__name__ == "MyPop" and cls.__module__ == "tinyplug"
    config = {"e1": {"recommenders": {"T": {"algorithm": "tinypop"}, "P": {"algorithm": "pospop"}}}}
    assert validate_config(config)["e1"]["recommenders"]["T"]["algorithm"] == "tinypop"
    with pytest.raises(ConfigError) as error:
        validate_config({"e5": {"models": {"G": {"algorithm": "ghost"}}}})
    assert str(error.value) == (
        "config error at 'e5.models.G.algorithm': cannot import 'ghost' (entry point "
        "'tinyplug_missing:Ghost'): No module named 'tinyplug_missing'"
    )
    with pytest.raises(ValueError, match=r"unknown recommender 'nope'; known: .*tinypop"):
        resolve_recommender("nope")


def test_register_recommender_names_a_class_for_the_api(plugins):
    module = plugins("registered", MY_POP.replace('name = "mypop"', 'name = "registered_pop"'))
    sys.path.append(str(module.parent))
    from registered import MyPop

    assert register_recommender(MyPop) is MyPop
    assert api.register_recommender is register_recommender
    assert resolve_recommender("registered_pop") is MyPop
    validate_config({"e5": {"models": {"R": {"algorithm": "registered_pop"}}}})

    class Clash(MyPop):
        name = "pospop"

    with pytest.raises(ValueError, match="'pospop' is a built-in recommender name"):
        register_recommender(Clash)

    class Positional(MyPop):
        name = "positional"

        def __init__(self, positive_threshold: float = 3.0) -> None:
            self.positive_threshold = positive_threshold

    with pytest.raises(ContractError, match="is not keyword-only"):
        register_recommender(Positional)


def test_check_recommender_runs_over_a_plugin(plugins):
    plugins("mymodels", MY_POP)
    plugins("epochs_plugin", PEAKED)
    check_recommender(resolve_recommender_with(plugins.folder, "mymodels:MyPop"))
    check_recommender(resolve_recommender_with(plugins.folder, "epochs_plugin:Peaked"))


def resolve_recommender_with(folder: Path, algorithm: str) -> type:
    validate_config({"plugin_paths": [str(folder)]})  # makes the folder importable
    return resolve_recommender(algorithm)


def test_the_plugin_source_hash_follows_the_code(plugins):
    path = plugins("mymodels", MY_POP)
    assert plugin_source_hash("pospop") == "" and plugin_source_hash("external") == ""
    resolve_recommender_with(plugins.folder, "mymodels:MyPop")
    first = plugin_source_hash("mymodels:MyPop")
    assert len(first) == 16 and plugin_source_hash("mymodels:MyPop") == first
    path.write_text(path.read_text() + "\n# a comment changes no code\n")
    assert plugin_source_hash("mymodels:MyPop") == first
    path.write_text(path.read_text() + "\nEDITED = True\n")
    assert plugin_source_hash("mymodels:MyPop") != first
    # a base class of one's own, in another file, is part of the plugin's source
    plugins("base_plugin", MY_POP)
    child = plugins(
        "child_plugin",
        "from base_plugin import MyPop\n\n\nclass Child(MyPop):\n    name = 'child'\n",
    )
    before = plugin_source_hash("child_plugin:Child")
    (child.parent / "base_plugin.py").write_text(MY_POP + "\nEDITED = True\n")
    assert plugin_source_hash("child_plugin:Child") != before


@pytest.mark.parametrize(
    ("spec", "where", "message"),
    [
        ({"algorithm": "external"}, "e1.recommenders.L", "algorithm external needs `recs`"),
        (
            {"algorithm": "external", "recs": "x/{dataset}/{seed}.csv", "params": {"k": 1}},
            "e1.recommenders.L.params",
            "precomputed lists (algorithm external) take no params",
        ),
        (
            {"algorithm": "pospop", "recs": "x.csv"},
            "e1.recommenders.L.recs",
            "only precomputed lists (algorithm external) take recs, ids, on_train_items",
        ),
        (
            {"algorithm": "pospop", "on_train_items": "drop"},
            "e1.recommenders.L.on_train_items",
            "only precomputed lists",
        ),
    ],
)
def test_precomputed_lists_keys_are_checked_across_fields(spec, where, message):
    with pytest.raises(ConfigError) as error:
        validate_config({"e1": {"recommenders": {"L": spec}}})
    assert str(error.value).startswith(f"config error at '{where}': {message}")
    ok = {"algorithm": "external", "recs": "lists/{dataset}/seed{seed}.parquet"}
    block = validate_config({"e1": {"recommenders": {"L": ok}}})["e1"]["recommenders"]["L"]
    assert (block["ids"], block["on_train_items"]) == ("raw", "error")


@pytest.mark.slow
def test_plugin_paths_come_after_the_installed_packages_and_reach_job_processes(plugins, tmp_path):
    """A plugin folder never shadows an installed module, and a child process (a Snakemake
    script job, which sees only its script's folder) imports the plugin through the variable."""
    import importlib.machinery
    import os
    import subprocess

    plugins("mymodels", MY_POP)
    plugins("yaml", "raise ImportError('the plugin folder shadowed an installed module')\n")
    validate_config({"plugin_paths": [str(plugins.folder)]})
    assert sys.path[-1] == str(plugins.folder.resolve())
    assert os.environ[PLUGIN_PATHS_ENV].split(os.pathsep)[-1] == str(plugins.folder.resolve())
    # the installed PyYAML is what `import yaml` finds, not the plugin folder's yaml.py
    found = importlib.machinery.PathFinder.find_spec("yaml", sys.path)
    assert Path(found.origin).parent.name == "yaml"  # the package, not plugins/yaml.py
    code = "from debiaseval.recommenders import resolve_recommender; "
    code += "print(resolve_recommender('mymodels:MyPop'))"
    elsewhere = tmp_path / "job"
    elsewhere.mkdir()
    job = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True, check=True
    )
    assert "mymodels.MyPop" in job.stdout
    env = {k: v for k, v in os.environ.items() if k != PLUGIN_PATHS_ENV}
    alone = subprocess.run(
        [sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True, env=env
    )
    assert alone.returncode != 0 and "No module named 'mymodels'" in alone.stderr


# MY_POP broken in one way each: noise drawn afresh when fitted, or when scored.
NOISY_FIT = MY_POP.replace(
    "minlength=self.n_items_)",
    "minlength=self.n_items_)\n"
    "        self.counts_ += np.random.default_rng().random(self.n_items_)",
)
NOISY_SCORE = MY_POP.replace(
    "return np.tile(self.counts_, (users.size, 1))",
    "return np.tile(self.counts_, (users.size, 1)) + np.random.random((users.size, 1))",
)
EXPECTED = (
    "expected the same scores for the same seed (draw every random choice from the `seed` that "
    "_fit is given, never from global or fresh random state)"
)


@pytest.mark.parametrize(
    ("source", "what"),
    [
        (NOISY_FIT, "a fresh instance fitted with the same seed scores differently"),
        (NOISY_SCORE, "scoring the same users twice gives different scores"),
    ],
)
def test_a_nondeterministic_plugin_is_refused_by_the_config_check_in_one_line(
    plugins, source, what
):
    plugins("noisymodels", source)
    for block, where in (
        (
            {"e1": {"recommenders": {"mine": {"algorithm": "noisymodels:MyPop"}}}},
            "e1.recommenders.mine",
        ),
        ({"e5": {"models": {"mine": {"algorithm": "noisymodels:MyPop"}}}}, "e5.models.mine"),
        ({"e2": {"mf": {"algorithm": "noisymodels:MyPop"}}}, "e2.mf"),
    ):
        with pytest.raises(ConfigError) as error:
            validate_config({"plugin_paths": [str(plugins.folder)], **block})
        assert str(error.value) == (
            f"config error at '{where}': 'noisymodels:MyPop' is not deterministic: {what} on a "
            f"40 × 25 sample; {EXPECTED}"
        )
    assert os.environ.get(CHECKED_ENV, "") == ""  # nothing refused is recorded as checked


NAN_SCORES = MY_POP.replace(
    "return np.tile(self.counts_, (users.size, 1))",
    "s = np.tile(self.counts_, (users.size, 1)); s[users % 3 == 1, 0] = np.nan; return s",
)


def test_nan_scores_are_the_documented_nan_line_not_a_determinism_failure(plugins):
    """Issue 43, case 11: NaN != NaN made NaN scores read as "not deterministic"."""
    plugins("nanmodels", NAN_SCORES)
    with pytest.raises(ConfigError) as error:
        validate_config(
            {
                "plugin_paths": [str(plugins.folder)],
                "e1": {"recommenders": {"mine": {"algorithm": "nanmodels:MyPop"}}},
            }
        )
    assert str(error.value) == (
        "config error at 'e1.recommenders.mine': nanmodels.MyPop._score() returned NaN scores "
        "for 13 of the 40 users of a batch (the first: user 1); expected finite scores, or -inf "
        "for an item it excludes"
    )


@pytest.mark.slow
def test_a_deterministic_plugin_passes_and_is_checked_once_per_run(plugins, monkeypatch):
    """The docs' PureSVD (seeded from `seed`) and MyPop pass; a (plugin, params) that passed is
    kept in DEBIASEVAL_CHECKED_PLUGINS, which job processes inherit: they do not fit it again."""
    from debiaseval.recommenders import checks

    plugins("popmodels", MY_POP)
    plugins("svdmodels", PURE_SVD)
    config = {
        "plugin_paths": [str(plugins.folder)],
        "e1": {
            "recommenders": {
                "Mine": {"algorithm": "popmodels:MyPop"},
                "SVD": {"algorithm": "svdmodels:PureSVD", "grid": {"factors": [8, 16]}},
            }
        },
    }
    validate_config(config)
    assert len(os.environ[CHECKED_ENV].split(",")) == 2  # MyPop, PureSVD's first grid point

    def no_fit(*args, **kwargs):
        raise AssertionError("checked twice")

    monkeypatch.setattr(checks, "check_determinism", no_fit)
    validate_config(config)  # as a job process does: nothing fitted
    validate_config({**config, "e5": {"models": {"M": {"algorithm": "popmodels:MyPop"}}}})


def test_built_ins_and_plugins_that_fail_on_the_sample_are_left_to_the_jobs(plugins):
    """Built-in recommenders are not fitted by the config check (the package's tests check
    them); a plugin that raises on the small sample is not refused for it."""
    plugins(
        "bigmodels",
        MY_POP.replace(
            "def _fit(self, train, seed):\n",
            (
                "def _fit(self, train, seed):\n"
                "        if train.shape[0] < 100:\n"
                "            raise ValueError('needs 100 users')\n"
            ),
        ),
    )
    validate_config(
        {
            "plugin_paths": [str(plugins.folder)],
            "e1": {
                "recommenders": {
                    "B": {"algorithm": "bigmodels:MyPop"},
                    "P": {"algorithm": "pospop"},
                }
            },
        }
    )
    assert os.environ.get(CHECKED_ENV, "") == ""


PURE_SVD = """
import numpy as np
from scipy.sparse.linalg import svds

from debiaseval.recommenders import Recommender, positive_mask


class PureSVD(Recommender):
    name = "puresvd"

    def __init__(self, *, factors: int = 20, positive_threshold: float = 3.0) -> None:
        self.factors = factors
        self.positive_threshold = positive_threshold

    def _fit(self, train, seed):
        positives = positive_mask(train, self.positive_threshold)
        start = np.random.default_rng(seed).random(min(positives.shape))
        u, s, vt = svds(positives, k=min(self.factors, min(positives.shape) - 1), v0=start)
        self.user_factors_, self.item_factors_ = u * s, vt.T

    def _score(self, users):
        return self.user_factors_[users] @ self.item_factors_.T
"""


@pytest.mark.slow
def test_the_workflow_refuses_a_nondeterministic_plugin_before_any_job(tmp_path):
    """A real run (not a dry run) of the tiny config with a plugin that draws fresh noise when
    fitted stops at the config check with the one line, and no job ran: no results, no logs."""
    import subprocess

    from conftest import make_workdir

    workdir = make_workdir(tmp_path / "run")
    (workdir / "noisymodels.py").write_text(NOISY_FIT)  # next to the config: plugin_paths ["."]
    config = {**TINY, "experiments": ["e1"]}
    config["e1"] = {
        **TINY.get("e1", {}),
        "recommenders": {
            "PosPop": {"algorithm": "pospop"},
            "mine": {"algorithm": "noisymodels:MyPop"},
        },
    }
    (workdir / "noisy.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k not in (PLUGIN_PATHS_ENV, CHECKED_ENV)}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "noisy.yaml", "--cores", "1"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "config error" in line]
    assert lines == [
        "config error at 'e1.recommenders.mine': 'noisymodels:MyPop' is not deterministic: a "
        "fresh instance fitted with the same seed scores differently on a 40 × 25 sample; "
        + EXPECTED
    ]
    assert not (workdir / "results").exists() and not (workdir / "logs").exists()


@pytest.mark.slow
def test_the_workflow_finds_a_plugin_next_to_its_config_file(tmp_path):
    """The audit's first week: cfg/mymodels.py beside cfg/mine.yaml, snakemake run from the
    workflow's folder: 'No module named' before; now the dry run plans the plugin's jobs."""
    import subprocess

    from conftest import make_workdir

    workdir = make_workdir(tmp_path / "run")
    (workdir / "cfg").mkdir()
    (workdir / "cfg" / "nextmodels.py").write_text(MY_POP)
    config = {**TINY, "experiments": ["e1"]}
    config["e1"] = {**TINY["e1"], "recommenders": {"mine": {"algorithm": "nextmodels:MyPop"}}}
    (workdir / "cfg" / "mine.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if k not in (PLUGIN_PATHS_ENV, CHECKED_ENV)}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--configfile", "cfg/mine.yaml", "--cores", "1"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "results/mine/e1/synthetic/seed0/tuning/mine.parquet" in result.stdout
