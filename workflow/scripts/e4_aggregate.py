"""Adapter: aggregate every seed's and model's E4 test errors into the summary."""

from pathlib import Path

from debiaseval.experiments import e4
from debiaseval.workflow.io import read_parquet, write_parquet, write_text
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    tables = e4.aggregate(
        [read_parquet(path) for path in snakemake.input.errors],
        [read_parquet(path) for path in snakemake.input.losses],
    )
    write_parquet(tables["errors"], snakemake.output.errors)
    write_parquet(tables["summary"], snakemake.output.summary)
    write_parquet(tables["pair_tests"], snakemake.output.pair_tests)
    title = e4.summary_title(p.dataset)
    md = e4.summary_markdown(tables["summary"], title=title, alpha=p.alpha,
                             tests=tables["pair_tests"])  # fmt: skip
    write_text(md, snakemake.output.summary_md)
    log.info("aggregated %d error rows", len(tables["errors"]))
    publish_report("e4", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
