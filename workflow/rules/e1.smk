# Experiment E1, intervened test sets ([SAC20]): every rule of E1, in stage order.
# data (E1's filter: common users and items, with its report) -> split -> intervene (every test set of a seed) -> train (tune one chunk of a recommender's grid on
# MAR val) -> select (best usable grid point) -> evaluate (gt and every test set) -> aggregate.
# On synthetic and jester5k-semi, truth adds the exact TRUE row from the full rating matrix, the
# arena's truth.
# impute fits the model imputation of a dr estimator (logistic_mf), once per seed.
# A grid of one chunk is trained and selected by one job (tune, the same files).
# Precomputed lists (algorithm external) replace train/select by external (check, rank); export
# writes a seed's train and val parts in raw ids for other frameworks.

from debiaseval.experiments.e1 import EXPORT as E1_EXPORT
from debiaseval.experiments.e1 import TRUTH_DATASETS as E1_TRUTH_DATASETS
from debiaseval.experiments.e1 import (
    E1Aggregate,
    E1Data,
    E1Evaluate,
    E1External,
    E1Impute,
    E1Intervene,
    E1Split,
    E1Train,
    E1Truth,
    external_recommenders,
)
from debiaseval.estimation.arena import model_imputations

E1 = config["e1"]
E1_EXTERNAL = external_recommenders(E1)  # precomputed lists: e1_external, not train/select
E1_TRAINED = [name for name in E1["recommenders"] if name not in E1_EXTERNAL]
E1_CHUNKS = {
    name: len(grid_chunks(E1["recommenders"][name]["grid"], E1["tuning"]["points_per_job"]))
    for name in E1_TRAINED
}
# A grid of one chunk is trained and selected in one job (e1_tune); e1_select merges the others'.
E1_ONE_CHUNK = [name for name in E1_TRAINED if E1_CHUNKS[name] == 1]
E1_CHUNKED = [name for name in E1_TRAINED if E1_CHUNKS[name] > 1]
# The dr estimators whose imputation is a model, fitted once per seed by e1_impute.
E1_IMPUTED = model_imputations(E1["estimators"])
# Datasets drawn per seed (synthetic.per_seed, semireal.per_seed): E1's data of seed s is
# e1/<dataset>/seed<s>/data/, its seed's own draw; every other dataset's is e1/<dataset>/data/,
# shared by its seeds.
E1_FIXED = [name for name in dataset_names(config["sources"]) if name not in DRAWN]


localrules:
    e1_data,
    e1_select,
    e1_export,
    e1_external,
    e1_aggregate,
    e1_dropped,


rule e1_data:
    """The dataset as E1 takes it: with e1.common_users_items, the users and items present in
    both the MNAR and the MAR part ([SAC20]), re-indexed; what it drops, per part."""
    input:
        interactions=results("data/{dataset}/interactions.parquet"),
        user_index=results("data/{dataset}/users.parquet"),
        item_index=results("data/{dataset}/items.parquet"),
    output:
        interactions=results("e1/{dataset}/data/interactions.parquet"),
        user_index=results("e1/{dataset}/data/users.parquet"),
        item_index=results("e1/{dataset}/data/items.parquet"),
        dropped=results("e1/{dataset}/dropped.parquet"),
        dropped_md=results("e1/{dataset}/dropped.md"),
    wildcard_constraints:
        dataset=_alternatives(E1_FIXED),
    params:
        **job_params(
            dataset="{dataset}",
            step=lambda w: E1Data.of(config, w.dataset).params(),
            code=CODE["e1_data"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/data.tsv")
    log:
        logs("e1/{dataset}/data.log"),
    script:
        "../scripts/e1_data.py"


# The same step on one seed's own draw of a dataset drawn per seed.
use rule e1_data as e1_data_draw with:
    input:
        interactions=results("data/{dataset}/seed{seed}/interactions.parquet"),
        user_index=results("data/{dataset}/seed{seed}/users.parquet"),
        item_index=results("data/{dataset}/seed{seed}/items.parquet"),
    output:
        interactions=results("e1/{dataset}/seed{seed}/data/interactions.parquet"),
        user_index=results("e1/{dataset}/seed{seed}/data/users.parquet"),
        item_index=results("e1/{dataset}/seed{seed}/data/items.parquet"),
        dropped=results("e1/{dataset}/seed{seed}/dropped.parquet"),
        dropped_md=results("e1/{dataset}/seed{seed}/dropped.md"),
    wildcard_constraints:
        dataset=_alternatives(DRAWN),
    benchmark:
        bench("e1/{dataset}/seed{seed}/data.tsv")
    log:
        logs("e1/{dataset}/seed{seed}/data.log"),


rule e1_dropped:
    """What E1's filter dropped from each seed's own draw of a dataset drawn per seed, stacked
    (dropped.parquet with a seed column, dropped.md)."""
    input:
        expand(results("e1/{{dataset}}/seed{seed}/dropped.parquet"), seed=experiment_seeds("e1")),
    output:
        dropped=results("e1/{dataset}/dropped.parquet"),
        dropped_md=results("e1/{dataset}/dropped.md"),
    wildcard_constraints:
        dataset=_alternatives(DRAWN),
    params:
        **job_params(
            dataset="{dataset}",
            seeds=list(experiment_seeds("e1")),
            code=CODE["e1_dropped"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/dropped.tsv")
    log:
        logs("e1/{dataset}/dropped.log"),
    script:
        "../scripts/e1_dropped.py"


rule e1_split:
    """MNAR -> train/heldout, MAR -> weights/val/gt ([SAC20] section 5.2)."""
    input:
        interactions=e1_data("interactions.parquet"),
    output:
        results("e1/{dataset}/seed{seed}/split.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E1Split.of(config, w.dataset).params(),
            code=CODE["e1_split"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/seed{seed}/split.tsv")
    log:
        logs("e1/{dataset}/seed{seed}/split.log"),
    script:
        "../scripts/e1_split.py"


rule e1_export:
    """The seed's training and validation parts in raw ids, to train other frameworks on."""
    input:
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
    output:
        **export_outputs("e1"),
    params:
        **job_params(
            parts=E1_EXPORT,
            code=CODE["export_split"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/seed{seed}/export.tsv")
    log:
        logs("e1/{dataset}/seed{seed}/export.log"),
    script:
        "../scripts/export_split.py"


rule e1_intervene:
    """Draw every intervened test set of one seed from the held-out MNAR part, each from its
    own random stream (docs/experiments/e1.md); one job per seed, as e1_evaluate reads them all."""
    input:
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
    output:
        testsets=expand(
            results("e1/{{dataset}}/seed{{seed}}/testsets/{testset}.parquet"),
            testset=E1["testsets"],
        ),
        diagnostics=expand(
            results("e1/{{dataset}}/seed{{seed}}/testsets/{testset}.diagnostics.parquet"),
            testset=E1["testsets"],
        ),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            step=lambda w: E1Intervene.of(config, w.dataset).params(),
            code=CODE["e1_intervene"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/seed{seed}/intervene.tsv")
    log:
        logs("e1/{dataset}/seed{seed}/intervene.log"),
    script:
        "../scripts/e1_intervene.py"


rule e1_train:
    """Tune one chunk of a recommender's grid on MAR val ([SAC20] section 5.2)."""
    input:
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
    output:
        tuning=results("e1/{dataset}/seed{seed}/tuning/{recommender}/chunk{chunk}.parquet"),
        recs=results("e1/{dataset}/seed{seed}/tuning/{recommender}/chunk{chunk}.recs.parquet"),
    wildcard_constraints:
        recommender=_alternatives(E1_CHUNKED),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            recommender="{recommender}",
            chunk=lambda w: int(w.get("chunk", 0)),  # e1_tune: chunk 0, the whole grid
            spec=lambda w: E1["recommenders"][w.recommender],
            step=lambda w: E1Train.of(config, w.dataset).params(),
            code=CODE["e1_train"],
            plugin=lambda w: plugin_hash(E1["recommenders"][w.recommender]["algorithm"]),
        ),
    threads: resources_of("train")["threads"]
    resources:
        mem_mb=job_mem_mb("train", resources_of("train")),
        runtime=job_runtime("train", resources_of("train")),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e1/{dataset}/seed{seed}/train/{recommender}/chunk{chunk}.log"),
    benchmark:
        bench("e1/{dataset}/seed{seed}/train/{recommender}/chunk{chunk}.tsv")
    script:
        "../scripts/e1_train.py"


# A recommender whose grid is one chunk: e1_train's job also does e1_select's work (the same
# files, one job fewer per recommender and seed; docs/performance.md).
use rule e1_train as e1_tune with:
    output:
        tuning=results("e1/{dataset}/seed{seed}/tuning/{recommender}/chunk0.parquet"),
        recs=results("e1/{dataset}/seed{seed}/tuning/{recommender}/chunk0.recs.parquet"),
        selected_tuning=results("e1/{dataset}/seed{seed}/tuning/{recommender}.parquet"),
        selected_recs=results("e1/{dataset}/seed{seed}/recs/{recommender}.parquet"),
    wildcard_constraints:
        recommender=_alternatives(E1_ONE_CHUNK),
    log:
        logs("e1/{dataset}/seed{seed}/train/{recommender}/chunk0.log"),
    benchmark:
        bench("e1/{dataset}/seed{seed}/train/{recommender}/chunk0.tsv")


rule e1_select:
    """Select a recommender's best usable grid point over its chunks; keep its top-k lists."""
    input:
        tuning=lambda w: expand(
            results("e1/{{dataset}}/seed{{seed}}/tuning/{{recommender}}/chunk{chunk}.parquet"),
            chunk=range(E1_CHUNKS[w.recommender]),
        ),
        recs=lambda w: expand(
            results("e1/{{dataset}}/seed{{seed}}/tuning/{{recommender}}/chunk{chunk}.recs.parquet"),
            chunk=range(E1_CHUNKS[w.recommender]),
        ),
    output:
        tuning=results("e1/{dataset}/seed{seed}/tuning/{recommender}.parquet"),
        recs=results("e1/{dataset}/seed{seed}/recs/{recommender}.parquet"),
    wildcard_constraints:
        recommender=_alternatives(E1_CHUNKED),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            recommender="{recommender}",
            code=CODE["e1_select"],
            plugin=lambda w: plugin_hash(E1["recommenders"][w.recommender]["algorithm"]),
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/seed{seed}/select/{recommender}.tsv")
    log:
        logs("e1/{dataset}/seed{seed}/select/{recommender}.log"),
    script:
        "../scripts/e1_select.py"


rule e1_external:
    """Precomputed lists of one seed (algorithm external), checked against the seed's training
    part and written as e1_select writes a model's lists."""
    input:
        lists=lists_input("e1", "recommenders", "recommender"),
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
    output:
        recs=results("e1/{dataset}/seed{seed}/recs/{recommender}.parquet"),
    wildcard_constraints:
        recommender=_alternatives(E1_EXTERNAL),
    params:
        **job_params(
            recommender="{recommender}",
            where="e1.recommenders.{recommender}",
            ids=lambda w: E1["recommenders"][w.recommender]["ids"],
            on_train_items=lambda w: E1["recommenders"][w.recommender]["on_train_items"],
            step=lambda w: E1External.of(config, w.dataset).params(),
            code=CODE["e1_external"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/seed{seed}/external/{recommender}.tsv")
    log:
        logs("e1/{dataset}/seed{seed}/external/{recommender}.log"),
    script:
        "../scripts/e1_external.py"


rule e1_impute:
    """The model imputation of one dr estimator of e1.estimators (logistic_mf: an IPS-weighted
    logistic MF of the training part), fitted once per seed (docs/estimators.md)."""
    input:
        unpack(known_propensities_input),
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
    output:
        results("e1/{dataset}/seed{seed}/imputations/{estimator}.parquet"),
    wildcard_constraints:
        estimator=_alternatives(E1_IMPUTED),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            spec=lambda w: E1["estimators"][w.estimator],
            synthetic=draw_block,
            step=lambda w: E1Impute.of(config, w.dataset).params(),
            code=CODE["e1_impute"],
        ),
    threads: resources_of("evaluate")["threads"]
    resources:
        mem_mb=job_mem_mb("evaluate", resources_of("evaluate")),
        runtime=job_runtime("evaluate", resources_of("evaluate")),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e1/{dataset}/seed{seed}/impute/{estimator}.log"),
    benchmark:
        bench("e1/{dataset}/seed{seed}/impute/{estimator}.tsv")
    script:
        "../scripts/e1_impute.py"


rule e1_evaluate:
    """Top-k metrics of every recommender of one seed on gt, on every intervened test set and
    under every weighting estimator of e1.estimators (whose propensities and imputations are
    computed here, once per seed): per-user values, means with their bootstrap interval over
    users, paired tests with each SNIPS row's gamma*, the estimators' diagnostics and
    sensitivity bounds, and the scoreboard's inputs (every row's and the truth's means over the
    same users; gt's split-half reliability)."""
    input:
        unpack(known_propensities_input),
        recs=expand(
            results("e1/{{dataset}}/seed{{seed}}/recs/{recommender}.parquet"),
            recommender=E1["recommenders"],
        ),
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
        testsets=expand(
            results("e1/{{dataset}}/seed{{seed}}/testsets/{testset}.parquet"),
            testset=E1["testsets"],
        ),
        imputations=expand(
            results("e1/{{dataset}}/seed{{seed}}/imputations/{estimator}.parquet"),
            estimator=E1_IMPUTED,
        ),
        # the exact truth's per-user values where the full rating matrix is known (synthetic,
        # jester5k-semi)
        truth=lambda w: (
            [results(f"e1/{w.dataset}/seed{w.seed}/truth_per_user.parquet")]
            if E1["truth"] and w.dataset in E1_TRUTH_DATASETS
            else []
        ),
    output:
        metrics=results("e1/{dataset}/seed{seed}/metrics.parquet"),
        metrics_per_user=results("e1/{dataset}/seed{seed}/metrics_per_user.parquet"),
        comparisons=results("e1/{dataset}/seed{seed}/comparisons.parquet"),
        estimators_diagnostics=results("e1/{dataset}/seed{seed}/estimators.diagnostics.parquet"),
        sensitivity=results("e1/{dataset}/seed{seed}/sensitivity.parquet"),
        arena=results("e1/{dataset}/seed{seed}/arena.parquet"),
        arena_replicates=results("e1/{dataset}/seed{seed}/arena_replicates.parquet"),
        reliability=results("e1/{dataset}/seed{seed}/reliability.parquet"),
        truth_tests=results("e1/{dataset}/seed{seed}/truth_tests.parquet"),
    params:
        **job_params(
            dataset="{dataset}",
            imputed=E1_IMPUTED,
            synthetic=draw_block,
            seed=lambda w: int(w.seed),
            recommenders=list(E1["recommenders"]),
            testsets=list(E1["testsets"]),
            step=lambda w: E1Evaluate.of(config, w.dataset).params(),
            code=CODE["e1_evaluate"],
        ),
    threads: resources_of("evaluate")["threads"]
    resources:
        mem_mb=job_mem_mb("evaluate", resources_of("evaluate")),
        runtime=job_runtime("evaluate", resources_of("evaluate")),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e1/{dataset}/seed{seed}/evaluate.log"),
    benchmark:
        bench("e1/{dataset}/seed{seed}/evaluate.tsv")
    script:
        "../scripts/e1_evaluate.py"


rule e1_truth:
    """The exact metrics of every recommender of one seed over all its candidate items, from the
    dataset's full rating matrix (synthetic's generator, or jester5k-semi's real block read from
    Jester5k's file): the TRUE row, the arena's truth (docs/estimators.md)."""
    input:
        unpack(preprocess_input),  # jester5k-semi: Jester5k's raw folder; synthetic: none
        recs=expand(
            results("e1/{{dataset}}/seed{{seed}}/recs/{recommender}.parquet"),
            recommender=E1["recommenders"],
        ),
        split=results("e1/{dataset}/seed{seed}/split.parquet"),
        user_index=e1_data("users.parquet"),
        item_index=e1_data("items.parquet"),
    output:
        truth=results("e1/{dataset}/seed{seed}/truth.parquet"),
        truth_per_user=results("e1/{dataset}/seed{seed}/truth_per_user.parquet"),
    wildcard_constraints:
        dataset=_alternatives(E1_TRUTH_DATASETS),
    params:
        **job_params(
            dataset="{dataset}",
            seed=lambda w: int(w.seed),
            recommenders=list(E1["recommenders"]),
            generator=draw_block,
            step=lambda w: E1Truth.of(config, w.dataset).params(),
            code=CODE["e1_truth"],
        ),
    threads: resources_of("evaluate")["threads"]
    resources:
        mem_mb=job_mem_mb("evaluate", resources_of("evaluate")),
        runtime=job_runtime("evaluate", resources_of("evaluate")),
    conda:
        "../envs/debiaseval.yaml"
    log:
        logs("e1/{dataset}/seed{seed}/truth.log"),
    benchmark:
        bench("e1/{dataset}/seed{seed}/truth.tsv")
    script:
        "../scripts/e1_truth.py"


rule e1_aggregate:
    """Mean/sd and intervals over seeds, % difference from gt, Kendall's tau, test-set
    diagnostics, how many seeds agree on each paired comparison (with each SNIPS row's median
    gamma*), the scoreboard of every test set and estimator against the truth (TRUE on
    synthetic, else gt) with its intervals over seeds, the SNIPS rows' sensitivity, and the
    verdict computed from them (verdict.md, also first in summary.md and comparisons.md)."""
    input:
        metrics=expand(
            results("e1/{{dataset}}/seed{seed}/metrics.parquet"), seed=experiment_seeds("e1")
        ),
        comparisons=expand(
            results("e1/{{dataset}}/seed{seed}/comparisons.parquet"), seed=experiment_seeds("e1")
        ),
        diagnostics=expand(
            results("e1/{{dataset}}/seed{seed}/testsets/{testset}.diagnostics.parquet"),
            seed=experiment_seeds("e1"),
            testset=E1["testsets"],
        ),
        # the data the summary describes: the first seed's own draw where each seed has one
        data=e1_data("interactions.parquet", seed=0),
        dropped_md=results("e1/{dataset}/dropped.md"),
        # the seeds' exact TRUE rows where the full rating matrix is known (synthetic,
        # jester5k-semi)
        truth=lambda w: (
            expand(
                results("e1/{dataset}/seed{seed}/truth.parquet"),
                dataset=w.dataset,
                seed=experiment_seeds("e1"),
            )
            if E1["truth"] and w.dataset in E1_TRUTH_DATASETS
            else []
        ),
        arena=expand(
            results("e1/{{dataset}}/seed{seed}/arena.parquet"), seed=experiment_seeds("e1")
        ),
        arena_replicates=expand(
            results("e1/{{dataset}}/seed{seed}/arena_replicates.parquet"),
            seed=experiment_seeds("e1"),
        ),
        reliability=expand(
            results("e1/{{dataset}}/seed{seed}/reliability.parquet"), seed=experiment_seeds("e1")
        ),
        truth_tests=expand(
            results("e1/{{dataset}}/seed{seed}/truth_tests.parquet"), seed=experiment_seeds("e1")
        ),
        sensitivity=expand(
            results("e1/{{dataset}}/seed{seed}/sensitivity.parquet"), seed=experiment_seeds("e1")
        ),
        estimators_diagnostics=expand(
            results("e1/{{dataset}}/seed{seed}/estimators.diagnostics.parquet"),
            seed=experiment_seeds("e1"),
        ),
    output:
        verdict_md=results("e1/{dataset}/verdict.md"),
        summary=results("e1/{dataset}/summary.parquet"),
        kendall=results("e1/{dataset}/kendall.parquet"),
        testsets=results("e1/{dataset}/testsets.parquet"),
        comparisons=results("e1/{dataset}/comparisons.parquet"),
        comparisons_md=results("e1/{dataset}/comparisons.md"),
        estimator_accuracy=results("e1/{dataset}/estimator_accuracy.parquet"),
        summary_md=results("e1/{dataset}/summary.md"),
        kendall_md=results("e1/{dataset}/kendall.md"),
        estimator_accuracy_md=results("e1/{dataset}/estimator_accuracy.md"),
        estimator_pairs=results("e1/{dataset}/estimator_pairs.parquet"),
        truth_separation=results("e1/{dataset}/truth_separation.parquet"),
        sensitivity=results("e1/{dataset}/sensitivity.parquet"),
        sensitivity_md=results("e1/{dataset}/sensitivity.md"),
        **report_outputs("e1"),
    params:
        **job_params(
            captions=figure_module("e1").FIGURES,
            provenance=provenance("e1"),
            dataset="{dataset}",
            step=lambda w: E1Aggregate.of(config, w.dataset).params(),
            # each seed its own draw of the data (independent) or one dataset re-split (fixed)
            draws=lambda w: "independent" if w.dataset in DRAWN else "fixed",
            code=CODE["e1_aggregate"],
        ),
    conda:
        "../envs/debiaseval.yaml"
    benchmark:
        bench("e1/{dataset}/aggregate.tsv")
    log:
        logs("e1/{dataset}/aggregate.log"),
    script:
        "../scripts/e1_aggregate.py"

