"""Adapter: aggregate every seed's and model's E4 test errors into the summary."""

from pathlib import Path

from debiaseval.experiments.e4 import E4Aggregate
from debiaseval.experiments.e4.tables import aggregate, summary_markdown, summary_title
from debiaseval.experiments.e4.verdict import e4_verdict
from debiaseval.experiments.verdicts import verdict_markdown, with_verdict
from debiaseval.io.files import read_parquet
from debiaseval.workflow.provenance import record_run, write_markdown, write_table
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    prov = record_run(p.provenance, snakemake.output.provenance)  # also provenance.json
    step = E4Aggregate.from_params(p.step)
    tables = aggregate(
        [read_parquet(path) for path in snakemake.input.errors],
        [read_parquet(path) for path in snakemake.input.losses],
        step,
    )
    write_table(tables["errors"], snakemake.output.errors, prov)
    write_table(tables["summary"], snakemake.output.summary, prov)
    write_table(tables["pair_tests"], snakemake.output.pair_tests, prov)
    title = summary_title(p.dataset)
    md = summary_markdown(
        tables["summary"], title=title, alpha=step.alpha, tests=tables["pair_tests"]
    )
    verdict = verdict_markdown(
        e4_verdict(tables["summary"], tables["pair_tests"], dataset=p.dataset, alpha=step.alpha)
    )
    write_markdown(verdict, snakemake.output.verdict_md, prov)
    write_markdown(with_verdict(md, verdict), snakemake.output.summary_md, prov)
    log.info("aggregated %d error rows", len(tables["errors"]))
    publish_report("e4", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
