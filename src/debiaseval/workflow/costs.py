"""What a run cost, per rule, from Snakemake's benchmark files (``benchmarks/**/*.tsv``).

Every rule of the workflow writes one benchmark file per job, and the default profile sets
``benchmark-extended``, so each file names its rule and the resources the job requested.
:func:`costs_by_rule` sums them into one row per rule: jobs, wall and CPU seconds, the
largest peak memory against the largest ``mem_mb`` requested, and the longest job against
its ``runtime`` request (see docs/performance.md and docs/cluster.md)::

    python -m debiaseval.workflow.costs benchmarks/

CPU time is psutil's, sampled by Snakemake while the job runs: it leaves out what a job
spends after its last sample, so short jobs (a few seconds) under-report it.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import pandas as pd

from debiaseval.io.markdown_tables import markdown_table

__all__ = ["costs_by_rule", "main", "read_benchmarks"]

_COLUMNS = ("rule_name", "s", "cpu_time", "max_rss", "resources")


def read_benchmarks(root: str | Path) -> pd.DataFrame:
    """One row per job: ``rule``, ``path``, ``wall_s``, ``cpu_s``, ``max_rss_mb`` and the
    requested ``mem_mb`` and ``runtime_min`` (NaN when not requested).

    Raises ``ValueError`` naming the file when a benchmark file lacks the extended columns
    (a run without ``--benchmark-extended``), and when ``root`` holds no benchmark file.
    """
    root = Path(root)
    rows = []
    for path in sorted(root.rglob("*.tsv")):
        frame = pd.read_csv(path, sep="\t")
        missing = [column for column in _COLUMNS if column not in frame.columns]
        if missing:
            raise ValueError(
                f"{path}: no {', '.join(missing)} column; benchmarks name their rule only "
                "with --benchmark-extended (set in profiles/default)"
            )
        for record in frame.to_dict("records"):  # one row, or one per repeat of the job
            requested = ast.literal_eval(record["resources"]) if record["resources"] else {}
            rows.append(
                {
                    "rule": record["rule_name"],
                    "path": path.relative_to(root).as_posix(),
                    "wall_s": float(record["s"]),
                    "cpu_s": float(record["cpu_time"]),
                    "max_rss_mb": float(record["max_rss"]),
                    "mem_mb": float(requested.get("mem_mb", "nan")),
                    "runtime_min": float(requested.get("runtime", "nan")),
                }
            )
    if not rows:
        raise ValueError(f"{root}: no benchmark files (*.tsv); run the workflow first")
    return pd.DataFrame(rows)


def costs_by_rule(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per rule (most CPU first): ``jobs``, summed ``wall_s`` and ``cpu_s``, ``cpu_share`` of
    the run's CPU, the largest ``max_rss_mb`` and requested ``mem_mb``, the longest job
    ``max_wall_s`` and the largest ``runtime_min`` requested; a last row ``total``."""
    grouped = jobs.groupby("rule", sort=False)
    table = pd.DataFrame(
        {
            "jobs": grouped.size(),
            "wall_s": grouped["wall_s"].sum(),
            "cpu_s": grouped["cpu_s"].sum(),
            "max_wall_s": grouped["wall_s"].max(),
            "max_rss_mb": grouped["max_rss_mb"].max(),
            "mem_mb": grouped["mem_mb"].max(),
            "runtime_min": grouped["runtime_min"].max(),
        }
    )
    table = table.sort_values(["cpu_s", "wall_s"], ascending=False, kind="stable")
    total = {
        "jobs": len(jobs),
        "wall_s": jobs["wall_s"].sum(),
        "cpu_s": jobs["cpu_s"].sum(),
        "max_wall_s": jobs["wall_s"].max(),
        "max_rss_mb": jobs["max_rss_mb"].max(),
        "mem_mb": jobs["mem_mb"].max(),
        "runtime_min": jobs["runtime_min"].max(),
    }
    table.loc["total"] = total
    table.insert(3, "cpu_share", table["cpu_s"] / max(total["cpu_s"], 1e-12))
    table.index.name = "rule"
    return table.reset_index().astype({"jobs": "int64"})


_FORMATS = {  # column: (header, format of a value; NaN, not requested, stays empty)
    "rule": ("rule", "{}"),
    "jobs": ("jobs", "{:,}"),
    "wall_s": ("wall s", "{:,.0f}"),
    "cpu_s": ("CPU s", "{:,.0f}"),
    "cpu_share": ("CPU share", "{:.1%}"),
    "max_wall_s": ("longest job s", "{:,.1f}"),
    "max_rss_mb": ("peak RSS MB", "{:,.0f}"),
    "mem_mb": ("mem_mb asked", "{:,.0f}"),
    "runtime_min": ("runtime asked (min)", "{:,.0f}"),
}


def _markdown(table: pd.DataFrame) -> str:
    """:func:`costs_by_rule`'s table as Markdown, numbers with thousands separators."""
    cells = pd.DataFrame(
        {
            header: ["" if pd.isna(v) else fmt.format(v) for v in table[column]]
            for column, (header, fmt) in _FORMATS.items()
        }
    )
    return markdown_table(cells)


def main(argv: list[str] | None = None) -> int:
    """Print the per-rule costs of the benchmark files under a folder (markdown or CSV)."""
    parser = argparse.ArgumentParser(
        prog="python -m debiaseval.workflow.costs", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("root", nargs="?", default="benchmarks", help="benchmarks folder")
    parser.add_argument("--csv", action="store_true", help="CSV instead of a markdown table")
    args = parser.parse_args(argv)
    try:
        table = costs_by_rule(read_benchmarks(args.root))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(table.to_csv(index=False) if args.csv else _markdown(table), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
