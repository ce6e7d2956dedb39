"""Adapter: merge a recommender's tuning chunks, select the best point, keep its lists."""

from debiaseval.experiments.e1 import select_step
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    tuning = select_step(
        snakemake.input.tuning,
        snakemake.input.recs,
        tuning_out=snakemake.output.tuning,
        recs_out=snakemake.output.recs,
        what=f"the grid of {p.recommender} on {p.dataset}, seed {p.seed}",
    )
    log.info("%s tuning:\n%s", p.recommender, tuning.to_string())
