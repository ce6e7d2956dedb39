"""Adapter: E5's fully exposed pairs (synthetic's full matrix or kuairec's small matrix)."""

import numpy as np
import pandas as pd

from debiaseval.data.kuairec import fully_exposed_frame, load_kuairec
from debiaseval.experiments.e5 import full_data
from debiaseval.workflow.io import write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    if p.dataset == "synthetic":
        full = full_data(p.synthetic)
        items = pd.DataFrame({"item": np.arange(full["item"].max() + 1, dtype=np.int32)})
    else:
        full, _, items = fully_exposed_frame(load_kuairec(snakemake.input.raw))
    log.info("%d fully exposed pairs, %d items", len(full), len(items))
    write_parquet(full, snakemake.output.full)
    write_parquet(items, snakemake.output.item_index)
