"""Inputs and outputs, the package's ground floor: the files it reads and writes atomically
(:mod:`~debiaseval.io.files`), the config's schema and its check of the schema alone
(:mod:`~debiaseval.io.schema`), the one-line errors that bad config or data gets
(:mod:`~debiaseval.io.errors`), user-given text made inert for Markdown and HTML
(:mod:`~debiaseval.io.markup`) and for a terminal (:mod:`~debiaseval.io.terminal`), the
Markdown tables of data frames (:mod:`~debiaseval.io.markdown_tables`), child
processes run with a deadline (:mod:`~debiaseval.io.processes`), and the code fingerprint of a
module's import closure, blind to comments and docstrings (:mod:`~debiaseval.io.source_hash`).

Every other package may import it; it imports nothing else of the package
(docs/contributing.md, "Where code goes").
"""
