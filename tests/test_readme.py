"""The README's quick start and CI agree: CI runs exactly the README's test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quick_start_has_two_commands():
    run, test = _quick_start_commands()
    assert "snakemake --cores" in run
    assert "pytest" in test


def test_ci_runs_the_readme_test_command():
    _, test = _quick_start_commands()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci


def test_python_api_example_runs():
    """The README's notebook example, executed as written."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Python API", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert set(namespace["recall"]["recommender"]) == {"PosPop", "ItemKNN"}
    assert set(namespace["split"]["part"]) == {"train", "heldout", "weights", "val", "gt"}


def test_readme_config_overrides_validate():
    """Every `--config` of the README, parsed as Snakemake parses it, passes validation."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    from debiaseval.workflow.config import validate_config

    readme = (ROOT / "README.md").read_text()
    commands = [line for line in readme.splitlines() if "snakemake" in line and "--config" in line]
    assert any("e1={rho: 0.4}" in line for line in commands)
    for line in commands:
        entries = re.findall(r"'([^']*)'|(\S+=\S+)", line.split("--config", 1)[1])
        overrides = parse_config([quoted or bare for quoted, bare in entries])
        config = {"e1": {"seeds": 1}}
        update_config(config, overrides)
        validated = validate_config(config)
        if "rho" in overrides.get("e1", {}):
            assert validated["e1"]["rho"] == 0.4
