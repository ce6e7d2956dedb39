"""A workflow job imports only what it uses: the heavy modules some functions need are imported
inside them, so no script's start-up pays for them (docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from debiaseval.benchmarks import script_imports

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["scipy.stats", "scipy.optimize", "jsonschema", "matplotlib", "lightfm", "implicit"]


def heavy_modules_after(program: str) -> list[str]:
    """The HEAVY modules loaded once ``program`` has run in a fresh interpreter."""
    program += f"\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    run = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return run.stdout.split()


def test_no_workflow_script_imports_a_heavy_module_at_start_up() -> None:
    scripts = sorted((ROOT / "workflow" / "scripts").glob("*.py"))
    assert len(scripts) > 20
    assert heavy_modules_after("\n".join(script_imports(path) for path in scripts)) == []


def test_the_check_sees_a_heavy_import() -> None:
    assert "scipy.stats" in heavy_modules_after("import debiaseval.io.files\nimport scipy.stats")


def test_the_figure_modules_leave_matplotlib_to_their_first_figure() -> None:
    """The workflow imports every experiment's figure module at parse time for its captions
    (``figure_module(name).FIGURES``): matplotlib waits for the first figure drawn."""
    program = "\n".join(f"import debiaseval.figures.e{n}" for n in range(1, 7))
    assert heavy_modules_after(program) == []
