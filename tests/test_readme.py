"""The README's quick start and CI agree (CI runs exactly the README's test command), and the
examples of the README and of the docs pages run as written."""

import os
import re
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def section(page: str, title: str | None = None) -> str:
    """A docs page (``docs/<page>``), or its section ``## <title>`` up to the next ``## ``."""
    text = (DOCS / page).read_text()
    if title is None:
        return text
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def code_blocks(text: str) -> dict[str, list[str]]:
    """The fenced code blocks of ``text`` by language, in order."""
    blocks: dict[str, list[str]] = {}
    for language, code in re.findall(r"```(\w+)\n(.*?)```", text, re.S):
        blocks.setdefault(language, []).append(code)
    return blocks


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


def test_real_data_tests_name_the_mirror_in_the_summary_line(tmp_path):
    """Issue 43, case 18: without DEBIASEVAL_MIRROR the README's test command skipped the
    real-data tests with only a count; the last line now says why, and a section says what to
    set."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "DEBIASEVAL_MIRROR"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_realdata_loaders.py",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    last = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\d+ skipped without DEBIASEVAL_MIRROR", last), result.stdout
    assert "export DEBIASEVAL_MIRROR=/path/to/datasets" in result.stdout
    assert "SKIPPED [" in result.stdout and "tests/test_realdata_loaders.py:" in result.stdout
    readme = (ROOT / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "DEBIASEVAL_MIRROR" in readme and "skipped" in readme


def test_python_api_example_runs():
    """The notebook example of docs/getting-started.md, executed as written."""
    (code,) = code_blocks(section("getting-started.md", "Python API"))["python"]
    namespace: dict = {}
    exec(compile(code, "docs/getting-started.md", "exec"), namespace)
    assert set(namespace["recall"]["recommender"]) == {"PosPop", "ItemKNN"}
    assert set(namespace["split"]["part"]) == {"train", "heldout", "weights", "val", "gt"}


def test_readme_config_overrides_validate():
    """Every `--config` of the README and of the docs pages, parsed as Snakemake parses it,
    passes validation."""
    from snakemake.cli import parse_config
    from snakemake.utils import update_config

    from debiaseval.workflow.config import validate_config

    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    lines = [line for page in pages for line in page.read_text().splitlines()]
    commands = [line for line in lines if "snakemake" in line and "--config" in line]
    assert any("e1={rho: 0.4}" in line for line in commands)
    assert len(commands) > 8
    for line in commands:
        entries = re.findall(r"'([^']*)'|(\S+=\S+)", line.split("--config", 1)[1])
        overrides = parse_config([quoted or bare for quoted, bare in entries])
        config = {"e1": {"seeds": 1}}
        update_config(config, overrides)
        validated = validate_config(config)
        if "rho" in overrides.get("e1", {}):
            assert validated["e1"]["rho"] == 0.4


def _own_recommender_blocks() -> dict[str, list[str]]:
    """The code of docs/own-recommender.md before its section on lists made elsewhere."""
    page = section("own-recommender.md")
    return code_blocks(page.split("\n## Lists made elsewhere", 1)[0])


def test_own_recommender_example_runs_as_written(tmp_path, monkeypatch):
    """The section's plugin file, config and Python example, executed as written: the file
    goes where the section puts it (next to the config, the working directory)."""
    import sys

    import yaml

    from debiaseval.recommenders.registry import PLUGIN_PATHS_ENV
    from debiaseval.workflow.config import validate_config

    blocks = _own_recommender_blocks()
    module, usage = blocks["python"]
    assert module.startswith("# mymodels.py") and len(module.splitlines()) <= 25
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(PLUGIN_PATHS_ENV, raising=False)
    monkeypatch.delitem(sys.modules, "mymodels", raising=False)
    (tmp_path / "mymodels.py").write_text(module)
    sys.path.insert(0, str(tmp_path))  # a script's own folder, as `python script.py` has it
    config = validate_config(yaml.safe_load(blocks["yaml"][0]))
    assert config["e1"]["recommenders"]["SVD"]["algorithm"] == "mymodels:PureSVD"
    namespace: dict = {}
    exec(compile(usage, "docs/own-recommender.md", "exec"), namespace)
    recall = namespace["recall"]
    assert set(recall["recommender"]) == {"PosPop", "ItemKNN", "SVD"}
    assert recall.loc[recall["recommender"] == "SVD", "mean"].gt(0).all()
    kendall = namespace["out"]["kendall"]
    assert set(kendall["group"]) == {"MF"}
    assert kendall.loc[~kendall["with_group"], "n_recommenders"].max() == 2  # without SVD
    sys.modules.pop("mymodels", None)


def test_own_recommender_errors_are_the_ones_shown(tmp_path, monkeypatch):
    """Each error line the section quotes is what the config check says for that mistake."""
    import sys

    from debiaseval.io.errors import ConfigError
    from debiaseval.recommenders.registry import PLUGIN_PATHS_ENV
    from debiaseval.workflow.config import validate_config

    module = _own_recommender_blocks()["python"][0]
    shown = _own_recommender_blocks()["text"][0].strip().splitlines()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv(PLUGIN_PATHS_ENV, raising=False)
    cases = [
        (None, {"ALS": {"algorithm": "mymodels:ImplicitALS"}}),
        (
            module.replace("self, *, factors", "self, factors"),
            {"SVD": {"algorithm": "mymodels:PureSVD"}},
        ),
        (module, {"SVD": {"algorithm": "mymodels:PureSVD", "params": {"rank": 8}}}),
    ]
    got = []
    for source, recommenders in cases:
        sys.modules.pop("mymodels", None)
        path = tmp_path / "mymodels.py"
        path.unlink(missing_ok=True)
        if source is not None:
            path.write_text(source)
        try:
            validate_config({"e1": {"recommenders": recommenders}})
        except ConfigError as error:
            got.append(str(error).replace(str(tmp_path), "/home/me/study"))  # the docs' folder
    sys.modules.pop("mymodels", None)
    assert got == shown


@pytest.mark.slow
@pytest.mark.realdata
def test_round_trip_runs_as_written_on_coat(tmp_path, monkeypatch):
    """The round trip of "Lists made elsewhere" on Coat from the mirror, as written: the
    workflow exports two seeds, the section's script trains implicit's ALS on them and writes
    lists in raw ids, its config validates, and its API example evaluates the lists (which
    pass the leakage check only if the API makes the exported splits)."""
    import subprocess
    import sys

    import yaml
    from conftest import make_workdir

    from debiaseval.data import MIRROR_ENV
    from debiaseval.workflow.config import validate_config

    if not os.environ.get(MIRROR_ENV):
        pytest.skip(f"{MIRROR_ENV} not set: no local copy of the Coat dataset")
    blocks = code_blocks(section("own-recommender.md", "Lists made elsewhere: the round trip"))
    (command,) = [line for line in blocks["bash"][0].splitlines() if "snakemake export" in line]
    train_script, usage = blocks["python"]
    config = yaml.safe_load(blocks["yaml"][0])
    config.update({"experiments": ["e1"], "datasets": ["coat"], "seeds": 2})
    assert validate_config(config)["e1"]["recommenders"]["ALS_elsewhere"]["ids"] == "raw"
    workdir = make_workdir(tmp_path / "work")
    (workdir / "my.yaml").write_text(yaml.safe_dump(config))
    args = command.split()[1:]  # without .venv/bin/snakemake
    subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        check=True,
        capture_output=True,
        timeout=900,
    )
    assert sorted(p.name for p in (workdir / "results/my/e1/coat/export").iterdir()) == [
        "seed0",
        "seed1",
    ]
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("DEBIASEVAL_DATA", str(tmp_path / "cache"))
    exec(compile(train_script, "docs/own-recommender.md", "exec"), {})
    lists = pd.read_parquet("lists/coat/seed0.parquet")
    assert lists["user"].nunique() > 250 and lists.groupby("user").size().max() == 100
    namespace: dict = {}
    exec(compile(usage, "docs/own-recommender.md", "exec"), namespace)
    summary = namespace["out"]["summary"]
    assert set(summary["recommender"]) == {"PosPop", "ALS_elsewhere"}
    recall = summary.query("metric == 'recall' and k == 10 and testset == 'gt'")
    assert recall.set_index("recommender")["mean"].gt(0).all()


def test_gitignore_covers_what_users_make_at_the_root():
    """The report (report.html, report-paper.html, report.zip) and the docs site (site/) are
    outputs, never files to commit; the sources beside them are not ignored."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    made = ["report.html", "report-paper.html", "report.zip", "site/index.html"]
    kept = ["README.md", "docs/report.md", "workflow/rules/report.smk", "mkdocs.yml"]

    def ignored(path: str) -> bool:
        check = ["git", "check-ignore", "-q", "--no-index", path]
        return subprocess.run(check, cwd=ROOT, capture_output=True).returncode == 0

    assert [p for p in made if not ignored(p)] == []
    assert [p for p in kept if ignored(p)] == []
