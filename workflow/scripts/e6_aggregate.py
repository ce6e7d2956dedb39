"""Adapter: stack the seeds' E6 tables and write the score-vs-t table in Markdown."""

from pathlib import Path

from debiaseval.experiments.e6 import TABLES, E6Aggregate, aggregate, markdown
from debiaseval.experiments.e6.verdict import e6_verdict
from debiaseval.experiments.verdicts import verdict_markdown, with_verdict
from debiaseval.io.files import read_parquet
from debiaseval.workflow.provenance import record_run, write_markdown, write_table
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    prov = record_run(p.provenance, snakemake.output.provenance)  # also provenance.json
    runs = [
        {table: read_parquet(snakemake.input[f"{table}_{seed}"]) for table in TABLES}
        for seed in p.seeds
    ]
    tables = aggregate(runs, E6Aggregate.from_params(p.step))
    for name, frame in tables.items():
        write_table(frame, snakemake.output[name], prov)
    verdict = verdict_markdown(e6_verdict(tables["scores"], tables["snapshots"], dataset=p.dataset))
    write_markdown(verdict, snakemake.output.verdict_md, prov)
    md = with_verdict(markdown(tables["scores"], p.dataset), verdict)
    write_markdown(md, snakemake.output.markdown, prov)
    log.info("%d seeds, %d score rows", len(runs), len(tables["scores"]))
    publish_report("e6", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
