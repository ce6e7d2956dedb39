"""Adapter: aggregate per-seed metrics into summary and Kendall tables (Parquet + Markdown)."""

import pandas as pd

from debiaseval.aggregate import kendall_table, markdown_table, summary_markdown, summary_table
from debiaseval.io import read_parquet, write_parquet, write_text
from debiaseval.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    per_seed = pd.concat([read_parquet(path) for path in snakemake.input], ignore_index=True)
    summary = summary_table(per_seed)
    kendall = kendall_table(summary, p.mf_recommenders)
    write_parquet(summary, snakemake.output.summary)
    write_parquet(kendall, snakemake.output.kendall)
    write_text(summary_markdown(summary, p.dataset), snakemake.output.summary_md)
    write_text(
        f"# E1 on {p.dataset}: Kendall's tau-b vs gt\n\n" + markdown_table(kendall),
        snakemake.output.kendall_md,
    )
    log.info("wrote %d summary rows, %d Kendall rows", len(summary), len(kendall))
