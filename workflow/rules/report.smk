# The HTML report (snakemake --report report.html): every experiment's figures and tables.
# One generic rule draws any figure of any experiment from its aggregated tables
# (src/debiaseval/figures/<experiment>.py declares TABLES, FIGURES and draw); another renders
# each aggregated table as HTML. Both are cheap local rules.

localrules:
    plot,
    table,


rule plot:
    """One figure of one experiment on one dataset, as SVG (in the report) and PNG."""
    input:
        unpack(
            lambda w: {
                stem: f"results/{w.experiment}/{w.dataset}/{stem}.parquet"
                for stem in FIGURE_MODULES[w.experiment].TABLES
            }
        ),
    output:
        svg=report(
            "results/{experiment}/{dataset}/figures/{figure}.svg",
            caption="../report/figure.rst",
            category="{experiment}",
            subcategory="{dataset}",
            labels={"figure": "{figure}", "type": "figure"},
        ),
        png="results/{experiment}/{dataset}/figures/{figure}.png",
    wildcard_constraints:
        experiment=_alternatives(EXPERIMENTS),
    params:
        experiment="{experiment}",
        dataset="{dataset}",
        figure="{figure}",
        caption=lambda w: FIGURE_MODULES[w.experiment].FIGURES[w.figure],
        code=CODE,
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/{experiment}/{dataset}/plot/{figure}.log",
    script:
        "../scripts/plot.py"


rule table:
    """One aggregated table of one experiment on one dataset, as HTML for the report."""
    input:
        "results/{experiment}/{dataset}/{stem}.parquet",
    output:
        report(
            "results/{experiment}/{dataset}/tables/{stem}.html",
            caption="../report/table.rst",
            category="{experiment}",
            subcategory="{dataset}",
            labels={"figure": "{stem}", "type": "table"},
        ),
    wildcard_constraints:
        experiment=_alternatives(EXPERIMENTS),
    params:
        title=lambda w: f"{w.experiment.upper()} on {w.dataset}: {w.stem}",
        code=CODE,
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/{experiment}/{dataset}/table/{stem}.log",
    script:
        "../scripts/table.py"

