"""Adapter: one run of E6 on one dataset (snapshots, KL weights, leave-one-out scores)."""

from debiaseval.experiments.e6 import E6Evaluate, run_seed
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    inputs = snakemake.input
    step = E6Evaluate.from_params(p.step)
    if p.dataset == "synthetic":
        tables = run_seed(p.dataset, p.seed, step, synthetic=p.synthetic)
    else:
        tables = run_seed(
            p.dataset,
            p.seed,
            step,
            synthetic={},
            interactions=read_parquet(inputs.interactions),
            **index_sizes(inputs.user_index, inputs.item_index),
        )
    for row in tables["snapshots"].itertuples():
        log.info(
            "t%d: %d interactions, %d users, %d items",
            row.t,
            row.n_interactions,
            row.n_users,
            row.n_items,
        )
    for name, frame in tables.items():
        write_parquet(frame, snakemake.output[name])
