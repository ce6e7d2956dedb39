"""One API for every experiment: api.run(experiment, data, config, seeds=...) and its aliases."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from debiaseval import api
from debiaseval.data import DATA_ENV
from debiaseval.data.draws import seed_config
from debiaseval.experiments.e3 import synthetic_truth
from debiaseval.experiments.e5 import full_data
from debiaseval.workflow.config import validate_config

TINY = yaml.safe_load((Path(__file__).parent / "configs" / "tiny.yaml").read_text())
EXPERIMENTS = ("e1", "e2", "e3", "e4", "e5", "e6")


def _equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(value, b[key])
        else:
            assert value == b[key], key


def test_every_alias_has_run_s_signature_and_every_old_name_stays():
    run = inspect.signature(api.run)
    expected = list(run.parameters.values())[1:]  # without `experiment`
    for experiment in EXPERIMENTS:
        alias = getattr(api, f"run_{experiment}")
        assert list(inspect.signature(alias).parameters.values()) == expected, experiment
        assert alias.__name__ == f"run_{experiment}"
    old = {
        "ELICITATION_STRATEGIES",
        "RECOMMENDERS",
        "TOPK_METRICS",
        "EarlyStopping",
        "ElicitationContext",
        "Recommender",
        "TestSetSpec",
        "ask",
        "assign_parts",
        "elicit",
        "evaluate_topk",
        "intervene",
        "ips",
        "learning_data",
        "load_dataset",
        "make_recommender",
        "naive",
        "rating_matrix",
        "run_e1",
        "run_e2",
        "run_e3",
        "run_e4",
        "run_e5",
        "run_e6",
        "run_rng",
        "sampling_weights",
        "snips",
        "split_e1",
        "split_e2",
        "summarise",
        "top_k",
        "tune_recommender",
    }
    assert old | {"run", "register_recommender"} <= set(api.__all__)
    assert all(hasattr(api, name) for name in api.__all__)


@pytest.mark.parametrize("experiment", EXPERIMENTS)
@pytest.mark.slow
def test_run_and_its_alias_agree_on_synthetic(experiment):
    """The same call, written either way, gives the same tables (one seed, the tiny config)."""
    config = {**TINY, "experiments": [experiment]}
    by_name = api.run(experiment, "synthetic", config, seeds=1)
    alias = getattr(api, f"run_{experiment}")("synthetic", config, seeds=[0])
    _equal(by_name, alias)


@pytest.mark.slow
def test_a_dataset_name_and_its_frames_give_the_same_tables():
    """A name is loaded as load_dataset loads it; the frames named the same give the same.
    On synthetic, seed 0 of a run by name works on its own draw (synthetic.per_seed)."""
    config = {**TINY, "experiments": ["e1", "e5"]}
    drawn = seed_config(validate_config(config), "synthetic", 0)  # seed 0's own draw
    frames = api.load_dataset("synthetic", config=config)
    # frames carry no generator: the exact TRUE row is the name's alone (e1.truth), and the
    # name is drawn afresh per seed unless synthetic.per_seed is false (one draw, as frames)
    e1_block = {**TINY.get("e1", {}), "truth": False}
    one_draw = {**TINY["synthetic"], "per_seed": False}
    _equal(
        api.run("e1", "synthetic", {**config, "e1": e1_block, "synthetic": one_draw}, seeds=1),
        api.run("e1", frames, config, seeds=1, dataset="synthetic"),
    )
    _equal(
        api.run("e5", "synthetic", config, seeds=1),
        api.run("e5", full_data(drawn["synthetic"]), config, seeds=1, dataset="synthetic"),
    )
    truth = synthetic_truth(drawn["synthetic"])
    _equal(api.run("e3", "synthetic", config, seeds=1), api.run("e3", truth, config, seeds=1))


@pytest.mark.slow
def test_e5_takes_the_whole_config_like_e1():
    """The call of the issue: a whole-config mapping with an e5 block, and seeds."""
    out = api.run_e5("synthetic", {**TINY, "e5": {**TINY["e5"], "ks": [5]}}, seeds=2)
    assert set(out["estimates"]["k"]) == {5} and set(out["per_seed"]["seed"]) == {0, 1}


def test_wrong_experiment_and_data_are_one_line_errors():
    with pytest.raises(ValueError, match=r"^unknown experiment 'e9'; known: e1, e2"):
        api.run("e9", "synthetic")
    with pytest.raises(TypeError, match=r"^E1 data must be a dataset name, an interactions"):
        api.run("e1", [1, 2, 3])
    with pytest.raises(ValueError, match=r"^E5 .*'ml-100k'"):
        api.run_e5("ml-100k")


@pytest.mark.realdata
@pytest.mark.slow
def test_run_e5_on_coat_by_name(monkeypatch, tmp_path):
    if not os.environ.get("DEBIASEVAL_MIRROR"):
        pytest.skip("DEBIASEVAL_MIRROR not set: no local copy of the Coat dataset")
    monkeypatch.setenv(DATA_ENV, str(tmp_path / "cache"))
    models = {"pospop": {"algorithm": "pospop"}, "itemknn": {"algorithm": "itemknn"}}
    out = api.run_e5("coat", {"e5": {"ks": [10], "models": models}}, seeds=2)
    estimates = out["estimates"]
    assert set(estimates["model"]) == {"pospop", "itemknn"} and (estimates["n_seeds"] == 2).all()
    assert estimates["true_recall"].isna().all() and estimates["ure"].notna().all()


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_an_experiment_s_own_run_takes_only_a_validated_config(experiment):
    import importlib

    module = importlib.import_module(f"debiaseval.experiments.{experiment}")
    with pytest.raises(ValueError, match=rf"^{experiment}\.run takes a validated .*api\.run"):
        module.run("synthetic", {experiment: {"seeds": 1}})  # partial: api.run validates it


@pytest.mark.slow
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_a_run_reports_its_stages_on_stderr_unless_told_not_to(experiment, capsys):
    """Issue 43, case 20: the API was silent for 20-90 s a run; each stage is now one line on
    stderr (as RecBole and Cornac report), and progress=False silences them."""
    config = {**TINY, "experiments": [experiment]}
    api.run(experiment, "synthetic", config, seeds=2)
    lines = capsys.readouterr().err.splitlines()
    prefix = f"debiaseval: {experiment} on synthetic: "
    stages = [
        line.removeprefix(prefix).rsplit(" [", 1)[0] for line in lines if line.startswith(prefix)
    ]
    assert stages[0] == "checking the config" and stages[-1] == "done", lines
    assert "aggregating" in stages, lines
    if experiment != "e5":  # E5 exposes its seeds at once, then evaluates model by model
        assert "seed 0 (1 of 2)" in stages and "seed 1 (2 of 2)" in stages, lines
    else:
        assert "evaluating PosPop" in stages, lines
    assert all(line.endswith(" s]") for line in lines if line.startswith(prefix))
    api.run(experiment, "synthetic", config, seeds=1, progress=False)
    assert "debiaseval:" not in capsys.readouterr().err
