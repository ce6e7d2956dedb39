# The HTML report (snakemake --report report.html). Each experiment's aggregate job also draws
# its figures and renders its Markdown tables (debiaseval.workflow.report.publish_report), so
# they are never older than the results: its outputs include the report folders that
# report_outputs() (common.smk) declares, one report category per experiment and a subcategory
# per dataset. The run's resolved configuration is the report's "Configuration" category.
# Asked for a report, the workflow first checks that the results were made by the config it is
# given (one line and no report otherwise), then writes the front page: a verdict per experiment
# and dataset, the provenance, links to the figures (FRONT_PAGE, which
# workflow/report/workflow.rst includes; docs/report.md#the-front-page).
from debiaseval.workflow.report import config_mismatch, front_page, report_requested
from debiaseval.workflow.studies import set_aside_foreign

FRONT_PAGE = ".snakemake/debiaseval/front.html"

localrules:
    run_config,


rule run_config:
    """The run's resolved configuration (defaults filled in): YAML, and a table for the report."""
    output:
        yaml=results("config.yaml"),
        html=report(
            results("config.html"),
            caption="../report/config.rst",
            category="Configuration",
            labels={"result": "resolved configuration"},
        ),
    params:
        **job_params(
            config=config,
            code=CODE["run_config"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("run_config.tsv")
    log:
        logs("run_config.log"),
    script:
        "../scripts/run_config.py"


# Results copied in from another config (their tables' records name another config, and
# Snakemake has no record of them) are set aside into results/<study>/.foreign/<time>/, so
# that this config's jobs make them again: only the files a rule of this workflow makes (its
# output patterns match them); a file of one's own beside them stays. Results of a replaced
# config are named (Snakemake reruns their jobs, whose params changed). Only a command that
# runs jobs does this.
if RUNS_JOBS:
    _made_by_a_rule = lambda path: any(rule.is_producer(path) for rule in workflow.rules)
    for _line in set_aside_foreign(
        RESULTS, aggregate_tables(), config, is_output=_made_by_a_rule
    ):
        say(_line)

# `--report` is read from the command line (Snakemake tells the Snakefile nothing of it).
# Another way to the report (--report-after-run, Snakemake's API) skips the check and finds the
# front page of the last --report, or one saying where it comes from.
if workflow.is_main_process and report_requested(sys.argv):
    _refusal = config_mismatch(config, aggregate_tables(), rules.run_config.output.yaml)
    if _refusal:
        stop(_refusal)
    os.makedirs(os.path.dirname(FRONT_PAGE), exist_ok=True)
    with open(FRONT_PAGE, "w", encoding="utf-8") as _front:
        _front.write(
            front_page(
                [
                    (name, dataset, results(f"{name}/{dataset}"))
                    for name in EXPERIMENTS
                    for dataset in experiment_datasets(name)
                ]
            )
        )
elif workflow.is_main_process and not os.path.exists(FRONT_PAGE):
    os.makedirs(os.path.dirname(FRONT_PAGE), exist_ok=True)
    with open(FRONT_PAGE, "w", encoding="utf-8") as _front:
        _front.write("<p>Verdicts, provenance and figures: snakemake --report report.html</p>\n")
