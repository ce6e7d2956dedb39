"""Adapter: draw one intervened test set from the held-out part."""

from debiaseval.interventions import TestSetSpec, intervene
from debiaseval.io import read_parquet, write_parquet
from debiaseval.runtime import job
from debiaseval.splits import run_rng

with job(snakemake.log[0]) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    sample = intervene(
        split[split["part"] == "heldout"].reset_index(drop=True),
        TestSetSpec(name=p.testset, **p.spec),
        rho=p.rho,
        rng=run_rng(p.seed, p.dataset, "intervene", p.testset),
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
        train=split[split["part"] == "train"],
        mar_weights=split[split["part"] == "weights"],
    )
    log.info(
        "%s: %d pairs, %d users, %d items",
        p.testset,
        len(sample),
        sample["user"].nunique(),
        sample["item"].nunique(),
    )
    write_parquet(sample, snakemake.output[0])
