"""The ``startup`` section of ``python -m debiaseval.benchmark`` (docs/performance.md).

The start-up of each workflow script (``workflow/scripts/*.py``) before its first line
of work: its module-level imports (:func:`script_imports`) run in a fresh interpreter,
wall and CPU seconds (user + system, which other processes sharing the machine disturb
less), beside Snakemake's own preamble; ``--reference-src`` measures another source
tree's package and scripts the same way, interleaved, for a before/after table.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["run", "script_imports"]


# What Snakemake's preamble imports in every script job before the script's first line
# (snakemake.script.PythonScript.generate_preamble, Snakemake 9).
_PREAMBLE = (
    "import pickle; from snakemake.logging import logger; "
    "from snakemake.iocontainers import Snakemake"
)


def script_imports(path: Path) -> str:
    """The module-level ``import`` statements of a workflow script, as one program."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return "\n".join(ast.unparse(node) for node in imports)


def _child_cost(code: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of ``python -c code`` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run(args: argparse.Namespace, rows: dict[str, float]) -> None:
    """Time each workflow script's imports in a fresh interpreter; add ``startup: ...``."""
    package_src = Path(__file__).resolve().parents[2]
    trees = {"": package_src}
    if args.reference_src is not None:
        trees["reference "] = Path(args.reference_src).resolve()
    scripts: dict[str, dict[str, Path]] = {}
    for label, src in trees.items():
        folder = src.parent / "workflow" / "scripts"
        if not folder.is_dir():
            print(f"\n== startup: no {folder} (a source checkout is needed); skipped")
            return
        for path in sorted(folder.glob("*.py")):
            scripts.setdefault(path.stem, {})[label] = path

    def env(src: Path) -> dict[str, str]:
        extra = {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))
        }
        return {**os.environ, "OMP_NUM_THREADS": str(args.threads), **extra}

    def best(code: str, src: Path) -> tuple[float, float]:
        costs = [_child_cost(code, env(src)) for _ in range(args.repeat)]
        return min(c[0] for c in costs), min(c[1] for c in costs)

    print(f"\n== startup: imports of each workflow script, best of {args.repeat} (seconds)")
    bare = best("pass", package_src)
    rows["startup: interpreter [s]"], rows["startup: interpreter cpu [s]"] = bare
    print(f"  interpreter start: {bare[0]:.2f} wall, {bare[1]:.2f} cpu (subtracted below)")
    if importlib.util.find_spec("snakemake") is not None:
        wall, cpu = best(_PREAMBLE, package_src)
        rows["startup: snakemake preamble [s]"] = wall - bare[0]
        rows["startup: snakemake preamble cpu [s]"] = cpu - bare[1]
        print(f"  Snakemake's preamble: {wall - bare[0]:.2f} wall, {cpu - bare[1]:.2f} cpu")
    header = "".join(f" | {label}wall | {label}cpu" for label in trees)
    print(f"  | script{header} |\n  |---{'|---:' * 2 * len(trees)}|")
    for name, paths in scripts.items():
        cells = []
        for label, src in trees.items():
            if label not in paths:
                cells += ["", ""]
                continue
            wall, cpu = best(script_imports(paths[label]), src)
            rows[f"startup: {label}{name} [s]"] = wall - bare[0]
            rows[f"startup: {label}{name} cpu [s]"] = cpu - bare[1]
            cells += [f"{wall - bare[0]:.2f}", f"{cpu - bare[1]:.2f}"]
        print(f"  | {name} | {' | '.join(cells)} |", flush=True)
