"""Adapter: E5's fully exposed pairs (synthetic's full matrix, kuairec's small matrix or
jester5k's fully observed block)."""

from debiaseval.experiments.e5 import full_data, fully_exposed_frames, identity_tables
from debiaseval.io.files import write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    if p.dataset == "synthetic":
        full = full_data(p.synthetic)
        users, items = identity_tables(full)
    else:
        full, users, items = fully_exposed_frames(p.dataset, snakemake.input.raw)
    log.info("%d fully exposed pairs, %d users, %d items", len(full), len(users), len(items))
    write_parquet(full, snakemake.output.full)
    write_parquet(users, snakemake.output.user_index)
    write_parquet(items, snakemake.output.item_index)
