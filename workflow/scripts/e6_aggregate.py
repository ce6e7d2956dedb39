"""Adapter: stack the seeds' E6 tables and write the score-vs-t table in Markdown."""

from pathlib import Path

from debiaseval.experiments.e6 import TABLES, aggregate, markdown
from debiaseval.workflow.io import read_parquet, write_parquet, write_text
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    runs = [
        {table: read_parquet(snakemake.input[f"{table}_{seed}"]) for table in TABLES}
        for seed in p.seeds
    ]
    tables = aggregate(runs, min_users=p.min_users)
    for name, frame in tables.items():
        write_parquet(frame, snakemake.output[name])
    write_text(markdown(tables["scores"], p.dataset), snakemake.output.markdown)
    log.info("%d seeds, %d score rows", len(runs), len(tables["scores"]))
    publish_report("e6", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
