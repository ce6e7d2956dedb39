"""Adapter: E1 split of the interactions into train/heldout/weights/val/gt."""

from debiaseval.experiments.e1 import E1Split, split_step
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    split = split_step(
        read_parquet(snakemake.input.interactions),
        E1Split.from_params(p.step),
        dataset=p.dataset,
        seed=p.seed,
    )
    log.info("parts: %s", split["part"].value_counts().to_dict())
    write_parquet(split, snakemake.output[0])
