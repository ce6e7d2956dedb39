"""A rule's code stamp follows the code its script imports (debiaseval.workflow.code_stamps):
a docstring, comment or layout edit changes no stamp, a code edit in a module of the closure
changes it, an edit outside the closure does not; and the package's own scripts reach what
they should (E3's figures from E3's aggregate only; the config schemas where they are read)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from debiaseval.io.source_hash import file_closure
from debiaseval.workflow.code_stamps import (
    PACKAGE_DATA,
    code_stamp,
    code_stamps,
    experiment_of,
)

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow" / "scripts"
PACKAGE_FOLDER = ROOT / "src" / "debiaseval"

FILES = {
    "stampdemo/__init__.py": '"""The demo package."""\nVERSION = 1\n',
    "stampdemo/core.py": (
        '"""Core."""\n\nfrom stampdemo import util\n\n\n'
        "def run(x):\n"
        '    """Run."""\n'
        "    from stampdemo.lazy import later  # a lazy import\n"
        "    return util.double(later(x))\n"
    ),
    "stampdemo/util.py": '"""Util."""\n\n\ndef double(x):\n    return 2 * x\n',
    "stampdemo/lazy.py": '"""Lazy."""\n\n\ndef later(x):\n    return x + 1\n',
    "stampdemo/figures/__init__.py": (
        "import importlib\n\n\n"
        "def figure(experiment):\n"
        '    return importlib.import_module(f"stampdemo.figures.{experiment}")\n'
    ),
    "stampdemo/figures/e1.py": "TITLE = 'one'\n",
    "stampdemo/figures/e3.py": "TITLE = 'three'\n",
    "stampdemo/outside.py": "def unused():\n    return 0\n",
    "stampdemo/schemas/a.yaml": "key: 1  # a comment\n",
    "e3_aggregate.py": "from stampdemo.core import run\nfrom stampdemo.figures import figure\n",
    "e1_split.py": "from stampdemo.core import run\n",
    "run_config.py": "from stampdemo.figures import figure\n",
}
DATA = {"stampdemo.util": ("schemas",)}


@pytest.fixture
def demo(tmp_path, monkeypatch) -> Path:
    """The demo package and its scripts in a folder on sys.path; sys.modules left clean."""
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.partition(".")[0] == "stampdemo"]:
        del sys.modules[name]


def stamp(folder: Path, script: str) -> str:
    return code_stamp(folder / script, package="stampdemo", package_data=DATA)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_closure_follows_lazy_imports_package_inits_and_the_script_s_experiment(demo):
    closure = file_closure(
        demo / "e3_aggregate.py", within="stampdemo", bindings={"experiment": "e3"}
    )
    assert list(closure) == [
        "stampdemo",
        "stampdemo.core",
        "stampdemo.figures",
        "stampdemo.figures.e3",
        "stampdemo.lazy",
        "stampdemo.util",
    ]
    # a script of no experiment: every module the computed import could load
    everything = file_closure(demo / "run_config.py", within="stampdemo")
    assert {"stampdemo.figures.e1", "stampdemo.figures.e3"} <= set(everything)
    assert experiment_of("e3_aggregate.py") == "e3" and experiment_of("run_config.py") is None


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("stampdemo/core.py", '"""Run."""', '"""Run it, twice over."""'),
        ("stampdemo/lazy.py", "return x + 1\n", "return x + 1  # one more\n"),
        ("stampdemo/util.py", "def double(x):\n", "\n\ndef double(x):  # layout\n"),
        ("stampdemo/__init__.py", '"""The demo package."""', '"""The demo package, edited."""'),
        ("stampdemo/schemas/a.yaml", "# a comment", "# another comment"),
    ],
)
def test_a_docstring_comment_or_layout_edit_leaves_the_stamp(demo, file, old, new):
    before = {script: stamp(demo, script) for script in ("e3_aggregate.py", "e1_split.py")}
    edit(demo / file, old, new)
    assert {script: stamp(demo, script) for script in before} == before


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("stampdemo/lazy.py", "x + 1", "x + 2"),  # reached only by a lazy import
        ("stampdemo/util.py", "2 * x", "3 * x"),
        ("stampdemo/__init__.py", "VERSION = 1", "VERSION = 2"),  # a package's __init__
        ("stampdemo/schemas/a.yaml", "key: 1", "key: 2"),  # data a module of it reads
    ],
)
def test_a_code_edit_in_an_imported_module_changes_the_stamp(demo, file, old, new):
    before = stamp(demo, "e1_split.py")
    edit(demo / file, old, new)
    assert stamp(demo, "e1_split.py") != before


def test_an_edit_outside_the_closure_leaves_the_stamp(demo):
    before = {script: stamp(demo, script) for script in ("e3_aggregate.py", "e1_split.py")}
    edit(demo / "stampdemo/outside.py", "return 0", "return 1")
    edit(demo / "stampdemo/figures/e1.py", "'one'", "'uno'")  # another experiment's figures
    assert {script: stamp(demo, script) for script in before} == before
    edit(demo / "stampdemo/figures/e3.py", "'three'", "'tres'")
    assert stamp(demo, "e3_aggregate.py") != before["e3_aggregate.py"]
    assert stamp(demo, "e1_split.py") == before["e1_split.py"]


def test_the_workflow_s_scripts_reach_their_own_experiment_s_figures_only():
    stamps = code_stamps(SCRIPTS, cache=None)
    assert set(stamps) == {path.stem for path in SCRIPTS.glob("*.py")}
    e3 = file_closure(
        SCRIPTS / "e3_aggregate.py", within="debiaseval", bindings={"experiment": "e3"}
    )
    assert "debiaseval.figures.e3" in e3 and "debiaseval.figures.e1" not in e3
    e1 = file_closure(SCRIPTS / "e1_split.py", within="debiaseval", bindings={"experiment": "e1"})
    assert not any(name.startswith("debiaseval.figures") for name in e1)
    run_config = file_closure(SCRIPTS / "run_config.py", within="debiaseval")  # no experiment
    assert not any(
        name.startswith(("debiaseval.figures", "debiaseval.experiments")) for name in run_config
    )


def test_every_module_that_reads_package_data_names_it():
    """A module reading package data (importlib.resources) joins the stamps with that data."""
    readers = set()
    for path in PACKAGE_FOLDER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "files":
                if isinstance(node.value, ast.Name) and node.value.id == "resources":
                    relative = path.relative_to(PACKAGE_FOLDER.parent).with_suffix("")
                    readers.add(".".join(relative.parts))
    readers.discard("debiaseval.workflow.code_stamps")  # it digests the data
    assert readers and readers <= set(PACKAGE_DATA)
