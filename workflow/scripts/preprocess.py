"""Adapter: raw dataset files (or the synthetic generator) -> canonical Parquet."""

from pathlib import Path

from debiaseval.datasets.loaders import load_raw
from debiaseval.datasets.preprocess import build_interactions
from debiaseval.datasets.semisynthetic import build_ml_100k_semi
from debiaseval.datasets.synthetic import generate_synthetic
from debiaseval.io import write_parquet
from debiaseval.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    if p.dataset == "ml-100k-semi":
        raw = load_raw("ml-100k", Path(snakemake.input.raw))
        interactions, users, items, tuning = build_ml_100k_semi(raw, **p.semisynthetic)
        log.info("MF completion grid (0/1 accuracy on 10%%):\n%s", tuning.to_string())
    else:
        if p.dataset == "synthetic":
            raw = generate_synthetic(**p.synthetic).to_raw()
        else:
            raw = load_raw(p.dataset, Path(snakemake.input.raw))
        interactions, users, items = build_interactions(raw)
    log.info(
        "%s: %d interactions (%s), %d users, %d items",
        p.dataset,
        len(interactions),
        interactions["part"].value_counts().to_dict(),
        len(users),
        len(items),
    )
    write_parquet(interactions, snakemake.output.interactions)
    write_parquet(users, snakemake.output.user_index)
    write_parquet(items, snakemake.output.item_index)
