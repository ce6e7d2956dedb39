"""Atomic writes keep the umask's mode."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest

from debiaseval import io


@pytest.fixture
def umask():
    """Set a umask for the test, restore the old one afterwards."""
    old = os.umask(0o022)
    os.umask(old)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomic_writes_follow_umask(tmp_path, umask, mask, mode):
    umask(mask)
    io.write_parquet(pd.DataFrame({"a": [1, 2]}), tmp_path / "x.parquet")
    io.write_text("hello\n", tmp_path / "x.md")
    for name in ("x.parquet", "x.md"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    assert io.current_umask() == mask


def test_atomic_path_leaves_nothing_on_error(tmp_path):
    target = tmp_path / "y.txt"
    with pytest.raises(RuntimeError), io.atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
