"""Adapter: retrain MF on K_before + elicited per method; per-user metrics on T before/after."""

from debiaseval.experiments.e2 import evaluate_step
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    changes = evaluate_step(
        read_parquet(snakemake.input.split),
        read_parquet(snakemake.input.active),
        dict(zip(p.methods, map(read_parquet, snakemake.input.test), strict=True)),
        dict(zip(p.methods, map(read_parquet, snakemake.input.elicited), strict=True)),
        read_parquet(snakemake.input.tuning),
        read_parquet(snakemake.input.recs),
        spec=p.mf,
        tuning=p.tuning,
        ks=p.ks,
        metrics=p.metrics,
        positive_threshold=p.positive_threshold,
        batch_size=p.batch_size,
        dataset=p.dataset,
        seed=p.seed,
        strategy=p.strategy,
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
    )
    log.info("%s: %d per-user rows", p.strategy, len(changes))
    write_parquet(changes, snakemake.output[0])
