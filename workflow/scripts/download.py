"""Adapter: materialise a dataset's canonical files into the output folder."""

from pathlib import Path

from debiaseval.data.download import DownloadLimits, fetch_dataset
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    p = snakemake.params
    dest = fetch_dataset(
        p.dataset,
        Path(snakemake.output[0]),
        mirror=Path(p.mirror) if p.mirror else None,
        path=Path(p.path) if p.path else None,
        url=p.url,
        mirror_origin=p.mirror_origin,
        limits=DownloadLimits(**p.limits),
    )
    log.info("dataset %s ready in %s", p.dataset, dest)
