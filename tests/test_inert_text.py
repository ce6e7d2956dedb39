"""Every user-given string is inert in every output (issue 35, item 3; docs/report.md, "User-given
strings"): names of models, datasets, files and columns, plugin modules and hyperparameter values
are shown as written, never read as Markdown, HTML or script, in the Markdown summaries, their
HTML pages and Snakemake's report."""

from __future__ import annotations

import html
import inspect
import json
import pickle
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml

from debiaseval.io.markdown_tables import markdown_table
from debiaseval.io.markup import code_span, inert_markdown, script_safe
from debiaseval.workflow.params import Slice, job_params
from debiaseval.workflow.provenance import markdown_header
from debiaseval.workflow.report import OPEN_RESULT, front_page, markdown_page

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "mylog"

IMG = "pop<img src=x onerror=alert(3)>"
TICKS = "a`<img src=x onerror=alert(1)>`b"
SCRIPT = "</script><script>alert(2)</script>"
COMMENT = "<!--<script>"
PAYLOADS = [IMG, TICKS, SCRIPT, "``a`` ` b\\`", "x|y", "[click](javascript:alert(5))"]


class Elements(HTMLParser):
    """The start tags of an HTML text (as a browser's tokenizer finds them), each script
    element's text, and every attribute that would run code (``on...``, ``javascript:``)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.scripts: list[str] = []
        self.handlers: list[tuple[str, str]] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._in_script = tag == "script"
        if tag == "script":
            self.scripts.append("")
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.handlers.append((tag, name))

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data


def assert_inert(text: str) -> Elements:
    """``text`` (HTML) has no image, no handler attribute, no link to script, and no script
    element that a payload opened."""
    found = Elements(text)
    assert "img" not in found.tags, found.tags
    assert found.handlers == [], found.handlers
    assert not any(s.strip().startswith("alert(") for s in found.scripts), found.scripts
    return found


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize("text", PAYLOADS)
def test_inert_markdown_renders_as_the_text_itself(text: str) -> None:
    escaped = inert_markdown(text)
    assert not set("<>`|") & set(escaped)
    page = markdown_page(f"# title\n\nname: {escaped} end\n", "t")
    found = assert_inert(page)
    assert found.tags.count("a") == 0 and "code" not in found.tags
    paragraph = page.split("<p>", 1)[1].split("</p>", 1)[0]
    assert _text(paragraph) == f"name: {text} end"


def test_inert_markdown_leaves_ordinary_names_and_cells_alone() -> None:
    for text in (
        "MF-IPS",
        "zero_weight_share",
        "n users",
        "0.1234 [0.1, 0.2] ⟨0.1, 0.3⟩ †",
        "ml-100k",
        "tau with MF (n = 4)",
        "+3.5%",
        "Γ = 1.5",
        "e1.rho",
    ):
        assert inert_markdown(text) == text
    assert inert_markdown("a\nb\r\nc") == "a b c"  # one line: a table row or a list item
    assert code_span("plain.csv") == "`plain.csv`"


@pytest.mark.parametrize("text", [*PAYLOADS, "`", "plain.csv", " lead", "trail\\"])
def test_a_code_span_holds_any_text(text: str) -> None:
    span = code_span(text)
    page = markdown_page(f"file: {span} end\n", "t")
    found = assert_inert(page)
    assert found.tags.count("code") == 1
    code = page.split("<code>", 1)[1].split("</code>", 1)[0]
    assert _text(code) == text.strip()


def test_script_safe_text_cannot_close_or_comment_out_a_script() -> None:
    text = f"{SCRIPT} {COMMENT} </SCRIPT >"
    safe = script_safe(text)
    assert "</" not in safe and "<!--" not in safe
    assert safe.replace("<\\/", "</").replace("<\\!--", "<!--") == text


def test_a_params_slice_is_itself_to_the_job_and_safe_in_the_report_s_text() -> None:
    plain = {"config": {"columns": {"rating": SCRIPT}}, "note": [COMMENT], "n": 1}
    shown = Slice(plain)
    assert shown == plain and not isinstance(shown, dict)  # Snakemake's params trigger skips it
    for text in (str(shown), f"{shown}", f"params={shown}"):
        assert "</" not in text and "<!--" not in text and "alert(2)" in text
    again = pickle.loads(pickle.dumps(shown, protocol=4))  # what a job's script receives
    assert type(again) is dict and again == plain
    assert type(again["config"]) is dict


def test_job_params_wraps_mappings_and_what_params_functions_return() -> None:
    def record(wildcards, input):
        return {"inputs": [f"{wildcards}/{input}", SCRIPT]}

    params = job_params(block={"a": SCRIPT}, code="abc", n=3, record=record)
    assert isinstance(params["block"], Slice) and params["code"] == "abc" and params["n"] == 3
    assert list(inspect.signature(params["record"]).parameters) == ["wildcards", "input"]
    out = params["record"]("w", input="i")
    assert isinstance(out, Slice) and out == {"inputs": ["w/i", SCRIPT]}
    assert "</" not in str(out)


# --------------------------------------------------------------------------- outputs


def test_a_markdown_table_of_hostile_names_renders_them_as_text() -> None:
    frame = pd.DataFrame({"recommender": PAYLOADS, SCRIPT: [0.5] * len(PAYLOADS)})
    text = markdown_table(frame)
    assert len(text.splitlines()) == 2 + len(PAYLOADS)
    assert all(line.count("|") == 3 for line in text.splitlines())  # no cell split or joined
    page = markdown_page(text, "t")
    assert_inert(page)
    cells = [_text(c.split("</td>")[0]) for c in page.split("<td>")[1::2]]
    assert cells == PAYLOADS
    assert _text(page.split("<th>")[2].split("</th>")[0]) == SCRIPT


def test_the_provenance_line_names_hostile_files_and_plugins_as_text() -> None:
    record = {
        "debiaseval": "1.0",
        "config_sha256": "0" * 64,
        "seeds": 1,
        "data": {f"mylog/{TICKS}.csv": "1" * 64, "mylog/random.tsv": "2" * 64},
        "versions": {"python": "3.11.1"},
        "plugins": {f"{IMG}:Pop": "source sha256:0123456789abcdef"},
    }
    header = markdown_header(record)
    page = markdown_page(f"# E1 on mylog\n\n{header}", "t")
    found = assert_inert(page)
    assert found.tags.count("code") == 3  # the config hash and the two files
    codes = [_text(c.split("</code>")[0]) for c in page.split("<code>")[1:]]
    assert f"{TICKS}.csv" in codes and "random.tsv" in codes
    assert f"plugins: {IMG}:Pop: source sha256:0123456789abcdef" in _text(page)


def test_markdown_pages_show_raw_html_as_text() -> None:
    """The last guard: whatever a Markdown document holds, its HTML page has no element the
    Markdown did not make."""
    page = markdown_page(f"# {IMG}\n\n<script>alert(2)</script>\n\n| a |\n|---|\n| {IMG} |\n", "t")
    found = assert_inert(page)
    assert "script" not in found.tags
    assert "&lt;img src=x onerror=alert(3)&gt;" in page


def test_the_front_page_shows_hostile_names_as_text(tmp_path: Path) -> None:
    """Names in the provenance, a verdict and a dataset's name are text; the page's one script
    is its links' constant handler (OPEN_RESULT), which reads every name from ``data-``."""
    dataset = f"my{IMG}log"
    folder = tmp_path / "e1" / dataset
    (folder / "figures").mkdir(parents=True)
    record = {"experiment": "e1", "dataset": dataset, "plugins": {f"{IMG}:Pop": "x"}}
    (folder / "provenance.json").write_text(json.dumps(record))
    (folder / "verdict.md").write_text(f"## Verdict\n\n- {IMG} beats {SCRIPT}.\n")
    (folder / "figures" / "recall.html").write_text("<p>figure</p>")
    page = front_page([("e1", dataset, folder)])
    found = Elements(page)
    assert found.handlers == [("a", "onclick")] * 3  # the summary's, comparisons', the figure's
    assert "onclick" not in page.replace(f'onclick="{html.escape(OPEN_RESULT)}"', "")
    assert "img" not in found.tags and "script" not in found.tags
    assert f"{IMG} beats {SCRIPT}." in _text(page) and f"E1 on {dataset}" in _text(page)


def _text(html_fragment: str) -> str:
    """The text of an HTML fragment, entities decoded."""
    parts: list[str] = []
    parser = HTMLParser(convert_charrefs=True)
    parser.handle_data = parts.append  # type: ignore[method-assign]
    parser.feed(html_fragment)
    parser.close()
    return "".join(parts)


# --------------------------------------------------------------------------- workflow

RATINGS = f"rat{TICKS}ings.csv"
"""A data file whose name has backticks around an image tag."""
RATING = f"stars{SCRIPT}"
"""A rating column whose name closes a script."""
NOTE = f"{SCRIPT}{COMMENT}"
"""A plugin hyperparameter that closes a script, then opens a comment."""

PLUGIN = '''
import numpy as np

from debiaseval.recommenders import Recommender


class Pop(Recommender):
    """PosPop with a hyperparameter that only carries text."""

    name = "pop"

    def __init__(self, *, note: str = "", positive_threshold: float = 3.0) -> None:
        self.note = note
        self.positive_threshold = positive_threshold

    def _fit(self, train, seed):
        positive = (train.data > self.positive_threshold).astype(np.float64)
        self.counts_ = np.bincount(train.indices, weights=positive, minlength=self.n_items_)

    def _score(self, users):
        return np.tile(self.counts_, (users.size, 1))
'''

CONFIG = {
    "study": "inert",
    "datasets": ["mylog"],
    "experiments": ["e1"],
    "seeds": 1,
    "sources": {
        "mylog": {
            "ratings": f"mylog/{RATINGS}",
            "mar": "mylog/random.tsv",
            "columns": {"user": "uid", "item": "iid", "rating": RATING},
            "rating_scale": [1, 5],
        }
    },
    "e1": {
        "ks": [5],
        "recommenders": {
            "Random": {"algorithm": "random"},
            "Pop": {"algorithm": f"{IMG}:Pop", "params": {"note": NOTE}},
        },
    },
}


def _hostile_workdir(path: Path) -> Path:
    """The workflow with the hostile study: its data files (mylog's, the rating column renamed),
    the plugin module and the config."""
    from conftest import make_workdir

    workdir = make_workdir(path)
    (workdir / "mylog").mkdir()
    for source, target in (("ratings.csv", RATINGS), ("random.tsv", "random.tsv")):
        text = (FIXTURE / source).read_text()
        head, rest = text.split("\n", 1)
        (workdir / "mylog" / target).write_text(head.replace("stars", RATING) + "\n" + rest)
    (workdir / f"{IMG}.py").write_text(PLUGIN)
    (workdir / "inert.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    return workdir


def _snakemake(workdir: Path, *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", "inert.yaml", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        raise AssertionError(f"snakemake {args} failed:\n{result.stdout}\n{result.stderr}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """The hostile study run (E1 on the renamed log, one seed) and its report."""
    workdir = _hostile_workdir(tmp_path_factory.mktemp("inert"))
    _snakemake(workdir, "--cores", "2")
    _snakemake(workdir, "--report", "report.html")
    return workdir


def _pages(workdir: Path) -> list[Path]:
    """Every HTML page the run wrote (tables, figures, the configuration) and the report."""
    return [*sorted((workdir / "results").rglob("*.html")), workdir / "report.html"]


@pytest.mark.slow
def test_hostile_names_stay_text_in_every_output(hostile: Path) -> None:
    folder = hostile / "results" / "inert" / "e1" / "mylog"
    summary = (folder / "summary.md").read_text()
    assert f"{code_span(RATINGS)} " in summary  # the file, its name whole
    assert f"plugins: {inert_markdown(IMG)}:Pop: source sha256:" in summary
    tables = sorted((folder / "tables").glob("*.html"))
    assert {p.stem for p in tables} >= {"summary", "kendall", "estimator_accuracy"}
    for page in _pages(hostile):
        assert_inert(page.read_text(encoding="utf-8"))
    report = Elements((hostile / "report.html").read_text(encoding="utf-8"))
    results = next(s for s in report.scripts if s.lstrip().startswith("var results"))
    assert "alert(2)" in results and "alert(3)" in results  # shown, inside the one script
    assert "</script" not in results.lower() and "<!--" not in results
    assert "<\\\\/script>" in results  # the params as text: <\/script>, JSON-escaped


@pytest.mark.slow
def test_hostile_names_open_no_dialog_in_a_browser(hostile: Path) -> None:
    """The report and every page it embeds open in headless Chromium without a dialog."""
    from conftest import chromium

    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the test extra")
    executable = chromium()
    dialogs: list[str] = []
    with sync_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            for path in _pages(hostile):
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(200)  # a handler that fires on a failed load
                assert dialogs == [], (path.relative_to(hostile), dialogs)
            # the report's app still starts: its scripts were not cut short
            page.locator("nav").first.get_by_text("Results", exact=True).wait_for(timeout=30_000)
        finally:
            browser.close()
