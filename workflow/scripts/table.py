"""Adapter: render one aggregated Parquet table as a standalone HTML page for the report."""

from debiaseval.workflow.io import read_parquet, write_text
from debiaseval.workflow.report import html_table
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    frame = read_parquet(snakemake.input[0])
    write_text(html_table(frame, snakemake.params.title), snakemake.output[0])
    log.info("rendered %d rows", len(frame))
