"""MkDocs hook: the configuration reference, generated from the JSON schemas at build time.

A page writes, alone on a line, ``<!-- config-reference -->`` for the whole reference
(docs/configuration.md) or ``<!-- config-keys e1 -->`` for one experiment's block
(docs/experiments/e1.md); the tables come from debiaseval.workflow.config_reference, so they
cannot drift from the schema.

Docstrings cross-reference names with reStructuredText roles (``:func:`top_k```), which
mkdocstrings renders as text; the page's HTML keeps the code span and drops the role.

The equations are typeset at build time: pymdownx.arithmatex (generic mode) marks each one
(``<span class="arithmatex">\\( ... \\)</span>`` inline, ``<div class="arithmatex">\\[ ...
\\]</div>`` displayed), and :func:`typeset` turns its TeX into MathML with latex2mathml (the
``docs`` extra), which the browser renders natively: the site shows its math offline, with no
script and no network. An equation latex2mathml cannot read fails the build, naming it.
"""

from __future__ import annotations

import html
import re

from debiaseval.workflow.config_reference import block_reference, config_reference

_BLOCK = re.compile(r"^<!-- config-keys (\w+) -->$", re.M)  # alone on its line
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj|paramref):(?=<code>)")
_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<block>.*?)\\\])'
    r"\s*</(?P=tag)>",
    re.S,
)

_UNKNOWN = re.compile(r">[^<]*?(\\[A-Za-z]+)")


def typeset(page_html: str, where: str = "a page") -> str:
    """``page_html`` with every arithmatex equation replaced by its MathML (``<math>``,
    ``display="block"`` for a displayed one), inside the same ``span``/``div`` with class
    ``arithmatex``. Raises ``ValueError`` naming ``where`` and the TeX that fails: one the
    converter cannot read, or one with a command it does not know."""
    from latex2mathml.converter import convert

    def mathml(match: re.Match[str]) -> str:
        display = "inline" if match.group("inline") is not None else "block"
        tex = html.unescape(match.group(display))
        try:
            math = convert(tex.strip(), display=display)
        except Exception as exc:  # any failure of the converter, with the equation
            reason = f"{type(exc).__name__} {exc}".strip()
            raise ValueError(
                f"{where}: cannot typeset the equation {tex.strip()!r}: {reason}"
            ) from None
        unknown = _UNKNOWN.search(math)  # latex2mathml shows a command it lacks as text
        if unknown:
            raise ValueError(
                f"{where}: cannot typeset the equation {tex.strip()!r}: unknown command "
                f"{unknown.group(1)}"
            )
        tag = match.group("tag")
        return f'<{tag} class="arithmatex">{math}</{tag}>'

    return _MATH.sub(mathml, page_html)


def on_page_markdown(markdown: str, **kwargs) -> str:
    if "\n<!-- config-reference -->\n" in markdown:
        markdown = markdown.replace("\n<!-- config-reference -->\n", f"\n{config_reference()}\n")
    return _BLOCK.sub(lambda match: block_reference(match.group(1)), markdown)


def on_page_content(content: str, page, **kwargs) -> str:
    return typeset(_ROLE.sub("", content), page.file.src_uri)
