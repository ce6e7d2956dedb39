"""The package's layers import downward only (docs/contributing.md, "Where code goes").

``api`` and the benchmarks sit on ``experiments``, which sit on the estimator arena
(``estimation``), which sits on the method packages, which sit on ``data``. Every
``import`` in ``src/debiaseval``, at module level or inside a function, is read from the
syntax tree; an import of a higher layer fails here.
Below them all, ``io`` (the ground floor: atomic file and Parquet I/O, the one-line user
errors, the config schema and its check of the schema alone, user-given text made inert in
Markdown and HTML) imports nothing of the package. ``workflow`` (the whole-config validation,
the runtime, the report) is the glue every layer uses and is left out of the ranking.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "debiaseval"

LAYERS: dict[str, int] = {
    "io": -1,
    "data": 0,
    "recommenders": 1,
    "evaluation": 1,
    "debiasing": 1,
    "active_learning": 1,
    "figures": 1,
    "estimation": 2,
    "experiments": 3,
    "api": 4,
    "benchmark": 4,
    "benchmarks": 4,
}
"""Modules and subpackages of debiaseval (dotted, below ``debiaseval``) and their layers:
lower never imports higher; a module takes the layer of its longest listed prefix."""

KNOWN_UPWARD: dict[tuple[str, str], str] = {
    ("data/semisynthetic.py", "debiaseval.evaluation.metrics"): (
        "ml-100k-semi is built by completing ML-100K with a rating MF ([ICML16] §6.2)"
    ),
    ("data/semisynthetic.py", "debiaseval.recommenders.rating_mf"): (
        "ml-100k-semi is built by completing ML-100K with a rating MF ([ICML16] §6.2)"
    ),
}
"""The upward imports that remain, each with why: a new one fails, and so does a fixed one
still listed here."""


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
    return [name for name in found if name.startswith("debiaseval.")]


def layer_of(name: str) -> tuple[str, int | None]:
    """The longest prefix of ``debiaseval.<name>`` listed in :data:`LAYERS` and its layer
    (the top-level part and None when none is)."""
    parts = name.split(".")[1:]
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return prefix, LAYERS[prefix]
    return parts[0], None


def upward_imports() -> set[tuple[str, str]]:
    """``(file, module)`` for each import of a higher layer in the package."""
    upward = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        _, own = layer_of("debiaseval." + relative.removesuffix(".py").replace("/", "."))
        if own is None:
            continue
        for module in imported_modules(path.read_text(encoding="utf-8")):
            _, target = layer_of(module)
            if target is not None and target > own:
                upward.add((relative, module))
    return upward


def test_every_top_level_module_has_a_layer_or_is_glue() -> None:
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    tops = {t for t in tops if not t.startswith((".", "_")) and t not in {"py", "resources"}}
    assert tops - set(LAYERS) - {"workflow", "schemas"} == set()
    dotted = [name for name in LAYERS if "." in name]
    assert all((PACKAGE / f"{name.replace('.', '/')}.py").is_file() for name in dotted)


def test_layers_import_downward_only() -> None:
    assert upward_imports() == set(KNOWN_UPWARD)


def test_nothing_below_the_api_imports_it() -> None:
    below = {(file, module) for file, module in upward_imports() if layer_of(module)[0] == "api"}
    assert below == set()
    assert not any(layer_of(module)[0] == "api" for _, module in KNOWN_UPWARD)


def test_the_ground_floor_imports_nothing_of_the_package() -> None:
    """``io`` imports no other module of the package, not even ``_version`` (and no module of
    its own through ``debiaseval.``: the check sees every import, relative ones included)."""
    modules = sorted((PACKAGE / "io").rglob("*.py"))
    assert {p.stem for p in modules} >= {"__init__", "errors", "files", "markup", "schema"}
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
        assert relative == [], path.name
        outside = [m for m in imported_modules(path.read_text(encoding="utf-8"))
                   if not m.startswith("debiaseval.io.")]  # fmt: skip
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


def test_a_module_takes_the_layer_of_its_longest_prefix() -> None:
    assert layer_of("debiaseval.io.files") == ("io", -1)
    assert layer_of("debiaseval.workflow.config") == ("workflow", None)
    assert layer_of("debiaseval.data.load") == ("data", 0)
    assert layer_of("debiaseval.api") == ("api", 4)


def test_the_scan_sees_imports_inside_functions() -> None:
    source = "def f():\n    from debiaseval import api\n    import debiaseval.data.load\n"
    assert imported_modules(source) == ["debiaseval.api", "debiaseval.data.load"]


def test_data_imports_neither_the_workflow_glue_nor_the_experiments() -> None:
    """``data`` reads a config through ``io.schema`` only: ``data/load.py`` once
    imported ``workflow.config``, whose checks import the experiments (a circle)."""
    bottom = {name for name, layer in LAYERS.items() if layer < 0}
    for path in sorted((PACKAGE / "data").rglob("*.py")):
        for module in imported_modules(path.read_text(encoding="utf-8")):
            prefix, _ = layer_of(module)
            assert not module.startswith("debiaseval.experiments"), (path.name, module)
            if module.startswith("debiaseval.workflow"):
                assert prefix in bottom, (path.name, module)


def test_loading_a_dataset_module_loads_no_workflow_glue_or_experiment() -> None:
    import subprocess
    import sys

    code = (
        "import sys, debiaseval.data.load, debiaseval.data.exposure\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "('debiaseval.workflow.config', 'debiaseval.experiments'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
