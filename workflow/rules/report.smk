# The HTML report (snakemake --report report.html). Each experiment's aggregate job also draws
# its figures and renders its Markdown tables (debiaseval.workflow.report.publish_report), so
# they are never older than the results: its outputs include the report folders that
# report_outputs() (common.smk) declares, one report category per experiment and a subcategory
# per dataset. The run's resolved configuration is the report's "Configuration" category.

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
        config=config,
        code=CODE,
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("run_config.tsv")
    log:
        logs("run_config.log"),
    script:
        "../scripts/run_config.py"
