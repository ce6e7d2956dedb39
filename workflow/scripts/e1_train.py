"""Adapter: tune one chunk of a recommender's grid on MAR val; write its rows and best lists."""

from debiaseval.interactions import rating_matrix
from debiaseval.io import read_parquet, write_parquet
from debiaseval.ranking import empty_recommendations
from debiaseval.runtime import job
from debiaseval.splits import run_rng
from debiaseval.tuning import EarlyStopping, grid_chunks, tune_points

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    n_users = len(read_parquet(snakemake.input.user_index, columns=["user"]))
    n_items = len(read_parquet(snakemake.input.item_index, columns=["item"]))
    stopping = p.tuning["early_stopping"]
    tuning, recs = tune_points(
        rating_matrix(split[split["part"] == "train"], n_users, n_items),
        split[split["part"] == "val"],
        grid_chunks(p.spec["grid"], p.tuning["points_per_job"])[p.chunk],
        algorithm=p.spec["algorithm"],
        params=p.spec["params"],
        metric=p.tuning["metric"],
        k=p.tuning["k"],
        depth=max(p.ks),
        positive_threshold=p.positive_threshold,
        batch_size=p.batch_size,
        seed=int(run_rng(p.seed, p.dataset, "train", p.recommender).integers(2**31 - 1)),
        early_stopping=None if stopping is None else EarlyStopping(**stopping),
    )
    log.info("%s chunk %d:\n%s", p.recommender, p.chunk, tuning.to_string())
    write_parquet(tuning, snakemake.output.tuning)
    write_parquet(empty_recommendations() if recs is None else recs, snakemake.output.recs)
