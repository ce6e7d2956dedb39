"""User-given text made inert in every Markdown and HTML output (docs/report.md#user-given-strings).

Names of models, datasets, files and columns, plugin modules and hyperparameter values come
from a user's config and data; the outputs show them as written, never as markup:

- :func:`inert_markdown`: text for Markdown prose and table cells, with every character that
  Markdown or HTML would read (``< > & ` | \\ *``, emphasis ``_``, ``~``, a ``]`` that would
  close a link) written as an HTML entity, and line breaks as spaces.
  :func:`debiaseval.io.markdown_tables.markdown_table` passes every cell through it;
- :func:`code_span`: a code span that no backtick in the text can close (CommonMark's rule: a
  fence of more backticks than any run inside, padded with spaces);
- :func:`script_safe`: Snakemake's report writes each result's job params as text into a
  ``<script>`` block; there, ``</`` and ``<!--`` become ``<\\/`` and ``<\\!--``, so no config
  string can close the block (the rules' params mappings are
  :class:`debiaseval.workflow.params.Slice` objects, whose text is made so).

The ground floor: imports nothing of the package.
"""

from __future__ import annotations

import re

__all__ = ["code_span", "inert_markdown", "script_safe"]

_ENTITIES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "`": "&#96;",
    "|": "&#124;",
    "\\": "&#92;",
    "*": "&#42;",
    "~": "&#126;",
    "_": "&#95;",
    "]": "&#93;",
}

_ACTIVE = re.compile(
    r"[&<>`|\\*~]"  # HTML, code spans, table cells, escapes, emphasis, strikethrough
    r"|(?<![^\W_])_|_(?![^\W_])"  # an underscore that could open or close emphasis
    r"|\](?=[(\[:])"  # the end of a link's text
)
_LINE_BREAK = re.compile(r"\r\n|[\r\n]")


def inert_markdown(text: object) -> str:
    """``text`` as Markdown that renders as ``text`` itself: no HTML, code span, link, emphasis
    or table cell can start or end in it. Characters Markdown would read become HTML entities,
    line breaks spaces; a name of letters, digits, ``-``, ``.``, inner ``_`` and spaces, and
    our own cells (``0.12 [0.10, 0.14] (+3.1%)``), are returned unchanged."""
    line = _LINE_BREAK.sub(" ", str(text))
    return _ACTIVE.sub(lambda match: _ENTITIES[match.group()[0]], line)


def code_span(text: object) -> str:
    """``text`` as one Markdown code span, shown as written whatever it holds: the fence is one
    backtick longer than the longest run of backticks inside, with a space inside each end
    when the text has a backtick (CommonMark strips one each side; Python-Markdown strips
    them all). Line breaks become spaces. For prose: a table cell takes
    :func:`inert_markdown` (GitHub splits a cell at a ``|`` even inside a code span)."""
    line = _LINE_BREAK.sub(" ", str(text))
    runs = re.findall(r"`+", line)
    fence = "`" * (max(map(len, runs), default=0) + 1)
    pad = " " if runs else ""
    return f"{fence}{pad}{line}{pad}{fence}"


def script_safe(text: str) -> str:
    """``text`` with every ``</`` written ``<\\/`` and every ``<!--`` written ``<\\!--``: inside
    an HTML ``<script>`` element it can neither end the element (``</script``, in any case) nor
    open a comment that would swallow the real end."""
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")
