"""Adapter: every E2 method's hidden set H and test set T of one seed, drawn from their pools."""

from debiaseval.experiments.e2 import E2Sample, sample_step
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    step = E2Sample.from_params(p.step)
    split = read_parquet(snakemake.input.split)
    sizes = index_sizes(snakemake.input.user_index, snakemake.input.item_index)
    outputs = zip(snakemake.output.hidden, snakemake.output.test, strict=True)
    for name, (hidden_path, test_path) in zip(step.methods, outputs, strict=True):
        hidden, test = sample_step(split, name, step, dataset=p.dataset, seed=p.seed, **sizes)
        log.info("%s: H %d pairs, T %d pairs", name, len(hidden), len(test))
        write_parquet(hidden, hidden_path)
        write_parquet(test, test_path)
