"""Adapter: tune one chunk of a recommender's grid on MAR val; write its rows and best lists."""

from debiaseval.experiments.e1 import tune_step
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    tuning, recs = tune_step(
        read_parquet(snakemake.input.split),
        p.recommender,
        p.spec,
        chunk=p.chunk,
        tuning=p.tuning,
        ks=p.ks,
        positive_threshold=p.positive_threshold,
        batch_size=p.batch_size,
        dataset=p.dataset,
        seed=p.seed,
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
    )
    log.info("%s chunk %d:\n%s", p.recommender, p.chunk, tuning.to_string())
    write_parquet(tuning, snakemake.output.tuning)
    write_parquet(recs, snakemake.output.recs)
