"""Adapter: the exact TRUE rows of one seed from the dataset's full rating matrix (synthetic's
generator, jester5k-semi's real block), and their per-user values for the scoreboard."""

from debiaseval.data.ids import raw_ids
from debiaseval.datasets.truth import full_rating_rows_of
from debiaseval.experiments.e1 import E1Truth, truth_step
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    users = read_parquet(snakemake.input.user_index)
    items = read_parquet(snakemake.input.item_index)
    table, per_user = truth_step(
        read_parquet(snakemake.input.split),
        dict(zip(p.recommenders, map(read_parquet, snakemake.input.recs), strict=True)),
        E1Truth.from_params(p.step),
        rating_rows=full_rating_rows_of(p.dataset, p.generator, snakemake.input.get("raw")),
        raw_users=raw_ids(users, "user", len(users)),
        raw_items=raw_ids(items, "item", len(items)),
        seed=p.seed,
    )
    log.info("\n%s", table.to_string())
    write_parquet(table, snakemake.output.truth)
    write_parquet(per_user, snakemake.output.truth_per_user)
