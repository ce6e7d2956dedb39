"""Adapter: what E1's filter dropped from each seed's own draw of a dataset drawn per seed."""

from debiaseval.experiments.e1 import dropped_over_draws, dropped_text
from debiaseval.io.files import read_parquet, write_parquet, write_text
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    frames = [
        read_parquet(path).assign(seed=seed)
        for seed, path in zip(p.seeds, snakemake.input, strict=True)
    ]
    dropped = dropped_over_draws(frames)
    log.info("dropped by E1's protocol, per seed:\n%s", dropped.to_string(index=False))
    write_parquet(dropped, snakemake.output.dropped)
    write_text(dropped_text(dropped, p.dataset), snakemake.output.dropped_md)
