"""Each step is told what it reads: one typed config per step (experiments/step_config.py),
and no function of experiments/ with more than :data:`MAX_PARAMETERS` parameters."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from debiaseval.experiments import e1, e2, e3, e4, e5, e6
from debiaseval.experiments.step_config import StepConfig, plain
from debiaseval.workflow.config import validate_config

EXPERIMENTS = Path(__file__).resolve().parents[1] / "src" / "debiaseval" / "experiments"
MAX_PARAMETERS = 12
"""The most parameters a function of experiments/ takes (issue 44)."""

STEPS: list[tuple[type[StepConfig], str]] = [
    (e1.E1Data, "e1"),
    (e1.E1Split, "e1"),
    (e1.E1Intervene, "e1"),
    (e1.E1Train, "e1"),
    (e1.E1External, "e1"),
    (e1.E1Impute, "e1"),
    (e1.E1Evaluate, "e1"),
    (e1.E1Truth, "e1"),
    (e1.E1Aggregate, "e1"),
    (e2.E2Split, "e2"),
    (e2.E2Sample, "e2"),
    (e2.E2Train, "e2"),
    (e2.E2Elicit, "e2"),
    (e2.E2Evaluate, "e2"),
    (e2.E2Aggregate, "e2"),
    (e3.E3Simulate, "e3"),
    (e3.E3Aggregate, "e3"),
    (e4.E4Propensities, "e4"),
    (e4.E4Fit, "e4"),
    (e4.E4Aggregate, "e4"),
    (e5.E5Expose, "e5"),
    (e5.E5Evaluate, "e5"),
    (e5.E5Aggregate, "e5"),
    (e6.E6Evaluate, "e6"),
    (e6.E6Aggregate, "e6"),
]
"""Every step config and the experiment whose validated config builds it."""


def parameter_counts() -> dict[str, int]:
    """``path:line name`` of every function of experiments/ and its number of parameters."""
    counts = {}
    for path in sorted(EXPERIMENTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                n += (a.vararg is not None) + (a.kwarg is not None)
                counts[f"{path.relative_to(EXPERIMENTS)}:{node.lineno} {node.name}"] = n
    return counts


def test_no_function_of_experiments_takes_more_than_twelve_parameters() -> None:
    over = {name: n for name, n in parameter_counts().items() if n > MAX_PARAMETERS}
    assert not over, f"give these a step config (experiments/step_config.py): {over}"


@pytest.mark.parametrize(("step", "experiment"), STEPS, ids=lambda s: getattr(s, "__name__", s))
def test_a_step_config_round_trips_through_plain_json(step, experiment) -> None:
    config = validate_config({}, experiment)
    extra = {"model": next(iter(config["e5"]["models"]))} if step is e5.E5Evaluate else {}
    built = step.of(config, "synthetic", **extra)
    params = built.params()
    assert json.loads(json.dumps(params)) == params
    assert step.from_params(params) == built
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.__setattr__(dataclasses.fields(step)[0].name, None)


def test_plain_refuses_what_json_cannot_hold() -> None:
    assert plain({"a": (1, [2.0, None]), 3: True}) == {"a": [1, [2.0, None]], "3": True}
    with pytest.raises(TypeError, match="plain JSON"):
        plain({"a": {1, 2}})


def test_an_aggregate_step_is_given_only_what_it_reads() -> None:
    base = validate_config({}, "e1")
    other = validate_config(
        {"e1": {"tuning": {"points_per_job": 7}, "bootstrap": {"resamples": 10}}}, "e1"
    )
    assert e1.E1Aggregate.of(other, "coat") == e1.E1Aggregate.of(base, "coat")
    assert e1.E1Train.of(other, "coat") != e1.E1Train.of(base, "coat")
