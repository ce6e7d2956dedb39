"""Adapter: E5 estimates of one model entry's grid points, trained once and scored on every
seed's random set (a dataset whose seeds share one training set)."""

import numpy as np
import pandas as pd

from debiaseval.experiments.e5 import E5Evaluate, evaluate_models_on_seeds, shared_fit_seed
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    step = E5Evaluate.from_params(p.step)
    labelled = {
        seed: read_parquet(path)
        for seed, path in zip(p.seeds, snakemake.input.exposure, strict=True)
    }
    evaluated = evaluate_models_on_seeds(
        labelled,
        step,
        n_users=max(int(frame["user"].max()) for frame in labelled.values()) + 1,
        n_items=max(int(frame["item"].max()) for frame in labelled.values()) + 1,
        seed=shared_fit_seed(p.dataset, step.model),
    )
    outputs = zip(
        p.seeds, snakemake.output.estimates, snakemake.output.metrics_per_user, strict=True
    )
    for seed, estimates_path, per_user_path in outputs:
        estimates, values = evaluated[seed]
        estimates.insert(0, "seed", np.int32(seed))
        log.info("%s, seed %d:\n%s", step.model, seed, estimates.to_string())
        write_parquet(estimates, estimates_path)
        per_user = pd.concat(values, ignore_index=True)
        per_user.insert(0, "seed", np.int32(seed))
        write_parquet(per_user, per_user_path)
