"""Adapter: the model imputation of one dr estimator of one seed (logistic_mf)."""

from debiaseval.experiments.e1 import (
    E1Impute,
    estimator_features,
    estimator_truth,
    impute_step,
)
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    users = read_parquet(snakemake.input.user_index)
    items = read_parquet(snakemake.input.item_index)
    block = {"estimators": {snakemake.wildcards.estimator: p.spec}}
    frame = impute_step(
        read_parquet(snakemake.input.split),
        p.spec,
        E1Impute.from_params(p.step),
        seed=p.seed,
        n_users=len(users),
        n_items=len(items),
        features=estimator_features(block, users, items),
        truth=estimator_truth(
            block, p.dataset, p.synthetic, users, items, snakemake.input.get("raw")
        ),
    )
    log.info(
        "fitted %s on %d users and %d items", snakemake.wildcards.estimator, len(users), len(items)
    )
    write_parquet(frame, snakemake.output[0])
