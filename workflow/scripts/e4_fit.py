"""Adapter: one seed of one E4 model (MF-Naive or MF-IPS): CV, refit, test error."""

from debiaseval.experiments import e4
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    data = e4.read_learning_data(p.dataset, snakemake.input, synthetic=p.synthetic)
    pairs = read_parquet(snakemake.input.pairs)
    errors, cv, losses = e4.fit(data, pairs, e4.E4Fit.from_params(p.step), p.seed, p.propensity)
    write_parquet(errors, snakemake.output.errors)
    write_parquet(cv, snakemake.output.cv)
    write_parquet(losses, snakemake.output.losses)
    log.info("%s seed %d %s:\n%s", p.dataset, p.seed, p.propensity, errors.to_string())
