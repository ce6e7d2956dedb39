"""One floor per concept: the package's floors import downward only (docs/contributing.md,
"Where code goes").

Every package and top-level module of ``debiaseval`` stands on a floor of its own
(:data:`FLOORS`); a module may import its own floor and the floors below it, nothing above.
Every ``import`` is read from the syntax tree, at module level or inside a function, and so is
``importlib.import_module`` with a literal (or the literal start of an f-string) module name.
The package scanned is the one Python imports, so the check runs against another tree with
``PYTHONPATH=<tree>/src``.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.find_spec("debiaseval")
assert _SPEC is not None and _SPEC.origin is not None
PACKAGE = Path(_SPEC.origin).resolve().parent

FLOORS: dict[str, int] = {
    "io": 0,
    "_version": 1,
    "data": 2,
    "debiasing": 3,
    "recommenders": 4,
    "evaluation": 5,
    "selection": 6,
    "datasets": 7,
    "estimation": 8,
    "active_learning": 9,
    "figures": 10,
    "experiments": 11,
    "workflow": 12,
    "api": 13,
    "benchmarks": 14,
    "benchmark": 15,
}
"""The packages and top-level modules of ``debiaseval``, ground up: a floor never imports a
higher one (the roles of each: docs/contributing.md, "Where code goes")."""

KNOWN_UPWARD: dict[tuple[str, str], str] = {}
"""The upward imports that remain, each with why: none. A new one fails, and so does a fixed one
still listed here."""


def _import_module_name(node: ast.Call) -> str | None:
    """The module an ``import_module(...)`` call names, as far as its literal start says
    (``f"debiaseval.experiments.{name}"`` names ``debiaseval.experiments``)."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called not in ("import_module", "__import__") or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values:
        head = arg.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            complete = head.value.rsplit(".", 1)[0] if "." in head.value else ""
            return complete or None
    return None


def imported_modules(source: str) -> list[str]:
    """Every ``debiaseval`` module ``source`` imports, wherever the import statement is."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "debiaseval":
                found += [f"debiaseval.{alias.name}" for alias in node.names]
            else:
                found.append(node.module)
        elif isinstance(node, ast.Call) and (name := _import_module_name(node)):
            found.append(name)
    return [name for name in found if name.startswith("debiaseval.")]


def floor_of(name: str) -> tuple[str, int | None]:
    """The top-level package or module of ``debiaseval.<name>`` and its floor (None when
    it has none: the package's own ``__init__``)."""
    top = name.split(".")[1]
    return top, FLOORS.get(top)


def package_modules() -> list[tuple[str, Path]]:
    """``(path relative to the package, path)`` of every module of the package."""
    return [(p.relative_to(PACKAGE).as_posix(), p) for p in sorted(PACKAGE.rglob("*.py"))]


def upward_imports() -> set[tuple[str, str]]:
    """``(file, module)`` for each import of a higher floor in the package."""
    upward = set()
    for relative, path in package_modules():
        _, own = floor_of("debiaseval." + relative.removesuffix(".py").replace("/", "."))
        if own is None:
            continue
        for module in imported_modules(path.read_text(encoding="utf-8")):
            _, target = floor_of(module)
            if target is not None and target > own:
                upward.add((relative, module))
    return upward


def test_every_package_and_module_has_a_floor_of_its_own() -> None:
    """No shared floor, and nothing left out: every top-level module and every folder that
    holds Python code has a floor (``schemas/`` and ``resources/`` hold data only)."""
    tops = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    tops |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert tops == set(FLOORS)
    assert len(set(FLOORS.values())) == len(FLOORS)


def test_floors_import_downward_only() -> None:
    assert upward_imports() == set(KNOWN_UPWARD)


def test_nothing_below_the_workflow_imports_it_and_nothing_imports_the_api() -> None:
    """``workflow`` serves the Snakemake workflow and the report: nothing below it (the
    experiments included) imports it, and nothing at all imports the API."""
    for relative, path in package_modules():
        floor = floor_of("debiaseval." + relative.removesuffix(".py").replace("/", "."))[0]
        modules = imported_modules(path.read_text(encoding="utf-8"))
        if floor not in ("workflow", "api", "benchmarks", "benchmark"):
            assert not any(floor_of(m)[0] == "workflow" for m in modules), relative
        if floor != "api":
            assert not any(floor_of(m)[0] == "api" for m in modules), relative


def test_every_import_is_absolute() -> None:
    """The scan reads absolute imports; a relative one would hide an arrow from it."""
    for relative, path in package_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relatives = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
        assert relatives == [], relative


def test_the_ground_floor_imports_nothing_of_the_package() -> None:
    """``io`` imports no other module of the package, not even ``_version``."""
    modules = sorted((PACKAGE / "io").rglob("*.py"))
    assert {p.stem for p in modules} >= {"__init__", "errors", "files", "markup", "schema"}
    for path in modules:
        outside = [
            m
            for m in imported_modules(path.read_text(encoding="utf-8"))
            if not m.startswith("debiaseval.io.")
        ]
        assert outside == [], (path.name, outside)


def exported_names(path: Path) -> set[str]:
    """The names of the literal ``__all__`` of the module at ``path`` (empty without one)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def test_the_workflow_exports_nothing_of_the_ground_floor() -> None:
    """One floor for one thing: no ``workflow`` module re-exports what ``io`` defines."""
    ground = set().union(*(exported_names(p) for p in (PACKAGE / "io").glob("*.py")))
    assert {"ConfigError", "expand_grid", "write_parquet", "inert_markdown"} <= ground
    for path in sorted((PACKAGE / "workflow").glob("*.py")):
        assert exported_names(path) & ground == set(), path.name


def test_moved_modules_left_nothing_behind() -> None:
    """A module that moved up or down lives in one place only: no shim at its old path."""
    moved = {
        "evaluation/ranking.py": "recommenders/ranking.py",
        "evaluation/_topk_kernel.py": "recommenders/_topk_kernel.py",
        "recommenders/tuning.py": "selection/tuning.py",
        "recommenders/ips_cv.py": "selection/ips_cv.py",
        "recommenders/specs.py": "selection/specs.py",
        "data/load.py": "datasets/load.py",
        "data/build.py": "datasets/build.py",
        "data/semisynthetic.py": "datasets/semisynthetic.py",
        "experiments/e1.py": "experiments/e1/__init__.py",
        "experiments/e2.py": "experiments/e2/__init__.py",
        "experiments/e3.py": "experiments/e3/__init__.py",
        "experiments/e4.py": "experiments/e4/__init__.py",
        "experiments/e5.py": "experiments/e5/__init__.py",
        "experiments/e6.py": "experiments/e6/__init__.py",
        "experiments/e1_verdict.py": "experiments/e1/verdict.py",
        "active_learning/summary.py": "experiments/e2/tables.py",
        "evaluation/learning_errors.py": "experiments/e4/tables.py",
        "evaluation/recall_tables.py": "experiments/e5/tables.py",
        "evaluation/estimators.py": "evaluation/loss_estimators.py",
        "estimation/estimators.py": "estimation/ranking_estimators.py",
    }
    for old, new in moved.items():
        assert not (PACKAGE / old).exists(), old
        assert (PACKAGE / new).is_file(), new


def test_a_module_takes_the_floor_of_its_top_level_package() -> None:
    assert floor_of("debiaseval.io.files") == ("io", 0)
    assert floor_of("debiaseval.workflow.config") == ("workflow", 12)
    assert floor_of("debiaseval.datasets.load") == ("datasets", 7)
    assert floor_of("debiaseval.api") == ("api", 13)
    assert floor_of("debiaseval.__init__") == ("__init__", None)


def test_the_scan_sees_imports_inside_functions_and_import_module() -> None:
    source = (
        "import importlib\n"
        "def f(name):\n"
        "    from debiaseval import api\n"
        "    import debiaseval.data.loaders\n"
        "    importlib.import_module(f'debiaseval.experiments.{name}')\n"
        "    importlib.import_module('debiaseval.figures.e1')\n"
        "    importlib.import_module(f'debiaseval.{name}.e1')\n"
    )
    assert imported_modules(source) == [
        "debiaseval.api",
        "debiaseval.data.loaders",
        "debiaseval.experiments",
        "debiaseval.figures.e1",
    ]


def test_an_upward_import_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a ``data`` module that imports the recommenders is reported."""
    package = tmp_path / "debiaseval"
    (package / "data").mkdir(parents=True)
    (package / "data" / "bad.py").write_text(
        "def f():\n    from debiaseval.recommenders.base import Recommender\n"
    )
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert upward_imports() == {("data/bad.py", "debiaseval.recommenders.base")}


def test_loading_a_dataset_loads_no_workflow_or_experiment() -> None:
    """``datasets.load`` reads a config through ``io.schema`` only: it once imported
    ``workflow.config``, whose checks import the experiments (a circle)."""
    import subprocess
    import sys

    code = (
        "import sys, debiaseval.datasets.load, debiaseval.data.exposure\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "('debiaseval.workflow', 'debiaseval.experiments'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
