"""Adapter: the exact TRUE rows of one seed from synthetic's full rating matrix, and their
per-user values for the scoreboard."""

from debiaseval.experiments.e1 import raw_ids, truth_step
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    table, per_user = truth_step(
        read_parquet(snakemake.input.split),
        dict(zip(p.recommenders, map(read_parquet, snakemake.input.recs), strict=True)),
        synthetic=p.synthetic,
        raw_users=raw_ids(read_parquet(snakemake.input.user_index), "user"),
        raw_items=raw_ids(read_parquet(snakemake.input.item_index), "item"),
        seed=p.seed,
        ks=p.ks,
        metrics=p.metrics,
        positive_threshold=p.positive_threshold,
    )
    log.info("\n%s", table.to_string())
    write_parquet(table, snakemake.output.truth)
    write_parquet(per_user, snakemake.output.truth_per_user)
