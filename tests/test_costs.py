"""Per-rule costs from Snakemake's extended benchmark files."""

from __future__ import annotations

from pathlib import Path

import pytest

from debiaseval.workflow.costs import costs_by_rule, main, read_benchmarks

COLUMNS = [
    "s",
    "h:m:s",
    "max_rss",
    "max_vms",
    "max_uss",
    "max_pss",
    "io_in",
    "io_out",
    "mean_load",
    "cpu_time",
    "jobid",
    "rule_name",
    "wildcards",
    "params",
    "threads",
    "cpu_usage",
    "resources",
    "input_size_mb",
]


def _write(path: Path, rule: str, wall: float, cpu: float, rss: float, resources: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    values = [
        wall,
        "0:00:01",
        rss,
        1,
        1,
        1,
        0,
        0,
        50,
        cpu,
        0,
        rule,
        "{}",
        "{}",
        1,
        50,
        resources,
        "{}",
    ]
    path.write_text("\t".join(COLUMNS) + "\n" + "\t".join(map(str, values)) + "\n")


@pytest.fixture
def benchmarks(tmp_path: Path) -> Path:
    asked = "{'mem_mb': 2000, 'runtime': 10, '_cores': 1}"
    _write(tmp_path / "e4/coat/seed0/fit.tsv", "e4_fit", 10.0, 9.0, 300.0, asked)
    _write(tmp_path / "e4/coat/seed1/fit.tsv", "e4_fit", 14.0, 13.0, 350.0, asked)
    _write(tmp_path / "data/coat/preprocess.tsv", "preprocess", 2.0, 1.0, 120.0, "{'_cores': 1}")
    return tmp_path


def test_costs_are_summed_per_rule_most_cpu_first(benchmarks: Path) -> None:
    table = costs_by_rule(read_benchmarks(benchmarks)).set_index("rule")
    assert list(table.index) == ["e4_fit", "preprocess", "total"]
    fit = table.loc["e4_fit"]
    assert (fit.jobs, fit.wall_s, fit.cpu_s, fit.max_wall_s) == (2, 24.0, 22.0, 14.0)
    assert (fit.max_rss_mb, fit.mem_mb, fit.runtime_min) == (350.0, 2000.0, 10.0)
    assert fit.cpu_share == pytest.approx(22.0 / 23.0)
    assert table.loc["preprocess"].mem_mb != table.loc["preprocess"].mem_mb  # not requested: NaN
    assert table.loc["total"].jobs == 3 and table.loc["total"].cpu_s == 23.0


def test_plain_benchmarks_and_empty_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no benchmark files"):
        read_benchmarks(tmp_path)
    plain = tmp_path / "e1/coat/seed0/evaluate.tsv"
    plain.parent.mkdir(parents=True)
    plain.write_text("s\th:m:s\tmax_rss\tcpu_time\n1.0\t0:00:01\t100\t0.5\n")
    with pytest.raises(ValueError, match=r"evaluate\.tsv: no rule_name.*--benchmark-extended"):
        read_benchmarks(tmp_path)


def test_command_line_prints_a_markdown_table(benchmarks: Path, capsys) -> None:
    assert main([str(benchmarks)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| rule | jobs |")
    assert lines[2].startswith("| e4_fit | 2 | 24 | 22 |")
    assert main([str(benchmarks / "missing")]) == 1
