"""Adapter: tune one chunk of a recommender's grid on MAR val; write its rows and best lists.
For a grid of one chunk (rule e1_tune), also select its best point as e1_select does."""

from debiaseval.experiments.e1 import E1Train, select_step, tune_step
from debiaseval.io.files import index_sizes, read_parquet, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0], snakemake.threads) as log:
    p = snakemake.params
    out = snakemake.output
    tuning, recs = tune_step(
        read_parquet(snakemake.input.split),
        p.recommender,
        p.spec,
        E1Train.from_params(p.step),
        chunk=p.chunk,
        dataset=p.dataset,
        seed=p.seed,
        **index_sizes(snakemake.input.user_index, snakemake.input.item_index),
    )
    log.info("%s chunk %d:\n%s", p.recommender, p.chunk, tuning.to_string())
    write_parquet(tuning, out.tuning)
    write_parquet(recs, out.recs)
    if "selected_tuning" in out.keys():  # rule e1_tune: from the files just written
        selected = select_step(
            [out.tuning],
            [out.recs],
            tuning_out=out.selected_tuning,
            recs_out=out.selected_recs,
            what=f"the grid of {p.recommender} on {p.dataset}, seed {p.seed}",
        )
        log.info("%s tuning:\n%s", p.recommender, selected.to_string())
