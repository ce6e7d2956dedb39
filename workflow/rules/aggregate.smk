localrules:
    aggregate,


rule aggregate:
    """Mean/sd over seeds, % difference from gt, Kendall's tau; Parquet and Markdown."""
    input:
        expand(
            "results/e1/{{dataset}}/seed{seed}/metrics/{recommender}.parquet",
            seed=range(config["seeds"]),
            recommender=E1["recommenders"],
        ),
    output:
        summary="results/e1/{dataset}/summary.parquet",
        kendall="results/e1/{dataset}/kendall.parquet",
        summary_md="results/e1/{dataset}/summary.md",
        kendall_md="results/e1/{dataset}/kendall.md",
    params:
        dataset="{dataset}",
        mf_recommenders=MF_RECOMMENDERS,
        code=CODE,
    conda:
        "../envs/debiaseval.yaml"
    log:
        "logs/e1/{dataset}/aggregate.log",
    script:
        "../scripts/aggregate.py"
