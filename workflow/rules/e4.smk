# Experiment E4, debiased learning: MF-Naive vs MF-IPS ([ICML16] sections 6.3-6.5): every rule of
# E4, in stage order. propensities (one seed: training pairs with every propensity model's P,
# MAR test and Naive-Bayes sample, or the alpha sweep's draws of O) -> fit (one seed and model:
# k-fold IPS cross-validation, refit, test error, per-pair test losses) -> aggregate (mean +- sd
# over seeds, paired t-tests over the test pairs per seed and across seeds).
from debiaseval.experiments.e4 import E4Aggregate, E4Fit, E4Propensities
from debiaseval.experiments.e4 import dataset_seeds as e4_dataset_seeds
from debiaseval.experiments.e4 import fit_models as e4_fit_models


E4 = config["e4"]


localrules:
    e4_aggregate,


# The canonical frames E4 reads (none for synthetic, which is regenerated: each seed its own draw
# where synthetic.per_seed, from draw_block); `items` is reserved in rule inputs, so the index
# frames are user_index / item_index.
E4_DATA = lambda w: (
    {}
    if w.dataset == "synthetic"
    else {
        "interactions": results(f"data/{w.dataset}/interactions.parquet"),
        "user_index": results(f"data/{w.dataset}/users.parquet"),
        "item_index": results(f"data/{w.dataset}/items.parquet"),
    }
)


rule e4_propensities:
    """One seed's training pairs with every propensity model's estimate, and the test pairs."""
    input:
        unpack(E4_DATA),
    output:
        pairs=results("e4/{dataset}/seed{seed}/propensities.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            synthetic=draw_block,
            step=lambda w: E4Propensities.of(config, w.dataset).params(),
            code=CODE["e4_propensities"],
        ),
    threads: E4["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e4", E4["resources"]),
        runtime=job_runtime("e4", E4["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e4/{dataset}/seed{seed}/propensities.log"),
    benchmark:
        bench("e4/{dataset}/seed{seed}/propensities.tsv")
    script:
        "../scripts/e4_propensities.py"


rule e4_fit:
    """MF-Naive (propensity none) or MF-IPS: CV-tuned, refitted, scored on the test."""
    input:
        unpack(E4_DATA),
        pairs=results("e4/{dataset}/seed{seed}/propensities.parquet"),
    output:
        errors=results("e4/{dataset}/seed{seed}/{propensity}/errors.parquet"),
        cv=results("e4/{dataset}/seed{seed}/{propensity}/cv.parquet"),
        losses=results("e4/{dataset}/seed{seed}/{propensity}/losses.parquet"),
    wildcard_constraints:
        propensity="none|known|provided|logistic|naive_bayes",
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            propensity="{propensity}",
            synthetic=draw_block,
            step=lambda w: E4Fit.of(config, w.dataset).params(),
            code=CODE["e4_fit"],
        ),
    threads: E4["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e4", E4["resources"]),
        runtime=job_runtime("e4", E4["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e4/{dataset}/seed{seed}/{propensity}/fit.log"),
    benchmark:
        bench("e4/{dataset}/seed{seed}/{propensity}/fit.tsv")
    script:
        "../scripts/e4_fit.py"


rule e4_aggregate:
    """Every seed's and model's test errors, mean +- sd over seeds, paired t-tests (per seed over
    the MAR test pairs, [ICML16]'s; and across seeds)."""
    input:
        errors=lambda w: [
            results(f"e4/{w.dataset}/seed{seed}/{model}/errors.parquet")
            for seed in range(e4_dataset_seeds(E4, w.dataset))
            for model in e4_fit_models(E4, w.dataset)
        ],
        losses=lambda w: [
            results(f"e4/{w.dataset}/seed{seed}/{model}/losses.parquet")
            for seed in range(e4_dataset_seeds(E4, w.dataset))
            for model in e4_fit_models(E4, w.dataset)
        ],
    output:
        verdict_md=results("e4/{dataset}/verdict.md"),
        errors=results("e4/{dataset}/errors.parquet"),
        summary=results("e4/{dataset}/summary.parquet"),
        pair_tests=results("e4/{dataset}/pair_tests.parquet"),
        summary_md=results("e4/{dataset}/summary.md"),
        **report_outputs("e4"),
    params:
        **job_params(
            captions=figure_module("e4").FIGURES,
            provenance=provenance("e4"),
            dataset="{dataset}",
            step=lambda w: E4Aggregate.of(config, w.dataset).params(),
            code=CODE["e4_aggregate"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e4/{dataset}/aggregate.tsv")
    log:
        logs("e4/{dataset}/aggregate.log"),
    script:
        "../scripts/e4_aggregate.py"
