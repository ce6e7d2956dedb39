"""Adapter: a seed's parts (training, validation) in raw ids, as Parquet and CSV."""

from debiaseval.data.export import export_parts
from debiaseval.io.files import read_parquet, write_csv, write_parquet
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    users = read_parquet(snakemake.input.user_index)
    items = read_parquet(snakemake.input.item_index)
    parts = export_parts(
        read_parquet(snakemake.input.split),
        snakemake.params.parts,
        users,
        items,
        n_users=len(users),
        n_items=len(items),
    )
    for name, frame in parts.items():
        log.info("%s: %d pairs of %d users", name, len(frame), frame["user"].nunique())
        write_parquet(frame, snakemake.output[f"{name}_parquet"])
        write_csv(frame, snakemake.output[f"{name}_csv"])
