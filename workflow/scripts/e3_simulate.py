"""Adapter: one seed of E3 (prediction matrices, true values, estimates over draws of O)."""

from debiaseval.experiments import e3
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    interactions = read_parquet(snakemake.input.interactions) if snakemake.input else None
    truth = e3.dataset_truth(p.dataset, interactions, p.synthetic)
    draws, naive_bayes = e3.simulate_seed(truth, e3.E3Simulate.from_params(p.step), p.seed)
    write_parquet(draws, snakemake.output.draws)
    write_parquet(naive_bayes, snakemake.output.naive_bayes)
    log.info(
        "%s seed %d: %d estimates on a %dx%d matrix",
        p.dataset,
        p.seed,
        len(draws),
        *truth.ratings.shape,
    )
