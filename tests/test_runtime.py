"""The job wrapper: user errors are one line on stderr, the traceback only in the log."""

from __future__ import annotations

import logging

import pytest

from debiaseval.data import DatasetError
from debiaseval.experiments import e1
from debiaseval.io.errors import ContractError, EmptyTestSetError, ListsError
from debiaseval.io.files import UnreadableFileError
from debiaseval.workflow.config import ConfigError
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


@pytest.mark.parametrize(
    "error", [DatasetError, EmptyTestSetError, ConfigError, ListsError, ContractError]
)
def test_user_error_prints_one_line_and_exits(tmp_path, capsys, error):
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
