"""The report's pages, its figures' legends and zeros, and the run's closing message."""

from __future__ import annotations

import unicodedata
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from debiaseval.experiments.e4 import tables as e4_tables
from debiaseval.experiments.e4.verdict import e4_verdict
from debiaseval.experiments.verdicts import verdict_markdown
from debiaseval.figures import e1 as e1_figures
from debiaseval.figures import figure_module, grouped_bars, legend_outside
from debiaseval.io.schema import experiment_names
from debiaseval.workflow.report import (
    VERDICT_RESULT,
    config_page,
    exported_splits,
    figure_page,
    finished_message,
    flatten_config,
    markdown_page,
    publish_report,
    report_command,
    run_datasets,
    table_labels,
)

matplotlib.use("Agg", force=True)


def overlaps(fig) -> list[str]:
    """Every legend of ``fig`` that overlaps an axes (its data area), as text."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend())]
    found = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            if ax.get_visible() and box.overlaps(ax.get_window_extent(renderer)):
                found.append(f"legend over axes {ax.get_title()!r}")
    return found


def test_every_experiment_declares_its_report_category():
    for name in experiment_names():
        title = figure_module(name).TITLE
        assert title.startswith(f"{name.upper()} · ") and title.endswith(")"), title


def test_the_verdict_is_labelled_to_head_its_datasets_list_in_the_report():
    """Snakemake's report sorts a dataset's results by label (localeCompare, in which the
    Unicode collation puts a symbol before every digit and letter); the browser test checks
    the order itself. The other tables keep their name, for Snakemake to fill in."""
    assert table_labels(SimpleNamespace(table="verdict", dataset="coat")) == {
        "result": VERDICT_RESULT,
        "dataset": "{dataset}",
    }
    assert table_labels(SimpleNamespace(table="summary", dataset="coat"))["result"] == (
        "{table} (table)"
    )
    assert unicodedata.category(VERDICT_RESULT[0]) == "So" and "verdict" in VERDICT_RESULT


def test_the_legend_sits_outside_the_axes_even_over_the_tallest_bar():
    table = pd.DataFrame({"a": [1.0, 0.2], "b": [0.3, 1.0]}, index=["x", "y"])
    fig = matplotlib.figure.Figure(figsize=(4, 3), layout="constrained")
    ax = fig.add_subplot()
    grouped_bars(ax, table, None, "value")
    ax.legend()  # the old placement: inside the axes, over the data
    assert overlaps(fig)
    ax.get_legend().remove()
    legend_outside(fig, ax)
    assert overlaps(fig) == []
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["a", "b"]


def _kendall(taus: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    testsets = ["FULL", "REG", "WTD"]
    kendall = pd.DataFrame(
        {
            "testset": testsets * 2,
            "metric": "recall",
            "k": 10,
            "group": "MF",
            "with_group": [True] * 3 + [False] * 3,
            "tau": taus,
            "p_value": 0.5,
            "n_recommenders": [3] * 3 + [2] * 3,  # without MF: one recommender fewer
        }
    )
    summary = pd.DataFrame({"metric": ["recall"], "k": [10]})
    return kendall, summary


def test_a_zero_tau_is_drawn_and_labelled_and_a_missing_one_marked():
    kendall, summary = _kendall([0.0, 0.5, np.nan, 1.0, -0.5, 2e-17])  # a rounding zero too
    fig = e1_figures.draw("kendall", {"kendall": kendall, "summary": summary}, "toy")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("0") == 2 and labels.count("n/a") == 1
    assert {"0.50", "1.00", "-0.50"} <= set(labels)  # every other bar carries its value
    zero_lines = [
        line for line in ax.lines if line.get_linewidth() >= 3 and set(line.get_ydata()) == {0.0}
    ]
    assert len(zero_lines) == 2  # one visible stroke per tau of 0
    left, right = ax.get_xlim()
    assert all(left < t.xy[0] < right for t in ax.texts)  # in view, so drawn
    bar_centres = [p.get_x() + p.get_width() / 2 for p in ax.patches]
    for line in zero_lines:
        centre = float(np.mean(line.get_xdata()))
        assert min(abs(centre - c) for c in bar_centres) < 1e-9  # drawn where its bar is
    assert overlaps(fig) == []


def _e4_folder(tmp_path):
    summary = e4_tables.summarise(
        pd.DataFrame(
            {
                "seed": [0, 0, 1, 1],
                "alpha": 0.25,
                "model": ["MF-Naive", "MF-IPS"] * 2,
                "propensity": ["none", "known"] * 2,
                "metric": "mse",
                "value": [2.0, 1.0, 2.2, 1.1],
            }
        )
    )
    folder = tmp_path / "results" / "e4" / "toy"
    folder.mkdir(parents=True)
    summary.to_parquet(folder / "summary.parquet")
    md = e4_tables.summary_markdown(summary, title="E4 on toy", alpha=0.25)
    (folder / "summary.md").write_text(md)
    tests = pd.DataFrame(columns=["model", "propensity", "metric", "alpha", "seed", "p_value"])
    verdict = verdict_markdown(e4_verdict(summary, tests, dataset="toy", alpha=0.25))
    (folder / "verdict.md").write_text(verdict)  # as e4_aggregate writes it
    return folder


def test_publish_report_writes_figures_with_captions_and_pivoted_tables(tmp_path):
    folder = _e4_folder(tmp_path)
    publish_report("e4", "toy", folder)
    names = sorted(p.name for p in (folder / "figures").iterdir())
    assert names == ["test_error.html", "test_error.png", "test_error.svg"]
    page = (folder / "figures" / "test_error.html").read_text()
    assert "<svg" in page and "<?xml" not in page
    caption = figure_module("e4").FIGURES["test_error"]
    assert f"<figcaption><b>E4 on toy: test_error.</b> {caption}" in page.replace("&#x27;", "'")
    table = (folder / "tables" / "summary.html").read_text()
    assert "<table>" in table and "|---|" not in table
    assert "<th>model</th>" in table and "<td>MF-IPS</td>" in table
    verdict = (folder / "tables" / "verdict.html").read_text()
    assert "<h2>Verdict</h2>" in verdict and "MF-IPS (known propensities)" in verdict


def test_figure_page_needs_an_svg():
    with pytest.raises(ValueError, match="x: not an SVG image"):
        figure_page("<html></html>", "x", "caption")
    page = figure_page('<?xml version="1.0"?>\n<svg width="1"></svg>', "T <1>", "a & b")
    assert '<figure>\n<svg width="1"></svg>' in page and "T &lt;1&gt;" in page
    assert "a &amp; b" in page


def test_markdown_page_keeps_the_pivoted_layout():
    table = "| recommender | gt | FULL |\n|---|---|---|\n| MF | 0.1 | 0.2 |\n"
    text = f"# Title\n\nSome `code`.\n\n{table}"
    page = markdown_page(text, "E1 on toy: summary.md")
    assert "<h1>Title</h1>" in page and "<code>code</code>" in page
    assert "<th>recommender</th>\n<th>gt</th>\n<th>FULL</th>" in page
    assert "<td>MF</td>\n<td>0.1</td>\n<td>0.2</td>" in page


def test_the_configuration_page_lists_every_leaf_key():
    config = {"datasets": ["coat"], "e1": {"rho": 0.5, "grid": {}, "ks": [5, 10]}, "m": None}
    assert flatten_config(config) == [
        ("datasets", "[coat]"),
        ("e1.rho", "0.5"),
        ("e1.grid", "{}"),
        ("e1.ks", "[5, 10]"),
        ("m", "null"),
    ]
    page = config_page(config)
    assert "<td>e1.rho</td>\n      <td>0.5</td>" in page
    assert "Configuration of the run" in page


def test_the_configuration_page_points_to_the_studys_config_file():
    page = config_page({"study": "paper", "seeds": 2})
    assert "<code>snakemake --configfile results/paper/config.yaml</code>" in page
    assert "<td>study</td>\n      <td>paper</td>" in page


def test_the_closing_message_lists_only_what_the_run_wrote():
    outputs = [
        "results/A/e1/coat/summary.parquet",
        "results/A/e1/coat/summary.md",
        "results/A/e1/coat/kendall.md",
        "results/A/e1/coat/verdict.md",
        "results/A/e1/coat/figures",
        "results/A/data/coat/interactions.parquet",
        "results/A/e1/coat/seed0/metrics.parquet",
        "results/A/e9/coat/summary.md",  # not an experiment of the run
    ]
    assert run_datasets(outputs, ["e1", "e2"]) == {
        ("e1", "coat"): [  # the verdict first
            "results/A/e1/coat/verdict.md",
            "results/A/e1/coat/kendall.md",
            "results/A/e1/coat/summary.md",
        ]
    }
    message = finished_message(outputs, ["e1", "e2"], "A")
    assert (
        "  E1 on coat: results/A/e1/coat/verdict.md, results/A/e1/coat/kendall.md, "
        "results/A/e1/coat/summary.md" in message
    )
    assert message.startswith("debiaseval: the run of study A (results/A/) is complete.")
    assert "synthetic" not in message and "E2" not in message
    assert "snakemake --report report.html" in message
    touched = finished_message(outputs, ["e1", "e2"], "A", touched=True)  # issue 43, case 14
    assert touched.startswith(
        "debiaseval: --touch marked the outputs of study A (results/A/) as "
        "up to date by their times; no job ran and no result changed."
    )
    assert "produced or changed" not in touched and "complete" not in touched
    assert "  E1 on coat: results/A/e1/coat/verdict.md" in touched
    intermediate = finished_message(["results/A/e1/coat/seed0/split.parquet"], ["e1"], "A")
    assert "changed no experiment's results" in intermediate
    assert "exported" not in intermediate
    exports = [
        f"results/A/{e}/coat/export/seed{s}/{part}.{kind}"
        for e in ("e5", "e1")
        for s in (1, 0)
        for part in ("train", "val")
        for kind in ("parquet", "csv")
    ]
    assert exported_splits(exports) == {
        "results/A/e1/coat/export/": ["0", "1"],
        "results/A/e5/coat/export/": ["0", "1"],
    }
    message = finished_message(exports, ["e1", "e5"], "A")
    assert (
        "  results/A/e1/coat/export/ (seeds 0, 1)\n  results/A/e5/coat/export/ (seeds 0, 1)"
        in message
    )


def test_the_closing_message_gives_this_run_s_report_command():
    """Issue 43, case 17: "(with this run's --configfile/--config)" left the user to rebuild
    the command; the message gives it, with the options that choose the config and folder."""
    argv = [
        ".venv/bin/snakemake",
        "--cores",
        "8",
        "--configfile",
        "config/paper.yaml",
        "--config",
        "datasets=[coat]",
        "e1={rho: 0.4}",
        "-n",
        "--directory",
        "/my study",
    ]
    command = report_command(argv)
    assert command == (
        ".venv/bin/snakemake --report report.html --configfile config/paper.yaml --config "
        "'datasets=[coat]' 'e1={rho: 0.4}' --directory '/my study'"
    )
    message = finished_message(["results/A/e1/coat/summary.md"], ["e1"], "A", command)
    assert message.splitlines()[-1] == f"HTML report with every figure and table: {command}"
    assert report_command(["/v/lib/snakemake/__main__.py", "t.txt"], "/v/bin/python") == (
        "/v/bin/python -m snakemake --report report.html"
    )
