"""Adapter: per strategy, retrain MF on K_before + elicited per method; per-user metrics on T
before and after."""

from debiaseval.experiments.e2 import E2Evaluate, evaluate_step
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    active = read_parquet(snakemake.input.active)
    test = dict(zip(p.methods, map(read_parquet, snakemake.input.test), strict=True))
    tuning = read_parquet(snakemake.input.tuning)
    recs = read_parquet(snakemake.input.recs)
    sizes = index_sizes(snakemake.input.user_index, snakemake.input.item_index)
    step = E2Evaluate.from_params(p.step)
    elicited = iter(snakemake.input.elicited)  # strategy by strategy, every method
    for strategy, path in zip(p.strategies, snakemake.output, strict=True):
        changes = evaluate_step(
            split,
            active,
            test,
            {method: read_parquet(next(elicited)) for method in p.methods},
            tuning,
            recs,
            step,
            dataset=p.dataset,
            seed=p.seed,
            strategy=strategy,
            **sizes,
        )
        log.info("%s: %d per-user rows", strategy, len(changes))
        write_parquet(changes, path)
