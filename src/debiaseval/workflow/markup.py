"""User-given text made inert in every Markdown and HTML output (docs/report.md#user-given-strings).

Names of models, datasets, files and columns, plugin modules and hyperparameter values come
from a user's config and data; the outputs show them as written, never as markup:

- :func:`inert_markdown`: text for Markdown prose and table cells, with every character that
  Markdown or HTML would read (``< > & ` | \\ *``, emphasis ``_``, ``~``, a ``]`` that would
  close a link) written as an HTML entity, and line breaks as spaces.
  :func:`debiaseval.evaluation.aggregate.markdown_table` passes every cell through it;
- :func:`code_span`: a code span that no backtick in the text can close (CommonMark's rule: a
  fence of more backticks than any run inside, padded with spaces);
- :func:`script_safe`, :class:`ReportSafe` and :func:`report_params`: Snakemake's report
  writes each result's job params as text into a ``<script>`` block; there, ``</`` and
  ``<!--`` become ``<\\/`` and ``<\\!--``, so no config string can close the block.

The ground floor: imports nothing of the package.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ReportSafe", "code_span", "inert_markdown", "report_params", "script_safe"]

_ENTITIES = {
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "`": "&#96;", "|": "&#124;", "\\": "&#92;",
    "*": "&#42;", "~": "&#126;", "_": "&#95;", "]": "&#93;",
}  # fmt: skip

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


class ReportSafe(dict):  # type: ignore[type-arg]
    """A job's params value (a mapping) that Snakemake's HTML report shows without harm.

    The report writes a result's job params as text (``str()`` of each value) into its
    ``<script>`` block; this dict's text is its ``repr()`` through :func:`script_safe`. All
    else is the dict's: equality, ``repr()`` (what Snakemake's params trigger compares, so no
    job reruns for it), and pickling, which gives the job's script a plain ``dict``.
    """

    def __str__(self) -> str:
        return script_safe(repr(self))

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce__(self) -> tuple[type, tuple[dict[Any, Any]]]:
        return (dict, (dict(self),))


def _safe(value: Any) -> Any:
    return ReportSafe(value) if isinstance(value, Mapping) else value


def report_params(**params: Any) -> dict[str, Any]:
    """The ``params:`` of a rule whose outputs are in the report (``params: **report_params(
    ...)``): each mapping as a :class:`ReportSafe`, and each params function wrapped so that
    the mapping it returns is one (its signature kept: Snakemake passes what it names). Other
    values are the rule's own strings, numbers and lists of them, unchanged."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def safe(*args: Any, **kwargs: Any) -> Any:
            return _safe(function(*args, **kwargs))

        return safe

    return {name: wrap(v) if callable(v) else _safe(v) for name, v in params.items()}
