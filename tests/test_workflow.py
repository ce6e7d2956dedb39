"""Whole-workflow runs of the tiny config: outputs, determinism across --cores, caching, errors.

The tiny run itself is the session fixture ``tiny_workflow`` of tests/conftest.py."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, TINY, chromium, make_workdir, result_bytes, snakemake

from debiaseval.data import SOURCES
from debiaseval.workflow.provenance import read_provenance, with_header, write_table
from debiaseval.workflow.report import VERDICT_RESULT

TARGET = "results/tiny/e1/synthetic/summary.parquet"
E5 = Path("results/tiny/e5/synthetic")

pytestmark = pytest.mark.slow


def test_every_job_leaves_a_benchmark_naming_its_rule(tiny_workflow):
    """Every rule has a benchmark and the default profile sets benchmark-extended, so the
    per-rule costs count exactly the jobs Snakemake ran (all but the target rule ``all``)."""
    from debiaseval.workflow.costs import costs_by_rule, read_benchmarks

    workdir = tiny_workflow
    stats = (workdir / "run.out").read_text().split("Job stats:")[1].split("total")[0]
    ran = {
        line.split()[0]: int(line.split()[1])
        for line in stats.splitlines()
        if len(line.split()) == 2 and line.split()[1].isdigit()
    }
    ran.pop("all")
    table = costs_by_rule(read_benchmarks(workdir / "benchmarks/tiny")).set_index("rule")
    assert table.drop("total")["jobs"].to_dict() == ran


def test_outputs(tiny_workflow):
    workdir = tiny_workflow
    summary = pd.read_parquet(workdir / TARGET)
    assert {
        "recommender",
        "testset",
        "metric",
        "k",
        "mean",
        "sd",
        "n_seeds",
        "pct_diff_vs_gt",
    } <= set(summary.columns)
    estimators = {"SNIPS_WTD", "DR_POP"}  # e1.estimators' defaults, recall only
    # TRUE: synthetic's exact truth from the full rating matrix, the arena's reference
    testsets = {"gt", "FULL", "REG", "SKEW", "WTD", "WTD_H", "TRUE"}
    assert set(summary["testset"]) == testsets | estimators
    assert set(summary.loc[summary["testset"].isin(estimators), "metric"]) == {"recall"}
    assert set(summary["recommender"]) == {"Random", "PosPop", "ItemKNN", "MF"}
    assert set(summary["k"]) == {5, 10}
    assert (summary["n_seeds"] == 2).all()
    # a DR per-user value may lie outside [0, 1] (docs/experiments/e1.md): test sets only
    assert summary.loc[~summary["testset"].isin(estimators), "mean"].between(0, 1).all()
    # intervals over seeds and users, per-user values, paired comparisons (docs/experiments/e1.md)
    assert (summary["ci_low"] <= summary["mean"]).all()
    assert (summary["mean"] <= summary["ci_high"]).all()
    exact = summary["testset"] == "TRUE"  # no sampling error, no bootstrap interval
    assert (
        summary.loc[~exact, "boot_low"].notna().all()
        and summary.loc[exact, "boot_low"].isna().all()
    )
    weighting = pd.read_parquet(
        workdir / "results/tiny/e1/synthetic/seed0/estimators.diagnostics.parquet"
    )
    assert set(weighting["estimator"]) == estimators and (weighting["ess_min"] >= 1 - 1e-9).all()
    per_user = pd.read_parquet(workdir / "results/tiny/e1/synthetic/seed0/metrics_per_user.parquet")
    metrics = pd.read_parquet(workdir / "results/tiny/e1/synthetic/seed0/metrics.parquet")
    keys = ["recommender", "seed", "testset", "metric", "k"]
    means = per_user.groupby(keys, sort=False)["value"].mean().rename("per_user").reset_index()
    both = metrics.merge(means, on=keys, validate="one_to_one")
    assert len(both) == len(metrics) and (both["value"] == both["per_user"]).all()
    comparisons = pd.read_parquet(workdir / "results/tiny/e1/synthetic/comparisons.parquet")
    # test sets incl. gt x metrics x ks x pairs of 4, and the estimators' recall
    assert len(comparisons) == 6 * 5 * 2 * 6 + 2 * 1 * 2 * 6
    assert (comparisons["n_seeds"] == 2).all()
    kendall = pd.read_parquet(workdir / "results/tiny/e1/synthetic/kendall.parquet")
    # the default group is MF: the recommenders whose algorithm is mf
    assert set(kendall["group"]) == {"MF"} and set(kendall["with_group"]) == {True, False}
    assert kendall["tau"].dropna().between(-1, 1).all()
    assert (
        (workdir / "results/tiny/e1/synthetic/summary.md")
        .read_text()
        .startswith("# E1 on synthetic")
    )
    assert (workdir / "logs/tiny/e1/synthetic/aggregate.log").exists()
    assert (workdir / "benchmarks/tiny/e1/synthetic/seed0/train/MF/chunk0.tsv").exists()
    # tau over the recommenders but Random (e1.kendall_exclude defaults to the random ones)
    counts = kendall.groupby("with_group")["n_recommenders"].max()
    assert counts[True] == 3 and counts[False] == 2
    diagnostics = pd.read_parquet(workdir / "results/tiny/e1/synthetic/testsets.parquet")
    assert len(diagnostics) == 2 * 5 and set(diagnostics["seed"]) == {0, 1}
    assert diagnostics["zero_weight_share"].between(0, 1).all()
    assert (diagnostics[["kl_users", "kl_items"]] >= 0).all().all()
    summary_md = (workdir / "results/tiny/e1/synthetic/summary.md").read_text()
    assert "How MAR-like each test set is" in summary_md
    # the arena's scoreboard: on synthetic every row against the exact TRUE row
    accuracy = pd.read_parquet(workdir / "results/tiny/e1/synthetic/estimator_accuracy.parquet")
    assert set(accuracy["truth"]) == {"TRUE"} and "gt" in set(accuracy["testset"])
    truth = pd.read_parquet(workdir / "results/tiny/e1/synthetic/seed1/truth.parquet")
    assert set(truth["testset"]) == {"TRUE"} and set(truth["seed"]) == {1}
    rows = accuracy[accuracy["family"] != "baseline"]
    assert rows["coverage"].between(0, 1).all() and (accuracy["rmse"] >= 0).all()
    assert set(accuracy.loc[accuracy["family"] == "baseline", "testset"]) == {"CONSTANT"}
    # two seeds, each its own draw: no interval below 5 seeds, and the verdict says so
    assert set(accuracy["draws"]) == {"independent"}
    assert accuracy[[c for c in accuracy if c.endswith(("_low", "_high"))]].isna().all().all()
    verdict = (workdir / "results/tiny/e1/synthetic/verdict.md").read_text()
    assert "With 2 seeds the scoreboard gives no interval and names no best row" in verdict
    separation = pd.read_parquet(workdir / "results/tiny/e1/synthetic/truth_separation.parquet")
    assert set(separation["method"]) == {"stouffer"} and set(separation["truth"]) == {"TRUE"}
    # the SNIPS row's sensitivity and each pair's Γ*; the scoreboard's per-seed inputs
    sensitivity = pd.read_parquet(workdir / "results/tiny/e1/synthetic/sensitivity.parquet")
    assert set(sensitivity["estimator"]) == {"SNIPS_WTD"} and set(sensitivity["gamma"]) == {
        1.5,
        2.0,
        3.0,
    }
    assert (sensitivity["low"] <= sensitivity["estimate"] + 1e-12).all()
    snips = comparisons[comparisons["testset"] == "SNIPS_WTD"]
    assert (snips["gamma_star"] >= 1).all()
    assert comparisons.loc[comparisons["testset"] == "gt", "gamma_star"].isna().all()
    arena = pd.read_parquet(workdir / "results/tiny/e1/synthetic/seed0/arena.parquet")
    own = arena[arena["testset"] == "TRUE"]  # the truth's own means, over all its users
    assert len(own) and (own["value"] == own["truth"]).all() and "gt" in set(arena["testset"])
    replicates = pd.read_parquet(
        workdir / "results/tiny/e1/synthetic/seed0/arena_replicates.parquet"
    )
    assert set(replicates["replicate"]) == set(range(replicates["replicate"].max() + 1))
    tests = pd.read_parquet(workdir / "results/tiny/e1/synthetic/seed0/truth_tests.parquet")
    assert set(tests["seed"]) == {0} and tests["p_value"].between(0, 1).all()
    for figure in ("recall", "pct_diff", "kendall", "significance", "accuracy"):
        svg = workdir / f"results/tiny/e1/synthetic/figures/{figure}.svg"
        assert svg.read_text().lstrip().startswith("<?xml")
        assert svg.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_selected_mf_learns(tiny_workflow):
    workdir = tiny_workflow
    for seed in (0, 1):
        tuning = pd.read_parquet(
            workdir / f"results/tiny/e1/synthetic/seed{seed}/tuning/MF.parquet"
        )
        assert {"epochs", "status", "selected"} <= set(tuning.columns)
        chosen = tuning[tuning["selected"]].iloc[0]
        assert chosen["status"] == "ok" and 5 <= chosen["epochs"] <= 10
        recs = pd.read_parquet(workdir / f"results/tiny/e1/synthetic/seed{seed}/recs/MF.parquet")
        assert recs[recs["rank"] <= 10]["item"].nunique() > 15  # not a popularity ranker
    summary = pd.read_parquet(workdir / TARGET)
    gt = summary[(summary["testset"] == "gt") & (summary["metric"] == "recall")]
    gt = gt[gt["k"] == 10].set_index("recommender")["mean"]
    assert gt["MF"] > gt["Random"]


def report_results(config: dict) -> dict[str, dict[str, set[str]]]:
    """What the report of a run of ``config`` lists: category -> dataset -> results."""
    from debiaseval.figures import figure_module
    from debiaseval.workflow.config import validate_config

    resolved = validate_config(config)
    listing = {"Configuration": {"": {"resolved configuration"}}}
    for name in resolved["experiments"]:
        figures = figure_module(name)
        outputs = importlib.import_module(f"debiaseval.experiments.{name}").OUTPUTS
        results = {f"{figure} (figure)" for figure in figures.FIGURES}
        results |= {f"{Path(o).stem} (table)" for o in outputs if o.endswith(".md")}
        results = {VERDICT_RESULT if r == "verdict (table)" else r for r in results}
        listing[figures.TITLE] = {dataset: results for dataset in resolved[name]["datasets"]}
    return listing


def result_page(result: str) -> tuple[str, str]:
    """The page (its file's stem) and kind (figure, table, config) of a result the report
    lists, by its label: ``<name> (figure)``, ``<name> (table)``, the verdict's
    ``VERDICT_RESULT`` (its table page ``verdict.html``) or the configuration."""
    if result == VERDICT_RESULT:
        return "verdict", "table"
    if result.endswith(")"):
        name, kind = result.removesuffix(")").split(" (")
        return name, kind
    return "config", "config"


def test_report_holds_every_figure_table_and_the_configuration(tiny_workflow):
    workdir = tiny_workflow
    snakemake(workdir, "--report", "report.html")
    html = (workdir / "report.html").read_text()
    expected = report_results(yaml.safe_load(TINY.read_text()))
    for category, datasets in expected.items():
        assert json.dumps(category)[1:-1] in html, category
        for results in datasets.values():
            for result in results:
                assert f"filename={result_page(result)[0]}.html" in html, result


SCREENSHOTS = ROOT / "results" / "report-screenshots"
"""Where the browser test saves what it saw (CI keeps results/ as its artefacts)."""

# In a figure page: the bounding boxes of every legend and of every axes' data area (the
# background patch matplotlib draws first in each axes group of its SVG).
_LEGENDS_OVER_AXES = """svg => {
    const box = el => el.getBoundingClientRect();
    const axes = [...svg.querySelectorAll('g[id^="axes_"]')]
        .map(a => a.querySelector(':scope > g[id^="patch_"] path')).filter(Boolean).map(box);
    const legends = [...svg.querySelectorAll('g[id^="legend_"]')].map(box);
    const cross = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
        && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    return {axes: axes.length, legends: legends.length,
            overlaps: legends.filter(l => axes.some(a => cross(l, a))).length};
}"""


# On the report's home pane: the blocks of the front page (headings, paragraphs, tables, lists,
# verdict blocks; none counted inside another) and the rule graph, and every pair that overlaps.
_FRONT_BLOCKS = """() => {
    const front = document.getElementById('debiaseval-front');
    const home = front.closest('.prose');
    const picked = [...home.querySelectorAll('h1, h2, h3, p, table, ul, pre, section')];
    picked.push(document.getElementById('rulegraph'));
    const blocks = picked.filter(el => el.getClientRects().length > 0
        && !picked.some(other => other !== el && other.contains(el)));
    const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
        + ' ' + el.textContent.trim().slice(0, 30);
    const cross = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
        && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const boxes = blocks.map(el => el.getBoundingClientRect());
    const overlaps = [];
    boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b, j) => {
        if (cross(a, b)) overlaps.push([name(blocks[i]), name(blocks[i + 1 + j])]);
    }));
    return {blocks: blocks.map(name), overlaps};
}"""

# Whether an element lies wholly inside the window (to a pixel: a scrolled position may fall
# between pixels) and is what the window shows at its centre.
_IN_VIEW = """el => {
    const b = el.getBoundingClientRect();
    const seen = document.elementFromPoint((b.left + b.right) / 2, (b.top + b.bottom) / 2);
    return b.top >= -1 && b.left >= -1 && b.bottom <= innerHeight + 1 && b.right <= innerWidth + 1
        && seen !== null && (el === seen || el.contains(seen));
}"""


def _check_front_page(page, blocks: int) -> None:
    """The front page opens at its top, on windows 900 and 800 px high: its first heading,
    Verdicts, is in view, and so are the first verdict block's heading and first finding; no
    two of its blocks and the rule graph overlap; it has ``blocks`` verdict blocks, and
    scrolled to, the last is in view, with Provenance below it and Figures last; E1's link to
    its pairs opens comparisons.md's table and a figure link the figure, in the report."""
    front = page.locator("#debiaseval-front")
    front.wait_for(timeout=30_000)
    page.locator("#rulegraph canvas, #rulegraph svg").first.wait_for(timeout=30_000)
    assert front.locator("h2").all_inner_texts() == ["Verdicts", "Provenance", "Figures"]
    verdicts = front.locator("section.debiaseval-verdict")
    first = verdicts.first
    opening = (front.locator("h2").first, first.locator("h3"), first.locator("li").first)
    for height in (900, 800):
        page.set_viewport_size({"width": 1400, "height": height})
        for element in opening:
            assert element.evaluate(_IN_VIEW), (height, element.bounding_box())
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=SCREENSHOTS / "front.png")
    geometry = page.evaluate(_FRONT_BLOCKS)
    assert len(geometry["blocks"]) >= 6 and geometry["overlaps"] == [], geometry
    assert any(name.startswith("div#rulegraph") for name in geometry["blocks"]), geometry
    assert verdicts.count() == blocks, verdicts.all_inner_texts()
    last = verdicts.last
    assert not last.evaluate(_IN_VIEW)  # below the window at first: the pane must scroll
    last.evaluate("el => el.scrollIntoView({block: 'end'})")
    assert last.evaluate(_IN_VIEW), last.bounding_box()
    assert last.locator("li").count() >= 1, last.inner_text()
    below = last.evaluate("el => el.getBoundingClientRect().bottom")
    provenance = front.locator("h2", has_text="Provenance")
    assert provenance.evaluate("el => el.getBoundingClientRect().top") >= below - 1
    page.screenshot(path=SCREENSHOTS / "front_last-verdict.png")
    menu = page.locator("nav").first
    pairs = verdicts.first.locator('a[data-result$="/tables/comparisons.html"]')
    pairs.scroll_into_view_if_needed()
    pairs.click()  # E1's pairs: their table
    frame = page.frame_locator("iframe")
    frame.locator("h1", has_text="paired comparisons").wait_for(timeout=30_000)
    assert frame.locator("table tbody tr").count() >= 1
    menu.locator("ol li a").first.click()  # the breadcrumbs' home: the menu again
    menu.get_by_text("Workflow", exact=True).click()  # and the front page
    link = front.locator('a[data-result$="/figures/recall.html"]').first
    link.scroll_into_view_if_needed()
    link.click()
    figure = frame.locator("figure svg")
    figure.wait_for(timeout=30_000)
    assert "recall" in frame.locator("figcaption").inner_text()
    menu.locator("ol li a").first.click()  # the breadcrumbs' home: the menu again
    menu.get_by_text("Results", exact=True).wait_for(timeout=30_000)


def _check_page(page, frame, category: str, dataset: str, result: str) -> None:
    """The result's page (in the report's iframe) is whole: a figure with its caption, a
    verdict with its findings, a table with rows, or the configuration."""
    from debiaseval.figures import figure_module

    name, kind = result_page(result)
    if kind == "figure":
        experiment = category.split(" ")[0].lower()
        svg = frame.locator("figure svg")
        svg.wait_for(timeout=30_000)
        size = svg.evaluate("s => (b => [b.width, b.height])(s.getBoundingClientRect())")
        assert min(size) > 100, (result, size)
        caption = frame.locator("figcaption")
        assert caption.is_visible()
        text = " ".join(caption.inner_text().split())
        assert text.endswith(" ".join(figure_module(experiment).FIGURES[name].split())), text
        geometry = svg.evaluate(_LEGENDS_OVER_AXES)
        assert geometry["axes"] >= 1 and geometry["overlaps"] == 0, (result, geometry)
    elif name == "verdict":  # a verdict: a heading and one bullet per finding
        frame.locator("h2", has_text="Verdict").wait_for(timeout=30_000)
        assert frame.locator("li").count() >= 1, result
        assert "|---|" not in frame.locator("body").inner_text()
    else:
        first = frame.locator("table").first
        first.wait_for(timeout=30_000)
        tables = frame.locator("table")
        for i in range(tables.count()):
            assert tables.nth(i).locator("th").count() >= 2, (result, i)
            assert tables.nth(i).locator("tbody tr").count() >= 1, (result, i)
        assert "|---|" not in frame.locator("body").inner_text()  # Markdown rendered
        if kind == "config":
            rows = frame.locator("tr", has_text="e1.rho")
            assert rows.count() == 1 and rows.first.locator("td").nth(1).inner_text() == "0.5"
    parts = (category.split(" ")[0], dataset, name, kind if kind != name else "")
    stem = "_".join(part for part in parts if part)
    page.screenshot(path=SCREENSHOTS / f"{stem}.png")


@contextlib.contextmanager
def report_in_browser(report: Path) -> Iterator[tuple[Any, list[str]]]:
    """``report`` open in headless Chromium at 1400 x 900, its menu shown: the page, and the
    messages of the dialogs it opens (a script run by the report's data would open one)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the test extra")
    executable = chromium()
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            dialogs: list[str] = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.goto(report.as_uri())
            page.locator("nav").first.get_by_text("Results", exact=True).wait_for(timeout=30_000)
            yield page, dialogs
        finally:
            browser.close()


def listed_results(menu, category: str, dataset: str, several: bool) -> list[tuple[str, ...]]:
    """The rows the report's menu lists, in its order, once the category is clicked from the
    menu's home (then the dataset, when the category has ``several``): each row's cells."""
    menu.locator("ol li a").first.click()  # the breadcrumbs' home
    menu.get_by_text(category, exact=True).click()
    if several:
        menu.get_by_text(dataset, exact=True).click()
    rows = menu.locator("tbody tr").all_inner_texts()
    return [tuple(cell.strip() for cell in row.split("\t") if cell.strip()) for row in rows]


def test_report_in_a_browser_shows_every_result_with_its_caption(tiny_workflow):
    """The report opens in headless Chromium, at 1400 x 900, on its front page, whole
    (:func:`_check_front_page`). Its menu has a category per experiment, titled
    with the paper, and "Configuration"; each category lists every figure and table of each
    dataset; each opens whole (figures with their caption under them and no legend over the
    data, tables with rows and pivoted as in the Markdown), and none opens a dialog. Screenshots of
    every page go to results/report-screenshots/ for a person to look at."""
    records = sorted((tiny_workflow / "results").glob("*/*/*/provenance.json"))
    assert records and all((r.parent / "verdict.md").is_file() for r in records)  # the blocks
    snakemake(tiny_workflow, "--report", "report.html")
    expected = report_results(yaml.safe_load(TINY.read_text()))
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)
    SCREENSHOTS.mkdir(parents=True)
    with report_in_browser(tiny_workflow / "report.html") as (page, dialogs):
        menu = page.locator("nav").first
        pairs = sum(len(d) for c, d in expected.items() if c != "Configuration")
        _check_front_page(page, pairs)
        listed = [" ".join(t.split()) for t in menu.locator("li").all_inner_texts()]
        assert set(expected) <= set(listed), listed
        for category, datasets in expected.items():
            for dataset, results in datasets.items():
                shown = listed_results(menu, category, dataset, len(datasets) > 1)
                rows = {cells: i for i, cells in enumerate(shown)}
                wanted = {(r, dataset) if dataset else (r,) for r in results}
                assert set(rows) == wanted, (category, sorted(rows))
                for cells, i in sorted(rows.items()):
                    menu.locator("tbody tr").nth(i).locator("a").first.click()
                    frame = page.frame_locator("iframe")
                    _check_page(page, frame, category, dataset, cells[0])
        assert dialogs == [], dialogs
    shots = sorted(p.name for p in SCREENSHOTS.glob("*.png"))
    assert len(shots) == 2 + sum(len(r) for d in expected.values() for r in d.values()), shots


def test_clicking_an_experiment_shows_its_verdict_first(tiny_workflow):
    """Clicking an experiment in the report's menu (then a dataset, when it has several) lists
    that dataset's results with the verdict first (``VERDICT_RESULT``, which sorts before
    every other label), and the verdict opens with its findings."""
    from debiaseval.figures import figure_module
    from debiaseval.io.schema import experiment_names

    expect = pytest.importorskip("playwright.sync_api", reason="needs the test extra").expect
    snakemake(tiny_workflow, "--report", "report.html")
    expected = report_results(yaml.safe_load(TINY.read_text()))
    titles = {figure_module(name).TITLE: name for name in experiment_names()}
    with report_in_browser(tiny_workflow / "report.html") as (page, dialogs):
        menu = page.locator("nav").first
        frame = page.frame_locator("iframe")
        for category, datasets in expected.items():
            if category not in titles:
                continue  # the Configuration
            for dataset in datasets:
                shown = listed_results(menu, category, dataset, len(datasets) > 1)
                assert shown[0] == (VERDICT_RESULT, dataset), (category, shown)
                assert len(shown) > 1 and VERDICT_RESULT not in {cells[0] for cells in shown[1:]}
                menu.locator("tbody tr").first.locator("a").first.click()
                title = f"{titles[category].upper()} on {dataset}: verdict.md"
                expect(frame.locator("title")).to_have_js_property("text", title, timeout=30_000)
                assert frame.locator("h2", has_text="Verdict").is_visible()
                assert frame.locator("li").count() >= 1, (category, dataset)
        assert dialogs == [], dialogs


def test_success_says_where_the_results_are(tiny_workflow):
    output = (tiny_workflow / "run.out").read_text()
    for experiment in ("e1", "e2", "e3", "e4", "e5", "e6"):
        assert f"{experiment.upper()} on synthetic: results/tiny/{experiment}/synthetic/" in output
    # E1's list starts with its verdict, then the paired comparisons and the report of what its
    # filter dropped (docs/experiments/e1.md)
    verdict, comparisons, dropped, accuracy = (
        "results/tiny/e1/synthetic/verdict.md",
        "results/tiny/e1/synthetic/comparisons.md",
        "results/tiny/e1/synthetic/dropped.md",
        "results/tiny/e1/synthetic/estimator_accuracy.md",
    )
    assert f"E1 on synthetic: {verdict}, {comparisons}, {dropped}, {accuracy}" in output
    assert "snakemake --report report.html" in output


def test_a_targeted_summary_refreshes_its_figures_and_tables_and_names_only_them(
    tiny_workflow, tmp_path
):
    """Asking for one dataset's E1 summary after a parameter change also redraws that dataset's
    figures and HTML tables (they come from the same job), and the closing message lists that
    result only."""
    workdir = tmp_path / "targeted"
    shutil.copytree(tiny_workflow, workdir, symlinks=True)  # results and Snakemake's records
    before = result_bytes(workdir)
    (workdir / "rho.yaml").write_text("study: tiny\ne1: {rho: 0.4}\n")
    run = snakemake(workdir, "--cores", "2", TARGET, configfiles=("tiny.yaml", "rho.yaml"))
    after = result_bytes(workdir)
    changed = {name for name in after if after[name] != before.get(name)}
    folder = "results/tiny/e1/synthetic"
    assert f"{folder}/summary.parquet" in changed
    for suffix in (".svg", ".png", ".html"):
        assert f"{folder}/figures/pct_diff{suffix}" in changed
    assert f"{folder}/tables/summary.html" in changed
    assert {name for name in changed if not name.startswith(folder)} == set()
    output = run.stdout + run.stderr
    assert (
        "E1 on synthetic: results/tiny/e1/synthetic/verdict.md, "
        "results/tiny/e1/synthetic/comparisons.md, "
        "results/tiny/e1/synthetic/estimator_accuracy.md, "
        "results/tiny/e1/synthetic/kendall.md" in output
    )
    assert not any(f"E{n} on " in output for n in range(2, 7)), output[-2000:]
    # nothing of E1 is stale: the default target has no E1 job left to run
    rest = snakemake(workdir, "-n", "--cores", "1", configfiles=("tiny.yaml", "rho.yaml")).stdout
    assert "rule e1_" not in rest, rest


def _run_without_mirror(workdir: Path, *args: str, mirror: Path | None = None):
    env = {k: v for k, v in os.environ.items() if k != "DEBIASEVAL_MIRROR"}
    if mirror is not None:
        env["DEBIASEVAL_MIRROR"] = str(mirror)
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "missing.yaml", "--cores", "1", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_manual_only_datasets_without_a_copy_stop_the_run_before_any_job(tmp_path):
    """A run naming Yahoo! R3 and LibraryThing (which nothing can download) with no copy of
    them stops before its first job, with one message naming both, where to put them and the
    --config that drops them."""
    workdir = make_workdir(tmp_path / "missing")
    (workdir / "missing.yaml").write_text(
        "datasets: [synthetic, yahoo-r3]\nexperiments: [e1, e2]\ne2: {datasets: [librarything]}\n"
    )
    result = _run_without_mirror(workdir)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    start = output.index("debiaseval: 2 datasets of this run cannot be downloaded")
    lines = output[start:].splitlines()
    assert lines[1].startswith("  yahoo-r3: Yahoo! R3 cannot be downloaded automatically")
    assert lines[2].startswith("  librarything: LibraryThing is not downloaded automatically")
    assert lines[3] == (
        "Or run without them: snakemake ... --config 'datasets=[synthetic]' 'experiments=[e1]'"
    )
    assert output.count("cannot be downloaded and no local copy") == 1  # one message
    assert not (workdir / "results").exists() and not (workdir / "logs").exists()  # no job ran
    # the command it gives runs (dry) without them
    dropped = _run_without_mirror(
        workdir, "-n", "--config", "datasets=[synthetic]", "experiments=[e1]"
    )
    assert dropped.returncode == 0, dropped.stderr
    assert "download" not in dropped.stdout.split("Job stats:")[1].split("total")[0]


def test_a_dry_run_that_needs_a_manual_only_dataset_stops_with_the_same_message(tmp_path):
    """Issue 43, case 16: `--config 'datasets=[yahoo-r3]'` without a copy planned a download
    silently in a dry run; it stops while Snakemake plans, with the start check's message."""
    workdir = make_workdir(tmp_path / "dry")
    (workdir / "missing.yaml").write_text("experiments: [e1]\n")
    result = _run_without_mirror(workdir, "-n", "--config", "datasets=[yahoo-r3]")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    start = output.index(
        "debiaseval: 1 dataset of this run cannot be downloaded and no local "
        "copy was found (nothing was run):"
    )
    assert (
        output[start:]
        .splitlines()[1]
        .startswith("  yahoo-r3: Yahoo! R3 cannot be downloaded automatically")
    )
    assert "Traceback" not in output and not (workdir / "results").exists()
    # a target that needs no download is not concerned
    target = "results/missing/e1/synthetic/seed0/split.parquet"
    other = _run_without_mirror(workdir, "-n", target, "--config", "datasets=[synthetic, yahoo-r3]")
    assert other.returncode == 0, other.stderr


def test_a_mirror_copy_lets_the_run_fetch_the_manual_dataset(tmp_path):
    """With <mirror>/yahoo-r3/ present the start check passes and the download rule reads the
    mirror: its files are verified (here a damaged copy fails on its checksum, in the
    download job, not in the start check); with the real mirror the files arrive."""
    workdir = make_workdir(tmp_path / "mirrored")
    (workdir / "missing.yaml").write_text("datasets: [yahoo-r3]\nexperiments: [e1]\n")
    fake = tmp_path / "mirror" / "yahoo-r3"
    fake.mkdir(parents=True)
    for name in SOURCES["yahoo-r3"].files:
        (fake / name).write_text("1\t1\t5\n")
    result = _run_without_mirror(workdir, "resources/raw/yahoo-r3", mirror=fake.parent)
    assert result.returncode != 0
    assert "cannot be downloaded and no local copy" not in result.stdout + result.stderr
    assert "yahoo-r3: checksum mismatch" in result.stderr
    real = Path(os.environ.get("DEBIASEVAL_MIRROR", "/nonexistent"))
    if not (real / "yahoo-r3").is_dir():
        pytest.skip("DEBIASEVAL_MIRROR holds no yahoo-r3: only the damaged copy was tried")
    result = _run_without_mirror(workdir, "resources/raw/yahoo-r3", mirror=real)
    assert result.returncode == 0, result.stderr
    assert (workdir / "resources/raw/yahoo-r3/ydata-ymusic-rating-study-v1_0-train.txt").exists()


def test_e6_outputs(tiny_workflow):
    workdir = tiny_workflow
    folder = workdir / "results/tiny/e6/synthetic"
    scores = pd.read_parquet(folder / "scores.parquet")
    assert list(scores.columns) == [
        "seed",
        "t",
        "recommender",
        "weighting",
        "p",
        "score",
        "ci_low",
        "ci_high",
        "kl_divergence",
        "flags",
    ]
    assert set(scores["seed"]) == {0, 1} and set(scores["t"]) == {0, 1, 2}
    assert set(scores["recommender"]) == {"g1", "g2", "cosine_cf", "naive_cf"}
    assert set(zip(scores["weighting"], scores["p"], strict=True)) == {
        ("none", 0),
        ("kl", 10),
        ("kl", 80),
    }
    assert scores["score"].between(0, 1).all()
    weights = pd.read_parquet(folder / "weights.parquet")
    assert list(weights.columns) == ["seed", "t", "p", "item", "weight"]
    assert (weights["weight"] != 1).all() and (weights["weight"] > 0).all()
    snapshots = pd.read_parquet(folder / "snapshots.parquet")
    assert len(snapshots) == 2 * 3
    assert (folder / "scores.md").read_text().startswith("# E6 on synthetic")
    for name in ("seed0/scores.parquet", "seed1/lists.parquet", "tables/scores.html"):
        assert (folder / name).exists()
    assert (folder / "figures/scores.svg").read_text().lstrip().startswith("<?xml")
    assert (workdir / "logs/tiny/e6/synthetic/seed0/evaluate.log").exists()
    assert (workdir / "benchmarks/tiny/e6/synthetic/seed1/evaluate.tsv").exists()
    assert (
        "E6 on synthetic: results/tiny/e6/synthetic/verdict.md, results/tiny/e6/synthetic/scores.md"
        in (workdir / "run.out").read_text()
    )


def test_e6_api_gives_the_workflow_bytes(tiny_workflow, tmp_path):
    from debiaseval.api import run_e6

    out = run_e6("synthetic", yaml.safe_load(TINY.read_text()))
    for stem in ("scores", "weights", "snapshots", "lists"):
        written = tiny_workflow / f"results/tiny/e6/synthetic/{stem}.parquet"
        write_table(out[stem], tmp_path / f"{stem}.parquet", read_provenance(written))
        assert (tmp_path / f"{stem}.parquet").read_bytes() == written.read_bytes(), stem


def test_e5_outputs(tiny_workflow):
    workdir = tiny_workflow
    est = pd.read_parquet(workdir / E5 / "estimates.parquet")
    assert list(est.columns) == [
        "model",
        "params",
        "k",
        "true_recall",
        "traditional_recall",
        "ure",
        *[
            f"{v}_{s}"
            for v in ("true_recall", "traditional_recall", "ure")
            for s in ("ci_low", "ci_high", "boot_low", "boot_high")
        ],
        "n_seeds",
        "rank_true",
        "rank_traditional",
        "rank_ure",
        "flags",
    ]
    assert (est["ure_boot_low"] <= est["ure_boot_high"]).all()
    assert set(est["model"]) == {"Random", "PosPop", "ItemKNN", "WARP", "IPS"}
    assert len(est) == 7 * 2 and set(est["k"]) == {3, 10} and (est["n_seeds"] == 2).all()
    assert {json.loads(p).get("max_sampled") for p in est["params"]} == {None, 1, 10}
    agr = pd.read_parquet(workdir / E5 / "agreement.parquet")
    assert list(agr.columns) == [
        "k",
        "estimator",
        "reference",
        "kendall_tau",
        "tau_low",
        "tau_high",
        "pearson_r",
        "mean_bias",
        "n_models",
        "flags",
    ]
    assert set(agr["estimator"]) == {"traditional", "ure"} and (agr["n_models"] == 7).all()
    exposure = pd.read_parquet(workdir / E5 / "seed0/exposure.parquet")
    assert set(exposure["part"]) == {"train", "exposed", "unexposed"}
    # each seed exposes its own draw of synthetic's full matrix (synthetic.per_seed)
    full = [pd.read_parquet(workdir / E5 / f"seed{s}/full.parquet") for s in (0, 1)]
    assert not full[0].equals(full[1]) and not (workdir / E5 / "full.parquet").exists()
    labelled = exposure[["user", "item", "rating"]].sort_values(["user", "item"], ignore_index=True)
    pd.testing.assert_frame_equal(labelled, full[0][["user", "item", "rating"]])
    assert (exposure.groupby("user")["part"].apply(lambda p: (p == "exposed").sum()) == 10).all()
    per_seed = pd.read_parquet(workdir / E5 / "seed1/estimates/WARP.parquet")
    assert set(per_seed["seed"]) == {1}
    per_user = pd.read_parquet(workdir / E5 / "seed1/metrics_per_user/WARP.parquet")
    means = per_user.groupby(["params", "k", "metric"])["value"].mean().unstack("metric")
    expected = per_seed.set_index(["params", "k"])["ure"]
    np.testing.assert_allclose(means["ure"].reindex(expected.index), expected, rtol=1e-12)
    comparisons = pd.read_parquet(workdir / E5 / "comparisons.parquet")
    assert (comparisons["n_seeds"] == 2).all() and len(comparisons) == 2 * 3 * 21
    assert (workdir / E5 / "agreement.md").read_text().startswith("# E5 on synthetic")
    assert (workdir / "logs/tiny/e5/synthetic/seed0/evaluate/IPS.log").exists()
    assert (workdir / "benchmarks/tiny/e5/synthetic/seed0/evaluate/IPS.tsv").exists()
    for figure in ("correlation", "scatter"):
        assert (workdir / E5 / f"figures/{figure}.svg").read_text().lstrip().startswith("<?xml")
    assert (workdir / E5 / "tables/estimates.html").exists()


def test_e5_api_gives_the_workflow_values(tiny_workflow):
    import yaml

    from debiaseval import api

    config = yaml.safe_load(TINY.read_text())
    out = api.run_e5("synthetic", config, seeds=2)
    written = pd.read_parquet(tiny_workflow / E5 / "estimates.parquet")
    pd.testing.assert_frame_equal(out["estimates"], written, check_dtype=False)


def test_e3_outputs_and_api_parity(tiny_workflow):
    import yaml

    from debiaseval.api import run_e3

    workdir = tiny_workflow
    folder = workdir / "results" / "tiny" / "e3" / "synthetic"
    estimates = pd.read_parquet(folder / "estimates.parquet")
    assert list(estimates.columns) == [
        "matrix",
        "metric",
        "estimator",
        "true_value",
        "mean",
        "sd",
        "ci_low",
        "ci_high",
        "n_draws",
        "flags",
    ]
    assert set(estimates["metric"]) == {"mae", "dcg@10"}
    assert set(estimates["estimator"]) == {"naive", "ips", "snips"}
    assert len(estimates) == 5 * 2 * 3
    by_alpha = pd.read_parquet(folder / "rmse_vs_alpha.parquet")
    assert {"matrix", "metric", "estimator", "alpha", "rmse", "bias", "sd", "n_draws"} <= set(
        by_alpha.columns
    )
    assert sorted(by_alpha["alpha"].unique()) == [0.25, 1.0]
    by_mar = pd.read_parquet(folder / "rmse_vs_mar.parquet")
    assert sorted(by_mar["mar_size"].unique()) == [100, 1000]
    assert (folder / "estimates.md").read_text().startswith("# E3 on synthetic")
    for figure in ("rmse_vs_alpha", "rmse_vs_mar"):
        assert (folder / "figures" / f"{figure}.svg").stat().st_size > 0
    assert (workdir / "logs" / "tiny" / "e3" / "synthetic" / "seed0" / "simulate.log").exists()
    nb = pd.read_parquet(folder / "seed1" / "naive_bayes.parquet")
    assert {"draw", "mar_size", "rating", "propensity", "true_propensity"} <= set(nb.columns)
    assert len(nb) == 5 * 2 * 5  # draws x MAR sizes x rating levels
    assert (
        workdir / "benchmarks" / "tiny" / "e3" / "synthetic" / "seed1" / "simulate.tsv"
    ).exists()

    config = yaml.safe_load(TINY.read_text())
    api = run_e3("synthetic", config)
    pd.testing.assert_frame_equal(api["estimates"], estimates)
    pd.testing.assert_frame_equal(api["rmse_vs_mar"], by_mar)


def test_e4_outputs_and_api_parity(tiny_workflow, tmp_path):
    import yaml

    from debiaseval.api import run_e4
    from debiaseval.experiments import e4
    from debiaseval.experiments.e4 import tables as e4_tables

    workdir = tiny_workflow
    folder = workdir / "results" / "tiny" / "e4" / "synthetic"
    summary = pd.read_parquet(folder / "summary.parquet")
    assert list(summary.columns) == list(e4_tables.SUMMARY_COLUMNS)
    assert set(zip(summary["model"], summary["propensity"], strict=True)) == {
        ("MF-Naive", "none"),
        ("MF-IPS", "known"),
    }
    assert sorted(summary["alpha"].unique()) == [0.25, 1.0]
    assert (summary["n_seeds"] == 2).all()
    at = summary[summary["alpha"] == 0.25].set_index("model")
    assert at.at["MF-IPS", "mean"] < at.at["MF-Naive", "mean"]
    assert np.isnan(at.at["MF-IPS", "p_value"])  # 2 seeds: no t interval, so no test across
    errors = pd.read_parquet(folder / "errors.parquet")
    assert list(errors.columns) == list(e4.ERROR_COLUMNS) and len(errors) == 2 * 2 * 2
    assert (folder / "summary.md").read_text().startswith("# E4 on synthetic")
    assert (folder / "figures" / "test_error.svg").stat().st_size > 0
    assert (workdir / "logs/tiny/e4/synthetic/seed1/known/fit.log").exists()
    assert (workdir / "benchmarks/tiny/e4/synthetic/seed0/propensities.tsv").exists()
    cv = pd.read_parquet(folder / "seed0" / "none" / "cv.parquet")
    assert cv["selected"].sum() == 2 * 2  # folds x alphas
    assert (
        "E4 on synthetic: results/tiny/e4/synthetic/verdict.md, "
        "results/tiny/e4/synthetic/summary.md" in (workdir / "run.out").read_text()
    )

    out = run_e4("synthetic", yaml.safe_load(TINY.read_text()))
    for stem in ("errors", "summary"):
        record = read_provenance(folder / f"{stem}.parquet")  # the workflow's, to compare bytes
        write_table(out[stem], tmp_path / f"{stem}.parquet", record)
        written = (folder / f"{stem}.parquet").read_bytes()
        assert (tmp_path / f"{stem}.parquet").read_bytes() == written, stem
    assert with_header(out["summary_md"], record) == (folder / "summary.md").read_text()


E2 = Path("results/tiny/e2/synthetic")


def test_e2_outputs(tiny_workflow):
    workdir = tiny_workflow
    folder = workdir / E2
    elicited = pd.read_parquet(folder / "elicited.parquet")
    assert list(elicited.columns) == [
        "method",
        "strategy",
        "mean",
        "sd",
        "ci_low",
        "ci_high",
        "n_seeds",
    ]
    assert list(elicited["method"].unique()) == ["CLASSIC", "INT_T", "INT_HT"]
    assert list(elicited["strategy"].unique()) == ["RND", "POP", "HP"]
    assert (elicited["n_seeds"] == 2).all() and (elicited["mean"] >= 0).all()
    summary = pd.read_parquet(folder / "summary.parquet")
    assert list(summary.columns) == [
        "method",
        "strategy",
        "scope",
        "metric",
        "k",
        "before",
        "after",
        "pct_change",
        "sd",
        "ci_low",
        "ci_high",
        "n_seeds",
        "n_users_min",
        "flags",
    ]
    per_user = pd.read_parquet(folder / "metrics_per_user.parquet")
    assert set(per_user["stage"]) == {"before", "after"} and set(per_user["seed"]) == {0, 1}
    assert len(summary) == 3 * 3 * 2 * 3 and set(summary["scope"]) == {"user", "system"}
    assert summary[["before", "after"]].stack().between(0, 1).all()
    wilcoxon = pd.read_parquet(folder / "wilcoxon.parquet")
    assert list(wilcoxon.columns)[:6] == [
        "method",
        "scope",
        "metric",
        "k",
        "strategy_a",
        "strategy_b",
    ]
    assert len(wilcoxon) == 3 * 2 * 3 * 3 and wilcoxon["combined_p"].between(0, 1).all()
    per_seed = pd.read_parquet(folder / "wilcoxon_seeds.parquet")
    assert len(per_seed) == 2 * len(wilcoxon) and per_seed["p_value"].between(0, 1).all()
    assert (folder / "summary.md").read_text().startswith("# E2 on synthetic")
    draws = [
        pd.read_parquet(workdir / f"results/tiny/data/synthetic/seed{s}/interactions.parquet")
        for s in (0, 1)
    ]
    assert not draws[0].equals(draws[1])  # each seed its own draw of synthetic
    assert not (workdir / "results/tiny/data/synthetic/interactions.parquet").exists()
    for seed in (0, 1):
        active = set(pd.read_parquet(folder / f"seed{seed}/active.parquet")["user"])
        split = pd.read_parquet(folder / f"seed{seed}/split.parquet")
        mnar = draws[seed][draws[seed]["part"] == "mnar"]
        assert _pairs(split) == _pairs(mnar)  # E2 splits the seed's own draw's MNAR part
        known = split[split["part"] == "known"]
        known = set(zip(known["user"], known["item"], strict=True))
        for method in ("CLASSIC", "INT_T", "INT_HT"):
            hidden = pd.read_parquet(folder / f"seed{seed}/{method}/hidden.parquet")
            hidden = set(zip(hidden["user"], hidden["item"], strict=True))
            for strategy in ("RND", "POP", "HP"):
                pairs = pd.read_parquet(folder / f"seed{seed}/{method}/elicited/{strategy}.parquet")
                keys = set(zip(pairs["user"], pairs["item"], strict=True))
                assert keys <= hidden and not keys & known and set(pairs["user"]) <= active
                assert (pairs.groupby("user").size() <= 10).all()  # none: RND may miss H
        changes = pd.read_parquet(folder / f"seed{seed}/changes/HP.parquet")
        assert set(changes.loc[changes["scope"] == "user", "user"]) <= active
    for figure in ("elicited", "recall_change"):
        assert (folder / f"figures/{figure}.svg").read_text().lstrip().startswith("<?xml")
    assert (folder / "tables/summary.html").exists()
    # one elicit and one evaluate job per seed, every strategy (and method) in it
    assert "HP:" in (workdir / "logs/tiny/e2/synthetic/seed0/evaluate.log").read_text()
    assert "INT_HT/POP:" in (workdir / "logs/tiny/e2/synthetic/seed0/elicit.log").read_text()
    assert (workdir / "benchmarks/tiny/e2/synthetic/seed1/evaluate.tsv").exists()
    assert "INT_T: H" in (workdir / "logs/tiny/e2/synthetic/seed1/sample.log").read_text()
    assert "REG:" in (workdir / "logs/tiny/e1/synthetic/seed1/intervene.log").read_text()
    assert (
        "E2 on synthetic: results/tiny/e2/synthetic/verdict.md, "
        "results/tiny/e2/synthetic/summary.md" in (workdir / "run.out").read_text()
    )


def _pairs(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(frame["user"], frame["item"], strict=True))


def test_e2_api_gives_the_workflow_bytes(tiny_workflow, tmp_path):
    import yaml

    from debiaseval.api import run_e2

    out = run_e2("synthetic", yaml.safe_load(TINY.read_text()))
    for stem in ("elicited", "summary", "wilcoxon", "wilcoxon_seeds"):
        written = tiny_workflow / E2 / f"{stem}.parquet"
        write_table(out[stem], tmp_path / f"{stem}.parquet", record := read_provenance(written))
        assert (tmp_path / f"{stem}.parquet").read_bytes() == written.read_bytes(), stem
    summary_md = (tiny_workflow / E2 / "summary.md").read_text()
    assert with_header(out["summary_md"], record) == summary_md
    pairs = out["elicited_pairs"]
    one = pairs[(pairs["seed"] == 1) & (pairs["method"] == "INT_HT") & (pairs["strategy"] == "HP")]
    written = pd.read_parquet(tiny_workflow / E2 / "seed1/INT_HT/elicited/HP.parquet")
    pd.testing.assert_frame_equal(one[["user", "item", "rating"]].reset_index(drop=True), written)


def test_e1_api_gives_the_workflow_bytes(tiny_workflow, tmp_path):
    import yaml

    from debiaseval.api import run_e1

    out = run_e1("synthetic", yaml.safe_load(TINY.read_text()))
    for stem in ("summary", "kendall", "testsets", "estimator_accuracy"):
        written = tiny_workflow / f"results/tiny/e1/synthetic/{stem}.parquet"
        write_table(out[stem], tmp_path / f"{stem}.parquet", record := read_provenance(written))
        assert (tmp_path / f"{stem}.parquet").read_bytes() == written.read_bytes(), stem
    summary_md = (tiny_workflow / "results/tiny/e1/synthetic/summary.md").read_text()
    assert with_header(out["summary_md"], record) == summary_md


def test_byte_identical_whatever_the_cores(tiny_workflow, tiny_workflow_one_core):
    first, second = tiny_workflow, tiny_workflow_one_core
    a, b = result_bytes(first), result_bytes(second)
    assert a.keys() == b.keys() and len(a) > 20
    assert [name for name in a if a[name] != b[name]] == []


def test_rerun_is_cached_and_a_param_change_reruns_only_what_depends_on_it(tiny_workflow):
    workdir = tiny_workflow
    assert "Nothing to be done" in snakemake(workdir, "-n", "--cores", "1").stdout
    (workdir / "rho.yaml").write_text("study: tiny\ne1: {rho: 0.4}\n")
    changed = snakemake(workdir, "-n", "--cores", "1", configfiles=("tiny.yaml", "rho.yaml")).stdout
    jobs = changed.split("Job stats:")[1].split("total")[0]
    assert "e1_intervene" in jobs and "e1_evaluate" in jobs and "run_config" in jobs
    assert "train" not in jobs and "preprocess" not in jobs and "split" not in jobs


def test_a_changed_config_names_its_keys_before_the_first_job_and_proceeds(tiny_workflow, tmp_path):
    """A run of the tiny study with e1.rho changed says, before its first job, which key
    changed (old -> new) and how to keep both studies, then runs; Snakemake's reasons name
    short digests, never a whole block."""
    workdir = tmp_path / "changed"
    shutil.copytree(tiny_workflow, workdir, symlinks=True)  # results and Snakemake's records
    (workdir / "rho.yaml").write_text("study: tiny\ne1: {rho: 0.4}\n")
    target = "results/tiny/e1/synthetic/seed0/testsets/FULL.parquet"
    run = snakemake(workdir, "--cores", "1", target, configfiles=("tiny.yaml", "rho.yaml"))
    log = run.stderr
    notice = "debiaseval: this config differs from the one recorded for study 'tiny'"
    assert notice in log and "\n  e1.rho: 0.5 -> 0.4\n" in log, log[-3000:]
    assert "to keep both studies, give this run a study of its own: --config study=NAME" in log
    assert log.index(notice) < log.index("rule e1_intervene:"), log[-3000:]
    assert (workdir / target).stat().st_mtime > (tiny_workflow / target).stat().st_mtime
    # everything else it changes: named once more by a dry run, with short reasons
    dry = snakemake(workdir, "-n", "--cores", "1", configfiles=("tiny.yaml", "rho.yaml"))
    lines = (dry.stdout + dry.stderr).splitlines()
    assert sum(line.startswith("  e1.") for line in lines) == 1
    reasons = [line for line in lines if "Params have changed" in line]
    assert reasons and max(map(len, reasons)) < 400, max(reasons, key=len)
    assert any("sha256:" in line for line in reasons)  # e1_aggregate's block and record
    # a study of its own: nothing recorded there, nothing to say
    own = snakemake(workdir, "-n", "--cores", "1", "--config", "study=rho04", "e1={rho: 0.4}")
    assert "debiaseval: this config differs" not in own.stdout + own.stderr


def test_the_docs_snippets_read_the_tiny_run(tiny_workflow, tmp_path):
    """Every Python snippet of the docs that reads results runs against the tiny run
    (tests/test_docs_snippets.py), so a stale path fails here."""
    from test_docs_snippets import check_snippets

    assert check_snippets(tiny_workflow / "results" / "tiny", tmp_path) == []


def test_an_e2_change_reruns_its_seed_jobs_from_the_stage_it_touches(tiny_workflow):
    # e2_elicit and e2_evaluate hold every strategy of a seed; n_asked reaches elicit, so the
    # seed's samples, split and MF tuning stay cached, and no other experiment reruns
    workdir = tiny_workflow
    (workdir / "asked.yaml").write_text("study: tiny\ne2: {n_asked: 5}\n")
    changed = snakemake(workdir, "-n", "--cores", "1", configfiles=("tiny.yaml", "asked.yaml"))
    jobs = changed.stdout.split("Job stats:")[1].split("total")[0].split()
    assert {"e2_elicit", "e2_evaluate", "e2_aggregate"} <= set(jobs)
    assert not [job for job in jobs if job.startswith(("e1_", "e3_", "e4_", "e5_", "e6_"))]
    assert not {"e2_sample", "e2_split", "e2_train", "preprocess"} & set(jobs)


def test_without_per_seed_draws_every_seed_reads_the_one_draw(tiny_workflow):
    """``synthetic.per_seed: false``: the one draw at synthetic.seed (data/synthetic/,
    e5/synthetic/full.parquet) serves every seed of every experiment, and no seed draws its own."""
    workdir = tiny_workflow
    (workdir / "fixed.yaml").write_text("study: tiny\nsynthetic: {per_seed: false}\n")
    dry = snakemake(workdir, "-n", "--cores", "1", configfiles=("tiny.yaml", "fixed.yaml")).stdout
    jobs = dry.split("Job stats:")[1].split("total")[0].split()
    assert {"preprocess", "e1_data", "e5_full"} <= set(jobs)
    assert not {"preprocess_draw", "e1_data_draw", "e1_dropped", "e5_full_draw"} & set(jobs)
    assert "seed0/interactions.parquet" not in dry and "seed1/full.parquet" not in dry
    planned = [block.split(":", 1) for block in dry.split("\nrule ")[1:]]
    for rule, read in (
        ("e2_split", "results/tiny/data/synthetic/interactions.parquet"),
        ("e5_expose", "results/tiny/e5/synthetic/full.parquet"),
    ):
        blocks = [block for name, block in planned if name == rule]
        assert len(blocks) == 2 and all(f"input: {read}" in block for block in blocks), rule


def test_bad_config_fails_before_any_job(tmp_path):
    workdir = make_workdir(tmp_path / "bad")
    (workdir / "bad.yaml").write_text("e1: {rho: 1.5}\n")
    result = snakemake(workdir, "--cores", "1", configfiles=("tiny.yaml", "bad.yaml"), check=False)
    assert result.returncode != 0
    assert "config error at 'e1.rho'" in result.stdout + result.stderr
    assert not (workdir / "results").exists()


def test_lint_is_clean(tmp_path):
    workdir = make_workdir(tmp_path / "lint")
    result = snakemake(workdir, "--lint", check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def coat_run(tmp_path_factory) -> Path:
    """tests/configs/coat.yaml run whole from the mirror: every experiment that Coat allows
    (E1, E2, E4, E5), one seed."""
    if not os.environ.get("DEBIASEVAL_MIRROR"):
        pytest.skip("DEBIASEVAL_MIRROR not set: no local copy of the Coat dataset")
    workdir = make_workdir(tmp_path_factory.mktemp("coat"))
    shutil.copy(ROOT / "tests" / "configs" / "coat.yaml", workdir / "coat.yaml")
    snakemake(workdir, "--cores", "2", configfiles=("coat.yaml",))
    return workdir


@pytest.mark.realdata
def test_e1_on_coat_from_the_mirror(coat_run):
    """E1 on real Coat data: the download rule copies from the mirror, checksums pass."""
    workdir = coat_run
    assert (workdir / "resources/raw/coat/train.ascii").exists()
    interactions = pd.read_parquet(workdir / "results/coat/data/coat/interactions.parquet")
    assert interactions["part"].value_counts().to_dict() == {"mnar": 6960, "mar": 4640}
    metrics = pd.read_parquet(workdir / "results/coat/e1/coat/seed0/metrics.parquet")
    metrics = metrics[metrics["recommender"] == "PosPop"]
    overlap = metrics.groupby("testset")["n_train_overlap"].first()
    assert overlap["gt"] > 0  # MAR pairs also rated in MNAR training (docs/experiments/e1.md)
    assert (overlap.drop("gt") == 0).all()
    summary = pd.read_parquet(workdir / "results/coat/e1/coat/summary.parquet")
    assert len(set(summary["recommender"])) == 6
    recall = summary[(summary["metric"] == "recall") & (summary["testset"] != "gt")]
    bias = recall.groupby("testset")["pct_diff_vs_gt"].apply(lambda s: s.abs().mean())
    # [SAC20]: the held-out MNAR data flatters recommenders; WTD_H corrects most of it
    assert bias["WTD_H"] < bias["FULL"]


@pytest.mark.realdata
def test_e4_on_coat_from_the_mirror(coat_run):
    """E4 on real Coat ([ICML16] Table 2): MF-IPS with the provided and with logistic-regression
    propensities beats MF-Naive on the MAR test, in MSE and MAE (one seed, small grid)."""
    workdir = coat_run  # the whole study's run, E4 included
    target = "results/coat/e4/coat/summary.parquet"
    summary = pd.read_parquet(workdir / target).set_index(["propensity", "metric"])["mean"]
    assert set(summary.index) == {
        (p, m) for p in ("none", "provided", "logistic") for m in ("mse", "mae")
    }
    for metric, naive_bound in (("mse", 1.4), ("mae", 1.0)):
        assert summary[("none", metric)] < naive_bound  # learns something ([ICML16]: 1.202, .920)
        for propensity in ("provided", "logistic"):
            assert summary[(propensity, metric)] < summary[("none", metric)], (propensity, metric)
    pairs = pd.read_parquet(workdir / "results/coat/e4/coat/seed0/propensities.parquet")
    assert pairs["part"].value_counts().to_dict() == {"train": 6960, "test": 4640}


def test_corrupt_mirror_fails_naming_the_file_and_leaves_nothing(tmp_path):
    workdir = make_workdir(tmp_path / "corrupt")
    from debiaseval.data import SOURCES

    mirror = tmp_path / "mirror" / "coat"
    for name in SOURCES["coat"].files:  # every canonical file present, none intact
        (mirror / name).parent.mkdir(parents=True, exist_ok=True)
        (mirror / name).write_text("0 1 2\n")
    first = next(iter(SOURCES["coat"].files))
    (workdir / "coat.yaml").write_text(f"datasets: [coat]\nmirror: {mirror.parent}\n")
    result = snakemake(
        workdir,
        "--cores",
        "1",
        "results/coat/data/coat/interactions.parquet",
        configfiles=("coat.yaml",),
        check=False,
    )
    assert result.returncode != 0
    log = (workdir / "logs/coat/download/coat.log").read_text()
    assert f"checksum mismatch for {first}" in log and "Traceback" in log
    lines = [line for line in result.stderr.splitlines() if line.startswith("DatasetError: ")]
    assert len(lines) == 1 and f"checksum mismatch for {first}" in lines[0]
    assert lines[0].endswith("(traceback in logs/coat/download/coat.log)")
    assert "Traceback" not in result.stderr
    assert not (workdir / "resources/raw/coat").exists()
    assert not (workdir / "results/coat/data/coat").exists()


def _interrupt_snakemake_during_a_job(workdir: Path, target: str, after: str) -> None:
    """Start Snakemake on ``target`` and send it SIGINT (Ctrl-C) while its last job runs.

    The signal goes once ``after`` exists and a job not yet running then is
    marked running: the job that writes ``target`` (an MF fit of a few seconds,
    so the signal lands while it runs, not between jobs). Snakemake stops and
    leaves the job's outputs marked incomplete: what a rerun finds after Ctrl-C.
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--configfile", "tiny.yaml", "--cores", "1", target],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # a shell's background job inherits SIGINT ignored; Ctrl-C in a terminal is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    marks = workdir / ".snakemake" / "incomplete"
    deadline = time.monotonic() + 300

    def running() -> set[Path]:
        return set(marks.rglob("*")) if marks.is_dir() else set()

    while not (workdir / after).exists():
        assert process.poll() is None and time.monotonic() < deadline, f"{after} never written"
        time.sleep(0.02)
    earlier = running()
    while not running() - earlier:
        assert process.poll() is None and time.monotonic() < deadline, "no later job started"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=300) != 0


def test_default_profile_resumes_after_an_interruption(tmp_path):
    """profiles/default (rerun-incomplete) is picked up: the rerun simply resumes."""
    workdir = make_workdir(tmp_path / "resume")
    target = "results/tiny/e1/synthetic/seed0/tuning/MF/chunk0.parquet"
    split = "results/tiny/e1/synthetic/seed0/split.parquet"
    _interrupt_snakemake_during_a_job(workdir, target, after=split)
    without = snakemake(workdir, "--workflow-profile", "none", "-n", target, check=False)
    assert without.returncode != 0
    assert "IncompleteFilesException" in without.stdout + without.stderr
    rerun = snakemake(workdir, "--cores", "1", target)
    assert "workflow specific profile profiles/default" in rerun.stdout + rerun.stderr
    assert (workdir / target).exists()


def test_truncated_intermediate_is_rebuilt(tmp_path):
    workdir = make_workdir(tmp_path / "truncated")
    split = "results/tiny/e1/synthetic/seed0/split.parquet"
    snakemake(workdir, "--cores", "1", split)
    intact = (workdir / split).read_bytes()
    (workdir / split).write_bytes(intact[: len(intact) // 2])
    rerun = snakemake(workdir, "--cores", "1", split)
    assert f"debiaseval: {split} is damaged (Parquet magic bytes not found" in rerun.stderr
    assert "debiaseval: moved 1 output(s)" in rerun.stderr
    assert (workdir / "results/tiny/.damaged").is_dir()  # set aside, never deleted
    assert "rule e1_split:" in rerun.stdout + rerun.stderr
    assert (workdir / split).read_bytes() == intact


def test_nonexistent_mirror_fails_with_one_line_naming_it(tmp_path):
    workdir = make_workdir(tmp_path / "nomirror")
    env = {**os.environ, "DEBIASEVAL_MIRROR": str(tmp_path / "nonexistent")}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "resources/raw/coat", "--cores", "1"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode != 0
    assert (
        f"DatasetError: coat: the dataset mirror {tmp_path / 'nonexistent'} ($DEBIASEVAL_MIRROR) "
        "does not exist or is not a folder"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert not (workdir / "resources/raw/coat").exists()


@pytest.mark.realdata
def test_ml_100k_download_and_preprocess_from_the_mirror(tmp_path):
    import os

    if not os.environ.get("DEBIASEVAL_MIRROR"):
        pytest.skip("DEBIASEVAL_MIRROR not set: no local copy of MovieLens 100K")
    workdir = make_workdir(tmp_path / "ml")
    snakemake(workdir, "--cores", "1", "results/tiny/data/ml-100k/interactions.parquet")
    interactions = pd.read_parquet(workdir / "results/tiny/data/ml-100k/interactions.parquet")
    assert len(interactions) == 100_000 and set(interactions["part"]) == {"mnar"}
    assert interactions["user"].max() == 942 and interactions["item"].max() == 1681
    items = pd.read_parquet(workdir / "results/tiny/data/ml-100k/items.parquet")
    assert items.loc[0, "raw_item"] == 1 and "title" in items.columns


def test_no_interval_of_the_tiny_runs_summaries_leaves_zero_one(tiny_workflow):
    """Every interval printed in a table of a summary of shares (E1's summary, E5's
    estimates, E6's scores) lies in [0, 1]; with the tiny run's 2 seeds, E1's and E5's cells
    show the bootstrap interval over users and no t interval over seeds (issue 34, item 3)."""
    import re

    workdir = tiny_workflow
    pair = re.compile(r"([\[⟨])(-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)[\]⟩]")
    for name in ("e1/synthetic/summary.md", "e5/synthetic/estimates.md", "e6/synthetic/scores.md"):
        rows = [
            line
            for line in (workdir / "results/tiny" / name).read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| recommender |")
        ]
        found = [
            (kind, float(low), float(high))
            for line in rows
            for kind, low, high in pair.findall(line)
        ]
        assert found, name
        outside = [f for f in found if not 0.0 <= f[1] <= f[2] <= 1.0]
        assert not outside, f"{name}: {outside[:5]}"
        if not name.startswith("e6"):
            assert {kind for kind, _, _ in found} == {"⟨"}, name  # 2 seeds: no t interval


def test_no_interval_of_the_tiny_runs_e2_e3_e4_tables_leaves_the_range(tiny_workflow):
    """E3's estimates (mae, dcg@10: [0, ∞)) print the t interval over the 2 × 5 draws, every
    bound at or above 0; E2's summary (2 seeds) and E4's (2 seeds) print means without an
    interval and say why; no table row prints ``± sd`` (issue 34, item 3)."""
    import re

    workdir = tiny_workflow
    pair = re.compile(r"\[(-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)\]")
    folder = workdir / "results/tiny"
    texts = {
        name: (folder / name).read_text()
        for name in (
            "e2/synthetic/summary.md",
            "e3/synthetic/estimates.md",
            "e4/synthetic/summary.md",
        )
    }
    rows = {
        name: [line for line in text.splitlines() if line.startswith("| ")]
        for name, text in texts.items()
    }
    found = [
        (float(low), float(high))
        for line in rows["e3/synthetic/estimates.md"]
        for low, high in pair.findall(line)
    ]
    assert len(found) == 5 * 2 * 3, found  # matrices × metrics × estimators
    assert all(0.0 <= low <= high for low, high in found), found
    note = "t interval (fixed: E3 has no level key) of the mean over the 10 draws of O"
    assert note in texts["e3/synthetic/estimates.md"]
    for name in ("e2/synthetic/summary.md", "e4/synthetic/summary.md"):
        assert not [p for line in rows[name] for p in pair.findall(line)], name
        assert "without an interval" in texts[name], name
    assert not [name for name, lines in rows.items() for line in lines if "±" in line]
    for name in (
        "e2/synthetic/summary.parquet",
        "e2/synthetic/elicited.parquet",
        "e4/synthetic/summary.parquet",
    ):
        table = pd.read_parquet(folder / name)
        lower = -100.0 if name.endswith("e2/synthetic/summary.parquet") else 0.0
        bounds = table[["ci_low", "ci_high"]].dropna()
        assert len(bounds) and (bounds["ci_low"] >= lower).all(), name
        assert (bounds["ci_low"] <= bounds["ci_high"]).all(), name


def test_e1_on_semi_real_jester_dry_run(tmp_path):
    """datasets: [jester5k-semi] plans E1 on per-seed draws of the exposure (preprocess_draw,
    e1_data_draw) with the exact truth from Jester5k's file (e1_truth, after its download),
    without running a job."""
    workdir = make_workdir(tmp_path)
    stats = snakemake(
        workdir,
        "-n",
        "--cores",
        "1",
        "--config",
        "datasets=[jester5k-semi]",
        "experiments=[e1]",
        "seeds=2",
    ).stdout.split("Job stats:")[1]
    counts = dict(line.split() for line in stats.splitlines()[3:] if len(line.split()) == 2)
    assert counts["download"] == "1" and counts["preprocess_draw"] == "2"
    assert counts["e1_data_draw"] == "2" and counts["e1_truth"] == "2"
    assert "e1_data" not in counts  # every seed draws its own exposure
