"""The job wrapper: user errors are one line on stderr, the traceback only in the log."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from debiaseval.data import DatasetError
from debiaseval.experiments import e1
from debiaseval.io import errors
from debiaseval.io.errors import (
    ConfigError,
    ContractError,
    EmptyTestSetError,
    ListsError,
    UnreadableFileError,
)
from debiaseval.workflow.runtime import USER_ERRORS, job


def test_user_errors_are_the_documented_ones():
    assert set(USER_ERRORS) == {
        ConfigError,
        ContractError,
        DatasetError,
        EmptyTestSetError,
        ListsError,
        UnreadableFileError,
    }
    assert e1.EmptyTestSetError is EmptyTestSetError


def test_every_error_class_of_the_ground_floor_is_exported():
    """Every exception class written in :mod:`debiaseval.io.errors` is in its ``__all__``, the
    list :data:`USER_ERRORS` is made from: a class added there but not listed would print a
    traceback in a job instead of one line."""
    tree = ast.parse(Path(errors.__file__).read_text(encoding="utf-8"))
    written = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    }
    assert written and written == set(errors.__all__)  # _Inert: a mixin, not an error
    assert all(issubclass(getattr(errors, name), Exception) for name in written)


ERRORS_ELSEWHERE = {
    "NotFittedError": "recommenders/base.py: a model used before fit, a programming error",
    "MissingExtraError": "recommenders/adapters/__init__.py: an optional extra to install",
}
"""The error classes defined outside ``io/errors.py``, each with why it is not a user error
of config or data."""


def test_user_errors_are_defined_on_the_ground_floor_only():
    package = Path(errors.__file__).resolve().parents[1]
    found = {
        node.name
        for path in package.rglob("*.py")
        if path != Path(errors.__file__).resolve()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name.endswith(("Error", "Exception"))
    }
    assert found == set(ERRORS_ELSEWHERE)


@pytest.mark.parametrize(
    "error", [getattr(errors, name) for name in errors.__all__], ids=errors.__all__
)
def test_user_error_prints_one_line_and_exits(tmp_path, capsys, error):
    """A job prints each error of :mod:`debiaseval.io.errors` as one line, and exits with 1."""
    log = tmp_path / "job.log"
    with pytest.raises(SystemExit) as exit_info, job(log):
        raise error("coat: cannot download\n  https://x: no network")
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    line = "coat: cannot download https://x: no network"
    assert err == f"{error.__name__}: {line} (traceback in {log})\n"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "job failed" in text


def test_other_errors_keep_their_traceback(tmp_path, capsys):
    with pytest.raises(ZeroDivisionError), job(tmp_path / "job.log"):
        1 / 0  # noqa: B018
    assert capsys.readouterr().err == ""
    assert "ZeroDivisionError" in (tmp_path / "job.log").read_text()


def test_job_logs_and_detaches_its_handler(tmp_path):
    before = list(logging.getLogger().handlers)
    with job(tmp_path / "ok.log") as log:
        log.info("hello")
    assert "hello" in (tmp_path / "ok.log").read_text()
    assert logging.getLogger().handlers == before
