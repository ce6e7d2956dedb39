"""Adapter: one seed of E4's training pairs with their propensities, and the test pairs."""

from debiaseval.experiments import e4
from debiaseval.io.files import write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    data = e4.read_learning_data(p.dataset, snakemake.input, synthetic=p.synthetic)
    pairs = e4.prepare(data, e4.E4Propensities.from_params(p.step), p.seed)
    write_parquet(pairs, snakemake.output.pairs)
    log.info("%s seed %d: %s", p.dataset, p.seed, pairs["part"].value_counts().to_dict())
