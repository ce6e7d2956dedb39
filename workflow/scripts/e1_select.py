"""Adapter: merge a recommender's tuning chunks, select the best point, keep its lists."""

import shutil

from debiaseval.recommenders.tuning import merge_chunks
from debiaseval.workflow.io import atomic_path, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    what = f"the grid of {p.recommender} on {p.dataset}, seed {p.seed}"
    tuning, chunk = merge_chunks([read_parquet(path) for path in snakemake.input.tuning], what)
    log.info("%s tuning:\n%s", p.recommender, tuning.to_string())
    write_parquet(tuning, snakemake.output.tuning)
    with atomic_path(snakemake.output.recs) as tmp:
        shutil.copyfile(snakemake.input.recs[chunk], tmp)
