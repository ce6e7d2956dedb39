"""Adapter: draw every intervened test set of one seed from the held-out part, with diagnostics."""

from debiaseval.experiments.e1 import E1Intervene, testset_step
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    step = E1Intervene.from_params(p.step)
    split = read_parquet(snakemake.input.split)
    sizes = index_sizes(snakemake.input.user_index, snakemake.input.item_index)
    outputs = zip(snakemake.output.testsets, snakemake.output.diagnostics, strict=True)
    for name, (testset_path, diagnostics_path) in zip(step.testsets, outputs, strict=True):
        sample, diagnostics = testset_step(
            split, name, step, dataset=p.dataset, seed=p.seed, **sizes
        )
        log.info("%s:\n%s", name, diagnostics.to_string())
        write_parquet(sample, testset_path)
        write_parquet(diagnostics, diagnostics_path)
