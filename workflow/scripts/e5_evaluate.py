"""Adapter: E5 estimates (true, traditional, URE Recall@K) of one model entry's grid points."""

import numpy as np

from debiaseval.experiments.e5 import evaluate_models, fit_seed
from debiaseval.workflow.io import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    labelled = read_parquet(snakemake.input[0])
    estimates = evaluate_models(
        labelled,
        n_users=int(labelled["user"].max()) + 1,
        n_items=int(labelled["item"].max()) + 1,
        model=p.model,
        algorithm=p.spec["algorithm"],
        params=p.spec["params"],
        grid=p.spec["grid"],
        ks=p.ks,
        positive_threshold=p.positive_threshold,
        ties=p.ties,
        batch_size=p.batch_size,
        seed=fit_seed(p.seed, p.dataset, p.model),
    )
    estimates.insert(0, "seed", np.int32(p.seed))
    log.info("%s:\n%s", p.model, estimates.to_string())
    write_parquet(estimates, snakemake.output[0])
