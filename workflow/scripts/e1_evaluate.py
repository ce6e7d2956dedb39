"""Adapter: metrics of every recommender of one seed on gt and every intervened test set."""

from debiaseval.experiments.e1 import evaluate_step
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    tables = evaluate_step(
        read_parquet(snakemake.input.split),
        dict(zip(p.recommenders, map(read_parquet, snakemake.input.recs), strict=True)),
        dict(zip(p.testsets, map(read_parquet, snakemake.input.testsets), strict=True)),
        seed=p.seed,
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
        ks=p.ks,
        metrics=p.metrics,
        positive_threshold=p.positive_threshold,
        drop_train_overlap=p.drop_train_overlap,
        resamples=p.resamples,
        level=p.confidence,
    )
    log.info("\n%s", tables["metrics"].to_string())
    for stem in ("metrics", "metrics_per_user", "comparisons"):
        write_parquet(tables[stem], snakemake.output[stem])
