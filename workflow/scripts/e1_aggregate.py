"""Adapter: aggregate per-seed metrics and test-set diagnostics (Parquet + Markdown)."""

import pandas as pd

from debiaseval.aggregate import (
    kendall_table,
    markdown_table,
    summary_markdown,
    summary_table,
    testsets_table,
)
from debiaseval.experiments.e1 import run_metadata
from debiaseval.io import read_parquet, write_parquet, write_text
from debiaseval.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    per_seed = pd.concat([read_parquet(path) for path in snakemake.input.metrics])
    diagnostics = testsets_table(
        pd.concat([read_parquet(path) for path in snakemake.input.diagnostics])
    )
    summary = summary_table(per_seed.reset_index(drop=True))
    kendall = kendall_table(summary, p.mf_recommenders, p.kendall_excluded)
    about = run_metadata(read_parquet(snakemake.input.data, columns=["user", "item", "part"]), p.e1)
    write_parquet(summary, snakemake.output.summary)
    write_parquet(kendall, snakemake.output.kendall)
    write_parquet(diagnostics, snakemake.output.testsets)
    write_text(
        summary_markdown(summary, p.dataset, diagnostics=diagnostics, about=about),
        snakemake.output.summary_md,
    )
    write_text(
        f"# E1 on {p.dataset}: Kendall's tau-b of the recommender ranking vs gt\n\n"
        "From the seed means; 1 = the test set ranks the recommenders as the MAR ground truth "
        "does (higher is better). `n_recommenders` counts those ranked.\n\n"
        + markdown_table(kendall),
        snakemake.output.kendall_md,
    )
    log.info("wrote %d summary rows, %d Kendall rows", len(summary), len(kendall))
