"""resources/: the dataset registry as data, shipped with the package; no absolute paths."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

import pytest

from debiaseval.data.registry import REGISTRY_FILE, SOURCES, load_sources

ROOT = Path(__file__).resolve().parents[1]


def test_top_level_registry_is_the_packaged_one():
    link = ROOT / "resources" / "datasets.yaml"
    packaged = ROOT / "src" / "debiaseval" / REGISTRY_FILE
    assert link.is_symlink() and link.resolve() == packaged.resolve()
    assert (ROOT / "resources" / "README.md").read_text().count("raw/") >= 2
    assert load_sources(link.read_text()) == SOURCES


def test_registry_is_package_data():
    assert resources.files("debiaseval").joinpath(REGISTRY_FILE).is_file()
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "resources/*.yaml" in setup["package-data"]["debiaseval"]


def test_registry_order_and_values():
    assert list(SOURCES) == ["coat", "yahoo-r3", "ml-100k", "ml-1m", "librarything"]
    assert SOURCES["ml-1m"].licence == SOURCES["ml-100k"].licence  # shared YAML anchor
    assert SOURCES["yahoo-r3"].archive_root == ""
    assert "\n" not in (SOURCES["yahoo-r3"].manual_instructions or "")


def test_registry_rejects_unknown_keys():
    text = "toy: {url: null, archive_sha256: null, archive_root: '', files: {}, sha: x}\n"
    with pytest.raises(ValueError, match="toy: unknown keys sha"):
        load_sources(text)


def test_no_absolute_development_paths_in_the_package():
    pattern = re.compile(r"(?<![\w.])/(work|tmp)/")
    hits = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "src" / "debiaseval").rglob("*"))
        if path.suffix in {".py", ".yaml"}
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []
