"""The rules' conda environment (workflow/envs/debiaseval.yaml) is generated from pyproject.toml
by .ci/conda_env.py: it holds every runtime dependency with its bounds, and every rule names it
(docs/cluster.md, "Software")."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

_SPEC = importlib.util.spec_from_file_location("conda_env", ROOT / ".ci" / "conda_env.py")
assert _SPEC is not None and _SPEC.loader is not None
generator = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(generator)


def _pip_section(text: str) -> list[str]:
    """The pip requirements of an environment file, as conda reads them."""
    (pip,) = [d["pip"] for d in yaml.safe_load(text)["dependencies"] if isinstance(d, dict)]
    return pip


def _bounds(requirements: list[str]) -> dict[str, tuple[frozenset[str], str]]:
    """Each requirement's name with its extras and version bounds."""
    parsed = [Requirement(r) for r in requirements]
    return {r.name: (frozenset(r.extras), str(r.specifier)) for r in parsed}


def test_the_env_file_is_the_generated_one():
    """Edit pyproject.toml, then run `.venv/bin/python .ci/conda_env.py`."""
    assert generator.main(["--check"]) == 0


def test_every_runtime_dependency_is_in_the_env_with_its_bounds():
    text = generator.ENV_FILE.read_text(encoding="utf-8")
    *requirements, editable = _pip_section(text)
    assert editable == "--editable ../.."
    assert _bounds(requirements) == _bounds(PYPROJECT["project"]["dependencies"])
    assert "numba" in _bounds(requirements) and "snakemake" in _bounds(requirements)
    floor = re.fullmatch(r">=(\d+\.\d+)", PYPROJECT["project"]["requires-python"]).group(1)
    assert f"python={floor}" in yaml.safe_load(text)["dependencies"]


def test_a_new_dependency_reaches_the_env_and_an_odd_python_bound_is_refused():
    changed = {"project": {**PYPROJECT["project"]}}
    changed["project"]["dependencies"] = [*PYPROJECT["project"]["dependencies"], "tqdm>=4,<5"]
    pip = _pip_section(generator.conda_env(changed))
    assert _bounds(pip[:-1])["tqdm"] == _bounds(["tqdm>=4,<5"])["tqdm"]
    with pytest.raises(ValueError, match=r"expected '>=X\.Y'"):
        generator.python_pin("~=3.11")


def test_every_rule_runs_in_the_generated_env():
    """One environment for every rule: each `conda:` directive names the generated file."""
    rules, named = 0, []
    for path in sorted((ROOT / "workflow" / "rules").glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        rules += len(re.findall(r"^(?:rule|checkpoint) \w+:", text, re.M))
        for value in re.findall(r"^    conda:\n        \"([^\"]+)\"", text, re.M):
            named.append((path.parent / value).resolve())
    assert rules and len(named) == rules
    assert set(named) == {generator.ENV_FILE}
