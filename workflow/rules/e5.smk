# Experiment E5, Unbiased Recall Evaluation ([URE24]): every rule of E5, in stage order.
# full (fully exposed data: synthetic's full matrix, kuairec's small matrix, jester5k's fully
# observed block) -> expose (biased training set + random set R per seed; MNAR/MAR datasets:
# train = MNAR, R = a share of MAR) -> evaluate (one model entry, every grid point: true
# Recall@K, traditional Recall@K, URE@K) -> aggregate.
from debiaseval.experiments.e5 import EXPORT as E5_EXPORT
from debiaseval.experiments.e5 import (
    FULLY_EXPOSED,
    E5Aggregate,
    E5Evaluate,
    E5Expose,
    trains_once,
)

E5 = config["e5"]


localrules:
    e5_export,
    e5_aggregate,


rule e5_full:
    """Fully exposed pairs: synthetic's full rating matrix, kuairec's small matrix or jester5k's
    fully observed block."""
    input:
        unpack(preprocess_input),
    output:
        full=results("e5/{dataset}/full.parquet"),
        user_index=results("e5/{dataset}/users.parquet"),
        item_index=results("e5/{dataset}/items.parquet"),
    wildcard_constraints:
        dataset=_alternatives([name for name in FULLY_EXPOSED if name not in DRAWN]),
    params:
        **job_params(
            dataset="{dataset}",
            synthetic=lambda w: generator_of(w.dataset),
            code=CODE["e5_full"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e5/{dataset}/full.tsv")
    log:
        logs("e5/{dataset}/full.log"),
    script:
        "../scripts/e5_full.py"


# The same on one seed's own draw of a dataset drawn per seed (synthetic.per_seed): its full
# matrix from a seed derived from (synthetic.seed, the seed) (docs/datasets.md#one-draw-per-seed).
use rule e5_full as e5_full_draw with:
    output:
        full=results("e5/{dataset}/seed{seed}/full.parquet"),
        user_index=results("e5/{dataset}/seed{seed}/users.parquet"),
        item_index=results("e5/{dataset}/seed{seed}/items.parquet"),
    wildcard_constraints:
        dataset=_alternatives([name for name in FULLY_EXPOSED if name in DRAWN]),
    params:
        **job_params(
            dataset="{dataset}",
            synthetic=draw_block,
            code=CODE["e5_full"],
        ),
    benchmark:
        bench("e5/{dataset}/seed{seed}/full.tsv")
    log:
        logs("e5/{dataset}/seed{seed}/full.log"),


rule e5_expose:
    """Biased training set by simulated exposure and a random set R per user (one seed)."""
    input:
        # fully exposed datasets come from e5_full (e5_full_draw: the seed's own draw), the
        # others from the shared preprocessing
        data=lambda w: (
            e5_file("full.parquet")(w)
            if w.dataset in FULLY_EXPOSED
            else data_file("interactions.parquet")(w)
        ),
        item_index=lambda w: e5_id_tables(w)["item_index"],
    output:
        results("e5/{dataset}/seed{seed}/exposure.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E5Expose.of(config, w.dataset).params(),
            code=CODE["e5_expose"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e5/{dataset}/seed{seed}/expose.tsv")
    log:
        logs("e5/{dataset}/seed{seed}/expose.log"),
    script:
        "../scripts/e5_expose.py"


rule e5_export:
    """The seed's biased training set in raw ids, to train other frameworks on."""
    input:
        unpack(e5_id_tables),
        split=results("e5/{dataset}/seed{seed}/exposure.parquet"),
    output:
        **export_outputs("e5"),
    params:
        **job_params(
            parts=E5_EXPORT,
            code=CODE["export_split"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e5/{dataset}/seed{seed}/export.tsv")
    log:
        logs("e5/{dataset}/seed{seed}/export.log"),
    script:
        "../scripts/export_split.py"


rule e5_evaluate:
    """Train every grid point of one model entry (or read its precomputed lists); true,
    traditional and URE Recall@K."""
    input:
        unpack(e5_evaluate_input),
    output:
        estimates=results("e5/{dataset}/seed{seed}/estimates/{model}.parquet"),
        metrics_per_user=results("e5/{dataset}/seed{seed}/metrics_per_user/{model}.parquet"),
    wildcard_constraints:
        model=_alternatives(E5["models"]),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            where="e5.models.{model}",
            step=lambda w: E5Evaluate.of(config, w.dataset, w.model).params(),
            code=CODE["e5_evaluate"],
            plugin=lambda w: plugin_hash(E5["models"][w.model]["algorithm"]),
        ),
    threads: E5["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e5", E5["resources"]),
        runtime=job_runtime("e5", E5["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e5/{dataset}/seed{seed}/evaluate/{model}.log"),
    benchmark:
        bench("e5/{dataset}/seed{seed}/evaluate/{model}.tsv")
    script:
        "../scripts/e5_evaluate.py"


E5_TRAINED_ONCE = [
    d for d in experiment_datasets("e5") if trains_once(d in FULLY_EXPOSED, E5["train_per_seed"])
]
E5_TRAINED = [name for name, spec in E5["models"].items() if spec["algorithm"] != EXTERNAL]


# On a dataset whose seeds share one training set (Yahoo! R3: all of MNAR), one job per model
# entry trains it once and scores every seed; e5_evaluate does the rest (one job per seed).
ruleorder: e5_evaluate_seeds > e5_evaluate


rule e5_evaluate_seeds:
    """Train every grid point of one model entry once; true, traditional and URE Recall@K on
    every seed's random set."""
    input:
        exposure=expand(
            results("e5/{{dataset}}/seed{seed}/exposure.parquet"), seed=experiment_seeds("e5")
        ),
    output:
        estimates=expand(
            results("e5/{{dataset}}/seed{seed}/estimates/{{model}}.parquet"),
            seed=experiment_seeds("e5"),
        ),
        metrics_per_user=expand(
            results("e5/{{dataset}}/seed{seed}/metrics_per_user/{{model}}.parquet"),
            seed=experiment_seeds("e5"),
        ),
    wildcard_constraints:
        dataset=_alternatives(E5_TRAINED_ONCE),
        model=_alternatives(E5_TRAINED),
    params:
        **job_params(
            dataset="{dataset}",
            seeds=list(experiment_seeds("e5")),
            step=lambda w: E5Evaluate.of(config, w.dataset, w.model).params(),
            code=CODE["e5_evaluate_seeds"],
            plugin=lambda w: plugin_hash(E5["models"][w.model]["algorithm"]),
        ),
    threads: E5["resources"]["threads"]
    resources:
        mem_mb=job_mem_mb("e5", E5["resources"]),
        runtime=job_runtime("e5", E5["resources"]),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e5/{dataset}/evaluate/{model}.log"),
    benchmark:
        bench("e5/{dataset}/evaluate/{model}.tsv")
    script:
        "../scripts/e5_evaluate_seeds.py"


rule e5_aggregate:
    """Seed means and ranks per model, agreement with the truth per K, paired tests between
    the models; Parquet and Markdown."""
    input:
        estimates=expand(
            results("e5/{{dataset}}/seed{seed}/estimates/{model}.parquet"),
            seed=experiment_seeds("e5"),
            model=E5["models"],
        ),
        metrics_per_user=expand(
            results("e5/{{dataset}}/seed{seed}/metrics_per_user/{model}.parquet"),
            seed=experiment_seeds("e5"),
            model=E5["models"],
        ),
    output:
        verdict_md=results("e5/{dataset}/verdict.md"),
        estimates=results("e5/{dataset}/estimates.parquet"),
        agreement=results("e5/{dataset}/agreement.parquet"),
        comparisons=results("e5/{dataset}/comparisons.parquet"),
        estimates_md=results("e5/{dataset}/estimates.md"),
        agreement_md=results("e5/{dataset}/agreement.md"),
        **report_outputs("e5"),
    params:
        **job_params(
            captions=figure_module("e5").FIGURES,
            provenance=provenance("e5"),
            dataset="{dataset}",
            step=lambda w: E5Aggregate.of(config, w.dataset).params(),
            code=CODE["e5_aggregate"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e5/{dataset}/aggregate.tsv")
    log:
        logs("e5/{dataset}/aggregate.log"),
    script:
        "../scripts/e5_aggregate.py"
