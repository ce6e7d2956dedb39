"""The report's standalone HTML page and the page of a run's resolved configuration
(``results/<study>/config.html``, rule ``run_config``), apart from the report's other pages
(:mod:`debiaseval.workflow.report`) so that the ``run_config`` job's code stamp holds none of
the experiments' modules (:mod:`debiaseval.workflow.code_stamps`)."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd
import yaml

__all__ = ["STYLE", "config_page", "flatten_config", "page"]

STYLE = (
    "body{font-family:sans-serif;margin:1em;max-width:75em}"
    "table{border-collapse:collapse;font-size:0.9em;margin-bottom:1em}"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}"
    "th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}"
    "figure{margin:0}svg{max-width:100%;height:auto}"
    "figcaption{max-width:60em;margin-top:0.5em;line-height:1.4}"
)
"""The style sheet of every page of the report."""


def page(title: str, body: str) -> str:
    """A standalone HTML page titled ``title`` around ``body``, in the report's style."""
    name = html.escape(title)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{name}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """``(dotted key, value)`` of every leaf of ``config``; lists and scalars in YAML flow style."""
    rows: list[tuple[str, str]] = []
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            rows += flatten_config(value, f"{name}.")
        else:
            text = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False)
            rows.append((name, text.strip().removesuffix("...").strip()))
    return rows


def config_page(config: Mapping[str, Any]) -> str:
    """The resolved configuration of a run (every default filled in, ``study`` resolved) as
    one table of keys."""
    frame = pd.DataFrame(flatten_config(config), columns=["key", "value"])
    table = frame.to_html(index=False, border=0, escape=True)
    folder = html.escape(f"results/{config.get('study') or '<study>'}")
    body = (
        "<h2>Configuration of the run</h2>\n<p>Every key the run read, defaults filled in, "
        f"as validated against the config schema. <code>{folder}/config.yaml</code> holds the "
        f"same configuration as YAML: <code>snakemake --configfile {folder}/config.yaml</code> "
        f"reruns it.</p>\n{table}"
    )
    return page("Configuration of the run", body)
