"""Adapter: aggregate per-seed metrics and test-set diagnostics (Parquet + Markdown), with the
verdict (verdict.md)."""

from pathlib import Path

from debiaseval.experiments.e1 import SEED_TABLES, E1Aggregate, aggregate_step
from debiaseval.io.files import read_parquet
from debiaseval.workflow.provenance import record_run, write_markdown, write_table
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    prov = record_run(p.provenance, snakemake.output.provenance)  # also provenance.json
    inputs = snakemake.input

    def frames(paths):
        return [read_parquet(path) for path in paths]

    tables = aggregate_step(
        {stem: frames(inputs[stem]) for stem in SEED_TABLES},
        frames(inputs.diagnostics),
        read_parquet(inputs.data, columns=["user", "item", "part"]),
        E1Aggregate.from_params(p.step),
        dataset=p.dataset,
        truth=frames(inputs.truth),
        draws=p.draws,
    )
    for stem in (
        "summary",
        "kendall",
        "testsets",
        "comparisons",
        "estimator_accuracy",
        "estimator_pairs",
        "truth_separation",
        "sensitivity",
    ):
        write_table(tables[stem], snakemake.output[stem], prov)
    for stem in (
        "verdict_md",
        "summary_md",
        "kendall_md",
        "comparisons_md",
        "estimator_accuracy_md",
        "sensitivity_md",
    ):
        write_markdown(tables[stem], snakemake.output[stem], prov)
    log.info(
        "wrote %d summary rows, %d Kendall rows", len(tables["summary"]), len(tables["kendall"])
    )
    publish_report("e1", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
