"""Adapter: E1 split of the interactions into train/heldout/weights/val/gt."""

from debiaseval.io import read_parquet, write_parquet
from debiaseval.runtime import job
from debiaseval.splits import run_rng, split_e1

with job(snakemake.log[0]) as log:
    p = snakemake.params
    split = split_e1(
        read_parquet(snakemake.input.interactions),
        mnar_split=p.mnar_split,
        mar_split=p.mar_split,
        rng=run_rng(p.seed, p.dataset, "split"),
    )
    log.info("parts: %s", split["part"].value_counts().to_dict())
    write_parquet(split, snakemake.output[0])
