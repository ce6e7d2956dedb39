"""Adapter: draw one intervened test set from the held-out part, with its diagnostics."""

from debiaseval.experiments.e1 import testset_step
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    sample, diagnostics = testset_step(
        read_parquet(snakemake.input.split),
        p.testset,
        p.spec,
        rho=p.rho,
        dataset=p.dataset,
        seed=p.seed,
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
        positive_threshold=p.positive_threshold,
        allow_empty=p.allow_empty,
    )
    log.info("%s:\n%s", p.testset, diagnostics.to_string())
    write_parquet(sample, snakemake.output.testset)
    write_parquet(diagnostics, snakemake.output.diagnostics)
