# debiaseval: debiased offline evaluation of recommender systems.
# Shared stages: download -> preprocess. Each experiment's rules (split -> intervene -> train ->
# elicit -> evaluate -> aggregate, as it needs them) sit together in workflow/rules/<eN>.smk;
# each aggregate job also draws its figures and HTML tables (report.smk declares them for
# `snakemake --report`, with the run's resolved configuration).
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/download.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/e1.smk"
include: "workflow/rules/e2.smk"
include: "workflow/rules/e3.smk"
include: "workflow/rules/e4.smk"
include: "workflow/rules/e6.smk"
include: "workflow/rules/e5.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        experiment_targets(),
        results("config.html"),


rule export:
    """Every seed's exported splits (E1's train and val, E5's training sets) in raw ids."""
    input:
        export_targets(),


onstart:
    check_data()
    record_study_origin()


onsuccess:
    print(run_message())
