"""Adapter: E5 estimates (true, traditional, URE Recall@K) of one model entry's grid points,
or of its precomputed lists."""

import numpy as np
import pandas as pd

from debiaseval.evaluation.external_lists import read_lists
from debiaseval.experiments.e5 import E5Evaluate, evaluate_lists, evaluate_models, fit_seed
from debiaseval.io.files import read_parquet, write_parquet
from debiaseval.recommenders.registry import EXTERNAL
from debiaseval.workflow.runtime import job, warn

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    step = E5Evaluate.from_params(p.step)
    labelled = read_parquet(snakemake.input.exposure)
    shared = {
        "n_users": int(labelled["user"].max()) + 1,
        "n_items": int(labelled["item"].max()) + 1,
        "per_user": [],
    }
    if step.spec["algorithm"] == EXTERNAL:
        estimates, notes = evaluate_lists(
            labelled,
            read_lists(snakemake.input.lists),
            step,
            users=read_parquet(snakemake.input.user_index),
            items=read_parquet(snakemake.input.item_index),
            source=snakemake.input.lists,
            where=p.where,
            **shared,
        )
        for note in notes:
            warn(log, note)
    else:
        estimates = evaluate_models(
            labelled, step, seed=fit_seed(p.seed, p.dataset, step.model), **shared
        )
    estimates.insert(0, "seed", np.int32(p.seed))
    log.info("%s:\n%s", step.model, estimates.to_string())
    write_parquet(estimates, snakemake.output.estimates)
    per_user = pd.concat(shared["per_user"], ignore_index=True)
    per_user.insert(0, "seed", np.int32(p.seed))
    write_parquet(per_user, snakemake.output.metrics_per_user)
