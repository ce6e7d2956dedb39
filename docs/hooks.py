"""MkDocs hook: the configuration reference, generated from the JSON schemas at build time.

A page writes, alone on a line, ``<!-- config-reference -->`` for the whole reference
(docs/configuration.md) or ``<!-- config-keys e1 -->`` for one experiment's block
(docs/experiments/e1.md); the tables come from debiaseval.workflow.config_reference, so they
cannot drift from the schema.

Docstrings cross-reference names with reStructuredText roles (``:func:`top_k```), which
mkdocstrings renders as text; the page's HTML keeps the code span and drops the role.
"""

from __future__ import annotations

import re

from debiaseval.workflow.config_reference import block_reference, config_reference

_BLOCK = re.compile(r"^<!-- config-keys (\w+) -->$", re.M)  # alone on its line
_ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj|paramref):(?=<code>)")


def on_page_markdown(markdown: str, **kwargs) -> str:
    if "\n<!-- config-reference -->\n" in markdown:
        markdown = markdown.replace("\n<!-- config-reference -->\n", f"\n{config_reference()}\n")
    return _BLOCK.sub(lambda match: block_reference(match.group(1)), markdown)


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub("", html)
