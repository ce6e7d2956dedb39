"""Rule params whose mappings Snakemake's params trigger sees as one short digest
(docs/report.md#rule-params): the digest changes exactly when a mapping's values or the order
of its keys do, the job gets every mapping whole, and the trigger sees no custom text."""

from __future__ import annotations

import pickle

import pytest

from debiaseval.workflow.params import (
    DIGEST_HEX,
    DIGEST_PARAM,
    Slice,
    canonical_json,
    digest,
    job_params,
)

BLOCK = {"rho": 0.5, "testsets": {"WTD": {"strategy": "wtd"}}, "ks": [10]}


def test_the_digest_follows_the_values_and_the_key_order() -> None:
    assert digest(BLOCK) == digest(dict(BLOCK))  # the same block, the same digest
    assert len(digest(BLOCK)) == len("sha256:") + DIGEST_HEX
    for changed in ({**BLOCK, "rho": 0.4}, {**BLOCK, "ks": [10, 20]}, {**BLOCK, "rho": 1}):
        assert digest(changed) != digest(BLOCK)  # 0.5 -> 0.4, a list, 0.5 -> 1
    assert digest({**BLOCK, "extra": None}) != digest(BLOCK)
    assert digest(dict(reversed(BLOCK.items()))) != digest(BLOCK)  # outputs may follow the order
    assert canonical_json({"a": [1, 2.5, None, True]}) == '{"a":[1,2.5,null,true]}'


def test_a_slice_is_no_builtin_value_and_the_digest_a_plain_string() -> None:
    params = job_params(block=BLOCK, dataset="{dataset}", ks=[5, 10])
    assert type(params["block"]) is Slice and not isinstance(params["block"], dict)
    assert type(Slice.__repr__) is type(object.__repr__)  # no text of its own for Snakemake
    assert params["dataset"] == "{dataset}" and params["ks"] == [5, 10]  # wildcards still apply
    assert params[DIGEST_PARAM]("w") == digest({"block": BLOCK})


def test_a_big_block_is_a_short_param_but_the_job_gets_all_of_it() -> None:
    block = {f"key{i}": {"grid": list(range(50)), "name": "x" * 40} for i in range(40)}
    params = job_params(block=block, seed=lambda w: int(w))
    assert len(params[DIGEST_PARAM]("3")) < 20 < 10_000 < len(repr(block))
    assert params["seed"]("3") == 3
    received = pickle.loads(pickle.dumps(params["block"]))
    assert type(received) is dict and received == block
    assert str(params["block"]) == canonical_json(block)  # the report shows the whole block


def test_the_digest_covers_what_params_functions_return_for_the_job() -> None:
    params = job_params(block=BLOCK, spec=lambda w: {"k": w}, seed=lambda w: int(w))
    assert params["spec"]("1") == {"k": "1"} and type(params["spec"]("1")) is Slice
    assert params[DIGEST_PARAM]("1") == digest({"block": BLOCK, "spec": {"k": "1"}})
    assert params[DIGEST_PARAM]("1") != params[DIGEST_PARAM]("2")


def test_a_function_deriving_from_files_is_left_out_and_other_arguments_refused() -> None:
    params = job_params(paths=lambda w, input: {"in": list(input)})
    assert params[DIGEST_PARAM]("w") == digest({})
    with pytest.raises(ValueError, match="threads"):
        job_params(block=lambda w, threads: {"n": threads})
    with pytest.raises(ValueError, match=DIGEST_PARAM):
        job_params(**{DIGEST_PARAM: "x"})
