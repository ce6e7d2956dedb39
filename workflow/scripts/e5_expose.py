"""Adapter: E5 exposure of one seed (simulated on full data; MNAR and a share of MAR otherwise)."""

from debiaseval.data.splits import run_rng
from debiaseval.experiments.e5 import FULLY_EXPOSED, E5Expose, expose, observed_data
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    step = E5Expose.from_params(p.step)
    data = read_parquet(snakemake.input.data)
    if p.dataset in FULLY_EXPOSED:
        labelled = expose(
            data,
            n_items=int(data["item"].max()) + 1,
            exposure=step.exposure,
            positive_threshold=step.positive_threshold,
            rng=run_rng(p.seed, p.dataset, "e5_expose"),
            items=read_parquet(snakemake.input.item_index),
        )
    else:
        labelled = observed_data(
            data,
            test_fraction=float(step.mar_test_fraction),
            rng=run_rng(p.seed, p.dataset, "e5_mar_test"),
        )
    log.info("parts: %s", labelled["part"].value_counts().to_dict())
    write_parquet(labelled, snakemake.output[0])
