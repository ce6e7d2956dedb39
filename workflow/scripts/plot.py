"""Adapter: draw one report figure of one experiment from its aggregated tables."""

from debiaseval.figures import render
from debiaseval.workflow.io import read_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    tables = {stem: read_parquet(path) for stem, path in snakemake.input.items()}
    render(p.experiment, p.figure, tables, p.dataset, snakemake.output.svg, snakemake.output.png)
    log.info("wrote %s and %s", snakemake.output.svg, snakemake.output.png)
