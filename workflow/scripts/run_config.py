"""Adapter: write the run's resolved configuration as YAML and as the report's table."""

import yaml

from debiaseval.io.files import write_text
from debiaseval.workflow.pages import config_page
from debiaseval.workflow.runtime import job

with job(snakemake.log[0]) as log:
    config = snakemake.params.config
    write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), snakemake.output.yaml)
    write_text(config_page(config), snakemake.output.html)
    log.info("wrote %s and %s", snakemake.output.yaml, snakemake.output.html)
