"""Config validation: defaults filled, bad values rejected with the key named."""

import pytest

from debiaseval.io.errors import ConfigError
from debiaseval.io.schema import coerce_strings, expand_grid, load_schema
from debiaseval.workflow.config import validate_config


def test_defaults_are_filled():
    config = validate_config({})
    assert config["datasets"] == ["synthetic"]
    assert config["e1"]["rho"] == 0.5
    assert set(config["e1"]["testsets"]) == {"FULL", "REG", "SKEW", "WTD", "WTD_H"}
    assert config["e1"]["testsets"]["WTD"]["item_exponent"] == 2.0
    assert config["e1"]["testsets"]["WTD_H"]["mar_posterior"] == "uniform"
    assert config["sources"]["coat"] == {"path": None, "url": None}
    assert config["resources"]["train"]["threads"] >= 1


def test_experiment_blocks_inherit_datasets_and_seeds():
    config = validate_config({"datasets": ["coat", "ml-100k"], "seeds": 3})
    assert config["experiments"][0] == "e1"
    assert config["e1"]["datasets"] == ["coat"]  # the top-level datasets E1 can run on
    assert config["e1"]["seeds"] == 3
    own = validate_config({"seeds": 3, "e1": {"datasets": ["yahoo-r3"], "seeds": 1}})
    assert own["e1"]["datasets"] == ["yahoo-r3"]
    assert own["e1"]["seeds"] == 1


def test_input_is_not_mutated():
    raw = {"e1": {"rho": 0.3}}
    validate_config(raw)
    assert raw == {"e1": {"rho": 0.3}}


def _walk(schema, path=""):
    for key, sub in schema.get("properties", {}).items():
        yield f"{path}{key}", sub
        yield from _walk(sub, f"{path}{key}.")


def test_every_key_has_description_and_default():
    schema = load_schema()
    for path, sub in _walk(schema):
        if "$ref" in sub:
            continue
        assert "description" in sub, path
        assert "default" in sub, path


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"bogus": 1}, "'bogus'"),
        ({"e1": {"rho": 1.5}}, "'e1.rho'"),
        ({"e1": {"rho": 0}}, "'e1.rho'"),
        ({"e1": {"rho": "half"}}, "'e1.rho'"),
        ({"seeds": "ten"}, "'seeds'"),
        ({"seeds": 0}, "'seeds'"),
        ({"datasets": ["netflix"]}, "'datasets.0'"),
        ({"e1": {"datasets": ["coat", "ml-100k"]}}, "'e1.datasets.1'"),
        ({"e1": {"datasets": ["coat", "netflix"]}}, "'e1.datasets.1'"),
        ({"experiments": ["e99"]}, "'experiments.0'"),
        ({"e1": {"unknown": True}}, "'e1.unknown'"),
        ({"e1": {"testsets": {"X": {"strategy": "nope"}}}}, "'e1.testsets.X.strategy'"),
        ({"e1": {"testsets": {"gt": {"strategy": "reg"}}}}, "'e1.testsets'"),
        ({"e1": {"mnar_split": {"train": 0.5, "heldout": 0.4}}}, "'e1.mnar_split'"),
        (
            {"e1": {"recommenders": {"K": {"algorithm": "userknn", "grid": {"kk": [1]}}}}},
            "'e1.recommenders.K'",
        ),
        ({"sources": {"coat": {"pth": "/x"}}}, "'sources.coat.pth'"),
    ],
)
def test_bad_config_names_the_key(config, key):
    with pytest.raises(ConfigError) as info:
        validate_config(config)
    message = str(info.value)
    assert "\n" not in message
    assert key in message


def test_expand_grid_order():
    assert expand_grid({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert expand_grid({}) == [{}]


def test_only_checks_the_named_experiment():
    """A run_eN config is checked as one that runs only eN: a tiny synthetic dataset that
    E3's default MAR sizes exceed is fine for E6 (the CI failure of an earlier submission)."""
    small = {"synthetic": {"n_users": 80, "n_items": 50, "density": 0.1, "seed": 0}}
    with pytest.raises(ConfigError, match=r"e3\.mar_sizes"):
        validate_config(small)
    assert validate_config(small, "e6")["experiments"] == ["e6"]
    assert validate_config(small, only=())["experiments"] == []


def test_config_strings_from_snakemake_are_coerced():
    # What Snakemake's --config 'e1={rho: 0.4, drop_train_overlap: true}' passes: strings.
    config = validate_config(
        {
            "seeds": "3",
            "mirror": "123",
            "e1": {"rho": "0.4", "drop_train_overlap": "true", "tuning": {"k": "5"}},
            "e6": {"snapshots": "3", "active_items": ["20", "all"]},
        }
    )
    assert config["seeds"] == 3
    assert config["mirror"] == "123"  # a string where the schema wants one stays a string
    assert config["e1"]["rho"] == 0.4
    assert config["e1"]["drop_train_overlap"] is True
    assert config["e1"]["tuning"]["k"] == 5
    assert config["e6"]["snapshots"] == 3
    assert config["e6"]["active_items"] == [20, "all"]


def test_coerce_strings_parses_whole_blocks_and_leaves_garbage_to_validation():
    schema = load_schema()
    coerced = coerce_strings({"e1": "{rho: 0.25, seeds: 2}", "datasets": "[coat]"}, schema)
    assert coerced == {"e1": {"rho": 0.25, "seeds": 2}, "datasets": ["coat"]}
    with pytest.raises(ConfigError, match=r"at 'e1.rho': 'abc' is not of type 'number'"):
        validate_config({"e1": {"rho": "abc"}})


def test_the_shared_recommender_keys_have_descriptions_and_defaults():
    schema = load_schema()
    for key, sub in schema["$defs"]["recommender"]["properties"].items():
        assert "description" in sub, key
        assert key == "algorithm" or "default" in sub, key


@pytest.mark.parametrize(
    ("e1", "key"),
    [
        ({"kendall_groups": {"MF": ["Nope"]}}, "'e1.kendall_groups.MF.0'"),
        ({"kendall_groups": {"2x": []}}, "'e1.kendall_groups'"),
        ({"kendall_groups": {}}, "'e1.kendall_groups'"),
    ],
)
def test_bad_kendall_groups_name_the_key(e1, key):
    with pytest.raises(ConfigError) as info:
        validate_config({"e1": e1})
    assert key in str(info.value) and "\n" not in str(info.value)


def test_kendall_groups_default_to_the_mf_recommenders():
    from debiaseval.experiments.e1 import kendall_groups

    block = validate_config({})["e1"]
    assert block["kendall_groups"] is None and kendall_groups(block) == {"MF": ["MF"]}
    mine = {"MF": ["MF"], "NEIGHBOURS": ["UserKNN", "ItemKNN"]}
    assert kendall_groups(validate_config({"e1": {"kendall_groups": mine}})["e1"]) == mine


def test_defaults_behind_a_ref_are_filled_where_snakemakes_validate_leaves_them(tmp_path):
    """Why the workflow validates with jsonschema itself (config/README.md, docs/configuration.md):
    `snakemake.utils.validate` fills only a default written beside its key, so E2's `resources`
    (a `$ref` to the shared block) stays out; ours fills it."""
    import yaml
    from snakemake.utils import validate

    schema = tmp_path / "config.schema.yaml"
    schema.write_text(yaml.safe_dump(load_schema()))
    theirs: dict = {}
    validate(theirs, str(schema))
    assert "rho" in theirs["e2"] and "resources" not in theirs["e2"]
    assert validate_config({})["e2"]["resources"] == {"threads": 1, "mem_mb": None, "runtime": None}
