"""The HTML report's pages and the run's closing message.

Each experiment's aggregate job calls :func:`publish_report` after writing its
tables, so a dataset's figures and report tables are rebuilt whenever its
results are (asking for ``results/<study>/e1/coat/summary.parquet`` alone refreshes
them too). Every page is a standalone HTML file that Snakemake's report embeds:

- ``figures/<name>.html``: the figure (its SVG inline) with its caption under it,
  so the caption is read with the figure, not behind an icon; the SVG and a
  150-dpi PNG sit beside it;
- ``tables/<stem>.html``: the Markdown document ``<stem>.md`` the aggregate job
  wrote, rendered as HTML, so the report's tables have the Markdown's pivoted
  layout;
- ``results/<study>/config.html``: the resolved configuration of the run
  (:func:`debiaseval.workflow.pages.config_page`, re-exported here).

``snakemake --report`` first compares the config it is given with the one recorded with the
results (:func:`config_mismatch`) and refuses, in one line, to pair results with another
run's config; its front page then carries each experiment's verdict on each dataset, each
result's provenance and links to every figure (:func:`front_page`).

See docs/report.md.
"""

from __future__ import annotations

import html
import importlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import markdown
import yaml

from debiaseval.io.files import read_parquet, write_text
from debiaseval.workflow.pages import config_page, flatten_config
from debiaseval.workflow.pages import page as _page
from debiaseval.workflow.provenance import config_hash, experiment_config, read_provenance

__all__ = [
    "config_mismatch",
    "config_page",
    "exported_splits",
    "figure_page",
    "finished_message",
    "flatten_config",
    "front_page",
    "markdown_html",
    "markdown_page",
    "publish_report",
    "record_mismatch",
    "report_command",
    "report_requested",
    "run_datasets",
    "table_labels",
    "verdict_items",
]


def figure_page(svg: str, title: str, caption: str) -> str:
    """A standalone HTML page: the figure ``svg`` inline, with ``caption`` under it."""
    start = svg.find("<svg")
    if start < 0:
        raise ValueError(f"{title}: not an SVG image")
    body = (
        f"<figure>\n{svg[start:].strip()}\n"
        f"<figcaption><b>{html.escape(title)}.</b> {html.escape(caption)}</figcaption>\n"
        "</figure>"
    )
    return _page(title, body)


def markdown_html(text: str) -> str:
    """The Markdown document ``text`` as HTML (its pipe tables as tables), with any raw HTML in
    it shown as text: the last guard behind :mod:`debiaseval.io.markup`, so that no
    Markdown file a job wrote adds an element to its page (docs/report.md#user-given-strings).
    """
    renderer = markdown.Markdown(extensions=["tables"], output_format="html")
    renderer.preprocessors.deregister("html_block")
    renderer.inlinePatterns.deregister("html")
    return renderer.convert(text)


def markdown_page(text: str, title: str) -> str:
    """A standalone HTML page of the Markdown document ``text`` (:func:`markdown_html`)."""
    return _page(title, markdown_html(text))


def _module(package: str, experiment: str) -> Any:
    """``debiaseval.figures.<experiment>`` or ``debiaseval.experiments.<experiment>``, each named
    by its own literal head, which a job's code stamp resolves (debiaseval.workflow.code_stamps)."""
    if package == "figures":
        return importlib.import_module(f"debiaseval.figures.{experiment}")
    if package == "experiments":
        return importlib.import_module(f"debiaseval.experiments.{experiment}")
    raise ValueError(f"no package {package!r} of experiment modules")


def publish_report(experiment: str, dataset: str, folder: str | os.PathLike[str]) -> None:
    """Draw every figure and render every Markdown table of ``experiment`` on ``dataset``.

    Reads the aggregated tables in ``folder`` (``results/<study>/<experiment>/<dataset>/``:
    the Parquet stems the figures module lists in ``TABLES``, the Markdown files of
    the experiment's ``OUTPUTS``) and writes ``folder/figures/<name>.svg``, ``.png``
    and ``.html`` (figure with caption) for each of ``FIGURES``, and
    ``folder/tables/<stem>.html`` for each Markdown file.
    """
    from debiaseval.figures import render

    folder = Path(folder)
    figures = _module("figures", experiment)
    tables = {stem: read_parquet(folder / f"{stem}.parquet") for stem in figures.TABLES}
    label = experiment.upper()
    for name, caption in figures.FIGURES.items():
        svg = folder / "figures" / f"{name}.svg"
        render(experiment, name, tables, dataset, svg, svg.with_suffix(".png"))
        title = f"{label} on {dataset}: {name}"
        page = figure_page(svg.read_text(encoding="utf-8"), title, caption)
        write_text(page, svg.with_suffix(".html"))
    for output in _module("experiments", experiment).OUTPUTS:
        if output.endswith(".md"):
            text = (folder / output).read_text(encoding="utf-8")
            title = f"{label} on {dataset}: {output}"
            write_text(markdown_page(text, title), folder / "tables" / f"{Path(output).stem}.html")


VERDICT_RESULT = "★ verdict"
"""The report's label of an experiment's verdict on a dataset (its page ``tables/verdict.html``).
Snakemake's report lists a dataset's results sorted by their labels (the browser's
``localeCompare``), in which a symbol comes before every digit and letter: the verdict heads
the list that clicking an experiment (or one of its datasets) in the menu shows."""


def table_labels(wildcards: Any) -> dict[str, str]:
    """The report labels of the page ``tables/<table>.html`` of an experiment on a dataset,
    given the ``table`` wildcard (Snakemake fills in ``{dataset}``): ``<table> (table)``, or
    :data:`VERDICT_RESULT` for the verdict, and the dataset."""
    result = VERDICT_RESULT if wildcards.table == "verdict" else "{table} (table)"
    return {"result": result, "dataset": "{dataset}"}


_RESULT = re.compile(r"results/[^/]+/(?P<experiment>[^/]+)/(?P<dataset>[^/]+)/[^/]+\.md")


def run_datasets(
    outputs: Iterable[str], experiments: Sequence[str]
) -> dict[tuple[str, str], list[str]]:
    """The Markdown results among ``outputs`` (files a run wrote), by (experiment, dataset).

    Only ``results/<study>/<experiment>/<dataset>/*.md`` of the given ``experiments`` count:
    an experiment's aggregate job writes them, so they name the datasets whose
    results the run produced or changed. In ``experiments`` order, then by dataset; each
    list starts with the verdict (``verdict.md``), then the other files by name.
    """
    found: dict[tuple[str, str], list[str]] = {}
    for path in outputs:
        match = _RESULT.fullmatch(Path(path).as_posix())
        if match and match["experiment"] in experiments:
            found.setdefault((match["experiment"], match["dataset"]), []).append(
                Path(path).as_posix()
            )
    order = {name: i for i, name in enumerate(experiments)}
    first = {
        key: sorted(found[key], key=lambda p: (Path(p).name != "verdict.md", p)) for key in found
    }
    return {key: first[key] for key in sorted(found, key=lambda k: (order[k[0]], k[1]))}


_EXPORT = re.compile(r"(?P<folder>results/[^/]+/[^/]+/[^/]+/export/)seed(?P<seed>\d+)/[^/]+")


def exported_splits(outputs: Iterable[str]) -> dict[str, list[str]]:
    """The export folders among ``outputs`` (``results/<study>/<experiment>/<dataset>/export/``)
    with the seeds written, in order."""
    found: dict[str, set[int]] = {}
    for path in outputs:
        match = _EXPORT.fullmatch(Path(path).as_posix())
        if match:
            found.setdefault(match["folder"], set()).add(int(match["seed"]))
    return {folder: [str(s) for s in sorted(found[folder])] for folder in sorted(found)}


_KEPT_OPTIONS = {
    "--configfile": "+",
    "--configfiles": "+",
    "--config": "*",
    "-C": "*",
    "--directory": "1",
    "-d": "1",
    "--snakefile": "1",
    "-s": "1",
    "--profile": "1",
    "--workflow-profile": "1",
}
"""The options of a run that choose its workflow, folder and config, with how many values each
takes: a report of the run needs the same."""


def report_command(argv: Sequence[str], executable: str = sys.executable) -> str:
    """The command that writes the HTML report of the run whose command line is ``argv``
    (``sys.argv``): the same program, ``--report report.html``, and the run's options of
    :data:`_KEPT_OPTIONS` as given, quoted for a POSIX shell."""
    import shlex

    program = argv[0] if argv else "snakemake"
    head = [executable, "-m", "snakemake"] if Path(program).name == "__main__.py" else [program]
    kept: list[str] = []
    taking: str | None = None
    for arg in argv[1:]:
        option, equals, _ = arg.partition("=")
        if arg in _KEPT_OPTIONS:
            kept.append(arg)
            taking = _KEPT_OPTIONS[arg]
        elif arg.startswith("--") and equals and option in _KEPT_OPTIONS:
            kept.append(arg)
            taking = None
        elif arg.startswith("-"):
            taking = None
        elif taking is not None:
            kept.append(arg)
            taking = None if taking == "1" else taking
    return shlex.join([*head, "--report", "report.html", *kept])


def finished_message(
    outputs: Iterable[str],
    experiments: Sequence[str],
    study: str,
    report: str | None = None,
    *,
    touched: bool = False,
) -> str:
    """What a successful run prints last: its study, the results of the datasets this run
    produced or changed (``outputs``: the files its jobs wrote), and how to see them in the
    report: ``report``, the command that writes it (:func:`report_command`). ``touched``: a
    ``--touch`` run, which ran no job and only marked ``outputs`` as up to date."""
    produced = run_datasets(outputs, experiments)
    if touched:
        lines = [
            f"debiaseval: --touch marked the outputs of study {study} (results/{study}/) "
            "as up to date by their times; no job ran and no result changed."
        ]
        if produced:
            lines.append("Results it marked (Markdown; Parquet beside them):")
            lines += [
                f"  {experiment.upper()} on {dataset}: {', '.join(files)}"
                for (experiment, dataset), files in produced.items()
            ]
        return "\n".join(lines)
    done = f"debiaseval: the run of study {study} (results/{study}/) is complete."
    if not produced:
        lines = [f"{done} It changed no experiment's results (only intermediate files)."]
    else:
        lines = [
            f"{done} Results it produced or changed "
            "(Markdown; Parquet beside them, figures in figures/):"
        ]
        lines += [
            f"  {experiment.upper()} on {dataset}: {', '.join(files)}"
            for (experiment, dataset), files in produced.items()
        ]
    exported = exported_splits(outputs)
    if exported:
        lines.append(
            "Splits it exported in raw ids (Parquet and CSV, to train other frameworks on):"
        )
        lines += [f"  {folder} (seeds {', '.join(seeds)})" for folder, seeds in exported.items()]
    if report is None:
        lines.append(
            "HTML report with every figure and table: snakemake --report report.html "
            "(with this run's --configfile/--config)."
        )
    else:
        lines.append(f"HTML report with every figure and table: {report}")
    return "\n".join(lines)


def report_requested(argv: Sequence[str]) -> bool:
    """Whether the command line ``argv`` asks Snakemake for a report of existing results
    (``--report``), not for one after a run (``--report-after-run``)."""
    asked = any(a == "--report" or a.startswith("--report=") for a in argv)
    return asked and "--report-after-run" not in argv


def config_mismatch(
    config: Mapping[str, Any],
    tables: Iterable[str | os.PathLike[str]],
    config_yaml: str | os.PathLike[str] | None = None,
) -> str | None:
    """One line saying why a report of ``config`` would show another run's config, or None.

    ``tables``: the Parquet files the aggregate jobs write, each with the record of the config
    that made it (:func:`debiaseval.workflow.provenance.read_provenance`); every one present
    must carry a record, with the hash of ``config``'s part for its experiment, and the
    ``provenance.json`` beside it must parse and hold the same record (:func:`record_mismatch`).
    ``config_yaml`` (``results/config.yaml``, the report's "Configuration") must hold
    ``config``. The line names both hashes, or the file, and the command that mends it.
    """
    checked: set[Path] = set()
    for path in map(Path, tables):
        if not path.is_file():
            continue
        record = read_provenance(path)
        if record is None:
            return (
                f"debiaseval: no report: {path} carries no provenance record (re-saved without "
                "it, or written before debiaseval recorded one); rerun the job that writes it: "
                f"snakemake --forcerun {path}"
            )
        own = config_hash(experiment_config(config, record["experiment"], record.get("dataset")))
        if record["config_sha256"] != own:
            return (
                f"debiaseval: no report: {path} was made by config sha256 "
                f"{record['config_sha256'][:16]}, not by this config ({own[:16]}); the config "
                f"that made it is the 'config' of {path.parent / 'provenance.json'}: give "
                "--report that run's --configfile/--config, or rerun with this one first"
            )
        if path.parent not in checked:
            checked.add(path.parent)
            line = record_mismatch(path.parent / "provenance.json", record, path)
            if line is not None:
                return line
    current = config_hash(config)
    if config_yaml is not None and Path(config_yaml).is_file():
        recorded = config_hash(yaml.safe_load(Path(config_yaml).read_text(encoding="utf-8")))
        if recorded != current:
            return (
                f"debiaseval: no report: {config_yaml} holds config sha256 {recorded[:16]}, "
                f"the results' run, not this config ({current[:16]}); give --report that "
                f"run's config: snakemake --report report.html --configfile {config_yaml}"
            )
    return None


RUN_FIELDS = ("date", "commit", "dirty")
"""The keys of ``provenance.json`` that the tables' record leaves out (:func:`run_fields`)."""


def record_mismatch(
    record_file: str | os.PathLike[str], record: Mapping[str, Any], table: str | os.PathLike[str]
) -> str | None:
    """One line when ``record_file`` (``provenance.json``, which the report's front page shows)
    does not parse or, but for its :data:`RUN_FIELDS`, differs from the ``record`` that
    ``table`` carries (edited by hand, or left by another run); None when it matches or is
    absent."""
    record_file = Path(record_file)
    if not record_file.is_file():
        return None
    mend = f"rerun the job that writes both: snakemake --forcerun {table}"
    try:
        shown = json.loads(record_file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return f"debiaseval: no report: {record_file} is not a JSON record ({reason}); {mend}"
    if not isinstance(shown, dict):
        return f"debiaseval: no report: {record_file} is not a JSON record (an object); {mend}"
    stable = {k: v for k, v in shown.items() if k not in RUN_FIELDS}
    differ = sorted(k for k in {*stable, *record} if stable.get(k) != record.get(k))
    if differ:
        return (
            f"debiaseval: no report: {record_file} differs from the record {table} carries "
            f"(in {', '.join(map(repr, differ[:3]))}): edited, or left by another run; {mend}"
        )
    return None


def _provenance_rows(records: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for r in records:
        data = "; ".join(f"{Path(p).name} {s[:12]}" for p, s in r.get("data", {}).items())
        commit = (r.get("commit") or "")[:12] or "not a checkout"
        if r.get("dirty"):
            commit += " (uncommitted changes)"
        cells = [
            str(r.get("experiment", "")).upper(),
            r.get("dataset", ""),
            r.get("config_sha256", "")[:16],
            r.get("seeds", ""),
            data or "generated",
            r.get("date", ""),
            commit,
        ]
        rows.append(
            "<tr>"
            + "".join(f"<td>{html.escape(str(c), quote=False)}</td>" for c in cells)
            + "</tr>"
        )
    return "".join(rows)


FRONT_ID = "debiaseval-front"
"""The id of the front page's outer element, which its style rules key on."""

FRONT_STYLE = (
    # Snakemake centres its home pane (flex, items-center justify-center, h-screen
    # overflow-auto): content taller than the window loses its top. Start it at the top.
    f".overflow-auto:has(#{FRONT_ID}){{align-items:flex-start;justify-content:flex-start}}"
    # The text above the rule graph, not beside it (where wide tables ran under it).
    f".flex:has(> div > .prose #{FRONT_ID})"
    "{flex-direction:column;align-items:stretch;min-width:0}"
    f".prose:has(#{FRONT_ID}){{max-width:64rem}}"
    f"#{FRONT_ID} table{{display:block;overflow-x:auto;width:auto;max-width:100%}}"
    f"#{FRONT_ID} .debiaseval-verdict{{border-left:3px solid #10b981;padding:0 0 0 0.8em;"
    "margin:1em 0;display:flow-root}"
    f"#{FRONT_ID} .debiaseval-verdict h3{{margin-top:0}}"
    f"#{FRONT_ID} code::before,#{FRONT_ID} code::after{{content:none}}"
)
"""The front page's own CSS. Snakemake's report inserts the page (the workflow description)
with ``innerHTML``, so this ``<style>`` applies while the home pane shows it and leaves with
it; each rule keys on :data:`FRONT_ID` (``:has()``), so no other view changes."""

OPEN_RESULT = (
    "var p=this.dataset.result;"
    "if(typeof app==='undefined'||typeof results==='undefined'||!results[p])return true;"
    "app.setView({navbarMode:'resultinfo',category:this.dataset.category,"
    "subcategory:this.dataset.subcategory,resultPath:p,content:'html',"
    "contentPath:results[p].data_uri});return false"
)
"""The one script of the front page: a link's click handler, the same text on every link.
It opens the result named by the link's ``data-result`` (its path, the key of Snakemake's
``results``) in the report's content pane, with its information in the menu, as the menu's
own result buttons do; outside the report (or for a result the report lacks) the link
follows its ``href``, the page's file. Every name a link carries is in its ``data-``
attributes, HTML-escaped: no user-given text is ever part of the script."""

NO_VERDICT = "No verdict recorded"


def verdict_items(text: str) -> str:
    """The findings of a ``verdict.md`` text (as
    :func:`debiaseval.experiments.verdicts.verdict_markdown` writes it: a ``## Verdict`` line, a
    blank line, one ``- `` bullet per finding) as Markdown: the lines under its ``## Verdict``
    heading up to the next heading, without the provenance block above it; "" when it holds
    none."""
    lines = text.splitlines()
    heading = next((i for i, line in enumerate(lines) if line.strip() == "## Verdict"), None)
    body = lines[heading + 1 :] if heading is not None else lines
    kept: list[str] = []
    for line in body:
        if line.startswith("#"):
            break
        if heading is None and line.startswith(">"):  # a provenance header, no heading
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _link(text: str, result: str, category: str, subcategory: str) -> str:
    """A link that opens the report's result ``result`` (:data:`OPEN_RESULT`)."""
    attrs = {
        "href": result,
        "data-result": result,
        "data-category": category,
        "data-subcategory": subcategory,
        "onclick": OPEN_RESULT,
    }
    shown = " ".join(f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
    return f"<a {shown}>{html.escape(text, quote=False)}</a>"


SUMMARIES = ("summary.md", "estimates.md", "scores.md")
"""The names of an experiment's main Markdown summary (E1, E2 and E4
``summary.md``, E3 and E5 ``estimates.md``, E6 ``scores.md``), the one the verdict heads."""

COMPARISONS = "comparisons.md"
"""The Markdown table of an experiment's paired comparisons, every pair with its tests (E1's),
which its verdict blocks link beside the summary."""


def _markdown_outputs(experiment: str) -> list[str]:
    """The Markdown files among the experiment's ``OUTPUTS``, in their order."""
    return [o for o in _module("experiments", experiment).OUTPUTS if o.endswith(".md")]


def _summary_file(experiment: str) -> str:
    """The experiment's main Markdown summary: the first of its ``OUTPUTS`` named in
    :data:`SUMMARIES`, else its first Markdown file but ``verdict.md``."""
    markdown = _markdown_outputs(experiment)
    return next(
        (o for o in markdown if o in SUMMARIES), next(o for o in markdown if o != "verdict.md")
    )


def _table_line(lead: str, name: str, folder: Path, category: str, dataset: str) -> str:
    """A paragraph ``lead``: a link to the report's page of the Markdown table ``name`` of
    ``folder`` (``tables/<stem>.html``), then the Markdown file's path."""
    page = (folder / "tables" / f"{Path(name).stem}.html").as_posix()
    link = _link(f"{name} (table)", page, category, dataset)
    path = html.escape((folder / name).as_posix(), quote=False)
    return f"<p>{lead}: {link}, <code>{path}</code>.</p>\n"


def _verdict_block(experiment: str, dataset: str, folder: Path, category: str) -> str:
    """One experiment's verdict on one dataset, as a ``<section>``: its ``verdict.md``
    rendered (raw HTML as text, :func:`markdown_html`), or :data:`NO_VERDICT`; then a link
    to its summary's page in the report and the summary's path, and the same for its
    :data:`COMPARISONS` table where the experiment writes one."""
    record = folder / "verdict.md"
    items = verdict_items(record.read_text(encoding="utf-8")) if record.is_file() else ""
    body = markdown_html(items) if items else f"<p>{NO_VERDICT}.</p>"
    links = _table_line("All of its results", _summary_file(experiment), folder, category, dataset)
    if COMPARISONS in _markdown_outputs(experiment):
        links += _table_line("Every pair compared", COMPARISONS, folder, category, dataset)
    name = f"{experiment.upper()} on {dataset}"
    return (
        f'<section class="debiaseval-verdict" data-experiment="{html.escape(experiment)}" '
        f'data-dataset="{html.escape(dataset)}">\n'
        f"<h3>{html.escape(name, quote=False)}</h3>\n{body}\n{links}"
        "</section>"
    )


def _figure_links(experiment: str, dataset: str, folder: Path, category: str) -> str:
    """The figures of ``experiment`` on ``dataset`` that ``folder/figures/`` holds, in the
    figures module's order, as one list item of links: the menu path, then each figure."""
    names = [
        name
        for name in _module("figures", experiment).FIGURES
        if (folder / "figures" / f"{name}.html").is_file()
    ]
    if not names:
        return ""
    links = ", ".join(
        _link(name, (folder / "figures" / f"{name}.html").as_posix(), category, dataset)
        for name in names
    )
    where = html.escape(f"{category} › {dataset}", quote=False)
    folder_text = html.escape((folder / "figures").as_posix() + "/", quote=False)
    return f"<li>{where}: {links} (<code>{folder_text}</code>)</li>"


def front_page(results: Sequence[tuple[str, str, str | os.PathLike[str]]]) -> str:
    """The report's front page (an HTML fragment, with its own style, :data:`FRONT_STYLE`):
    one verdict block per experiment and dataset first, then the provenance of every result,
    then links to every figure.

    ``results``: ``(experiment, dataset, folder)`` in the report's order, ``folder`` being
    ``results/<study>/<experiment>/<dataset>`` as the report names its results (relative to
    the working directory). A folder without ``provenance.json`` (not run yet) is left out.
    A verdict is the folder's ``verdict.md`` (:func:`verdict_items`); without one, the block
    says :data:`NO_VERDICT`. Either way it links the summary and, where the experiment writes
    one (E1), its :data:`COMPARISONS` table. Each link opens its result inside the report
    (:data:`OPEN_RESULT`). See docs/report.md#the-front-page.
    """
    records, verdicts, figures = [], [], []
    for experiment, dataset, folder in results:
        folder = Path(folder)
        record_file = folder / "provenance.json"
        if not record_file.is_file():
            continue
        records.append(json.loads(record_file.read_text(encoding="utf-8")))
        category = _module("figures", experiment).TITLE
        verdicts.append(_verdict_block(experiment, dataset, folder, category))
        figures.append(_figure_links(experiment, dataset, folder, category))
    style = f"<style>{FRONT_STYLE}</style>\n"
    if not records:
        return (
            f'<div id="{FRONT_ID}">\n{style}'
            "<p>No results yet: run the workflow, then ask for the report.</p>\n</div>\n"
        )
    first = records[0]
    versions = ", ".join(f"{k} {v}" for k, v in first.get("versions", {}).items() if v)
    plugins = "; ".join(f"{k}: {v}" for k, v in first.get("plugins", {}).items())
    made_by = "; ".join(
        part
        for part in (
            f"debiaseval {first.get('debiaseval')}",
            versions,
            plugins and f"plugins: {plugins}",
        )
        if part
    )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "experiment",
            "dataset",
            "config sha256",
            "seeds",
            "data (sha256)",
            "date (UTC)",
            "commit",
        )
    )
    listed = "\n".join(item for item in figures if item)
    return (
        f'<div id="{FRONT_ID}">\n{style}'
        "<h2>Verdicts</h2>\n"
        "<p>What each experiment found on each dataset, computed from its results by the job "
        "that aggregates them (<code>verdict.md</code> beside its summary).</p>\n"
        + "\n".join(verdicts)
        + "\n<h2>Provenance</h2>\n"
        f"<p>{html.escape(made_by, quote=False)}. "
        "Every summary carries its record as Parquet metadata <code>debiaseval.provenance"
        "</code> and in <code>provenance.json</code> beside it.</p>\n"
        f"<table><tr>{head}</tr>{_provenance_rows(records)}</table>\n"
        "<h2>Figures</h2>\n<p>Each opens here, with its caption; the menu lists them "
        "too, under the experiment and the dataset. SVG and PNG copies sit beside each page."
        f"</p>\n<ul>\n{listed}\n</ul>\n</div>\n"
    )
