"""Adapter: E5 seed means, ranks and agreement with the truth (Parquet + Markdown)."""

from pathlib import Path

import pandas as pd

from debiaseval.experiments.e5 import E5Aggregate, aggregate_step
from debiaseval.experiments.e5.tables import agreement_markdown, estimates_markdown
from debiaseval.experiments.e5.verdict import e5_verdict
from debiaseval.experiments.verdicts import verdict_markdown, with_verdict
from debiaseval.io.files import read_parquet
from debiaseval.workflow.provenance import record_run, write_markdown, write_table
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    prov = record_run(p.provenance, snakemake.output.provenance)  # also provenance.json
    per_seed = pd.concat(
        [read_parquet(path) for path in snakemake.input.estimates], ignore_index=True
    )
    per_user = pd.concat(
        [read_parquet(path) for path in snakemake.input.metrics_per_user], ignore_index=True
    )
    out = aggregate_step(
        per_seed,
        per_user,
        E5Aggregate.from_params(p.step),
        dataset=p.dataset,
    )
    estimates, agreement = out["estimates"], out["agreement"]
    write_table(out["comparisons"], snakemake.output.comparisons, prov)
    write_table(estimates, snakemake.output.estimates, prov)
    write_table(agreement, snakemake.output.agreement, prov)
    verdict = verdict_markdown(e5_verdict(agreement, estimates, dataset=p.dataset))
    write_markdown(verdict, snakemake.output.verdict_md, prov)
    md = with_verdict(estimates_markdown(estimates, p.dataset), verdict)
    write_markdown(md, snakemake.output.estimates_md, prov)
    write_markdown(agreement_markdown(agreement, p.dataset), snakemake.output.agreement_md, prov)
    log.info("agreement:\n%s", agreement.to_string())
    publish_report("e5", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
