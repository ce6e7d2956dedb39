"""Adapter: one seed's precomputed lists, checked and ranked like a model's top-k lists."""

from debiaseval.evaluation.external_lists import read_lists
from debiaseval.experiments.e1 import E1External, lists_step
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job, warn

with job(snakemake.log[0]) as log:
    p = snakemake.params
    users = read_parquet(snakemake.input.user_index)
    items = read_parquet(snakemake.input.item_index)
    recs, notes = lists_step(
        read_lists(snakemake.input.lists),
        read_parquet(snakemake.input.split),
        E1External.from_params(p.step),
        users=users,
        items=items,
        n_users=len(users),
        n_items=len(items),
        ids=p.ids,
        on_train_items=p.on_train_items,
        source=snakemake.input.lists,
        where=p.where,
    )
    for note in notes:
        warn(log, note)
    log.info("%s: %d listed items of %d users", p.recommender, len(recs), recs["user"].nunique())
    write_parquet(recs, snakemake.output.recs)
