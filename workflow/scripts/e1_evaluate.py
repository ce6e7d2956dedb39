"""Adapter: metrics of every recommender of one seed on gt, every intervened test set and
every weighting estimator, and the scoreboard's inputs."""

from debiaseval.estimation.imputation import LogisticMF
from debiaseval.experiments.e1 import (
    EVALUATE_OUTPUTS,
    E1Evaluate,
    estimator_features,
    estimator_truth,
    evaluate_step,
)
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    users = read_parquet(snakemake.input.user_index)
    items = read_parquet(snakemake.input.item_index)
    step = E1Evaluate.from_params(p.step)
    block = {"estimators": step.estimators}
    imputations = {
        name: LogisticMF.from_frame(read_parquet(path))
        for name, path in zip(p.imputed, snakemake.input.imputations, strict=True)
    }
    truth = snakemake.input.truth
    tables = evaluate_step(
        read_parquet(snakemake.input.split),
        dict(zip(p.recommenders, map(read_parquet, snakemake.input.recs), strict=True)),
        dict(zip(p.testsets, map(read_parquet, snakemake.input.testsets), strict=True)),
        step,
        seed=p.seed,
        n_items=len(items),
        n_users=len(users),
        features=estimator_features(block, users, items),
        truth=estimator_truth(
            block, p.dataset, p.synthetic, users, items, snakemake.input.get("raw")
        ),
        truth_per_user=read_parquet(truth[0]) if truth else None,
        imputations=imputations,
    )
    log.info("\n%s", tables["metrics"].to_string())
    for stem in EVALUATE_OUTPUTS:
        write_parquet(tables[stem], snakemake.output[stem])
