# debiaseval: debiased offline evaluation of recommender systems.
# Stages: download -> preprocess -> split -> intervene -> train -> evaluate -> aggregate.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/split.smk"
include: "workflow/rules/intervene.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/aggregate.smk"


rule all:
    default_target: True
    input:
        e1_targets(),
