"""Write workflow/envs/debiaseval.yaml, the conda environment of every rule, from pyproject.toml.

    .venv/bin/python .ci/conda_env.py           # rewrite it after editing pyproject.toml
    .venv/bin/python .ci/conda_env.py --check   # exit 1 if it differs (tests/test_conda_env.py)

The environment is what the quick start's venv holds: the Python of ``requires-python``'s floor
from conda-forge, then, through pip, every runtime dependency with its version bounds and the
clone itself (editable), so a job run with ``--software-deployment-method conda`` imports the
same code (docs/cluster.md, "Software").
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
ENV_FILE = ROOT / "workflow" / "envs" / "debiaseval.yaml"
EDITABLE = "--editable ../.."
"""The clone: Snakemake copies the file to ``.snakemake/conda/<hash>.yaml`` (its default
``--conda-prefix``) and conda runs pip in that folder, so ``../..`` is the working directory."""

HEADER = """\
# Generated from pyproject.toml by .ci/conda_env.py: edit pyproject.toml, then run
#   .venv/bin/python .ci/conda_env.py
# (tests/test_conda_env.py fails while the two differ). The software of every rule, for runs
# with --software-deployment-method conda; the default, on a laptop and on a cluster, is the
# project's virtual environment (docs/cluster.md, "Software"). Python from conda-forge, the rest
# from PyPI as in the venv: the runtime dependencies, then this clone, editable
# ({editable}: the working directory, seen from .snakemake/conda/, where Snakemake
# writes this file with its default --conda-prefix).
"""


def python_pin(requires_python: str) -> str:
    """``3.11`` for ``>=3.11``: the floor the project is tested with."""
    match = re.fullmatch(r">=\s*(\d+\.\d+)", requires_python.strip())
    if match is None:
        raise ValueError(f"requires-python {requires_python!r}: expected '>=X.Y'")
    return match.group(1)


def conda_env(pyproject: dict[str, Any]) -> str:
    """The text of the environment file for the parsed ``pyproject`` (:mod:`tomllib`)."""
    project = pyproject["project"]
    lines = [
        HEADER.format(editable=EDITABLE),
        "channels:",
        "  - conda-forge",
        "  - nodefaults",
        "dependencies:",
        f"  - python={python_pin(project['requires-python'])}",
        "  - pip",
        "  - pip:",
        *(f'      - "{requirement}"' for requirement in project["dependencies"]),
        f"      - {EDITABLE}",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    expected = conda_env(tomllib.loads(PYPROJECT.read_text(encoding="utf-8")))
    if argv == ["--check"]:
        if ENV_FILE.read_text(encoding="utf-8") == expected:
            return 0
        print(f"{ENV_FILE.relative_to(ROOT)} differs from pyproject.toml: run {__file__}")
        return 1
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    ENV_FILE.write_text(expected, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
