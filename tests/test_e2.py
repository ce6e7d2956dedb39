"""E2 ([FLAIRS20]): split, active users, H/T sampling, metric changes, Wilcoxon, a tiny run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from debiaseval import api
from debiaseval.active_learning.evaluation import (
    active_users,
    change_summary,
    combine_seeds,
    median_combined_p,
    metric_changes,
    pairwise_wilcoxon,
)
from debiaseval.data.draws import seed_config
from debiaseval.data.preprocess import build_interactions
from debiaseval.data.splits import filter_users, run_rng, split_e2
from debiaseval.data.synthetic import generate_synthetic
from debiaseval.experiments import e2
from debiaseval.experiments.e2 import tables as e2_tables
from debiaseval.io.errors import ConfigError
from debiaseval.workflow.config import validate_config

FRACTIONS = {"known": 0.6, "hidden_pool": 0.2, "test_pool": 0.2}
TINY = {
    "synthetic": {"n_users": 80, "n_items": 90, "density": 0.12, "n_mar": 5, "rank": 4, "seed": 1},
    "e2": {
        "seeds": 2,
        "n_asked": 10,
        "mf": {"algorithm": "mf", "grid": {"factors": [8]}},
        "tuning": {"early_stopping": {"max_epochs": 10, "eval_every": 5}},
    },
}


def _interactions() -> pd.DataFrame:
    interactions, _, _ = build_interactions(
        generate_synthetic(n_users=150, n_items=120, density=0.12, n_mar=5, seed=2).to_raw()
    )
    return interactions


def _keys(frame: pd.DataFrame) -> set[tuple[int, int]]:
    return set(zip(frame["user"].tolist(), frame["item"].tolist(), strict=True))


def _gini(items: np.ndarray, n_items: int) -> float:
    counts = np.sort(np.bincount(items, minlength=n_items)).astype(float)
    cum = np.cumsum(counts)
    return float((n_items + 1 - 2 * np.sum(cum) / cum[-1]) / n_items)


def test_split_proportions_and_mnar_only():
    interactions = _interactions()
    split = split_e2(interactions, fractions=FRACTIONS, rng=run_rng(0, "t"))
    mnar = interactions[interactions["part"] == "mnar"]
    assert len(split) == len(mnar)
    sizes = split["part"].value_counts()
    for part, fraction in FRACTIONS.items():
        assert abs(sizes[part] - fraction * len(mnar)) < 1
    assert _keys(split) == _keys(mnar)  # MAR rows are not used


def test_user_filter_keeps_the_counts_in_range():
    frame = pd.DataFrame({"user": [0] * 3 + [1] * 5 + [2] * 8, "item": range(16), "rating": 4.0})
    kept = filter_users(frame, min_ratings=4, max_ratings=6)
    assert set(kept["user"]) == {1}
    assert len(filter_users(frame, min_ratings=None, max_ratings=None)) == 16
    with pytest.raises(ValueError, match="user filter"):
        split_e2(
            frame.assign(part="mnar"), fractions=FRACTIONS, rng=run_rng(0, "t"), min_ratings=99
        )


def test_active_users_are_a_third_fixed_per_seed():
    interactions = _interactions()
    kwargs = {"step": e2.E2Split(FRACTIONS, active_fraction=1 / 3)}
    split, active = e2.split_step(interactions, dataset="d", seed=0, **kwargs)
    known_users = np.unique(split.loc[split["part"] == "known", "user"])
    users = active["user"].to_numpy()
    assert len(users) == round(len(known_users) / 3)
    assert set(users) <= set(known_users) and np.all(np.diff(users) > 0)
    _, again = e2.split_step(interactions, dataset="d", seed=0, **kwargs)
    _, other = e2.split_step(interactions, dataset="d", seed=1, **kwargs)
    pd.testing.assert_frame_equal(active, again)
    assert not active.equals(other)
    with pytest.raises(ValueError):
        active_users(split, rng=np.random.default_rng(0), fraction=0)


def test_sampling_shares_h_and_wtd_h_flattens_the_item_marginal():
    interactions = _interactions()
    n_users, n_items = interactions["user"].max() + 1, interactions["item"].max() + 1
    methods = validate_config({}, "e2")["e2"]["methods"]
    split, _ = e2.split_step(
        interactions, e2.E2Split(FRACTIONS, active_fraction=1 / 3), dataset="d", seed=0
    )
    step = e2.E2Sample(methods, rho={"hidden": 0.5, "test": 0.5})
    drawn = {
        name: e2.sample_step(
            split, name, step, dataset="d", seed=0, n_users=n_users, n_items=n_items
        )
        for name in methods
    }
    pools = {part: split[split["part"] == part] for part in FRACTIONS}
    for hidden, test in drawn.values():
        assert _keys(hidden) <= _keys(pools["hidden_pool"])
        assert _keys(test) <= _keys(pools["test_pool"])
        assert len(hidden) == round(0.5 * len(pools["hidden_pool"]))
        assert not _keys(test) & (_keys(pools["known"]) | _keys(hidden))  # T never reaches K, H
    pd.testing.assert_frame_equal(drawn["CLASSIC"][0], drawn["INT_T"][0])  # shared H
    assert not drawn["CLASSIC"][1].equals(drawn["INT_T"][1])
    classic = _gini(drawn["CLASSIC"][0]["item"].to_numpy(), n_items)
    intervened = _gini(drawn["INT_HT"][0]["item"].to_numpy(), n_items)
    assert intervened < classic
    assert _gini(drawn["INT_T"][1]["item"].to_numpy(), n_items) < _gini(
        drawn["CLASSIC"][1]["item"].to_numpy(), n_items
    )


def test_metric_changes_by_hand():
    # users 0, 1 have relevant test pairs; user 2 only an irrelevant one; user 0 is active
    test = pd.DataFrame(
        {"user": [0, 0, 1, 2], "item": [1, 2, 3, 4], "rating": [5.0, 4.0, 5.0, 2.0]}
    )
    before = pd.DataFrame({"user": [0, 0, 1, 1], "item": [1, 5, 6, 7], "rank": [1, 2, 1, 2]})
    after = pd.DataFrame({"user": [0, 0, 1, 1], "item": [1, 2, 7, 3], "rank": [1, 2, 1, 2]})
    out = metric_changes(
        before,
        after,
        test,
        active=np.array([0, 2]),
        ks=[2],
        metrics=["recall", "precision"],
        n_items=10,
        positive_threshold=3.0,
    )
    got = out.set_index(["scope", "metric", "user"])[["before", "after"]]
    assert got.loc[("user", "recall", 0)].tolist() == [0.5, 1.0]
    assert got.loc[("system", "recall", 1)].tolist() == [0.0, 1.0]
    assert got.loc[("system", "precision", 0)].tolist() == [0.5, 1.0]
    assert set(out.loc[out["scope"] == "user", "user"]) == {0}
    summary = change_summary(out).set_index(["scope", "metric"])
    assert summary.loc[("system", "recall"), "before"] == 0.25
    assert summary.loc[("system", "recall"), "pct_change"] == pytest.approx(300.0)
    assert summary.loc[("user", "precision"), "pct_change"] == pytest.approx(100.0)
    assert summary.loc[("system", "recall"), "n_users"] == 2


def test_wilcoxon_matches_scipy_by_hand():
    rng = np.random.default_rng(0)
    users = np.arange(30)
    rows = []
    for strategy, shift in (("A", 0.0), ("B", 0.3), ("C", 0.0)):
        after = rng.normal(shift, 1.0, users.size)
        if strategy == "C":
            after = rows[0]["after"].to_numpy()  # identical to A: every difference 0
        rows.append(
            pd.DataFrame(
                {
                    "method": "M",
                    "scope": "user",
                    "metric": "recall",
                    "k": 10,
                    "seed": 0,
                    "user": users,
                    "strategy": strategy,
                    "before": 0.0,
                    "after": after,
                }
            )
        )
    out = pairwise_wilcoxon(pd.concat(rows), ["A", "B", "C"]).set_index(
        ["strategy_a", "strategy_b"]
    )
    expected = wilcoxon(rows[0]["after"], rows[1]["after"], alternative="two-sided")
    assert out.loc[("A", "B"), "statistic"] == pytest.approx(expected.statistic)
    assert out.loc[("A", "B"), "p_value"] == pytest.approx(expected.pvalue)
    assert out.loc[("A", "B"), "n_users"] == 30
    assert out.loc[("A", "C"), "p_value"] == 1.0 and not out.loc[("A", "C"), "significant"]
    assert list(out.index) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert out.loc[("A", "B"), "mean_difference"] == pytest.approx(
        np.mean(rows[0]["after"] - rows[1]["after"])
    )
    for column, side in (("p_greater", "greater"), ("p_less", "less")):
        one_sided = wilcoxon(rows[0]["after"], rows[1]["after"], alternative=side).pvalue
        assert out.loc[("A", "B"), column] == pytest.approx(one_sided)
        assert out.loc[("A", "C"), column] == 1.0


def test_signed_rank_with_zeros_and_ties_gives_scipy_s_numbers_exactly():
    """The sign-flip path (at most 13 pairs, a zero or a tie) against SciPy's own permutation
    test, to the last bit: half-integer changes give ties and zeros in nearly every sample;
    the one sample of 13 pairs is the largest SciPy tests by permutation."""
    from debiaseval.active_learning.evaluation import SIGN_FLIP_LIMIT, _signed_rank

    def scipy_numbers(x, y):
        two = wilcoxon(x, y, alternative="two-sided")
        greater = wilcoxon(x, y, alternative="greater").pvalue
        less = wilcoxon(x, y, alternative="less").pvalue
        return float(two.statistic), float(two.pvalue), float(greater), float(less)

    rng = np.random.default_rng(7)
    samples = [rng.integers(0, 4, (2, int(rng.integers(1, 9)))) / 2 for _ in range(60)]
    big = rng.normal(size=(2, SIGN_FLIP_LIMIT)).round(1)
    big[0, :3] = big[1, :3]  # three zero differences
    compared = 0
    for x, y in [*samples, big]:
        if np.all(x == y):
            continue
        assert _signed_rank(x, y) == scipy_numbers(x, y), (x, y)
        compared += 1
    assert compared > 40
    # above the limit, or without zeros and ties, SciPy's own test is called
    x, y = rng.normal(size=(2, SIGN_FLIP_LIMIT + 1)).round(1)
    x[0] = y[0]
    assert _signed_rank(x, y) == scipy_numbers(x, y)


def _changes(seeds: int, users: np.ndarray, difference: np.ndarray, strategies=("A", "B")):
    """Per-user changes: strategy b gains ``difference`` more than a, every seed the same users."""
    frames = []
    for seed in range(seeds):
        for strategy, shift in zip(strategies, (0.0, 1.0), strict=True):
            frames.append(
                pd.DataFrame(
                    {
                        "method": "M",
                        "scope": "user",
                        "metric": "recall",
                        "k": 10,
                        "seed": seed,
                        "user": users,
                        "strategy": strategy,
                        "before": 0.0,
                        "after": shift * difference + 0.01 * seed,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def test_wilcoxon_never_pairs_a_user_with_itself_across_seeds():
    # 5 users, b better than a for each of them, in each of 10 seeds. Within a seed the exact
    # two-sided p is 2/32 = 0.0625: not significant. Pooled over seeds as 50 pairs, the same
    # 5 users would give p < 1e-8.
    users = np.array([3, 8, 13, 21, 34])
    changes = _changes(10, users, np.array([0.1, 0.2, 0.3, 0.4, 0.5]))
    tests = pairwise_wilcoxon(changes, ["A", "B"])
    assert len(tests) == 10 and list(tests["seed"]) == list(range(10))
    assert (tests["n_users"] == users.size).all()  # a user is one pair of one seed's test
    assert tests["p_value"].to_numpy() == pytest.approx(np.full(10, 0.0625))
    assert not tests["significant"].any()
    assert tests["mean_difference"].to_numpy() == pytest.approx(np.full(10, -0.3))
    combined = combine_seeds(tests).iloc[0]
    assert combined["n_seeds"] == 10 and combined["share_significant"] == 0.0
    assert combined["combined_p"] == pytest.approx(0.125) and not combined["significant"]
    # b ahead in every seed, and the one-sided combined p towards b is half the two-sided one
    assert combined["n_a_ahead"] == 0 and combined["n_b_ahead"] == 10
    assert combined["combined_p_less"] == pytest.approx(0.0625)
    assert combined["combined_p_greater"] == 1.0
    # a user rated in seed 0 by A only and in seed 1 by B only is never a pair
    lone = pd.concat(
        [
            _changes(1, np.array([99]), np.array([1.0]), ("A", "X")),
            _changes(2, np.array([99]), np.array([1.0]), ("Y", "B")).query("seed == 1"),
        ]
    )
    tests = pairwise_wilcoxon(pd.concat([changes, lone]), ["A", "B"])
    assert (tests["n_users"] == users.size).all()


def test_median_combined_p_is_valid_and_by_hand():
    assert median_combined_p([0.3]) == 0.3
    assert median_combined_p([0.04, 0.01]) == pytest.approx(0.02)  # K = 2: Bonferroni
    assert median_combined_p([0.5, 0.01, 0.02]) == pytest.approx(1.5 * 0.02)
    ps = [0.001, 0.002, 0.003, 0.004, 0.02, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert median_combined_p(ps) == pytest.approx(2 * 0.02)  # twice the 5th smallest of 10
    assert median_combined_p([0.9, 0.95]) == 1.0
    with pytest.raises(ValueError, match="p-values"):
        median_combined_p([])
    # level alpha under the worst dependence: 10 copies of one uniform p (identical tests)
    rng = np.random.default_rng(0)
    draws = rng.random(4000)
    rejected = np.mean([median_combined_p(np.full(10, u)) < 0.05 for u in draws])
    assert rejected <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / draws.size)
    # and under independence
    rejected = np.mean([median_combined_p(rng.random(10)) < 0.05 for _ in range(4000)])
    assert rejected <= 0.05


def test_each_seed_draws_its_own_synthetic_unless_per_seed_is_false():
    """E2's seeds read their own draw of synthetic (the workflow's data/synthetic/seed<s>/);
    with ``per_seed: false`` every seed reads the one draw at ``synthetic.seed``."""
    from debiaseval.api import load_dataset
    from debiaseval.experiments import seed_frames

    for per_seed in (True, False):
        config = {**TINY, "synthetic": {**TINY["synthetic"], "per_seed": per_seed}}
        frames_of = seed_frames("synthetic", validate_config(config, "e2"), None, experiment="e2")
        first, second = frames_of(0).interactions, frames_of(1).interactions
        assert first.equals(frames_of(0).interactions)
        assert first.equals(second) is not per_seed
    assert second.equals(load_dataset("synthetic", config=TINY)[0])  # the draw at seed 1


@pytest.fixture(scope="module")
def tiny_run():
    return api.run_e2("synthetic", TINY)


@pytest.mark.slow
def test_elicited_pairs_are_in_h_unknown_and_at_most_n(tiny_run):
    from debiaseval.api import load_dataset

    full = validate_config(TINY, "e2")
    splitting, sampling = e2.E2Split.of(full, "synthetic"), e2.E2Sample.of(full, "synthetic")
    pairs = tiny_run["elicited_pairs"]
    for seed in (0, 1):  # each seed its own draw of synthetic
        drawn = seed_config(TINY, "synthetic", seed)
        interactions, users, items = load_dataset("synthetic", config=drawn)
        split, active = e2.split_step(interactions, splitting, dataset="synthetic", seed=seed)
        known = _keys(split[split["part"] == "known"])
        for method in sampling.methods:
            hidden, _ = e2.sample_step(
                split,
                method,
                sampling,
                dataset="synthetic",
                seed=seed,
                n_users=len(users),
                n_items=len(items),
            )
            got = pairs[(pairs["seed"] == seed) & (pairs["method"] == method)]
            assert _keys(got) <= _keys(hidden) and not _keys(got) & known
            assert set(got["user"]) <= set(active["user"])
            assert got.groupby(["strategy", "user"]).size().max() <= full["e2"]["n_asked"]
    same = [
        pairs[pairs["method"] == m].drop(columns="method").reset_index(drop=True)
        for m in ("CLASSIC", "INT_T")
    ]
    pd.testing.assert_frame_equal(*same)  # CLASSIC and INT_T elicit the same ratings


@pytest.mark.slow
def test_tiny_run_tables(tiny_run):
    elicited, summary, tests = tiny_run["elicited"], tiny_run["summary"], tiny_run["wilcoxon"]
    assert list(elicited.columns) == [
        "method",
        "strategy",
        "mean",
        "sd",
        "ci_low",
        "ci_high",
        "n_seeds",
    ]
    assert len(elicited) == 3 * 6 and (elicited["n_seeds"] == 2).all()
    assert list(summary.columns) == [
        "method",
        "strategy",
        "scope",
        "metric",
        "k",
        "before",
        "after",
        "pct_change",
        "sd",
        "ci_low",
        "ci_high",
        "n_seeds",
        "n_users_min",
        "flags",
    ]
    assert set(summary["scope"]) == {"user", "system"}
    assert list(dict.fromkeys(summary["metric"])) == ["recall", "precision", "ndcg"]
    assert list(tests.columns) == [
        "method",
        "scope",
        "metric",
        "k",
        "strategy_a",
        "strategy_b",
        "n_seeds",
        "n_significant",
        "share_significant",
        "median_p",
        "combined_p",
        "mean_users",
        "mean_difference",
        "significant",
        "n_a_ahead",
        "n_b_ahead",
        "combined_p_greater",
        "combined_p_less",
    ]
    assert len(tests) == 3 * 2 * 3 * 15 and tests["combined_p"].between(0, 1).all()
    assert (tests["n_seeds"] == 2).all() and tests["share_significant"].between(0, 1).all()
    per_seed = tiny_run["wilcoxon_seeds"]
    assert len(per_seed) == 2 * len(tests) and set(per_seed["seed"]) == {0, 1}
    # within a seed, a test has at most one pair per evaluated user of that seed
    users = tiny_run["changes"].groupby(["seed", "method", "scope"])["user"]
    most = users.nunique().rename("most").reset_index()
    checked = per_seed.merge(most, on=["seed", "method", "scope"])
    assert (checked["n_users"] <= checked["most"]).all() and len(checked) == len(per_seed)
    # the same active users in every method and strategy
    changes = tiny_run["changes"]
    user_scope = changes[changes["scope"] == "user"]
    active_per_run = user_scope.groupby(["seed", "method", "strategy"])["user"].apply(frozenset)
    for (seed, method), block in active_per_run.groupby(level=[0, 1]):
        assert block.nunique() == 1, (seed, method)
    assert tiny_run["summary_md"].startswith("# E2 on synthetic")


@pytest.mark.parametrize(
    ("block", "key"),
    [
        ({"datasets": ["kuairec"]}, "'e2.datasets.0'"),
        ({"strategies": ["RND", "ORACLE"]}, "'e2.strategies.1'"),
        ({"split": {"known": 0.5}}, "'e2.split'"),
        (
            {"methods": {"X": {"hidden": {"strategy": "wtd"}, "test": {"strategy": "reg"}}}},
            "'e2.methods.X.hidden'",
        ),
    ],
)
def test_bad_e2_config_names_the_key(block, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate_config({"e2": block}, "e2")


@pytest.mark.slow
def test_per_user_values_average_to_the_summary(tiny_run):
    per_user, changes = tiny_run["metrics_per_user"], tiny_run["changes"]
    assert list(per_user.columns) == e2_tables.PER_USER_COLUMNS
    assert len(per_user) == 2 * len(changes) and set(per_user["stage"]) == {"before", "after"}
    keys = ["seed", "method", "strategy", "scope", "metric", "k"]
    means = per_user.groupby([*keys, "stage"])["value"].mean().unstack("stage")
    summary = tiny_run["summary"].set_index(["method", "strategy", "scope", "metric", "k"])
    over_seeds = means.groupby(level=keys[1:]).mean().reindex(summary.index)
    np.testing.assert_allclose(over_seeds["before"], summary["before"], rtol=1e-12)
    np.testing.assert_allclose(over_seeds["after"], summary["after"], rtol=1e-12)


@pytest.mark.slow
def test_means_over_few_users_are_flagged_and_marked(tiny_run):
    from debiaseval.evaluation.flags import FLAGS

    summary = tiny_run["summary"]
    orders = {c: list(dict.fromkeys(summary[c])) for c in ("method", "strategy")}
    changes = tiny_run["changes"]
    fewest = int(
        changes.groupby(["seed", "method", "strategy", "scope", "metric", "k"])["user"].size().min()
    )
    none = e2_tables.summary_table(changes, orders, min_users=fewest)
    assert not none["flags"].str.contains("few_users").any()
    some = e2_tables.summary_table(changes, orders, min_users=fewest + 1)
    flagged = some["n_users_min"] < fewest + 1
    assert flagged.any() and (some.loc[flagged, "flags"].str.contains("few_users")).all()
    assert not some.loc[~flagged, "flags"].str.contains("few_users").any()
    text = e2_tables.summary_markdown(
        tiny_run["elicited"], some, tiny_run["wilcoxon"], dataset="synthetic"
    )
    assert FLAGS["few_users"][0] in text and "`few_users`" in text


def _user_changes(n_seeds: int) -> pd.DataFrame:
    """Per-user before/after recall of one method and two strategies over ``n_seeds`` seeds:
    NEG's after is a small share of before, so its % change lies near -100%, where a
    symmetric interval would cross the bound."""
    rng = np.random.default_rng(7)
    rows = []
    for seed in range(n_seeds):
        for strategy, factor in (("RND", 1.2), ("NEG", 0.04 + 0.03 * seed)):
            before = rng.uniform(0.2, 0.6, 40)
            rows.append(
                pd.DataFrame(
                    {
                        "seed": seed,
                        "method": "CLASSIC",
                        "strategy": strategy,
                        "scope": "user",
                        "user": np.arange(40),
                        "metric": "recall",
                        "k": 10,
                        "before": before,
                        "after": before * factor * rng.uniform(0.8, 1.2, 40),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("n_seeds", [2, 3])
def test_e2_intervals_stay_in_range_and_print_from_three_seeds(n_seeds):
    orders = {"method": ["CLASSIC"], "strategy": ["RND", "NEG"]}
    summary = e2_tables.summary_table(
        _user_changes(n_seeds), {**orders, "metric": ["recall"]}, confidence=0.9
    )
    neg = summary[summary["strategy"] == "NEG"].iloc[0]
    assert -100 < neg["ci_low"] < neg["pct_change"] < neg["ci_high"]
    if n_seeds == 2:  # a symmetric t interval with one degree of freedom crosses -100%
        assert neg["pct_change"] - (neg["ci_high"] - neg["pct_change"]) < -100
    counts = pd.DataFrame(
        {
            "seed": np.repeat(np.arange(n_seeds), 2),
            "method": "CLASSIC",
            "strategy": ["RND", "NEG"] * n_seeds,
            "n_elicited": [3, 0] * (n_seeds - 1) + [5, 1],
            "n_active": 40,
        }
    )
    elicited = e2_tables.elicited_table(counts, orders, confidence=0.9)
    assert (elicited["ci_low"] >= 0).all() and (elicited["ci_low"] <= elicited["mean"]).all()
    no_tests = pd.DataFrame(
        columns=[
            "method",
            "scope",
            "metric",
            "k",
            "strategy_a",
            "strategy_b",
            "n_seeds",
            "share_significant",
            "combined_p",
            "mean_users",
            "mean_difference",
            "significant",
        ]
    ).astype({"significant": bool})
    text = e2_tables.summary_markdown(elicited, summary, no_tests, dataset="toy", confidence=0.9)
    section = text.split("## recall@10: % change after elicitation, active users")[1]
    row = next(line for line in section.splitlines() if line.startswith("| NEG |"))
    assert row.startswith(f"| NEG | {neg['pct_change']:+.1f}")
    if n_seeds == 3:
        interval = f"[{neg['ci_low']:.1f}, {neg['ci_high']:.1f}]"
        assert row == f"| NEG | {neg['pct_change']:+.1f} {interval} |"
        assert "In square brackets, the 0.9 t interval (level `e2.confidence`)" in text
    else:
        assert "[" not in row and "without an interval" in text
    assert "±" not in text


def test_e2_confidence_sets_the_intervals_and_the_tests_significance():
    from debiaseval.evaluation.uncertainty import significance

    assert validate_config({}, "e2")["e2"]["confidence"] == 0.95
    assert significance(0.95) == 0.05 and significance(0.9) == 0.1
