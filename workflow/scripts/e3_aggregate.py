"""Adapter: aggregate every seed's E3 draws into Table 1 and the RMSE tables."""

from pathlib import Path

import pandas as pd

from debiaseval.experiments import e3
from debiaseval.experiments.e3.verdict import e3_verdict
from debiaseval.experiments.verdicts import verdict_markdown, with_verdict
from debiaseval.io.files import read_parquet
from debiaseval.workflow.provenance import record_run, write_markdown, write_table
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    prov = record_run(p.provenance, snakemake.output.provenance)  # also provenance.json
    step = e3.E3Aggregate.from_params(p.step)
    draws = pd.concat([read_parquet(path) for path in snakemake.input], ignore_index=True)
    tables = e3.aggregate(draws, step)
    for name, table in tables.items():
        write_table(table, snakemake.output[name], prov)
    title = f"E3 on {p.dataset}: estimates at alpha = {step.alpha:g} (ICML16 Table 1)"
    found = e3_verdict(tables["rmse_vs_alpha_mean"], draws, step.params(), dataset=p.dataset)
    verdict = verdict_markdown(found)
    write_markdown(verdict, snakemake.output.verdict_md, prov)
    table1 = e3.table1_markdown(tables["estimates"], title=title)
    write_markdown(with_verdict(table1, verdict), snakemake.output.estimates_md, prov)
    log.info("aggregated %d draws rows", len(draws))
    publish_report("e3", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
