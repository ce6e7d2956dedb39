"""The report's front page (docs/report.md#the-front-page): one verdict block per experiment and
dataset first (its ``verdict.md``, or "No verdict recorded"), then the provenance, then links
that open each figure inside the report; its style keeps it at its top.
The browser checks are in tests/test_workflow.py (test_report_in_a_browser_...)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from debiaseval.workflow.report import (
    FRONT_ID,
    FRONT_STYLE,
    NO_VERDICT,
    OPEN_RESULT,
    front_page,
    verdict_items,
)

PAPER = [
    ("e1", "coat"),
    ("e1", "yahoo-r3"),
    ("e1", "synthetic"),
    ("e2", "ml-100k"),
    ("e3", "synthetic"),
    ("e4", "coat"),
    ("e4", "yahoo-r3"),
    ("e5", "yahoo-r3"),
    ("e6", "ml-100k"),
]
"""A paper-like study: several experiments, several datasets each."""


class Outline(HTMLParser):
    """The headings, verdict sections and links of a page, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[str, str]] = []  # (kind, text or attribute)
        self.links: list[dict[str, str | None]] = []
        self._heading: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in {"h2", "h3"}:
            self._heading = ""
        elif tag == "section":
            self.items.append(("section", f"{found['data-experiment']}/{found['data-dataset']}"))
        elif tag == "a":
            self.links.append(found)

    def handle_endtag(self, tag: str) -> None:
        if tag in {"h2", "h3"} and self._heading is not None:
            self.items.append((tag, self._heading))
            self._heading = None

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading += data


def _study(root: Path, runs: list[tuple[str, str]], verdicts: bool = True) -> list:
    """Result folders of ``runs`` under ``root`` as an aggregate job leaves them: provenance.json,
    verdict.md (provenance block above its ``## Verdict``, as write_markdown puts it) and a
    figure page; the ``(experiment, dataset, folder)`` list front_page takes."""
    entries = []
    for experiment, dataset in runs:
        folder = root / "results" / "paper" / experiment / dataset
        (folder / "figures").mkdir(parents=True)
        record = {"experiment": experiment, "dataset": dataset, "debiaseval": "0.1.0"}
        (folder / "provenance.json").write_text(json.dumps(record))
        if verdicts:
            (folder / "verdict.md").write_text(
                "> debiaseval 0.1.0 · config sha256 `abc`\n\n## Verdict\n\n"
                f"- {experiment.upper()} on {dataset}: the first finding.\n"
                "- The second finding, 0.12 [0.10, 0.14].\n"
            )
        first = {
            "e1": "recall",
            "e2": "elicited",
            "e3": "rmse_vs_alpha",
            "e4": "test_error",
            "e5": "correlation",
            "e6": "scores",
        }[experiment]
        (folder / "figures" / f"{first}.html").write_text("<p>figure</p>")
        entries.append((experiment, dataset, folder))
    return entries


def test_one_verdict_per_experiment_and_dataset_then_provenance_then_figures(tmp_path):
    entries = _study(tmp_path, PAPER)
    page = front_page(entries)
    outline = Outline(page)
    kinds = [kind if kind == "section" else text for kind, text in outline.items if kind != "h3"]
    blocks = len(PAPER)
    assert kinds == ["Verdicts", *["section"] * blocks, "Provenance", "Figures"], kinds
    assert [t for k, t in outline.items if k == "section"] == [f"{e}/{d}" for e, d in PAPER]
    headings = [t for k, t in outline.items if k == "h3"]
    assert headings == [f"{e.upper()} on {d}" for e, d in PAPER]  # one per block, in order
    for experiment, dataset in PAPER:
        assert f"<li>{experiment.upper()} on {dataset}: the first finding.</li>" in page
    assert "> debiaseval" not in page and "config sha256 `abc`" not in page  # header left out
    assert "The second finding, 0.12 [0.10, 0.14]." in page
    assert NO_VERDICT not in page and "Headline" not in page


def test_a_missing_verdict_names_the_summary_and_a_missing_result_is_left_out(tmp_path):
    entries = _study(tmp_path, [("e1", "coat"), ("e3", "synthetic")], verdicts=False)
    page = front_page([*entries, ("e4", "coat", tmp_path / "not-run")])
    assert page.count(f"<p>{NO_VERDICT}.</p>") == 2
    assert "<code>" + (entries[0][2] / "summary.md").as_posix() + "</code>" in page
    assert "<code>" + (entries[1][2] / "estimates.md").as_posix() + "</code>" in page
    assert "E4 on coat" not in page
    assert "No results yet" in front_page([("e4", "coat", tmp_path / "not-run")])


def test_every_link_opens_its_result_in_the_report(tmp_path):
    """Each link carries the result's path as the report names it (Snakemake's ``results``
    key), its menu category and dataset, and the one constant handler; figures the folder
    lacks are not linked."""
    entries = _study(tmp_path, [("e1", "coat"), ("e5", "yahoo-r3")])
    links = Outline(front_page(entries)).links
    folder = entries[0][2].as_posix()
    by_result = {link["data-result"]: link for link in links}
    assert set(by_result) == {
        f"{folder}/tables/summary.html",
        f"{folder}/tables/comparisons.html",
        f"{folder}/figures/recall.html",
        f"{entries[1][2].as_posix()}/tables/estimates.html",
        f"{entries[1][2].as_posix()}/figures/correlation.html",
    }
    recall = by_result[f"{folder}/figures/recall.html"]
    assert recall["data-category"] == "E1 · Intervened test sets (SAC 2020)"
    assert recall["data-subcategory"] == "coat" and recall["href"] == recall["data-result"]
    assert {link["onclick"] for link in links} == {OPEN_RESULT}
    assert "pct_diff" not in front_page(entries)  # not drawn: not linked


def test_each_block_links_the_main_summary_whatever_the_order_of_outputs(
    tmp_path, monkeypatch
) -> None:
    """The summary the verdict heads (summary.md, estimates.md, scores.md), even where another
    Markdown output (verdict.md, comparisons.md) comes first in OUTPUTS."""
    from debiaseval.experiments import e1

    monkeypatch.setattr(e1, "OUTPUTS", ("verdict.md", "comparisons.md", "summary.md", "x.md"))
    entries = _study(tmp_path, [("e1", "coat")])
    page = front_page(entries)
    paragraphs = re.findall(r"<p>(All of its results|Every pair compared): .*?</p>", page)
    assert paragraphs == ["All of its results", "Every pair compared"]  # the summary first
    assert f"<code>{entries[0][2].as_posix()}/summary.md</code>" in page
    assert "x.md" not in page


def test_a_block_links_the_pairs_compared_where_the_experiment_writes_them(tmp_path) -> None:
    """E1's block links comparisons.md (every pair with its tests) beside its summary, with
    its path; an experiment without one (E5 writes comparisons.parquet only) links none."""
    entries = _study(tmp_path, [("e1", "coat"), ("e5", "yahoo-r3")])
    e1, e5 = re.findall(r"<section .*?</section>", front_page(entries), flags=re.DOTALL)
    folder = entries[0][2].as_posix()
    link = next(a for a in Outline(e1).links if a["data-result"].endswith("comparisons.html"))
    assert link["data-result"] == f"{folder}/tables/comparisons.html" == link["href"]
    assert link["data-category"] == "E1 · Intervened test sets (SAC 2020)"
    assert link["data-subcategory"] == "coat" and link["onclick"] == OPEN_RESULT
    assert "Every pair compared: <a " in e1 and f"<code>{folder}/comparisons.md</code>" in e1
    assert "E5 on yahoo-r3" in e5 and "comparisons" not in e5


def test_verdict_items_are_the_bullets_under_the_heading() -> None:
    text = "> provenance\n\n## Verdict\n\n- one.\n- two.\n\n## Later\n\n- not this.\n"
    assert verdict_items(text) == "- one.\n- two."
    assert verdict_items("- no heading.\n") == "- no heading."
    assert verdict_items("## Verdict\n\n") == ""


def test_the_style_keys_on_the_front_page_and_starts_the_pane_at_its_top() -> None:
    """Every rule names the front page's id, so it applies only while the home pane shows
    it; the scrolling pane's content starts at its top, and the text sits above the graph."""
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", FRONT_STYLE)
    assert rules and all(FRONT_ID in selector for selector, _ in rules)
    declared = dict(rules)
    assert "align-items:flex-start" in declared[f".overflow-auto:has(#{FRONT_ID})"]
    assert "flex-direction:column" in declared[f".flex:has(> div > .prose #{FRONT_ID})"]
    page = front_page([])
    assert page.startswith(f'<div id="{FRONT_ID}">') and f"<style>{FRONT_STYLE}</style>" in page
