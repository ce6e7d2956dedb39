# Experiment E3, accuracy of the Naive / IPS / SNIPS estimators ([ICML16] sections 3.4, 6.2-6.4):
# every rule of E3, in stage order. simulate (one seed: prediction matrices, true values, draws
# of O over the alpha grid and the Naive-Bayes MAR sizes, and the fitted Naive-Bayes propensity
# tables) -> aggregate (Table 1, RMSE tables).


from debiaseval.experiments.e3 import E3Aggregate, E3Simulate

E3 = config["e3"]


localrules:
    e3_aggregate,


rule e3_simulate:
    """True MAE/DCG of the five prediction matrices and the estimators over draws of O."""
    input:
        unpack(
            lambda w: {}
            if w.dataset == "synthetic"
            else {"interactions": results(f"data/{w.dataset}/interactions.parquet")}
        ),
    output:
        draws=results("e3/{dataset}/seed{seed}/draws.parquet"),
        naive_bayes=results("e3/{dataset}/seed{seed}/naive_bayes.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            synthetic=draw_block,
            step=lambda w: E3Simulate.of(config, w.dataset).params(),
            code=CODE["e3_simulate"],
        ),
    threads: E3["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e3", E3["resources"], synthetic_input_mb),
        runtime=job_runtime("e3", E3["resources"], synthetic_input_mb),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e3/{dataset}/seed{seed}/simulate.log"),
    benchmark:
        bench("e3/{dataset}/seed{seed}/simulate.tsv")
    script:
        "../scripts/e3_simulate.py"


rule e3_aggregate:
    """[ICML16] Table 1 (mean and sd over draws), RMSE vs alpha and vs the MAR sample size,
    per matrix and averaged over the matrices (Figures 2 and 4)."""
    input:
        expand(results("e3/{{dataset}}/seed{seed}/draws.parquet"), seed=experiment_seeds("e3")),
    output:
        verdict_md=results("e3/{dataset}/verdict.md"),
        estimates=results("e3/{dataset}/estimates.parquet"),
        estimates_md=results("e3/{dataset}/estimates.md"),
        rmse_vs_alpha=results("e3/{dataset}/rmse_vs_alpha.parquet"),
        rmse_vs_mar=results("e3/{dataset}/rmse_vs_mar.parquet"),
        rmse_vs_alpha_mean=results("e3/{dataset}/rmse_vs_alpha_mean.parquet"),
        rmse_vs_mar_mean=results("e3/{dataset}/rmse_vs_mar_mean.parquet"),
        **report_outputs("e3"),
    params:
        **job_params(
            captions=figure_module("e3").FIGURES,
            provenance=provenance("e3"),
            dataset="{dataset}",
            step=lambda w: E3Aggregate.of(config, w.dataset).params(),
            code=CODE["e3_aggregate"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e3/{dataset}/aggregate.tsv")
    log:
        logs("e3/{dataset}/aggregate.log"),
    script:
        "../scripts/e3_aggregate.py"
