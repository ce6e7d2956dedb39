"""Rule params tracked by a short digest (docs/report.md#rule-params): the digest changes
exactly when the mapping's text does, so Snakemake reruns exactly the jobs it did before, and
its "Params have changed" line stays short."""

from __future__ import annotations

import pickle

from debiaseval.workflow.params import DIGEST_HEX, Digested, digest, job_params


def test_the_digest_follows_the_plain_repr_exactly() -> None:
    block = {"rho": 0.5, "testsets": {"WTD": {"strategy": "wtd"}}, "ks": [10]}
    shown = Digested(block)
    assert repr(shown) == digest(repr(block))
    assert len(repr(shown)) == len("sha256:") + DIGEST_HEX
    assert repr(Digested(dict(block))) == repr(shown)  # the same block, the same digest
    for changed in ({**block, "rho": 0.4}, {**block, "ks": [10, 20]}, {**block, "rho": 1}):
        assert repr(Digested(changed)) != repr(shown)  # 0.5 -> 0.4, a list, 0.5 -> 1
    assert repr(Digested({**block, "extra": None})) != repr(shown)


def test_a_big_block_is_a_short_param_but_the_job_gets_all_of_it() -> None:
    block = {f"key{i}": {"grid": list(range(50)), "name": "x" * 40} for i in range(40)}
    params = job_params(block=block, seed=lambda w: int(w), dataset="{dataset}", ks=[5, 10])
    assert len(repr(params["block"])) < 20 < 10_000 < len(repr(block))
    assert params["dataset"] == "{dataset}" and params["ks"] == [5, 10]  # wildcards still apply
    assert params["seed"]("3") == 3
    received = pickle.loads(pickle.dumps(params["block"]))
    assert type(received) is dict and received == block
    assert str(params["block"]) == repr(block)  # the report shows the whole block
