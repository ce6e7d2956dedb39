"""Adapter: raw dataset files, a user's own rating log (or the synthetic generator) ->
canonical Parquet."""

from debiaseval.data.filters import part_sizes
from debiaseval.datasets.build import build_dataset
from debiaseval.io.files import write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    interactions, users, items, tuning = build_dataset(
        p.dataset,
        snakemake.input.get("raw"),
        generator=p.generator,
        semisynthetic=p.semisynthetic,
        own=p.own,
    )
    if tuning is not None:
        log.info("MF completion grid (0/1 accuracy on 10%%):\n%s", tuning.to_string())
    log.info(
        "%s: %d interactions, %d users, %d items; per part:\n%s",
        p.dataset,
        len(interactions),
        len(users),
        len(items),
        part_sizes(interactions).to_string(index=False),
    )
    write_parquet(interactions, snakemake.output.interactions)
    write_parquet(users, snakemake.output.user_index)
    write_parquet(items, snakemake.output.item_index)
