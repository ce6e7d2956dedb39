# Experiment E6, weighted offline evaluation over time ([MYT14]): every rule of E6.
# evaluate (one job per dataset and seed: snapshots, KL weights for every p, exact leave-one-out
# of every recommender at every t) -> aggregate (seeds stacked, Markdown).

from debiaseval.experiments.e6 import E6Aggregate, E6Evaluate

E6 = config["e6"]


localrules:
    e6_aggregate,


rule e6_evaluate:
    """Leave-one-out scores over the snapshots, unweighted and with KL weights for every p."""
    input:
        # synthetic: none, the campaign simulation starts from the synthetic truth (params: the
        # seed's own draw where synthetic.per_seed, draw_block)
        unpack(
            lambda w: {}
            if w.dataset == "synthetic"
            else {
                "interactions": results(f"data/{w.dataset}/interactions.parquet"),
                "user_index": results(f"data/{w.dataset}/users.parquet"),
                "item_index": results(f"data/{w.dataset}/items.parquet"),
            }
        ),
    output:
        scores=results("e6/{dataset}/seed{seed}/scores.parquet"),
        weights=results("e6/{dataset}/seed{seed}/weights.parquet"),
        snapshots=results("e6/{dataset}/seed{seed}/snapshots.parquet"),
        lists=results("e6/{dataset}/seed{seed}/lists.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E6Evaluate.of(config, w.dataset).params(),
            synthetic=draw_block,
            code=CODE["e6_evaluate"],
        ),
    threads: E6["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e6", E6["resources"], synthetic_input_mb),
        runtime=job_runtime("e6", E6["resources"], synthetic_input_mb),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e6/{dataset}/seed{seed}/evaluate.log"),
    benchmark:
        bench("e6/{dataset}/seed{seed}/evaluate.tsv")
    script:
        "../scripts/e6_evaluate.py"


rule e6_aggregate:
    """Every seed's tables stacked; the score-vs-t table in Markdown."""
    input:
        unpack(
            lambda w: {
                f"{table}_{seed}": results(f"e6/{w.dataset}/seed{seed}/{table}.parquet")
                for seed in experiment_seeds("e6")
                for table in ("scores", "weights", "snapshots", "lists")
            }
        ),
    output:
        verdict_md=results("e6/{dataset}/verdict.md"),
        scores=results("e6/{dataset}/scores.parquet"),
        weights=results("e6/{dataset}/weights.parquet"),
        snapshots=results("e6/{dataset}/snapshots.parquet"),
        lists=results("e6/{dataset}/lists.parquet"),
        markdown=results("e6/{dataset}/scores.md"),
        **report_outputs("e6"),
    params:
        **job_params(
            captions=figure_module("e6").FIGURES,
            provenance=provenance("e6"),
            dataset="{dataset}",
            seeds=list(experiment_seeds("e6")),
            step=lambda w: E6Aggregate.of(config, w.dataset).params(),
            code=CODE["e6_aggregate"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e6/{dataset}/aggregate.tsv")
    log:
        logs("e6/{dataset}/aggregate.log"),
    script:
        "../scripts/e6_aggregate.py"
