"""The workflow's own housekeeping around Snakemake: its records of what the rules made
(``.snakemake/metadata``), its command line, and the repair of damaged outputs
(docs/troubleshooting.md).

- :func:`made_outputs`, :func:`rerun_target`, :func:`downstream_outputs`,
  :func:`producing_rule`: Snakemake's records, read best effort;
- :func:`runs_jobs`: whether the command line runs jobs, as Snakemake's own parser reads it;
- :func:`rebuild_damaged`: damaged outputs set aside with what was made from them, so that
  their jobs run again. It runs while Snakemake parses the workflow, before the DAG is built:
  Snakemake decides what to run from the files present, so a file moved later (``onstart``,
  once the DAG is built) would not be rebuilt by the run that moved it;
- :func:`name_the_rule`: a job's unreadable-input error naming the rule that writes the file.

The file checks and moves themselves are plain I/O (:mod:`debiaseval.io.files`).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable
from pathlib import Path

from debiaseval.io.errors import UnreadableFileError
from debiaseval.io.files import (
    MoveFailed,
    move_outputs,
    output_damage,
    read_only_message,
)

__all__ = [
    "downstream_outputs",
    "made_outputs",
    "name_the_rule",
    "producing_rule",
    "rebuild_damaged",
    "rerun_target",
    "runs_jobs",
]


def _record(path: str | os.PathLike[str]) -> Path:
    """The file of Snakemake's record of output ``path`` (relative to the working folder)."""
    return Path(
        ".snakemake", "metadata", base64.urlsafe_b64encode(os.fspath(path).encode()).decode()
    )


def producing_rule(path: str | os.PathLike[str]) -> str | None:
    """The rule Snakemake recorded as the writer of ``path`` (its ``.snakemake/metadata``), if any.

    Best effort: the record is looked up in the current working directory, the
    workflow's; ``None`` when there is none or it cannot be read.
    """
    try:
        rule = json.loads(_record(path).read_text(encoding="utf-8")).get("rule")
    except (OSError, ValueError, AttributeError):
        return None
    return rule if isinstance(rule, str) else None


def made_outputs(metadata: str | os.PathLike[str] = ".snakemake/metadata") -> list[str]:
    """Every output Snakemake recorded in ``metadata``: what the workflow's rules made."""
    return sorted(_records(Path(metadata)))


def rerun_target(path: str | os.PathLike[str]) -> str:
    """The output Snakemake knows ``path`` as: ``path``, or the nearest folder above it that
    has a record in ``.snakemake/metadata`` (a ``directory()`` output such as ``figures/``)."""
    path = Path(path)
    for candidate in (path, *path.parents[:-1]):
        if _record(candidate).is_file():
            return os.fspath(candidate)
    return os.fspath(path)


def _records(metadata: Path) -> dict[str, list[str]]:
    """Every output Snakemake recorded in ``metadata`` (``.snakemake/metadata``) -> its inputs."""
    inputs = {}
    if not metadata.is_dir():
        return inputs
    for record in metadata.iterdir():
        try:
            output = base64.urlsafe_b64decode(record.name).decode()
            listed = json.loads(record.read_text(encoding="utf-8")).get("input") or []
        except (OSError, ValueError, UnicodeDecodeError, AttributeError):
            continue
        inputs[output] = [str(p) for p in listed if isinstance(p, str)]
    return inputs


def downstream_outputs(
    paths: Iterable[str | os.PathLike[str]],
    metadata: str | os.PathLike[str] = ".snakemake/metadata",
) -> list[str]:
    """``paths`` (each as :func:`rerun_target` names it) and every output made from them,
    directly or not, as Snakemake's records in ``metadata`` say; sorted."""
    inputs = _records(Path(metadata))
    consumers: dict[str, list[str]] = {}
    for output, listed in inputs.items():
        for path in listed:
            consumers.setdefault(os.path.normpath(path), []).append(output)
    found = {os.path.normpath(rerun_target(p)) for p in paths}
    todo = list(found)
    while todo:
        for output in consumers.get(todo.pop(), []):
            output = os.path.normpath(output)
            if output not in found:
                found.add(output)
                todo.append(output)
    return sorted(found)


def _unwritable(paths: Iterable[str], folder: str | os.PathLike[str]) -> list[str]:
    """The folders of ``paths`` (and ``folder``) this process may not write in: a move out of
    them would fail half-way."""
    folders = {Path(folder), *(Path(p).parent for p in paths if Path(p).exists())}
    return sorted(
        str(f)
        for f in folders
        if f.is_dir() and not os.access(f, os.W_OK | os.X_OK, effective_ids=True)
    )


def runs_jobs(argv: Iterable[str]) -> bool:
    """Whether the snakemake command line ``argv`` (its arguments, without the program) runs
    jobs, as Snakemake's own parser reads it: not a dry run, and none of the commands that
    list, report, draw, lint, unlock, touch or clean (``--list-rules``, ``--summary``,
    ``--lint``, ``--dag``, ``--unlock``, ``--report``, …)."""
    from snakemake.cli import get_argument_parser  # lazy: only the workflow's main process

    try:
        args, _ = get_argument_parser().parse_known_args(list(argv))
    except SystemExit:  # --help, --version, or arguments Snakemake itself refuses
        return False
    return not any(getattr(args, name, None) for name in _NO_JOBS)


_NO_JOBS = (
    "dryrun",
    "touch",
    "report",
    "lint",
    "generate_unit_tests",
    "containerize",
    "export_cwl",
    "list_rules",
    "list_target_rules",
    "dag",
    "rulegraph",
    "filegraph",
    "d3dag",
    "summary",
    "detailed_summary",
    "archive",
    "cleanup_metadata",
    "unlock",
    "list_changes",
    "list_untracked",
    "delete_all_output",
    "delete_temp_output",
    "print_compilation",
    "conda_cleanup_envs",
    "conda_create_envs_only",
)
"""Snakemake's options (their ``argparse`` names) of the commands that run no job."""


def rebuild_damaged(
    folder: str | os.PathLike[str] = "results",
    *,
    metadata: str | os.PathLike[str] = ".snakemake/metadata",
    stamp: str | None = None,
) -> tuple[list[str], str | None]:
    """Set damaged outputs aside so that the run rebuilds them (docs/troubleshooting.md).

    Only what the workflow's rules made is judged (Snakemake's records in ``metadata``,
    :func:`made_outputs`): a file of one's own under ``folder`` is never looked at. A damaged
    output (:func:`output_damage`) moves, with every output made from it
    (:func:`downstream_outputs`), into ``folder/.damaged/<stamp>/`` (default: the time, UTC)
    at its relative path: nothing is deleted. Call it only for a command that runs jobs
    (:func:`runs_jobs`). Returns the lines to print and, when a folder the moves would leave
    is read-only, the one line to stop with (then nothing is moved). Unreadable files are
    reported and never moved.
    """
    import time

    damage = output_damage(folder, made=made_outputs(metadata))
    lines = [
        f"debiaseval: cannot read {path} ({reason}): left as it is; fix its permissions or "
        "the file system, then run again"
        for path, reason in damage.unreadable
    ]
    if not damage.damaged:
        return lines, None
    lines += [f"debiaseval: {path} is damaged ({reason})" for path, reason in damage.damaged]
    stale = downstream_outputs((path for path, _ in damage.damaged), metadata)
    stop = read_only_message(folder)
    blocked = _unwritable(stale, folder)
    if stop is None and blocked:
        stop = (
            f"debiaseval: {blocked[0]}/ is read-only for this user, so its damaged outputs "
            "cannot be set aside (nothing was moved or run); make it writable, then run again"
        )
    if stop is not None:
        return lines, stop
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        place, moved = move_outputs(stale, folder, stamp=stamp)
    except MoveFailed as failed:
        n = len(failed.moved)
        before = f"; {n} output(s) were moved there before it" if n else ""
        stop = (
            f"debiaseval: {failed.strerror}{before}; nothing was run and nothing deleted: "
            "fix the cause (space, permissions), then run again"
        )
        return lines, stop
    more = f" and {len(moved) - 5} more" if len(moved) > 5 else ""
    lines.append(
        f"debiaseval: moved {len(moved)} output(s), the damaged ones and those made from them, "
        f"to {place}/ so that their jobs run again: {', '.join(moved[:5])}{more}"
    )
    return lines, None


def name_the_rule(error: BaseException) -> BaseException:
    """``error``, an :class:`~debiaseval.io.errors.UnreadableFileError` of a file Snakemake
    recorded, naming the rule that writes it in the ``--forcerun`` it suggests; any other
    error as it is."""
    path = error.path if isinstance(error, UnreadableFileError) else None
    if not path:
        return error
    rule = producing_rule(path)
    if rule is None:
        return error
    text = BaseException.__str__(error).replace(f"--forcerun {path} ", f"--forcerun {rule} ")
    named = UnreadableFileError(text)
    named.path = path
    return named
