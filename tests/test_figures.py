"""The figures' shared colour per row and the intervals they draw (issue 34, item 3)."""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from debiaseval.figures import REFERENCE_COLOURS, row_colours
from debiaseval.figures import e1 as e1_figures

matplotlib.use("Agg", force=True)


def _summary(testsets: list[str], n_seeds: int) -> pd.DataFrame:
    rows = []
    for j, testset in enumerate(testsets):
        for i, recommender in enumerate(["MF", "PosPop"]):
            mean = 0.2 + 0.05 * j + 0.1 * i
            rows.append(
                {
                    "recommender": recommender,
                    "testset": testset,
                    "metric": "recall",
                    "k": 10,
                    "mean": mean,
                    "pct_diff_vs_gt": 10.0 * j,
                    "n_seeds": n_seeds,
                    "ci_low": mean - 0.15,
                    "ci_high": mean + 0.2,
                    "boot_low": mean - 0.02,
                    "boot_high": mean + 0.03,
                }
            )
    return pd.DataFrame(rows)


def _bar_colours(fig) -> dict[str, str]:
    """Legend label -> bar colour of every bar series of ``fig``."""
    return {
        bars.get_label(): to_hex(bars.patches[0].get_facecolor())
        for ax in fig.axes
        for bars in ax.containers
        if hasattr(bars, "patches") and bars.patches
    }


def test_row_colours_depend_on_the_names_not_their_order_and_references_are_grey():
    a = row_colours(["gt", "WTD", "FULL", "SNIPS_WTD", "REG"])
    b = row_colours(["REG", "SNIPS_WTD", "TRUE", "FULL", "WTD", "gt", "CONSTANT"])
    assert {n: a[n] for n in a} == {n: b[n] for n in a}  # TRUE and CONSTANT shift nothing
    assert b["TRUE"] == REFERENCE_COLOURS["TRUE"] and a["gt"] == REFERENCE_COLOURS["gt"]
    others = [to_hex(b[n]) for n in ("REG", "SNIPS_WTD", "FULL", "WTD")]
    assert len(set(others)) == 4 and not set(others) & set(REFERENCE_COLOURS.values())


def test_a_test_set_has_one_colour_in_every_e1_figure_and_dataset():
    coat = {"summary": _summary(["gt", "FULL", "REG", "WTD"], 2)}
    synthetic = {"summary": _summary(["gt", "FULL", "REG", "TRUE", "WTD"], 2)}
    seen: dict[str, set[str]] = {}
    for tables in (coat, synthetic):
        for name in ("recall", "pct_diff"):
            for label, colour in _bar_colours(e1_figures.draw(name, tables, "toy")).items():
                seen.setdefault(label, set()).add(colour)
    assert set(seen) == {"gt", "FULL", "REG", "TRUE", "WTD"}
    assert all(len(colours) == 1 for colours in seen.values()), seen


@pytest.mark.parametrize(("n_seeds", "low", "high"), [(2, -0.02, 0.03), (3, -0.15, 0.2)])
def test_the_recall_figure_draws_the_interval_the_table_prints(n_seeds, low, high):
    summary = _summary(["gt", "FULL"], n_seeds)
    fig = e1_figures.draw("recall", {"summary": summary}, "toy")
    drawn = []
    for bars in [c for c in fig.axes[0].containers if hasattr(c, "patches")]:
        means = [p.get_height() for p in bars.patches]
        segments = bars.errorbar.lines[2][0].get_segments()
        drawn += [(s[0][1] - m, s[1][1] - m) for s, m in zip(segments, means, strict=True)]
    assert len(drawn) == 4
    assert np.allclose(drawn, [(low, high)] * 4)


def _whiskers(ax) -> list[tuple[float, float]]:
    """(low, high) of every whisker drawn on ``ax``, in the order the bars were drawn. A bar
    without an interval has none: an empty segment, and no cap at a finite height."""
    drawn = []
    for bars in [c for c in ax.containers if hasattr(c, "patches")]:
        segments = [s for s in bars.errorbar.lines[2][0].get_segments() if len(s)]
        drawn += [(s[0][1], s[1][1]) for s in segments]
        for cap in bars.errorbar.lines[1]:
            assert np.isfinite(np.asarray(cap.get_ydata(), dtype=float)).sum() == len(segments)
    return drawn


@pytest.mark.parametrize("n_seeds", [2, 3])
def test_e2_figures_draw_the_summarys_interval_and_share_colours(n_seeds):
    from debiaseval.figures import e2 as e2_figures

    rows = []
    for j, method in enumerate(["CLASSIC", "INT_T", "INT_HT"]):
        for i, strategy in enumerate(["RND", "POP"]):
            mean = -90.0 + 5 * i + j
            rows.append(
                {
                    "method": method,
                    "strategy": strategy,
                    "scope": "user",
                    "metric": "recall",
                    "k": 10,
                    "pct_change": mean,
                    "sd": 20.0,
                    "ci_low": mean - 4.0 - j,
                    "ci_high": mean + 7.0,
                    "n_seeds": n_seeds,
                }
            )
    summary = pd.concat([pd.DataFrame(rows), pd.DataFrame(rows).assign(scope="system")])
    elicited = summary[summary["scope"] == "user"].rename(columns={"pct_change": "mean"})
    elicited = elicited.assign(mean=1.0, ci_low=0.5, ci_high=1.5)
    tables = {"summary": summary, "elicited": elicited}
    fig = e2_figures.draw("recall_change", tables, "toy")
    drawn = _whiskers(fig.axes[0])
    by_method = [row for m in ("CLASSIC", "INT_T", "INT_HT") for row in rows if row["method"] == m]
    if n_seeds >= 3:
        expected = [(r["ci_low"], r["ci_high"]) for r in by_method]
        assert np.allclose(drawn, expected)
        assert min(low for low, _ in drawn) >= -100
    else:  # no interval printed, none drawn: not even a zero-length one with its caps
        assert drawn == []
    other = _bar_colours(e2_figures.draw("elicited", tables, "toy"))
    assert (
        _bar_colours(fig)
        == other
        == {name: to_hex(colour) for name, colour in row_colours(summary["method"]).items()}
    )


def test_a_bar_whose_interval_is_missing_gets_no_whisker():
    """From 3 seeds on the E1 recall figure draws the t interval; a row whose ci_low/ci_high
    are NaN (a mean outside the range) draws none, the others theirs."""
    summary = _summary(["gt", "FULL"], 3)
    summary.loc[0, ["ci_low", "ci_high"]] = np.nan  # MF on gt
    fig = e1_figures.draw("recall", {"summary": summary}, "toy")
    drawn = _whiskers(fig.axes[0])
    kept = summary.iloc[1:]
    assert np.allclose(drawn, list(zip(kept["ci_low"], kept["ci_high"], strict=True)))


def _e6_scores(p_values: tuple[int, ...]) -> pd.DataFrame:
    rows = []
    for p in (0, *p_values):
        for t in (0, 1, 2):
            score = 0.3 if p else 0.3 + 0.1 * t  # every weighting holds the score: one curve
            rows.append(
                {
                    "recommender": "g1",
                    "weighting": "kl" if p else "none",
                    "p": p,
                    "t": t,
                    "score": score,
                    "ci_low": score - 0.05,
                    "ci_high": score + 0.05,
                }
            )
    return pd.DataFrame(rows)


def test_the_e6_legend_names_p_as_the_verdict_does_and_no_curve_hides_another():
    """Issue 43, case 19: the legend said "p = all" where the verdict says "p = 400", and the
    every-item curve was drawn over p = 100's, with the same marker and line."""
    from debiaseval.figures import e6

    fig = e6.draw("scores", {"scores": _e6_scores((100, 400))}, "ml-100k")
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["unweighted (p = 0)", "KL, p = 100", "KL, p = 400 (every item)"]
    styles = {(line.get_marker(), str(line.get_linestyle())) for line in ax.get_lines()}
    assert len(styles) == 3
    under, over = ax.get_lines()[2], ax.get_lines()[1]
    assert under.get_zorder() < over.get_zorder()  # p = 100 drawn over the every-item curve


def test_the_e3_caption_says_which_metrics_its_panels_show():
    """Issue 43, case 19: the caption said MSE where the panels showed e3.curve_metrics (MAE)."""
    from debiaseval.figures import e3

    caption = e3.FIGURES["rmse_vs_alpha"]
    assert "one panel per metric of e3.curve_metrics" in caption.lower()
    assert "as ICML16 Figure 2 (MSE" not in caption
