"""Adapter: E2 split of the MNAR part into known/hidden_pool/test_pool, and the active users."""

from debiaseval.experiments.e2 import E2Split, split_step
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    split, active = split_step(
        read_parquet(snakemake.input.interactions),
        E2Split.from_params(p.step),
        dataset=p.dataset,
        seed=p.seed,
    )
    log.info("parts: %s; %d active users", split["part"].value_counts().to_dict(), len(active))
    write_parquet(split, snakemake.output.split)
    write_parquet(active, snakemake.output.active)
