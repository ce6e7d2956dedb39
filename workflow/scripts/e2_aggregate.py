"""Adapter: aggregate E2's seeds: elicited ratings, % changes, per-seed Wilcoxon tests combined
over seeds (+ Markdown)."""

from pathlib import Path

from debiaseval.experiments.e2 import E2Aggregate, aggregate_step, counts_frame
from debiaseval.io.files import read_parquet
from debiaseval.workflow.provenance import record_run, write_markdown, write_table
from debiaseval.workflow.report import publish_report
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    prov = record_run(p.provenance, snakemake.output.provenance)  # also provenance.json
    n_active = dict(
        zip(p.seeds, (len(read_parquet(f)) for f in snakemake.input.active), strict=True)
    )
    counts = counts_frame(
        [
            (seed, method, strategy, len(read_parquet(path)), n_active[seed])
            for (seed, method, strategy), path in zip(p.runs, snakemake.input.elicited, strict=True)
        ]
    )
    tables = aggregate_step(
        [read_parquet(path) for path in snakemake.input.changes],
        counts,
        E2Aggregate.from_params(p.step),
        dataset=p.dataset,
    )
    for stem in ("elicited", "metrics_per_user", "summary", "wilcoxon", "wilcoxon_seeds"):
        write_table(tables[stem], snakemake.output[stem], prov)
    write_markdown(tables["verdict_md"], snakemake.output.verdict_md, prov)
    write_markdown(tables["summary_md"], snakemake.output.summary_md, prov)
    log.info(
        "%d summary rows, %d Wilcoxon tests within seeds, %d combined over seeds",
        len(tables["summary"]),
        len(tables["wilcoxon_seeds"]),
        len(tables["wilcoxon"]),
    )
    publish_report("e2", p.dataset, Path(snakemake.output.figures).parent)
    log.info("drew the figures and HTML tables of the report")
