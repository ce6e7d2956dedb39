"""Adapter: tune one recommender on MAR val and write its top-k lists."""

from debiaseval.experiments.e1 import tune_and_rank
from debiaseval.io import read_parquet, write_parquet
from debiaseval.runtime import job
from debiaseval.splits import run_rng

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    recs, tuning = tune_and_rank(
        split[split["part"] == "train"],
        split[split["part"] == "val"],
        n_users=len(read_parquet(snakemake.input.user_index, columns=["user"])),
        n_items=len(read_parquet(snakemake.input.item_index, columns=["item"])),
        algorithm=p.spec["algorithm"],
        params=p.spec["params"],
        grid=p.spec["grid"],
        tuning_metric=p.tuning["metric"],
        tuning_k=p.tuning["k"],
        ks=p.ks,
        positive_threshold=p.positive_threshold,
        batch_size=p.batch_size,
        seed=int(run_rng(p.seed, p.dataset, "train", p.recommender).integers(2**31 - 1)),
    )
    log.info("%s tuning:\n%s", p.recommender, tuning.to_string())
    write_parquet(recs, snakemake.output.recs)
    write_parquet(tuning, snakemake.output.tuning)
