"""Adapter: the ratings one strategy elicits from each method's H for the active users."""

from debiaseval.experiments.e2 import elicit_step
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    active = read_parquet(snakemake.input.active)
    elicited = elicit_step(
        read_parquet(snakemake.input.split),
        active,
        dict(zip(p.methods, map(read_parquet, snakemake.input.hidden), strict=True)),
        read_parquet(snakemake.input.tuning),
        p.strategy,
        spec=p.mf,
        tuning=p.tuning,
        positive_threshold=p.positive_threshold,
        n_asked=p.n_asked,
        batch_size=p.batch_size,
        dataset=p.dataset,
        seed=p.seed,
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
    )
    for (method, pairs), path in zip(elicited.items(), snakemake.output, strict=True):
        log.info("%s/%s: %d ratings, %d active users", method, p.strategy, len(pairs), len(active))
        write_parquet(pairs, path)
