"""E1's verdict (debiaseval.experiments.e1.verdict): a few short sentences that claim only what
the resampling supports, with the pair lists in comparisons.md and the truth's separation in
the Kendall table's notes."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from debiaseval import api
from debiaseval.estimation.separation import SEPARATION_COLUMNS
from debiaseval.experiments import verdicts as v
from debiaseval.experiments.e1 import verdict as v1

TINY = yaml.safe_load((Path(__file__).parent / "configs" / "tiny.yaml").read_text())
BLOCK = {"tuning": {"metric": "recall", "k": 10}, "confidence": 0.95}


def _summary(means: dict[str, float], testset: str = "gt", n_seeds: int = 2) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "recommender": list(means),
            "testset": testset,
            "metric": "recall",
            "k": 10,
            "mean": list(means.values()),
            "sd": 0.01,
            "n_seeds": n_seeds,
            "ci_low": -0.5,
            "ci_high": 1.5,  # a t interval of 1 df: never shown with 2 seeds
            "boot_low": [m - 0.02 for m in means.values()],
            "boot_high": [m + 0.02 for m in means.values()],
        }
    )


def _comparisons(wins: dict[tuple[str, str], tuple[int, int]], n: int = 10) -> pd.DataFrame:
    rows = [
        {
            "testset": "gt",
            "metric": "recall",
            "k": 10,
            "recommender_a": a,
            "recommender_b": b,
            "n_seeds": n,
            "mean_diff": 0.01 * (wa - wb),
            "n_a_better": wa,
            "n_b_better": wb,
            "max_p_holm": 1.0,
            "gamma_star": np.nan,
            "gamma_leader": None,
        }
        for (a, b), (wa, wb) in wins.items()
    ]
    return pd.DataFrame(rows)


def _separation(
    pairs: dict[tuple[str, str], bool], truth: str = "gt", method: str = "bootstrap"
) -> pd.DataFrame:
    rows = [
        (
            "recall",
            10,
            truth,
            a,
            b,
            0.01,
            0.001 if apart else 0.5,
            0.001 if apart else 1.0,
            apart,
            10,
            10 if apart else 1,
            method,
        )
        for (a, b), apart in pairs.items()
    ]
    return pd.DataFrame(rows, columns=SEPARATION_COLUMNS)


def test_ranks_on_the_tuned_metric_and_says_how_many_pairs_the_truth_separates():
    means = {"MF": 0.30, "PosPop": 0.25, "ItemKNN": 0.20, "Random": 0.05}
    summary = pd.concat(
        [
            _summary(means, "TRUE"),
            _summary({r: m + 0.1 for r, m in means.items()}, "gt").assign(k=5),  # not tuned
        ]
    )
    separation = _separation(
        {("MF", "PosPop"): True, ("MF", "ItemKNN"): True, ("PosPop", "ItemKNN"): False},
        "TRUE",
        "stouffer",
    )
    out = v1.e1_verdict(
        summary,
        _comparisons({}),
        BLOCK,
        dataset="synthetic",
        separation=separation,
        excluded=["Random"],
    )
    ranking = out[0]
    assert "Recall@10 (the tuned metric)" in ranking and "TRUE" in ranking
    positions = [ranking.index(f"{name} ") for name in means]
    assert positions == sorted(positions)  # MF, PosPop, ItemKNN, Random
    assert "over 2 seeds" in ranking and "fewer than 3 seeds" in ranking
    assert "0.3000 [0.2800, 0.3200]" in ranking and "[-0.5000" not in ranking
    assert out[1] == (
        "On synthetic, TRUE separates 2 of the 3 pairs of ranked recommenders at Recall@10 "
        "(paired user-level tests pooled over independent draws, Holm at α = 0.05; the pairs "
        "in comparisons.md)."
    )
    assert len(out) == 2  # no Γ*, no arena: a few short sentences, no pair lists


def test_says_plainly_when_the_truth_cannot_separate_the_models():
    """gt separates no ranked pair: the verdict says so, names no best row, and the Kendall
    notes say τ measures noise, whatever the seeds' own tests found."""
    summary = _summary({"MF": 0.3, "Pop": 0.29, "Random": 0.1})
    comps = _comparisons(
        {("MF", "Pop"): (3, 0), ("MF", "Random"): (9, 0), ("Pop", "Random"): (9, 0)}
    )
    separation = _separation({("MF", "Pop"): False})
    arena = [
        "The estimator arena at recall@10 (estimator_accuracy.md): gt separates 0 of 1 "
        "ranked pairs (…). τ against gt measures noise here, and no row is named best."
    ]
    out = v1.e1_verdict(
        summary,
        comps,
        BLOCK,
        dataset="coat",
        separation=separation,
        arena=arena,
        excluded=["Random"],
    )
    text = " ".join(out)
    assert (
        "On coat, the truth itself (gt) cannot tell the 2 ranked recommenders apart at "
        "Recall@10: it separates none of the 1 pairs"
    ) in text
    assert "No row of the scoreboard is named best." in text
    assert "Best row" not in text and "MF above Pop in 3 of 10" not in text
    notes = v1.truth_separation_notes(separation)
    assert notes[("recall", 10)].startswith("gt itself tells apart 0 of the 1 pairs")
    assert "measures noise" in notes[("recall", 10)]
    md = v1.comparisons_markdown(
        comps, "coat", confidence=0.95, verdict_md=v.verdict_markdown(out), separation=separation
    )
    assert md.splitlines()[2] == "## Verdict"
    assert "## Does the truth separate the models?" in md and "| MF | Pop |" in md
    assert "MF above Pop in 3 of 10 seeds" in md  # the per-seed evidence, in comparisons.md


def test_names_are_inert_and_gamma_star_names_the_leader():
    evil = "<b>x</b>|*y*"
    summary = _summary({evil: 0.3, "B": 0.1})
    comps = pd.concat(
        [
            _comparisons({(evil, "B"): (10, 0)}),
            _comparisons({(evil, "B"): (3, 0)}).assign(
                testset="SNIPS", gamma_star=1.75, gamma_leader=evil
            ),
            _comparisons({(evil, "B"): (3, 0)}).assign(
                testset="SNIPS2", gamma_star=np.inf, gamma_leader=evil
            ),
        ]
    )
    arena = ["The estimator arena at recall@10 (estimator_accuracy.md): Best row: SNIPS."]
    out = v1.e1_verdict(
        summary,
        comps,
        BLOCK,
        dataset="my_*data*",
        arena=arena,
        separation=_separation({(evil, "B"): True}),
    )
    text = "\n".join(out)
    assert "<b>" not in text and "|" not in text and "*y*" not in text
    assert "&lt;b&gt;x&lt;/b&gt;&#124;&#42;y&#42;" in text
    assert "my&#95;&#42;data&#42;" in text
    assert "1.75" in text and "Γ*" in text and "1 other SNIPS row in sensitivity.md" in text
    assert (
        "&lt;b&gt;x&lt;/b&gt;&#124;&#42;y&#42; above B unless the propensities are wrong by "
        "more than a factor 1.75" in text
    )  # the leader is named
    md = v1.comparisons_markdown(comps, "d", confidence=0.95)
    assert "∞ (&lt;b&gt;x&lt;/b&gt;&#124;&#42;y&#42; ahead)" in md  # an infinite Γ* is kept
    assert (
        out[-1] == "On my&#95;&#42;data&#42;, the estimator arena at recall@10 "
        "(estimator_accuracy.md): Best row: SNIPS."
    )  # not escaped twice


def test_api_run_on_synthetic_gives_the_verdict_first_everywhere():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = api.run("e1", "synthetic", TINY)
    summary = out["summary"]
    true = summary[
        (summary["testset"] == "TRUE") & (summary["metric"] == "recall") & (summary["k"] == 10)
    ].sort_values("mean", ascending=False)
    ranking = out["verdict"][0]
    positions = [ranking.index(f"{name} ") for name in true["recommender"]]
    assert positions == sorted(positions)
    assert "TRUE separates" in out["verdict"][1] or "cannot tell" in out["verdict"][1]
    assert any("With 2 seeds the scoreboard gives no interval" in s for s in out["verdict"])
    for key in ("summary_md", "comparisons_md"):
        lines = out[key].splitlines()
        assert lines[0].startswith("# E1 on synthetic") and lines[2] == "## Verdict"
        assert out[key].count(out["verdict"][0]) == 1
    assert set(out["truth_separation"]["method"]) == {"stouffer"}  # each seed its own draw
