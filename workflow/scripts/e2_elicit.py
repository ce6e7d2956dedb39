"""Adapter: the ratings every strategy elicits from each method's H for the active users."""

from debiaseval.experiments.e2 import E2Elicit, elicit_step
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    split = read_parquet(snakemake.input.split)
    active = read_parquet(snakemake.input.active)
    hidden = dict(zip(p.methods, map(read_parquet, snakemake.input.hidden), strict=True))
    tuning = read_parquet(snakemake.input.tuning)
    sizes = index_sizes(snakemake.input.user_index, snakemake.input.item_index)
    n_active = len(active)
    step = E2Elicit.from_params(p.step)
    paths = iter(snakemake.output)  # strategy by strategy, every method (the rule's order)
    for strategy in p.strategies:
        elicited = elicit_step(
            split,
            active,
            hidden,
            tuning,
            strategy,
            step,
            dataset=p.dataset,
            seed=p.seed,
            **sizes,
        )
        for (method, pairs), path in zip(elicited.items(), paths, strict=False):
            log.info("%s/%s: %d ratings of %d active users", method, strategy, len(pairs), n_active)
            write_parquet(pairs, path)
