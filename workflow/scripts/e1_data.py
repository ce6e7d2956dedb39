"""Adapter: the dataset as E1's protocol takes it (common users and items), re-indexed, and
the report of what its filter dropped."""

from debiaseval.data.filters import dropped_warnings
from debiaseval.experiments.e1 import E1Data, data_step, dropped_text
from debiaseval.io.files import read_parquet, write_parquet, write_text
from debiaseval.workflow.runtime import job, warn

with job(snakemake.log[0]) as log:
    p = snakemake.params
    kept = data_step(
        read_parquet(snakemake.input.interactions),
        read_parquet(snakemake.input.user_index),
        read_parquet(snakemake.input.item_index),
        step=E1Data.from_params(p.step),
        dataset=p.dataset,
    )
    log.info("dropped by E1's protocol:\n%s", kept.dropped.to_string(index=False))
    for line in dropped_warnings(kept.dropped):
        warn(log, f"E1 on {p.dataset}: {line}")
    write_parquet(kept.interactions, snakemake.output.interactions)
    write_parquet(kept.users, snakemake.output.user_index)
    write_parquet(kept.items, snakemake.output.item_index)
    write_parquet(kept.dropped, snakemake.output.dropped)
    write_text(dropped_text(kept.dropped, p.dataset), snakemake.output.dropped_md)
