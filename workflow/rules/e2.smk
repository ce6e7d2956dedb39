# Experiment E2, debiased offline evaluation of active learning ([FLAIRS20]): every rule of E2, in
# stage order. split (known/hidden_pool/test_pool, active users) -> sample (H and T of every
# method) -> train (tune MF on validation held out of K_before; rank on K_before) -> elicit (every
# strategy, each asked once and intersected with every method's H) -> evaluate (every strategy:
# retrain on K_before + elicited per method; before/after on T) -> aggregate. One job per dataset
# and seed for sample, elicit and evaluate: the next stage reads every method's and strategy's
# files of the seed anyway, and separate jobs would each pay the start-up (docs/performance.md).
# On a dataset drawn per seed (synthetic.per_seed) each seed reads its own draw,
# data/<dataset>/seed<s>/ (data_file; docs/datasets.md#one-draw-per-seed).

from debiaseval.experiments.e2 import (
    E2Aggregate,
    E2Elicit,
    E2Evaluate,
    E2Sample,
    E2Split,
    E2Train,
)

E2 = config["e2"]
E2_RUNS = [
    (seed, method, strategy)
    for seed in experiment_seeds("e2")
    for strategy in E2["strategies"]
    for method in E2["methods"]
]  # the order of debiaseval.experiments.e2.run
# (strategy, method) in the order of e2_elicit's outputs: strategy by strategy, every method
E2_PAIRS = [(strategy, method) for strategy in E2["strategies"] for method in E2["methods"]]


localrules:
    e2_aggregate,


rule e2_split:
    """Filtered MNAR -> known 60% / hidden_pool 20% / test_pool 20%; the active users."""
    input:
        interactions=data_file("interactions.parquet"),
    output:
        split=results("e2/{dataset}/seed{seed}/split.parquet"),
        active=results("e2/{dataset}/seed{seed}/active.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E2Split.of(config, w.dataset).params(),
            code=CODE["e2_split"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e2/{dataset}/seed{seed}/split.tsv")
    log:
        logs("e2/{dataset}/seed{seed}/split.log"),
    script:
        "../scripts/e2_split.py"


rule e2_sample:
    """Every method's hidden set H and test set T, rho-samples of their pools
    (docs/experiments/e2.md)."""
    input:
        split=results("e2/{dataset}/seed{seed}/split.parquet"),
        user_index=data_file("users.parquet"),
        item_index=data_file("items.parquet"),
    output:
        hidden=expand(
            results("e2/{{dataset}}/seed{{seed}}/{method}/hidden.parquet"), method=E2["methods"]
        ),
        test=expand(
            results("e2/{{dataset}}/seed{{seed}}/{method}/test.parquet"), method=E2["methods"]
        ),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E2Sample.of(config, w.dataset).params(),
            code=CODE["e2_sample"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e2/{dataset}/seed{seed}/sample.tsv")
    log:
        logs("e2/{dataset}/seed{seed}/sample.log"),
    script:
        "../scripts/e2_sample.py"


rule e2_train:
    """Tune MF on validation held out of K_before (E1's tuning); its top-k lists on K_before."""
    input:
        split=results("e2/{dataset}/seed{seed}/split.parquet"),
        user_index=data_file("users.parquet"),
        item_index=data_file("items.parquet"),
    output:
        tuning=results("e2/{dataset}/seed{seed}/tuning.parquet"),
        recs=results("e2/{dataset}/seed{seed}/recs_before.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E2Train.of(config, w.dataset).params(),
            code=CODE["e2_train"],
            plugin=plugin_hash(E2["mf"]["algorithm"]),
        ),
    threads: E2["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e2", E2["resources"]),
        runtime=job_runtime("e2", E2["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e2/{dataset}/seed{seed}/train.log"),
    benchmark:
        bench("e2/{dataset}/seed{seed}/train.tsv")
    script:
        "../scripts/e2_train.py"


rule e2_elicit:
    """The ratings every strategy elicits from each method's H for the active users
    ([FLAIRS20] section 3)."""
    input:
        split=results("e2/{dataset}/seed{seed}/split.parquet"),
        active=results("e2/{dataset}/seed{seed}/active.parquet"),
        hidden=expand(
            results("e2/{{dataset}}/seed{{seed}}/{method}/hidden.parquet"), method=E2["methods"]
        ),
        tuning=results("e2/{dataset}/seed{seed}/tuning.parquet"),
        user_index=data_file("users.parquet"),
        item_index=data_file("items.parquet"),
    output:
        # strategy by strategy, every method's file (the script writes them in this order)
        [results(f"e2/{{dataset}}/seed{{seed}}/{m}/elicited/{x}.parquet") for x, m in E2_PAIRS],
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            strategies=list(E2["strategies"]),
            methods=list(E2["methods"]),
            step=lambda w: E2Elicit.of(config, w.dataset).params(),
            code=CODE["e2_elicit"],
            plugin=plugin_hash(E2["mf"]["algorithm"]),
        ),
    threads: E2["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e2", E2["resources"]),
        runtime=job_runtime("e2", E2["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e2/{dataset}/seed{seed}/elicit.log"),
    benchmark:
        bench("e2/{dataset}/seed{seed}/elicit.tsv")
    script:
        "../scripts/e2_elicit.py"


rule e2_evaluate:
    """Per strategy, retrain MF on K_before + elicited (per method); per-user metrics on T
    before and after."""
    input:
        split=results("e2/{dataset}/seed{seed}/split.parquet"),
        active=results("e2/{dataset}/seed{seed}/active.parquet"),
        test=expand(
            results("e2/{{dataset}}/seed{{seed}}/{method}/test.parquet"), method=E2["methods"]
        ),
        elicited=[
            results(f"e2/{{dataset}}/seed{{seed}}/{m}/elicited/{x}.parquet") for x, m in E2_PAIRS
        ],
        tuning=results("e2/{dataset}/seed{seed}/tuning.parquet"),
        recs=results("e2/{dataset}/seed{seed}/recs_before.parquet"),
        user_index=data_file("users.parquet"),
        item_index=data_file("items.parquet"),
    output:
        expand(
            results("e2/{{dataset}}/seed{{seed}}/changes/{strategy}.parquet"),
            strategy=E2["strategies"],
        ),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            strategies=list(E2["strategies"]),
            methods=list(E2["methods"]),
            step=lambda w: E2Evaluate.of(config, w.dataset).params(),
            code=CODE["e2_evaluate"],
            plugin=plugin_hash(E2["mf"]["algorithm"]),
        ),
    threads: E2["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e2", E2["resources"]),
        runtime=job_runtime("e2", E2["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e2/{dataset}/seed{seed}/evaluate.log"),
    benchmark:
        bench("e2/{dataset}/seed{seed}/evaluate.tsv")
    script:
        "../scripts/e2_evaluate.py"


rule e2_aggregate:
    """Elicited ratings per active user, % changes, per-seed Wilcoxon tests combined; Markdown."""
    input:
        changes=expand(
            results("e2/{{dataset}}/seed{seed}/changes/{strategy}.parquet"),
            seed=experiment_seeds("e2"),
            strategy=E2["strategies"],
        ),
        elicited=[
            results(f"e2/{{dataset}}/seed{s}/{m}/elicited/{x}.parquet") for s, m, x in E2_RUNS
        ],
        active=expand(
            results("e2/{{dataset}}/seed{seed}/active.parquet"), seed=experiment_seeds("e2")
        ),
    output:
        verdict_md=results("e2/{dataset}/verdict.md"),
        elicited=results("e2/{dataset}/elicited.parquet"),
        metrics_per_user=results("e2/{dataset}/metrics_per_user.parquet"),
        summary=results("e2/{dataset}/summary.parquet"),
        wilcoxon=results("e2/{dataset}/wilcoxon.parquet"),
        wilcoxon_seeds=results("e2/{dataset}/wilcoxon_seeds.parquet"),
        summary_md=results("e2/{dataset}/summary.md"),
        **report_outputs("e2"),
    params:
        **job_params(
            captions=figure_module("e2").FIGURES,
            provenance=provenance("e2"),
            dataset="{dataset}",
            runs=E2_RUNS,
            seeds=list(experiment_seeds("e2")),
            step=lambda w: E2Aggregate.of(config, w.dataset).params(),
            code=CODE["e2_aggregate"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e2/{dataset}/aggregate.tsv")
    log:
        logs("e2/{dataset}/aggregate.log"),
    script:
        "../scripts/e2_aggregate.py"
