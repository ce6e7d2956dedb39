"""The source fingerprint of a plugin: the user's modules it imports, found without running them,
and blind to comments, docstrings and layout."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from test_plugins import MY_POP, _install

from debiaseval.io.source_hash import import_closure, source_digest, sources_hash
from debiaseval.recommenders.registry import (
    PLUGIN_PATHS_ENV,
    add_plugin_paths,
    plugin_source_hash,
    resolve_recommender,
)

# MyPop whose counts come from a helper package of one's own, reached by every form of import.
PLUGIN = '''
"""PosPop through helpers of one's own."""
import json  # the standard library: not followed
import importlib

import numpy as np  # an installed package: not followed

from debiaseval.recommenders import Recommender  # this package: covered by its code hash
from own_helpers import counts
from own_helpers.scale import SCALE
from own_namespace import part  # a folder without __init__.py


class MyPop(Recommender):
    """PosPop written again."""

    name = "mypop"

    def __init__(self, *, positive_threshold: float = 3.0) -> None:
        self.positive_threshold = positive_threshold

    def _fit(self, train, seed):
        import own_lazy  # imported when fitting only

        importlib.import_module("own_by_name")
        self.counts_ = SCALE * counts.positive_counts(train, self.positive_threshold)

    def _score(self, users):
        return np.tile(self.counts_, (users.size, 1))
'''

FILES = {
    "own_plugin.py": PLUGIN,
    "own_helpers/__init__.py": '"""Helpers."""\nfrom . import counts\n',
    "own_helpers/counts.py": (
        "import numpy as np\n\nfrom .util import ONE\n\n\n"
        "def positive_counts(train, threshold):\n"
        '    """Positive ratings per item."""\n'
        "    positive = ONE * (train.data > threshold)\n"
        "    return np.bincount(train.indices, weights=positive, minlength=train.shape[1])\n"
    ),
    "own_helpers/util.py": "ONE = 1.0\n",
    "own_helpers/scale.py": "SCALE = 1.0\n",
    "own_lazy.py": "X = 1\n",
    "own_by_name.py": "Y = 1\n",
    "own_unrelated.py": "Z = 1\n",
    "own_namespace/part.py": "P = 1\n",
}

CLOSURE = [
    "own_by_name",
    "own_helpers",
    "own_helpers.counts",
    "own_helpers.scale",
    "own_helpers.util",
    "own_lazy",
    "own_namespace.part",
    "own_plugin",
]


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """The plugin files in a plugin folder; sys.path, sys.modules and the environment restored."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(PLUGIN_PATHS_ENV, raising=False)
    root = tmp_path / "plugins"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    for name in ("own_plugin", "own_helpers", "own_lazy", "own_by_name", "own_namespace"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # left by other tests
    modules = dict(sys.modules)
    add_plugin_paths([root])
    yield root
    for name in set(sys.modules) - set(modules):
        del sys.modules[name]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_closure_holds_the_users_modules_by_every_form_of_import(folder):
    resolve_recommender("own_plugin:MyPop")
    closure = import_closure("own_plugin")
    assert list(closure) == CLOSURE
    assert closure["own_helpers"] == (folder / "own_helpers/__init__.py").resolve()
    assert plugin_source_hash("pospop") == "" and plugin_source_hash("external") == ""
    assert sources_hash("debiaseval.recommenders.knn") == ""


def test_the_closure_runs_no_module(folder):
    """A module imported only inside a function is found, not imported: neither it nor its
    package runs (an `__init__` that exits would stop the process)."""
    (folder / "own_stopper").mkdir()
    (folder / "own_stopper/__init__.py").write_text("raise SystemExit(5)\n")
    (folder / "own_stopper/part.py").write_text("W = 1\n")
    (folder / "own_runner.py").write_text("def later():\n    from own_stopper import part\n")
    assert list(import_closure("own_runner")) == ["own_runner", "own_stopper", "own_stopper.part"]
    assert "own_stopper" not in sys.modules and "own_runner" not in sys.modules


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("own_plugin.py", "class MyPop", "# a comment\n\n\nclass MyPop"),
        ("own_plugin.py", '"""PosPop written again."""', '"""PosPop, once more.\n\n    More."""'),
        ("own_plugin.py", '"""PosPop through', '"""The module docstring: PosPop through'),
        ("own_plugin.py", "self.positive_threshold)", "self.positive_threshold,)  # layout"),
        ("own_helpers/counts.py", '"""Positive ratings per item."""', '"""Positives per item."""'),
        ("own_helpers/util.py", "ONE = 1.0\n", "# the unit\nONE = 1.0  # one\n\n"),
        ("own_lazy.py", "X = 1\n", '"""Lazy."""\n\nX = 1\n'),
    ],
)
def test_a_comment_docstring_or_layout_edit_keeps_the_hash(folder, file, old, new):
    resolve_recommender("own_plugin:MyPop")
    before = plugin_source_hash("own_plugin:MyPop")
    edit(folder / file, old, new)
    assert plugin_source_hash("own_plugin:MyPop") == before


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("own_plugin.py", "SCALE * counts", "(SCALE + 0.0) * counts"),
        (
            "own_helpers/counts.py",
            "ONE * (train.data > threshold)",
            "ONE * (train.data >= threshold)",
        ),
        ("own_helpers/util.py", "ONE = 1.0", "ONE = 1.00001"),
        ("own_helpers/scale.py", "SCALE = 1.0", "SCALE = 2.0"),
        ("own_lazy.py", "X = 1", "X = 2"),
        ("own_by_name.py", "Y = 1", "Y = 22"),
        ("own_namespace/part.py", "P = 1", "P = 2"),
    ],
)
def test_a_code_edit_of_the_plugin_or_of_any_helper_changes_the_hash(folder, file, old, new):
    resolve_recommender("own_plugin:MyPop")
    before = plugin_source_hash("own_plugin:MyPop")
    edit(folder / file, old, new)
    assert plugin_source_hash("own_plugin:MyPop") != before


def test_modules_outside_the_closure_do_not_count(folder):
    resolve_recommender("own_plugin:MyPop")
    before = plugin_source_hash("own_plugin:MyPop")
    edit(folder / "own_unrelated.py", "Z = 1", "Z = 2")
    assert plugin_source_hash("own_plugin:MyPop") == before


def test_a_file_that_does_not_parse_is_hashed_by_its_bytes(folder):
    (folder / "own_lazy.py").write_text("def broken(:\n")
    first = source_digest(folder / "own_lazy.py")
    (folder / "own_lazy.py").write_text("def broken(:\n# a comment\n")
    assert source_digest(folder / "own_lazy.py") != first
    assert "own_lazy" in import_closure("own_plugin")


def test_the_python_version_is_part_of_the_hash(folder, monkeypatch):
    before = sources_hash("own_plugin")
    monkeypatch.setattr(sys, "version_info", (sys.version_info[0], sys.version_info[1] + 1, 0))
    assert sources_hash("own_plugin") != before


def test_an_installed_plugin_covers_its_own_package_not_other_installed_ones(tmp_path, monkeypatch):
    """An entry-point plugin in site-packages: its own package's own_helpers count (they are the
    plugin's code), another installed package it imports does not."""
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    source = MY_POP.replace(
        "import numpy as np\n", "import numpy as np\nimport otherlib\n\nfrom . import helper\n"
    )
    _install(
        site,
        "tinyplug",
        "tinyplug_placeholder",
        "",
        """
        [debiaseval.recommenders]
        tinypop = tinyplug:MyPop
    """,
    )
    (site / "tinyplug").mkdir()
    (site / "tinyplug/__init__.py").write_text(textwrap.dedent(source))
    (site / "tinyplug/helper.py").write_text("H = 1\n")
    (site / "otherlib.py").write_text("O = 1\n")
    monkeypatch.syspath_prepend(str(site))
    for name in ("tinyplug", "tinyplug.helper", "otherlib"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert list(import_closure("tinyplug")) == ["tinyplug", "tinyplug.helper"]
    before = plugin_source_hash("tinypop")
    (site / "otherlib.py").write_text("O = 2\n")
    assert plugin_source_hash("tinypop") == before
    (site / "tinyplug/helper.py").write_text("H = 2\n")
    assert plugin_source_hash("tinypop") != before
