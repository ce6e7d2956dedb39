"""Adapter: one E2 method's hidden set H and test set T, drawn from their pools."""

from debiaseval.experiments.e2 import sample_step
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    hidden, test = sample_step(
        read_parquet(snakemake.input.split),
        p.method,
        rho=p.rho,
        dataset=p.dataset,
        seed=p.seed,
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
    )
    log.info("H: %d pairs, T: %d pairs", len(hidden), len(test))
    write_parquet(hidden, snakemake.output.hidden)
    write_parquet(test, snakemake.output.test)
