"""Adapter: metrics of one recommender on gt and every intervened test set."""

from debiaseval.experiments.e1 import evaluate_on_testsets
from debiaseval.io import read_parquet, write_parquet
from debiaseval.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    testsets = {"gt": split[split["part"] == "gt"]}
    testsets |= {
        name: read_parquet(path)
        for name, path in zip(p.testsets, snakemake.input.testsets, strict=True)
    }
    metrics = evaluate_on_testsets(
        read_parquet(snakemake.input.recs),
        testsets,
        split[split["part"] == "train"],
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
        ks=p.ks,
        metrics=p.metrics,
        positive_threshold=p.positive_threshold,
        drop_train_overlap=p.drop_train_overlap,
    )
    metrics.insert(0, "seed", p.seed)
    metrics.insert(0, "recommender", p.recommender)
    log.info("\n%s", metrics.to_string())
    write_parquet(metrics, snakemake.output[0])
