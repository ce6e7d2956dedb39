"""Each experiment's answer in plain sentences: the verdict, computed from its aggregated tables.

A verdict is a list of complete sentences, one finding each, with its numbers, the intervals
the tables give, the dataset and the number of seeds. It is written as ``verdict.md``
(:func:`verdict_markdown`: the line ``## Verdict``, a blank line, one bullet per sentence) beside
the experiment's other results, and as the first section of its main Markdown summary
(:func:`with_verdict`); ``api.run`` returns it as ``verdict`` (the sentences) and ``verdict_md``
(:func:`verdict_entries`). This module holds what every verdict shares: the heading, the numbers
and names as the sentences write them, and the Markdown; each experiment's own verdict lives in
its package (``experiments/eN/verdict.py``):

- :func:`~debiaseval.experiments.e1.verdict.e1_verdict`: the recommenders ranked by the truth,
  the pairs that differ, Γ* and the arena's line ([SAC20]);
- :func:`~debiaseval.experiments.e2.verdict.e2_verdict`: which elicitation strategies differ per
  evaluation method after Holm's correction, which gains more only where the seeds or a
  one-sided test settle it, and how many tests were made ([FLAIRS20]);
- :func:`~debiaseval.experiments.e3.verdict.e3_verdict`: the estimators' RMSE against the true
  value over the seeds and draws, and the closest only where a paired interval over the draws
  separates the best from every other ([ICML16] Figure 2);
- :func:`~debiaseval.experiments.e4.verdict.e4_verdict`: MF-IPS against MF-Naive, with the t
  interval and the paired t-test across seeds from as many seeds as the tables give them, the
  paired t-test per seed ([ICML16] §6.5) and the ``grid_edge`` flag;
- :func:`~debiaseval.experiments.e5.verdict.e5_verdict`: Kendall's τ of URE and of traditional
  recall against the true recall ([URE24]);
- :func:`~debiaseval.experiments.e6.verdict.e6_verdict`: the constant recommenders' drift,
  unweighted and with KL weights, leaving out the weightings that free every item and so hold
  the first period by construction ([MYT14]).

Every name that comes from a user (dataset, recommender, test set, estimator, strategy) is made
inert (:func:`~debiaseval.io.markup.inert_markdown`). The functions are pure: tables in,
sentences out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from debiaseval.io.markup import inert_markdown

__all__ = [
    "HEADING",
    "and_list",
    "in_any_seed",
    "in_seeds",
    "inert_name",
    "metric_label",
    "number",
    "p_text",
    "seeds_text",
    "signed",
    "verdict_entries",
    "verdict_markdown",
    "verdict_sentences",
    "with_verdict",
]

HEADING = "## Verdict"
"""The first line of every verdict (``verdict.md`` and the summaries' first section)."""

_METRICS = {
    "recall": "Recall",
    "precision": "Precision",
    "hitrate": "HitRate",
    "ndcg": "NDCG",
    "map": "MAP",
    "avgdcg": "avgDCG",
    "mse": "MSE",
    "mae": "MAE",
}


def metric_label(metric: str, k: int | None = None) -> str:
    """``Recall@10``: the metric's usual spelling, with its cut-off."""
    name = _METRICS.get(str(metric), inert_markdown(metric))
    return name if k is None else f"{name}@{int(k)}"


def inert_name(text: object) -> str:
    """A user-given name, inert in Markdown."""
    return inert_markdown(text)


def number(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` decimals, never ``-0.0000``."""
    return f"{round(float(x), digits) + 0.0:.{digits}f}"


def signed(x: float, digits: int = 4) -> str:
    """``x`` with its sign, to ``digits`` decimals."""
    return f"{round(float(x), digits) + 0.0:+.{digits}f}"


def p_text(p: float) -> str:
    """A p-value to 2 significant digits, or ``undefined``."""
    return "undefined" if not np.isfinite(p) else f"{p:.2g}"


def seeds_text(n: int) -> str:
    """``1 seed``, ``2 seeds``."""
    return f"{int(n)} seed{'' if int(n) == 1 else 's'}"


def in_seeds(k: int, n: int) -> str:
    """``in 3 of 10 seeds``, ``in all 10 seeds``, ``in its one seed`` (not "in 1 of 1 seed")."""
    k, n = int(k), int(n)
    if n == 1:
        return "in its one seed"
    return f"in all {n} seeds" if k == n else f"in {k} of {seeds_text(n)}"


def in_any_seed(n: int) -> str:
    """``in any of 10 seeds``, ``in its one seed`` (not "in any of 1 seed")."""
    return "in its one seed" if int(n) == 1 else f"in any of {seeds_text(n)}"


def and_list(items: Sequence[str]) -> str:
    """``a, b and c``."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" and {items[-1]}"


# -- Markdown ----------------------------------------------------------------------------------


_NO_FINDING = "- No finding: the run produced no table to judge.\n"


def verdict_markdown(sentences: Sequence[str]) -> str:
    """The verdict as Markdown: ``## Verdict``, a blank line, one ``- `` bullet per sentence
    (each on one line)."""
    bullets = "".join(f"- {' '.join(str(s).split())}\n" for s in sentences)
    return f"{HEADING}\n\n{bullets or _NO_FINDING}"


def verdict_sentences(markdown: str) -> list[str]:
    """The sentences of a verdict's Markdown (:func:`verdict_markdown`), in order."""
    return [line[2:] for line in markdown.splitlines() if line.startswith("- ")]


def with_verdict(markdown: str, verdict_md: str) -> str:
    """``markdown`` (a summary whose first line is its ``# `` title) with ``verdict_md`` as its
    first section, right after the title."""
    title, _, rest = markdown.partition("\n")
    if not title.startswith("# "):
        raise ValueError(f"a summary starts with its '# ' title, not {title[:40]!r}")
    return f"{title}\n\n{verdict_md.rstrip(chr(10))}\n\n{rest.lstrip(chr(10))}"


def verdict_entries(sentences: Sequence[str]) -> dict[str, Any]:
    """The entries ``api.run`` returns: ``verdict`` (the sentences) and ``verdict_md``."""
    text = verdict_markdown(sentences)
    return {"verdict": verdict_sentences(text), "verdict_md": text}
