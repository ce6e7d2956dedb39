"""Adapter: draw one intervened test set from the held-out part, with its diagnostics."""

from debiaseval.experiments.e1 import testset_diagnostics
from debiaseval.interventions import TestSetSpec, intervene, sampling_weights
from debiaseval.io import read_parquet, write_parquet
from debiaseval.runtime import job
from debiaseval.splits import run_rng

with job(snakemake.log[0]) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    space = split[split["part"] == "heldout"].reset_index(drop=True)
    spec = TestSetSpec(name=p.testset, **p.spec)
    sizes = {
        "n_users": len(read_parquet(snakemake.input.user_index, columns=["user"])),
        "n_items": len(read_parquet(snakemake.input.item_index, columns=["item"])),
    }
    weights = sampling_weights(
        space,
        spec,
        train=split[split["part"] == "train"],
        mar_weights=split[split["part"] == "weights"],
        **sizes,
    )
    sample = intervene(
        space,
        spec,
        rho=p.rho,
        rng=run_rng(p.seed, p.dataset, "intervene", p.testset),
        weights=weights,
        **sizes,
    )
    diagnostics = testset_diagnostics(
        p.testset, sample, space, weights, split[split["part"] == "gt"], **sizes
    )
    diagnostics.insert(0, "seed", p.seed)
    log.info("%s:\n%s", p.testset, diagnostics.to_string())
    write_parquet(sample, snakemake.output.testset)
    write_parquet(diagnostics, snakemake.output.diagnostics)
