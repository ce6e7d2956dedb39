"""Package version and a hash of the package source.

The hash goes into the ``params:`` of every rule so that an edit to the
library reruns exactly the jobs that depend on it (Snakemake's code trigger
only sees the script file, not the package it imports).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

__version__ = "0.1.0"


@cache
def code_hash() -> str:
    """SHA-256 (first 16 hex digits) over every ``.py`` file of the package, in path order."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]
