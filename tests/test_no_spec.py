"""The project stands on its own: no file points readers at an internal method document.

Docstrings, errors and docs cite the papers and the project's own docs pages
(docs/); a reader of a fresh clone must be able to follow every pointer.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Built from parts so that this file does not mention the word it looks for.
FORBIDDEN = re.compile(r"\b" + "SP" + r"EC\b")
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".smk", ".md", ".toml"}


def tracked_files() -> list[Path]:
    """Every file git tracks in this checkout (the fresh clone's content)."""
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_file_mentions_the_internal_method_document():
    hits = []
    for path in tracked_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:80]}")
    assert not hits, "cite the paper and the docs page instead:\n" + "\n".join(hits)


def test_every_docs_page_a_file_names_exists():
    """Docstrings, errors and configs send readers to docs/ pages: each must be there."""
    page = re.compile(r"\bdocs/[\w/.-]+?\.md\b")
    missing = []
    for path in tracked_files():
        if path.suffix not in TEXT_SUFFIXES and path.name != "Snakefile":
            continue
        text = path.read_text(encoding="utf-8")
        for name in set(page.findall(text)):
            if not name.endswith("/eN.md") and not (ROOT / name).is_file():  # eN: a template
                missing.append(f"{path.relative_to(ROOT)} names {name}")
    assert not missing, "\n".join(sorted(missing))
