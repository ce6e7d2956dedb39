"""Adapter: tune E2's MF on validation held out of K_before; its top-k lists on K_before."""

from debiaseval.experiments.e2 import E2Train, train_step
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    tuning, recs = train_step(
        read_parquet(snakemake.input.split),
        E2Train.from_params(p.step),
        dataset=p.dataset,
        seed=p.seed,
        **index_sizes(snakemake.input.user_index, snakemake.input.item_index),
    )
    log.info("MF tuning:\n%s", tuning.to_string())
    write_parquet(tuning, snakemake.output.tuning)
    write_parquet(recs, snakemake.output.recs)
